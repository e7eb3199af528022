"""One Chinese wording per term in every catalog: the glossary's, never a variant (issue 37).

tests/test_i18n.py checks that a message whose English names a glossary term gives one of the glossary's renderings;
this checks the other way round: no translation uses a known other rendering of a term (the notes' 层归一化, a
second word for the word tokenizer, 屏蔽 for masked), unless its English quotes that very Chinese (appendix D and
the glossary quote the notes' terms).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from transformer_lib.site.glossary import read_glossary

LOCALE = Path(__file__).resolve().parents[1] / "locale" / "zh_CN" / "LC_MESSAGES"

# a rendering the catalogs must not use -> the one they use (the glossary's, or one wording for a recurring label)
VARIANTS: dict[str, str] = {
    r"归一化": "规范化",  # zh.d2l.ai: 层规范化 (§10.7), 批量规范化 (§7.5), softmax 的规范化 (§3.4)
    r"隐藏状态": "隐状态",  # zh.d2l.ai §8.4
    r"屏蔽|遮蔽|掩码自注意力": "掩蔽 (掩蔽自注意力)",  # zh.d2l.ai §10.7; the mask itself stays 掩码
    r"平均池化": "平均汇聚",  # zh.d2l.ai: 汇聚层, pooling layer
    r"贪婪解码|贪婪搜索|贪心解码": "贪心搜索",  # greedy decoding: the glossary's one name (issue 44)
    r"温度系数": "温度",  # temperature
    r"学习得到的位置(?:表|嵌入)|可学习的位置编码": "学习得到的位置编码",  # the learned positional table, one name
    r"前馈层|(?<![\w{])FFN(?![\w(])": "前馈网络 (feed-forward network; FFN in formulas only)",
    r"层堆叠": "栈 (编码器栈 / 解码器栈)",
    r"批次": "批量",
    r"编码器-解码器": "编码器－解码器 (a full-width hyphen, in the prose and the figures alike)",
    r"n-gram|n 元组": "n 元语法",
    r"教师强制": "强制教学",
    r"(?<!（)one-hot": "独热 (the English in brackets after it at most: 独热（one-hot）)",
    r"(?<![子级])词分词器|单词分词器": "词级分词器",  # word tokenizer
    r"编码器块|解码器块": "编码器层 / 解码器层",  # encoder/decoder block: the glossary's 编码器层
    r"base 模型|Base 模型": "基础模型",
    r"big 模型|Big 模型": "大模型",
    r"本章概览": "本章内容",  # "In this chapter"
    r"列印": "打印",  # mainland usage
    r"提示和答案|[显隐][示藏]答案": "解答 (Solution: 提示和解答, 显示解答)",  # 答案 stays where it is an answer
    r"词元\s?(?:id|ID)\b|(?<![（(])token id": "词元索引 (token ID, as the glossary says; 词元索引（token id）at most)",
    r"\d\s*百万|\d\s*M 个": "万 / 亿 (43.6 million: 4360 万; 65 M: 6500 万)",
    r"\b[A-Z][\w-]+ et al\.?\s*[（(,]|等人[，（]": "作者 等（年份）, or （作者 等，年份） in brackets",
}
# English words that a translation never keeps, even where its English has them (the English always has "one-hot")
_ALWAYS = {r"(?<!（)one-hot"}


def _messages():
    for path in sorted(LOCALE.rglob("*.po")):
        with open(path, "rb") as f:
            for message in read_po(f):
                if message.id and message.string and message.string != message.id:  # not an English term kept as is
                    yield path.relative_to(LOCALE).with_suffix("").as_posix(), message.id, message.string


def _without_code(text: str) -> str:
    return re.sub(r"`[^`]*`|\$[^$]*\$|\]\([^)]*\)", " ", text)


def variant_problems(msgid: str, msgstr: str) -> list[str]:
    """The variants a translation uses, each with the wording to use; one that its English quotes is kept (the
    notes' 层归一化 in appendix D, the English site's "Vaswani et al. (2017)"), except an English word that the
    English always has (one-hot)."""
    # a quotation keeps its source's wording (the notes' “序列内并行(注意力计算、前馈层 等)”)
    chinese, english = _without_code(re.sub(r"“[^”]*”", " ", msgstr)), _without_code(msgid)
    return [
        f"{found!r} should read {use}"
        for pattern, use in VARIANTS.items()
        for found in re.findall(pattern, chinese)
        if found not in english or pattern in _ALWAYS
    ]


def test_no_catalog_uses_a_variant_of_a_term():
    problems = [
        f"{page}: {problem}: {msgstr[:60]!r}"
        for page, msgid, msgstr in _messages()
        for problem in variant_problems(msgid, msgstr)
    ]
    assert not problems, problems


def test_an_english_variant_fails_even_where_its_english_has_it():
    assert variant_problems("a one-hot vector", "一个 one-hot 向量")
    assert not variant_problems("a one-hot vector", "一个独热向量（one-hot）")


def test_the_variants_are_not_the_glossarys_terms():
    """A variant never bans a rendering the glossary gives (the table and this list cannot disagree)."""
    chinese = [rendering for term in read_glossary() for rendering in term.chinese]
    clashes = [(p, c) for p in VARIANTS for c in chinese if re.search(p, c)]
    assert not clashes, clashes


@pytest.mark.parametrize(
    "msgid, planted",
    [
        ("Add & Norm: a residual connection, then layer normalisation.", "Add & Norm：残差连接，然后做层归一化。"),
        ("The RNN's hidden state", "RNN 的隐藏状态"),
        ("a word tokenizer", "一个单词分词器"),
        ("masked self-attention", "掩码自注意力"),
        ("Each exercise has a hint and a solution to fold open.", "每道练习都附有可以展开的提示和答案。"),
    ],
)
def test_a_planted_variant_fails(msgid: str, planted: str) -> None:
    assert variant_problems(msgid, planted), planted
    # the same Chinese quoted by its English (appendix D lists the notes' terms) is allowed
    quoted = re.sub(r"[^\u4e00-\u9fff]+", " ", planted).split()
    assert not variant_problems(msgid + " (" + " ".join(quoted) + ")", planted)


def test_a_token_id_variant_fails() -> None:
    assert variant_problems("the token IDs", "这些词元 ID") and variant_problems("a token ID", "一个 token id")
    assert not variant_problems("a token ID", "一个词元索引（token id）")


def test_the_figures_catalog_is_checked_and_its_rules_use_no_variant():
    """The figures' words say a term as the catalogs do: figures.po is one of the catalogs the test above reads, and
    the rules for labels with a number in them (transformer_lib/book/label_patterns.py) are checked here."""
    from transformer_lib.book.label_patterns import PATTERNS

    assert any(page == "figures" for page, _, _ in _messages())
    pairs = [(p.pattern, template) for p, template in PATTERNS["zh"]]
    problems = [
        f"{english!r}: {problem}" for english, chinese in pairs for problem in variant_problems(english, chinese)
    ]
    assert not problems, problems


# --------------------------------------------------------------------------------------------------------------
# English terms in the Chinese prose (issue 44): a term the glossary gives in Chinese is written in Chinese
# --------------------------------------------------------------------------------------------------------------
# Spellings of glossary terms that the English pages use besides the glossary's row name
ENGLISH_ALIASES = {"LayerNorm", "BatchNorm", "post-LN", "pre-LN", "FFN", "warmup", "greedy search", "nucleus sampling"}
# Glossary names that are also ordinary words, identifiers or argument names (key, value, memory ...): a Chinese
# sentence may name the argument; the catalogs' term check (tests/test_i18n.py) leaves them out for the same reason
_ORDINARY_NAMES = {"attention", "key", "value", "query", "memory", "token", "encoder", "decoder", "embedding", "stack",
                   "batch", "alignment", "vocabulary", "sampling", "logits",
                   "[CLS]", "[SEP]", "BLEU", "WordPiece", "LSTM", "GRU", "KV cache", "parallelism"}  # fmt: skip
# What may keep English: code, math, roles, links, tags, a term's English in full-width brackets after its Chinese
# (层规范化（LayerNorm）), a work's title in italics or quotes, a function's name in a formula (LayerNorm(x))
_QUOTED = re.compile(
    r"\{[\w:-]+\}`[^`]*`|(`+).+?\1|\$\$.+?\$\$|\$[^$]*\$|\]\([^)]*\)|<[^>\s]*>|（[^（）]*）|(?<!\*)\*[^*\n]+\*(?!\*)"
    r"|“[^”]*”|\"[^\"]*\"|\b\w+\(",
    flags=re.S,
)


def english_terms() -> list[str]:
    """The English names of the glossary's rows that have a Chinese term, and the pages' other spellings of them."""
    names = {n for t in read_glossary() if t.chinese for n in t.english} | ENGLISH_ALIASES
    return sorted(names - _ORDINARY_NAMES, key=len, reverse=True)


_ENGLISH = re.compile(
    r"(?<![\w<-])(" + "|".join(re.escape(n) for n in english_terms()) + r")s?(?![\w-])", flags=re.IGNORECASE
)


def english_term_problems(page: str, msgid: str, msgstr: str) -> list[str]:
    """The glossary terms a translation leaves in English outside code, math, titles, quotes and brackets. The
    glossary's own cells that quote the notes' English ("Encoder-Decoder Attention") keep it."""
    found = _ENGLISH.findall(_QUOTED.sub(" ", msgstr))
    return [f"{word!r} has a Chinese term" for word in found if not (page == "book/glossary" and word in msgid)]


def test_no_catalog_leaves_a_glossary_term_in_english():
    problems = [
        f"{page}: {problem}: {msgstr[:60]!r}"
        for page, msgid, msgstr in _messages()
        for problem in english_term_problems(page, msgid, msgstr)
    ]
    assert not problems, problems


@pytest.mark.parametrize(
    "planted",
    [
        "6.6 用 LayerNorm，而不用 BatchNorm",
        "这就是 **post-LN**。",
        "还有注意力权重和 FFN 的隐藏层",
        "用 beam search 解码",
    ],
)
def test_a_planted_english_term_fails(planted: str) -> None:
    assert english_term_problems("book/06b_encoder_block", "", planted), planted
    # the same term as its Chinese's English in brackets, a formula's function or a title in italics is kept
    assert not english_term_problems("book/x", "", "层规范化（LayerNorm）、LayerNorm(x) 和 *Layer Normalization*")


@pytest.mark.parametrize(
    "planted", ["在 4 个批次上", "学习得到的位置表", "编码器-解码器，交叉注意力", "温度系数 T", "做贪心解码", "前馈层"]
)
def test_a_second_name_for_one_concept_fails(planted: str) -> None:
    assert variant_problems("", planted), planted

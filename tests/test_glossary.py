"""book/glossary.md: each term's Chinese is zh.d2l.ai's, with the study notes' term beside it where it differs."""

import re
from pathlib import Path

import pytest

GLOSSARY = Path(__file__).resolve().parents[1] / "book" / "glossary.md"

# English term (first cell starts with it) -> the zh.d2l.ai term its Chinese cell must give (issue 23)
D2L_TERMS = {
    "position-wise feed-forward network": "基于位置的前馈网络",
    "embedding |": "词元嵌入",
    "teacher forcing": "强制教学",
    "greedy decoding": "贪心搜索",
    "cross-attention": "编码器－解码器注意力",
    "byte-pair encoding": "字节对编码",
    "batch normalisation": "批量归一化",
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
    assert "词向量" in rows["embedding"][1]  # the notes' term kept beside the zh.d2l.ai one
    learned = rows["learned positional embedding"][1]
    assert "根据数据学习" in learned and "†" not in learned  # notes 001 do use it
    equivariance = rows["permutation equivariance"]
    assert "并行输入" not in equivariance[1] and "Not the notes' 并行输入" in equivariance[2]


def test_formulas_in_the_glossary_are_math() -> None:
    text = GLOSSARY.read_text(encoding="utf-8")
    outside_math = re.sub(r"\$[^$]*\$", "", text)
    assert not re.search(r"h_\{?t", outside_math), "h_t written raw, outside $...$"

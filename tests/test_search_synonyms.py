"""The spellings a reader types (transformer_lib/site/search_synonyms.toml) and the index entries the search build
makes of them (transformer_lib/site/search.py). The built site's ranking is tested in tests/test_browser_text_first.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx import addnodes

from transformer_lib.site import glossary
from transformer_lib.site.search import Synonyms, add_index_entries, definition_paragraph, read_synonyms

# issue 44: what a Chinese reader typed and found nothing (or the explaining page far down)
ISSUE_QUERIES = [
    "教师强制",
    "强制教学",
    "键值缓存",
    "KV 缓存",
    "层归一化",
    "层规范化",
    "集束搜索",
    "束搜索",
    "注意力机制",
    "多头注意力机制",
    "学习率预热",
    "词嵌入",
    "因果掩码",
    "填充掩码",
    "dropout",
    "暂退法",
]


def test_every_query_of_the_issue_has_a_page_that_explains_it() -> None:
    pages = {word.lower(): term.page for term in read_synonyms() for word in term.words}
    assert not [q for q in ISSUE_QUERIES if q.lower() not in pages]
    assert pages["教师强制"] == pages["强制教学"] == "book/01_why_not_rnn"
    assert pages["因果掩码"] == pages["填充掩码"] == "book/05_masks"


def test_a_term_takes_its_renderings_from_the_glossary_row_it_names() -> None:
    by_first = {t.words[0]: t for t in read_synonyms()}
    layer_norm = next(t for t in glossary.read_glossary() if t.english[0] == "layer normalisation")
    term = by_first[layer_norm.chinese[0]]  # the glossary's rendering comes first, then the file's own words
    assert term.words[: len(layer_norm.chinese)] == layer_norm.chinese and "层归一化" in term.words
    assert len(term.words) == len(set(term.words))  # each once
    assert term.anchor == "tl-term-layer-normalisation"


@pytest.mark.parametrize(
    "body, message",
    [
        ('page = "book/99_nowhere"\nwords = ["x"]', "expected 'page' to name a page of the book"),
        ('page = "book/05_masks"\nwords = []', "expected 'words' to be a list of spellings"),
        ('page = "book/05_masks"\nwords = ["x"]\nglossary = "no such term"', "expected 'glossary' to name a row"),
    ],
)
def test_a_wrong_entry_is_named_with_what_was_expected(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "synonyms.toml"
    path.write_text(f"[[term]]\n{body}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"synonyms.toml, term 1: {message}"):
        read_synonyms(path)


def _doctree(text: str) -> nodes.document:
    document = new_document("<test>", get_default_settings(Parser))
    Parser().parse(text, document)
    return document


PAGE = """\
Title with 强制教学
===================

The table of contents names 强制教学 too.

使用 **强制教学** 时，解码器的输入是右移一位的参考目标。

Later, 强制教学 again.
"""


def test_the_entries_point_at_the_paragraph_that_defines_the_term() -> None:
    term = Synonyms(page="book/01", words=("强制教学", "教师强制", "teacher forcing"))
    doctree = _doctree(PAGE)
    paragraph = definition_paragraph(doctree, term.words)
    assert paragraph is not None and paragraph.astext().startswith("使用")  # the term in bold: its definition
    assert add_index_entries(doctree, "book/01", [term]) == 3
    assert add_index_entries(_doctree(PAGE), "book/02", [term]) == 0  # another page explains it
    (index,) = doctree.findall(addnodes.index)
    assert index["entries"] == [("single", w, "tl-term-teacher-forcing", "main", None) for w in term.words]
    assert "tl-term-teacher-forcing" in paragraph["ids"]
    # without a bold use, the first paragraph that holds a spelling; without any, the page itself
    plain = _doctree("Intro.\n\nThe 教师强制 trick.\n\nMore.\n")
    assert definition_paragraph(plain, term.words).astext() == "The 教师强制 trick."
    nowhere = _doctree("Nothing here.\n")
    assert add_index_entries(nowhere, "book/01", [term]) == 3
    assert next(iter(nowhere.findall(addnodes.index)))["entries"][0][2] == ""

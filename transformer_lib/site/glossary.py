"""The glossary (book/glossary.md) as data: each term's Chinese, the notes' Chinese, and the page that introduces it.

The glossary is where each term's Chinese is decided, once (CONTRIBUTING.md, "Add a glossary term"). Its table has
five columns::

    | English | 中文 (zh.d2l.ai) | 笔记 (the notes) | Meaning | Introduced in |

The second column gives the Chinese the chapters use, zh.d2l.ai's where zh.d2l.ai has the term; a rendering marked
:data:`BOOK_MARK` is the book's own, for a term zh.d2l.ai does not have. Several renderings are separated by " / ".
The third column gives the study notes' term where they say it otherwise: "—" when they say the same and
:data:`UNUSED_MARK` when they do not use the term at all. Text in parentheses is a comment in either column.

Three things are built from it: the word list that keeps each Chinese term one word in the Chinese site's search
index (:func:`search_dictionary`, wired into Sphinx by :mod:`transformer_lib.site.i18n`), the words that a figure's
Chinese title may not break inside on a narrow screen (:func:`label_words`), and the terms that the catalog tests
hold every translation to (tests/test_zh_terms.py).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BOOK_MARK",
    "CJK_RUN",
    "UNUSED_MARK",
    "GLOSSARY",
    "Term",
    "read_glossary",
    "search_words",
    "search_dictionary",
    "label_words",
]

GLOSSARY = Path(__file__).resolve().parents[2] / "book" / "glossary.md"
BOOK_MARK = "◇"  # a rendering zh.d2l.ai does not have: the book's choice
UNUSED_MARK = "†"  # the notes do not use the term
_CJK = re.compile(r"[\u3400-\u9fff]")
# a run of Chinese characters: what jieba cuts into words (a space, a Latin letter or a dash "－" ends it)
CJK_RUN = re.compile(r"[\u3400-\u9fff]+")


@dataclass(frozen=True)
class Term:
    """One glossary row.

    Attributes:
        english: the English names of the term ("query / key / value" gives three), without parenthesised comments.
        chinese: the renderings the chapters use, the first one preferred (column 2, marks removed).
        book_chosen: those of ``chinese`` that zh.d2l.ai does not have (marked ◇).
        notes: the study notes' own renderings, where they differ (column 3).
        introduced_in: the page that introduces the term ("book/05_masks"), or a label to resolve
            (``"ref:intro-why"``).
        meaning: the one-line meaning (column 4), as written: a message of the glossary page's catalog, whose
            translation says the row is translated (until then its term is pending on the other pages).
    """

    english: tuple[str, ...]
    chinese: tuple[str, ...]
    book_chosen: tuple[str, ...]
    notes: tuple[str, ...]
    introduced_in: str
    meaning: str = ""


def _renderings(cell: str) -> list[str]:
    """The terms of a Chinese cell: parenthesised comments dropped, split at " / " or ", "."""
    cell = re.sub(r"(?:\s+\(|\s*（)[^()（）]*[)）]", "", cell)
    cell = re.sub(r"\bnotes(?: \d+)?:\s*", "", cell)
    return [t.strip() for t in re.split(r"\s+/\s+|,\s+|、", cell) if t.strip() not in ("", "—", UNUSED_MARK)]


def _introduced_in(cell: str) -> str:
    """The page of the first role in the "Introduced in" cell: {doc}`7 <07_x>` -> book/07_x; {ref}`.. <l>` -> ref:l."""
    role = re.search(r"\{(doc|ref)\}`[^`<]*<([^>]+)>`", cell)
    if role is None:
        raise ValueError(f"glossary: expected a {{doc}} or {{ref}} role in 'Introduced in', got {cell!r}")
    kind, target = role.groups()
    return f"book/{target}" if kind == "doc" else f"ref:{target}"


def read_glossary(path: Path = GLOSSARY) -> list[Term]:
    """The rows of the glossary's table, in order.

    >>> terms = {t.english[0]: t for t in read_glossary()}
    >>> terms["layer normalisation"].chinese
    ('层规范化',)
    """
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if cells[0] == "English":
            continue
        if len(cells) != 5:
            raise ValueError(f"glossary: expected 5 cells, got {len(cells)} in {line[:60]!r}")
        english, chinese, notes, meaning, introduced = cells
        names = re.sub(r"\s*\([^)]*\)", "", english).replace("`", "")
        renderings = _renderings(chinese)
        rows.append(
            Term(
                english=tuple(n.strip() for n in re.split(r",\s*|\s+/\s+", names) if n.strip()),
                chinese=tuple(t.replace(BOOK_MARK, "").strip() for t in renderings),
                book_chosen=tuple(t.replace(BOOK_MARK, "").strip() for t in renderings if BOOK_MARK in t),
                notes=tuple(t.replace(UNUSED_MARK, "").strip() for t in _renderings(notes) if _CJK.search(t)),
                introduced_in=_introduced_in(introduced),
                meaning=meaning,
            )
        )
    return rows


def search_words(terms: list[Term] | None = None) -> list[str]:
    """Every Chinese word of the glossary, both columns: each run of Chinese characters of a term, two or more long
    ("KV 缓存" gives 缓存, "编码器－解码器注意力" gives 编码器 and 解码器注意力, as the search box splits them)."""
    words: dict[str, None] = {}
    for term in read_glossary() if terms is None else terms:
        for rendering in term.chinese + term.notes:
            for run in CJK_RUN.findall(rendering):
                if len(run) > 1:
                    words[run] = None
    return list(words)


def search_dictionary(terms: list[Term] | None = None) -> str:
    """A jieba user dictionary (one word a line) that keeps each Chinese term of the glossary one word, for Sphinx's
    Chinese search (``html_search_options = {"dict": path}``). jieba's ``cut_for_search`` still yields the shorter
    words inside it (因果掩码 gives 因果, 掩码 and 因果掩码), so a search for a part finds it too.

    >>> "因果掩码" in search_dictionary().splitlines()
    True
    """
    return "".join(f"{word}\n" for word in search_words(terms))


@functools.lru_cache(maxsize=1)
def _cutter() -> Any:
    """jieba, with the glossary's Chinese words added to its dictionary (alone it cuts 解码器 into 解码 and 器)."""
    import jieba  # type: ignore[import-untyped]  # [book]: the Chinese search index and this

    jieba.setLogLevel(logging.WARNING)  # not "Building prefix dict ..." on every build
    cutter = jieba.Tokenizer()
    for word in search_words():
        cutter.add_word(word)
    return cutter


def label_words(labels: Iterable[str]) -> list[str]:
    """The Chinese words of ``labels`` (a figure's titles, axes, legends, annotations) of two characters or more, as
    jieba cuts them with the glossary's terms: the units that plotly-theme.js keeps whole when it breaks a label into
    lines on a narrow screen (a line breaks between two words, never inside one), longest first.

    >>> label_words(["编码器－解码器：<br>解码器自注意力", "第 2 层"])
    ['自注意力', '编码器', '解码器']
    """
    words: dict[str, None] = {}
    for label in labels:
        for run in CJK_RUN.findall(label):
            words.update((w, None) for w in _cutter().cut(run, HMM=False) if len(w) > 1)
    return sorted(words, key=lambda w: (-len(w), w))

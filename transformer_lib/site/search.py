"""What a reader types finds the page that explains it: the spellings of a term (``search_synonyms.toml``) as entries
of the site's search index.

Sphinx's search box (searchtools.js) scores a page that merely holds a query's words at 5 a word, a section title at
up to 15, and an *index entry* that the query matches at up to 100; it shows an index entry's result with a snippet
from the element the entry points to. So, for each term of ``search_synonyms.toml``, this extension gives the page
that explains it one index entry per spelling (the glossary's Chinese renderings and English names, and the file's
own words: 教师强制 as well as 强制教学), pointing at the paragraph that defines the term: that page ranks first for
every spelling, and its snippet is the definition, not the table of contents or a formula's TeX source (issue 44).

The entries are added to each page's doctree after it is resolved, when the HTML builder indexes it, and nowhere
else: the HTML writer draws no index node, and the general index (built while reading) does not list them.
:func:`setup` is a Sphinx extension, set up by :mod:`.i18n`'s.

Both sites index with Sphinx's Chinese search language (``html_search_language: zh``), which :func:`setup` replaces
by :class:`ChineseIndex`: the same words, stems and index, without its cost. Sphinx 7.4's ``SearchChinese`` keeps
every Latin word it has split, repeats included, in a list and looks each word it stems up in that list, so indexing
grows with the square of the book's words (in a profile of the English build, 115 of its 307 s were spent in that
lookup); the English stemmer it then calls is pure Python and sees the same few thousand words over and over.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sphinx.search.zh import SearchChinese

from . import glossary

__all__ = ["SYNONYMS", "Synonyms", "read_synonyms", "definition_paragraph", "ChineseIndex", "setup"]

SYNONYMS = Path(__file__).with_name("search_synonyms.toml")
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Synonyms:
    """One term of ``search_synonyms.toml``.

    Attributes:
        page: the page that explains the term ("book/05_masks").
        words: every spelling that finds it: the glossary row's Chinese renderings and English names first (when
            the entry names a row), then the file's own words; each once, in that order.
    """

    page: str
    words: tuple[str, ...]

    @property
    def anchor(self) -> str:
        """The id given to the paragraph that defines the term (an HTML id: ASCII, from the first English word)."""
        english = next((w for w in self.words if re.fullmatch(r"[\x20-\x7e]+", w)), None)
        if english is None:  # a term with Chinese words only: a short digest of its first
            return "tl-term-" + hashlib.sha1(self.words[0].encode()).hexdigest()[:8]
        return "tl-term-" + re.sub(r"[^a-z0-9]+", "-", english.lower()).strip("-")


def read_synonyms(path: Path = SYNONYMS, terms: list[glossary.Term] | None = None) -> list[Synonyms]:
    """The terms of ``path`` with the glossary's spellings added (``terms``: the glossary's rows, read if None).

    >>> by_page = {s.words[0]: s.page for s in read_synonyms()}
    >>> by_page["强制教学"], by_page["学习率预热"]
    ('book/01_why_not_rnn', 'book/08_training')
    """
    rows = {t.english[0].lower(): t for t in (glossary.read_glossary() if terms is None else terms)}
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    found = []
    for i, entry in enumerate(data.get("term", [])):
        where = f"{Path(path).name}, term {i + 1}"
        page, words, row = entry.get("page"), entry.get("words"), entry.get("glossary")
        if (
            not isinstance(page, str)
            or not (ROOT / page).with_suffix(".ipynb").is_file()
            and not ((ROOT / page).with_suffix(".md").is_file())
        ):
            raise ValueError(f"{where}: expected 'page' to name a page of the book (book/NN_name), got {page!r}")
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w.strip() for w in words):
            raise ValueError(f"{where}: expected 'words' to be a list of spellings, got {words!r}")
        spellings: list[str] = []
        if row is not None:
            if not isinstance(row, str) or row.lower() not in rows:
                raise ValueError(f"{where}: expected 'glossary' to name a row of book/glossary.md, got {row!r}")
            spellings += [*rows[row.lower()].chinese, *rows[row.lower()].english]
        spellings += [w.strip() for w in words]
        found.append(Synonyms(page=page, words=tuple(dict.fromkeys(spellings))))
    return found


def definition_paragraph(doctree: Any, words: tuple[str, ...]) -> Any:
    """The paragraph of ``doctree`` that defines a term spelled ``words``: the first one that holds a spelling in
    bold or italics (how the pages introduce a term), else the first that holds one at all; None if none does.
    Paragraphs in tables, footnotes and citations are passed over."""
    from docutils import nodes

    lowered = [w.lower() for w in words]

    def holds(node: Any) -> bool:
        text = node.astext().lower()
        return any(w in text for w in lowered)

    def in_the_text(paragraph: Any) -> bool:
        parent = paragraph.parent
        while parent is not None:
            if isinstance(parent, (nodes.table, nodes.footnote, nodes.citation)):
                return False
            parent = parent.parent
        return True

    paragraphs = [p for p in doctree.findall(nodes.paragraph) if in_the_text(p) and holds(p)]
    for paragraph in paragraphs:
        if any(holds(n) for n in paragraph.findall(lambda n: isinstance(n, (nodes.strong, nodes.emphasis)))):
            return paragraph
    return paragraphs[0] if paragraphs else None


def add_index_entries(doctree: Any, docname: str, terms: list[Synonyms]) -> int:
    """Give ``docname``'s doctree an index entry for each spelling of each of ``terms`` it explains, pointing at the
    term's defining paragraph (or at the page, if no paragraph holds a spelling). Returns how many it added."""
    from sphinx import addnodes

    added = 0
    for term in (t for t in terms if t.page == docname):
        paragraph = definition_paragraph(doctree, term.words)
        target = ""
        if paragraph is not None:
            if term.anchor not in paragraph["ids"]:
                paragraph["ids"].append(term.anchor)
            target = term.anchor
        entries = [("single", word, target, "main", None) for word in term.words if ";" not in word]
        (paragraph.parent if paragraph is not None else doctree).append(addnodes.index(entries=entries))
        added += len(entries)
    return added


class _WordSet(set):
    """The Latin words met so far, as a set that SearchChinese's ``latin_terms.extend`` fills (it expects a list)."""

    def extend(self, words: Any) -> None:
        self.update(words)


class _CachedStemmer:
    """A snowball stemmer that stems each distinct word once (stemming is a pure function of the word)."""

    def __init__(self, stemmer: Any) -> None:
        self._stemmer = stemmer
        self._stems: dict[str, str] = {}

    def stemWord(self, word: str) -> str:  # noqa: N802 (snowballstemmer's name)
        stem = self._stems.get(word)
        if stem is None:
            stem = self._stems[word] = self._stemmer.stemWord(word)
        return stem


class ChineseIndex(SearchChinese):
    """Sphinx's Chinese search language, giving the same index in linear time: the Latin words it has split are a set
    (membership is all it asks of them), and its English stemmer remembers the words it has stemmed."""

    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        self.latin_terms = _WordSet()  # type: ignore[assignment]  # Sphinx's own is a list, shared by the class
        self.stemmer = _CachedStemmer(self.stemmer)


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension: each term of ``search_synonyms.toml`` as index entries of the page that explains it; the
    Chinese search language is :class:`ChineseIndex`."""
    terms = read_synonyms()
    app.add_search_language(ChineseIndex)

    def index_entries(app: Any, doctree: Any, docname: str) -> None:
        if app.builder.format == "html":
            add_index_entries(doctree, docname, terms)

    app.connect("doctree-resolved", index_entries)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

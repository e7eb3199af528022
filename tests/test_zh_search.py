"""The Chinese site's search finds every Chinese term of the glossary on the page that introduces it.

Sphinx's Chinese search language cuts the text into words with jieba; the search box (searchtools.js) looks each
word of a query up in the index, whole, or as a part of an indexed word when it is longer than two characters. jieba
alone cut 因果掩码 into 因果 + 掩码 and dropped 束 of 束搜索, so those searches found nothing (issue 37). The build
gives jieba the glossary's terms as a user dictionary (transformer_lib.site.i18n, from book/glossary.md).

The index here is built as Sphinx builds it (``sphinx.search.zh.SearchChinese``: split, stem, filter) from each
page's Chinese text, its catalog's translations, and searched as searchtools.js searches it. Where a built Chinese
site exists (``_build/html/zh/searchindex.js``), its real index is searched too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import jieba
import pytest
import snowballstemmer
from babel.messages.pofile import read_po
from sphinx.search.zh import SearchChinese

from transformer_lib.site import glossary, i18n

ROOT = Path(__file__).resolve().parents[1]
LOCALE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES"
SEARCHINDEX = ROOT / "_build" / "html" / "zh" / "searchindex.js"
Index = dict[str, set[str]]  # an indexed word -> the pages that hold it


def _label_pages() -> dict[str, str]:
    """A section label ("intro-why") -> the page that defines it ("book/intro"), from the pages' ``(label)=``."""
    pages = {}
    for path in sorted((ROOT / "book").rglob("*")):
        if path.suffix in (".ipynb", ".md") and "_build" not in path.parts:
            for label in re.findall(r"\((\w[\w-]*)\)=", path.read_text(encoding="utf-8")):
                pages[label] = path.relative_to(ROOT).with_suffix("").as_posix()
    return pages


def _introducing_page(term: glossary.Term, labels: dict[str, str]) -> str:
    if term.introduced_in.startswith("ref:"):
        return labels[term.introduced_in.removeprefix("ref:")]
    return term.introduced_in


def _english(page: str) -> str:
    """The English text of a page: its catalog's message ids."""
    with open(LOCALE / f"{page}.po", "rb") as f:
        return "\n".join(m.id for m in read_po(f) if m.id)


def _query(term: str) -> str:
    """What a reader types for ``term``, less its one-character words: Sphinx indexes no such word ("k" of top-k,
    "软" of “软”匹配), and searchtools.js then keeps only the pages that hold every word longer than two characters,
    which lets a search for "top-k 采样" find the pages with "top" alone whatever the index holds."""
    return " ".join(w for w in re.split(r"[\W]+", term) if len(w) > 1)


def _cases() -> list[tuple[str, str]]:
    """(a Chinese term, the page that must be among its results). The preferred term of a row finds the page that
    introduces it, where that page's English names the term (else the glossary); the other renderings and the
    notes' terms find the glossary, which gives them. A one-character term (头, 键) is left out: Sphinx indexes
    no word shorter than two characters."""
    labels = _label_pages()
    cases: dict[str, str] = {}
    for term in glossary.read_glossary():
        page = _introducing_page(term, labels)
        named = any(re.search(rf"(?<![\w-]){re.escape(n)}", _english(page), re.I) for n in term.english)
        for i, chinese in enumerate(term.chinese + term.notes):
            if len("".join(glossary.CJK_RUN.findall(chinese))) > 1:
                cases.setdefault(chinese, page if i == 0 and named else "book/glossary")
    return sorted(cases.items())


CASES = _cases()


def _page_texts(pages: set[str] | None = None) -> Iterator[tuple[str, str]]:
    """(page, one translated message) for every page (or those named): the Chinese text the site shows."""
    for path in sorted(LOCALE.rglob("*.po")):
        page = path.relative_to(LOCALE).with_suffix("").as_posix()
        if pages is not None and page not in pages:
            continue
        with open(path, "rb") as f:
            for message in read_po(f):
                if message.id and message.string:
                    yield page, message.string


def _index(dictionary: Path | None, monkeypatch: pytest.MonkeyPatch, pages: set[str] | None = None) -> Index:
    """The search index of the Chinese pages, as Sphinx's IndexBuilder.feed builds it with the zh language, using a
    fresh jieba tokenizer (so that loading a user dictionary here leaves jieba's global one alone)."""
    tokenizer = jieba.Tokenizer()
    monkeypatch.setattr(jieba, "cut_for_search", tokenizer.cut_for_search)
    monkeypatch.setattr(jieba, "load_userdict", tokenizer.load_userdict)
    language = SearchChinese({"dict": str(dictionary)} if dictionary else {})
    index: Index = {}
    for page, text in _page_texts(pages):
        for word in language.split(text):
            stemmed = language.stem(word).lower()
            if not language.word_filter(stemmed) and language.word_filter(word):
                stemmed = word
            if language.word_filter(stemmed):
                index.setdefault(stemmed, set()).add(page)
    return index


def search(index: Index, query: str) -> set[str]:
    """The pages searchtools.js (Sphinx 7.4, ``performTermsSearch``) returns for ``query``: the query split at
    non-word characters and stemmed; a word is found whole or, when longer than two characters, inside an indexed
    word; a page must hold every word, or every word longer than two characters."""
    stemmer = snowballstemmer.stemmer("english")
    split = [w for w in re.split(r"\W+", query) if w and not w.isdigit() and w.lower() not in SearchChinese.stopwords]
    words = {stemmer.stemWord(w.lower()) for w in split}
    matched: dict[str, set[str]] = {}  # page -> the query's words it holds
    for word in words:
        pages = set(index.get(word, ()))
        if len(word) > 2 and word not in index:
            pages.update(*(p for indexed, p in index.items() if word in indexed))
        for page in pages:
            matched.setdefault(page, set()).add(word)
    enough = {len(words), len([w for w in words if len(w) > 2])}
    return {page for page, found in matched.items() if len(found) in enough}


@pytest.fixture(scope="module")
def dictionary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user dictionary exactly as the Sphinx extension writes it for a Chinese search index."""
    config = SimpleNamespace(html_search_language="zh", language="zh_CN", html_search_options={})
    i18n._search_dictionary(SimpleNamespace(doctreedir=tmp_path_factory.mktemp("doctrees")), config)
    return Path(config.html_search_options["dict"])


@pytest.fixture(scope="module")
def index(dictionary: Path) -> Iterator[Index]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield _index(dictionary, monkeypatch)


def test_the_build_gives_jieba_every_chinese_term_of_the_glossary(dictionary: Path) -> None:
    words = dictionary.read_text(encoding="utf-8").splitlines()
    assert words == glossary.search_words()
    assert {"因果掩码", "束搜索", "层规范化", "交叉注意力", "标签平滑"} <= set(words)
    # an English site (or a dictionary given in _config.yml) is left as it is
    config = SimpleNamespace(html_search_language=None, language="en", html_search_options={})
    i18n._search_dictionary(SimpleNamespace(doctreedir=dictionary.parent), config)
    assert config.html_search_options == {}


@pytest.mark.slow
@pytest.mark.parametrize("term, page", CASES)
def test_a_glossary_term_finds_the_page_that_introduces_it(index: Index, term: str, page: str) -> None:
    results = search(index, _query(term))
    assert page in results, f"searching {term!r} finds {sorted(results) or 'nothing'}, not {page}"


@pytest.mark.slow
def test_without_the_dictionary_the_search_loses_terms(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the test above catches: jieba's own dictionary cuts the terms apart (issue 37's list)."""
    named = {"束搜索", "因果掩码", "字节对编码", "标签平滑"}
    cases = {term: page for term, page in CASES if term in named}
    plain = _index(None, monkeypatch, set(cases.values()))  # the pages that introduce them are enough
    lost = {term for term, page in cases.items() if page not in search(plain, _query(term))}
    assert lost == named, sorted(lost)


@pytest.mark.browser  # run with the tests of the built site, after the build (scripts/test_all.sh)
@pytest.mark.skipif(not SEARCHINDEX.is_file(), reason="no built Chinese site (scripts/i18n.py build)")
def test_the_built_sites_index_finds_every_term() -> None:
    data = json.loads(re.search(r"Search\.setIndex\((.*)\)\s*$", SEARCHINDEX.read_text(encoding="utf-8"), re.S)[1])
    docnames = data["docnames"]
    built: Index = {}
    for key in ("terms", "titleterms"):
        for word, docs in data[key].items():
            built.setdefault(word, set()).update(docnames[d] for d in (docs if isinstance(docs, list) else [docs]))
    missing = [f"{term} -> {page}" for term, page in CASES if page not in search(built, _query(term))]
    assert not missing, missing

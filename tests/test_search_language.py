"""The sites' Chinese search language (transformer_lib.site.search.ChineseIndex) indexes as Sphinx's SearchChinese does,
in time linear in the book's words: each distinct word is stemmed once, and the Latin words met are a set."""

from __future__ import annotations

import sphinx.search
from sphinx.search.zh import SearchChinese

from transformer_lib.site.search import ChineseIndex

TEXT = (
    "The encoder's self-attention 自注意力 lets every token look at every other token; 因果掩码 hides the future. "
    "Adam, LSTM, GRU, d_model and softmax are words a search must find, as are 束搜索 and beam search."
)


def test_the_same_words_and_stems_as_sphinx() -> None:
    ours, sphinxs = ChineseIndex({}), SearchChinese({})
    words = ours.split(TEXT)
    assert words == sphinxs.split(TEXT) and len(words) > 30
    assert [ours.stem(w) for w in words] == [sphinxs.stem(w) for w in words]
    assert ours.stem("GRU") == "gru" and ours.stem("searches") == "search"  # a short acronym kept, a word stemmed


def test_each_distinct_word_is_stemmed_once() -> None:
    index = ChineseIndex({})
    calls: list[str] = []
    stemmer = index.stemmer._stemmer
    stem_word = stemmer.stemWord

    def counted(word: str) -> str:
        calls.append(word)
        return stem_word(word)

    stemmer.stemWord = counted
    for _ in range(50):
        for word in index.split(TEXT):
            index.stem(word)
    distinct = {w.lower() for w in index.split(TEXT)}
    assert 0 < len(calls) <= len(distinct), (len(calls), len(distinct))
    assert isinstance(index.latin_terms, set) and "LSTM" in index.latin_terms


def test_setup_registers_it_for_zh() -> None:
    from transformer_lib.site import search

    class App:
        def connect(self, *args: object) -> None:
            pass

        def add_search_language(self, cls: type[SearchChinese]) -> None:
            sphinx.search.languages[cls.lang] = cls  # what Sphinx's own does

    previous = sphinx.search.languages["zh"]
    try:
        search.setup(App())
        assert sphinx.search.languages["zh"] is ChineseIndex
    finally:
        sphinx.search.languages["zh"] = previous

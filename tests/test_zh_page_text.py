"""The Chinese site's own words outside the prose and the figures (issue 37): the book's title and footer, the sidebar
buttons' tooltips, the live translator's placeholder and messages, and the words site.po gives a notebook's page
(folded cells' toggles, hints, solutions, source panels, the search field, the sidebar toggles' names).

The title, footer and tooltips come from the project's booktheme.po (transformer_lib/site/i18n.py); the translator's
placeholder from the figures' catalog (locale/zh_CN/LC_MESSAGES/figures.po), its messages from translator.js's table.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_zh_figures import english_words

from transformer_lib.book import live_translator

ROOT = Path(__file__).resolve().parents[1]
TRANSLATOR_JS = ROOT / "book" / "_static" / "translator" / "translator.js"
TITLE = "Attention Is All You Need, by running it"
FOOTER = "Every number in the text is checked by a hidden cell; the book runs offline on a CPU."


def placeholder_words(snippet: str) -> dict[str, dict[str, str]]:
    """The words the translator's placeholder script chooses from, by language."""
    match = re.search(r"const words = ", snippet)
    assert match, "the placeholder has no words to choose from"
    return json.JSONDecoder().raw_decode(snippet, match.end())[0]


def chinese_problems(words: dict[str, str]) -> list[str]:
    return [f"{key}: {text!r}" for key, text in words.items() if english_words(re.sub(r"\{\w+\}", " ", text))]


def test_the_translators_placeholder_speaks_the_pages_language() -> None:
    words = placeholder_words(live_translator.page_html(element_id="demo"))
    assert words["en"]["placeholder"].startswith("The live translator runs on the book's website")
    assert words["zh"]["placeholder"].startswith("这个翻译器在本书的网站上运行")
    assert "{error}" in words["zh"]["failed"]
    assert chinese_problems(words["zh"]) == []
    planted = {**words["zh"], "failed": " (It could not start here: {error})"}
    assert chinese_problems(planted) == ["failed: ' (It could not start here: {error})'"]


def js_tables(source: str) -> dict[str, dict[str, str]]:
    """translator.js's WORDS table: for each language, each key's literal text (``${...}`` left out)."""
    body = source.split("const WORDS = {", 1)[1].split("\n};", 1)[0]
    tables = {}
    for lang, block in re.findall(r"\n  (\w+): \{\n(.*?)\n  \},", body, flags=re.S):
        entries = re.findall(r"(\w+): (.*?)(?=,\s*\w+: |,?\s*$)", block.replace("\n", " "), flags=re.S)
        literals = {key: " ".join(a or b for a, b in re.findall(r"\"([^\"]*)\"|`([^`]*)`", v)) for key, v in entries}
        tables[lang] = {key: re.sub(r"\$\{[^}]*\}", " ", text) for key, text in literals.items()}
    return tables


def test_the_translators_chinese_messages_are_complete_and_chinese() -> None:
    tables = js_tables(TRANSLATOR_JS.read_text(encoding="utf-8"))
    assert set(tables) == {"en", "zh"} and "failed" in tables["en"] and len(tables["en"]) > 20
    assert set(tables["en"]) <= set(tables["zh"]), f"no Chinese for {set(tables['en']) - set(tables['zh'])}"
    assert chinese_problems(tables["zh"]) == []
    planted = TRANSLATOR_JS.read_text(encoding="utf-8").replace(
        "failed: message => `翻译器无法运行", "failed: message => `Failed"
    )
    assert [p.split(":")[0] for p in chinese_problems(js_tables(planted)["zh"])] == ["failed"]


def _build(tmp_path: Path, language: str) -> str:
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "conf.py").write_text(
        "extensions = ['transformer_lib.site.i18n']\nhtml_theme = 'sphinx_book_theme'\n"
        f"html_title = {TITLE!r}\nhtml_theme_options = {{'extra_footer': {FOOTER!r}}}\n"
        f"locale_dirs = [{str(ROOT / 'locale')!r}]\nhtml_search_language = 'en'\n"
        "author = 'The transformer-book authors'\ncopyright = '2026'\n",
        encoding="utf-8",
    )
    (src / "index.rst").write_text("Page\n====\n\nText.\n\nPart\n----\n\nMore.\n", encoding="utf-8")
    out = tmp_path / f"html-{language}"
    app = Sphinx(str(src), str(src), str(out), str(tmp_path / f"doctrees-{language}"), "html",
                 confoverrides={"language": language}, status=None, warning=None, freshenv=True)  # fmt: skip
    app.build()
    return (out / "index.html").read_text(encoding="utf-8")


def test_the_chinese_pages_title_footer_and_sidebar_buttons(tmp_path: Path) -> None:
    en = _build(tmp_path, "en")  # first: a process keeps the theme's catalog of its first language
    assert f"<title>Page &#8212; {TITLE}</title>" in en and FOOTER in en
    assert 'title="Toggle primary sidebar"' in en and 'title="Toggle secondary sidebar"' in en
    zh = _build(tmp_path, "zh_CN")
    assert re.search(r"<title>[^<]*边运行边读懂 Attention Is All You Need</title>", zh)
    assert "正文中的每个数字都由一个隐藏的单元格检查" in zh and FOOTER not in zh
    # the footer's author and copyright (issue 44)
    assert "The transformer-book authors" in en and "© Copyright 2026." in en
    assert "transformer-book 作者们" in zh and "© 2026 版权所有。" in zh and "The transformer-book authors" not in zh
    assert "© Copyright" not in zh
    assert 'title="显示/隐藏导航栏"' in zh and 'title="显示/隐藏本页目录"' in zh
    assert not re.search(r'title="Toggle (primary|secondary) sidebar"', zh)
    # this page is not in TRANSLATED: the Chinese page the build writes opens its article with the notice
    assert zh.index("本页尚未译成中文，先显示英文原文。") < zh.index("<h1>Page<a") and "tl-untranslated" not in en


# --------------------------------------------------------------------------------------------------------------
# The site's own words (site.po: folded cells' toggles, hints, solutions, source panels, the search field, the sidebar
# toggles' names) and the theme's names and tooltips, on a Chinese page that a notebook makes
# --------------------------------------------------------------------------------------------------------------
_ATTRIBUTE = re.compile(r'\b(aria-label|title|alt|placeholder|data-bs-title)="([^"]*)"')
_CJK = re.compile(r"[\u4e00-\u9fff]")
# an attribute that may stay in Latin letters: the language switch names English in English; besides it, a code name
# (a link's title "transformer_lib.layers.Residual") and a bibliography entry (authors and title, as published)
_KEPT_ATTRIBUTES = {"English"}


def english_on_chinese_page(page: str) -> list[str]:
    """What a built Chinese page shows in English where the catalogs should have given Chinese: each msgid of site.po
    shown as an element's text (scripts left out: ``window.tlWords`` holds the English msgids as keys), and each
    ``aria-label``, ``title``, ``alt`` or ``placeholder`` in Latin words only.

    >>> english_on_chinese_page('<summary>Hint</summary><nav aria-label="Main"><a title="English">')
    ['Hint', 'aria-label="Main"']
    >>> english_on_chinese_page('<summary>提示</summary><script>w = {"Hint": "提示"};</script><img alt="Binder 标志">')
    []
    """
    from transformer_lib.site.i18n import SITE_WORDS

    # scripts and styles are not shown; a <link rel="next"> names the next page by its title, which is prose
    shown = re.sub(r"<script\b.*?</script>|<style\b.*?</style>|<link\b[^>]*>", " ", page, flags=re.S)
    found = []
    for word in SITE_WORDS:
        pattern = re.sub(r"\\\{\w+\\\}", ".+?", re.escape(word))
        if re.search(rf">\s*{pattern}\s*<", shown):
            found.append(word)
    for attribute, value in _ATTRIBUTE.findall(shown):
        code = re.fullmatch(r"[\w.]+", value) and ("_" in value or "." in value)
        bibliography = re.search(r"\b(?:In|URL:|Proceedings|[12]\d{3}\.)", value)
        if re.search("[A-Za-z]{2}", value) and not _CJK.search(value) and value not in _KEPT_ATTRIBUTES:
            if not code and not bibliography:
                found.append(f'{attribute}="{value}"')
    return found


def _notebook() -> dict:
    """A page as the chapters write it: a hint and a solution, a check folded under its own words, a cell folded by
    myst-nb's default words, and the source panels of show_source (one open, one folded)."""
    from transformer_lib.book.source import show_source
    from transformer_lib.site import i18n

    def code(source: str, tags: list[str], outputs: list, **mystnb: str) -> dict:
        metadata: dict = {"tags": tags, **({"mystnb": mystnb} if mystnb else {})}
        return {"cell_type": "code", "execution_count": 1, "metadata": metadata, "outputs": outputs, "source": source}

    def html(text: str) -> list:
        return [{"output_type": "display_data", "metadata": {}, "data": {"text/html": text, "text/plain": "x"}}]

    show_check, hide_check = i18n.TOGGLE_WORDS[:2]
    hint = '<details class="hint">\n<summary>Hint</summary>\n\nLook.\n\n</details>\n\n'
    solution = '<details class="solution">\n<summary>Solution</summary>\n\nThis.\n\n</details>\n'
    return {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": "# Notebook\n\nText.\n\n" + hint + solution},
            code("assert 1", ["hide-cell"], [], code_prompt_show=show_check, code_prompt_hide=hide_check),
            code("print(1)", ["hide-input"], [{"output_type": "stream", "name": "stdout", "text": "1\n"}]),
            code("show_source(f)", [], html(show_source(_shown_function, collapse_after=1)._repr_html_())),
            code("show_source(f)", [], html(show_source(_shown_function, collapse_after=99)._repr_html_())),
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 4,
    }


def _shown_function() -> None:
    """A function whose source a panel shows."""


def _build_notebook_site(tmp_path: Path, locale_dir: Path) -> str:
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir(parents=True)
    (src / "conf.py").write_text(
        "extensions = ['myst_nb', 'transformer_lib.site.i18n', 'transformer_lib.site.pages']\n"
        "html_theme = 'sphinx_book_theme'\nnb_execution_mode = 'off'\n"
        "html_theme_options = {'search_bar_text': 'Search this book...'}\n"
        f"locale_dirs = [{str(locale_dir)!r}]\nhtml_search_language = 'en'\n",
        encoding="utf-8",
    )
    (src / "index.md").write_text("# Book\n\n```{toctree}\nnotebook\npart\n```\n", encoding="utf-8")
    (src / "part.md").write_text("# Part\n\n```{toctree}\nsection\n```\n", encoding="utf-8")
    (src / "section.md").write_text("# Section\n\nText.\n", encoding="utf-8")
    (src / "notebook.ipynb").write_text(json.dumps(_notebook()), encoding="utf-8")
    out = tmp_path / "html"
    app = Sphinx(str(src), str(src), str(out), str(tmp_path / "doctrees"), "html",
                 confoverrides={"language": "zh_CN"}, status=None, warning=None, freshenv=True)  # fmt: skip
    app.build()
    return (out / "notebook.html").read_text(encoding="utf-8")


@pytest.fixture
def sphinx_translators() -> Iterator[None]:
    """Sphinx's catalogs as they were: a build registers its language's for the rest of the process."""
    from sphinx import locale

    saved = dict(locale.translators)
    yield
    locale.translators.clear()
    locale.translators.update(saved)


@pytest.mark.slow
def test_a_chinese_page_shows_the_sites_own_words_in_chinese(tmp_path: Path, sphinx_translators: None) -> None:
    """A notebook's page on the Chinese site: every word of site.po it shows is Chinese, and so is every name and
    tooltip; with a word taken out of the catalog (planted), the page shows it in English and the check says so."""
    page = _build_notebook_site(tmp_path / "zh", ROOT / "locale")
    assert english_on_chinese_page(page) == []
    toggles = ("显示正文背后的检查", "隐藏检查", "显示代码", "<summary>提示</summary>", "<summary>解答</summary>")
    names = ('placeholder="搜索本书……"', 'aria-label="主导航"', 'aria-label="展开小节：Part"')
    for chinese in (*toggles, "的源码，共", "（点击展开）", *names):
        assert chinese in page, chinese
    # planted: site.po without "Hint" and without the sidebar toggle's name
    planted = tmp_path / "planted" / "locale" / "zh_CN" / "LC_MESSAGES"
    planted.mkdir(parents=True)
    for name in ("site.po", "booktheme.po", "sphinx.po"):
        text = (ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / name).read_text(encoding="utf-8")
        if name == "site.po":
            text = text.replace('msgstr "提示"', 'msgstr ""').replace('msgstr "展开小节：{chapter}"', 'msgstr ""')
        (planted / name).write_text(text, encoding="utf-8")
    page = _build_notebook_site(tmp_path / "planted", planted.parents[1])
    assert english_on_chinese_page(page) == ["Hint", 'aria-label="Sections of Part"']


BUILT_ZH = ROOT / "_build" / "html" / "zh"
# the book's pages and the library's source pages (viewcode's _modules/, which link from the API page)
BUILT_PAGES = sorted(
    p.relative_to(BUILT_ZH).as_posix() for p in [*BUILT_ZH.glob("book/*.html"), *BUILT_ZH.glob("_modules/**/*.html")]
)


@pytest.mark.browser  # reads the built site: runs after the build (scripts/test_all.sh), not before it
@pytest.mark.parametrize("page", BUILT_PAGES or ["<no Chinese site>"])
def test_a_built_chinese_page_shows_no_english_site_words(page: str) -> None:
    """The same check on every page of the built Chinese site (scripts/build_book.sh), where there is one."""
    if not (BUILT_ZH / page).is_file():
        pytest.skip("no Chinese site in _build/html/zh: scripts/build_book.sh builds it")
    assert english_on_chinese_page((BUILT_ZH / page).read_text(encoding="utf-8")) == []

"""The Chinese site's own words outside the prose and the figures (issue 37): the book's title and footer, the sidebar
buttons' tooltips, and the live translator's placeholder and messages.

The title, footer and tooltips come from the project's booktheme.po (transformer_lib/site/i18n.py); the translator's
placeholder from the figures' catalog (locale/zh_CN/LC_MESSAGES/figures.po), its messages from translator.js's table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

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
        f"locale_dirs = [{str(ROOT / 'locale')!r}]\nhtml_search_language = 'en'\n",
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
    assert 'title="显示/隐藏导航栏"' in zh and 'title="显示/隐藏本页目录"' in zh
    assert not re.search(r'title="Toggle (primary|secondary) sidebar"', zh)
    # this page is not in TRANSLATED: the Chinese page the build writes opens its article with the notice
    assert zh.index("本页尚未译成中文，先显示英文原文。") < zh.index("<h1>Page<a") and "tl-untranslated" not in en

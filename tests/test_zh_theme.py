"""The theme's words on the Chinese site come from the project's catalogs, in mainland usage (issue 37)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import types
from collections.abc import Iterator
from pathlib import Path

import sphinx_book_theme
from sphinx import locale

from transformer_lib.site.i18n import SITE_CATALOG, THEME_CATALOG, _project_catalogs

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def project_catalogs(locale_dirs: tuple[str, ...] = ("locale",), srcdir: Path = ROOT) -> Iterator[None]:
    """The project's booktheme.po and site.po loaded as a Chinese build loads them (i18n._project_catalogs), and
    Sphinx's translators as they were afterwards."""
    keys = [("general", THEME_CATALOG), ("general", SITE_CATALOG)]
    saved = {key: locale.translators.get(key) for key in keys}  # the theme's own, if set up: ours goes before it
    try:
        config = types.SimpleNamespace(language="zh_CN", locale_dirs=list(locale_dirs))
        _project_catalogs(types.SimpleNamespace(config=config, srcdir=str(srcdir)))
        yield
    finally:
        for key in keys:
            locale.translators.pop(key, None)
            if saved[key] is not None:
                locale.translators[key] = saved[key]


def test_the_projects_booktheme_catalog_comes_before_the_themes_own() -> None:
    theme_locales = os.path.join(sphinx_book_theme.get_html_theme_path(), "static", "locales")
    key = ("general", THEME_CATALOG)
    saved = locale.translators.pop(key, None)
    try:
        locale.init([theme_locales], "zh_CN", THEME_CATALOG)  # as the theme does when it is set up
        words = locale.get_translation(THEME_CATALOG)
        assert words("Print to PDF") == "列印成 PDF"  # the theme's own zh_CN: Taiwan's usage
        with project_catalogs():
            assert (words("Print to PDF"), words("Launch on")) == ("打印成 PDF", "启动于")
            assert words("Download this page") == "下载此页面"  # the theme's catalog still answers what ours lacks
            assert (words("Main"), words("Launch interactive content")) == ("主导航", "启动交互式内容")
    finally:
        locale.translators.pop(key, None)
        if saved is not None:
            locale.translators[key] = saved


def test_the_scripts_words_come_from_the_site_catalog() -> None:
    """reader.js writes its button's label and tooltip and the colour button's name through window.tlWords, which a
    Chinese page carries from site.po (i18n.script_words): no Chinese in the script itself."""
    from transformer_lib.site.i18n import SCRIPT_WORDS, script_words

    with project_catalogs():
        tag = script_words()
    table = json.loads(tag.removeprefix("<script>window.tlWords = ").removesuffix(";</script>\n"))
    assert set(table) == set(SCRIPT_WORDS), sorted(set(SCRIPT_WORDS) - set(table))  # every word translated
    assert table["Hide code"] == "隐藏代码" and table["Color mode: {mode}"] == "颜色模式：{mode}"
    reader = (ROOT / "book" / "_static" / "reader.js").read_text(encoding="utf-8")
    assert not re.search(r"[\u4e00-\u9fff]", reader)
    assert all(f'"{word}"' in reader for word in SCRIPT_WORDS)  # each word is one the script asks for

"""The book in two languages from one source: Sphinx's gettext catalogs, and the switch between the two sites.

The English site is built into ``_build/html``; the Chinese one from the same notebooks, with ``language = zh_CN``
and the translations in ``locale/zh_CN/LC_MESSAGES/<page>.po``, into ``_build/html/zh``
(``scripts/i18n.py build``, which ``scripts/build_book.sh`` runs). ``scripts/i18n.py update`` extracts the messages
(Sphinx's ``gettext`` builder) and brings the catalogs in step (``sphinx-intl update``).

As a Sphinx extension (listed in ``_config.yml``), :func:`setup` gives every page of either site a
``<link rel="alternate" hreflang=...>`` to the same page in the other language and the script that turns it into
the "中文 / English" button (``book/_static/language.js``, styled by ``book/_static/i18n.css``, which also gives the
Chinese site a CJK font stack), and puts the notice of a page pending translation (or with paragraphs pending) at its
top. Which pages are translated (:data:`TRANSLATED`), and the rule for the others, is
:mod:`transformer_lib.site.translated`'s.

Every word a Chinese page shows comes from a gettext catalog: the prose from its page's, the figures' labels from
``figures.po`` (:mod:`transformer_lib.book.labels`), the theme's words from ``booktheme.po`` and ``sphinx.po``, and
the site's own words (folded cells' toggles, hints, source panels, the search field, the notice, the sidebar
toggles' names, what ``reader.js`` writes: :data:`SITE_WORDS`) from ``site.po``, given to the doctree before a page
is written (:func:`_site_words_transform`) or to the page's context. No page's HTML is rewritten with a dictionary.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .translated import NOTICE, PENDING_NOTICE, TRANSLATED, pending_transform, untranslated_notice

__all__ = [
    "LANGUAGES",
    "TRANSLATED",
    "SUBDIR",
    "SITE_CATALOG",
    "SITE_WORDS",
    "site_language",
    "site_words",
    "translate_raw_html",
    "setup",
]

# Sphinx language code -> (the html lang attribute, the switch's label for that language)
LANGUAGES: dict[str, tuple[str, str]] = {"en": ("en", "English"), "zh_CN": ("zh-CN", "中文")}
SUBDIR = {"en": "", "zh_CN": "zh/"}  # where each site lives under _build/html


SITE_CATALOG = "site"
TOGGLE_WORDS = (  # folded cells' toggles: a notebook cell's code_prompt_show/hide, or myst-nb's default with {type}
    "Show the check behind the text",
    "Hide the check",
    "Show the solution",
    "Hide the solution",
    *(f"{verb} code cell {kind}" for kind in ("source", "output", "outputs", "content") for verb in ("Show", "Hide")),
)
SUMMARY_WORDS = ("Hint", "Solution")  # the <summary> of an exercise's hint and solution (raw HTML in the notebooks)
SOURCE_WORDS = ("Source of {name}, {n} lines", "Source of {name}, {n} lines (click to unfold)")  # source.py's panels
SEARCH_BAR_TEXT = "Search this book..."  # the header's search field (jupyter-book's html.search_bar_text)
SECTIONS_OF = "Sections of {chapter}"  # a sidebar toggle's name (transformer_lib.site.pages.accessible_page)
# The words that the site's scripts (book/_static/reader.js) write into a page: a Chinese page carries their
# translation as ``window.tlWords``, which the script looks them up in
SCRIPT_WORDS = (
    "Show code",
    "Hide code",
    "Show the code cells",
    "Hide the code cells (outputs stay)",
    "Color mode: {mode}",
)
# every msgid of site.po: what the pages show (here), the notices of a page pending translation, a sidebar toggle's name
SITE_WORDS = (
    *TOGGLE_WORDS,
    *SUMMARY_WORDS,
    *SOURCE_WORDS,
    SEARCH_BAR_TEXT,
    NOTICE,
    PENDING_NOTICE,
    SECTIONS_OF,
    *SCRIPT_WORDS,
)


def site_words() -> Callable[[str], str]:
    """The site's catalog (site.po) as Sphinx has loaded it for this build: a word it lacks, or any word on the
    English site, comes back as it is."""
    from sphinx.locale import get_translation

    words = get_translation(SITE_CATALOG)
    return lambda message: str(words(message))


_SUMMARY = re.compile(r"<summary>(Hint|Solution)</summary>")
_SOURCE = re.compile(r"<summary>Source of (<code>[^<]*</code>), (\d+) lines( \(click to unfold\))?</summary>")


def translate_raw_html(text: str, words: Callable[[str], str]) -> str:
    """The site's words in a raw HTML fragment of a page (a notebook's ``<summary>Hint</summary>``, the summary of a
    :func:`~transformer_lib.book.source.show_source` panel), each from ``words`` (:func:`site_words`); only inside
    these ``<summary>`` elements, so that the same words in prose or code are never touched.

    >>> zh = {"Hint": "提示", "Source of {name}, {n} lines (click to unfold)": "{name} 的源码，共 {n} 行（点击展开）"}
    >>> translate_raw_html("<details><summary>Hint</summary>", lambda m: zh.get(m, m))
    '<details><summary>提示</summary>'
    >>> translate_raw_html("<summary>Source of <code>tl.f</code>, 40 lines (click to unfold)</summary>", zh.get)
    '<summary><code>tl.f</code> 的源码，共 40 行（点击展开）</summary>'
    """

    def source(m: re.Match) -> str:
        said = words(SOURCE_WORDS[1] if m[3] else SOURCE_WORDS[0]).format(name=m[1], n=m[2])
        return f"<summary>{said}</summary>"

    return _SOURCE.sub(source, _SUMMARY.sub(lambda m: f"<summary>{words(m[1])}</summary>", text))


def _site_words_transform() -> type:
    """A Sphinx post-transform that gives a page's folded cells, hints, solutions and source panels their words from
    the site's catalog, in the doctree before the page is written: the toggles' words are a cell's metadata (or
    myst-nb's default), written into ``HideCodeCellNode`` by myst-nb's ``HideInputCells`` (priority 199); the others
    are raw HTML, which Sphinx never translates."""
    from docutils import nodes
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class TranslateSiteWords(SphinxPostTransform):
        default_priority = 200  # after myst_nb's HideInputCells
        formats = ("html",)

        def run(self, **kwargs: Any) -> None:
            if site_language(self.config) == "en":
                return
            words = site_words()
            for node in list(self.document.findall(nodes.Element)):
                if "prompt_show" in node.attributes and "prompt_hide" in node.attributes:  # myst-nb's HideCodeCellNode
                    node["prompt_show"], node["prompt_hide"] = words(node["prompt_show"]), words(node["prompt_hide"])
                elif isinstance(node, nodes.raw) and "html" in node.get("format", "").split():
                    text = node.astext()
                    translated = translate_raw_html(text, words)
                    if translated != text:
                        node.children = [nodes.Text(translated)]

    return TranslateSiteWords


def site_language(config: Any) -> str:
    """The language a build writes ("en" or "zh_CN"), from Sphinx's config."""
    language = getattr(config, "language", None) or "en"
    return "zh_CN" if language.startswith("zh") else "en"


def _alternates(app: Any, pagename: str, context: dict) -> str:
    """``<link rel="alternate">`` tags to this page in every language, relative to this page."""
    here = site_language(app.config)
    to_root = context.get("content_root") or "./"  # this site's root, relative to the page ("../" from book/x)
    site_root = posixpath.join(to_root, "..") if SUBDIR[here] else to_root  # the English site's root
    target = app.builder.get_target_uri(pagename)
    tags = []
    for language, (hreflang, label) in LANGUAGES.items():
        href = posixpath.normpath(posixpath.join(site_root, SUBDIR[language], target))
        current = ' data-current="1"' if language == here else ""
        tags.append(f'<link rel="alternate" hreflang="{hreflang}" href="{href}" title="{label}"{current} />')
    return "\n".join(tags) + "\n"


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension: language links and the switch on every page, CJK fonts and citations as 作者 等（年份）
    on the Chinese site."""

    def page_context(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
        if app.builder.format != "html":
            return
        context["metatags"] = context.get("metatags", "") + _alternates(app, pagename, context)
        language = site_language(app.config)
        if language == "en":
            return
        words = site_words()
        if "body" in context:  # a page pending translation says so, in the site's language, above its English
            pending = doctree.get("tl_pending", 0) if doctree is not None else 0  # its paragraphs shown in English
            notice = untranslated_notice(pagename, app.env.found_docs, language, words, pending)
            context["body"] = notice + context["body"]
        _title_and_footer(context)  # the book's title (<title>, the logo's text) and footer, from the theme's catalog
        context["metatags"] += script_words()  # what the site's scripts write, from the site's catalog
        if "theme_search_bar_text" in context:  # the header's search field, on every page
            context["theme_search_bar_text"] = words(context["theme_search_bar_text"])

    def add_files(app: Any) -> None:
        app.add_js_file("language.js")
        app.add_css_file("i18n.css")  # the switch's style; the CJK fonts apply to the Chinese site only

    from transformer_lib.site.citations import use_chinese_citations

    app.connect("config-inited", _search_dictionary)
    app.connect("config-inited", use_chinese_citations)  # 作者 等（年份） on the Chinese site
    app.connect("config-inited", _templates)
    app.connect("builder-inited", add_files)
    app.connect("builder-inited", _project_catalogs)
    # after the theme's own handler (priority 500), which sets the footer's "author" from the config
    app.connect("html-page-context", page_context, priority=600)
    app.add_transform(_toctree_captions_transform())
    app.add_transform(pending_transform())  # a translated page's paragraphs still pending: marked, counted
    app.add_post_transform(_site_words_transform())
    return {"parallel_read_safe": True, "parallel_write_safe": True}


THEME_CATALOG = "booktheme"  # sphinx-book-theme's message catalog (its "Print to PDF", "Launch on", ...)
TEMPLATES = Path(__file__).with_name("templates")  # theme components whose words the theme left out of its catalog


def _templates(app: Any, config: Any) -> None:
    """Put :data:`TEMPLATES` first in ``templates_path``: the sidebar buttons with their tooltips through
    ``translate`` (the theme's catalog: "Toggle primary sidebar" is written into sphinx-book-theme's template)."""
    config.templates_path = [str(TEMPLATES), *[p for p in config.templates_path if p != str(TEMPLATES)]]


def _title_and_footer(context: dict) -> None:
    """The book's title and footer (``_config.yml``'s ``title``, ``extra_footer`` and ``author``) in the page's
    language, from the project's ``booktheme.po``: Sphinx translates none of them."""
    from sphinx.locale import get_translation

    words = get_translation(THEME_CATALOG)
    title = context.get("docstitle")
    if isinstance(title, str) and words(title) != title:
        context["titlesuffix"] = str(context.get("titlesuffix", "")).replace(title, words(title))
        context["docstitle"] = words(title)
    footer = context.get("theme_extra_footer")
    if isinstance(footer, str) and footer:
        context["theme_extra_footer"] = words(footer)
    author = context.get("author")  # the footer's "By ..." (_config.yml's author)
    if isinstance(author, str) and author:
        context["author"] = words(author)


def script_words() -> str:
    """A ``<script>`` that gives the page's scripts their words in the page's language (:data:`SCRIPT_WORDS`, from the
    site's catalog as Sphinx has loaded it for this build; a word it lacks stays English)."""
    import json

    words = site_words()
    table = {word: words(word) for word in SCRIPT_WORDS if words(word) != word}
    return f"<script>window.tlWords = {json.dumps(table, ensure_ascii=False)};</script>\n"


def _project_catalogs(app: Any) -> None:
    """Load the project's catalogs of the theme's words and the site's: ``locale/<language>/LC_MESSAGES/booktheme.po``
    before sphinx-book-theme's own catalog, and ``site.po`` (:data:`SITE_WORDS`).

    The theme registers its catalog when it is set up, and Sphinx gives the first catalog registered for a name
    precedence: the theme's zh_CN says 列印成 PDF (Taiwan's usage) and lacks "Launch on". Each catalog is compiled to
    a ``.mo`` beside it (ignored by git, as Sphinx's own ``sphinx.mo``; the "sphinx" catalog, for Sphinx's and
    pydata-sphinx-theme's words, needs nothing: Sphinx reads ``locale_dirs`` first)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po
    from sphinx import locale

    language = app.config.language
    if not language or language == "en":
        return
    for name in (THEME_CATALOG, SITE_CATALOG):
        for folder in app.config.locale_dirs:
            po = Path(app.srcdir, folder, language, "LC_MESSAGES", f"{name}.po")
            if not po.exists():
                continue
            mo = po.with_suffix(".mo")
            if not mo.exists() or mo.stat().st_mtime < po.stat().st_mtime:
                with open(po, "rb") as source, open(mo, "wb") as target:
                    write_mo(target, read_po(source, locale=language))
            earlier = locale.translators.pop(("general", name), None)  # the theme's (or an earlier build's)
            locale.init([str(po.parents[2])], language, name)
            if earlier is not None and name == THEME_CATALOG:
                locale.translators[("general", name)].add_fallback(earlier)
            break


def _search_dictionary(app: Any, config: Any) -> None:
    """Give a Chinese search index (``html_search_language`` zh) the glossary's terms as jieba's user dictionary.

    jieba alone cuts 因果掩码 into 因果 and 掩码 and drops 束 of 束搜索 (one character), so the search box, which looks
    a query up as one word, found neither. The dictionary (:func:`transformer_lib.site.glossary.search_dictionary`)
    is written into the doctree folder under a name that changes with its words, so that a changed glossary
    re-indexes every page (Sphinx rewrites all pages when ``html_search_options`` changes)."""
    import hashlib
    from pathlib import Path

    from transformer_lib.site.glossary import search_dictionary

    language = config.html_search_language or config.language or "en"
    options = dict(config.html_search_options or {})
    if not language.startswith("zh") or "dict" in options:
        return
    words = search_dictionary()
    path = Path(app.doctreedir) / f"search-terms-{hashlib.sha256(words.encode()).hexdigest()[:12]}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file():
        path.write_text(words, encoding="utf-8")
    config.html_search_options = {**options, "dict": str(path)}


def _toctree_captions_transform() -> type:
    """A Sphinx transform that translates the captions of the sidebar's parts ("Chapters", "Appendices", ...).

    sphinx-external-toc inserts the toctrees from ``_toc.yml`` (priority 100) after Sphinx's own translation of a
    page (``Locale``, priority 20): the captions reach the catalog (book/intro.po) but never the page. This runs
    after the insertion and takes each caption from the same catalog, the way ``Locale`` would have."""
    from os import path

    from sphinx import addnodes
    from sphinx.locale import init as init_locale
    from sphinx.transforms import SphinxTransform
    from sphinx.util.i18n import docname_to_domain

    class TranslateToctreeCaptions(SphinxTransform):
        default_priority = 101  # after sphinx_external_toc.events.InsertToctrees

        def apply(self, **kwargs: Any) -> None:
            if site_language(self.config) == "en":
                return
            domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
            dirs = [path.join(self.env.srcdir, d) for d in self.config.locale_dirs]
            catalog, found = init_locale(dirs, self.config.language, domain)
            if not found:
                return
            for node in self.document.findall(addnodes.toctree):
                caption = node.get("caption")
                if caption and catalog.gettext(caption) != caption:
                    node["caption"] = node["rawcaption"] = catalog.gettext(caption)

    return TranslateToctreeCaptions

"""What the build does to every page's HTML, whatever the page holds: scripts once, a bibliography without
deprecated ARIA roles, and the names and focus that assistive technology needs before any script runs (axe finds
them in the HTML the build writes, with ``reader.js`` blocked).

:func:`setup` is a Sphinx extension (``sphinx.extra_extensions`` in ``_config.yml``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .i18n import SECTIONS_OF, site_language, site_words


def unique_scripts(scripts: list) -> list:
    """``scripts`` without repeats of the same file or inline body with the same attributes (first one kept).

    Under Jupyter Book 1 every page carried the inline configuration scripts of sphinx-thebe
    (``const THEBE_JS_URL = ...``) and sphinx-togglebutton twice: Sphinx holds each once with the file name
    ``None`` (as the extension added it) and once with ``""`` (re-read from its registry), and does not see the
    two as equal. The second ``const`` declaration is a SyntaxError that every page logged in the console.
    """
    seen, kept = set(), []
    for js in scripts:
        key = (str(getattr(js, "filename", js) or ""), tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    return kept


def citation_list_without_roles(body: str) -> str:
    """The bibliography's HTML without docutils' ARIA roles: ``role="doc-biblioentry"`` is deprecated in ARIA 1.2 and
    the ``role="list"`` around it holds anchors that a list may not (axe: aria-deprecated-role,
    aria-required-children). Plain ``<div>``s read the same; the entries keep their ids and back-links.

    >>> citation_list_without_roles('<div role="list" class="citation-list"><p role="doc-biblioentry">')
    '<div class="citation-list"><p>'
    """
    return body.replace(' role="doc-biblioentry"', "").replace(
        '<div role="list" class="citation-list">', '<div class="citation-list">'
    )


_NAV_TOGGLE = re.compile(
    r'(<a class="[^"]*reference internal[^"]*" href="[^"]*">([^<]*)</a>\s*<details[^>]*>\s*<summary)>'
)
_SEARCH_BUTTON = re.compile(r'(<button class="btn search-button-field[^"]*"[^>]*?) aria-label="[^"]*"')
_HIDDEN_CONTENT = ' aria-label="Toggle hidden content"'  # myst-nb's folded cells: a <summary> that shows its words
_MODE_ICON = re.compile(r'(<i class="theme-switch [^"]*" data-mode="\w+"\s*) title="([^"]*)"')


_SCRIPT = re.compile(r"(<script\b.*?</script>)", re.S | re.I)


def accessible_page(html_text: str, sections_of: str = SECTIONS_OF) -> str:
    """A built page's HTML with what assistive technology needs before any script runs: each sidebar toggle (a
    ``<summary>`` that shows only an icon) named after the chapter it opens (``sections_of``, with ``{chapter}``: the
    site's catalog gives a Chinese page its own wording); the search button named by what it shows
    ("Search Ctrl+K", not the theme's "Search": axe's label-content-name-mismatch), and so is each folded cell's
    ``<summary>`` ("Show code cell source", not myst-nb's "Toggle hidden content"); the light/dark button's icons
    without a ``title``, which Font Awesome would draw as the button's visible text ("Light") against its name
    ("Color mode"; the mode's word stays in ``data-tl-name``, for reader.js to add to the name); and every ``<pre>``
    (code, printed output) focusable, so that a keyboard can scroll one that is wider than the column (axe:
    scrollable-region-focusable).

    >>> accessible_page('<a class="reference internal" href="a">6. Heads</a><details><summary><i>').split('</a>')[1]
    '<details><summary aria-label="Sections of 6. Heads"><i>'
    >>> accessible_page('<a class="reference internal" href="a">6. 多头</a><details><summary>', "展开{chapter}的小节")
    '<a class="reference internal" href="a">6. 多头</a><details><summary aria-label="展开6. 多头的小节">'
    >>> accessible_page('<pre>x</pre><pre tabindex="0">y</pre>')
    '<pre tabindex="0">x</pre><pre tabindex="0">y</pre>'
    >>> accessible_page('<script type="application/json">{"html": "<pre>x</pre>"}</script><pre>y</pre>')
    '<script type="application/json">{"html": "<pre>x</pre>"}</script><pre tabindex="0">y</pre>'
    >>> accessible_page('<summary aria-label="Toggle hidden content">')
    '<summary>'
    >>> accessible_page('<i class="theme-switch a" data-mode="dark" title="Dark">')
    '<i class="theme-switch a" data-mode="dark" data-tl-name="Dark" aria-hidden="true">'
    """

    def named(match: re.Match) -> str:
        return f'{match[1]} aria-label="{sections_of.format(chapter=match[2])}">'

    html_text = _SEARCH_BUTTON.sub(r"\1", _NAV_TOGGLE.sub(named, html_text))  # named by what it shows: Search Ctrl+K
    html_text = html_text.replace("<summary" + _HIDDEN_CONTENT + ">", "<summary>")
    html_text = _MODE_ICON.sub(r'\1 data-tl-name="\2" aria-hidden="true"', html_text)
    # outside <script> only: a "<pre>" inside a script's JSON (a widget's saved state, a figure's HTML) is data, and
    # the quotes of tabindex="0" broke that JSON
    parts = _SCRIPT.split(html_text)
    return "".join(
        part if part.startswith("<script") else re.sub(r"<pre(?=[\s>])(?![^>]*tabindex)", '<pre tabindex="0"', part)
        for part in parts
    )


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension: each page's scripts once and its bibliography plain as the page is written; after the build,
    every page of this site (not of a site nested in it) made accessible by :func:`accessible_page`."""

    def drop_repeated_scripts(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
        if "script_files" in context:
            context["script_files"] = unique_scripts(context["script_files"])

    def plain_citation_list(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
        if "body" in context:
            context["body"] = citation_list_without_roles(context["body"])

    def accessible_pages(app: Any, exception: Exception | None) -> None:
        if exception is not None or app.builder.format != "html":
            return
        outdir = Path(app.outdir)
        sections_of = site_words()(SECTIONS_OF) if site_language(app.config) != "en" else SECTIONS_OF
        # another site inside this one (the Chinese edition in zh/, built at the same time) is its own build's
        nested = {index.parent for index in outdir.glob("*/searchindex.js")} | {outdir / "zh"}
        for page in outdir.rglob("*.html"):
            if "_static" not in page.relative_to(outdir).parts and not any(n in page.parents for n in nested):
                text = page.read_text(encoding="utf-8")
                fixed = accessible_page(text, sections_of)
                if fixed != text:
                    page.write_text(fixed, encoding="utf-8")

    app.connect("build-finished", accessible_pages)
    app.connect("html-page-context", drop_repeated_scripts, priority=900)  # after the extensions that add scripts
    app.connect("html-page-context", plain_citation_list)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

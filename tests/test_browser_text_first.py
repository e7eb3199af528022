"""Text first (issue 41), plotly's toolbar in the page's language and a search that knows the readers' spellings
(issue 44), on the built site (_build/html and its Chinese edition in zh/).

- No page parses plotly.js or the search index in its head: plotly.min.js is fetched after the page's load event,
  once, when the first figure is about to be drawn (book/_static/plotly-theme.js), and every figure a reader scrolls
  to is drawn; printing draws them all. Counts and the order of events, never a wall-clock limit (the times
  themselves: scripts/page_load_times.py).
- No chapter holds its text back for a script: only the two small scripts that its inline scripts need are
  synchronous, every other is deferred (transformer_lib/site/templates/layout.html), and MathJax is fetched after
  the load event (window.tlMathJax), then typesets every formula.
- No page runs the theme's icon script (fontawesome.js, 1.49 MB, deferred, so run before DOMContentLoaded): the
  scripts a chapter runs before DOMContentLoaded stay under a budget in bytes, and the theme's icons are drawn from
  its stylesheet's web fonts, on a desktop and on a touch phone, whose ☰ drawer still opens.
- No chapter runs its figures' data as script while it is parsed: each figure's JSON is a <script
  type="application/json">, parsed when the figure is drawn, and the JavaScript written into a page stays under a
  budget in bytes.
- A figure's toolbar speaks the page's language: plotly's own zh-CN locale on the Chinese pages
  (book/_static/vendor/plotly/, scripts/vendor_js.sh).
- Each spelling of transformer_lib/site/search_synonyms.toml ranks the page that explains the term first in the
  Chinese site's search, as searchtools.js ranks it, and the result's snippet is the defining paragraph.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from site_browser import DESKTOP, DRAWN_TIMEOUT_MS, NO_SITE, NO_ZH_SITE, PHONE, SITE, ZH

from transformer_lib.site.search import read_synonyms

pytestmark = pytest.mark.browser
# the tests that share a module fixture's visit run on one xdist worker (scripts/test_all.sh: --dist loadgroup)
OPENED = pytest.mark.xdist_group("text-first-opened")
ZH_SEARCH = pytest.mark.xdist_group("text-first-zh-search")
CHAPTER = "book/04_attention.html"  # a chapter with many figures, most of them far below the first screen
CJK = re.compile(r"[\u4e00-\u9fff]")
# chapter 4 runs 79 KB of scripts before DOMContentLoaded today; with the theme's fontawesome.js it ran 1,642 KB, and
# 191 KB while the controls' scripts (AFTER_DCL) ran before it too
SCRIPTS_BEFORE_DCL_KB = 120
# the scripts that only make controls work run just after DOMContentLoaded, preloaded in the head and added by a few
# lines at the end of the body (transformer_lib/site/templates/layout.html)
AFTER_DCL = ("bootstrap.js", "pydata-sphinx-theme.js", "clipboard.min.js", "copybutton.js")
ICONS = """() => [...document.querySelectorAll('.fa-solid, .fa-regular, .fa-brands, .fas, .far, .fab')]
  .filter(icon => icon.getClientRects().length)
  .map(icon => { const glyph = getComputedStyle(icon, '::before');
                 return {icon: icon.tagName + '.' + [...icon.classList].join('.'), glyph: glyph.content,
                         font: glyph.fontFamily, width: icon.getBoundingClientRect().width}; })"""


def _chapters() -> list[str]:
    english = sorted(p.relative_to(SITE).as_posix() for p in (SITE / "book").glob("*.html")) if SITE.is_dir() else []
    return english + [f"zh/{p}" for p in english if (ZH / p).is_file()]


def _visit(browser, url: str):
    context = browser.new_context(**DESKTOP)
    tab = context.new_page()
    tab.goto(url, wait_until="load")
    return context, tab


def _need(page: str) -> None:
    if not (SITE / page).is_file():
        pytest.skip(NO_ZH_SITE if page.startswith("zh/") else NO_SITE)


@pytest.mark.parametrize("page", _chapters() or ["<no built site>"])
def test_no_chapter_loads_plotly_or_the_search_index_as_it_opens(page: str) -> None:
    _need(page)
    html = (SITE / page).read_text(encoding="utf-8")
    sources = re.findall(r"<script\b[^>]*\bsrc=\"([^\"]*)\"", html)
    assert not [s for s in sources if re.search(r"(^|/)(plotly\.min|searchindex)\.js", s)], sources


def _scripts_before_dcl(page: str) -> dict[str, int]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    try:
        from page_load_times import scripts_before_dcl
    finally:
        sys.path.pop(0)
    return scripts_before_dcl(SITE, page)


@pytest.mark.parametrize("page", _chapters() or ["<no built site>"])
def test_no_chapter_runs_the_icon_script_before_its_text(page: str) -> None:
    """Every script without ``async`` runs before DOMContentLoaded, a deferred one too: the theme's fontawesome.js
    is left out (transformer_lib/site/templates/layout.html), and what is left stays under a budget in bytes."""
    _need(page)
    scripts = _scripts_before_dcl(page)
    assert not [src for src in scripts if src.endswith("fontawesome.js")], scripts
    assert sum(scripts.values()) < SCRIPTS_BEFORE_DCL_KB * 1024, scripts


@pytest.mark.parametrize("page", _chapters() or ["<no built site>"])
def test_no_chapter_runs_the_controls_scripts_before_its_text(page: str) -> None:
    """The themes' bootstrap.js and pydata-sphinx-theme.js and sphinx-copybutton's two scripts are not among the
    scripts run before DOMContentLoaded: each is a preload link marked ``data-tl-after-dcl``, once, in that order."""
    _need(page)
    scripts = _scripts_before_dcl(page)
    assert not [src for src in scripts if src.rsplit("/", 1)[-1] in AFTER_DCL], scripts
    html = (SITE / page).read_text(encoding="utf-8")
    late = re.findall(r'<link rel="preload" as="script" href="([^"?]*)[^"]*" data-tl-after-dcl />', html)
    assert [src.rsplit("/", 1)[-1] for src in late] == list(AFTER_DCL), late
    assert all(((SITE / page).parent / src).is_file() for src in late), late


# what a page holds of the controls' scripts when DOMContentLoaded comes, and after its load event
_CONTROLS = """() => ({bootstrap: typeof window.bootstrap, clipboard: typeof window.ClipboardJS,
                      copy: document.querySelectorAll('button.copybtn').length,
                      code: document.querySelectorAll('div.highlight pre').length})"""


@pytest.mark.parametrize("view", ["desktop", "phone"])
def test_the_controls_scripts_run_after_the_text_and_before_the_load_event(view: str, browser, site_url) -> None:
    """At DOMContentLoaded none of the controls' scripts has run (no bootstrap, no copy button); by the load event
    all have: bootstrap is there, every code block has its copy button, and the theme's light/dark button, bound
    by pydata-sphinx-theme.js, switches the theme when clicked (tapped on a phone)."""
    _need(CHAPTER)
    context = browser.new_context(**(DESKTOP if view == "desktop" else PHONE))
    context.add_init_script(
        "document.addEventListener('DOMContentLoaded', () => { window.tlAtDcl = (" + _CONTROLS + ")(); });"
    )
    tab = context.new_page()
    try:
        tab.goto(site_url + CHAPTER, wait_until="load")
        at_dcl, at_load = tab.evaluate("() => window.tlAtDcl"), tab.evaluate(_CONTROLS)
        assert at_dcl["bootstrap"] == "undefined" and at_dcl["clipboard"] == "undefined", at_dcl
        assert at_dcl["copy"] == 0 and at_dcl["code"] > 5, at_dcl
        assert at_load["bootstrap"] == "object" and at_load["clipboard"] == "function", at_load
        assert at_load["copy"] == at_load["code"], at_load
        before = tab.evaluate("() => document.documentElement.dataset.theme")
        button = tab.locator(".theme-switch-button:visible").first
        button.tap() if view == "phone" else button.click()
        tab.wait_for_function(f"() => document.documentElement.dataset.theme !== {before!r}", timeout=5_000)
    finally:
        context.close()


# what may hold a chapter's parser (a <script src> with neither async nor defer): what runs while the page is parsed
# needs them (transformer_lib/site/templates/layout.html); every other script is deferred or async
PARSED_WITH_THE_PAGE = {"documentation_options.js", "plotly-theme.js"}
PARSER_BLOCKING_KB = 50  # the two: 37 KB


@pytest.mark.parametrize("page", _chapters() or ["<no built site>"])
def test_no_chapter_holds_its_text_back_for_a_script(page: str) -> None:
    """Only the two scripts that the page's own inline scripts need are synchronous (a dozen were: each held the
    parser until it had been fetched and run), under a budget in bytes; MathJax is not in the HTML at all (it is
    fetched after the load event)."""
    _need(page)
    html = (SITE / page).read_text(encoding="utf-8")
    blocking = {
        re.search(r"(?<![\w-])src=\"([^\"?]*)", tag).group(1): tag  # src, not the MathJax loader's data-src
        for tag in re.findall(r"<script\b[^>]*(?<![\w-])src=\"[^\"]*\"[^>]*>", html)
        if not re.search(r"\b(async|defer)\b", tag) and 'type="module"' not in tag
    }
    assert {src.rsplit("/", 1)[-1] for src in blocking} <= PARSED_WITH_THE_PAGE, blocking
    sizes = {src: ((SITE / page).parent / src).stat().st_size for src in blocking}
    assert sum(sizes.values()) < PARSER_BLOCKING_KB * 1024, sizes
    assert not re.search(r"<script\b[^>]*(?<![\w-])src=\"[^\"]*mathjax", html, re.IGNORECASE), page


# the JavaScript that draws a chapter's figures, written into the page (run as the page is parsed): chapter 3's figures'
# data made it 164 KB, compiled and run before its text was all parsed; as JSON (transformer_lib/site/figures.py) what
# is left is each figure's few lines of drawing code and, once a page, the book's plotly template (about 7 KB)
FIGURE_SCRIPTS_KB = 30


@pytest.mark.parametrize("page", _chapters() or ["<no built site>"])
def test_no_chapter_runs_its_figures_data_as_script(page: str) -> None:
    """Each figure's data is a ``<script type="application/json">`` beside it, parsed when the figure is drawn, so
    the JavaScript that draws a page's figures, compiled and run while the page is parsed, stays under a budget in
    bytes (the page's other inline scripts: scripts/page_load_times.py's table)."""
    _need(page)
    html = (SITE / page).read_text(encoding="utf-8")
    figures = re.findall(r'<div id="([^"]+)" class="tl-plotly-figure"', html)
    data = re.findall(r'<script type="application/json" id="([^"]+)-data" class="tl-plotly-data">', html)
    assert data == figures, (figures, data)
    code = [body for body in re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.DOTALL) if "tlDrawWhenNear" in body]
    assert len(code) == len(figures), (len(code), figures)
    assert sum(len(body.encode()) for body in code) < FIGURE_SCRIPTS_KB * 1024, [len(body) for body in code]


@pytest.mark.parametrize("view", ["desktop", "phone"])
def test_the_theme_icons_are_drawn_from_its_web_fonts(view: str, browser, site_url) -> None:
    """Without fontawesome.js, each icon the page shows is an <i>/<span> whose ::before glyph the theme's stylesheet
    draws in a Font Awesome web font, on a desktop and on a touch phone; the phone's ☰ opens its drawer."""
    _need(CHAPTER)
    context = browser.new_context(**(DESKTOP if view == "desktop" else PHONE))
    tab = context.new_page()
    try:
        tab.goto(site_url + CHAPTER, wait_until="load")
        tab.evaluate("() => document.fonts.ready.then(() => true)")
        icons = tab.evaluate(ICONS)
        assert len(icons) >= 3, icons  # the ☰ button, the light/dark button, the repository link at least
        drawn = [i for i in icons if i["glyph"] not in ("none", "normal", '""') and "Font Awesome" in i["font"]]
        assert drawn == icons and min(i["width"] for i in icons) > 0, icons
        assert tab.evaluate("() => document.fonts.check('900 16px \"Font Awesome 6 Free\"')")
        if view == "phone":
            tab.locator(".primary-toggle:visible").first.tap()
            tab.wait_for_function("() => document.querySelector('#pst-primary-sidebar-modal').open", timeout=5_000)
    finally:
        context.close()


def _figures(tab) -> dict[str, int]:
    """How many figures the page holds, how many of them a reader can reach (not in a folded or hidden view: their
    container keeps the figure's place) and how many plotly has drawn."""
    return tab.evaluate(
        """() => { const all = [...document.querySelectorAll('.tl-plotly-figure')];
                   return {all: all.length,
                           reachable: all.filter(f => f.parentElement.getBoundingClientRect().height > 0).length,
                           drawn: all.filter(f => f.classList.contains('js-plotly-plot')).length}; }"""
    )


_OPENED: dict[str, dict] = {}  # page -> what one reader's visit saw (opened_and_scrolled)


def _open_and_scroll(browser, site_url: str, page: str) -> dict:
    """A reader opens ``page`` and scrolls to its end, a screen at a time: the order of its requests, its formulas,
    its figures before and after, and the toolbar of its drawn figures (two tests read one visit)."""
    context, tab = _visit(browser, site_url + page)
    try:
        seen: dict = {}
        seen["order"] = tab.evaluate(
            """() => ({load: performance.getEntriesByType('navigation')[0].loadEventStart,
                       plotly: performance.getEntriesByType('resource')
                         .filter(r => /plotly\\.min\\.js/.test(r.name)).map(r => r.startTime),
                       blocking: performance.getEntriesByType('resource')
                         .filter(r => r.initiatorType === 'script' && r.renderBlockingStatus === 'blocking')
                         .map(r => r.name.split('?')[0].split('/').pop())})"""
        )
        tab.evaluate("() => window.tlMathJax.then(() => true)")
        seen["mathjax"] = tab.evaluate(
            """() => ({load: performance.getEntriesByType('navigation')[0].loadEventStart,
                       starts: performance.getEntriesByType('resource')
                         .filter(r => /mathjax/i.test(r.name)).map(r => r.startTime),
                       typeset: document.querySelectorAll('article mjx-container').length})"""
        )
        seen["at_first"] = _figures(tab)
        height = tab.evaluate("document.documentElement.scrollHeight")
        for y in range(0, height + 900, 600):  # a reader scrolling to the end, a screen at a time
            tab.evaluate(f"window.scrollTo(0, {y})")
            tab.wait_for_timeout(30)
        tab.wait_for_function(
            """() => [...document.querySelectorAll('.tl-plotly-figure')]
                 .filter(f => f.parentElement.getBoundingClientRect().height > 0)
                 .every(f => f.classList.contains('js-plotly-plot'))""",
            timeout=DRAWN_TIMEOUT_MS,
        )
        seen["scrolled"] = _figures(tab)
        seen["fetched"] = tab.evaluate(
            "() => performance.getEntriesByType('resource').filter(r => /plotly\\.min\\.js/.test(r.name)).length"
        )
        seen["unloaded"] = "plotly.js did not load" in tab.inner_text("body")
        seen["toolbar"] = tab.evaluate(
            "() => [...document.querySelectorAll('.tl-plotly-figure .modebar-btn')].map(b => b.dataset.title)"
        )
        return seen
    except Exception as exc:  # playwright's errors: each test that reads this visit fails with it
        return {"visit_error": f"{type(exc).__name__}: {str(exc)[:500]}"}
    finally:
        context.close()


@pytest.fixture(scope="module")
def opened(browser, site_url):
    """``opened(page)``: what a reader's visit of ``page`` saw, visited once for the module's tests."""

    def open_once(page: str) -> dict:
        _need(page)
        if page not in _OPENED:
            _OPENED[page] = _open_and_scroll(browser, site_url, page)
        assert "visit_error" not in _OPENED[page], f"{page}: {_OPENED[page]['visit_error']}"
        return _OPENED[page]

    return open_once


@OPENED
@pytest.mark.parametrize("page", [CHAPTER, f"zh/{CHAPTER}"])
def test_plotly_comes_after_the_text_and_draws_every_figure_a_reader_scrolls_to(page: str, opened) -> None:
    seen = opened(page)
    order, mathjax = seen["order"], seen["mathjax"]
    # plotly.min.js was not part of opening the page: requested (if yet) only after the load event
    assert all(start >= order["load"] for start in order["plotly"]), order
    # the browser's own view: no script but the two the parsed page needs held the first paint back
    assert set(order["blocking"]) <= PARSED_WITH_THE_PAGE, order
    # MathJax (1.2 MB, with its fonts) is fetched after the load event, and then typesets the page's formulas
    assert mathjax["starts"] and min(mathjax["starts"]) >= mathjax["load"], mathjax
    assert mathjax["typeset"] > 10, mathjax
    at_first, scrolled = seen["at_first"], seen["scrolled"]
    assert at_first["all"] > 5 and at_first["drawn"] < at_first["reachable"], at_first  # drawn on demand
    assert scrolled["drawn"] >= scrolled["reachable"] > 5, scrolled
    assert seen["fetched"] == 1, f"{page}: plotly.min.js fetched {seen['fetched']} times"
    assert not seen["unloaded"]


def test_printing_draws_every_figure(browser, site_url) -> None:
    """Chromium's print to PDF (what a reader's "Print" does): the page's beforeprint draws every figure, folded
    ones included, once plotly.js is there (fetched when the browser is idle after the load event)."""
    _need(CHAPTER)
    context, tab = _visit(browser, site_url + CHAPTER)
    try:
        tab.wait_for_function("() => !!window.Plotly", timeout=DRAWN_TIMEOUT_MS)  # the idle-time fetch, no scrolling
        before = _figures(tab)
        pdf = tab.pdf()
        after = _figures(tab)
        assert pdf.startswith(b"%PDF")
        assert before["drawn"] < before["all"] and after["drawn"] == after["all"] > 5, (before, after)
    finally:
        context.close()


@OPENED
@pytest.mark.parametrize("page", [CHAPTER, f"zh/{CHAPTER}"])
def test_the_toolbar_speaks_the_pages_language(page: str, opened) -> None:
    titles = opened(page)["toolbar"]
    assert titles, f"{page}: no figure drew its toolbar"
    if page.startswith("zh/"):
        assert "下载图表为PNG格式" in titles, titles  # plotly's zh-CN locale
        assert all(CJK.search(t) for t in titles), [t for t in titles if not CJK.search(t)]
    else:
        assert "Download plot as a PNG" in titles, titles
        assert not [t for t in titles if CJK.search(t)], titles


# searchtools.js's ranking: Search._performSearch's results, best last (its display pops them from the end)
RANKED = """(query) => {
  const [q, terms, excluded, highlight, objects] = Search._parseQuery(query);
  return Search._performSearch(q, terms, excluded, highlight, objects).reverse().map(r => r[0]);
}"""
SPELLINGS = sorted({(word, term.page) for term in read_synonyms() for word in term.words})


@pytest.fixture(scope="module")
def zh_search(browser, site_url):
    """The Chinese site's search page, its index loaded."""
    if not (ZH / "search.html").is_file():
        pytest.skip(NO_ZH_SITE)
    context, tab = _visit(browser, site_url + "zh/search.html")
    tab.wait_for_function("() => typeof Search !== 'undefined' && !!Search._index", timeout=DRAWN_TIMEOUT_MS)
    yield tab
    context.close()


@ZH_SEARCH
@pytest.mark.parametrize("word, page", SPELLINGS)
def test_a_spelling_ranks_the_page_that_explains_it_first(word: str, page: str, zh_search) -> None:
    ranked = zh_search.evaluate(RANKED, word)
    rank = ranked.index(page) + 1 if page in ranked else "nowhere"
    assert ranked and ranked[0] == page, f"searching {word!r}: {page} ranks {rank} of {len(ranked)} ({ranked[:3]})"


@pytest.mark.parametrize("query", ["教师强制", "层归一化", "键值缓存", "dropout"])
def test_the_first_results_snippet_is_the_definition(query: str, browser, site_url) -> None:
    """The snippet under the first result is the paragraph that defines the term (the index entry's anchor: it holds
    one of the term's spellings), not the page's table of contents or a formula's TeX source."""
    if not (ZH / "search.html").is_file():
        pytest.skip(NO_ZH_SITE)
    (term,) = [t for t in read_synonyms() if query in t.words]
    context, tab = _visit(browser, site_url + "zh/search.html?q=" + query)
    try:
        first = tab.locator("#search-results li").first
        first.locator("p.context").wait_for(timeout=DRAWN_TIMEOUT_MS)
        snippet = first.locator("p.context").inner_text()
        assert any(word.lower() in snippet.lower() for word in term.words), snippet
        assert "\\(" not in snippet and "$" not in snippet, snippet
        assert first.locator("a").first.get_attribute("href").endswith("#" + term.anchor)
    finally:
        context.close()

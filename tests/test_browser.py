"""The built website in a real browser: headless Chromium, offline, every page.

Serves ``_build/html`` on 127.0.0.1 from a thread and opens each page in Debian's Chromium (driven by
playwright) with every non-loopback request aborted and recorded. Asserts: no JavaScript error (other than the
known harmless ones listed below), no request left the machine, no local file failed to load, every plotly
figure drew its SVG, every widget area shows content, and the search page finds "attention". Full-page
screenshots go to ``_build/screenshots/``. Skipped, with a message, when Chromium or the built site is absent.
Run after ``bash scripts/build_book.sh``:  ``pytest tests/test_browser.py -m browser``.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
# Console errors that are not the site's fault. Each entry says why it is harmless; keep the list short.
# (Empty: the duplicate THEBE_JS_URL declaration that every page logged is removed at build time by
# transformer_lib.book.site.unique_scripts.)
KNOWN_HARMLESS: list[re.Pattern] = []
DRAWN_TIMEOUT_MS = 30_000


def _site_pages() -> list[str]:
    if not (SITE / "index.html").exists():
        return []
    return sorted(  # the Chinese site (zh/) has its own browser tests: tests/test_browser_i18n.py
        p.relative_to(SITE).as_posix()
        for p in SITE.rglob("*.html")
        if not p.relative_to(SITE).parts[0].startswith("_") and p.relative_to(SITE).parts[0] != "zh"
    )


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # keep the test output readable
        pass


def _serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


@pytest.fixture(scope="module")
def site_url() -> Iterator[str]:
    if not (SITE / "index.html").exists():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    server, url = _serve(SITE)
    yield url
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: install Debian's package with `apt-get install chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        yield chromium
        chromium.close()


class Visit:
    """One offline page visit that records blocked requests, failed loads and JavaScript errors."""

    def __init__(self, browser, url: str) -> None:
        self.blocked: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self._error(f"uncaught: {exc}"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))
        self.page.on("requestfailed", self._request_failed)
        self.page.goto(url, wait_until="load")

    def _route(self, route) -> None:
        url = route.request.url
        if url.startswith(("data:", "blob:", "about:")) or urlparse(url).hostname in LOOPBACK:
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def _console(self, message) -> None:
        # a blocked request also logs "Failed to load resource"; it is already in self.blocked
        if message.type == "error" and not (self.blocked and "net::ERR_FAILED" in message.text):
            self._error(message.text)

    def _error(self, text: str) -> None:
        if not any(p.search(text) for p in KNOWN_HARMLESS):
            self.errors.append(text)

    def _request_failed(self, request) -> None:
        if request.url not in self.blocked:
            self.failed.append(f"{request.failure} {request.url}")

    def close(self) -> None:
        self.context.close()


@pytest.mark.parametrize("name", _site_pages() or ["<no built site>"])
def test_page_renders_offline(name: str, browser, site_url: str) -> None:
    visit = Visit(browser, site_url + name)
    page = visit.page
    try:
        figures = page.locator(".tl-plotly-figure, .plotly-graph-div")
        n_figures = figures.count()
        if n_figures:  # each must have drawn its SVG (plotly adds .js-plotly-plot to the div it draws into)
            page.wait_for_function(
                "() => [...document.querySelectorAll('.tl-plotly-figure, .plotly-graph-div')]"
                ".every(d => d.classList.contains('js-plotly-plot') && d.querySelector('.main-svg'))",
                timeout=DRAWN_TIMEOUT_MS,
            )
        views = page.locator("script[type='application/vnd.jupyter.widget-view+json']")
        n_widgets = views.count()
        if n_widgets:  # the embed manager draws each view in a .widget-subarea just before its script tag
            page.wait_for_function(
                "() => [...document.querySelectorAll(\"script[type='application/vnd.jupyter.widget-view+json']\")]"
                ".every(s => { const a = s.previousElementSibling;"
                " return a && a.classList.contains('widget-subarea') && a.innerText.trim().length > 0"
                " && a.getBoundingClientRect().height > 0; })",
                timeout=DRAWN_TIMEOUT_MS,
            )
        if page.locator("mjx-container").count() or page.locator(".math").count():
            page.wait_for_function(
                "() => document.querySelectorAll('.math').length === 0"
                " || document.querySelectorAll('mjx-container').length > 0",
                timeout=DRAWN_TIMEOUT_MS,
            )
        page.wait_for_timeout(300)  # let late scripts report their errors
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / (name.replace("/", "__").removesuffix(".html") + ".png")), full_page=True)
        assert not visit.blocked, f"{name}: requests left the machine: {visit.blocked}"
        assert not visit.failed, f"{name}: local files failed to load: {visit.failed}"
        assert not visit.errors, f"{name}: JavaScript errors: {visit.errors}"
        assert "plotly.js did not load" not in page.inner_text("body")
        drawn = page.locator(".js-plotly-plot .main-svg").count()
        assert drawn >= n_figures, f"{name}: {n_figures} plotly figures but {drawn} drew an SVG"
    finally:
        visit.close()


@pytest.mark.parametrize("query", ["attention", "divide", "softmax"])
def test_search_finds_pages_and_shows_formulas_as_text(query: str, browser, site_url: str) -> None:
    """Search works offline; its snippets show formulas as readable text, not LaTeX source (search-math.js)."""
    visit = Visit(browser, site_url + f"search.html?q={query}")
    try:
        hits = visit.page.locator("#search-results ul.search li")
        hits.first.wait_for(timeout=DRAWN_TIMEOUT_MS)
        visit.page.wait_for_function(
            "() => !document.querySelector('#search-results').innerText.includes('Searching')", timeout=DRAWN_TIMEOUT_MS
        )
        text = visit.page.inner_text("#search-results")
        assert hits.count() >= 1
        assert "\\(" not in text and "\\sqrt" not in text and "$$" not in text, text[:500]
        assert "mathrm" not in text and "\\left" not in text and "\\!" not in text, text[:500]
        sample = visit.page.evaluate("() => window.tlCleanSearchText('divide by \\\\(\\\\sqrt{d_k}\\\\) here')")
        assert sample == "divide by √d_k here"
        assert not visit.blocked and not visit.errors, (visit.blocked, visit.errors)
    finally:
        visit.close()


def test_search_splits_chinese_into_words(browser, site_url: str) -> None:
    """ "掩码" (mask) finds the pages that write 填充掩码 (padding mask): the index is segmented with jieba."""
    visit = Visit(browser, site_url + "search.html?q=掩码")
    try:
        visit.page.locator("#search-results ul.search li").first.wait_for(timeout=DRAWN_TIMEOUT_MS)
        visit.page.wait_for_function(
            "() => !document.querySelector('#search-results').innerText.includes('Searching')", timeout=DRAWN_TIMEOUT_MS
        )
        links = visit.page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
        assert any("glossary" in h for h in links) and any("02_tokens_and_embeddings" in h for h in links), links
        assert not visit.blocked and not visit.errors, (visit.blocked, visit.errors)
    finally:
        visit.close()


def test_attention_grid_selectors_work_without_a_kernel(browser, tmp_path: Path) -> None:
    """The layer menu and head slider of viz.attention_grid, clicked in a real page with no Python behind it."""
    plotly_js = SITE / "_static" / "plotly.min.js"
    if not plotly_js.exists():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    import numpy as np

    from transformer_lib.book import viz

    weights = np.random.default_rng(0).dirichlet(np.ones(4), size=(2, 3, 4))  # (L=2, H=3, Tq=4, Tk=4)
    fig = viz.attention_grid(weights, list("abcd"), list("abcd"))
    (tmp_path / "plotly.min.js").write_bytes(plotly_js.read_bytes())
    (tmp_path / "grid.html").write_text(
        fig.to_html(include_plotlyjs="plotly.min.js", full_html=True, div_id="grid"), encoding="utf-8"
    )
    server, url = _serve(tmp_path)
    visit = Visit(browser, url + "grid.html")
    page = visit.page
    visible = "() => document.getElementById('grid').data.map(t => t.visible === true).indexOf(true)"
    try:
        page.wait_for_selector("#grid .main-svg")
        assert page.evaluate(visible) == 0  # layer 1, head 1
        page.locator("#grid .updatemenu-header-group").click()  # open the layer menu ...
        page.locator("#grid .updatemenu-dropdown-button", has_text="layer 2").click()  # ... and pick layer 2
        page.wait_for_function(f"() => ({visible})() === 3")  # trace index = layer * H + head = 1 * 3 + 0
        rail = page.locator("#grid .slider-rail-touch-rect").bounding_box()
        page.mouse.click(rail["x"] + rail["width"] - 2, rail["y"] + rail["height"] / 2)  # drag to the last head
        page.wait_for_function(f"() => ({visible})() === 5")  # layer 2, head 3
        assert "layer 2, head 3" in page.evaluate("() => document.getElementById('grid').layout.title.text")
        assert not visit.errors and not visit.blocked, (visit.errors, visit.blocked)
    finally:
        visit.close()
        server.shutdown()


PAGE_BUDGET_KB = 500
# The API reference is text only (an entry per public name, ~300 of them) and grows with the library, not with
# figures or widget state: it has a budget of its own.
PAGE_BUDGETS_KB = {"book/api.html": 640}


@pytest.mark.browser
def test_pages_stay_under_the_weight_budget() -> None:
    """Each page's own HTML (figures and widget state included, shared _static files excluded) < 500 KB; the API
    reference < 640 KB."""
    if not SITE.is_dir():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    pages = sorted((SITE / "book").rglob("*.html"))
    assert pages, "the built site has no chapter pages"
    heavy = {
        p.relative_to(SITE).as_posix(): p.stat().st_size // 1024
        for p in pages
        if p.stat().st_size > PAGE_BUDGETS_KB.get(p.relative_to(SITE).as_posix(), PAGE_BUDGET_KB) * 1024
    }
    assert not heavy, f"pages over {PAGE_BUDGET_KB} KB: {heavy}"


# Controls on the site: kernel-free twins of live controls (transformer_lib.book.controls: HTML menus and plotly
# sliders or menus), the pretrained appendix's explorer, and any other <select> or plotly control. A page whose HTML
# holds one of these marks must show at least one working control in the browser.
CONTROL_MARKS = re.compile(r'"(sliders|updatemenus)": \[\{|tl-precomputed|<select|createElement\("select"\)')
# ipywidgets controls are dead without a kernel: none may reach the site (their outputs are removed at build time).
IPYWIDGET_CONTROLS = """() => [...document.querySelectorAll('.jupyter-widgets, .widget-subarea, [class*="widget-"]')]
  .filter(el => el.matches('input, select, button, textarea, .widget-slider, .widget-hslider, .widget-vslider,'
                           + ' .widget-dropdown, .widget-text, .widget-toggle-buttons, .widget-checkbox, .widget-play')
                || el.querySelector('input, select, button, textarea'))
  .map(el => el.className)"""
PLOTLY_CONTROLLED = (
    "() => [...document.querySelectorAll('.js-plotly-plot')].filter(d => d.layout &&"
    " ((d.layout.sliders || []).length || (d.layout.updatemenus || []).length))"
)
PRESS_EVERY_PLOTLY_CONTROL = f"""async () => {{
  // For each plotly figure with controls, and each of its sliders and menus: press a step other than the active
  // one, as plotly does when the reader moves it, and report whether what is drawn (traces shown, layout) changed.
  const drawn = gd => JSON.stringify([gd.data.map(t => t.visible), gd.layout],
      (k, v) => (k.startsWith('_') || k === 'sliders' || k === 'updatemenus') ? undefined : v);
  const results = [];
  for (const gd of ({PLOTLY_CONTROLLED})()) {{
    const controls = [...(gd.layout.sliders || []), ...(gd.layout.updatemenus || [])];
    for (let c = 0; c < controls.length; c++) {{
      const steps = controls[c].steps || controls[c].buttons;
      const active = controls[c].active || 0;
      const step = steps[active === steps.length - 1 ? 0 : steps.length - 1];
      const before = drawn(gd);
      await Plotly[step.method](gd, ...step.args);
      results.push({{figure: gd.id, control: c, changed: drawn(gd) !== before}});
    }}
  }}
  return results;
}}"""


@pytest.mark.parametrize("name", _site_pages() or ["<no built site>"])
def test_every_control_on_the_page_changes_what_is_drawn(name: str, browser, site_url: str) -> None:
    """Every page of the built site: each menu (HTML twins, the pretrained explorer) and each plotly slider or
    menu, moved in the page with no kernel, shows a different view; and no ipywidgets control (dead without a
    kernel) is left on the page. A page whose HTML promises a control must show at least one that works."""
    if not (SITE / name).exists():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    html = (SITE / name).read_text(encoding="utf-8")
    if html.startswith('<meta http-equiv="Refresh"'):
        pytest.skip(f"{name} only redirects; its target is checked under its own name")
    promised = bool(CONTROL_MARKS.search(html))
    visit = Visit(browser, site_url + name)
    page = visit.page
    try:
        assert page.evaluate(IPYWIDGET_CONTROLS) == [], f"{name}: ipywidgets controls left on the site"
        page.wait_for_function(
            "() => [...document.querySelectorAll('.tl-plotly-figure')]"
            ".every(d => d.classList.contains('js-plotly-plot'))",
            timeout=DRAWN_TIMEOUT_MS,
        )
        # the live translator's menus act when its Translate button is pressed: tests/test_browser_translator.py
        menus = page.locator("article.bd-article select:not(.tl-live-translator select)")
        for j in range(menus.count()):
            menu = menus.nth(j)
            # what the menu switches: its twin, or else the cell output (or element with an id) that holds it
            view = menu.locator(
                "xpath=ancestor::*[contains(@class, 'tl-precomputed') or contains(@class, 'cell_output') or @id][1]"
            )
            twin = view.evaluate("v => v.classList.contains('tl-precomputed')")
            before = view.inner_html()
            seen = set()
            for value in menu.evaluate("m => [...m.options].map(o => o.value)"):  # two settings may look alike
                menu.select_option(value)
                if twin:
                    assert view.locator("[data-view]:not([hidden])").count() == 1, f"{name}: menu {j}, {value}"
                seen.add(view.inner_html())
            assert len(seen) > 1 and before in seen, f"{name}: menu {j} changes nothing"
        pressed = page.evaluate(PRESS_EVERY_PLOTLY_CONTROL)
        dead = [p for p in pressed if not p["changed"]]
        assert not dead, f"{name}: plotly controls that change nothing: {dead}"
        found = menus.count() + len(pressed)
        assert found > 0 or not promised, f"{name}: its HTML holds controls, but none works in the browser"
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def test_dark_mode_plotly_figures_have_no_white_background(browser, site_url: str) -> None:
    """The reader switches to dark mode: every plotly figure's background turns transparent, text turns light;
    back to light mode, white again (book/_static/plotly-theme.js)."""
    if not (SITE / "book/04_attention.html").exists():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    visit = Visit(browser, site_url + "book/04_attention.html")
    page = visit.page
    backgrounds = (
        "() => [...document.querySelectorAll('.tl-plotly-figure')]"  # the first svg holds the paper
        ".map(d => getComputedStyle(d.querySelector('.main-svg')).backgroundColor)"
    )
    try:
        page.wait_for_function(
            "() => [...document.querySelectorAll('.tl-plotly-figure')].every(d => d.querySelector('.main-svg'))",
            timeout=DRAWN_TIMEOUT_MS,
        )
        assert set(page.evaluate(backgrounds)) == {"rgb(255, 255, 255)"}
        page.evaluate("() => { document.documentElement.dataset.theme = 'dark'; }")
        page.wait_for_function(
            f"() => ({backgrounds})().every(c => c !== 'rgb(255, 255, 255)')", timeout=DRAWN_TIMEOUT_MS
        )
        panels = page.evaluate(
            "() => [...document.querySelectorAll('.tl-plotly-figure')]"
            ".map(d => getComputedStyle(d.closest('.output')).backgroundColor)"
        )
        assert set(panels) == {"rgba(0, 0, 0, 0)"}, f"figures sit on a light panel in dark mode: {set(panels)}"
        page.screenshot(path=str(SHOTS / "dark_mode__04_attention.png"))
        page.evaluate("() => { document.documentElement.dataset.theme = 'light'; }")
        page.wait_for_function(
            f"() => ({backgrounds})().every(c => c === 'rgb(255, 255, 255)')", timeout=DRAWN_TIMEOUT_MS
        )
        assert not visit.errors, visit.errors
    finally:
        visit.close()


OVERFLOW = """() => {
  const article = document.querySelector('article.bd-article');
  if (!article) { return []; }
  const right = article.getBoundingClientRect().right + 1;
  const scrolls = el => { for (let p = el.parentElement; p && p !== article; p = p.parentElement) {
    if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) { return true; } } return false; };
  return [...article.querySelectorAll('*')].filter(el => { const r = el.getBoundingClientRect();
    return r.width > 0 && r.right > right && !scrolls(el); })
    .map(el => `${el.tagName}.${el.className} +${Math.round(el.getBoundingClientRect().right - right)}px: `
               + (el.innerText || '').slice(0, 40));
}"""


_SCANNED: dict[tuple[int, int], dict[str, dict[str, list]]] = {}


def _scan_every_page(browser, site_url: str, check: str, width: int = 1280, height: int = 900) -> dict[str, list]:
    """Run the check named ``check`` (one of :data:`SCANS` at this width: a JavaScript function returning a list of
    problems) on every built page, once MathJax has typeset it and its figures are laid out; return {page: its
    first three problems} for the pages that have any. A JavaScript error at this width (the phone layout runs code
    that the desktop does not) is a problem too. Each width's checks run together, in one visit of each page."""
    if (width, height) not in _SCANNED:
        _SCANNED[(width, height)] = _scan(browser, site_url, SCANS[(width, height)], width, height)
    return _SCANNED[(width, height)][check]


def _scan(
    browser, site_url: str, scripts: dict[str, str], width: int, height: int, pages: list[str] | None = None
) -> dict[str, dict[str, list]]:
    pages = _site_pages() if pages is None else pages
    if not pages:
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    problems: dict[str, dict[str, list]] = {check: {} for check in scripts}
    try:
        for name in pages:
            errors.clear()
            page.goto(site_url + name, wait_until="load")
            if page.locator(".math").count():
                page.wait_for_function(
                    "() => document.querySelectorAll('mjx-container').length > 0", timeout=DRAWN_TIMEOUT_MS
                )
            page.wait_for_function(  # drawn, and laid out for this width (plotly-theme.js marks it tl-fitted)
                "() => [...document.querySelectorAll('.tl-plotly-figure')]"
                ".every(d => d.classList.contains('tl-fitted'))",
                timeout=DRAWN_TIMEOUT_MS,
            )
            page.wait_for_timeout(300)  # late layout (fonts)
            for check, script in scripts.items():
                found = page.evaluate(script) + [f"JavaScript error: {e}" for e in errors]
                if found:
                    problems[check][name] = found[:3]
    finally:
        context.close()
    return problems


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_nothing_runs_out_of_the_content_column(width: int, height: int, browser, site_url: str) -> None:
    """Every element of every page fits the text column, or sits in a box that scrolls (code, wide tables)."""
    problems = _scan_every_page(browser, site_url, "overflow", width, height)
    assert not problems, problems


PHONE_FIT = r"""() => {
  const problems = [];
  // a heatmap's plot (its panels, from the first one's left to the last one's right) uses most of the figure's
  // width, or has square cells of 36 px or more (a small grid); its colour bar goes under it (plotly-theme.js)
  document.querySelectorAll('.tl-plotly-figure.js-plotly-plot').forEach(gd => {
    const heat = (gd._fullData || []).filter(t => t.type === 'heatmap' && t.visible !== false);
    if (!heat.length) { return; }
    const axes = Object.keys(gd._fullLayout).filter(k => /^xaxis\d*$/.test(k)).map(k => gd._fullLayout[k]);
    const span = Math.max(...axes.map(a => a._offset + a._length)) - Math.min(...axes.map(a => a._offset));
    const cell = gd._fullLayout.xaxis._length / heat[0].z[0].length;
    if (span < 0.7 * gd.clientWidth && cell < 36) {
      problems.push(`${gd.id}: heatmap ${Math.round(span)} of ${gd.clientWidth} px`);
    }
  });
  // a displayed formula fits the column (scaled down by fit.js), unless it would need less than 60 % of its size
  document.querySelectorAll('article.bd-article mjx-container[display="true"]').forEach(m => {
    if (m.scrollWidth > m.parentElement.clientWidth + 1 && parseFloat(m.style.fontSize || '100') > 60) {
      problems.push(`formula ${m.scrollWidth} px in ${m.parentElement.clientWidth} px: ${m.textContent.slice(0, 30)}`);
    }
  });
  // printed text that is not a table of aligned columns wraps instead of scrolling
  document.querySelectorAll('.cell_output .output.stream pre, .cell_output .output.text_plain pre').forEach(pre => {
    if (!window.tlLooksTabular(pre.textContent) && pre.scrollWidth > pre.clientWidth + 1) {
      problems.push(`printed text scrolls: ${pre.textContent.slice(0, 40)}`);
    }
  });
  return problems;
}"""


def test_a_phone_shows_heatmaps_formulas_and_printed_text_at_the_column_width(browser, site_url: str) -> None:
    """At 390 px: every heatmap's plot spans at least 70 % of its figure, every displayed formula fits the column,
    and printed text wraps (book/_static/plotly-theme.js and fit.js), on every page."""
    problems = _scan_every_page(browser, site_url, "phone_fit", 390, 844)
    assert not problems, problems
    visit = Visit(browser, site_url + "book/intro.html")
    try:  # what counts as a table of aligned columns, which keeps its lines and scrolls
        assert visit.page.evaluate(
            "() => [tlLooksTabular('T =    16: RNN   16 steps\\nT =    64: RNN   64 steps'),"
            " tlLooksTabular(\"tokens : ['The', '▁model', '▁sees']\\nIDs : [1, 2]\")]"
        ) == [True, False]
    finally:
        visit.close()


RAW_MATH = r"""() => {
  const article = document.querySelector('article.bd-article');
  if (!article) { return []; }
  const copy = article.cloneNode(true);
  copy.querySelectorAll('pre, code, script, style, mjx-container, .highlight, .tl-source, .cell_input')
      .forEach(el => el.remove());
  return (copy.textContent.match(/.{0,30}(\\\(|\\\[|\$).{0,30}/g) || []);
}"""


def test_no_page_shows_raw_formula_source(browser, site_url: str) -> None:
    """MathJax typeset every formula: no "$", "\\(" or "\\[" is left in a page's text (a broken formula shows
    its source, as chapter 7's "$1 + 2 + \\dots" did)."""
    problems = _scan_every_page(browser, site_url, "raw_math", 1280, 900)
    assert not problems, problems


# Text in figures: every title, axis title, tick label, legend entry, annotation, colour bar label, menu and slider
# label of every plotly figure, as four corners on the screen (rotated labels too); two that intersect (by more
# than a pixel) or one that leaves its figure is a problem, and so is one smaller than min_px.
FIGURE_TEXT = r"""(minPx) => {
  // Every text of every plotly figure (titles, axis titles, tick labels, legend, annotations, colour bars, menus,
  // sliders): its four corners on the screen, from its own box and its transform (rotated tick labels too).
  const SELECTOR = 'text.gtitle, text.xtitle, text.ytitle, g[class$="tick"] > text, '
    + 'text.legendtext, g.annotation-text-g text, text.annotation-text, text.cbtitle, .cbaxis text, '
    + 'text.updatemenu-item-text, text.slider-label, .slider-labels text, text.legendtitletext';
  const problems = [];
  const corners = el => {
    const b = el.getBBox(), m = el.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const shrink = (poly, by) => { // a little inside, so that boxes that only touch do not count
    const cx = poly.reduce((s, p) => s + p[0], 0) / 4, cy = poly.reduce((s, p) => s + p[1], 0) / 4;
    return poly.map(([x, y]) => { const dx = x - cx, dy = y - cy, d = Math.hypot(dx, dy) || 1;
      return [x - by * dx / d, y - by * dy / d]; });
  };
  const separated = (a, b) => { // separating-axis test for two convex quadrilaterals
    for (const poly of [a, b]) {
      for (let i = 0; i < 4; i++) {
        const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y2 - y1, ny = x1 - x2;
        const pa = a.map(p => p[0] * nx + p[1] * ny), pb = b.map(p => p[0] * nx + p[1] * ny);
        if (Math.max(...pa) < Math.min(...pb) || Math.max(...pb) < Math.min(...pa)) { return true; }
      }
    }
    return false;
  };
  document.querySelectorAll('.js-plotly-plot').forEach(gd => {
    const name = gd.id + ' ' + ((gd.layout.title && gd.layout.title.text) || '').slice(0, 40);
    const box = gd.getBoundingClientRect();
    const texts = [...gd.querySelectorAll(SELECTOR)].filter(el => {
      if (!el.textContent.trim()) { return false; }
      for (let p = el; p && p !== gd; p = p.parentElement) {
        const s = getComputedStyle(p);
        if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) { return false; }
      }
      const b = el.getBBox(); return b.width > 0 && b.height > 0;
    }).map(el => { const m = el.getScreenCTM();  // the font size as drawn: its CSS size times the SVG's scale
      return {el, text: el.textContent.trim().slice(0, 30), poly: corners(el),
              size: parseFloat(getComputedStyle(el).fontSize) * Math.hypot(m.a, m.b)}; });
    texts.forEach(t => {
      if (minPx && t.size < minPx - 0.01) { problems.push(`${name}: "${t.text}" at ${t.size.toFixed(1)} px`); }
      const xs = t.poly.map(p => p[0]), ys = t.poly.map(p => p[1]);
      if (Math.min(...xs) < box.left - 1 || Math.max(...xs) > box.right + 1 || Math.min(...ys) < box.top - 1
          || Math.max(...ys) > box.bottom + 1) { problems.push(`${name}: "${t.text}" leaves the figure`); }
    });
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        const a = shrink(texts[i].poly, 1), b = shrink(texts[j].poly, 1);
        if (!separated(a, b)) { problems.push(`${name}: "${texts[i].text}" overlaps "${texts[j].text}"`); }
      }
    }
  });
  return problems;
}"""
MIN_PHONE_TEXT_PX = 9

# Each width's checks, run together in one visit of each page (_scan_every_page)
SCANS: dict[tuple[int, int], dict[str, str]] = {
    (1280, 900): {"overflow": OVERFLOW, "raw_math": RAW_MATH, "figure_text": f"() => ({FIGURE_TEXT})(0)"},
    (390, 844): {
        "overflow": OVERFLOW,
        "phone_fit": PHONE_FIT,
        "figure_text": f"() => ({FIGURE_TEXT})({MIN_PHONE_TEXT_PX})",
    },
}


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_no_text_in_a_figure_overlaps_other_text_or_leaves_the_figure(
    width: int, height: int, browser, site_url: str
) -> None:
    """On every page, at 1280 and 390 px, no two texts of a plotly figure intersect, none leaves its figure, and
    at 390 px none is smaller than 9 CSS px (book/_static/plotly-theme.js breaks long titles, thins crowded tick
    labels and makes room above the plot, measured once each figure is drawn)."""
    problems = _scan_every_page(browser, site_url, "figure_text", width, height)
    assert not problems, problems


# The pages with diagrams drawn from live modules (transformer_lib.book.diagrams, attention_diagrams, flow_diagrams)
# and how many each shows: every numbered chapter opens with its part of Figure 1, plus the chapter's own.
DIAGRAM_PAGES = {
    "book/intro.html": 1,
    "book/01_why_not_rnn.html": 1,
    "book/02_tokens_and_embeddings.html": 1,
    "book/03_positional_encoding.html": 1,
    "book/04_attention.html": 2,
    "book/05_masks.html": 1,
    "book/06_multi_head_attention.html": 3,
    "book/06b_encoder_block.html": 3,
    "book/07_cross_attention_and_decoding.html": 2,
    "book/07b_kv_cache_loss_and_limits.html": 2,
    "book/08_training.html": 1,
    "book/appendix_notes_checked.html": 1,
}
DIAGRAMS = """() => {
  const article = document.querySelector('article.bd-article');
  const right = article.getBoundingClientRect().right + 1;
  const inside = (a, b) => a.left >= b.left - 1.5 && a.right <= b.right + 1.5 && a.top >= b.top - 1.5
                           && a.bottom <= b.bottom + 1.5;
  return [...document.querySelectorAll('.tl-plotly-figure')]
    .filter(gd => gd.layout && gd.layout.meta && gd.layout.meta.fit_text_width)
    .map(gd => {
      const problems = [], shapes = gd.layout.shapes || [], notes = gd.layout.annotations || [];
      if (!gd.querySelector('.main-svg') || !shapes.length || !notes.length) { problems.push('not drawn'); }
      const svg = gd.querySelector('.main-svg');
      if (Math.max(gd.getBoundingClientRect().right, svg ? svg.getBoundingClientRect().right : 0) > right) {
        problems.push('runs out of the column');
      }
      let measured = 0;
      notes.forEach((note, i) => {
        const s = shapes.findIndex(sh => sh.type === 'rect' && note.name && sh.name === note.name);
        const text = gd.querySelector(`g.annotation[data-index="${i}"] text`);
        const box = gd.querySelector(`.shapelayer path[data-index="${s}"]`);
        if (s < 0 || !text || !box || !note.text) { return; }
        measured += 1;
        if (!inside(text.getBoundingClientRect(), box.getBoundingClientRect())) {
          problems.push(`label "${note.text.slice(0, 30)}" spills out of its box`);
        }
      });
      return {title: (gd.layout.title && gd.layout.title.text) || '', measured, problems,
              height: Math.round(gd.getBoundingClientRect().height)};
    });
}"""


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_diagrams_drawn_from_the_model_fit_and_keep_their_labels_in_their_boxes(
    width: int, height: int, browser, site_url: str
) -> None:
    """Every page with diagrams drawn from live modules shows each one (SVG with boxes and labels), inside the text
    column, and every box label that can be measured stays inside its box, on a desktop and on a phone (where
    book/_static/plotly-theme.js shrinks the labels with the boxes). Screenshots: _build/screenshots/diagram_*."""
    if not (SITE / "book/06_multi_head_attention.html").exists():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
    page = context.new_page()
    problems, measured = {}, 0
    try:
        for name, expected in DIAGRAM_PAGES.items():
            page.goto(site_url + name, wait_until="load")
            page.wait_for_function(
                "() => [...document.querySelectorAll('.tl-plotly-figure')].every(d => d.querySelector('.main-svg'))",
                timeout=DRAWN_TIMEOUT_MS,
            )
            page.wait_for_timeout(500)  # the phone relayout (smaller labels) follows the first draw
            found = page.evaluate(DIAGRAMS)
            if len(found) != expected:
                problems[name] = [f"expected {expected} diagrams, found {len(found)}"]
            for i, diagram in enumerate(found):
                measured += diagram["measured"]
                if diagram["problems"]:
                    problems[f"{name} #{i} {diagram['title']}"] = diagram["problems"][:3]
            figures = page.locator(".tl-plotly-figure").all()
            diagrams = [f for f in figures if f.evaluate("gd => !!(gd.layout.meta && gd.layout.meta.fit_text_width)")]
            for i, figure in enumerate(diagrams):
                figure.scroll_into_view_if_needed()
                figure.screenshot(path=str(SHOTS / f"diagram_{Path(name).stem}_{i}_{width}.png"))
    finally:
        context.close()
    assert measured > 100, f"only {measured} labels could be measured against their boxes"
    assert not problems, problems


# ---------------------------------------------------------------------------------------------------------------------
# A reader on a phone (390 px, touch), in dark mode, with assistive technology (issue 24).

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "service_workers": "block"}
READER_SHOTS = ROOT / "shots"  # the screenshots a person looks at: the open drawer, a tapped menu, the home page


def _content_pages() -> list[str]:
    """The built pages, less those that only redirect (index.html)."""
    return [
        n for n in _site_pages() if not (SITE / n).read_text(encoding="utf-8").startswith('<meta http-equiv="Refresh"')
    ]


def _wait_drawn(page) -> None:
    page.wait_for_function(
        "() => [...document.querySelectorAll('.tl-plotly-figure')].every(d => d.querySelector('.main-svg'))",
        timeout=DRAWN_TIMEOUT_MS,
    )


DRAWER_OPEN = """drawer => { const d = document.querySelector(drawer);
  return !!d && d.open && [...d.querySelectorAll('a')].some(a => a.getBoundingClientRect().width > 0); }"""
VISIBLE_MENUS_STATE = """gd => JSON.stringify([gd.data.map(t => t.visible), gd.layout.title && gd.layout.title.text])"""


@pytest.fixture(scope="module")
def phone_sweep(browser, site_url: str) -> dict[str, dict]:
    """Every page once on a touch phone: tap ☰ and "On this page" and see their drawers open; tap each menu of a
    plotly figure and pick another entry, and see the figure change; read each figure's toolbar settings."""
    pages = _content_pages()
    if not pages:
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    READER_SHOTS.mkdir(exist_ok=True)
    context = browser.new_context(**PHONE)
    page = context.new_page()
    found: dict[str, dict] = {"drawers": {}, "menus": {}, "plotly_dropdowns": {}, "toolbars": {}, "tapped": {}}
    try:
        for name in pages:
            page.goto(site_url + name, wait_until="load")
            _wait_drawn(page)
            stem = Path(name).stem
            for toggle, drawer in (
                (".primary-toggle", "#pst-primary-sidebar-modal"),
                (".secondary-toggle", "#pst-secondary-sidebar-modal"),
            ):
                buttons = page.locator(f"{toggle}:visible")
                if not buttons.count():
                    if toggle == ".primary-toggle" or page.locator(toggle).count():
                        found["drawers"].setdefault(name, []).append(f"no visible {toggle}")
                    continue
                buttons.first.tap()
                try:
                    page.wait_for_function(DRAWER_OPEN, arg=drawer, timeout=5_000)
                except PlaywrightTimeout:
                    found["drawers"].setdefault(name, []).append(f"tapping {toggle} did not open {drawer}")
                    continue
                if stem == "intro":
                    page.screenshot(path=str(READER_SHOTS / f"phone_drawer_{toggle[1:]}.png"))
                page.keyboard.press("Escape")
                page.wait_for_function(f"() => !document.querySelector('{drawer}').open", timeout=5_000)
            # plotly dropdowns ignore taps: none may be left; every HTML menu over a figure is tapped and changed
            found["plotly_dropdowns"][name] = page.evaluate(
                "() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(gd =>"
                " (gd.layout.updatemenus || []).filter(m => m.type !== 'buttons').map(m => gd.id))"
            )
            found["toolbars"][name] = page.evaluate(
                "() => [...document.querySelectorAll('.js-plotly-plot')].filter(gd => gd._context.showSendToCloud"
                " || gd._context.displaylogo || gd._context.displayModeBar !== false"
                ' || gd.querySelector(\'.modebar-btn[data-title*="Share"], .modebar-btn[data-title*="Cloud"]\'))'
                ".map(gd => gd.id)"
            )
            selects = page.locator(".tl-plotly-menus select")
            for j in range(selects.count()):
                select = selects.nth(j)
                figure = select.locator(
                    "xpath=ancestor::div[contains(@class, 'tl-plotly-menus')][1]"
                    "/following-sibling::div[contains(@class, 'tl-plotly-figure')][1]"
                )
                before = figure.evaluate(VISIBLE_MENUS_STATE)
                select.scroll_into_view_if_needed()
                select.tap()
                values = select.evaluate("s => [...s.options].map(o => o.value)")
                current = select.evaluate("s => s.value")
                select.select_option([v for v in values if v != current][-1])
                try:
                    page.wait_for_function(
                        f"gd => ({VISIBLE_MENUS_STATE})(gd) !== {before!r}", arg=figure.element_handle(), timeout=5_000
                    )
                    found["tapped"][f"{name} menu {j}"] = True
                except PlaywrightTimeout:
                    found["menus"].setdefault(name, []).append(f"menu {j}: the figure did not change")
                if not (READER_SHOTS / "phone_tapped_menu.png").exists():
                    page.wait_for_timeout(300)
                    figure.scroll_into_view_if_needed()
                    page.screenshot(path=str(READER_SHOTS / "phone_tapped_menu.png"))
            if stem == "intro":
                page.evaluate("() => window.scrollTo(0, 0)")
                page.screenshot(path=str(READER_SHOTS / "phone_home.png"))
    finally:
        context.close()
    return found


def test_a_phone_opens_the_navigation_and_the_page_contents_by_touch(phone_sweep: dict) -> None:
    """At 390 px with touch, on every page, a tap on ☰ opens the table of contents and a tap on "On this page"
    opens the page's sections (book/_static/reader.js hands the visible buttons' taps to the themes' handlers)."""
    assert not phone_sweep["drawers"], phone_sweep["drawers"]


def test_plotly_menus_are_html_menus_that_change_the_figure_by_touch(phone_sweep: dict) -> None:
    """No plotly dropdown is left on any page (they ignore taps); each became HTML menus over its figure
    (book/_static/plotly-theme.js), and tapping one and picking another entry changes the figure."""
    left = {name: ids for name, ids in phone_sweep["plotly_dropdowns"].items() if ids}
    assert not left, f"plotly dropdowns left: {left}"
    assert not phone_sweep["menus"], phone_sweep["menus"]
    pages = {key.split(" menu ")[0] for key in phone_sweep["tapped"]}
    assert {
        "book/01_why_not_rnn.html",
        "book/06_multi_head_attention.html",
        "book/07_cross_attention_and_decoding.html",
    } <= pages, sorted(pages)


def test_no_figure_toolbar_offers_to_upload_and_phones_show_none(phone_sweep: dict) -> None:
    """Every figure's toolbar has no "Share chart..." (upload) button and no plotly logo; on a touch screen it is
    off, so it cannot cover the figure's title (transformer_lib.book.site.PLOTLY_CONFIG)."""
    bad = {name: ids for name, ids in phone_sweep["toolbars"].items() if ids}
    assert not bad, bad


def test_figure_toolbar_buttons_send_nothing_off_the_machine(browser, site_url: str) -> None:
    """On a desktop, every button of a figure's toolbar is pressed: none offers to upload, no request leaves
    the machine."""
    if not (SITE / "book/04_attention.html").exists():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    visit = Visit(browser, site_url + "book/04_attention.html")
    page = visit.page
    try:
        _wait_drawn(page)
        figure = page.locator(".tl-plotly-figure").first
        figure.scroll_into_view_if_needed()
        figure.hover()
        titles = figure.locator(".modebar-btn").evaluate_all("bs => bs.map(b => b.getAttribute('data-title'))")
        assert titles and not [t for t in titles if re.search(r"share|cloud|studio|plotly", t or "", re.I)], titles
        for k in range(len(titles)):
            figure.hover()
            figure.locator(".modebar-btn").nth(k).click()
        page.wait_for_timeout(500)
        assert not visit.blocked and not visit.errors, (visit.blocked, visit.errors)
    finally:
        visit.close()


CONTRAST = r"""() => {
  // WCAG contrast of each control's text against what is behind it: HTML buttons, menus and folds in the article,
  // and the buttons of plotly's own menus (text and button drawn in SVG)
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = c => { const [r, g, b] = rgb(c).slice(0, 3).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const opaque = c => { const v = rgb(c); return v.length === 3 || (v.length === 4 && v[3] > 0.5); };
  const behind = el => { for (let e = el; e; e = e.parentElement) { const b = getComputedStyle(e).backgroundColor;
    if (opaque(b)) { return b; } } return getComputedStyle(document.body).backgroundColor; };
  const low = [];
  document.querySelectorAll('article.bd-article button, article.bd-article select, article.bd-article summary')
    .forEach(el => { if (!el.getClientRects().length || !el.innerText.trim()) { return; }
      const r = ratio(getComputedStyle(el).color, behind(el));
      if (r < 4.5) { low.push(`${el.tagName} "${el.innerText.trim().slice(0, 30)}": ${r.toFixed(1)}`); } });
  document.querySelectorAll('.updatemenu-button').forEach(g => {
    const rect = g.querySelector('rect'), text = g.querySelector('text');
    if (!rect || !text || !text.textContent.trim()) { return; }
    const r = ratio(getComputedStyle(text).fill, getComputedStyle(rect).fill);
    if (r < 4.5) { low.push(`plotly menu "${text.textContent.trim()}": ${r.toFixed(1)}`); }
  });
  return low;
}"""


@pytest.mark.parametrize("name", ["book/03_positional_encoding.html", "book/appendix_pretrained.html"])
def test_dark_mode_follows_the_system_and_controls_stay_readable(name: str, browser, site_url: str) -> None:
    """A reader whose system is set to dark gets the dark theme at once; every control's text (HTML buttons,
    menus, folds, plotly's menu buttons such as chapter 3's "40 positions") has a contrast of at least 4.5, and
    the library-source panels are dark."""
    if not (SITE / name).exists():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark", service_workers="block")
    page = context.new_page()
    try:
        page.goto(site_url + name, wait_until="load")
        _wait_drawn(page)
        page.wait_for_timeout(500)  # the figures' dark relayout
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        low = page.evaluate(CONTRAST)
        assert not low, low
        filters = page.evaluate(
            "() => [...document.querySelectorAll('.tl-source pre')].map(p => getComputedStyle(p).filter)"
        )
        assert all("invert(1)" in f for f in filters), filters
        READER_SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(READER_SHOTS / f"dark_{Path(name).stem}.png"))
    finally:
        context.close()


def test_file_names_in_the_text_are_not_links_to_web_sites() -> None:
    """ "README.md" on the assignments page is a file name, not a link to http://README.md (linkify's fuzzy links
    are off in _config.yml)."""
    pages = sorted(SITE.rglob("*.html"))
    if not pages:
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    bare = re.compile(r'href="https?://[^"/]+\.(md|py|txt|json|ipynb|yml|sh)"')
    found = {p.relative_to(SITE).as_posix(): bare.findall(p.read_text(encoding="utf-8")) for p in pages}
    assert not {k: v for k, v in found.items() if v}, found

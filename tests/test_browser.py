"""The built website in a real browser: headless Chromium, offline, every page.

Each English page is visited once on a desktop (1280 px) and once on a touch phone (390 px) by the sweeps of
tests/site_browser.py, which run every check in that visit; the tests below assert on what was recorded, one test
per page or per check. Asserted: no JavaScript error, no request left the machine, no local file failed to load,
every plotly figure drew its SVG, every widget area shows content; nothing runs out of the text column, no formula
shows its source, no text of a figure overlaps another or leaves it, the diagrams keep their labels in their boxes;
every control changes what is drawn, by mouse and by touch; the drawers open by touch; search works offline.
Skipped, with a message, when Chromium or the built site is absent. Run after ``bash scripts/build_book.sh``:
``pytest tests/test_browser.py -m browser`` (screenshots with ``TL_SCREENSHOTS=1``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from site_browser import (
    EN_SWEEPS,
    NO_SITE,
    OFFLINE_ERROR,
    SITE,
    Visit,
    content_pages,
    ready,
    record_of,
    screenshot,
    serve,
)
from site_checks import CONTRAST, FIGURE_TEXT

pytestmark = pytest.mark.browser
DRAWN_TIMEOUT_MS = 30_000
PAGES = content_pages() or ["<no built site>"]


@EN_SWEEPS
@pytest.mark.parametrize("name", PAGES)
def test_page_renders_offline(name: str, sweeps) -> None:
    """Every page, offline: no request leaves the machine, every local file loads, no JavaScript error, every
    plotly figure draws its SVG (asked for: figures are drawn as the reader scrolls to them)."""
    record = record_of(sweeps.desktop(), name)
    assert not record["blocked"], f"{name}: requests left the machine: {record['blocked']}"
    assert not record["failed"], f"{name}: local files failed to load: {record['failed']}"
    assert not record["errors"], f"{name}: JavaScript errors: {record['errors']}"
    assert not record["no_plotly"], f"{name}: plotly.js did not load"
    assert record["drawn"] >= record["figures"], f"{name}: {record['figures']} plotly figures, {record['drawn']} drawn"


def test_the_home_page_sends_the_reader_to_the_introduction() -> None:
    if not (SITE / "index.html").exists():
        pytest.skip(NO_SITE)
    target = re.search(r'url=([^"]+)"', (SITE / "index.html").read_text(encoding="utf-8"))
    assert target and (SITE / target.group(1)).is_file(), target


def test_figures_are_drawn_as_the_reader_scrolls_to_them(browser, site_url: str) -> None:
    """A chapter's figures far below the first screen wait until the reader comes near them (the page is ready
    sooner), keep their place meanwhile, and are drawn once scrolled to."""
    if not (SITE / "book/03_positional_encoding.html").exists():
        pytest.skip(NO_SITE)
    visit = Visit(browser, site_url + "book/03_positional_encoding.html")
    page = visit.page
    shown = "[...document.querySelectorAll('.tl-plotly-figure')].filter(d => d.parentElement.offsetParent !== null)"
    try:
        page.wait_for_function(f"() => !!{shown}[0].querySelector('.main-svg')", timeout=DRAWN_TIMEOUT_MS)
        drawn = page.evaluate(f"() => {shown}.map(d => !!d.querySelector('.main-svg'))")
        assert len(drawn) > 5 and drawn[0] and not drawn[-1], drawn  # the last figure is far below: not drawn yet
        last = page.evaluate_handle(f"() => {shown}.slice(-1)[0]")
        assert last.evaluate("d => d.parentElement.getBoundingClientRect().height") >= 200  # its place is kept
        last.evaluate("d => window.scrollTo(0, window.scrollY + d.parentElement.getBoundingClientRect().top - 100)")
        page.wait_for_function("d => !!d.querySelector('.main-svg')", arg=last, timeout=DRAWN_TIMEOUT_MS)
        assert not visit.errors, visit.errors
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
        pytest.skip(NO_SITE)
    import numpy as np

    from transformer_lib.book import viz

    weights = np.random.default_rng(0).dirichlet(np.ones(4), size=(2, 3, 4))  # (L=2, H=3, Tq=4, Tk=4)
    fig = viz.attention_grid(weights, list("abcd"), list("abcd"))
    (tmp_path / "plotly.min.js").write_bytes(plotly_js.read_bytes())
    html = fig.to_html(include_plotlyjs="plotly.min.js", full_html=True, div_id="grid")
    # an icon of its own, as the site's pages have (else the browser asks for /favicon.ico: a 404 in the console)
    (tmp_path / "grid.html").write_text(html.replace("<head>", '<head><link rel="icon" href="data:,">', 1), "utf-8")
    server, url = serve(tmp_path)
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


def test_a_request_off_the_machine_is_refused_and_recorded(browser, tmp_path: Path) -> None:
    """The offline check can fail: a page that asks a host name and an address off the machine for a script and an
    image gets neither (the browser's proxy is not there: site_browser.OFFLINE) and the visit lists both, while the
    local server's script runs; nothing else is reported."""
    (tmp_path / "here.js").write_text("window.here = true;", encoding="utf-8")
    (tmp_path / "away.html").write_text(
        '<link rel="icon" href="data:,"><script src="here.js"></script><script src="http://example.org/x.js"></script>'
        '<img alt="away" src="http://192.0.2.1/y.png"><script>window.away = typeof x</script>',
        encoding="utf-8",
    )
    server, url = serve(tmp_path)
    visit = Visit(browser, url + "away.html")
    try:
        assert sorted(visit.blocked) == ["http://192.0.2.1/y.png", "http://example.org/x.js"], visit.blocked
        assert visit.page.evaluate("() => window.here === true && window.away === 'undefined'")
        assert not visit.failed and not visit.errors, (visit.failed, visit.errors)
        refused: list[str] = []  # why they failed: the browser refused them (not a name that did not resolve)
        visit.page.on("requestfailed", lambda request: refused.append(request.failure or ""))
        visit.page.reload(wait_until="load")
        assert refused == [OFFLINE_ERROR] * 2, refused
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
        pytest.skip(NO_SITE)
    pages = sorted((SITE / "book").rglob("*.html"))
    assert pages, "the built site has no chapter pages"
    heavy = {
        p.relative_to(SITE).as_posix(): p.stat().st_size // 1024
        for p in pages
        if p.stat().st_size > PAGE_BUDGETS_KB.get(p.relative_to(SITE).as_posix(), PAGE_BUDGET_KB) * 1024
    }
    assert not heavy, f"pages over {PAGE_BUDGET_KB} KB: {heavy}"


@EN_SWEEPS
@pytest.mark.parametrize("name", PAGES)
def test_every_control_on_the_page_changes_what_is_drawn(name: str, sweeps) -> None:
    """Every page of the built site: each menu (HTML twins, the pretrained explorer) and each plotly slider or
    menu, moved in the page with no kernel, shows a different view; and no ipywidgets control (dead without a
    kernel) is left on the page. A page whose HTML promises a control must show at least one that works."""
    record = record_of(sweeps.desktop(), name)
    assert record["ipywidgets"] == [], f"{name}: ipywidgets controls left on the site"
    assert not record["dead_controls"], f"{name}: controls that change nothing: {record['dead_controls']}"
    assert record["controls_found"] > 0 or not record["promised"], f"{name}: its HTML holds controls, none works"


def test_dark_mode_plotly_figures_have_no_white_background(browser, site_url: str) -> None:
    """The reader switches to dark mode: every plotly figure's background turns transparent, text turns light;
    back to light mode, white again (book/_static/plotly-theme.js)."""
    if not (SITE / "book/04_attention.html").exists():
        pytest.skip(NO_SITE)
    visit = Visit(browser, site_url + "book/04_attention.html")
    page = visit.page
    backgrounds = (
        "() => [...document.querySelectorAll('.tl-plotly-figure')]"  # the first svg holds the paper
        ".map(d => getComputedStyle(d.querySelector('.main-svg')).backgroundColor)"
    )
    try:
        ready(page)
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
        screenshot(page, "dark_mode__04_attention")
        page.evaluate("() => { document.documentElement.dataset.theme = 'light'; }")
        page.wait_for_function(
            f"() => ({backgrounds})().every(c => c === 'rgb(255, 255, 255)')", timeout=DRAWN_TIMEOUT_MS
        )
        assert not visit.errors, visit.errors
    finally:
        visit.close()


def _scan(sweep: dict[str, dict], scan: str) -> dict[str, list]:
    """{page: its problems} for one scan over a sweep; a page that could not be visited is a problem too."""
    if not sweep:
        pytest.skip(NO_SITE)
    found = {name: record.get("scans", {}).get(scan) or [] for name, record in sweep.items()}
    found.update({name: [record["visit_error"]] for name, record in sweep.items() if "visit_error" in record})
    return {name: problems for name, problems in found.items() if problems}


def _views(sweeps, view: str, lang: str = "en") -> dict[str, dict]:
    return sweeps.desktop(lang) if view == "desktop" else sweeps.phone(lang)


@EN_SWEEPS
@pytest.mark.parametrize("view", ["desktop", "phone"])
def test_nothing_runs_out_of_the_content_column(view: str, sweeps) -> None:
    """Every element of every page fits the text column, or sits in a box that scrolls (code, wide tables)."""
    problems = _scan(_views(sweeps, view), "overflow")
    assert not problems, problems


@EN_SWEEPS
def test_a_phone_shows_heatmaps_formulas_and_printed_text_at_the_column_width(sweeps, browser, site_url) -> None:
    """At 390 px: every heatmap's plot spans at least 70 % of its figure, every displayed formula fits the column,
    and printed text wraps (book/_static/plotly-theme.js and fit.js), on every page; no JavaScript error there."""
    problems = _scan(sweeps.phone(), "phone_fit")
    assert not problems, problems
    errors = {name: r["errors_when_ready"] for name, r in sweeps.phone().items() if r.get("errors_when_ready")}
    assert not errors, errors
    visit = Visit(browser, site_url + "book/glossary.html")
    try:  # what counts as a table of aligned columns, which keeps its lines and scrolls
        assert visit.page.evaluate(
            "() => [tlLooksTabular('T =    16: RNN   16 steps\\nT =    64: RNN   64 steps'),"
            " tlLooksTabular(\"tokens : ['The', '▁model', '▁sees']\\nIDs : [1, 2]\")]"
        ) == [True, False]
    finally:
        visit.close()


@EN_SWEEPS
def test_no_page_shows_raw_formula_source(sweeps) -> None:
    """MathJax typeset every formula: no "$", "\\(" or "\\[" is left in a page's text (a broken formula shows
    its source, as chapter 7's "$1 + 2 + \\dots" did)."""
    problems = _scan(sweeps.desktop(), "raw_math")
    assert not problems, problems


@EN_SWEEPS
@pytest.mark.parametrize("view", ["desktop", "phone"])
def test_no_text_in_a_figure_overlaps_other_text_or_leaves_the_figure(view: str, sweeps) -> None:
    """On every page, at 1280 and 390 px, no two texts of a plotly figure intersect, none leaves its figure, and
    at 390 px none is smaller than 9 CSS px (book/_static/plotly-theme.js breaks long titles, thins crowded tick
    labels and makes room above the plot, measured once each figure is drawn)."""
    problems = _scan(_views(sweeps, view), "figure_text")
    assert not problems, problems


# The times of appendix_performance's "Eager attention against the fused kernel" measured with four busy loops
# beside the run (ms; eager, then sdpa, at n = 64 ... 512). Over this range plotly labels the axis 1, 2, 5 when it is
# 278 px long and every digit 1 to 9 at 285 px, the length it has once the x axes' labels were thinned: "6" to "9"
# then overlapped. A page's figures plot what the page measured, so a check on the built pages alone may not meet it.
BUSY_TIMES_MS = ([0.1251, 0.2544, 1.8682, 9.1963], [0.0683, 0.1859, 0.613, 2.3325])
REDRAW_WITH_TIMES = """async (times) => {
  const src = [...document.querySelectorAll('script.tl-plotly-data')]
    .find(s => s.textContent.includes('against the fused kernel'));
  const drawn = document.getElementById(src.id.replace(/-data$/, ''));
  const fig = JSON.parse(src.textContent);
  fig.data.filter(t => t.yaxis === 'y2').forEach((t, i) => { t.y = times[i]; });
  fig.layout.template = drawn.layout.template;  // the site's template, as drawn
  const el = document.createElement('div');
  el.id = 'busy-times';
  drawn.parentElement.appendChild(el);
  window.tlPlotlyPrepare(fig, el);
  await Plotly.newPlot(el, {data: fig.data, layout: fig.layout, config: {responsive: true}});
  await window.tlPlotlyTheme(el);
  return el.querySelectorAll('g.y2tick text').length;
}"""


def test_log_axis_labels_stay_apart_whatever_the_page_measured(browser, site_url: str) -> None:
    """appendix_performance's timing figure drawn again with the times of a busy machine: the sweeps' figure-text
    scan finds no text of it overlapping another once it is fitted (plotly-theme.js measures log axes again after
    its last relayout)."""
    if not (SITE / "book/appendix_performance.html").exists():
        pytest.skip(NO_SITE)
    visit = Visit(browser, site_url + "book/appendix_performance.html")
    try:
        ready(visit.page)
        assert visit.page.evaluate(REDRAW_WITH_TIMES, list(BUSY_TIMES_MS)) >= 3  # the time axis has its labels
        problems = [p for p in visit.page.evaluate(f"() => ({FIGURE_TEXT})(0)") if p.startswith("busy-times ")]
        assert not problems, problems
        assert not visit.errors, visit.errors
    finally:
        visit.close()


# The pages with diagrams drawn from live modules (transformer_lib.book.diagrams, attention_diagrams, flow_diagrams)
# and how many each shows, read from the built pages: a diagram's figure carries layout.meta.fit_text_width.


def diagram_pages() -> dict[str, int]:
    counts = {name: (SITE / name).read_text(encoding="utf-8").count('"fit_text_width"') for name in content_pages()}
    return {name: n for name, n in counts.items() if n}


def test_every_chapter_opens_with_its_part_of_figure_1() -> None:
    """Every numbered chapter shows at least one diagram drawn from the model (its part of Figure 1), so that the
    diagram checks below reach every chapter, a new one included."""
    chapters = [n for n in content_pages() if re.match(r"book/\d\d[a-z]?_", n)]
    if not chapters:
        pytest.skip(NO_SITE)
    assert [n for n in chapters if n not in diagram_pages()] == []


@EN_SWEEPS
@pytest.mark.parametrize("view", ["desktop", "phone"])
def test_diagrams_drawn_from_the_model_fit_and_keep_their_labels_in_their_boxes(view: str, sweeps) -> None:
    """Every page with diagrams drawn from live modules shows each one (SVG with boxes and labels), inside the text
    column, and every box label that can be measured stays inside its box, on a desktop and on a phone (where
    book/_static/plotly-theme.js shrinks the labels with the boxes)."""
    sweep = _views(sweeps, view)
    if not sweep:
        pytest.skip(NO_SITE)
    problems, measured = {}, 0
    for name, expected in diagram_pages().items():
        record = sweep.get(name, {"visit_error": "not visited"})
        if "visit_error" in record:
            problems[name] = [record["visit_error"]]
            continue
        found = record["diagrams"]
        if len(found) != expected:
            problems[name] = [f"expected {expected} diagrams, found {len(found)}"]
        for i, diagram in enumerate(found):
            measured += diagram["measured"]
            if diagram["problems"]:
                problems[f"{name} #{i} {diagram['title']}"] = diagram["problems"][:3]
    assert measured > 100, f"only {measured} labels could be measured against their boxes"
    assert not problems, problems


# ---------------------------------------------------------------------------------------------------------------------
# A reader on a phone (390 px, touch), in dark mode, with assistive technology (issue 24).


@EN_SWEEPS
def test_a_phone_opens_the_navigation_and_the_page_contents_by_touch(sweeps) -> None:
    """At 390 px with touch, on every page, a tap on ☰ opens the table of contents and a tap on "On this page"
    opens the page's sections (book/_static/reader.js hands the visible buttons' taps to the themes' handlers)."""
    sweep = sweeps.phone()
    if not sweep:
        pytest.skip(NO_SITE)
    problems = {name: r.get("drawers") or [r["visit_error"]] for name, r in sweep.items() if r.get("drawers", 1)}
    assert not problems, problems


@EN_SWEEPS
def test_plotly_menus_are_html_menus_that_change_the_figure_by_touch(sweeps) -> None:
    """No plotly dropdown is left on any page (they ignore taps); each became HTML menus over its figure
    (book/_static/plotly-theme.js), and tapping one and picking another entry changes the figure."""
    sweep = sweeps.phone()
    if not sweep:
        pytest.skip(NO_SITE)
    left = {name: r["plotly_dropdowns"] for name, r in sweep.items() if r.get("plotly_dropdowns")}
    assert not left, f"plotly dropdowns left: {left}"
    dead = {name: r["dead_menus"] for name, r in sweep.items() if r.get("dead_menus")}
    assert not dead, dead
    pages = {name for name, r in sweep.items() if r.get("tapped_menus")}
    assert {
        "book/01_why_not_rnn.html",
        "book/06_multi_head_attention.html",
        "book/07_cross_attention_and_decoding.html",
    } <= pages, sorted(pages)


@EN_SWEEPS
def test_tapping_a_menu_on_a_phone_raises_no_javascript_error(sweeps) -> None:
    """No JavaScript error while the phone sweep taps the drawers and the menus (an attention grid's layer menu, whose
    entries also replace the head slider, threw inside plotly.js on a phone until plotly-theme.js split the call)."""
    sweep = sweeps.phone()
    if not sweep:
        pytest.skip(NO_SITE)
    errors = {name: r["errors"] for name, r in sweep.items() if r["errors"]}
    assert not errors, errors


@EN_SWEEPS
def test_no_figure_toolbar_offers_to_upload_and_phones_show_none(sweeps) -> None:
    """Every figure's toolbar has no "Share chart..." (upload) button and no plotly logo; on a touch screen it is
    off, so it cannot cover the figure's title (transformer_lib.book.toolbar.PLOTLY_CONFIG)."""
    sweep = sweeps.phone()
    if not sweep:
        pytest.skip(NO_SITE)
    bad = {name: r.get("toolbars", r.get("visit_error")) for name, r in sweep.items() if r.get("toolbars", 1)}
    assert not bad, bad


def test_figure_toolbar_buttons_send_nothing_off_the_machine(browser, site_url: str) -> None:
    """On a desktop, every button of a figure's toolbar is pressed: none offers to upload, no request leaves
    the machine."""
    if not (SITE / "book/04_attention.html").exists():
        pytest.skip(NO_SITE)
    visit = Visit(browser, site_url + "book/04_attention.html")
    page = visit.page
    try:
        figure = page.locator(".tl-plotly-figure").first  # drawn as it comes near: the page's other figures may wait
        figure.scroll_into_view_if_needed()
        figure.locator(".modebar-btn").first.wait_for(state="attached", timeout=DRAWN_TIMEOUT_MS)
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


@pytest.mark.parametrize("name", ["book/03_positional_encoding.html", "book/appendix_pretrained.html"])
def test_dark_mode_follows_the_system_and_controls_stay_readable(name: str, browser, site_url: str) -> None:
    """A reader whose system is set to dark gets the dark theme at once; every control's text (HTML buttons,
    menus, folds, plotly's menu buttons such as chapter 3's "40 positions") has a contrast of at least 4.5, and
    the library-source panels are dark."""
    if not (SITE / name).exists():
        pytest.skip(NO_SITE)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark", service_workers="block")
    page = context.new_page()
    try:
        page.goto(site_url + name, wait_until="load")
        ready(page, 500)  # and the figures' dark relayout
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        low = page.evaluate(CONTRAST)
        assert not low, low
        filters = page.evaluate(
            "() => [...document.querySelectorAll('.tl-source pre')].map(p => getComputedStyle(p).filter)"
        )
        assert all("invert(1)" in f for f in filters), filters
        screenshot(page, f"dark_{Path(name).stem}")
    finally:
        context.close()


def test_file_names_in_the_text_are_not_links_to_web_sites() -> None:
    """ "README.md" on the assignments page is a file name, not a link to http://README.md (linkify's fuzzy links
    are off in _config.yml)."""
    pages = sorted(SITE.rglob("*.html"))
    if not pages:
        pytest.skip(NO_SITE)
    bare = re.compile(r'href="https?://[^"/]+\.(md|py|txt|json|ipynb|yml|sh)"')
    found = {p.relative_to(SITE).as_posix(): bare.findall(p.read_text(encoding="utf-8")) for p in pages}
    assert not {k: v for k, v in found.items() if v}, found

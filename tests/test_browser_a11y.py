"""Accessibility of the built site: axe-core (vendored from npm, tests/vendor/axe-core, injected by the test
only) reports no WCAG 2.0/2.1 A or AA violation on any page on a desktop in the light theme (run in the desktop
sweep's one visit of each page, every figure drawn), on the Chinese site's translated pages, and on a dark touch
phone for a sample of pages that holds every kind of control (site_checks.dark_sample). Each failure lists the
rule, how many elements and the first ones, so that the fix can go to the root (theme script, Sphinx extension,
figure code).

The contrast of code (elements inside a code block, whose colours come from stylesheets every page shares) is
measured on a sample of pages that holds every combination of classes that chooses a code element's colours
(site_checks.code_sample); on the other pages axe measures the contrast of everything else (issue 41: code was most
of axe's time)."""

from __future__ import annotations

import pytest
from site_browser import (
    AXE,
    AXE_TAGS,
    DESKTOP,
    EN_SWEEPS,
    NO_SITE,
    NO_ZH_SITE,
    SITE,
    ZH_SWEEPS,
    content_pages,
    zh_checked,
    zh_pages,
)
from site_checks import NOT_CODE, NOT_FIGURES, RUN_AXE, code_colour_keys, dark_sample

pytestmark = pytest.mark.browser


def _said(name: str, view: str, record: dict) -> str:
    if "visit_error" in record:
        return f"{name} ({view}): {record['visit_error']}"
    return f"{name} ({view}): " + "; ".join(f"{v['id']} x{v['n']}: {v['help']} {v['first']}" for v in record["axe"])


def _check(sweep: dict[str, dict], name: str, view: str, missing: str) -> None:
    if name not in sweep:
        pytest.skip(missing)
    record = sweep[name]
    assert "visit_error" not in record and not record["axe"], _said(name, view, record)


@EN_SWEEPS
@pytest.mark.parametrize("name", content_pages() or ["<no built site>"])
def test_no_wcag_violation(name: str, sweeps) -> None:
    _check(sweeps.desktop(), name, "desktop-light", NO_SITE)


_DARK = dark_sample(content_pages())


@ZH_SWEEPS
@pytest.mark.parametrize("name", _DARK + [p for p in zh_pages() if p.removeprefix("zh/") in _DARK] or ["<no site>"])
def test_no_wcag_violation_on_a_dark_phone_without_reader_js(name: str, sweeps) -> None:
    """The HTML the build writes and the theme's scripts, without ours that name controls: axe clean on a phone."""
    swept = sweeps.dark_axe()
    _check(swept, name, "phone-dark, reader.js withheld", NO_SITE)
    assert swept[name]["kept_out"] == ["reader.js"], f"{name}: reader.js was not kept from the page"


@ZH_SWEEPS
@pytest.mark.parametrize("name", [p for p in zh_checked() if p != "zh/index.html"] or ["<no Chinese site>"])
def test_no_wcag_violation_on_the_chinese_site(name: str, sweeps) -> None:
    _check(sweeps.desktop("zh"), name, "desktop-light", NO_ZH_SITE)


def test_the_dark_sample_holds_every_kind_of_control() -> None:
    from site_checks import CONTROL_KINDS

    pages = content_pages()
    if not pages:
        pytest.skip(NO_SITE)
    sample = dark_sample(pages)
    html = "".join((SITE / p).read_text(encoding="utf-8") for p in sample)
    everywhere = "".join((SITE / p).read_text(encoding="utf-8") for p in pages)
    assert [k for k, mark in CONTROL_KINDS.items() if mark in everywhere and mark not in html] == []
    assert len(sample) < len(pages) / 2, sample  # a sample, not the whole site again


# the planted faults: one page for the four tests below (on one xdist worker), each fault added, checked, removed
PLANTED_AXE = pytest.mark.xdist_group("planted-axe")


@pytest.fixture(scope="module")
def planted_page(browser, site_url: str):
    """The glossary, axe injected; a test plants its fault in ``#tl-planted`` (emptied after it)."""
    context = browser.new_context(**DESKTOP)
    try:
        page = context.new_page()
        page.goto(site_url + "book/glossary.html", wait_until="load")
        page.evaluate("() => document.querySelector('article').insertAdjacentHTML('beforeend', '<div id=tl-planted>')")
        page.add_script_tag(path=str(AXE))
        yield page
    finally:
        context.close()


def _axe_with(page, planted: str, selectors: tuple) -> dict:
    """What axe finds (rule ids) with ``planted`` in the page, for each color-contrast selector in ``selectors``."""
    page.evaluate("(html) => { document.getElementById('tl-planted').innerHTML = html; }", planted)
    try:
        return {selector: {v["id"] for v in page.evaluate(RUN_AXE, [AXE_TAGS, selector])} for selector in selectors}
    finally:
        page.evaluate("() => { document.getElementById('tl-planted').innerHTML = ''; }")


@PLANTED_AXE
def test_axe_finds_a_planted_violation(planted_page) -> None:
    """The check can fail: an image without a text alternative and an unlabelled menu, added to a real page."""
    found = _axe_with(planted_page, '<img src="x.png"><select><option>1</option></select>', (None,))[None]
    assert {"image-alt", "select-name"} <= found, found


LOW_CONTRAST = "color: #bbb; background: #fff"


PLANTED = {
    "prose": f'<p style="{LOW_CONTRAST}">faint words</p>',
    "code": f'<div class="highlight"><pre><span style="{LOW_CONTRAST}">faint_code()</span></pre></div>',
    "figure": '<div class="js-plotly-plot"><svg width="300" height="60"><rect width="300" height="60" fill="#fff"/>'
    '<text x="10" y="30" fill="#bbb" font-size="12">faint label</text></svg></div>',
}


@PLANTED_AXE
@pytest.mark.parametrize("where", PLANTED)
def test_axe_finds_low_contrast_where_it_measures_it(where: str, planted_page) -> None:
    """Light grey on white, planted in the prose, is found on every page; planted in a code block, it is found where
    axe measures code (the sample's pages) and left to the sample elsewhere (NOT_CODE); planted as a figure's SVG
    text, axe never reports it (it cannot tell the background: "incomplete"), so skipping figures loses nothing."""
    found = _axe_with(planted_page, PLANTED[where], (None, NOT_CODE, NOT_FIGURES))
    assert ("color-contrast" in found[None]) == (where != "figure"), found
    assert ("color-contrast" in found[NOT_CODE]) == (where == "prose"), found
    assert ("color-contrast" in found[NOT_FIGURES]) == (where != "figure"), found


def _code_sample_holds_every_colour_of_code(lang: str, sweeps) -> None:
    """Every combination of classes that chooses a code element's colours, on every page the desktop sweeps visit,
    is on a page where axe measured the contrast of code (and found nothing: test_no_wcag_violation); the sample is
    a part of the site, not all of it. Per language: each one's sweep runs on its own worker."""
    pages = content_pages() + [p for p in zh_checked() if p != "zh/index.html"]
    if not pages:
        pytest.skip(NO_SITE)
    sample = sweeps.code_checked_on()
    keys = {p: code_colour_keys((SITE / p).read_text(encoding="utf-8")) for p in pages}
    held = set().union(*(keys[p] for p in sample))
    assert len(set().union(*keys.values())) > 50, "too few code colour combinations found: the parser missed code"
    assert set().union(*keys.values()) <= held
    assert len(sample) < len(pages) / 2, sample
    swept = sweeps.desktop(lang)
    measured = {p for p, r in swept.items() if r.get("axe_code_contrast")}
    assert set(sample) & set(swept) <= measured, sorted(set(sample) - measured)
    assert measured < set(swept), f"code was measured everywhere on the {lang} pages: the sample saves nothing"


@ZH_SWEEPS
def test_the_dark_code_sample_holds_every_colour_of_code_of_the_dark_pages(sweeps) -> None:
    """The same on the dark phone: every combination of classes that chooses a code element's colours on the dark
    sweep's pages is on one of them where axe measured the contrast of code, in the dark theme; the others skip it."""
    pages = sweeps.dark_pages()
    if not pages:
        pytest.skip(NO_SITE)
    sample = sweeps.dark_code_checked_on()
    keys = {p: code_colour_keys((SITE / p).read_text(encoding="utf-8")) for p in pages}
    assert len(set().union(*keys.values())) > 50, "too few code colour combinations found: the parser missed code"
    assert set().union(*keys.values()) <= set().union(*(keys[p] for p in sample))
    swept = sweeps.dark_axe()
    measured = {p for p, r in swept.items() if r.get("axe_code_contrast")}
    assert set(sample) & set(swept) <= measured, sorted(set(sample) - measured)
    assert measured < set(swept), "code was measured on every dark page: the sample saves nothing"


@EN_SWEEPS
def test_the_code_sample_holds_every_colour_of_code(sweeps) -> None:
    _code_sample_holds_every_colour_of_code("en", sweeps)


@ZH_SWEEPS
def test_the_code_sample_holds_every_colour_of_code_on_the_chinese_site(sweeps) -> None:
    _code_sample_holds_every_colour_of_code("zh", sweeps)


def test_the_built_html_names_its_controls_before_any_script_runs() -> None:
    """What the build writes, read without a browser (no script has run): every sidebar toggle (a <summary> showing
    only an icon) is named after its chapter, in the page's language; the search button is named by what it shows;
    every <pre> can take the keyboard's focus, so that a wide one can be scrolled (transformer_lib.site.pages
    .accessible_page). What scripts create is named by reader.js and checked by axe above."""
    import re

    pages = sorted(p for p in SITE.rglob("*.html") if "_static" not in p.relative_to(SITE).parts)
    if not pages:
        pytest.skip(NO_SITE)
    problems = []
    for page in pages:
        html = page.read_text(encoding="utf-8")
        zh = page.relative_to(SITE).parts[0] == "zh"
        for summary in re.findall(r"<summary(?: [^>]*)?>\s*<span class=\"toctree-toggle\"", html):
            if "aria-label" not in summary or ("展开" if zh else "Sections of") not in summary:
                problems.append(f"{page.relative_to(SITE)}: {summary}")
        problems += [
            f"{page.relative_to(SITE)}: {b}"
            for b in re.findall(r"<button class=\"btn search-button[^>]*aria-label[^>]*>", html)
        ]
        problems += [
            f"{page.relative_to(SITE)}: <pre> without tabindex"
            for _ in re.findall(r"<pre(?=[\s>])(?![^>]*tabindex)", html)
        ]
    assert not problems, problems[:10]

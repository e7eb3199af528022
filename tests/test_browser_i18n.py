"""The Chinese site (_build/html/zh, scripts/i18n.py build) in headless Chromium: every page passes the English
pages' checks (offline, no JavaScript error, every figure and widget drawn, formulas typeset, figure text apart,
controls working), in one visit per page and width (the sweeps of tests/site_browser.py); the language switch
goes to the same page in the other language, by touch; translated pages read in Chinese, figures included."""

from __future__ import annotations

import re

import pytest
from site_browser import NO_ZH_SITE, PHONE, ZH, ZH_SWEEPS, record_of, zh_checked

from transformer_lib.site import i18n

pytestmark = pytest.mark.browser
CHECKED = [p for p in zh_checked() if p != "zh/index.html"] or ["<no Chinese site>"]


@ZH_SWEEPS
@pytest.mark.parametrize("name", CHECKED)
def test_chinese_page_renders_offline(name: str, sweeps) -> None:
    record = record_of(sweeps.desktop("zh"), name, NO_ZH_SITE)
    assert not record["blocked"], f"{name}: requests left the machine: {record['blocked']}"
    assert not record["failed"], f"{name}: local files failed to load: {record['failed']}"
    assert not record["errors"], f"{name}: JavaScript errors: {record['errors']}"
    assert not record["no_plotly"] and record["drawn"] >= record["figures"], record


@pytest.mark.parametrize("page", ["book/intro.html", "book/04_attention.html", "book/assignments/index.html"])
def test_the_language_switch_takes_a_tap_to_the_same_page_and_back(page: str, browser, site_url: str) -> None:
    if not (ZH / page).exists():
        pytest.skip(NO_ZH_SITE)
    context = browser.new_context(**PHONE)
    try:
        tab = context.new_page()
        tab.goto(site_url + page, wait_until="load")
        assert tab.evaluate("document.documentElement.lang") == "en"
        switch = tab.locator("a.tl-language")
        switch.wait_for(state="visible")
        assert switch.inner_text().strip() == "中" and switch.get_attribute("aria-label") == "中文 (Chinese)"
        box = switch.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, box  # inside the phone's width
        switch.tap()
        tab.wait_for_url(site_url + "zh/" + page)
        assert tab.evaluate("document.documentElement.lang") == "zh-CN"
        back = tab.locator("a.tl-language")
        assert back.inner_text().strip() == "EN"
        back.tap()
        tab.wait_for_url(site_url + page)
    finally:
        context.close()


def _cjk_share(text: str) -> float:
    letters = re.findall(r"[A-Za-z]|[\u4e00-\u9fff]", text)
    return sum(1 for c in letters if c >= "\u4e00") / max(len(letters), 1)


@ZH_SWEEPS
@pytest.mark.parametrize("page", i18n.TRANSLATED)
def test_a_translated_page_reads_in_chinese(page: str, sweeps) -> None:
    read = record_of(sweeps.desktop("zh"), f"zh/{page}.html", NO_ZH_SITE)["zh"]
    share = _cjk_share(re.sub(r"\b[\w./<>-]*_[\w./<>-]*\b", " ", read["prose"]))  # names like transformer_lib stay
    assert share > 0.5, f"{page}: only {share:.0%} of the prose's letters are Chinese"
    if read["has_code"]:
        assert read["code_toggle"] in ("隐藏代码", "显示代码"), read["code_toggle"]
    english = [
        words
        for words in i18n.SITE_WORDS  # site.po's msgids: the site's own words (toggles, hints, the search field ...)
        if "{" not in words and re.search(rf"(?<!\w){re.escape(words.strip())}(?!\w)", read["shown"])
    ]
    assert not english, f"{page}: the site's own words still in English: {english}"
    # the sidebar's parts ("Chapters", ...: _toc.yml's captions, inserted after Sphinx translates a page)
    assert read["captions"] and all(_cjk_share(c) > 0.5 for c in read["captions"]), read["captions"]
    assert read["search"] and all(_cjk_share(s) > 0.5 for s in read["search"]), read["search"]


@ZH_SWEEPS
def test_a_diagram_on_the_chinese_site_has_chinese_labels(sweeps) -> None:
    """Figure 1 (the architecture, drawn from a live model) takes its labels from the label catalog."""
    read = record_of(sweeps.desktop("zh"), "zh/book/intro.html", NO_ZH_SITE)["zh"]
    text = read["figure_text"]
    assert any("自注意力" in t and "前馈网络" in t for t in text), [t[:200] for t in text]
    # what a screen reader says in place of each figure is Chinese too
    said = read["figure_labels"]
    assert said and all(re.search(r"[\u4e00-\u9fff]", a or "") for a in said), said
    assert not any(re.search(r"\b(Diagram|Parts|Heat map|Line plot|rows|columns|values)\b", a) for a in said), said


@ZH_SWEEPS
@pytest.mark.parametrize("view", ["desktop", "phone"])
def test_chinese_figures_keep_their_text_apart_and_formulas_typeset(view: str, sweeps) -> None:
    """The English pages' figure-text check (test_browser.py) on the Chinese pages, whose labels have other
    lengths: no two texts of a figure intersect, none leaves its figure, none is under 9 px on a phone, no title
    breaks inside a Chinese word (site_checks.WORD_BREAKS); and (on the desktop) no formula shows its source, with
    the translated text around it. The English pages' other scans
    (overflow; heatmaps, formulas and printed text at a phone's width) run here too."""
    sweep = sweeps.desktop("zh") if view == "desktop" else sweeps.phone("zh")
    if not sweep:
        pytest.skip(NO_ZH_SITE)
    problems = {
        f"{name} {scan}": found
        for name, record in sweep.items()
        for scan, found in {**record.get("scans", {}), "visit": [record.get("visit_error")]}.items()
        if found and found != [None]
    }
    assert not problems, problems


@ZH_SWEEPS
@pytest.mark.parametrize("name", [p for p in CHECKED if p.startswith("zh/book/0")] or ["<no Chinese site>"])
def test_every_control_on_a_chinese_chapter_changes_what_is_drawn(name: str, sweeps) -> None:
    """The chapters' menus and sliders on the Chinese site (their labels and titles translated, menus of
    name=value entries shown in Chinese) each still change what is drawn, by mouse and by touch."""
    record = record_of(sweeps.desktop("zh"), name, NO_ZH_SITE)
    assert record["ipywidgets"] == [] and not record["dead_controls"], record["dead_controls"]
    assert record["controls_found"] > 0 or not record["promised"]
    touched = record_of(sweeps.phone("zh"), name, NO_ZH_SITE)
    assert not touched["dead_menus"] and not touched["drawers"], (touched["dead_menus"], touched["drawers"])


def test_every_figure_on_the_chinese_site_is_described_in_chinese() -> None:
    """What a screen reader says in place of each figure (its aria-label, labels.alt_sentence) is Chinese on every
    Chinese page: the connecting words and the labels, with the same numbers as the English page's."""
    import html as html_module

    if not (ZH / "book/intro.html").exists():
        pytest.skip(NO_ZH_SITE)
    english_words = re.compile(r"\b(Heat map|Line plot|Training curves|Diagram|Parts|rows|columns|values|against)\b")
    described, problems = 0, []
    for page in sorted(ZH.rglob("*.html")):
        for label in re.findall(r'class="tl-plotly-figure" role="figure" aria-label="([^"]*)"', page.read_text()):
            said = html_module.unescape(label)
            described += 1
            if not re.search(r"[\u4e00-\u9fff]", said) or english_words.search(said):
                problems.append(f"{page.relative_to(ZH)}: {said[:160]}")
    assert described > 50, described  # the book's figures were found
    assert not problems, "\n".join(problems)

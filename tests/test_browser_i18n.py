"""The Chinese site (_build/html/zh, scripts/i18n.py build) in headless Chromium: every page passes the English
pages' checks (offline, no JavaScript error, every figure and widget drawn, formulas typeset); the language switch
goes to the same page in the other language, by touch; translated pages read in Chinese, figures included."""

from __future__ import annotations

import re

import pytest
import test_browser as tb

from transformer_lib.book import i18n

pytestmark = pytest.mark.browser
browser = tb.browser  # the same fixtures as the English site's tests
site_url = tb.site_url
ZH = tb.SITE / "zh"
PHONE = dict(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True, service_workers="block")


def _zh_pages() -> list[str]:
    if not (ZH / "index.html").exists():
        return []
    return sorted(
        "zh/" + p.relative_to(ZH).as_posix()
        for p in ZH.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(ZH).parts)  # not the theme's templates in _static
    )


def _zh_checked() -> list[str]:
    """The Chinese pages that get the English pages' full check: the translated ones, the home page and one
    untranslated chapter with figures and widgets (the others are the English pages under another language code,
    whose every page test_browser.py checks; keeping CI's browser stage short)."""
    chosen = {f"zh/{page}.html" for page in i18n.TRANSLATED} | {"zh/index.html", "zh/book/04_attention.html"}
    return [p for p in _zh_pages() if p in chosen]


@pytest.mark.parametrize("name", _zh_checked() or ["<no Chinese site>"])
def test_chinese_page_renders_offline(name: str, browser, site_url: str) -> None:
    if not _zh_pages():
        pytest.skip("no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first")
    tb.test_page_renders_offline(name, browser, site_url)


@pytest.mark.parametrize("page", ["book/intro.html", "book/04_attention.html", "book/assignments/index.html"])
def test_the_language_switch_takes_a_tap_to_the_same_page_and_back(page: str, browser, site_url: str) -> None:
    if not (ZH / page).exists():
        pytest.skip("no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first")
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


@pytest.mark.parametrize("page", i18n.TRANSLATED)
def test_a_translated_page_reads_in_chinese(page: str, browser, site_url: str) -> None:
    if not (ZH / f"{page}.html").exists():
        pytest.skip("no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first")
    visit = tb.Visit(browser, site_url + f"zh/{page}.html")
    try:
        prose = visit.page.evaluate(
            "() => [...document.querySelectorAll('article p, article h1, article h2, article li')]"
            ".filter(e => !e.closest('.cell_output, .output, pre, code, .bibliography, .citation, .citation-list'))"
            ".map(e => e.innerText).join(' ')"
        )
        share = _cjk_share(re.sub(r"\b[\w./<>-]*_[\w./<>-]*\b", " ", prose))  # names like transformer_lib stay
        assert share > 0.5, f"{page}: only {share:.0%} of the prose's letters are Chinese"
        if visit.page.locator(".cell .cell_input").count():
            assert visit.page.locator(".tl-hide-code-label").inner_text() in ("隐藏代码", "显示代码")
        shown = visit.page.evaluate(  # what the page itself says: not the printed output of the code
            "() => { const a = document.querySelector('article').cloneNode(true);"
            " a.querySelectorAll('.cell_output, pre, code').forEach(e => e.remove()); return a.textContent; }"
        )
        english = [
            words
            for words in i18n.PAGE_TEXT["zh_CN"]
            if "{" not in words and re.search(rf"(?<!\w){re.escape(words.strip())}(?!\w)", shown)
        ]
        assert not english, f"{page}: the site's own words still in English: {english}"
        # the sidebar's parts ("Chapters", ...: _toc.yml's captions, inserted after Sphinx translates a page)
        captions = visit.page.evaluate("() => [...document.querySelectorAll('.caption-text')].map(e => e.textContent)")
        assert captions and all(_cjk_share(c) > 0.5 for c in captions), captions
        search = visit.page.evaluate("() => [...document.querySelectorAll('input[name=q]')].map(e => e.placeholder)")
        assert search and all(_cjk_share(s) > 0.5 for s in search), search
    finally:
        visit.close()


def test_a_diagram_on_the_chinese_site_has_chinese_labels(browser, site_url: str) -> None:
    """Figure 1 (the architecture, drawn from a live model) takes its labels from the label catalog."""
    if not (ZH / "book/intro.html").exists():
        pytest.skip("no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first")
    visit = tb.Visit(browser, site_url + "zh/book/intro.html")
    try:
        visit.page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length > 0")
        text = visit.page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map(e => e.textContent)")
        assert any("自注意力" in t and "前馈层" in t for t in text), [t[:200] for t in text]
        # what a screen reader says in place of each figure is Chinese too
        said = visit.page.evaluate("() => [...document.querySelectorAll('.tl-plotly-figure')].map(e => e.ariaLabel)")
        assert said and all(re.search(r"[\u4e00-\u9fff]", a or "") for a in said), said
        assert not any(re.search(r"\b(Diagram|Parts|Heat map|Line plot|rows|columns|values)\b", a) for a in said), said
    finally:
        visit.close()


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)], ids=["desktop", "phone"])
def test_chinese_figures_keep_their_text_apart_and_formulas_typeset(
    width: int, height: int, browser, site_url: str
) -> None:
    """The English pages' figure-text check (test_browser.py) on the Chinese pages, whose labels have other
    lengths: no two texts of a figure intersect, none leaves its figure, none is under 9 px on a phone; and (on the
    desktop) no formula shows its source, with the translated text around it."""
    pages = _zh_checked()
    if not pages:
        pytest.skip("no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first")
    checks = {
        name: tb.SCANS[(width, height)][name]
        for name in ("figure_text", "raw_math")
        if name in tb.SCANS[(width, height)]
    }
    problems = tb._scan(browser, site_url, checks, width, height, pages)
    assert not any(problems.values()), problems


@pytest.mark.parametrize("name", [p for p in _zh_checked() if p.startswith("zh/book/0")] or ["<no Chinese site>"])
def test_every_control_on_a_chinese_chapter_changes_what_is_drawn(name: str, browser, site_url: str) -> None:
    """The chapters' menus and sliders on the Chinese site (their labels and titles translated, menus of
    name=value entries shown in Chinese) each still change what is drawn."""
    if not _zh_pages():
        pytest.skip("no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first")
    tb.test_every_control_on_the_page_changes_what_is_drawn(name, browser, site_url)


def test_every_figure_on_the_chinese_site_is_described_in_chinese() -> None:
    """What a screen reader says in place of each figure (its aria-label, labels.alt_sentence) is Chinese on every
    Chinese page: the connecting words and the labels, with the same numbers as the English page's."""
    import html as html_module

    if not (ZH / "book/intro.html").exists():
        pytest.skip("no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first")
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

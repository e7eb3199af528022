"""Accessibility of the built site: axe-core (vendored from npm, book/_static/vendor/axe-core, injected by the test
only) reports no WCAG 2.0/2.1 A or AA violation on any page, on a desktop in the light theme and on a phone in the
dark one; the Chinese site's translated pages are checked too. Each failure lists the rule, how many elements and
the first ones, so that the fix can go to the root (theme script, Sphinx extension, figure code)."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_browser as tb

from transformer_lib.book import i18n

pytestmark = pytest.mark.browser
browser = tb.browser  # the same fixtures as the site's other browser tests
site_url = tb.site_url
AXE = Path(__file__).resolve().parents[1] / "book" / "_static" / "vendor" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
VIEWS = {
    "desktop-light": dict(viewport={"width": 1280, "height": 900}, color_scheme="light"),
    "phone-dark": dict(viewport={"width": 390, "height": 844}, color_scheme="dark", has_touch=True, is_mobile=True),
}
RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
  return result.violations.map(v => ({id: v.id, help: v.help, n: v.nodes.length,
                                      first: v.nodes.slice(0, 3).map(n => n.html.slice(0, 160))}));
}"""


def violations(browser, url: str, view: dict) -> list[dict]:
    context = browser.new_context(**view, service_workers="block")
    try:
        page = context.new_page()
        page.goto(url, wait_until="load")
        page.wait_for_timeout(500)  # the page's own scripts name their controls on DOMContentLoaded
        page.add_script_tag(path=str(AXE))
        return page.evaluate(RUN_AXE, TAGS)
    finally:
        context.close()


def _pages() -> list[str]:
    """The site's pages, less index.html: it only redirects to the introduction (checked as book/intro.html)."""
    return [p for p in tb._site_pages() if p != "index.html"]


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", _pages() or ["<no built site>"])
def test_no_wcag_violation(name: str, view: str, browser, site_url: str) -> None:
    if not tb._site_pages():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    found = violations(browser, site_url + name, VIEWS[view])
    assert not found, f"{name} ({view}): " + "; ".join(f"{v['id']} x{v['n']}: {v['help']} {v['first']}" for v in found)


@pytest.mark.parametrize("page", i18n.TRANSLATED)
def test_no_wcag_violation_on_the_chinese_site(page: str, browser, site_url: str) -> None:
    if not (tb.SITE / "zh" / f"{page}.html").exists():
        pytest.skip("no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first")
    found = violations(browser, site_url + f"zh/{page}.html", VIEWS["desktop-light"])
    assert not found, f"zh/{page}: " + "; ".join(f"{v['id']} x{v['n']}: {v['help']} {v['first']}" for v in found)


def test_axe_finds_a_planted_violation(browser, site_url: str) -> None:
    """The check can fail: an image without a text alternative and an unlabelled menu, added to a real page."""
    if not tb._site_pages():
        pytest.skip("no built site in _build/html: run `bash scripts/build_book.sh` first")
    context = browser.new_context(**VIEWS["desktop-light"], service_workers="block")
    try:
        page = context.new_page()
        page.goto(site_url + "book/glossary.html", wait_until="load")
        page.evaluate(
            "() => { const a = document.querySelector('article');"
            " a.insertAdjacentHTML('beforeend', '<img src=\"x.png\"><select><option>1</option></select>'); }"
        )
        page.add_script_tag(path=str(AXE))
        found = {v["id"] for v in page.evaluate(RUN_AXE, TAGS)}
        assert {"image-alt", "select-name"} <= found, found
    finally:
        context.close()

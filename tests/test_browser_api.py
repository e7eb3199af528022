"""The API reference page (book/api.md) on the built site, in headless Chromium: it lists every public name of
the core with its signature, its links (source pages, anchors) resolve, and chapter 4's links land on entries.

Run after ``bash scripts/build_book.sh``:  ``pytest tests/test_browser_api.py -m browser``.
"""

from __future__ import annotations

import inspect
from urllib.parse import urldefrag, urljoin

import pytest
from site_browser import SITE, Visit

import transformer_lib as tl

pytestmark = pytest.mark.browser


def _public_objects() -> dict[str, list[str]]:
    """Each function and class the package exports at the top level -> the ids its entry may have: its dotted name
    in the module that defines it or in a package above it that re-exports it (``transformer_lib.tokenization``)."""
    names = {}
    for name in tl.__all__:
        obj = getattr(tl, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            parts = obj.__module__.split(".")
            names[name] = [".".join(parts[:i] + [obj.__qualname__]) for i in range(2, len(parts) + 1)]
    return names


# The API page's entries are drawn when the reader comes near them (book.css, content-visibility: auto): the last
# one's signature waits at first (not rendered, innerText ''), is drawn with its text once scrolled to, and the page
# is about as long at first as it is with every entry drawn (each waits at the mean height of the entries).
_FAR_ENTRY = """async () => {
  const entries = [...document.querySelectorAll('.bd-article section > dl.py')];
  const last = entries[entries.length - 1], signature = last.querySelector('dt');
  const waiting = !signature.checkVisibility({contentVisibilityAuto: true}) && signature.innerText === '';
  const before = document.scrollingElement.scrollHeight;
  last.scrollIntoView();
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const drawn = signature.checkVisibility({contentVisibilityAuto: true}) && signature.innerText.length > 20;
  entries.forEach(e => { e.style.contentVisibility = 'visible'; });
  const after = document.scrollingElement.scrollHeight;
  entries.forEach(e => { e.style.contentVisibility = ''; });
  return {n: entries.length, waiting, drawn, ratio: before / after};
}"""


def _far_entries_wait_until_the_reader_comes(page) -> None:
    seen = page.evaluate(_FAR_ENTRY)
    assert seen["n"] > 40 and seen["waiting"] and seen["drawn"], seen
    assert 0.85 < seen["ratio"] < 1.15, seen  # the scrollbar at first tells the page's length within 15 %


def test_every_exported_function_and_class_has_an_entry_with_its_signature(browser, site_url: str) -> None:
    visit = Visit(browser, site_url + "book/api.html")
    try:
        ids = set(visit.page.eval_on_selector_all("dt[id]", "els => els.map(e => e.id)"))
        names = _public_objects()
        assert len(names) > 40
        missing = [n for n, candidates in names.items() if not ids.intersection(candidates)]
        assert not missing, f"no API entry for {missing}"
        # textContent: an entry far down the page is not drawn yet (book.css, content-visibility): its innerText is ''
        signature = visit.page.text_content("dt[id='transformer_lib.attention.scaled_dot_product_attention']") or ""
        signature = " ".join(signature.split())
        for arg in ("q: Tensor", "k: Tensor", "v: Tensor", "mask: Tensor | None", "need_weights: bool"):
            assert arg in signature, (arg, signature)
        _far_entries_wait_until_the_reader_comes(visit.page)
        assert not visit.errors and not visit.blocked and not visit.failed
    finally:
        visit.close()


def test_links_on_the_api_page_resolve(browser, site_url: str) -> None:
    visit = Visit(browser, site_url + "book/api.html")
    try:
        hrefs = visit.page.eval_on_selector_all("article a[href]", "els => els.map(e => e.href)")
        local = sorted({h for h in hrefs if h.startswith(site_url)})
        assert any("_modules/transformer_lib/attention.html" in h for h in local)  # viewcode's [source] links
        broken = []
        for href in local:
            url, anchor = urldefrag(href)
            path = SITE / url[len(site_url) :]
            if not path.is_file():
                broken.append(href)
            elif anchor and f'id="{anchor}"' not in path.read_text(encoding="utf-8"):
                broken.append(href)
        assert not broken, f"links that lead nowhere: {broken[:10]}"
    finally:
        visit.close()


def test_chapter_4_links_its_names_to_their_entries(browser, site_url: str) -> None:
    visit = Visit(browser, site_url + "book/04_attention.html")
    try:
        link = visit.page.locator("a.reference[title='transformer_lib.attention.scaled_dot_product_attention']").first
        assert link.inner_text() == "tl.scaled_dot_product_attention"
        href = urljoin(visit.page.url, link.get_attribute("href") or "")
        assert href.endswith("api.html#transformer_lib.attention.scaled_dot_product_attention"), href
        link.click()
        visit.page.wait_for_load_state("load")
        assert visit.page.url.endswith("#transformer_lib.attention.scaled_dot_product_attention")
        assert visit.page.locator("dt[id='transformer_lib.attention.scaled_dot_product_attention']").is_visible()
    finally:
        visit.close()

"""How the browser tests see the built website: one visit per page, language and width.

The site (``_build/html``, its Chinese edition in ``zh/``) is served on 127.0.0.1 and opened in Debian's Chromium
(driven by playwright), offline: every non-loopback request is refused by the browser (a proxy that is not there:
:data:`OFFLINE`) and recorded. A *sweep* visits each page once in one
browser context, waits until every figure is drawn (figures are drawn on demand as a reader scrolls: the sweep asks
for all of them), and then, in that one visit, runs every check that reads the page (figures drawn, requests,
JavaScript errors, text overflow, raw formula source, figure text, diagrams, the Chinese edition's reading checks,
axe) and finally operates the controls, which change what is drawn. The tests (``test_browser*.py``) assert on what
a sweep recorded, one test per page and check, so that a failure names its page. On two xdist workers
(scripts/test_all.sh), the tests that read one language's sweeps form one group (:data:`EN_SWEEPS`,
:data:`ZH_SWEEPS`): each sweep is still made once, by one worker, while the other sweeps the other language.

Screenshots are taken only when asked for (``TL_SCREENSHOTS=1``), into ``$TL_SCREENSHOTS_DIR`` or a folder in the
system's temporary directory, never into the repository.
"""

from __future__ import annotations

import functools
import http.server
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the built site: _build/html, or another copy of it named by TL_SITE (to compare two builds)
SITE = Path(os.environ.get("TL_SITE") or ROOT / "_build" / "html")
ZH = SITE / "zh"
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
# Offline: every request that is not to the loopback address (bypass: playwright's spelling of Chromium's rule) goes
# to a proxy that is not there, so it fails in the browser with OFFLINE_ERROR and never leaves the machine; Recorder
# lists each one. (Port 9 is "discard": nothing on this machine listens there.)
OFFLINE = {"server": "http://127.0.0.1:9", "bypass": "<loopback>"}
OFFLINE_ERROR = "net::ERR_PROXY_CONNECTION_FAILED"
WITHHELD_FAILURE = "inspector"  # how a request that DevTools blocked fails (Recorder's withheld scripts)
DRAWN_TIMEOUT_MS = 30_000
AXE = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"  # injected by the tests only, never published
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
DESKTOP = {"viewport": {"width": 1280, "height": 900}, "service_workers": "block"}
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "service_workers": "block"}
NO_SITE = "no built site in _build/html: run `bash scripts/build_book.sh` first"
NO_ZH_SITE = "no Chinese site in _build/html/zh: run `bash scripts/build_book.sh` first"
# scripts/test_all.sh runs the browser tests on two xdist workers (--dist loadgroup): the tests that read one language's
# sweeps carry that language's group, so that all of them run on one worker and each sweep is made once (conftest.py
# refuses a test that asks for the sweeps without a group); the other tests go to whichever worker is free.
EN_SWEEPS = pytest.mark.xdist_group("sweeps-en")  # desktop("en"), phone("en")
ZH_SWEEPS = pytest.mark.xdist_group("sweeps-zh")  # desktop("zh"), phone("zh"), dark_axe() (English and Chinese pages)


def screenshot_dir() -> Path | None:
    """Where screenshots go when ``TL_SCREENSHOTS=1`` (else None: none are taken)."""
    if os.environ.get("TL_SCREENSHOTS") != "1":
        return None
    folder = Path(os.environ.get("TL_SCREENSHOTS_DIR") or Path(tempfile.gettempdir()) / "tl-screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def screenshot(page, name: str, **options: Any) -> None:
    folder = screenshot_dir()
    if folder is not None:
        page.screenshot(path=str(folder / f"{name}.png"), **options)


# ---------------------------------------------------------------------------------------------------------------------
# Pages


def _is_redirect(path: Path) -> bool:
    return path.read_text(encoding="utf-8").startswith('<meta http-equiv="Refresh"')


def site_pages() -> list[str]:
    """The English site's pages (relative paths), the Chinese edition's excluded."""
    if not (SITE / "index.html").exists():
        return []
    return sorted(
        p.relative_to(SITE).as_posix()
        for p in SITE.rglob("*.html")
        if not p.relative_to(SITE).parts[0].startswith("_") and p.relative_to(SITE).parts[0] != "zh"
    )


def content_pages() -> list[str]:
    """The English pages less those that only redirect (index.html)."""
    return [n for n in site_pages() if not _is_redirect(SITE / n)]


def zh_pages() -> list[str]:
    if not (ZH / "index.html").exists():
        return []
    return sorted(
        "zh/" + p.relative_to(ZH).as_posix()
        for p in ZH.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(ZH).parts)  # not the theme's templates
    )


def zh_checked() -> list[str]:
    """The Chinese pages that get the English pages' full check: the translated ones, the home page and chapter 4
    (the other pages, if any, are the English pages under another language code)."""
    from transformer_lib.site import i18n

    chosen = {f"zh/{page}.html" for page in i18n.TRANSLATED} | {"zh/index.html", "zh/book/04_attention.html"}
    return [p for p in zh_pages() if p in chosen]


# ---------------------------------------------------------------------------------------------------------------------
# Serving and visiting


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # keep the test output readable
        pass


def serve(directory: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``directory`` on 127.0.0.1 from a thread; returns the server (call ``shutdown()``) and its URL."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


class Recorder:
    """Records, for one browser page, the requests that would have left the machine (refused by the browser's
    proxy: :data:`OFFLINE`), the local files that failed to load and the JavaScript errors; ``clear()`` between
    visits. No request is intercepted (playwright's routing turns the browser's HTTP cache off, and with it the
    compiled-code cache of plotly.js: 4.8 MB parsed again on every page, issue 41). The site's scripts that
    ``withheld`` keeps from the page on purpose ("reader.js") are blocked by the browser (DevTools'
    Network.setBlockedURLs, which leaves the cache on), listed in ``kept_out`` when a page asks for them and not
    reported as failures."""

    def __init__(self, context, page, withheld: tuple[str, ...] = ()) -> None:
        self.withheld = withheld
        self.blocked: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.kept_out: list[str] = []
        if withheld:
            devtools = context.new_cdp_session(page)
            devtools.send("Network.enable")
            devtools.send("Network.setBlockedURLs", {"urls": [f"*/{name}" for name in withheld]})
        page.on("request", self._request)
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))
        page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.status} {r.url}"))
        page.on("requestfailed", self._request_failed)

    def clear(self) -> None:
        self.blocked.clear()
        self.failed.clear()
        self.errors.clear()
        self.kept_out.clear()

    def _request(self, request) -> None:
        url = request.url
        if not (url.startswith(("data:", "blob:", "about:")) or urlparse(url).hostname in LOOPBACK):
            self.blocked.append(url)

    def _console(self, message) -> None:
        # a refused request also logs "Failed to load resource"; it is already in self.blocked
        if message.type == "error" and not (self.blocked and OFFLINE_ERROR in message.text):
            self.errors.append(message.text)

    def _request_failed(self, request) -> None:
        name = urlparse(request.url).path.rsplit("/", 1)[-1]
        if name in self.withheld and request.failure == WITHHELD_FAILURE:
            self.kept_out.append(name)
        elif request.url not in self.blocked:
            self.failed.append(f"{request.failure} {request.url}")


class Visit:
    """One offline page visit in a context of its own (``options``: playwright's context options)."""

    def __init__(self, browser, url: str, **options: Any) -> None:
        self.context = browser.new_context(**{**DESKTOP, **options})
        self.page = self.context.new_page()
        self.record = Recorder(self.context, self.page)
        self.blocked, self.failed, self.errors = self.record.blocked, self.record.failed, self.record.errors
        self.page.goto(url, wait_until="load")

    def close(self) -> None:
        self.context.close()


DRAW_ALL = "() => window.tlDrawAll ? window.tlDrawAll().then(() => true) : false"
ALL_DRAWN = (
    "() => [...document.querySelectorAll('.tl-plotly-figure')]"
    ".every(d => d.classList.contains('js-plotly-plot') && d.querySelector('.main-svg')"
    " && d.classList.contains('tl-fitted'))"
)
WIDGETS_DRAWN = (  # the embed manager draws each view in a .widget-subarea just before its script tag
    "() => [...document.querySelectorAll(\"script[type='application/vnd.jupyter.widget-view+json']\")]"
    ".every(s => { const a = s.previousElementSibling;"
    " return a && a.classList.contains('widget-subarea') && a.innerText.trim().length > 0"
    " && a.getBoundingClientRect().height > 0; })"
)
MATH_TYPESET = (
    "() => document.querySelectorAll('.math').length === 0 || document.querySelectorAll('mjx-container').length > 0"
)
# fonts loaded, MathJax's first typesetting done (MathJax is fetched after the load event: window.tlMathJax, from
# transformer_lib/site/templates/layout.html), and two frames drawn after that
SETTLED = """() => Promise.all([document.fonts ? document.fonts.ready : null, window.tlMathJax,
                         window.MathJax && MathJax.startup && MathJax.startup.promise])
  .then(() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true)))))"""


def ready(page, settle_ms: int = 100) -> None:
    """Everything a reader could scroll to is drawn: every plotly figure (drawn on demand, so ask for all of them)
    drawn and fitted to this width (tlDrawAll resolves once each figure's fitting relayouts are done), every widget
    view drawn, the fonts loaded and the formulas typeset; then a moment for late errors."""
    page.evaluate(DRAW_ALL)
    page.wait_for_function(ALL_DRAWN, timeout=DRAWN_TIMEOUT_MS)
    page.wait_for_function(WIDGETS_DRAWN, timeout=DRAWN_TIMEOUT_MS)
    page.wait_for_function(MATH_TYPESET, timeout=DRAWN_TIMEOUT_MS)
    page.evaluate(SETTLED)
    page.wait_for_timeout(settle_ms)


# ---------------------------------------------------------------------------------------------------------------------
# Sweeps: every page once per language and width, every check in that one visit

LOAD_TIMES: dict[str, list[float]] = {}  # sweep name -> seconds from navigation to the load event, per page
# sweep name -> step ("load", "ready", then each check by name) -> [wall seconds, pages]: where a sweep's time goes
STEP_TIMES: dict[str, dict[str, list[float]]] = {}


def sweep(
    browser,
    site_url: str,
    name: str,
    pages: list[str],
    context_options: dict[str, Any],
    checks: list[Callable[[Any, str, dict], None]],
    settle_ms: int = 100,
    withheld: tuple[str, ...] = (),
) -> dict[str, dict]:
    """Visit each page once in one context and run ``checks`` (each ``check(page, name, record)`` adds its findings
    to the page's record) in order. A page that cannot be visited or checked gets ``record["visit_error"]``; the
    other pages are still checked. ``withheld``: the site's scripts (file names) kept from every page. Returns
    {page: record}."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    recorder = Recorder(context, page, withheld)
    results: dict[str, dict] = {}
    times = LOAD_TIMES.setdefault(name, [])
    steps = STEP_TIMES.setdefault(name, {})

    def timed(step: str, since: float) -> float:
        now = time.perf_counter()
        spent = steps.setdefault(step, [0.0, 0])
        spent[0] += now - since
        spent[1] += 1
        return now

    try:
        for page_name in pages:
            recorder.clear()
            record: dict[str, Any] = {}
            results[page_name] = record
            try:
                start = time.perf_counter()
                page.goto(site_url + page_name, wait_until="load")
                times.append(time.perf_counter() - start)
                start = timed("load", start)
                if not _is_redirect(SITE / page_name):
                    ready(page, settle_ms)
                    start = timed("ready", start)
                record["errors_when_ready"] = list(recorder.errors)  # before any control is operated
                for check in checks:
                    check(page, page_name, record)
                    start = timed(getattr(check, "__name__", "check"), start)
            except Exception as exc:  # playwright's errors: record and go on with the next page
                record["visit_error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
            record["blocked"] = list(recorder.blocked)
            record["failed"] = list(recorder.failed)
            record["errors"] = list(recorder.errors)
            record["kept_out"] = list(recorder.kept_out)
    finally:
        context.close()
    return results


def record_of(sweep: dict[str, dict], name: str, missing: str = NO_SITE) -> dict:
    """A page's record from a sweep, for a test about that page: skipped (``missing`` says why) when the sweep did
    not visit it, failed when the visit itself failed."""
    if name not in sweep:
        pytest.skip(missing)
    record = sweep[name]
    assert "visit_error" not in record, f"{name}: {record['visit_error']}"
    return record


def load_time_summary() -> list[str]:
    """What the sweeps measured: the load event's median and worst time, and where each sweep's wall time went."""
    lines = [
        f"{name}: load event after {statistics.median(t):.2f} s median, {max(t):.2f} s at most ({len(t)} pages)"
        for name, t in LOAD_TIMES.items()
        if t
    ]
    for name, steps in STEP_TIMES.items():
        spent = ", ".join(f"{step} {s:.1f} s" for step, (s, _) in sorted(steps.items(), key=lambda kv: -kv[1][0]))
        lines.append(f"{name}: {sum(s for s, _ in steps.values()):.1f} s in all: {spent}")
    return lines

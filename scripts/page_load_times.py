"""How soon each chapter of the built site is readable: the browser's own DOMContentLoaded and load times.

Serves a built site (``_build/html`` by default, its Chinese edition in ``zh/``) on 127.0.0.1 and opens every chapter
in Debian's Chromium (headless, driven by playwright as the browser tests drive it), in both languages, cold (a
fresh browser context: empty cache) and warm (the same page again in that context), ``--repeat`` times each. It
prints, per page, the median of ``performance.getEntriesByType('navigation')[0]``'s ``domContentLoadedEventEnd`` and
``loadEventEnd`` and of the first contentful paint, in seconds, as a Markdown table, and writes them as JSON with
``--json``. Beside the times, figures that no load can move: the bytes of the scripts that the browser must run before
DOMContentLoaded (every ``<script src>`` of the page's HTML without ``async``: the synchronous ones and the deferred
ones, read from the built files), of the JavaScript written into the page (run as it is parsed), and the requests
that a cold visit started before DOMContentLoaded with their bytes (the Resource Timing entries). A measurement, not a
test: wall-clock times move with the machine's load (the tests assert counts: tests/test_browser_text_first.py).

    .venv/bin/python scripts/page_load_times.py [--site _build/html] [--repeat 3] [--json times.json]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import re
import statistics
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
TIMING = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const early = performance.getEntriesByType('resource').filter(r => r.startTime < nav.domContentLoadedEventStart);
  return {dcl: nav.domContentLoadedEventEnd / 1000, load: nav.loadEventEnd / 1000,
          fcp: paint ? paint.startTime / 1000 : null, requests: early.length + 1,
          kb: (nav.decodedBodySize + early.reduce((sum, r) => sum + r.decodedBodySize, 0)) / 1024};
}"""
SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.IGNORECASE)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # a visit's context closed while a file was still being sent (plotly.js, fetched when the page is idle after
        # its load event): not an error of the measurement
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def chapters(site: Path) -> list[str]:
    """The book's pages (``book/*.html``, the assignments aside), as the table of contents builds them."""
    if not (site / "book").is_dir():
        raise SystemExit(f"page_load_times: expected a built site in {site} (run `bash scripts/build_book.sh`)")
    return sorted(p.relative_to(site).as_posix() for p in (site / "book").glob("*.html"))


def parser_blocking(site: Path, page: str) -> dict[str, int]:
    """The scripts that hold ``page``'s parser (a ``<script src>`` with neither ``async`` nor ``defer``: the text after
    it waits until it has been fetched and run), with their sizes in bytes, read from the built files."""
    html = (site / page).read_text(encoding="utf-8")
    found = {}
    for attributes in SCRIPT_TAG.findall(html):
        src = re.search(r"(?<![\w-])src=\"([^\"]+)\"", attributes)
        if src is None or re.search(r"\b(async|defer)\b", attributes) or 'type="module"' in attributes:
            continue
        path = (site / page).parent / src.group(1).split("?")[0]
        found[src.group(1).split("?")[0]] = path.stat().st_size if path.is_file() else 0
    return found


def scripts_before_dcl(site: Path, page: str) -> dict[str, int]:
    """The scripts that the browser must fetch and run before ``page``'s DOMContentLoaded, with their sizes in bytes:
    every ``<script src>`` of its HTML without ``async`` (a synchronous script blocks the parser; a deferred one runs
    after parsing, but before DOMContentLoaded). Read from the built files, so no load can move it."""
    html = (site / page).read_text(encoding="utf-8")
    found = {}
    for attributes in SCRIPT_TAG.findall(html):
        src = re.search(r"(?<![\w-])src=\"([^\"]+)\"", attributes)
        if src is None or re.search(r"\basync\b", attributes):
            continue
        path = (site / page).parent / src.group(1).split("?")[0]
        found[src.group(1).split("?")[0]] = path.stat().st_size if path.is_file() else 0
    return found


INLINE_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.IGNORECASE | re.DOTALL)


def inline_scripts(site: Path, page: str) -> int:
    """The bytes of JavaScript written into ``page``'s HTML (``<script>`` without ``src``, of no type or a JavaScript
    type): the browser compiles and runs each where it stands, while the page is parsed. Data in a ``<script
    type="application/json">`` (each figure's: transformer_lib/site/figures.py) is not run, and not counted."""
    html = (site / page).read_text(encoding="utf-8")
    return sum(
        len(body.encode())
        for attributes, body in INLINE_SCRIPT.findall(html)
        if not re.search(r"(?<![\w-])src=", attributes)
        and not re.search(r"\btype=\"(?!(text|application)/javascript\")", attributes)
    )


def measure(site: Path, pages: list[str], repeat: int) -> dict[str, dict[str, dict[str, float | None]]]:
    """{page: {"cold"|"warm": {"dcl", "load", "fcp"}}}: medians over ``repeat`` visits, in seconds."""
    from playwright.sync_api import sync_playwright

    server = _Server(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    results: dict[str, dict[str, dict[str, float | None]]] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
            )
            for page_name in pages:
                runs: dict[str, list[dict[str, float | None]]] = {"cold": [], "warm": []}
                for _ in range(repeat):
                    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
                    page = context.new_page()
                    for kind in ("cold", "warm"):
                        page.goto(url + page_name, wait_until="load")
                        page.wait_for_function("() => performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
                        runs[kind].append(page.evaluate(TIMING))
                    context.close()
                results[page_name] = {
                    kind: {
                        key: (statistics.median(v) if (v := [x for r in rs if (x := r[key]) is not None]) else None)
                        for key in ("dcl", "load", "fcp", "requests", "kb")
                    }
                    for kind, rs in runs.items()
                }
                before_dcl = sum(scripts_before_dcl(site, page_name).values()) / 1024
                blocking = sum(parser_blocking(site, page_name).values()) / 1024
                inline = inline_scripts(site, page_name) / 1024
                results[page_name]["scripts_kb"] = {
                    "before_dcl": before_dcl,
                    "parser_blocking": blocking,
                    "inline": inline,
                }
                results[page_name]["load_average"] = {"1 min": os.getloadavg()[0]}
                print(f"{page_name}: {results[page_name]}", file=sys.stderr, flush=True)
            browser.close()
    finally:
        server.shutdown()
    return results


def table(results: dict[str, dict[str, dict[str, float | None]]]) -> str:
    def s(value: float | None, digits: int = 2) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    lines = [
        "| page | cold DCL | cold load | cold FCP | warm DCL | warm load | warm FCP | scripts run before DCL (KB) "
        "| of them parser-blocking (KB) | inline scripts (KB) | cold requests before DCL | their KB | load average |",
        "| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
    ]
    for page, r in results.items():
        cells = [s(r[kind][key]) for kind in ("cold", "warm") for key in ("dcl", "load", "fcp")]
        cells += [s(r["scripts_kb"][key], 0) for key in ("before_dcl", "parser_blocking", "inline")]
        cells += [s(r["cold"]["requests"], 0), s(r["cold"]["kb"], 0), s(r["load_average"]["1 min"], 1)]
        lines.append(f"| {page} | " + " | ".join(cells) + " |")
    medians = {
        f"{kind} {key}": statistics.median(v)
        for kind in ("cold", "warm")
        for key in ("dcl", "load")
        if (v := [x for r in results.values() if (x := r[kind][key]) is not None])
    }
    within = {
        f"{kind} {key}": sum(1 for r in results.values() if (x := r[kind][key]) is not None and x <= limit)
        for kind in ("cold", "warm")
        for key, limit in (("dcl", 0.5), ("load", 1.0))
    }
    lines.append("")
    lines.append(
        "medians over the pages: "
        + ", ".join(f"{k} {v:.2f} s ({within[k]} of {len(results)} within the target)" for k, v in medians.items())
        + " (targets: DOMContentLoaded 0.5 s, load 1 s)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--site", type=Path, default=ROOT / "_build" / "html", help="the built site (default: %(default)s)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="visits of each page, cold and warm (default: 3)")
    parser.add_argument("--json", type=Path, help="also write the medians here")
    parser.add_argument("--pages", nargs="*", help="only these pages (book/04_attention.html ...), both languages")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat: expected a number of visits of at least 1, got {args.repeat}")
    english = args.pages or chapters(args.site)
    pages = english + [f"zh/{p}" for p in english if (args.site / "zh" / p).is_file()]
    before = os.getloadavg()[0]
    results = measure(args.site, pages, args.repeat)
    print(f"load average (1 min, 2 cores): {before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

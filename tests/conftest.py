"""Shared pytest set-up: tests marked ``gpu`` are skipped where CUDA is absent; the browser tests' fixtures (headless
Chromium, the built site served on 127.0.0.1, the site swept once per language and view: tests/site_browser.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("loadscopereorder", True) is False:
        # Asked for by `-n 2 --dist loadfile --no-loadscope-reorder` (scripts/test_all.sh): the files that hold slow
        # tests first (stable otherwise). xdist hands out files in this order, so the long grading files start at
        # once and the many quick files fill the other worker, instead of a long file starting last while the other
        # worker sits idle (xdist's own order puts the files with the most tests first).
        slow_files = {item.path for item in items if "slow" in item.keywords}
        items.sort(key=lambda item: item.path not in slow_files)
    unplaced = [
        item.nodeid
        for item in items
        if "sweeps" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("xdist_group")
    ]
    if unplaced:  # on two xdist workers (scripts/test_all.sh) it could land on the worker without its sweeps
        raise pytest.UsageError(
            "a test that reads the browser sweeps needs the xdist group of the sweeps it reads (site_browser.EN_SWEEPS"
            f" or ZH_SWEEPS), or its worker sweeps the site a second time: {unplaced[:5]}"
        )
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    import torch  # only when a gpu test is collected: importing torch costs seconds

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="marked gpu: needs a CUDA device, and none is available here")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="module")
def sol():
    """Every object the solution notebooks define (their exercise and setup cells): test_checks and test_record."""
    from transformer_lib.classroom.assignments import ASSIGNMENTS, notebook_namespace

    root = Path(__file__).resolve().parents[1]
    ns = {}
    for aid in ASSIGNMENTS:
        ns.update(notebook_namespace(root / "assignments" / f"{aid}.ipynb", skip_tags=("check", "demo")))
    return ns


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models train fastest on one CPU thread (several threads spin against each other on a busy machine);
    a module that trains asks for it with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, driven by playwright, offline (site_browser.OFFLINE: a request off the machine
    fails and is recorded) (skipped, with a message, where it is missing)."""
    from site_browser import CHROMIUM, CHROMIUM_FLAGS, OFFLINE

    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: install Debian's package with `apt-get install chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True, proxy=OFFLINE)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def site_url() -> Iterator[str]:
    """The built site (_build/html) served on 127.0.0.1 (skipped, with a message, before a build)."""
    from site_browser import NO_SITE, SITE, serve

    if not (SITE / "index.html").exists():
        pytest.skip(NO_SITE)
    server, url = serve(SITE)
    yield url
    server.shutdown()


def _xdist_group(nodeid: str) -> str | None:
    """The xdist_group mark of a test, read from its function and module (by the nodeid, "tests/test_x.py::test_y[z]",
    which is all xdist's controller sees of a test); a mark given to one parameter is not seen."""
    import importlib

    path, _, name = nodeid.partition("::")
    if not Path(path).name.startswith("test_") or not path.endswith(".py") or not name:
        return None  # a doctest, or no test function
    module = importlib.import_module(Path(path).stem)  # as pytest imports it: tests/ is on sys.path (conftest.py)
    function = getattr(module, name.split("[")[0].split("::")[0], None)
    marks = [*getattr(function, "pytestmark", []), *_as_list(getattr(module, "pytestmark", []))]
    return next((str(m.args[0]) for m in marks if m.name == "xdist_group"), None)


def _as_list(marks) -> list:
    return marks if isinstance(marks, list) else [marks]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadgroup`` as xdist documents it: the tests marked with one xdist_group run on one worker, each other
    test wherever a worker is free. xdist 3.8's own loadgroup groups nothing under pytest 9.2 (it renames a test's
    nodeid, which pytest 9.2 no longer lets it do: pytest-xdist issue 1386), so the controller reads the marks."""
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class MarkedGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _xdist_group(nodeid) or nodeid

    return MarkedGroups(config, log)


_SWEPT_PAGES = pytest.StashKey[set]()  # the pages the selected tests ask about, when a run selects some (-k 05_masks)


def pytest_collection_finish(session: pytest.Session) -> None:
    """When only tests about some pages are selected, the sweeps visit those pages alone; a selected test about
    every page (a scan, a phone check) makes them visit all."""
    pages: set[str] = set()
    for item in session.items:
        if "sweeps" not in getattr(item, "fixturenames", ()):
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        named = [v for k, v in params.items() if k in ("name", "page") and isinstance(v, str)]
        if not named:
            return  # a test over every page: sweep them all
        pages.update(named + [f"zh/{v}.html" for v in named])
    session.config.stash[_SWEPT_PAGES] = pages


@pytest.fixture(scope="session")
def sweeps(browser, site_url: str, pytestconfig: pytest.Config):
    """Every page visited once per language and view, every check run in that visit (tests/site_checks.py)."""
    from site_checks import Sweeps

    return Sweeps(browser, site_url, only=pytestconfig.stash.get(_SWEPT_PAGES, None))


def _site_lines() -> list[str]:
    import sys

    site_browser = sys.modules.get("site_browser")
    return site_browser.load_time_summary() if site_browser else []


_WORKER_SITE_LINES: list[str] = []  # what each xdist worker's sweeps measured (scripts/test_all.sh: two workers)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its sweeps' measurements go to the controller's summary
        workeroutput["site_lines"] = _site_lines()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    _WORKER_SITE_LINES.extend(getattr(node, "workeroutput", {}).get("site_lines", []))


def pytest_terminal_summary(terminalreporter) -> None:
    """After a browser run: how soon the pages' load event came and where each sweep's time went, in this process
    and in each xdist worker (a measurement to read, not a test)."""
    for line in _site_lines() + _WORKER_SITE_LINES:
        terminalreporter.write_line(f"site: {line}")

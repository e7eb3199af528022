"""pytest plugin for the notebook run (``pytest --nbval-lax book``): time every notebook, fail slow ones.

nbval turns each code cell into a test item; a notebook's time is the sum of its items' durations (the
kernel start-up is part of the first item's set-up). The table is printed at the end of the run, with the
notebooks over the budget flagged: the book promises that each one runs in about a minute on a 2-core CPU.
Only a notebook over three times the budget fails the run: wall-clock time on a loaded machine (CI, a
teacher's shared server) says little, so the budget is a report, and the hard limit only catches a notebook
that has really grown.

It also keeps what nbval executed. Every iopub message of each cell's run is recorded; when all cells of a page
passed, the messages are replayed through nbclient's own output handling (transformer_lib.site.execution.replay)
into a copy of the page, written to ``_build/.executed/`` with the page's fingerprint (its bytes and the source of
the modules it imports). ``scripts/execute_notebooks.py`` hands such a copy to the build instead of running the page
again, so a run that tests the notebooks and then builds the site executes each page once.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / ".executed"  # pages as nbval executed them, for the build (scripts/execute_notebooks.py)

NOTEBOOK_BUDGET_S = 90.0  # reported per notebook; the book promises "about a minute"
FAIL_FACTOR = 3.0  # a run fails only past 3x the budget: a busy machine (CI, a shared server) is slower, not wrong
_seconds: dict[str, float] = defaultdict(float)


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # xdist workers forward their reports to the controller


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _seconds[path] += report.duration  # set-up, call and tear-down phases all count


def _too_slow() -> dict[str, float]:
    return {path: s for path, s in _seconds.items() if s > FAIL_FACTOR * NOTEBOOK_BUDGET_S}


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if not _seconds or not _is_controller(config):
        return
    terminalreporter.section(f"notebook execution time (budget {NOTEBOOK_BUDGET_S:.0f} s each)")
    for path, seconds in sorted(_seconds.items(), key=lambda item: -item[1]):
        flag = "  over budget" if seconds > NOTEBOOK_BUDGET_S else ""
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}{flag}")
    terminalreporter.write_line(f"{sum(_seconds.values()):7.1f} s  total")
    for path, seconds in _too_slow().items():
        terminalreporter.write_line(
            f"FAILED: {path} took {seconds:.1f} s, over {FAIL_FACTOR:.0f}x the "
            f"{NOTEBOOK_BUDGET_S:.0f} s budget; make it smaller or load a checkpoint",
            red=True,
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_controller(session.config) and _too_slow() and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# ---------------------------------------------------------------------------------------------------------------------
# What nbval executed, kept for the build


class _Recording:
    """The iopub messages of one page's run, by cell, and whether every cell passed."""

    def __init__(self, kernel: Any) -> None:
        self.by_request: dict[str, list[dict]] = defaultdict(list)
        self.request_of_cell: dict[int, str] = {}
        self.passed = True
        self.current: int | None = None
        get_message, execute = kernel.get_message, kernel.execute_cell_input

        def recorded_get_message(stream: str, *args: Any, **kwargs: Any) -> dict:
            message = get_message(stream, *args, **kwargs)
            if stream == "iopub":  # the outputs; the shell channel's replies are nbval's business
                self.by_request[message.get("parent_header", {}).get("msg_id", "")].append(message)
            return message

        def recorded_execute(*args: Any, **kwargs: Any) -> str:
            msg_id = execute(*args, **kwargs)
            if self.current is not None:
                self.request_of_cell[self.current] = msg_id
            return msg_id

        kernel.get_message, kernel.execute_cell_input = recorded_get_message, recorded_execute


def _is_cell(item: pytest.Item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item.parent, "nb")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    if _is_cell(item) and getattr(item.parent, "kernel", None) is not None:
        if "_tl_recording" not in item.parent.__dict__:
            item.parent.__dict__["_tl_recording"] = _Recording(item.parent.kernel)
        recording = item.parent.__dict__["_tl_recording"]
        recording.current = next(i for i, cell in enumerate(item.parent.nb.cells) if cell is item.cell)
    outcome = yield
    if _is_cell(item) and outcome.excinfo is not None:
        item.parent.__dict__.get("_tl_recording", _Recording.__new__(_Recording)).passed = False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    if _is_cell(item) and (nextitem is None or nextitem.parent is not item.parent):  # the page's last cell
        try:
            _keep_executed(item.parent)
        except Exception as exc:  # never the notebook's fault: the build runs the page itself instead
            import warnings

            warnings.warn(f"{item.parent.fspath}: not kept for the build ({type(exc).__name__}: {exc})", stacklevel=1)
    yield


def _keep_executed(page: Any) -> None:
    recording = page.__dict__.get("_tl_recording")
    cells = [i for i, cell in enumerate(page.nb.cells) if cell.cell_type == "code"]
    if recording is None or not recording.passed or set(recording.request_of_cell) != set(cells):
        return  # a cell failed or was skipped: the build runs this page itself
    import nbformat
    from ipykernel.ipkernel import IPythonKernel

    from transformer_lib.site.execution import replay
    from transformer_lib.site.page_dependencies import fingerprint

    source = Path(str(page.fspath)).resolve()
    if ROOT not in source.parents:
        return
    messages = {i: recording.by_request[msg_id] for i, msg_id in recording.request_of_cell.items()}
    notebook = replay(nbformat.read(source, as_version=4), messages, dict(IPythonKernel.language_info))
    notebook.metadata["tl_executed"] = {"fingerprint": fingerprint(source)}
    target = EXECUTED / source.relative_to(ROOT)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")

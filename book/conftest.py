"""pytest plugin for the notebook run (``pytest --nbval-lax book``): time every notebook, fail slow ones.

nbval turns each code cell into a test item; a notebook's time is the sum of its items' durations (the
kernel start-up is part of the first item's set-up). The table is printed at the end of the run, with the
notebooks over the budget flagged: the book promises that each one runs in about a minute on a 2-core CPU.
Only a notebook over three times the budget fails the run: wall-clock time on a loaded machine (CI, a
teacher's shared server) says little, so the budget is a report, and the hard limit only catches a notebook
that has really grown.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

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

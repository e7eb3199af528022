"""pytest plugin for the notebook run (``pytest --nbval-lax book``): time every notebook, fail slow ones.

nbval turns each code cell into a test item; a notebook's time is the sum of its items' durations (the
kernel start-up is part of the first item's set-up). The table is printed at the end of the run, and a
notebook over the budget makes the run fail: the book promises that each one runs in about a minute on a
2-core CPU.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

NOTEBOOK_BUDGET_S = 90.0
_seconds: dict[str, float] = defaultdict(float)


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # xdist workers forward their reports to the controller


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        _seconds[path] += report.duration  # set-up, call and tear-down phases all count


def _too_slow() -> dict[str, float]:
    return {path: s for path, s in _seconds.items() if s > NOTEBOOK_BUDGET_S}


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if not _seconds or not _is_controller(config):
        return
    terminalreporter.section(f"notebook execution time (budget {NOTEBOOK_BUDGET_S:.0f} s each)")
    for path, seconds in sorted(_seconds.items(), key=lambda item: -item[1]):
        flag = "  TOO SLOW" if seconds > NOTEBOOK_BUDGET_S else ""
        terminalreporter.write_line(f"{seconds:7.1f} s  {path}{flag}")
    terminalreporter.write_line(f"{sum(_seconds.values()):7.1f} s  total")
    for path, seconds in _too_slow().items():
        terminalreporter.write_line(f"FAILED: {path} took {seconds:.1f} s, over the {NOTEBOOK_BUDGET_S:.0f} s "
                                    "budget; make it smaller or load a checkpoint", red=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_controller(session.config) and _too_slow() and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

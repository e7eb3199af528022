"""The checks routed through record and replay, as the grader runs them: a check records in the student's kernel
(``record._record``), the grader replays the JSON text (``record.replay_exercise``), and both must give the result the
live check gives. tests/test_checks.py runs each of its tests both ways (its ``check_route`` fixture);
tests/test_record.py tests the recording itself."""

from __future__ import annotations

import pytest

from transformer_lib.classroom import checks
from transformer_lib.classroom.checks import record

LIVE = {
    name: getattr(checks, name) for name in checks.__all__ if name.startswith("check_") and name != "check_assignment"
}


def _same(a, b) -> bool:
    fields = ("exercise", "passed", "summary", "details", "hints", "error")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


def roundtrip(check_name, namespace, names, time_limit=checks.DEFAULT_TIME_LIMIT, trips=None):
    """Record in this process (as the kernel does), replay from the JSON text, and insist on the same result."""
    live, text = record._record(check_name, namespace, names, time_limit)
    replayed = record.replay_exercise(check_name, names, text, time_limit)
    assert _same(replayed, live), f"live:\n{live}\nreplayed:\n{replayed}"
    if trips is not None:
        trips.append((check_name, replayed.passed))
    return replayed


def through_record_and_replay(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Route every ``checks.check_*`` and ``checks.grade_exercise`` through :func:`roundtrip` for one test; returns the
    list of (check, passed) that each round trip appends to, so that the test can prove the route was taken."""
    trips: list[tuple[str, bool]] = []

    def patched(name):
        def check(*objects, time_limit=checks.DEFAULT_TIME_LIMIT):
            names = [f"learner_{i}" for i in range(len(objects))]
            return roundtrip(name, dict(zip(names, objects, strict=True)), names, time_limit, trips)

        return check

    for name in LIVE:
        monkeypatch.setattr(checks, name, patched(name))
    monkeypatch.setattr(
        checks,
        "grade_exercise",
        lambda check, ns, names, time_limit=checks.DEFAULT_TIME_LIMIT: roundtrip(check, ns, names, time_limit, trips),
    )
    return trips

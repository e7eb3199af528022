"""Record a check in the learner's kernel, replay it in the grader: the verdict never comes from the kernel.

A check talks to the learner's code only through :func:`~.core._call`. The grader's kernel runs each check in
*record* mode (:func:`record_exercise`): every ``_call`` runs the learner's code as usual, and what came back (a
value, an exception, a time-out) is written down as plain data, with a fingerprint of the call (a hash of its
arguments, the learner's module included). The kernel prints only that recording. The grader process then runs the
same check in *replay* mode (:func:`replay_exercise`): ``_call`` hands back the recorded outcomes in order and never
runs learner code, so the comparisons with the reference, the catalogue of mistakes and the hints all run where the
learner cannot reach them. A recording whose calls do not match what the check asks (another order, other
arguments, too many or too few calls) fails the exercise.

What is recorded is data only (:mod:`.snapshot`), parsed defensively and never unpickled. In replay a module
comes back as a *shadow*: its children of the classes the check names (``@_check(..., replays=...)``) are rebuilt as
those classes, so that a check can run ``m.self_attn(...)`` or read ``m.w_q.weight``; any other class, whatever
the recording says, as a ``nn.Module`` holding the same tensors whose ``forward`` refuses to run. Every tensor and
number rebuilt is capped in size. Any other object comes back as an opaque stand-in with the same type name, which
no check accepts.

What this does not stop: a learner who controls the kernel can print any recording, so a forged one can carry the
right *outputs* for the check's inputs (which is as hard as calling the reference, and the grader flags calls of
the reference it can see in the source). It cannot make a wrong output pass, or a stub's verdict count.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from torch import Tensor, nn

from .core import _CHECKS, _REPLAYS, CheckResult, _Fail, _Outcome, _tape, grade_exercise
from .hidden import handing, read_handed
from .snapshot import _DTYPES, _MAX_DEPTH, _VIEW, MAX_RECORDING_CHARS, RecordingError, _Decoder, _encode, _need, _Opaque

__all__ = ["RecordingError", "record_exercise", "replay_exercise", "last_recorded_value", "MAX_RECORDING_CHARS"]

FORMAT = 1


# --------------------------------------------------------------------------------------------------------------
# Fingerprints: the same arguments give the same hash in the kernel and in the grader
# --------------------------------------------------------------------------------------------------------------
def _module_tensors(m: nn.Module, prefix: str = "") -> Iterator[tuple[str, Tensor | None]]:
    """Parameters and buffers of ``m`` and its children, read from nn.Module's own tables (not state_dict(),
    which a learner's class may override)."""
    for table in ("_parameters", "_buffers"):
        for name, t in sorted(getattr(m, table, {}).items()):
            yield f"{prefix}{table[1]}:{name}", t
    for name, child in sorted(getattr(m, "_modules", {}).items()):
        if isinstance(child, nn.Module):
            yield from _module_tensors(child, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", None


def _digest(x: Any, h: Any, depth: int = 0) -> None:
    if depth > _MAX_DEPTH:
        h.update(b"deep")
    elif isinstance(x, Tensor):
        t = x.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.view(_VIEW.get(t.dtype, t.dtype)).numpy().tobytes() if t.dtype in _DTYPES.values() else b"?")
    elif isinstance(x, nn.Module):
        h.update(b"M")
        for name, tensor in _module_tensors(x):
            h.update(name.encode())
            _digest(tensor, h, depth + 1)
    elif isinstance(x, (list, tuple)):
        h.update(f"{type(x).__name__}{len(x)}(".encode())
        for v in x:
            _digest(v, h, depth + 1)
        h.update(b")")
    elif isinstance(x, dict):
        h.update(f"D{len(x)}(".encode())
        for k, v in x.items():
            _digest(k, h, depth + 1)
            _digest(v, h, depth + 1)
        h.update(b")")
    elif x is None or isinstance(x, (bool, int, float, str)):
        h.update(f"{type(x).__name__}:{x!r};".encode())
    else:  # the learner's function itself, or another object: its kind only
        h.update(b"object;")


def _fingerprint(fn: Any, args: tuple, kwargs: dict) -> str:
    h = hashlib.sha256()
    _digest(fn if isinstance(fn, nn.Module) else None, h)
    _digest(list(args), h)
    _digest(sorted(kwargs.items()), h)
    return h.hexdigest()[:32]


# --------------------------------------------------------------------------------------------------------------
# The tape: what _call consults
# --------------------------------------------------------------------------------------------------------------
@dataclass
class _Tape:
    replaying: bool
    calls: list[dict[str, Any]] = field(default_factory=list)
    position: int = 0
    mismatch: str = ""
    last: list[Any] = field(default_factory=list)  # recording: what the learner's code returned last, if anything

    @staticmethod
    def fingerprint(fn: Any, args: tuple, kwargs: dict) -> str:
        return _fingerprint(fn, args, kwargs)

    def record(self, fingerprint: str, outcome: _Outcome) -> None:
        entry: dict[str, Any] = {"fp": fingerprint, "name": outcome.name[:100]}
        if outcome.error is None:
            entry["value"] = _encode(outcome.value)
            self.last[:] = [outcome.value]
        else:
            entry["error"] = {
                "type": outcome.error[:100],
                "bases": [b[:100] for b in outcome.bases[:20]],
                "message": outcome.message[:2000],
                "line": outcome.line[:500],
            }
        self.calls.append(entry)

    def replay(self, fn: Any, args: tuple, kwargs: dict) -> _Outcome:
        if self.position >= len(self.calls):
            self._mismatch(f"the check makes call {self.position + 1}, the recording holds {len(self.calls)}")
        entry = self.calls[self.position]
        self.position += 1
        if entry["fp"] != _fingerprint(fn, args, kwargs):
            self._mismatch(f"call {self.position} had other arguments in the kernel")
        return entry["outcome"]

    def _mismatch(self, why: str) -> None:
        self.mismatch = self.mismatch or why
        raise _Fail(
            "The recorded calls do not match the check.",
            f"The grader replayed the check: {why}.",
            (
                "Run the notebook as handed out: do not change the checks, the library or the grader's cells. "
                "If you did not, tell your teacher.",
            ),
            "RecordingMismatch",
        )


def _parse_calls(calls: Any, allowed: tuple[type, ...] = ()) -> list[dict[str, Any]]:
    decoder = _Decoder(allowed)
    _need(type(calls) is list and len(calls) <= 1000, "no list of calls")
    parsed = []
    for c in calls:
        _need(type(c) is dict and type(c.get("fp")) is str and type(c.get("name")) is str, "a call without fingerprint")
        name = c["name"][:100]
        if "error" in c:
            e = c["error"]
            _need(
                type(e) is dict
                and all(type(e.get(k)) is str for k in ("type", "message", "line"))
                and type(e.get("bases")) is list
                and all(type(b) is str for b in e["bases"]),
                "a bad error",
            )
            outcome = _Outcome(
                name=name,
                error=e["type"][:100],
                bases=tuple(b[:100] for b in e["bases"][:20]),
                message=e["message"][:2000],
                line=e["line"][:500],
            )
        else:
            _need("value" in c, "a call without value or error")
            outcome = _Outcome(name=name, value=decoder.value(c["value"]))
        parsed.append({"fp": c["fp"], "outcome": outcome})
    return parsed


# --------------------------------------------------------------------------------------------------------------
# The two halves
# --------------------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _using(tape: _Tape) -> Iterator[None]:
    token = _tape.set(tape)
    try:
        yield
    finally:
        _tape.reset(token)


def record_exercise(
    check_name: str,
    namespace: dict[str, Any],
    names: list[str] | tuple[str, ...],
    time_limit: float,
    cases: str | None = None,
) -> str:
    """In the kernel: run ``check_name`` on ``names`` of ``namespace``, recording what the learner's code returned.
    ``cases``: the check's random cases as the grader handed them in (:func:`~.hidden.hand_in`; None: the public
    ones). Returns the recording as one line of JSON (the kernel's verdict is not part of it)."""
    return _record(check_name, namespace, names, time_limit, cases)[1]


def _record(
    check_name: str,
    namespace: dict[str, Any],
    names: list[str] | tuple[str, ...],
    time_limit: float,
    cases: str | None = None,
) -> tuple[CheckResult, str]:
    """The live result (what a notebook shows) and the recording."""
    tape = _Tape(replaying=False)
    with _using(tape), handing(check_name, None if cases is None else read_handed(cases)):
        result = grade_exercise(check_name, namespace, names, time_limit)
    missing = [n for n in names if n not in namespace]
    text = json.dumps(
        {"format": FORMAT, "check": check_name, "missing": missing, "calls": tape.calls},
        ensure_ascii=True,
        separators=(",", ":"),
    )
    return result, text


def last_recorded_value() -> Any:
    """While a check is recorded in the kernel: what the learner's code returned last (``LookupError`` otherwise).

    A reference that the grader's copy of the library leaves out (:mod:`transformer_lib.classroom.stubs`) answers
    with it, so that the check in the kernel goes on to its next input as it does for a right answer; the verdict
    is computed by the replay, against the real reference, and a recording that holds more calls than a failing
    replay makes is accepted."""
    tape = _tape.get()
    if tape is None or tape.replaying or not getattr(tape, "last", None):
        raise LookupError("no recording is running")
    return tape.last[0]


def _reject(constant: str) -> Any:
    raise RecordingError(f"the recording holds {constant}")


def replay_exercise(
    check_name: str, names: list[str] | tuple[str, ...], recording: str, time_limit: float, cases: str | None = None
) -> CheckResult:
    """In the grader: the result of ``check_name``, computed here from the kernel's ``recording``; ``cases`` are the
    random cases the kernel was handed (:func:`~.hidden.hand_in`; None: the public ones).

    Raises :class:`RecordingError` if the recording is malformed; a recording that does not match the check's calls
    gives a failed result that says so.
    """
    exercise = check_name.removeprefix("check_")
    if not isinstance(recording, str) or len(recording) > MAX_RECORDING_CHARS:
        raise RecordingError(f"recording: expected a str of at most {MAX_RECORDING_CHARS} characters")
    try:
        data = json.loads(recording, parse_constant=_reject)
    except RecordingError:
        raise
    except (ValueError, RecursionError) as e:
        raise RecordingError(f"the recording is not valid JSON ({type(e).__name__})") from None
    _need(type(data) is dict and data.get("format") == FORMAT, "not a recording of this format")
    _need(data.get("check") == check_name, "a recording of another check")
    missing = data.get("missing")
    _need(type(missing) is list and all(type(n) is str for n in missing), "a bad list of missing names")
    calls = _parse_calls(data.get("calls"), _REPLAYS.get(check_name, ()))
    if check_name not in _CHECKS:
        return grade_exercise(check_name, {}, names, time_limit)
    namespace = {n: type(n, (_Opaque,), {})() for n in names if n not in missing}
    tape = _Tape(replaying=True, calls=calls)
    with _using(tape), handing(check_name, None if cases is None else read_handed(cases)):
        result = grade_exercise(check_name, namespace, names, time_limit)
    # a recording may hold more calls than a failing replay makes: in the kernel, where the references of the
    # assignment are stubs (transformer_lib.classroom.stubs), the check cannot see the answer is wrong and goes on
    if not tape.mismatch and tape.position != len(calls) and result.error != "NameError" and result.passed:
        tape.mismatch = f"the check made {tape.position} calls, the recording holds {len(calls)}"
    if tape.mismatch:
        return CheckResult(
            exercise,
            False,
            "The recorded calls do not match the check.",
            f"The grader replayed the check: {tape.mismatch}.",
            (
                "Run the notebook as handed out: do not change the checks, the library or the grader's "
                "cells. If you did not, tell your teacher.",
            ),
            "RecordingMismatch",
        )
    return result

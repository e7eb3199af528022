"""The machinery every check shares: the result a learner sees, calling the learner's code safely, grading.

:class:`CheckResult` is what a check returns: PASS/FAIL, a summary, details and tiered hints. The ``@_check``
decorator turns a check body into a check: it sets the time limit, turns a ``_Fail`` raised at the first failing
case into a failed result, and registers the check under its name, which is how :func:`grade_exercise` (the
notebooks' ``check_assignment`` and the grader) finds it. ``_call`` runs the learner's function under the time
limit and turns a stub, a time-out or an exception into a ``_Fail`` that names the input.

Comparing tensors and the catalogue of mistakes live in :mod:`.compare`; the checks themselves, one module per
assignment, in the other modules of this package.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import signal
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..registry import get_assignment  # the assignments and their exercises

DEFAULT_TIME_LIMIT = 10.0  # CPU seconds per call of the learner's code; the inputs are tiny, a correct answer takes ms
# The wall-clock backstop, as a multiple of the CPU limit: it stops a call that waits without computing (sleep,
# input()). A busy machine stretches an honest call's wall-clock time, never its CPU time; at load 8 on 2 cores a
# call gets about a quarter of a core, so 30x the CPU limit stays far above any honest call.
WALL_LIMIT_FACTOR = 30
RESULT_MARKER = "TL-CHECK-RESULT "  # the grader reads the JSON that follows this prefix on a printed line

_time_limit: contextvars.ContextVar[float] = contextvars.ContextVar("time_limit", default=DEFAULT_TIME_LIMIT)
_NOT_LEARNER = tuple(
    {str(p) for d in (Path(__file__).parents[2], Path(torch.__file__).parent) for p in (d, d.resolve())}
)  # frames of the library and of torch, not the learner's


# --------------------------------------------------------------------------------------------------------------
# The result a learner sees
# --------------------------------------------------------------------------------------------------------------
class _Text(str):
    """A string that a notebook displays as plain text (no quotes, real line breaks)."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(repr=False)
class CheckResult:
    """The outcome of one check: PASS/FAIL, what failed and tiered hints.

    ``str(result)`` (and the notebook display) shows the first hint; ``result.more()`` the next one, and
    ``result.hint(level)`` any level. ``bool(result)`` is ``result.passed``. ``error`` names the exception the
    learner's code raised, if any (``"NotImplementedError"`` for an untouched stub).
    """

    exercise: str
    passed: bool
    summary: str
    details: str = ""
    hints: tuple[str, ...] = ()
    error: str | None = None
    flags: list[str] = field(default_factory=list)  # set by the grader: what the teacher should look at
    parts: dict[str, bool] = field(default_factory=dict)  # for partial credit: each part of the check, passed?
    _shown: int = field(default=1, compare=False)

    @property
    def not_implemented(self) -> bool:
        return self.error == "NotImplementedError"

    @property
    def message(self) -> str:
        """One line for a grade sheet: the summary and the first hint."""
        if self.passed or not self.hints:
            return self.summary
        return f"{self.summary}{'' if self.summary.endswith(('.', '!', '?')) else '.'} Hint: {self.hints[0]}"

    def hint(self, level: int = 1) -> _Text:
        """Hint number ``level`` (1 = first nudge, higher = more detail); the last one if ``level`` is larger."""
        if not self.hints:
            return _Text("No hint: this check passed." if self.passed else "No hint for this failure.")
        if isinstance(level, bool) or not isinstance(level, int) or level < 1:
            raise ValueError(f"level: expected an int >= 1, got {level!r}")
        level = min(level, len(self.hints))
        return _Text(f"Hint {level}/{len(self.hints)}: {self.hints[level - 1]}")

    def more(self) -> _Text:
        """The next hint after those already shown (stays on the last one)."""
        self._shown = min(self._shown + 1, max(len(self.hints), 1))
        return self.hint(self._shown)

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = f" {'PASS' if self.passed else 'FAIL'}: {self.exercise} "
        lines = [head.center(72, "="), self.summary]
        if self.details:
            lines.append(self.details)
        if not self.passed and self.hints:
            lines.append(str(self.hint(1)))
            if len(self.hints) > 1:
                lines.append("  -> call .more() on this result for a more detailed hint")
        return "\n".join(lines)

    __repr__ = __str__

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (what the grader collects)."""
        return {
            "exercise": self.exercise,
            "passed": self.passed,
            "summary": self.summary,
            "details": self.details,
            "hints": list(self.hints),
            "error": self.error,
            "flags": list(self.flags),
            "parts": dict(self.parts),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckResult:
        return cls(
            str(d["exercise"]),
            bool(d["passed"]),
            str(d["summary"]),
            str(d.get("details", "")),
            tuple(str(h) for h in d.get("hints", ())),
            d.get("error"),
            [str(f) for f in d.get("flags", ())],
            {str(p): bool(ok) for p, ok in dict(d.get("parts", {})).items()},
        )


class _Fail(Exception):
    """Raised inside a check to stop at the first failing case; turned into a failed CheckResult."""

    def __init__(self, summary: str, details: str = "", hints: tuple[str, ...] = (), error: str | None = None):
        super().__init__(summary)
        self.summary, self.details, self.hints, self.error = summary, details, tuple(hints), error


class _TimeUp(BaseException):
    """Raised by the alarm; a BaseException so that a learner's ``except Exception`` cannot swallow it. Its one
    argument says which limit ran out: "cpu" or "wall"."""


_CHECKS: dict[str, Callable[..., CheckResult]] = {}  # "check_attention" -> the check; filled by @_check
_REPLAYS: dict[str, tuple[type, ...]] = {}  # "check_decoder_layer" -> module classes its replay may rebuild
_parts: contextvars.ContextVar[dict[str, bool] | None] = contextvars.ContextVar("parts", default=None)


def _part(name: str, passed: bool) -> None:
    """Inside a check body: report whether part ``name`` of the check passed (for partial credit, see
    :attr:`~transformer_lib.classroom.registry.Exercise.parts`). The result carries every part reported."""
    parts = _parts.get()
    if parts is not None:
        parts[name] = bool(passed)


def _check(exercise: str, replays: tuple[type, ...] = ()) -> Callable:
    """Decorator: run a check body, turning ``_Fail`` into a failed result and a normal return into a pass.
    ``replays``: the module classes the grader may rebuild from a recording of this check (:mod:`.snapshot`)."""

    def decorate(body: Callable[..., str]) -> Callable[..., CheckResult]:
        @functools.wraps(body)
        def run(*learner: Any, time_limit: float = DEFAULT_TIME_LIMIT) -> CheckResult:
            parts: dict[str, bool] = {}
            token, parts_token = _time_limit.set(time_limit), _parts.set(parts)
            try:
                return CheckResult(exercise, True, body(*learner), parts=parts)
            except _Fail as f:
                return CheckResult(exercise, False, f.summary, f.details, f.hints, f.error, parts=parts)
            finally:
                _parts.reset(parts_token)
                _time_limit.reset(token)

        _CHECKS[body.__name__] = run
        _REPLAYS[body.__name__] = replays
        return run

    return decorate


# --------------------------------------------------------------------------------------------------------------
# Calling the learner's code safely
# --------------------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Raise ``_TimeUp("cpu")`` once the block has used ``seconds`` of CPU time (``ITIMER_PROF``: user and system
    time of the process), or ``_TimeUp("wall")`` after ``WALL_LIMIT_FACTOR * seconds`` on the clock
    (``ITIMER_REAL``). CPU time is what the learner's code computes, so load cannot make an honest call late; the
    wall-clock backstop catches a call that waits instead. Unix main thread only; elsewhere no limit."""
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _TimeUp("cpu" if signum == signal.SIGPROF else "wall")

    previous = {number: signal.signal(number, on_alarm) for number in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, WALL_LIMIT_FACTOR * seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for number, handler in previous.items():
            signal.signal(number, handler)


def _learner_line(exc: BaseException) -> str:
    """The innermost line of the traceback outside the library and torch: where the learner's code failed."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_NOT_LEARNER)]
    if not frames:
        return ""
    f = frames[-1]
    return f"It happened in {f.name}(), line {f.lineno}: {f.line.strip()}" if f.line else f"in {f.name}()"


def _exception_hints(error: str, bases: tuple[str, ...], text: str) -> tuple[str, ...]:
    """Hints for an exception of class ``error`` (``bases``: the names of its classes, itself first)."""
    if "RuntimeError" in bases and any(w in text for w in ("size", "shape", "dimension", "mat1")):
        return (
            "Two shapes do not fit together inside your function: print the shape of each intermediate "
            "tensor and compare it with the shapes in the docstring.",
            "Common causes: k not transposed (use k.transpose(-2, -1); k.T reverses every axis), a view or "
            "reshape with the wrong sizes, or a mask whose axes do not line up with the scores.",
        )
    if "NameError" in bases:
        return ("Your code uses a name that is not defined here: a typo, or a variable from another cell?",)
    if "TypeError" in bases and ("argument" in text or "positional" in text):
        return (
            "The check calls your code with the signature of the starter code: keep the argument names "
            "and order as they were given.",
        )
    return (
        "Your code raised an exception on this input: read the message and the line it points to.",
        "Run the 'Try it' cell above the check to see the full traceback.",
    )


@dataclass(frozen=True)
class _Outcome:
    """What one call of the learner's code gave: a value, or an exception (``error`` names its class; "_TimeUp"
    for the time limit). Plain data, so that it can be recorded in the kernel and replayed in the grader
    (:mod:`.record`)."""

    name: str  # the learner's function or class, as messages name it
    value: Any = None
    error: str | None = None
    bases: tuple[str, ...] = ()
    message: str = ""
    line: str = ""


# Set by .record: None runs the learner's code (notebooks), a recording tape writes down or hands back outcomes
_tape: contextvars.ContextVar[Any] = contextvars.ContextVar("tape", default=None)


def _run_learner(name: str, fn: Callable, args: tuple, kwargs: dict, limit: float) -> _Outcome:
    try:
        with _alarm(limit):
            return _Outcome(name, fn(*args, **kwargs))
    except _TimeUp as up:  # the message says which limit: "cpu" or "wall"
        return _Outcome(name, error="_TimeUp", bases=("_TimeUp",), message=str(up))
    except Exception as e:  # the learner's code raised: report it as feedback, not as a crash
        bases = tuple(c.__name__ for c in type(e).__mro__)
        return _Outcome(name, error=type(e).__name__, bases=bases, message=str(e), line=_learner_line(e))


def _call(fn: Callable, *args: Any, inputs: str, on_error: dict | None = None, **kwargs: Any) -> Any:
    """Call the learner's ``fn``; a stub, a time-out or an exception becomes a _Fail that says which input.

    This is the only place a check runs learner code; under a recording tape (:mod:`.record`) the outcome is written
    down in the kernel, or handed back in the grader without running anything.
    """
    name = getattr(fn, "__name__", type(fn).__name__)
    limit = _time_limit.get()
    tape = _tape.get()
    if tape is not None and tape.replaying:
        outcome = tape.replay(fn, args, kwargs)
    else:
        call = tape.fingerprint(fn, args, kwargs) if tape is not None else None  # before the learner can change them
        outcome = _run_learner(name, fn, args, kwargs, limit)
        if tape is not None:
            tape.record(call, outcome)
    if outcome.error is None:
        return outcome.value
    name = outcome.name
    if "NotImplementedError" in outcome.bases:
        raise _Fail(
            f"{name} is not implemented yet.",
            f"Calling {name} raised NotImplementedError: the starter stub is still in place.",
            (
                f"Replace the line `raise NotImplementedError(...)` in {name} with your code, run that cell, "
                "then run this check again.",
            ),
            "NotImplementedError",
        )
    if outcome.error == "_TimeUp" and outcome.message == "wall":
        raise _Fail(
            f"{name} did not finish within {WALL_LIMIT_FACTOR * limit:g} s of wall-clock time "
            f"(the limit for a call that waits; the CPU time limit is {limit:g} s).",
            f"Input: {inputs}",
            (
                "Does your code wait for something: input(), time.sleep(), a file or a network connection?",
                "A correct answer computes for milliseconds on these tiny inputs and waits for nothing.",
            ),
            "TimeoutError",
        )
    if outcome.error == "_TimeUp":
        raise _Fail(
            f"{name} did not finish within {limit:g} s of CPU time.",
            f"Input: {inputs}",
            (
                "Is there a loop that never ends? Check the condition of every `while` loop.",
                "A correct answer takes milliseconds on these tiny inputs. A `while` loop needs a step that "
                "makes its condition false; a decoding loop must stop after max_new_tokens steps.",
            ),
            "TimeoutError",
        )
    hints = next((h for t, h in (on_error or {}).items() if t.__name__ == outcome.error), None) or _exception_hints(
        outcome.error, outcome.bases, outcome.message
    )
    details = "\n".join(x for x in (f"Input: {inputs}", outcome.line) if x)
    raise _Fail(f"{name} raised {outcome.error}: {outcome.message}", details, hints, outcome.error)


# --------------------------------------------------------------------------------------------------------------
# Seeded inputs and modules
# --------------------------------------------------------------------------------------------------------------
def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@contextlib.contextmanager
def _fixed_seed(seed: int) -> Iterator[None]:
    """Seed the global RNG for building modules, without changing the learner's random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


# --------------------------------------------------------------------------------------------------------------
# Running all exercises of an assignment (notebooks and the grader)
# --------------------------------------------------------------------------------------------------------------
def grade_exercise(
    check_name: str,
    namespace: dict[str, Any],
    names: list[str] | tuple[str, ...],
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> CheckResult:
    """Run ``check_name`` on the objects ``names`` looked up in ``namespace`` (a notebook's ``globals()``).

    A missing name (deleted cell, syntax error, renamed function) and a crash of the check itself become
    failed results too, so one exercise can never stop the others from being graded.
    """
    check = _CHECKS.get(check_name)  # every check_* registers itself through @_check
    exercise = check_name.removeprefix("check_")
    if not callable(check) or not check_name.startswith("check_"):
        return CheckResult(exercise, False, f"Unknown check {check_name!r}.", error="LookupError")
    missing = [n for n in names if n not in namespace]
    if missing:
        return CheckResult(
            exercise,
            False,
            f"{', '.join(missing)} is not defined.",
            "",
            (
                "Run the cell that defines it. If that cell shows an error (a SyntaxError, say), fix it first.",
                f"If you deleted or renamed it, restore the name and signature from the starter notebook: the check "
                f"looks for {', '.join(missing)}.",
            ),
            "NameError",
        )
    try:
        return check(*(namespace[n] for n in names), time_limit=time_limit)
    except Exception as e:  # a bug in the check, or an object so odd that the check trips over it
        return CheckResult(
            exercise,
            False,
            f"The check could not run: {type(e).__name__}: {e}",
            "",
            (
                "Make sure the object has the signature of the starter code; if it does, tell your "
                "teacher: this may be a bug in the check.",
            ),
            "CheckError",
        )


def check_assignment(
    assignment: str, namespace: dict[str, Any], *, emit_json: bool = False, time_limit: float = DEFAULT_TIME_LIMIT
) -> list[CheckResult]:
    """Run every check of ``assignment`` (e.g. ``"03_attention"``) on ``namespace``; print a summary.

    With ``emit_json`` each result is also printed as one line ``RESULT_MARKER + json`` for the grader.
    """
    results = []
    for ex in get_assignment(assignment).exercises:
        r = grade_exercise(ex.check, namespace, ex.names, time_limit)
        results.append(r)
        if emit_json:
            print(RESULT_MARKER + json.dumps(r.to_dict(), ensure_ascii=False))
    if not emit_json:
        width = max(len(r.exercise) for r in results)
        print(f"{assignment}: {sum(r.passed for r in results)}/{len(results)} exercises pass")
        for r in results:
            print(f"  {'PASS' if r.passed else 'FAIL'}  {r.exercise:<{width}}  {r.summary}")
    return results

"""Record a check in the learner's kernel, replay it in the grader: the verdict never comes from the kernel.

A check talks to the learner's code only through :func:`~.core._call`. The grader's kernel runs each check in
*record* mode (:func:`record_exercise`): every ``_call`` runs the learner's code as usual, and what came back (a
value, an exception, a time-out) is written down as plain data, with a fingerprint of the call (a hash of its
arguments, the learner's module included). The kernel prints only that recording. The grader process then runs the
same check in *replay* mode (:func:`replay_exercise`): ``_call`` hands back the recorded outcomes in order and never
runs learner code, so the comparisons with the reference, the catalogue of mistakes and the hints all run where the
learner cannot reach them. A recording whose calls do not match what the check asks (another order, other
arguments, too many or too few calls) fails the exercise.

What is recorded is data only, parsed defensively and never unpickled: ``None``, ``bool``, ``int``, ``float``,
``str``, lists, tuples and dicts of them, tensors (dtype, shape and exact bytes, in base64; bfloat16 included) and
modules (a snapshot: the class the check may rebuild, simple attributes, parameters, buffers, children). In replay a
module comes back as a *shadow*: children of ``torch.nn`` and library classes are rebuilt as those classes (so
that a check can run ``m.self_attn(...)`` or read ``m.w_q.weight``), other classes as a ``nn.Module`` holding the
same tensors whose ``forward`` refuses to run. Any other object comes back as an opaque stand-in with the same type
name, which no check accepts.

What this does not stop: a learner who controls the kernel can print any recording, so a forged one can carry the
right *outputs* for the check's inputs (which is as hard as calling the reference, and the grader flags calls of
the reference it can see in the source). It cannot make a wrong output pass, or a stub's verdict count.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from .core import _CHECKS, CheckResult, _Fail, _Outcome, _tape, grade_exercise

__all__ = ["RecordingError", "record_exercise", "replay_exercise", "last_recorded_value", "MAX_RECORDING_CHARS"]

FORMAT = 1
MAX_RECORDING_CHARS = 8_000_000  # one exercise's recording: the checks' inputs are tiny, a correct one is ~50 kB
_MAX_DEPTH = 24
_MAX_ITEMS = 200_000  # values in one recording, all nesting levels together
_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float64,
        torch.float32,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int32,
        torch.int16,
        torch.int8,
        torch.uint8,
        torch.bool,
        torch.complex64,
        torch.complex128,
    )
}
# bytes of a tensor are read through an integer view of the same width (bfloat16 has no numpy twin)
_VIEW = {torch.bfloat16: torch.int16, torch.float16: torch.int16}
_TRUSTED = ("torch.nn.", "transformer_lib.")  # classes a shadow may rebuild (the classroom package excluded)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.<>]{0,99}")


class RecordingError(ValueError):
    """A recording that is not what :func:`record_exercise` writes (bad JSON, wrong types, too large, ...)."""


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
# Values -> plain data (in the kernel)
# --------------------------------------------------------------------------------------------------------------
def _encode_tensor(t: Tensor) -> dict[str, Any]:
    if t.dtype not in _DTYPES.values() or t.numel() * t.element_size() > MAX_RECORDING_CHARS // 2:
        return {"t": "opaque", "type": f"Tensor[{t.dtype}, {tuple(t.shape)}]"}  # stands for no tensor a check takes
    t = t.detach().cpu().contiguous()
    data = t.view(_VIEW.get(t.dtype, t.dtype)).numpy().tobytes()
    return {
        "t": "tensor",
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "data": base64.b64encode(data).decode("ascii"),
    }


def _trusted_class(cls: type) -> type | None:
    """The first class in ``cls``'s MRO that a shadow may rebuild: from torch.nn or the library, not nn.Module."""
    for c in cls.__mro__:
        if c is nn.Module or not issubclass(c, nn.Module):
            continue
        if c.__module__.startswith(_TRUSTED) and not c.__module__.startswith("transformer_lib.classroom"):
            return c
    return None


def _simple(v: Any) -> bool:
    if v is None or type(v) in (bool, int, float, str):
        return True
    return type(v) in (tuple, list) and len(v) <= 16 and all(type(x) in (bool, int, float, str) for x in v)


def _encode_module(m: nn.Module, depth: int) -> dict[str, Any]:
    trusted = _trusted_class(type(m))
    attrs = {k: _encode(v, depth + 1) for k, v in vars(m).items() if not k.startswith("_") and _simple(v)}
    return {
        "t": "module",
        "name": type(m).__name__,
        "cls": None if trusted is None else f"{trusted.__module__}:{trusted.__qualname__}",
        "attrs": attrs,
        "params": {k: None if v is None else _encode_tensor(v) for k, v in m._parameters.items()},
        "grad": sorted(k for k, v in m._parameters.items() if v is not None and v.requires_grad),
        "buffers": {k: None if v is None else _encode_tensor(v) for k, v in m._buffers.items()},
        "transient": sorted(m._non_persistent_buffers_set),
        "children": {k: None if c is None else _encode_module(c, depth + 1) for k, c in m._modules.items()},
    }


def _encode(x: Any, depth: int = 0) -> Any:
    if depth > _MAX_DEPTH:
        return {"t": "opaque", "type": "too deep"}
    if x is None or type(x) in (bool, int, str):
        return x
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, float):
        return {"t": "float", "v": float(x).hex()}
    if isinstance(x, int):  # an int subclass counts as its value (a check asks isinstance(t, int))
        return int(x)
    if isinstance(x, str):
        return str(x)
    if isinstance(x, Tensor):
        return _encode_tensor(x)
    if isinstance(x, nn.Module):
        return _encode_module(x, depth)
    if isinstance(x, (list, tuple)):
        return {"t": "tuple" if isinstance(x, tuple) else "list", "v": [_encode(v, depth + 1) for v in x]}
    if isinstance(x, dict):
        return {"t": "dict", "v": [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in x.items()]}
    return {"t": "opaque", "type": type(x).__name__[:100]}


# --------------------------------------------------------------------------------------------------------------
# Plain data -> values (in the grader): strict, bounded, no code runs
# --------------------------------------------------------------------------------------------------------------
class _Opaque:
    """Stands for an object the recording could not carry (a numpy array, a generator, ...)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class _Shadow(nn.Module):
    """A learner's module in the grader: its tensors and children, and a forward that refuses to run."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the learner's own forward cannot run in the grader")


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise RecordingError(what)


@dataclass
class _Decoder:
    items: int = 0

    def value(self, x: Any, depth: int = 0) -> Any:
        self.items += 1
        _need(self.items <= _MAX_ITEMS and depth <= _MAX_DEPTH, "the recording is too large or too deeply nested")
        if x is None or type(x) in (bool, int, str):
            return x
        _need(type(x) is dict and type(x.get("t")) is str, f"unexpected value of type {type(x).__name__}")
        kind = x["t"]
        if kind == "float":
            _need(type(x.get("v")) is str and len(x["v"]) < 40, "a float is not in hex")
            try:
                return float.fromhex(x["v"])
            except ValueError:
                raise RecordingError("a float is not in hex") from None
        if kind in ("list", "tuple"):
            _need(type(x.get("v")) is list, f"a {kind} without items")
            items = [self.value(v, depth + 1) for v in x["v"]]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            _need(type(x.get("v")) is list and all(type(p) is list and len(p) == 2 for p in x["v"]), "a bad dict")
            out = {}
            for k, v in x["v"]:
                key = self.value(k, depth + 1)
                _need(key is None or type(key) in (bool, int, float, str, tuple), "a dict key that is no key")
                out[key] = self.value(v, depth + 1)
            return out
        if kind == "tensor":
            return self.tensor(x)
        if kind == "module":
            return self.module(x, depth)
        if kind == "opaque":
            name = x.get("type")
            _need(type(name) is str, "an opaque value without a type name")
            return type(name[:100] or "object", (_Opaque,), {})()
        raise RecordingError(f"unknown value kind {kind[:40]!r}")

    def tensor(self, x: Any) -> Tensor:
        _need(type(x) is dict and x.get("t") == "tensor", "a tensor was expected")
        dtype = _DTYPES.get(x.get("dtype")) if type(x.get("dtype")) is str else None
        shape = x.get("shape")
        if dtype is None:
            raise RecordingError("a tensor of an unknown dtype")
        _need(
            type(shape) is list and len(shape) <= 8 and all(type(s) is int and 0 <= s for s in shape),
            "a tensor with a bad shape",
        )
        _need(type(x.get("data")) is str, "a tensor without data")
        try:
            data = base64.b64decode(x["data"], validate=True)
        except ValueError:
            raise RecordingError("a tensor's data is not base64") from None
        numel = math.prod(shape)
        width = torch.empty((), dtype=dtype).element_size()
        _need(len(data) == numel * width, "a tensor's data does not fit its shape and dtype")
        flat = (
            torch.frombuffer(bytearray(data), dtype=_VIEW.get(dtype, dtype))
            if data
            else torch.empty(0, dtype=_VIEW.get(dtype, dtype))
        )
        return flat.view(dtype).reshape(shape).clone()

    def module(self, x: dict, depth: int) -> nn.Module:
        for key in ("attrs", "params", "buffers", "children"):
            _need(type(x.get(key)) is dict, f"a module without {key}")
        _need(type(x.get("name")) is str and _NAME.fullmatch(x["name"]) is not None, "a module with a bad name")
        cls = _resolve(x.get("cls"))
        m = cls.__new__(cls)
        nn.Module.__init__(m)
        for k, v in x["attrs"].items():
            value = self.value(v, depth + 1)
            _need(_NAME.fullmatch(k) is not None and _simple(value), "a module attribute that is not simple")
            object.__setattr__(m, k, value)
        grad = set(x.get("grad", []))
        for k, v in x["params"].items():
            _need(_NAME.fullmatch(k) is not None, "a bad parameter name")
            m.register_parameter(
                k,
                None
                if v is None
                else nn.Parameter(self.tensor(v), requires_grad=k in grad and self.tensor(v).is_floating_point()),
            )
        transient = set(x.get("transient", []))
        for k, v in x["buffers"].items():
            _need(_NAME.fullmatch(k) is not None, "a bad buffer name")
            m.register_buffer(k, None if v is None else self.tensor(v), persistent=k not in transient)
        for k, v in x["children"].items():
            _need(_NAME.fullmatch(k) is not None, "a bad child name")
            m.add_module(k, None if v is None else self.module(v, depth + 1))
        return m


def _resolve(path: Any) -> type[nn.Module]:
    """The class a snapshot names, only from torch.nn or the library (never the classroom); else _Shadow."""
    if path is None:
        return _Shadow
    _need(type(path) is str and re.fullmatch(r"[\w.]+:[\w.]+", path) is not None, "a bad class name")
    module, qualname = path.split(":")
    if not module.startswith(_TRUSTED) or module.startswith("transformer_lib.classroom"):
        return _Shadow
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return _Shadow
    return obj if isinstance(obj, type) and issubclass(obj, nn.Module) and obj is not nn.Module else _Shadow


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


def _parse_calls(calls: Any) -> list[dict[str, Any]]:
    decoder = _Decoder()
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
    check_name: str, namespace: dict[str, Any], names: list[str] | tuple[str, ...], time_limit: float
) -> str:
    """In the kernel: run ``check_name`` on ``names`` of ``namespace``, recording what the learner's code returned.
    Returns the recording as one line of JSON (the kernel's verdict is not part of it)."""
    return _record(check_name, namespace, names, time_limit)[1]


def _record(
    check_name: str, namespace: dict[str, Any], names: list[str] | tuple[str, ...], time_limit: float
) -> tuple[CheckResult, str]:
    """The live result (what a notebook shows) and the recording."""
    tape = _Tape(replaying=False)
    with _using(tape):
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
    check_name: str, names: list[str] | tuple[str, ...], recording: str, time_limit: float
) -> CheckResult:
    """In the grader: the result of ``check_name``, computed here from the kernel's ``recording``.

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
    calls = _parse_calls(data.get("calls"))
    if check_name not in _CHECKS:
        return grade_exercise(check_name, {}, names, time_limit)
    namespace = {n: type(n, (_Opaque,), {})() for n in names if n not in missing}
    tape = _Tape(replaying=True, calls=calls)
    with _using(tape):
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

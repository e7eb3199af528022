"""What a recording carries: the learner's values as plain data in the kernel, and back in the grader.

The kernel writes what the learner's code returned (:func:`_encode`): ``None``, ``bool``, ``int``, ``float``,
``str``, lists, tuples and dicts of them, tensors (dtype, shape and exact bytes, in base64; bfloat16 included) and
modules (a snapshot: the first ``torch.nn`` or library class in the module's MRO, simple attributes, parameters,
buffers, children). The grader reads it back with a :class:`_Decoder`: strictly, never unpickling, with a cap on
the values, the nesting and the elements of every tensor and number it rebuilds.

A module comes back as one of the classes *the check names* (its allow-list, ``@_check(..., replays=...)``), so
that a check can run ``m.self_attn(...)`` or read ``m.w_q.weight``; any other class, whatever the recording says
(``torch.nn.Upsample`` included), comes back as a :class:`_Shadow` whose forward refuses to run. No class is ever
imported by name: code the grader runs on a learner's module is library code of a class the check expects, on
tensors of bounded size. :func:`rebuilt_as` tells a check, in the kernel and in the grader alike, what a module
comes back as, so that a check can fail a module of another class with a note rather than run it.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

MAX_RECORDING_CHARS = 8_000_000  # one exercise's recording: the checks' inputs are tiny, a correct one is ~50 kB
MAX_ELEMENTS = 1 << 20  # elements of any tensor or shape the grader rebuilds, and size of any number in a module
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
_TRUSTED = ("torch.nn.", "transformer_lib.")  # where the class a snapshot names comes from (not the classroom)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.<>]{0,99}")
_CHILD = re.compile(r"\w{1,100}", re.ASCII)  # a child's name: nn.Sequential's are "0", "1", ...
_PATH = re.compile(r"[\w.]{1,100}:[\w.]{1,100}", re.ASCII)  # module:qualname


class RecordingError(ValueError):
    """A recording that is not what :func:`~.record.record_exercise` writes (bad JSON, wrong types, too large)."""


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
    """The first class in ``cls``'s MRO from torch.nn or the library (not nn.Module, not the classroom)."""
    for c in cls.__mro__:
        if c is nn.Module or not issubclass(c, nn.Module):
            continue
        if c.__module__.startswith(_TRUSTED) and not c.__module__.startswith("transformer_lib.classroom"):
            return c
    return None


def class_path(cls: type) -> str:
    """'torch.nn.modules.linear:Linear': how a recording names a class."""
    return f"{cls.__module__}:{cls.__qualname__}"


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
        "cls": None if trusted is None else class_path(trusted),
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
# Plain data -> values (in the grader): strict, bounded, no code of the learner's choosing runs
# --------------------------------------------------------------------------------------------------------------
class _Opaque:
    """Stands for an object the recording could not carry (a numpy array, a generator, ...)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class _Shadow(nn.Module):
    """A learner's module in the grader: its tensors and children, and a forward that refuses to run."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the learner's own forward cannot run in the grader")


def rebuilt_as(m: Any, allowed: Iterable[type]) -> type | None:
    """The class of ``allowed`` that module ``m`` is rebuilt as in the grader, or None (a shadow, not a module).

    The same answer for the learner's object in the kernel and for what the grader rebuilt from its recording."""
    if not isinstance(m, nn.Module) or isinstance(m, _Shadow):
        return None
    c = _trusted_class(type(m))
    return c if c in tuple(allowed) else None


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise RecordingError(what)


def _small(v: Any) -> bool:
    """A module's attribute the library may compute with: numbers, and products of them, up to MAX_ELEMENTS."""
    numbers = [x for x in (v if isinstance(v, (tuple, list)) else [v]) if type(x) in (int, float)]
    return (
        all(abs(x) <= MAX_ELEMENTS for x in numbers)
        and math.prod(max(abs(x), 1) for x in numbers if type(x) is int) <= MAX_ELEMENTS
    )


@dataclass
class _Decoder:
    """Reads a recording's values; ``allowed`` are the module classes the check names (all others: a shadow)."""

    allowed: tuple[type, ...] = ()
    items: int = 0
    classes: dict[str, type[nn.Module]] = field(init=False)

    def __post_init__(self) -> None:
        self.classes = {class_path(c): c for c in self.allowed if issubclass(c, nn.Module) and c is not nn.Module}

    def count(self, depth: int) -> None:
        """One more value, tensor or module: the recording's size and nesting are bounded."""
        self.items += 1
        _need(self.items <= _MAX_ITEMS and depth <= _MAX_DEPTH, "the recording is too large or too deeply nested")

    def value(self, x: Any, depth: int = 0) -> Any:
        self.count(depth)
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
        self.count(0)
        _need(type(x) is dict and x.get("t") == "tensor", "a tensor was expected")
        dtype = _DTYPES.get(x.get("dtype")) if type(x.get("dtype")) is str else None
        shape = x.get("shape")
        if dtype is None:
            raise RecordingError("a tensor of an unknown dtype")
        _need(
            type(shape) is list and len(shape) <= 8 and all(type(s) is int and 0 <= s for s in shape),
            "a tensor with a bad shape",
        )
        _need(math.prod(max(s, 1) for s in shape) <= MAX_ELEMENTS, f"a tensor larger than {MAX_ELEMENTS} elements")
        _need(type(x.get("data")) is str, "a tensor without data")
        try:
            data = base64.b64decode(x["data"], validate=True)
        except ValueError:
            raise RecordingError("a tensor's data is not base64") from None
        width = torch.empty((), dtype=dtype).element_size()
        _need(len(data) == math.prod(shape) * width, "a tensor's data does not fit its shape and dtype")
        flat = (
            torch.frombuffer(bytearray(data), dtype=_VIEW.get(dtype, dtype))
            if data
            else torch.empty(0, dtype=_VIEW.get(dtype, dtype))
        )
        return flat.view(dtype).reshape(shape).clone()

    def module(self, x: dict, depth: int) -> nn.Module:
        for key in ("attrs", "params", "buffers", "children"):
            _need(type(x.get(key)) is dict, f"a module without {key}")
            self.items += len(x[key])
        self.count(depth)
        _need(type(x.get("name")) is str and _NAME.fullmatch(x["name"]) is not None, "a module with a bad name")
        path: str = x["cls"] if type(x.get("cls")) is str else ""
        cls = self.classes.get(path, _Shadow)
        m = cls.__new__(cls)
        nn.Module.__init__(m)
        if cls is _Shadow:  # what the kernel saw, for a check's note (modules.class_name)
            object.__setattr__(m, "_recorded_cls", path if _PATH.fullmatch(path) else None)
            object.__setattr__(m, "_recorded_name", x["name"])
        for k, v in x["attrs"].items():
            value = self.value(v, depth + 1)
            _need(_NAME.fullmatch(k) is not None and _simple(value), "a module attribute that is not simple")
            _need(cls is _Shadow or _small(value), f"a module attribute {k[:40]} larger than {MAX_ELEMENTS}")
            object.__setattr__(m, k, value)
        grad, transient = x.get("grad", []), x.get("transient", [])
        _need(all(type(a) is list and all(type(k) is str for k in a) for a in (grad, transient)), "bad name lists")
        for k, v in x["params"].items():
            _need(_NAME.fullmatch(k) is not None, "a bad parameter name")
            t = None if v is None else self.tensor(v)
            m.register_parameter(
                k, None if t is None else nn.Parameter(t, requires_grad=k in grad and t.is_floating_point())
            )
        for k, v in x["buffers"].items():
            _need(_NAME.fullmatch(k) is not None, "a bad buffer name")
            m.register_buffer(k, None if v is None else self.tensor(v), persistent=k not in transient)
        for k, v in x["children"].items():
            _need(_CHILD.fullmatch(k) is not None, "a bad child name")
            m.add_module(k, None if v is None else self.module(v, depth + 1))
        return m

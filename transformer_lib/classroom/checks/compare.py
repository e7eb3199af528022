"""Comparing the learner's tensors with the reference, describing them, and matching plausible mistakes.

Tolerances depend on the dtype (float64 is exact up to the order of operations, bfloat16 keeps 8 bits of
mantissa). ``_row_diff`` shows the first row that differs, ``_describe`` the inputs of a case, and ``_match``
finds the first variant of the reference (a catalogue of plausible mistakes) that reproduces the learner's numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .core import _Fail

# (rtol, atol) per dtype: float64 is exact up to the order of operations; bfloat16 keeps 8 bits of mantissa.
_TOLERANCES = {torch.float64: (1e-7, 1e-9), torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-2),
               torch.bfloat16: (5e-2, 5e-2)}


def _tol(dtype: torch.dtype) -> tuple[float, float]:
    return _TOLERANCES.get(dtype, _TOLERANCES[torch.float32])


def _close(actual: Tensor, expected: Tensor, dtype: torch.dtype = torch.float64) -> bool:
    """Same shape and values within the tolerance of ``dtype``; NaN matches NaN (a mistake may produce NaN)."""
    if not isinstance(actual, Tensor) or actual.shape != expected.shape:
        return False
    if expected.dtype == torch.bool or not expected.is_floating_point():
        return bool(torch.equal(actual.cpu().long(), expected.cpu().long()))
    rtol, atol = _tol(dtype)
    return bool(torch.allclose(actual.detach().cpu().double(), expected.detach().cpu().double(), rtol, atol,
                               equal_nan=True))


def _fmt(x: Tensor) -> str:
    if x.dtype == torch.bool:
        return "[" + ", ".join("T" if v else "F" for v in x.tolist()) + "]"
    if not x.is_floating_point():
        return str(x.tolist())
    return "[" + ", ".join(f"{v:.4f}" for v in x.double().tolist()) + "]"


def _row_diff(name: str, actual: Tensor, expected: Tensor, dtype: torch.dtype = torch.float64) -> str:
    """'Expected name[i, j, :] = [...] / Got ...' at the first row (last axis) that differs."""
    a, e = actual.detach().cpu(), expected.detach().cpu()
    if e.dim() == 0:
        return f"Expected {name} = {e.item()}\nGot      {name} = {a.item()}"
    if e.is_floating_point():
        rtol, atol = _tol(dtype)
        a64, e64 = a.double(), e.double()
        bad = ~((a64 - e64).abs() <= atol + rtol * e64.abs()) & ~(a64.isnan() & e64.isnan())
    else:
        bad = a.long() != e.long()
    idx = bad.reshape(-1, e.shape[-1]).any(-1).nonzero()
    row = int(idx[0]) if len(idx) else 0
    index = [int(i) for i in torch.unravel_index(torch.tensor(row), e.shape[:-1])] if e.dim() > 1 else []
    where = f"{name}[{', '.join(map(str, index + [':']))}]" if e.dim() > 1 else name
    cut = slice(0, 8)
    return (f"Expected {where} = {_fmt(e.reshape(-1, e.shape[-1])[row][cut])}\n"
            f"Got      {where} = {_fmt(a.reshape(-1, e.shape[-1])[row][cut])}")


def _describe(**tensors: Any) -> str:
    """'q (2, 3, 8) float64, mask (3, 3) = [[T, F, F], ...]': shapes, dtypes and small masks spelled out."""
    parts = []
    for name, x in tensors.items():
        if isinstance(x, Tensor):
            text = f"{name} {tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"
            if (x.dtype == torch.bool or not x.is_floating_point()) and x.numel() <= 40:
                text += f" = {x.tolist()}".replace("True", "T").replace("False", "F")
            parts.append(text)
        elif x is not None:
            parts.append(f"{name} = {x!r}")
    return ", ".join(parts)


def _tensor(x: Any, what: str, inputs: str) -> Tensor:
    if isinstance(x, Tensor):
        return x.detach()
    hint = ("Return a torch.Tensor: build it with torch functions (torch.arange, torch.sin, ...), or convert at "
            "the end with torch.as_tensor(...).",)
    raise _Fail(f"{what}: expected a torch.Tensor, got a {type(x).__name__}.", f"Input: {inputs}", hint)


def _expect_shape(what: str, x: Tensor, shape: tuple[int, ...], inputs: str, hints: tuple[str, ...] = ()) -> None:
    if tuple(x.shape) != tuple(shape):
        raise _Fail(f"{what} has the wrong shape.",
                    f"Input: {inputs}\nExpected shape {tuple(shape)}\nGot      shape {tuple(x.shape)}",
                    hints or ("Compare each axis with the Shape: section of the docstring.",))


def _expect_dtype(what: str, x: Tensor, dtype: torch.dtype, inputs: str) -> None:
    if x.dtype != dtype:
        raise _Fail(f"{what} has dtype {x.dtype}, expected {dtype} (the dtype of the inputs).", f"Input: {inputs}",
                    ("Do not fix a dtype inside your function: a tensor made with torch.tensor(...) or "
                     "torch.ones(...) is float32 by default. Use plain Python numbers, or dtype=x.dtype.",))


def _match(actual: dict[str, Tensor], variants: list[tuple[Callable[[], dict], tuple[str, ...]]],
           dtype: torch.dtype) -> tuple[str, ...] | None:
    """The hints of the first plausible mistake whose output reproduces ``actual``, or None."""
    for make, hints in variants:
        try:
            expected = make()
        except Exception:
            continue  # a variant that cannot run on this input cannot be the explanation
        keys = [k for k in actual if k in expected]
        if keys and all(_close(actual[k], expected[k], dtype) for k in keys):
            return hints
    return None

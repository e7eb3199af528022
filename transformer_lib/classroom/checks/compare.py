"""Comparing the learner's tensors with the reference, describing them, and matching plausible mistakes.

Tolerances depend on the dtype (float64 is exact up to the order of operations, bfloat16 keeps 8 bits of
mantissa). ``_row_diff`` shows the first row that differs, ``_describe`` the inputs of a case, and ``_match``
finds the first variant of the reference (a catalogue of plausible mistakes) that reproduces the learner's numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .core import _Fail

# (rtol, atol) per dtype of the inputs. float64 inputs still admit float32 rounding: a correct answer may use a
# float32 constant (torch.tensor(d_k) is float32 by default; 1 / its square root is off by ~1e-8, relative), which
# the softmax spreads to ~1e-7 of each weight. Every mistake of the catalogues moves the numbers by 1e-2 or more.
# float32 adds its own rounding through several operations; bfloat16 keeps 8 bits of mantissa.
_TOLERANCES = {
    torch.float64: (1e-5, 1e-6),
    torch.float32: (1e-4, 1e-5),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}


def _tol(dtype: torch.dtype) -> tuple[float, float]:
    return _TOLERANCES.get(dtype, _TOLERANCES[torch.float32])


def _close(actual: Tensor, expected: Tensor, dtype: torch.dtype = torch.float64) -> bool:
    """Same shape and values within the tolerance of ``dtype``; NaN matches NaN (a mistake may produce NaN)."""
    if not isinstance(actual, Tensor) or actual.shape != expected.shape:
        return False
    if expected.dtype == torch.bool or not expected.is_floating_point():
        return bool(torch.equal(actual.cpu().long(), expected.cpu().long()))
    rtol, atol = _tol(dtype)
    return bool(
        torch.allclose(actual.detach().cpu().double(), expected.detach().cpu().double(), rtol, atol, equal_nan=True)
    )


def _fmt(x: Tensor, decimals: int = 4) -> str:
    if x.dtype == torch.bool:
        return "[" + ", ".join("T" if v else "F" for v in x.tolist()) + "]"
    if not x.is_floating_point():
        return str(x.tolist())
    return "[" + ", ".join(f"{v:.{decimals}f}" for v in x.double().tolist()) + "]"


def _decimals(actual: Tensor, expected: Tensor) -> int:
    """Enough decimals (at least 4) that the largest finite difference between two rows shows in print."""
    diff = (actual.double() - expected.double()).abs()
    diff = diff[diff.isfinite() & (diff > 0)]
    if diff.numel() == 0:
        return 4
    return min(max(4, 1 - math.floor(math.log10(float(diff.max())))), 17)


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
    e_row, a_row = e.reshape(-1, e.shape[-1])[row], a.reshape(-1, e.shape[-1])[row]
    d = _decimals(a_row, e_row)
    text = f"Expected {where} = {_fmt(e_row[cut], d)}\nGot      {where} = {_fmt(a_row[cut], d)}"
    if e.is_floating_point() and d > 4:  # a small difference: say how small, and what is allowed
        largest = float((a_row.double() - e_row.double()).abs().nan_to_num(0.0).max())
        text += f"\nLargest difference {largest:.1e}; allowed: {atol:g} + {rtol:g} x |expected|"
    return text


def _differ(name: str) -> str:
    """'The output differs from the reference.' or 'The weights differ ...': the verb agrees with ``name``."""
    return f"The {name} {'differ' if name.endswith('s') else 'differs'} from the reference."


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
    hint = (
        "Return a torch.Tensor: build it with torch functions (torch.arange, torch.sin, ...), or convert at "
        "the end with torch.as_tensor(...).",
    )
    raise _Fail(f"{what}: expected a torch.Tensor, got a {type(x).__name__}.", f"Input: {inputs}", hint)


def _expect_shape(what: str, x: Tensor, shape: tuple[int, ...], inputs: str, hints: tuple[str, ...] = ()) -> None:
    if tuple(x.shape) != tuple(shape):
        raise _Fail(
            f"{what} has the wrong shape.",
            f"Input: {inputs}\nExpected shape {tuple(shape)}\nGot      shape {tuple(x.shape)}",
            hints or ("Compare each axis with the Shape: section of the docstring.",),
        )


def _expect_dtype(what: str, x: Tensor, dtype: torch.dtype, inputs: str) -> None:
    if x.dtype != dtype:
        raise _Fail(
            f"{what} has dtype {x.dtype}, expected {dtype} (the dtype of the inputs).",
            f"Input: {inputs}",
            (
                "Do not fix a dtype inside your function: a tensor made with torch.tensor(...) or "
                "torch.ones(...) is float32 by default. Use plain Python numbers, or dtype=x.dtype.",
            ),
        )


def _match(
    actual: dict[str, Tensor], variants: list[tuple[Callable[[], dict], tuple[str, ...]]], dtype: torch.dtype
) -> tuple[str, ...] | None:
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

"""Checks of assignment 2, the sinusoidal positional encoding, with its catalogue of plausible mistakes."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ...embeddings import sinusoidal_encoding
from .compare import _TOLERANCES, _close, _expect_shape, _match, _row_diff, _tensor
from .core import _call, _check, _Fail
from .hidden import _and_random, _random_cases, _size, drawn


@_random_cases("check_positional_encoding")
def _random_sizes(g: torch.Generator) -> list[tuple[str, tuple[int, int]]]:
    """Two tables of random size: up to 64 positions, an even width up to 64."""
    return [(f"random case {i + 1}", (_size(g, 1, 64), 2 * _size(g, 1, 32))) for i in range(2)]


def _pe_variant(max_len: int, d_model: int, *, swap: bool = False, start: int = 0, exponent: str = "pair") -> Tensor:
    """The encoding with one deliberate mistake (see check_positional_encoding)."""
    pos = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]  # (T, 1)
    col = torch.arange(d_model, dtype=torch.float64)  # (C,)
    two_i = {"pair": col - col % 2, "column": col, "double": 2 * col, "half": (col - col % 2) / 2}[exponent]
    angle = pos / 10000 ** (two_i / d_model)  # (T, C)
    even = col % 2 == 0
    if swap:
        even = ~even
    return torch.where(even, angle.sin(), angle.cos())


@_check("positional_encoding")
def check_positional_encoding(positional_encoding: Callable) -> str:
    """Check ``positional_encoding(max_len, d_model) -> (max_len, d_model)`` against
    :func:`~transformer_lib.embeddings.sinusoidal_encoding` (sin in even columns, cos in odd ones)."""
    named, random = [(6, 8), (1, 2), (50, 16)], drawn("check_positional_encoding")
    for label, (max_len, d_model) in [("", c) for c in named] + random:
        inputs = (f"{label}: " if label else "") + f"max_len = {max_len}, d_model = {d_model}"
        got = _tensor(_call(positional_encoding, max_len, d_model, inputs=inputs), "The encoding", inputs)
        want = sinusoidal_encoding(max_len, d_model, dtype=torch.float64)
        if not got.is_floating_point():
            raise _Fail(
                f"The encoding has dtype {got.dtype}; expected floating point numbers.",
                f"Input: {inputs}",
                ("Build positions with torch.arange(max_len, dtype=torch.float32) so the division is not integer.",),
            )
        _expect_shape(
            "The encoding",
            got,
            (max_len, d_model),
            inputs,
            (
                "One row per position, one column per dimension: (max_len, d_model)."
                + (" Your result is transposed." if tuple(got.shape) == (d_model, max_len) else ""),
            ),
        )
        tolerance = got.dtype if got.dtype in _TOLERANCES else torch.float32  # float32 or float64 are both fine
        if _close(got, want, tolerance):
            continue
        variants = [
            (
                lambda: {"pe": _pe_variant(max_len, d_model, swap=True)},
                ("sin and cos are swapped: even columns (2i) hold sin, odd columns (2i+1) hold cos.",),
            ),
            (
                lambda: {"pe": sinusoidal_encoding(max_len, d_model, interleaved=False, dtype=torch.float64)},
                (
                    "You put all the sines first and all the cosines after; the paper interleaves them: column 2i is "
                    "sin, column 2i+1 is cos, with the same frequency.",
                    "Fill pe[:, 0::2] with the sines and pe[:, 1::2] with the cosines.",
                ),
            ),
            (
                lambda: {"pe": _pe_variant(max_len, d_model, exponent="column")},
                (
                    "Columns 2i and 2i+1 share one frequency, 1 / 10000^(2i/d_model): the cos column uses the exponent "
                    "of the sin column before it, not its own index.",
                ),
            ),
            (
                lambda: {"pe": _pe_variant(max_len, d_model, exponent="double")},
                (
                    "The exponent is doubled: for columns 2i and 2i+1 it is 2i/d_model, where 2i is the even column "
                    "index itself (torch.arange(0, d_model, 2)), so do not multiply it by 2 again.",
                ),
            ),
            (
                lambda: {"pe": _pe_variant(max_len, d_model, exponent="half")},
                (
                    "The exponent is halved: the pair of columns (2i, 2i+1) uses 10000^(2i/d_model), with 2i (not i) "
                    "on top.",
                ),
            ),
            (
                lambda: {"pe": _pe_variant(max_len, d_model, start=1)},
                ("Positions start at 0: row 0 must be sin(0) = 0 in even columns and cos(0) = 1 in odd ones.",),
            ),
        ]
        hints = _match({"pe": got}, variants, tolerance) or (
            "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) and PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)).",
            "Check row 0 first (it must be 0, 1, 0, 1, ...), then one row by hand with a calculator.",
        )
        raise _Fail(
            "The encoding differs from the paper's formula.",
            f"Input: {inputs}\n{_row_diff('pe', got, want, tolerance)}",
            hints,
        )
    return _and_random(
        f"All {len(named)} cases match the reference (including max_len = 1 and a longer table).", random
    )

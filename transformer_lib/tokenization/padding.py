"""Batching: one right-padding helper for every list of id sequences in the library (chapter 2)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from ..validation import check_int, check_positive
from .vocab import PAD_ID

__all__ = ["pad_batch"]


def pad_batch(
    sequences: Sequence[Sequence[int]],
    pad_id: int = PAD_ID,
    max_len: int | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Stack id sequences of different lengths into one tensor, padding on the right with ``pad_id``.

    Sequences longer than ``max_len`` are cut to ``max_len`` (an ``<eos>`` at the end is lost).

    Shape:
        output: ``(B, T)`` int64, ``B = len(sequences)``, ``T = min(longest sequence, max_len)``.
    """
    if isinstance(sequences, (str, bytes)):
        raise TypeError(f"sequences: expected a list of id lists, got {type(sequences).__name__}")
    check_int("pad_id", pad_id)
    if max_len is not None:
        check_positive("max_len", max_len)
    rows: list[list[int]] = []
    for i, seq in enumerate(sequences):
        seq = seq.tolist() if isinstance(seq, torch.Tensor) else seq
        if isinstance(seq, (str, bytes)) or not isinstance(seq, Iterable):
            raise TypeError(f"sequences[{i}]: expected a list of int ids, got {type(seq).__name__}")
        row = list(seq)
        if not all(type(value) is int for value in row):  # checked one by one (and named) only when needed
            row = [check_int(f"sequences[{i}][{j}]", value) for j, value in enumerate(row)]
        rows.append(row)
    if not rows:
        raise ValueError("sequences: expected at least one sequence, got an empty batch")
    T = max(len(row) for row in rows)
    if max_len is not None:
        T = min(T, max_len)
    padded = [row[:T] + [pad_id] * (T - len(row[:T])) for row in rows]
    return torch.tensor(padded, dtype=torch.long, device=device).reshape(len(rows), T)  # (B, T)

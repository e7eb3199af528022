"""Attention masks, with one convention everywhere: boolean, ``True`` = may attend.

That is the convention of :func:`torch.nn.functional.scaled_dot_product_attention`'s boolean mask. (Beware:
``nn.MultiheadAttention``'s boolean ``attn_mask`` and ``key_padding_mask`` mean the opposite, True = blocked.)

Shapes: ``B`` batch, ``T`` query length, ``S`` key length. Every mask broadcasts to (B, H, T, S).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .tokenization.vocab import PAD_ID
from .validation import check_positive, check_tensor

__all__ = ["padding_mask", "causal_mask", "combine_masks", "decoder_mask"]


def padding_mask(ids: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """Keys that are real tokens (not ``pad_id``) may be attended to.

    Shape:
        ids: (B, S) -> output: (B, 1, 1, S) bool, broadcasting over heads and queries.

    Example:

    >>> padding_mask(torch.tensor([[5, 6, 0]]))  # the last id is <pad> (0): no query may look at it
    tensor([[[[ True,  True, False]]]])
    """
    check_tensor("ids", ids, ndim=2, dtype="int")
    return (ids != pad_id)[:, None, None, :]  # (B, 1, 1, S)


def causal_mask(size: int, device: torch.device | str | None = None) -> Tensor:
    """Position t may attend to positions <= t only (the look-ahead mask of §3.2.3).

    Shape:
        output: (size, size) bool, lower-triangular including the diagonal.

    Example:

    >>> causal_mask(3)  # row i: query i sees keys 0..i
    tensor([[ True, False, False],
            [ True,  True, False],
            [ True,  True,  True]])
    """
    check_positive("size", size)
    return torch.ones(size, size, dtype=torch.bool, device=device).tril()  # (T, T)


def combine_masks(*masks: Tensor | None) -> Tensor | None:
    """A position may be attended to only if every mask allows it (logical AND, with broadcasting).

    ``None`` entries are skipped; returns ``None`` when all are ``None``.

    Shape:
        masks: broadcast together, e.g. (B, 1, 1, S) and (T, S) -> (B, 1, T, S)
    """
    out: Tensor | None = None
    for i, m in enumerate(masks):
        if m is None:
            continue
        check_tensor(f"masks[{i}]", m, dtype=torch.bool)
        out = m if out is None else out & m
    return out


def decoder_mask(ids: Tensor, pad_id: int = PAD_ID) -> Tensor:
    """The decoder's self-attention mask: causal AND padding (a query sees earlier real tokens only).

    Shape:
        ids: (B, T) -> output: (B, 1, T, T) bool
    """
    check_tensor("ids", ids, ndim=2, dtype="int")
    return causal_mask(ids.shape[1], ids.device) & padding_mask(ids, pad_id)  # combine_masks of the two: (B, 1, T, T)

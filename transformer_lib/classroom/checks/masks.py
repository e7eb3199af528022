"""Checks of assignment 4, masks: the padding mask, the causal mask and the decoder's combination of both.

Shape legend: ``B`` batch, ``T`` target length, ``S`` key length.

Each check runs the same loop (call the learner's function on each case, compare with the library, diagnose,
fail); it is written out in each because the diagnosis, the part a learner reads, is different for every mask.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from ...masks import causal_mask, padding_mask
from .attention import _MASK_INVERTED_HINTS
from .compare import _describe, _expect_shape, _row_diff, _tensor
from .core import _call, _check, _Fail
from .hidden import _and_random, _random_cases, _size, drawn


def _bool_result(x: Any, what: str, inputs: str) -> Tensor:
    x = _tensor(x, what, inputs)
    if x.dtype != torch.bool:
        raise _Fail(
            f"{what} has dtype {x.dtype}; expected a boolean tensor (True = may attend).",
            f"Input: {inputs}",
            (
                "A comparison such as ids != pad_id is already boolean; for a triangle use "
                "torch.ones(size, size, dtype=torch.bool).tril().",
            ),
        )
    return x


_IDS = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 4, 5, 6], [4, 0, 0, 0, 0]])


def _random_ids(g: torch.Generator, n: int) -> list[tuple[str, tuple[Tensor, int]]]:
    """``n`` batches of random ids (up to 4 x 9) that end in padding, each with a random pad id in 0..20."""
    cases = []
    for i in range(n):
        B, S, pad_id = _size(g, 1, 4), _size(g, 1, 9), _size(g, 0, 20)
        ids = torch.randint(0, 20, (B, S), generator=g)
        ids = torch.where(ids >= pad_id, ids + 1, ids)  # real tokens are not pad_id
        lengths = torch.randint(1, S + 1, (B,), generator=g)
        ids = ids.masked_fill(torch.arange(S)[None, :] >= lengths[:, None], pad_id)
        cases.append((f"random case {i + 1}", (ids, pad_id)))
    return cases


@_random_cases("check_padding_mask")
def _random_padding(g: torch.Generator) -> list[tuple[str, tuple[Tensor, int]]]:
    return _random_ids(g, 2)


@_random_cases("check_decoder_mask")
def _random_decoder(g: torch.Generator) -> list[tuple[str, tuple[Tensor, int]]]:
    return _random_ids(g, 2)


@_random_cases("check_causal_mask")
def _random_sizes(g: torch.Generator) -> list[tuple[str, int]]:
    return [(f"random case {i + 1}", _size(g, 2, 64)) for i in range(2)]


@_check("padding_mask")
def check_padding_mask(make_padding_mask: Callable) -> str:
    """Check ``make_padding_mask(ids, pad_id) -> (B, 1, 1, S)`` bool against
    :func:`~transformer_lib.masks.padding_mask` (True where the key is a real token)."""
    named = [(_IDS, 0), (torch.tensor([[5, 9, 9], [9, 4, 5]]), 9), (torch.tensor([[4]]), 0)]
    random = drawn("check_padding_mask")
    for label, (ids, pad_id) in [("", c) for c in named] + random:
        inputs = (f"{label}: " if label else "") + _describe(ids=ids, pad_id=pad_id)
        got = _bool_result(_call(make_padding_mask, ids.clone(), pad_id, inputs=inputs), "The mask", inputs)
        want = padding_mask(ids, pad_id)
        B, S = ids.shape
        _expect_shape(
            "The mask",
            got,
            (B, 1, 1, S),
            inputs,
            (
                "Give the mask the shape (B, 1, 1, S): the axes of size 1 broadcast over the heads and the "
                "queries of the (B, H, T, S) scores. mask[:, None, None, :] adds them."
                + (" Yours is (B, S)." if tuple(got.shape) == (B, S) else ""),
            ),
        )
        if torch.equal(got, want):
            continue
        hints = (
            _MASK_INVERTED_HINTS[:1] + ("Real tokens get True and <pad> gets False: ids != pad_id.",)
            if torch.equal(got, ~want)
            else ("Use the pad_id argument, not a fixed 0.",)
            if torch.equal(got, padding_mask(ids, 0))
            else ("The mask is True exactly where ids != pad_id.",)
        )
        raise _Fail("The mask differs from the reference.", f"Input: {inputs}\n{_row_diff('mask', got, want)}", hints)
    return _and_random(
        f"All {len(named)} cases match the reference (another pad_id, a batch of one with length one).", random
    )


@_check("causal_mask")
def check_causal_mask(make_causal_mask: Callable) -> str:
    """Check ``make_causal_mask(size) -> (size, size)`` bool against :func:`~transformer_lib.masks.causal_mask`
    (position t may attend to positions 0..t)."""
    named, random = [4, 1, 6], drawn("check_causal_mask")
    for label, size in [("", n) for n in named] + random:
        inputs = (f"{label}: " if label else "") + f"size = {size}"
        got = _bool_result(_call(make_causal_mask, size, inputs=inputs), "The mask", inputs)
        want = causal_mask(size)
        _expect_shape("The mask", got, (size, size), inputs, ("The causal mask is (size, size): queries x keys.",))
        if torch.equal(got, want):
            continue
        ones = torch.ones(size, size, dtype=torch.bool)
        hints = (
            (
                "Your mask is True where attention is blocked (the strict upper triangle, as in triu(diagonal=1)): "
                "here True means may attend, so mark the allowed positions instead.",
                "Position t may see positions 0..t: torch.ones(size, size, dtype=torch.bool).tril(), which is "
                "the negation of your mask (~mask).",
            )
            if torch.equal(got, ~want)
            else (
                "Your mask lets each position see itself and the positions after it (the upper triangle, triu()): "
                "a causal mask lets it see itself and the positions before it.",
                "Use the lower triangle, diagonal included: torch.ones(size, size, dtype=torch.bool).tril().",
            )
            if torch.equal(got, ones.triu())
            else (
                "The causal mask is off by one: a position may attend to itself, so keep the diagonal.",
                "tril() with the default diagonal=0 keeps it; tril(-1) drops it, and then the first position sees "
                "nothing at all.",
            )
            if torch.equal(got, ones.tril(-1))
            else (
                "The causal mask is off by one: each position sees one future token.",
                "Use tril() with diagonal=0: position t may see 0..t and nothing after.",
            )
            if torch.equal(got, ones.tril(1))
            else ("Position t may attend to positions 0..t only: a lower-triangular boolean matrix.",)
        )
        raise _Fail("The mask differs from the reference.", f"Input: {inputs}\n{_row_diff('mask', got, want)}", hints)
    return _and_random(f"All {len(named)} cases match the reference (including size 1).", random)


@_check("decoder_mask")
def check_decoder_mask(make_decoder_mask: Callable) -> str:
    """Check ``make_decoder_mask(tgt_ids, pad_id) -> (B, 1, T, T)`` bool: causal AND padding of the keys."""
    named = [(_IDS[:, :4], 0), (torch.tensor([[4, 5, 9]]), 9), (torch.tensor([[1]]), 0)]
    random = drawn("check_decoder_mask")
    for label, (ids, pad_id) in [("", c) for c in named] + random:
        inputs = (f"{label}: " if label else "") + _describe(tgt_ids=ids, pad_id=pad_id)
        got = _bool_result(_call(make_decoder_mask, ids.clone(), pad_id, inputs=inputs), "The mask", inputs)
        causal, pad = causal_mask(ids.shape[1]), padding_mask(ids, pad_id)
        want = causal & pad  # (B, 1, T, T)
        B, T = ids.shape
        _expect_shape(
            "The mask",
            got,
            (B, 1, T, T),
            inputs,
            (
                "The decoder mask is (B, 1, T, T): one (T, T) causal pattern per sequence, with an axis of "
                "size 1 that broadcasts over the heads.",
            ),
        )
        if torch.equal(got, want):
            continue
        on_queries = causal & padding_mask(ids, pad_id).transpose(-1, -2)
        hints = (
            ("Combine the masks with AND (&): a key is visible only if both masks allow it.",)
            if torch.equal(got, causal | pad)
            else ("The padding part is missing: pad keys must be blocked too.",)
            if torch.equal(got, causal.expand_as(want))
            else ("The causal part is missing: a position must not see the positions after it.",)
            if torch.equal(got, pad.expand_as(want))
            else ("The padding mask must block pad *keys* (the last axis), not pad queries.",)
            if torch.equal(got, on_queries)
            else ("mask = causal_mask(T) & padding_mask(ids, pad_id); check each part with the two checks above.",)
        )
        raise _Fail("The mask differs from the reference.", f"Input: {inputs}\n{_row_diff('mask', got, want)}", hints)
    return _and_random(
        f"All {len(named)} cases match the reference (another pad_id, a batch of one with length one).", random
    )

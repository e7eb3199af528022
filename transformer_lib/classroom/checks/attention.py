"""Checks of assignment 3, scaled dot-product attention, with its catalogue of plausible mistakes.

The hints about √d_k and masks are shared with the checks of masks and multi-head attention.
Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key length, ``D`` head width.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
from torch import Tensor

from ...attention import scaled_dot_product_attention
from ...masks import causal_mask
from .compare import _close, _describe, _differ, _expect_dtype, _expect_shape, _match, _row_diff, _tensor, _tol
from .core import _call, _check, _Fail, _part, _seeded
from .hidden import _and_random, _keys_mask, _normal, _random_cases, _size, drawn


def _attention_variant(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    *,
    scale: float | None = None,
    dim: int = -1,
    mask_mode: str = "keep",
) -> dict[str, Tensor]:
    """Eager attention in float64 with one deliberate mistake; the defaults give the right answer."""
    q, k, v = q.double(), k.double(), v.double()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale  # (..., T, S)
    if mask is not None and mask_mode == "keep":
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None and mask_mode == "invert":
        scores = scores.masked_fill(mask, float("-inf"))
    elif mask is not None and mask_mode == "zero":
        scores = scores.masked_fill(~mask, 0.0)
    weights = scores.softmax(dim)
    if mask is not None and mask_mode in ("after softmax", "-inf after softmax"):  # too late: rows no longer sum to 1
        weights = weights.masked_fill(~mask, 0.0 if mask_mode == "after softmax" else float("-inf"))
    return {"output": weights @ v, "weights": weights}


def _attention_cases() -> list[tuple[str, dict[str, Tensor | None]]]:
    g = _seeded(0)

    def r(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    pad = torch.tensor([[True, True, True, True], [True, True, True, False]])[:, None, :]  # (B, 1, S)
    return [
        ("no mask", dict(q=r(2, 3, 8), k=r(2, 4, 8), v=r(2, 4, 5), mask=None)),
        ("padding mask", dict(q=r(2, 3, 8), k=r(2, 4, 8), v=r(2, 4, 5), mask=pad)),
        ("causal mask", dict(q=r(2, 4, 8), k=r(2, 4, 8), v=r(2, 4, 5), mask=causal_mask(4))),
        ("heads axis", dict(q=r(2, 2, 3, 8), k=r(2, 2, 4, 8), v=r(2, 2, 4, 5), mask=pad[:, None])),
        ("batch of one, length one", dict(q=r(1, 1, 8), k=r(1, 1, 8), v=r(1, 1, 5), mask=None)),
        ("float32", dict(q=r(2, 3, 8).float(), k=r(2, 3, 8).float(), v=r(2, 3, 4).float(), mask=causal_mask(3))),
        ("bfloat16", dict(q=r(2, 3, 8).bfloat16(), k=r(2, 4, 8).bfloat16(), v=r(2, 4, 4).bfloat16(), mask=pad)),
    ]


@_random_cases("check_attention")
def _random_attention(g: torch.Generator) -> list[tuple[str, dict[str, Tensor | None]]]:
    """Three cases of random sizes (two float64, one float32), each without a mask, with a padding mask or causal."""
    cases: list[tuple[str, dict[str, Tensor | None]]] = []
    for i, dtype in enumerate((torch.float64, torch.float64, torch.float32)):
        # d_k >= 2 and two keys or more, so that a wrong scale or an ignored mask changes the numbers
        B, T, S, D, Dv, kind = _size(g, 1, 3), _size(g, 2, 5), _size(g, 2, 6), _size(g, 2, 8), _size(g, 1, 6), i
        S = max(S, T) if kind == 2 else S  # causal: the last T of S positions query (as with a cache)
        mask = None if kind == 0 else _keys_mask(g, B, S)[:, None, :] if kind == 1 else causal_mask(S)[-T:]
        q, k, v = _normal(g, B, T, D, dtype=dtype), _normal(g, B, S, D, dtype=dtype), _normal(g, B, S, Dv, dtype=dtype)
        cases.append((f"random case {i + 1}", dict(q=q, k=k, v=v, mask=mask)))
    return cases


_SQRT_DK_HINTS = (
    "The scores are √d_k too large: did you divide q·kᵀ by √d_k?",
    "Divide by math.sqrt(d_k) with d_k = q.shape[-1] before the softmax (§3.2.1). Without it the "
    "dot products of random vectors have variance d_k, the softmax saturates and its gradients vanish.",
)
_SOFTMAX_HINTS = (
    "Rows do not sum to 1: did you take the softmax over the last axis?",
    "weights[..., t, :] is a distribution over the keys for query t, so the softmax runs over the "
    "keys: scores.softmax(dim=-1).",
)
_MASK_INVERTED_HINTS = (
    "The mask looks inverted: True means may attend.",
    "Put -inf where the mask is False: scores.masked_fill(~mask, float('-inf')), or masked_fill(mask == False, ...).",
)
_MASK_AFTER_SOFTMAX_HINTS = (
    "The mask is applied after the softmax: mask the scores before it.",
    "Put -inf in the blocked scores before the softmax, scores.masked_fill(~mask, "
    "float('-inf')).softmax(-1): the softmax then gives blocked keys weight 0 and shares "
    "the whole weight among the allowed keys. Zeroing weights afterwards leaves rows that "
    "sum to less than 1.",
)
_MASK_IGNORED_HINTS = (
    "The mask has no effect: keys where the mask is False still get weight.",
    "Before the softmax, set the scores of blocked keys to -inf: scores.masked_fill(~mask, float('-inf')).",
)


_SCALES = ("1/√d_k", "1", "1/d_k", "√d_k", "1/√S")  # the right scale, then the catalogue's wrong ones


def _scale(name: str, q: Tensor, k: Tensor) -> float:
    d, S = q.shape[-1], k.shape[-2]
    return {"1/√d_k": 1 / math.sqrt(d), "1": 1.0, "1/d_k": 1 / d, "√d_k": math.sqrt(d), "1/√S": 1 / math.sqrt(S)}[name]


def _answers(attention: Callable, cases: list[tuple[str, dict[str, Tensor | None]]]) -> list[Any]:
    """The learner's answer on each case, or the ``_Fail`` its call gave; after a stub or a time-out the other
    cases are not called (they would only repeat it), and count as that failure."""
    answers: list[Any] = []
    for label, c in cases:
        q, k, v, mask = c["q"], c["k"], c["v"], c["mask"]
        assert q is not None and k is not None and v is not None
        inputs = f"{label}: {_describe(q=q, k=k, v=v, mask=mask)}"
        stop = next((a for a in answers if isinstance(a, _Fail) and a.error in _FINAL), None)
        if stop is not None:
            answers.append(stop)
            continue
        try:
            answers.append(
                _call(attention, q.clone(), k.clone(), v.clone(), None if mask is None else mask.clone(), inputs=inputs)
            )
        except _Fail as f:
            answers.append(f)
    return answers


_FINAL = ("NotImplementedError", "TimeoutError")


def _pair(answer: Any, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor] | None:
    """``(output, weights)`` as float64 when the answer is a pair of tensors of the right shapes, else None."""
    if isinstance(answer, Tensor) or not isinstance(answer, (tuple, list)) or len(answer) != 2:
        return None
    out, w = answer
    T, S = q.shape[-2], k.shape[-2]
    if not isinstance(out, Tensor) or not isinstance(w, Tensor) or w.shape[-2:] != (T, S):
        return None
    if out.shape[-2:] != (T, v.shape[-1]) or not (out.is_floating_point() and w.is_floating_point()):
        return None
    return out.detach().double(), w.detach().double()


def _judge_parts(cases: list[tuple[str, dict[str, Tensor | None]]], answers: list[Any]) -> None:
    """Report the four parts of the attention check (partial credit, see ``registry.ASSIGNMENTS``), each on every
    case it concerns:

    - *scaling*: without a mask, the weights are softmax(q kᵀ / √d_k);
    - *softmax rows*: without a mask, the weights are a softmax over the keys of q kᵀ at some scale (the right
      one or a catalogued wrong one: the softmax is right even where the scaling is not);
    - *masking*: with a mask, the weights are the masked softmax of q kᵀ at the same scale as the unmasked cases
      (right even where the scaling is not): blocked keys weigh 0 and rows sum to 1;
    - *returned weights*: the softmax rows are right and the output is the returned weights times v.
    """
    scaling, rows, masking, returned = True, True, True, True
    scales: set[str] = set(_SCALES)  # the scales consistent with every unmasked case
    masked: list[tuple[Tensor, Tensor, Tensor, Tensor, Tensor]] = []
    for (_, c), answer in zip(cases, answers, strict=True):
        q, k, v, mask = c["q"], c["k"], c["v"], c["mask"]
        assert q is not None and k is not None and v is not None
        pair = _pair(answer, q, k, v)
        if pair is None:
            scaling = rows = masking = returned = False
            continue
        out, w = pair
        try:
            returned = returned and _close(out, w @ v.double(), q.dtype)
        except RuntimeError:  # weights and v that do not multiply
            returned = False
        if mask is None:
            fits = {
                s
                for s in scales
                if _close(w, _attention_variant(q, k, v, None, scale=_scale(s, q, k))["weights"], q.dtype)
            }
            scaling = scaling and "1/√d_k" in fits
            scales &= fits
        else:
            masked.append((q, k, v, mask, w))
    rows = rows and bool(scales)
    for q, k, v, mask, w in masked:
        fits = {
            s
            for s in scales or {"1/√d_k"}
            if _close(w, _attention_variant(q, k, v, mask, scale=_scale(s, q, k))["weights"], q.dtype)
        }
        masking = masking and bool(fits)
    _part("scaling", scaling)
    _part("softmax rows", rows)
    _part("masking", masking)
    _part("returned weights", returned and rows)


def _mistake_hints(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, out: Tensor, w: Tensor, ref_w: Tensor
) -> tuple[str, ...]:
    """The hints for a wrong answer ``(out, w)``: those of the catalogued mistake it matches (a wrong scale, the
    softmax over the wrong axis, a mask inverted, ignored or applied after the softmax), else what its weights
    show (rows that do not sum to 1, weight on blocked keys, right weights but a wrong output)."""
    d, S = q.shape[-1], k.shape[-2]
    variants: list[tuple[Callable[[], dict], tuple[str, ...]]] = [
        (partial(_attention_variant, q, k, v, mask, scale=1.0), _SQRT_DK_HINTS),
        (
            partial(_attention_variant, q, k, v, mask, scale=1 / d),
            ("You divided by d_k; divide by √d_k (math.sqrt(d_k)).",),
        ),
        (
            partial(_attention_variant, q, k, v, mask, scale=math.sqrt(d)),
            ("You multiplied by √d_k; divide the scores by √d_k instead.",),
        ),
        (
            partial(_attention_variant, q, k, v, mask, scale=1 / math.sqrt(S)),
            ("d_k is the width of the queries and keys, q.shape[-1], not the number of keys.",),
        ),
        (partial(_attention_variant, q, k, v, mask, dim=-2), _SOFTMAX_HINTS),
        (partial(_attention_variant, q, k, v, mask, mask_mode="invert"), _MASK_INVERTED_HINTS),
        (
            partial(_attention_variant, q, k, v, mask, mask_mode="zero"),
            ("Masked scores were set to 0, which still gets weight exp(0) = 1: use float('-inf').",),
        ),
        (partial(_attention_variant, q, k, v, mask, mask_mode="ignore"), _MASK_IGNORED_HINTS),
        (partial(_attention_variant, q, k, v, mask, mask_mode="after softmax"), _MASK_AFTER_SOFTMAX_HINTS),
        (partial(_attention_variant, q, k, v, mask, mask_mode="-inf after softmax"), _MASK_AFTER_SOFTMAX_HINTS),
    ]
    hints = _match({"output": out, "weights": w}, variants, q.dtype)
    if hints is None:
        sums = w.double().sum(-1)
        blocked = None if mask is None or mask.all() else w.double().masked_fill(mask, 0.0)  # allowed keys -> 0
        if not torch.allclose(sums, torch.ones_like(sums), atol=_tol(q.dtype)[1] * 100 + 1e-6):
            masked_late = blocked is not None and bool(((blocked == 0) | blocked.isneginf()).all())
            hints = _MASK_AFTER_SOFTMAX_HINTS if masked_late else _SOFTMAX_HINTS
        elif mask is not None and (w.double() * ~mask).abs().max() > 1e-6:
            hints = _MASK_IGNORED_HINTS
        elif _close(w, ref_w, q.dtype):
            hints = ("The weights are right but the output is not: the output is weights @ v.",)
        else:
            hints = (
                "The weights differ from softmax(q kᵀ / √d_k): compute the scores, scale, mask, then "
                "softmax over the last axis.",
                "Work through one query by hand: its scores are q[t] · k[s] for every key s.",
            )
    return hints


@_check("attention")
def check_attention(attention: Callable) -> str:
    """Check ``attention(q, k, v, mask=None) -> (output, weights)``, softmax(q kᵀ / √d_k) v with a boolean
    mask (True = may attend), against :func:`~transformer_lib.attention.scaled_dot_product_attention`.

    Shape:
        q: (..., T, D), k: (..., S, D), v: (..., S, Dv), mask: broadcastable to (..., T, S)
        -> output (..., T, Dv), weights (..., T, S)
    """
    named, random = _attention_cases(), drawn("check_attention")
    cases = named + random
    answers = _answers(attention, cases)  # every case first: the parts below are judged on all of them
    _judge_parts(cases, answers)
    for (label, c), answer in zip(cases, answers, strict=True):
        q, k, v, mask = c["q"], c["k"], c["v"], c["mask"]
        assert q is not None and k is not None and v is not None  # only the mask may be None
        inputs = f"{label}: {_describe(q=q, k=k, v=v, mask=mask)}"
        if isinstance(answer, _Fail):
            raise answer
        result = answer
        if isinstance(result, Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
            raise _Fail(
                "attention must return a pair (output, weights).",
                f"Input: {inputs}",
                ("End with `return output, weights`: the weights are needed to draw attention maps.",),
            )
        out, w = (_tensor(x, what, inputs) for x, what in zip(result, ("The output", "The weights"), strict=True))
        ref_out, ref_w = scaled_dot_product_attention(
            q.double(), k.double(), v.double(), mask, need_weights=True, impl="eager"
        )
        assert ref_w is not None  # need_weights=True
        T, S = q.shape[-2], k.shape[-2]
        _expect_shape(
            "The weight tensor",
            w,
            tuple(ref_w.shape),
            inputs,
            (
                "There is one row of weights per query and one column per key: (..., T, S)."
                + (" Yours is (..., S, T): compute q @ kᵀ, not k @ qᵀ." if w.shape[-2:] == (S, T) else ""),
            ),
        )
        _expect_shape(
            "The output",
            out,
            tuple(ref_out.shape),
            inputs,
            ("The output is weights @ v: one row per query, the width of v: (..., T, Dv).",),
        )
        _expect_dtype("The output", out, q.dtype, inputs)
        if _close(out, ref_out, q.dtype) and _close(w, ref_w, q.dtype):
            continue
        hints = _mistake_hints(q, k, v, mask, out, w, ref_w)
        name, a, e = ("weights", w, ref_w) if not _close(w, ref_w, q.dtype) else ("output", out, ref_out)
        raise _Fail(_differ(name), f"Input: {inputs}\n{_row_diff(name, a, e, q.dtype)}", hints)
    return _and_random(
        f"All {len(named)} cases match the reference (float64, float32, bfloat16; padding and causal masks, "
        "a heads axis, a batch of one with length one).",
        random,
    )

"""Checks of assignment 5, multi-head attention: splitting and merging heads, and the whole module.

The module check gives the learner's projections weights of its own (so that an answer that ignores q and k cannot
hide behind zeroed W^Q and W^K), copies them into :class:`~transformer_lib.attention.MultiHeadAttention` and
compares; ``_mha_variant`` recomputes the module with one plausible mistake at a time.
Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key length, ``D`` head width, ``C`` d_model.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...attention import MultiHeadAttention
from ...masks import causal_mask
from .attention import _MASK_IGNORED_HINTS, _SQRT_DK_HINTS, _attention_variant
from .compare import _close, _describe, _differ, _expect_dtype, _expect_shape, _match, _row_diff, _tensor
from .core import _call, _check, _Fail, _fixed_seed, _seeded
from .hidden import _and_random, _keys_mask, _normal, _random_cases, _size, drawn
from .modules import _set_weights
from .snapshot import rebuilt_as

_SPLIT_HINTS = (
    "Heads were split wrongly: view the last axis as (H, D) first, giving (B, T, H, D), then "
    "transpose(1, 2) to (B, H, T, D).",
    "x.view(B, H, T, D) reads the numbers in the wrong order: each head would get pieces of several "
    "positions instead of D features of every position.",
)
_MERGE_HINTS = (
    "Heads were merged in the wrong order: transpose (B, H, T, D) back to (B, T, H, D) before the "
    "reshape to (B, T, C).",
    "x.transpose(1, 2).reshape(B, T, C): reshape alone mixes the positions of different heads.",
)


@_random_cases("check_split_heads")
def _random_split(g: torch.Generator) -> list[tuple[str, tuple[Tensor, int]]]:
    """Two random (B, T, H * D) tensors (float64, then float32) and their number of heads."""
    cases = []
    for i, dtype in enumerate((torch.float64, torch.float32)):
        B, T, H, D = _size(g, 1, 3), _size(g, 1, 5), _size(g, 1, 4), _size(g, 1, 4)
        cases.append((f"random case {i + 1}", (_normal(g, B, T, H * D, dtype=dtype), H)))
    return cases


@_random_cases("check_merge_heads")
def _random_merge(g: torch.Generator) -> list[tuple[str, Tensor]]:
    """Two random (B, H, T, D) tensors (float64, then float32)."""
    shapes = [(_size(g, 1, 3), _size(g, 1, 4), _size(g, 1, 5), _size(g, 1, 4)) for _ in range(2)]
    return [
        (f"random case {i + 1}", _normal(g, *shape, dtype=dtype))
        for i, (shape, dtype) in enumerate(zip(shapes, (torch.float64, torch.float32), strict=True))
    ]


@_check("split_heads")
def check_split_heads(split_heads: Callable) -> str:
    """Check ``split_heads(x, n_heads)``: (B, T, C) -> (B, H, T, D) with D = C / H."""
    g = _seeded(1)
    named = [(torch.randn(2, 3, 8, generator=g, dtype=torch.float64), 2), (torch.randn(1, 1, 6, generator=g), 3)]
    random = drawn("check_split_heads")
    for label, (x, H) in [("", c) for c in named] + random:
        inputs = (f"{label}: " if label else "") + _describe(x=x, n_heads=H)
        got = _tensor(_call(split_heads, x.clone(), H, inputs=inputs), "The result", inputs)
        B, T, C = x.shape
        want = x.view(B, T, H, C // H).transpose(1, 2)  # (B, H, T, D)
        hint = " Yours is (B, T, H, D): transpose(1, 2)." if tuple(got.shape) == (B, T, H, C // H) else ""
        _expect_shape(
            "The result",
            got,
            tuple(want.shape),
            inputs,
            ("Split the last axis into heads: (B, T, C) -> (B, T, H, D) -> (B, H, T, D)." + hint,),
        )
        if not _close(got, want, x.dtype):
            hints = (
                _SPLIT_HINTS
                if _close(got, x.view(B, H, T, C // H), x.dtype)
                else ("Head h must hold features h*D .. (h+1)*D - 1 of every position.",)
            )
            raise _Fail(
                "The heads differ from the reference.", f"Input: {inputs}\n{_row_diff('result', got, want)}", hints
            )
    return _and_random(
        f"All {len(named)} cases match the reference (including a batch of one with length one).", random
    )


@_check("merge_heads")
def check_merge_heads(merge_heads: Callable) -> str:
    """Check ``merge_heads(x)``: (B, H, T, D) -> (B, T, H*D), the inverse of split_heads."""
    g = _seeded(2)
    named = [torch.randn(2, 2, 3, 4, generator=g, dtype=torch.float64), torch.randn(1, 3, 1, 2, generator=g)]
    random = drawn("check_merge_heads")
    for label, x in [("", c) for c in named] + random:
        inputs = (f"{label}: " if label else "") + _describe(x=x)
        got = _tensor(_call(merge_heads, x.clone(), inputs=inputs), "The result", inputs)
        B, H, T, D = x.shape
        want = x.transpose(1, 2).reshape(B, T, H * D)
        _expect_shape(
            "The result",
            got,
            (B, T, H * D),
            inputs,
            ("Heads were not merged back: the result is (B, T, H*D), one vector per position.",),
        )
        if not _close(got, want, x.dtype):
            hints = (
                _MERGE_HINTS
                if _close(got, x.reshape(B, T, H * D), x.dtype)
                else ("Position t of the result is the concatenation of head 0, head 1, ... at position t.",)
            )
            raise _Fail(
                "The merged tensor differs from the reference.",
                f"Input: {inputs}\n{_row_diff('result', got, want)}",
                hints,
            )
    return _and_random(
        f"All {len(named)} cases match the reference (including a batch of one with length one).", random
    )


_MHA_ATTRS = ("w_q", "w_k", "w_v", "w_o")


def _mha_variant(
    m: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None,
    n_heads: int,
    *,
    split: str = "ok",
    merge: str = "ok",
    w_o: bool = True,
    scale: str = "head",
    use_mask: bool = True,
    kv_from_query: bool = False,
    attend: bool = True,
) -> dict[str, Tensor]:
    """Multi-head attention in float64 from the module's weights, with one deliberate mistake; ``attend=False``
    ignores q and k (every key gets the same weight)."""

    def lin(x: Tensor, name: str) -> Tensor:
        layer = getattr(m, name)
        bias = None if layer.bias is None else layer.bias.detach().double()
        return F.linear(x.double(), layer.weight.detach().double(), bias)

    B, T, C = query.shape
    H, D = n_heads, C // n_heads
    if kv_from_query:
        key = value = query

    def heads(x: Tensor) -> Tensor:
        L = x.shape[1]
        return x.view(B, H, L, D) if split == "no_transpose" else x.view(B, L, H, D).transpose(1, 2)

    q, k, v = heads(lin(query, "w_q")), heads(lin(key, "w_k")), heads(lin(value, "w_v"))  # (B, H, *, D)
    q = q if attend else torch.zeros_like(q)  # q·k = 0 for every key: a uniform softmax
    s = {"head": None, "model": 1 / math.sqrt(C), "none": 1.0}[scale]
    r = _attention_variant(q, k, v, mask if use_mask else None, scale=s)
    o = r["output"]  # (B, H, T, D)
    merged = o.reshape(B, T, C) if merge == "no_transpose" else o.transpose(1, 2).reshape(B, T, C)
    return {"output": lin(merged, "w_o") if w_o else merged, "weights": r["weights"]}


def _mha_cases() -> list[tuple[str, dict[str, Any]]]:
    g = _seeded(3)

    def r(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    x = r(2, 3, 16)
    pad = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, None, :]  # (B, 1, 1, S)
    y = r(2, 4, 16)
    return [
        ("self-attention, no mask", dict(query=x, key=x, value=x, mask=None)),
        ("self-attention, causal mask", dict(query=y, key=y, value=y, mask=causal_mask(4))),
        ("cross-attention, no mask", dict(query=r(2, 3, 16), key=(m := r(2, 5, 16)), value=m, mask=None)),
        ("cross-attention, padding mask", dict(query=r(2, 3, 16), key=(m := r(2, 5, 16)), value=m, mask=pad)),
        ("batch of one, length one", dict(query=(z := r(1, 1, 16)), key=z, value=z, mask=None)),
        ("float32", dict(query=(f := r(2, 3, 16).float()), key=f, value=f, mask=causal_mask(3))),
        ("bfloat16", dict(query=(b := r(2, 3, 16).bfloat16()), key=b, value=b, mask=None)),
    ]


@_random_cases("check_multi_head_attention")
def _random_mha(g: torch.Generator) -> list[tuple[str, dict[str, Any]]]:
    """Three cases of random lengths (d_model 16): self-attention with a causal mask, cross-attention with a padding
    mask (float64) and cross-attention without one (float32)."""
    B, T = _size(g, 1, 3), _size(g, 2, 5)
    x = _normal(g, B, T, 16)
    cases: list[tuple[str, dict[str, Any]]] = [("random case 1", dict(query=x, key=x, value=x, mask=causal_mask(T)))]
    for i, dtype in ((2, torch.float64), (3, torch.float32)):
        B, T, S = _size(g, 1, 3), _size(g, 1, 5), _size(g, 2, 6)
        mask = _keys_mask(g, B, S)[:, None, None, :] if i == 2 else None
        m = _normal(g, B, S, 16, dtype=dtype)
        cases.append((f"random case {i}", dict(query=_normal(g, B, T, 16, dtype=dtype), key=m, value=m, mask=mask)))
    return cases


def _mha_reference(
    m: Any, C: int, H: int, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None
) -> tuple[Tensor, Tensor]:
    """tl.MultiHeadAttention in float64 holding the projections of ``m``: (output, weights)."""
    with _fixed_seed(0):
        ref = MultiHeadAttention(C, H, bias=m.w_q.bias is not None, attn_impl="eager").double().eval()
    with torch.no_grad():
        ref.qkv_proj.weight.copy_(torch.cat([getattr(m, a).weight for a in _MHA_ATTRS[:3]]))
        ref.o_proj.weight.copy_(m.w_o.weight)
        if m.w_q.bias is not None:
            ref.qkv_proj.bias.copy_(torch.cat([getattr(m, a).bias for a in _MHA_ATTRS[:3]]))
            ref.o_proj.bias.copy_(m.w_o.bias)
        return ref(query.double(), key.double(), value.double(), mask, need_weights=True)


def _mha_mistakes(args: tuple) -> list[tuple[Callable[[], dict], tuple[str, ...]]]:
    """The catalogue: each plausible mistake as a variant of the module, with its hints."""
    return [
        (
            lambda: _mha_variant(*args, attend=False),
            (
                "Your attention gives every key the same weight: the scores must come from q·kᵀ, with "
                "q = self.w_q(query) and k = self.w_k(key) split into heads. The check sets W^Q and W^K itself.",
            ),
        ),
        (
            lambda: _mha_variant(*args, w_o=False),
            (
                "Missing W^O: the merged heads must go through the output projection self.w_o.",
                "MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O (§3.2.2): W^O mixes what the heads found.",
            ),
        ),
        (lambda: _mha_variant(*args, merge="no_transpose"), _MERGE_HINTS),
        (lambda: _mha_variant(*args, split="no_transpose"), _SPLIT_HINTS),
        (lambda: _mha_variant(*args, scale="none"), _SQRT_DK_HINTS),
        (
            lambda: _mha_variant(*args, scale="model"),
            ("Scale by √d_k with d_k = d_model / n_heads, the width of one head, not √d_model.",),
        ),
        (
            lambda: _mha_variant(*args, use_mask=False),
            _MASK_IGNORED_HINTS[:1]
            + ("Pass the mask on to the attention of every head; (B, 1, 1, S) and (T, S) masks broadcast.",),
        ),
        (
            lambda: _mha_variant(*args, kv_from_query=True),
            (
                "Keys and values must come from the key and value arguments (the encoder output in "
                "cross-attention), not from the query.",
            ),
        ),
    ]


def _built(cls: Callable, C: int, H: int) -> Any:  # the learner's module, attributes and all
    """The learner's module with projections of the check's own: nn.Linear(d_model, d_model) each, whatever
    ``__init__`` put in them (zeroed W^Q and W^K would make every answer that ignores q and k right)."""
    with _fixed_seed(0):
        module = _call(cls, C, H, inputs=f"d_model = {C}, n_heads = {H}")
    layers = [getattr(module, a, None) for a in _MHA_ATTRS]
    missing = [a for a, layer in zip(_MHA_ATTRS, layers, strict=True) if rebuilt_as(layer, (nn.Linear,)) is None]
    if missing:
        raise _Fail(
            f"The module has no nn.Linear attribute(s) {missing}.",
            "",
            (
                "Keep the __init__ of the starter code: the check reads the weights W^Q, W^K, W^V, W^O from "
                "self.w_q, self.w_k, self.w_v and self.w_o.",
            ),
        )
    wrong = [a for a in _MHA_ATTRS if tuple(getattr(module, a).weight.shape) != (C, C)]
    if wrong:
        raise _Fail(
            f"{', '.join(f'self.{a}' for a in wrong)}: expected nn.Linear(d_model, d_model), a {C} x {C} weight.",
            "",
            ("Each projection maps d_model features to d_model: the H heads of width D = d_model / H side by side.",),
        )
    g = _seeded(4)
    for a in _MHA_ATTRS:
        _set_weights(getattr(module, a), g)
    return module.eval()


@_check("multi_head_attention", replays=(nn.Linear,))
def check_multi_head_attention(cls: Callable) -> str:
    """Check a multi-head attention class built as ``cls(d_model, n_heads)`` with ``nn.Linear`` layers
    ``w_q, w_k, w_v, w_o`` and ``forward(query, key, value, mask=None) -> (output, weights)``: the same numbers as
    :class:`~transformer_lib.attention.MultiHeadAttention` holding the weights the check gives the projections.

    Shape:
        query: (B, T, C), key and value: (B, S, C) -> output (B, T, C), weights (B, H, T, S)
    """
    C, H = 16, 4
    module = _built(cls, C, H)
    named, random = _mha_cases(), drawn("check_multi_head_attention")
    cases = named + random
    for label, c in cases:
        query, key, value, mask = c["query"], c["key"], c["value"], c["mask"]
        dtype = query.dtype
        inputs = f"{label}: d_model = {C}, n_heads = {H}, {_describe(query=query, key=key, mask=mask)}"
        m = copy.deepcopy(module).to(dtype)
        with torch.no_grad():
            result = _call(m, query, key, value, mask, inputs=inputs)
        if isinstance(result, Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
            raise _Fail(
                "forward must return a pair (output, weights).",
                f"Input: {inputs}",
                ("End forward with `return self.w_o(merged), weights`.",),
            )
        out, w = (_tensor(x, what, inputs) for x, what in zip(result, ("The output", "The weights"), strict=True))
        ref_out, ref_w = _mha_reference(m, C, H, query, key, value, mask)
        B, T, S = query.shape[0], query.shape[1], key.shape[1]
        if out.dim() == 4:
            raise _Fail(
                "Heads were not merged back.",
                f"Input: {inputs}\nExpected output shape {tuple(ref_out.shape)}\nGot      {tuple(out.shape)}",
                (
                    "Heads were not merged back: (B, H, T, D) must become (B, T, C) before W^O.",
                    "merged = out.transpose(1, 2).reshape(B, T, C), then self.w_o(merged).",
                ),
            )
        _expect_shape("The output", out, (B, T, C), inputs, ("The output has the shape of the query: (B, T, C).",))
        _expect_shape(
            "The weight tensor",
            w,
            (B, H, T, S),
            inputs,
            (
                "Keys and values must come from the key and value arguments (the encoder output in "
                "cross-attention), not from the query: there is one weight per key.",
            )
            if w.dim() == 4 and w.shape[-1] == T != S
            else ("Return the weights of every head, (B, H, T, S), not an average over heads.",),
        )
        _expect_dtype("The output", out, dtype, inputs)
        if _close(out, ref_out, dtype) and _close(w, ref_w, dtype):
            continue
        variants = _mha_mistakes((m, query, key, value, mask, H))
        hints = _match({"output": out, "weights": w}, variants, dtype) or (
            "Project with W^Q, W^K, W^V, split into heads, attend, merge the heads, project with W^O.",
            "Test split_heads and merge_heads with their own checks first, then compare each step with the "
            "shapes in the docstring.",
        )
        which, got_t, want_t = ("weights", w, ref_w) if not _close(w, ref_w, dtype) else ("output", out, ref_out)
        raise _Fail(_differ(which), f"Input: {inputs}\n{_row_diff(which, got_t, want_t, dtype)}", hints)
    return _and_random(
        f"All {len(named)} cases match tl.MultiHeadAttention with the check's weights (self- and cross-attention, "
        "masks, a batch of one with length one, float64/float32/bfloat16).",
        random,
    )

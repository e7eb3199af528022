"""Scaled dot-product attention (paper §3.2.1) and multi-head attention (§3.2.2).

Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key/value length, ``D`` head width
``d_head = d_model / n_heads``, ``C`` model width ``d_model``.

Masks are boolean with ``True`` = may attend, broadcastable to (B, H, T, S). A query whose keys are all masked gets
an all-zero weight row and a zero output, never NaN.
"""

from __future__ import annotations

import math
from typing import Literal

import torch.nn.functional as F
from torch import Tensor, nn

from .kv_cache import KVCache
from .validation import check_choice, check_mask, check_positive, check_tensor, is_compiling

__all__ = ["scaled_dot_product_attention", "MultiHeadAttention", "AttentionImpl"]

AttentionImpl = Literal["eager", "sdpa"]


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    *,
    need_weights: bool = False,
    impl: AttentionImpl = "eager",
    scale: float | None = None,
) -> tuple[Tensor, Tensor | None]:
    """softmax(q kᵀ / √d_k) v, with an optional boolean mask (True = may attend).

    ``impl="eager"`` is the formula written out, the version the book explains. ``impl="sdpa"`` calls
    :func:`torch.nn.functional.scaled_dot_product_attention` (fused kernels); it cannot return the weights, so
    ``need_weights=True`` always takes the eager path. Both give the same numbers (tested).

    The returned weights are the softmax before dropout. Rows whose keys are all masked come out as zeros.

    Shape:
        q: (..., T, D), k: (..., S, D), v: (..., S, Dv), mask: broadcastable to (..., T, S)
        returns: output (..., T, Dv); weights (..., T, S) or None

    Example (two queries that each lean towards their own key):

    >>> import torch
    >>> q = k = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # (B, T, D) = (1, 2, 2)
    >>> v = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    >>> out, w = scaled_dot_product_attention(q, k, v, need_weights=True)
    >>> w.round(decimals=4)  # softmax(q k^T / sqrt(2)), each row sums to 1
    tensor([[[0.6698, 0.3302],
             [0.3302, 0.6698]]])
    >>> out.round(decimals=4)  # each row: the weighted average of the value rows
    tensor([[[1.6605, 2.6605],
             [2.3395, 3.3395]]])
    """
    no_key, mask = _check_attention_args(q, k, v, mask, dropout_p, impl)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale  # ÷√d_k keeps the logits' variance near 1
    if impl == "sdpa" and not need_weights:
        return _fused_attention(q, k, v, mask, dropout_p, scale, no_key), None
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T, S): one logit per (query, key) pair
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # exp(-inf) = 0: blocked keys get exactly zero weight
    weights = scores.softmax(dim=-1)  # (..., T, S): each row is a distribution over keys
    if no_key is not None:
        weights = weights.masked_fill(no_key, 0.0)  # a query that may see no key attends to nothing
    dropped = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return dropped @ v, (weights if need_weights else None)  # (..., T, Dv)


def _check_attention_args(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float, impl: str
) -> tuple[Tensor | None, Tensor | None]:
    """Check the kernel's arguments; return ``(no_key, mask)``.

    ``no_key`` (..., T, 1) marks the queries whose keys are all masked, or is None when there is none (the usual
    case: no repair needed). Such rows are let see every key in the returned mask, so that the softmax never divides
    0 by 0, and the kernel then zeroes their weights (or output).
    """
    check_tensor("q", q, dtype="float")
    check_tensor("k", k, ndim=q.dim(), dtype="float")
    check_tensor("v", v, ndim=q.dim(), dtype="float")
    if q.dim() < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"q, k, v: expected (..., T, D), (..., S, D), (..., S, Dv); got {tuple(q.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    check_choice("impl", impl, ("eager", "sdpa"))
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p: expected a probability in [0, 1), got {dropout_p}")
    if mask is None:
        return None, None
    check_mask("mask", mask, (*q.shape[:-1], k.shape[-2]))
    has_key = mask.any(dim=-1, keepdim=True)  # (..., T, 1): does this query see any key at all?
    if _every_query_sees_a_key(has_key):
        return None, mask  # nothing to repair, so skip two full-size masked_fills
    return ~has_key, mask | ~has_key


def _fused_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float, scale: float, no_key: Tensor | None
) -> Tensor:
    """The same computation by :func:`torch.nn.functional.scaled_dot_product_attention` (fused kernels)."""
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)
    return out if no_key is None else out.masked_fill(no_key, 0.0)


def _every_query_sees_a_key(has_key: Tensor) -> bool:
    """True when no query row of the mask is empty. Only asked where the answer is cheap to read: on the CPU and
    outside ``torch.compile`` tracing. On a GPU, reading it would stall the device, so we assume the worst and
    let the (sync-free) repair run."""
    if has_key.device.type != "cpu" or is_compiling():
        return False
    return bool(has_key.all())


def _static_keys_values(cache: KVCache | None) -> tuple[Tensor, Tensor] | None:
    """The keys and values that a filled static (cross-attention) cache holds, or None."""
    if cache is None or not (cache.static and cache.length):
        return None
    k, v = cache.k, cache.v  # each a view of the cache's buffer: read once (an operator call each)
    return None if k is None or v is None else (k, v)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: project, split into heads, attend, merge, project with W^O (§3.2.2).

    The three input projections W^Q, W^K, W^V are stored as one (3C, C) matrix ``qkv_proj`` (rows 0:C are W^Q,
    C:2C W^K, 2C:3C W^V, the layout of ``nn.MultiheadAttention.in_proj_weight``) so that self-attention makes one
    matrix product instead of three; cross-attention uses the W^Q rows on the query and the W^K, W^V rows on the
    encoder output. Self- and cross-attention are this same module called with different inputs.

    Args:
        d_model: model width C; must be divisible by ``n_heads``.
        n_heads: number of heads H; each works in d_head = C / H dimensions.
        dropout: dropout on the attention weights while training.
        bias: whether the projections have biases.
        attn_impl: ``"sdpa"`` (fused, default) or ``"eager"`` (the formula); same results.
        batch_first: inputs are (B, T, C) if True, (T, B, C) if False (as in ``nn.MultiheadAttention``).

    Shape:
        query: (B, T, C), key and value: (B, S, C), mask: broadcastable to (B, H, T, S) bool
        returns: output (B, T, C); weights (B, H, T, S) or None

    Example:

    >>> import torch
    >>> mha = MultiHeadAttention(d_model=8, n_heads=2)
    >>> x = torch.zeros(3, 5, 8)  # (B, T, C)
    >>> out, w = mha(x, x, x, need_weights=True)
    >>> tuple(out.shape), tuple(w.shape)  # (B, T, C) and one (T, T) map per head: (B, H, T, T)
    ((3, 5, 8), (3, 2, 5, 5))
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        *,
        attn_impl: AttentionImpl = "sdpa",
        batch_first: bool = True,
    ) -> None:
        super().__init__()
        check_positive("d_model", d_model)
        check_positive("n_heads", n_heads)
        if d_model % n_heads:
            raise ValueError(f"d_model: must be divisible by n_heads={n_heads}, got d_model={d_model}")
        check_choice("attn_impl", attn_impl, ("eager", "sdpa"))
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.dropout = dropout
        self.attn_impl = attn_impl
        self.batch_first = batch_first
        self.qkv_proj = nn.Linear(d_model, 3 * d_model, bias=bias)  # [W^Q; W^K; W^V]
        self.o_proj = nn.Linear(d_model, d_model, bias=bias)  # W^O
        nn.init.xavier_uniform_(self.qkv_proj.weight)  # the same initialisation as nn.MultiheadAttention
        if bias:
            nn.init.zeros_(self.qkv_proj.bias)
            nn.init.zeros_(self.o_proj.bias)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
        cache: KVCache | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        query, key, value = self._batch_first(query, key, value)  # (B, T, C), (B, S, C), (B, S, C)
        q, k, v = self._project(query, key, value, cache)  # (B, H, T, D), (B, H, S, D), (B, H, S, D)
        p = self.dropout if self.training else 0.0  # dropout on the attention weights while training
        z, weights = scaled_dot_product_attention(q, k, v, mask, p, need_weights=need_weights, impl=self.attn_impl)
        B, H, T, D = z.shape
        out = self.o_proj(z.transpose(1, 2).reshape(B, T, H * D))  # Concat(head_1, ..., head_h) W^O: (B, T, C)
        return (out if self.batch_first else out.transpose(0, 1)), weights

    def _project(
        self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Q = query W^Q, K = key W^K, V = value W^V, each split into heads; with a ``cache``, K and V are those of
        every step so far (the KV cache of chapter 7b)."""
        if key is query and value is query:  # self-attention: one product with [W^Q; W^K; W^V]
            B, T, _ = query.shape
            qkv = self.qkv_proj(query).view(B, T, 3, self.n_heads, self.d_head)  # (B, T, 3, H, D)
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # 3 x (B, H, T, D)
        else:  # cross-attention: Q from the query, K and V from the other sequence
            q = self._split(self._linear(query, 0, 1))  # (B, H, T, D)
            if (reused := _static_keys_values(cache)) is not None:
                return q, *reused  # projected from the encoder output at the first decoding step
            if key is value:  # one product with [W^K; W^V]
                k, v = (self._split(t) for t in self._linear(key, 1, 3).chunk(2, dim=-1))  # 2 x (B, H, S, D)
            else:
                k, v = self._split(self._linear(key, 1, 2)), self._split(self._linear(value, 2, 3))
        if cache is not None:
            k, v = cache.append(k, v)  # (B, H, L, D): everything up to and including this step
        return q, k, v

    def _linear(self, x: Tensor, first: int, last: int) -> Tensor:
        """x times the blocks ``first`` to ``last`` (exclusive) of [W^Q; W^K; W^V] (0: W^Q, 1: W^K, 2: W^V)."""
        C, W, b = self.d_model, self.qkv_proj.weight, self.qkv_proj.bias
        return F.linear(x, W[first * C : last * C], None if b is None else b[first * C : last * C])

    def _split(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)  # (B, T, C) -> (B, H, T, D)

    def _batch_first(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Check the inputs' shapes; return them batch-first, (B, T, C), (B, S, C), (B, S, C)."""
        check_tensor("query", query, ndim=3, dtype="float")
        check_tensor("key", key, ndim=3, dtype="float")
        check_tensor("value", value, ndim=3, dtype="float")
        if not self.batch_first:  # (T, B, C) -> (B, T, C)
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        if query.shape[-1] != self.d_model or key.shape[-1] != self.d_model or value.shape[-1] != self.d_model:
            raise ValueError(
                f"query, key, value: expected last dimension d_model={self.d_model}, got "
                f"{query.shape[-1]}, {key.shape[-1]}, {value.shape[-1]}"
            )
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise ValueError(
                f"key, value: expected the same (batch, length) as each other and query's batch; got query "
                f"{tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
            )
        return query, key, value

"""The KV cache (chapter 7b, §7.7): what incremental decoding keeps between steps, and the cached step itself.

Generating token t+1 needs the keys and values of tokens 1..t in every decoder layer. Without a cache each step
re-runs the decoder over the whole prefix (1 + 2 + ... + n positions for n tokens); with one, a step projects only
the new token and appends its key and value, so n tokens cost n positions. Under the causal mask earlier positions
never change when a token is appended, which is what makes this exact (chapter 5 shows a decoder where it is not).

* :class:`KVCache` — one attention layer's keys and values: a growing buffer (self-attention) or a static one
  filled once from the encoder output (cross-attention).
* :class:`LayerCache` — the two caches of one decoder layer.
* :class:`DecodingState` — everything a model carries from one generation step to the next.
* :func:`cached_step` — one step of either model family with caches: feed only the unseen tokens.

Shape legend: ``B`` batch, ``H`` heads, ``L`` positions stored, ``D`` head dim, ``V`` vocabulary size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .masks import causal_mask
from .validation import check_positive

__all__ = ["KVCache", "LayerCache", "DecodingState", "new_caches", "step_mask", "cached_step"]


class KVCache:
    """Keys and values of one attention layer kept between decoding steps (so each step projects one token).

    A self-attention cache grows by the new step's keys/values on every call, into a buffer preallocated for
    ``max_len`` positions. A ``static`` cache (cross-attention) is filled once from the encoder output and reused.
    The caller owns the cache and passes it in; modules never keep it on ``self``.

    Shape:
        k, v: (B, H, L, D) with L = positions stored so far

    Example:

    >>> cache = KVCache()
    >>> k = v = torch.zeros(1, 2, 3, 4)  # (B, H, T, D): a prompt of 3 positions
    >>> keys, _ = cache.append(k, v)
    >>> keys, _ = cache.append(k[:, :, :1], v[:, :, :1])  # one decoding step adds one position
    >>> cache.length, tuple(keys.shape)
    (4, (1, 2, 4, 4))
    """

    def __init__(self, max_len: int | None = None, *, static: bool = False) -> None:
        if max_len is not None:
            check_positive("max_len", max_len)
        self.max_len = max_len
        self.static = static
        self._k: Tensor | None = None
        self._v: Tensor | None = None
        self.length = 0

    @property
    def k(self) -> Tensor | None:
        return None if self._k is None else self._k[:, :, : self.length]

    @property
    def v(self) -> Tensor | None:
        return None if self._v is None else self._v[:, :, : self.length]

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Store the new (B, H, T, D) keys/values after those already held; return all of them."""
        new = k.shape[2]
        if self._k is None or self._v is None:
            cap = max(self.max_len or 0, new)
            self._k = k.new_empty(k.shape[0], k.shape[1], cap, k.shape[3])  # (B, H, L_max, D)
            self._v = v.new_empty(v.shape[0], v.shape[1], cap, v.shape[3])
        keys, values = self._k, self._v
        if self.length + new > keys.shape[2]:  # grow by doubling when max_len was not known
            grow = max(self.length + new, 2 * keys.shape[2])
            keys = torch.cat((keys, keys.new_empty(*keys.shape[:2], grow - keys.shape[2], keys.shape[3])), 2)
            values = torch.cat(
                (values, values.new_empty(*values.shape[:2], grow - values.shape[2], values.shape[3])), 2
            )
            self._k, self._v = keys, values
        keys[:, :, self.length : self.length + new] = k
        values[:, :, self.length : self.length + new] = v
        self.length += new
        return keys[:, :, : self.length], values[:, :, : self.length]  # (B, H, L, D)

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search: follow each surviving beam's history)."""
        if self._k is not None and self._v is not None:
            self._k = self._k.index_select(0, index)
            self._v = self._v.index_select(0, index)


@dataclass
class LayerCache:
    """What one decoder layer keeps between decoding steps: its self-attention keys/values (growing) and the
    cross-attention keys/values of the encoder output (computed once)."""

    self_attn: KVCache
    cross_attn: KVCache = field(default_factory=lambda: KVCache(static=True))


def new_caches(n_layers: int, max_len: int) -> list[LayerCache]:
    """Empty caches for a decoder of ``n_layers`` layers, preallocated for ``max_len`` positions."""
    check_positive("n_layers", n_layers)
    return [LayerCache(KVCache(max_len)) for _ in range(n_layers)]


@dataclass
class DecodingState:
    """What a model needs between generation steps; built by ``start_decoding``, advanced by ``decode_step``.

    ``tokens`` holds every token fed so far (B, L). With ``caches`` each step feeds only the new tokens; without,
    each step re-runs the decoder over the whole prefix (the slow way the KV cache avoids). ``memory`` and
    ``memory_mask`` are the encoder output and its padding mask (None for a decoder-only model).
    """

    tokens: Tensor
    memory: Tensor | None = None
    memory_mask: Tensor | None = None
    caches: list[LayerCache] | None = None
    fed: int = 0  # how many of ``tokens`` the caches have already seen

    def reorder(self, index: Tensor) -> None:
        """Keep batch rows ``index`` (beam search)."""
        self.tokens = self.tokens.index_select(0, index)
        if self.memory is not None:
            self.memory = self.memory.index_select(0, index)
        if self.memory_mask is not None and self.memory_mask.shape[0] > 1:
            self.memory_mask = self.memory_mask.index_select(0, index)
        for c in self.caches or []:
            c.self_attn.reorder(index)
            c.cross_attn.reorder(index)


def step_mask(new: int, offset: int, device: torch.device) -> Tensor | None:
    """Causal mask for ``new`` queries at positions offset.. against keys 0..offset+new-1 (None for one query,
    which may see every key)."""
    if new == 1:
        return None
    return causal_mask(offset + new, device=device)[offset:]  # (new, offset + new)


def cached_step(state: DecodingState, embed: Callable[..., Tensor], decoder: nn.Module, lm_head: nn.Module) -> Tensor:
    """One decoding step with caches, for either model family: embed only the tokens the caches have not seen, at
    their true positions (``offset``), run them through ``decoder`` with ``state.caches`` and return the
    next-token logits of the last position.

    Shape:
        state.tokens: (B, L) -> logits (B, V)
    """
    if state.caches is None:
        raise ValueError("state: cached_step needs a state built with use_cache=True (state.caches is None)")
    new = state.tokens[:, state.fed :]  # (B, L - fed)
    h = decoder(
        embed(new, offset=state.fed),
        state.memory,
        step_mask(new.shape[1], state.fed, new.device),
        state.memory_mask,
        cache=state.caches,
    )
    state.fed = state.tokens.shape[1]
    return lm_head(h[:, -1])  # (B, V)

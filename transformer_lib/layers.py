"""The blocks of the encoder and decoder stacks (paper §3.1, §3.3); their PyTorch twins are in :mod:`.interop`.

Shape legend: ``B`` batch, ``T`` target/query length, ``S`` source length, ``C`` model width ``d_model``.

Each sub-layer (attention or feed-forward) is wrapped by one residual rule, written once in :class:`Residual`:
post-LN as in the paper, ``LayerNorm(x + Dropout(sublayer(x)))``, or pre-LN with ``norm_first=True``,
``x + Dropout(sublayer(LayerNorm(x)))`` (Xiong et al., 2020), which trains more easily in deep stacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch.nn.functional as F
from torch import Tensor, nn

from .attention import AttentionImpl, MultiHeadAttention
from .kv_cache import KVCache, LayerCache
from .validation import check_choice, check_positive, check_tensor

__all__ = [
    "FeedForward",
    "Residual",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "EncoderOutput",
]

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class FeedForward(nn.Module):
    """Position-wise feed-forward network (§3.3): the same two-layer MLP applied to every position.

    ``FFN(x) = W_2 · act(W_1 x + b_1) + b_2`` with ReLU as in the paper (GELU as an option, as BERT/GPT use).

    Shape:
        x: (..., C) -> output (..., C); the hidden layer has d_ff units.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu", bias: bool = True):
        super().__init__()
        check_positive("d_ff", d_ff)
        check_choice("activation", activation, tuple(_ACTIVATIONS))
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(_ACTIVATIONS[self.activation](self.linear1(x))))  # (..., C)


class Residual(nn.Module):
    """The residual + LayerNorm rule around one sub-layer, post-LN (paper) or pre-LN (``norm_first=True``).

    ``res(x, sublayer)`` runs an attention sub-layer, which returns ``(output, weights)``, inside the rule and hands
    its weights back, as the Annotated Transformer's ``SublayerConnection`` does; a sub-layer that returns one tensor
    (feed-forward) is wrapped by the two halves, ``res.post(x, sublayer(res.pre(x)))``.
    """

    def __init__(self, d_model: int, dropout: float, norm_first: bool, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        self.norm_first = norm_first
        self.norm = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def pre(self, x: Tensor) -> Tensor:
        return self.norm(x) if self.norm_first else x

    def post(self, x: Tensor, h: Tensor) -> Tensor:
        if self.norm_first:
            return x + self.dropout(h)  # the residual stream itself is never normalised
        return self.norm(x + self.dropout(h))  # §3.1: LayerNorm(x + Sublayer(x))

    def forward(
        self, x: Tensor, sublayer: Callable[[Tensor], tuple[Tensor, Tensor | None]]
    ) -> tuple[Tensor, Tensor | None]:
        h, weights = sublayer(self.pre(x))
        return self.post(x, h), weights


def _check_layer_args(d_model: int, dropout: float) -> None:
    check_positive("d_model", d_model)  # n_heads and d_ff are checked by the modules that use them
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout: expected a probability in [0, 1), got {dropout}")


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside :class:`Residual` (one block of the encoder stack).

    Shape:
        x: (B, S, C), mask: broadcastable to (B, H, S, S) bool -> (B, S, C), weights (B, H, S, S) or None
    """

    # The same arguments as DecoderLayer, as in torch's TransformerEncoderLayer/DecoderLayer: each layer can be
    # built and read on its own; TransformerConfig.layer_kwargs() fills both from one place.
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
        attn_impl: AttentionImpl = "sdpa",
    ) -> None:
        super().__init__()
        _check_layer_args(d_model, dropout)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, bias, attn_impl=attn_impl)
        self.attn_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)
        self.ff = FeedForward(d_model, d_ff, dropout, activation, bias)
        self.ff_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)

    def forward(
        self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        x, weights = self.attn_res(x, lambda h: self.self_attn(h, h, h, mask, need_weights))  # self-attention
        x = self.ff_res.post(x, self.ff(self.ff_res.pre(x)))  # position-wise feed-forward (§3.3)
        return x, weights


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder output, then feed-forward (§3.1).

    With ``cross_attention=False`` it is a GPT-style block (masked self-attention + feed-forward).

    Shape:
        y: (B, T, C), memory: (B, S, C), self_mask: to (B, H, T, T), cross_mask: to (B, H, T, S)
        returns: (B, T, C); self weights (B, H, T, T) or None; cross weights (B, H, T, S) or None
    """

    cross_attn: MultiHeadAttention | None  # None without cross-attention (a decoder-only block)
    cross_res: Residual | None

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
        attn_impl: AttentionImpl = "sdpa",
        cross_attention: bool = True,
    ) -> None:
        super().__init__()
        _check_layer_args(d_model, dropout)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, bias, attn_impl=attn_impl)
        self.self_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)
        if cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, bias, attn_impl=attn_impl)
            self.cross_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)
        else:  # a decoder-only stack (GPT-style) has no encoder to attend to
            self.cross_attn, self.cross_res = None, None
        self.ff = FeedForward(d_model, d_ff, dropout, activation, bias)
        self.ff_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)

    def forward(
        self,
        y: Tensor,
        memory: Tensor | None = None,
        self_mask: Tensor | None = None,
        cross_mask: Tensor | None = None,
        need_weights: bool = False,
        cache: LayerCache | None = None,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        self_cache, cross_cache = _layer_caches(cache)  # chapter 7b's KV caches, or None
        y, self_w = self.self_res(y, lambda h: self.self_attn(h, h, h, self_mask, need_weights, self_cache))
        cross_w = None
        if self.cross_attn is not None and self.cross_res is not None:  # a GPT-style block has no cross-attention
            m = _encoder_output(memory)  # M, the encoder's output: the keys and values of cross-attention (§3.2.3)
            y, cross_w = self.cross_res(y, lambda h: self.cross_attn(h, m, m, cross_mask, need_weights, cross_cache))
        y = self.ff_res.post(y, self.ff(self.ff_res.pre(y)))  # position-wise feed-forward (§3.3)
        return y, self_w, cross_w


def _layer_caches(cache: LayerCache | None) -> tuple[KVCache | None, KVCache | None]:
    """The self-attention and cross-attention caches of one decoder layer (chapter 7b), or None for each."""
    return (None, None) if cache is None else (cache.self_attn, cache.cross_attn)


def _encoder_output(memory: Tensor | None) -> Tensor:
    """``memory``, which a decoder layer with cross-attention needs: it attends to the encoder's output."""
    if memory is None:
        raise ValueError("memory: this decoder layer has cross-attention and needs the encoder output, got None")
    return memory


@dataclass
class EncoderOutput:
    """Everything an encoder run can return: the last hidden state, optionally every layer's input/output and
    every layer's attention weights (as lists, one entry per layer)."""

    last_hidden_state: Tensor
    hidden_states: list[Tensor] | None = None
    attentions: list[Tensor] | None = None


class _Stack(nn.Module):
    def __init__(self, layers: Iterable[nn.Module], norm: nn.LayerNorm | None, batch_first: bool) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        if len(self.layers) == 0:
            raise ValueError("layers: expected at least one layer, got none")
        self.norm = norm  # a final LayerNorm: needed after a pre-LN stack, absent in the paper's post-LN one
        self.batch_first = batch_first

    def _in(self, name: str, x: Tensor) -> Tensor:
        check_tensor(name, x, ndim=3, dtype="float")
        return x if self.batch_first else x.transpose(0, 1)  # (T, B, C) -> (B, T, C)

    def _out(self, x: Tensor) -> Tensor:
        if self.norm is not None:
            x = self.norm(x)
        return x if self.batch_first else x.transpose(0, 1)


class Encoder(_Stack):
    """A stack of :class:`EncoderLayer` with an optional final LayerNorm.

    Shape:
        x: (B, S, C) already embedded (or (S, B, C) when ``batch_first=False``), mask: to (B, H, S, S) bool
        returns: the shape of x
    """

    def __init__(self, layers: Iterable[EncoderLayer], norm: nn.LayerNorm | None = None, batch_first: bool = True):
        super().__init__(layers, norm, batch_first)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.run(x, mask).last_hidden_state

    def run(
        self, x: Tensor, mask: Tensor | None = None, *, need_weights: bool = False, output_hidden_states: bool = False
    ) -> EncoderOutput:
        """Like ``forward``, optionally also returning each layer's attention weights and hidden states."""
        x = self._in("x", x)
        hidden = [x] if output_hidden_states else None
        attentions: list[Tensor] | None = [] if need_weights else None
        for layer in self.layers:
            x, w = layer(x, mask, need_weights)
            if hidden is not None:
                hidden.append(x)
            if attentions is not None:
                attentions.append(w)
        return EncoderOutput(self._out(x), hidden, attentions)


class Decoder(_Stack):
    """A stack of :class:`DecoderLayer` with an optional final LayerNorm.

    Shape:
        y: (B, T, C) already embedded, memory: (B, S, C) (time-first for both when ``batch_first=False``),
        self_mask: to (B, H, T, T), cross_mask: to (B, H, T, S) -> same shape as y
    """

    def __init__(self, layers: Iterable[DecoderLayer], norm: nn.LayerNorm | None = None, batch_first: bool = True):
        super().__init__(layers, norm, batch_first)

    def forward(
        self,
        y: Tensor,
        memory: Tensor | None = None,
        self_mask: Tensor | None = None,
        cross_mask: Tensor | None = None,
        cache: list[LayerCache] | None = None,
    ) -> Tensor:
        return self.run(y, memory, self_mask, cross_mask, cache=cache)[0]

    def run(
        self,
        y: Tensor,
        memory: Tensor | None = None,
        self_mask: Tensor | None = None,
        cross_mask: Tensor | None = None,
        *,
        cache: list[LayerCache] | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, list[Tensor] | None, list[Tensor] | None]:
        """Like ``forward``, optionally also returning per-layer self- and cross-attention weights."""
        y = self._in("y", y)
        if memory is not None:
            memory = self._in("memory", memory)
        if cache is not None and len(cache) != len(self.layers):
            raise ValueError(f"cache: expected one LayerCache per layer ({len(self.layers)}), got {len(cache)}")
        self_ws: list[Tensor] | None = [] if need_weights else None
        cross_ws: list[Tensor] | None = [] if need_weights else None
        for i, layer in enumerate(self.layers):
            y, sw, cw = layer(y, memory, self_mask, cross_mask, need_weights, None if cache is None else cache[i])
            if self_ws is not None and cross_ws is not None:
                self_ws.append(sw)
                cross_ws.append(cw)
        return self._out(y), self_ws, cross_ws

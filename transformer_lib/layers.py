"""The blocks of the encoder and decoder stacks (paper §3.1, §3.3) and their PyTorch twins.

Shape legend: ``B`` batch, ``T`` target/query length, ``S`` source length, ``C`` model width ``d_model``.

Each sub-layer (attention or feed-forward) is wrapped by one residual rule, written once in :class:`Residual`:
post-LN as in the paper, ``LayerNorm(x + Dropout(sublayer(x)))``, or pre-LN with ``norm_first=True``,
``x + Dropout(sublayer(LayerNorm(x)))`` (Xiong et al., 2020), which trains more easily in deep stacks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import AttentionImpl, KVCache, MultiHeadAttention
from .validation import check_choice, check_positive, check_tensor

__all__ = [
    "FeedForward",
    "Residual",
    "EncoderLayer",
    "DecoderLayer",
    "LayerCache",
    "Encoder",
    "Decoder",
    "EncoderOutput",
]

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


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

    Use it in two halves around the sub-layer: ``h = res.pre(x)``, ``h = sublayer(h)``, ``x = res.post(x, h)``.
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


def _layer_kwargs(d_model, n_heads, d_ff, dropout, activation, norm_first, layer_norm_eps, bias, attn_impl):
    check_positive("d_model", d_model)
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout: expected a probability in [0, 1), got {dropout}")
    return dict(d_model=d_model, n_heads=n_heads, d_ff=d_ff, dropout=dropout, activation=activation,
                norm_first=norm_first, layer_norm_eps=layer_norm_eps, bias=bias, attn_impl=attn_impl)


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside :class:`Residual` (one block of the encoder stack).

    Shape:
        x: (B, S, C), mask: broadcastable to (B, H, S, S) bool -> (B, S, C), weights (B, H, S, S) or None
    """

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
        _layer_kwargs(d_model, n_heads, d_ff, dropout, activation, norm_first, layer_norm_eps, bias, attn_impl)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, bias, attn_impl=attn_impl)
        self.attn_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)
        self.ff = FeedForward(d_model, d_ff, dropout, activation, bias)
        self.ff_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)

    def forward(self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        h = self.attn_res.pre(x)
        h, weights = self.self_attn(h, h, h, mask, need_weights)
        x = self.attn_res.post(x, h)
        x = self.ff_res.post(x, self.ff(self.ff_res.pre(x)))
        return x, weights

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer, *, attn_impl: AttentionImpl = "sdpa") -> "EncoderLayer":
        """Our layer holding the same weights as ``layer`` (always batch-first; see :class:`Encoder` for layout)."""
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise TypeError(f"layer: expected nn.TransformerEncoderLayer, got {type(layer).__name__}")
        ours = cls(**_torch_layer_kwargs(layer), attn_impl=attn_impl)
        _copy_torch_layer(ours, layer, [("attn_res", "norm1"), ("ff_res", "norm2")])
        return ours


@dataclass
class LayerCache:
    """What one decoder layer keeps between decoding steps: its self-attention keys/values (growing) and the
    cross-attention keys/values of the encoder output (computed once)."""

    self_attn: KVCache
    cross_attn: KVCache = field(default_factory=lambda: KVCache(static=True))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder output, then feed-forward (§3.1).

    With ``cross_attention=False`` it is a GPT-style block (masked self-attention + feed-forward).

    Shape:
        y: (B, T, C), memory: (B, S, C), self_mask: to (B, H, T, T), cross_mask: to (B, H, T, S)
        -> (B, T, C), self weights (B, H, T, T) or None, cross weights (B, H, T, S) or None
    """

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
        _layer_kwargs(d_model, n_heads, d_ff, dropout, activation, norm_first, layer_norm_eps, bias, attn_impl)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, bias, attn_impl=attn_impl)
        self.self_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)
        if cross_attention:
            self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, bias, attn_impl=attn_impl)
            self.cross_res = Residual(d_model, dropout, norm_first, layer_norm_eps, bias)
        else:
            self.cross_attn = self.cross_res = None
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
        h = self.self_res.pre(y)
        h, self_w = self.self_attn(h, h, h, self_mask, need_weights, None if cache is None else cache.self_attn)
        y = self.self_res.post(y, h)
        cross_w = None
        if self.cross_attn is not None:
            if memory is None:
                raise ValueError("memory: this decoder layer has cross-attention and needs the encoder output")
            h = self.cross_res.pre(y)
            h, cross_w = self.cross_attn(h, memory, memory, cross_mask, need_weights,
                                         None if cache is None else cache.cross_attn)
            y = self.cross_res.post(y, h)
        y = self.ff_res.post(y, self.ff(self.ff_res.pre(y)))
        return y, self_w, cross_w

    @classmethod
    def from_torch(cls, layer: nn.TransformerDecoderLayer, *, attn_impl: AttentionImpl = "sdpa") -> "DecoderLayer":
        """Our layer holding the same weights as ``layer`` (always batch-first; see :class:`Decoder` for layout)."""
        if not isinstance(layer, nn.TransformerDecoderLayer):
            raise TypeError(f"layer: expected nn.TransformerDecoderLayer, got {type(layer).__name__}")
        ours = cls(**_torch_layer_kwargs(layer), attn_impl=attn_impl)
        _copy_torch_layer(ours, layer, [("self_res", "norm1"), ("cross_res", "norm2"), ("ff_res", "norm3")])
        with torch.no_grad():
            ours.cross_attn.load_state_dict(MultiHeadAttention.from_torch(layer.multihead_attn).state_dict())
        return ours


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
        -> same shape as x
    """

    def __init__(self, layers: Iterable[EncoderLayer], norm: nn.LayerNorm | None = None, batch_first: bool = True):
        super().__init__(layers, norm, batch_first)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.run(x, mask).last_hidden_state

    def run(self, x: Tensor, mask: Tensor | None = None, *, need_weights: bool = False,
            output_hidden_states: bool = False) -> EncoderOutput:
        """Like ``forward``, optionally also returning each layer's attention weights and hidden states."""
        x = self._in("x", x)
        hidden = [x] if output_hidden_states else None
        attentions = [] if need_weights else None
        for layer in self.layers:
            x, w = layer(x, mask, need_weights)
            if hidden is not None:
                hidden.append(x)
            if attentions is not None:
                attentions.append(w)
        return EncoderOutput(self._out(x), hidden, attentions)

    @classmethod
    def from_torch(cls, encoder: nn.TransformerEncoder, *, attn_impl: AttentionImpl = "sdpa") -> "Encoder":
        """Our encoder holding the same weights (layers, final norm, batch_first) as ``encoder``."""
        if not isinstance(encoder, nn.TransformerEncoder):
            raise TypeError(f"encoder: expected nn.TransformerEncoder, got {type(encoder).__name__}")
        layers = [EncoderLayer.from_torch(l, attn_impl=attn_impl) for l in encoder.layers]
        ours = cls(layers, _copy_norm(encoder.norm), encoder.layers[0].self_attn.batch_first)
        return ours.train(encoder.training)


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
        self_ws, cross_ws = ([], []) if need_weights else (None, None)
        for i, layer in enumerate(self.layers):
            y, sw, cw = layer(y, memory, self_mask, cross_mask, need_weights, None if cache is None else cache[i])
            if need_weights:
                self_ws.append(sw)
                cross_ws.append(cw)
        return self._out(y), self_ws, cross_ws

    @classmethod
    def from_torch(cls, decoder: nn.TransformerDecoder, *, attn_impl: AttentionImpl = "sdpa") -> "Decoder":
        """Our decoder holding the same weights (layers, final norm, batch_first) as ``decoder``."""
        if not isinstance(decoder, nn.TransformerDecoder):
            raise TypeError(f"decoder: expected nn.TransformerDecoder, got {type(decoder).__name__}")
        layers = [DecoderLayer.from_torch(l, attn_impl=attn_impl) for l in decoder.layers]
        ours = cls(layers, _copy_norm(decoder.norm), decoder.layers[0].self_attn.batch_first)
        return ours.train(decoder.training)


# --- PyTorch interop helpers: the only place that knows torch's attribute names ---------------------------------

def _torch_layer_kwargs(layer: nn.Module) -> dict:
    act = layer.activation  # torch stores the function (F.relu) or a module (nn.ReLU())
    if act is F.relu or isinstance(act, nn.ReLU):
        activation = "relu"
    elif (act is F.gelu or isinstance(act, nn.GELU)) and getattr(act, "approximate", "none") == "none":
        activation = "gelu"
    else:
        raise ValueError(f"layer: only relu and exact gelu activations can be converted, got {act}")
    return dict(
        d_model=layer.linear1.in_features,
        n_heads=layer.self_attn.num_heads,
        d_ff=layer.linear1.out_features,
        dropout=layer.dropout.p,
        activation=activation,
        norm_first=layer.norm_first,
        layer_norm_eps=layer.norm1.eps,
        bias=layer.linear1.bias is not None,
    )


def _copy_torch_layer(ours: nn.Module, theirs: nn.Module, norms: list[tuple[str, str]]) -> None:
    p = theirs.linear1.weight
    ours.to(device=p.device, dtype=p.dtype)
    with torch.no_grad():
        ours.self_attn.load_state_dict(MultiHeadAttention.from_torch(theirs.self_attn).state_dict())
        ours.ff.linear1.load_state_dict(theirs.linear1.state_dict())
        ours.ff.linear2.load_state_dict(theirs.linear2.state_dict())
        for our_name, their_name in norms:
            getattr(ours, our_name).norm.load_state_dict(getattr(theirs, their_name).state_dict())
    ours.train(theirs.training)


def _copy_norm(norm: nn.LayerNorm | None) -> nn.LayerNorm | None:
    if norm is None:
        return None
    ours = nn.LayerNorm(norm.normalized_shape, eps=norm.eps, bias=norm.bias is not None,
                        device=norm.weight.device, dtype=norm.weight.dtype)
    ours.load_state_dict(norm.state_dict())
    return ours

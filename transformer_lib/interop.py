"""PyTorch's own Transformer modules converted into ours, holding the same weights (chapter 6 §6.4).

The only module that knows ``torch.nn``'s attribute names (``in_proj_weight``, ``linear1``, ``norm1``,
``multihead_attn``...), so that :mod:`.attention` and :mod:`.layers` read like the paper. Each converted module
gives the same outputs as the original (``tests/test_interop.py``: 1e-5 in float32), in train or eval mode as the
original was, on its device and in its dtype.

* :func:`from_torch` — any of the five below, chosen by the module's type.
* :func:`mha_from_torch`, :func:`encoder_layer_from_torch`, :func:`decoder_layer_from_torch`,
  :func:`encoder_from_torch`, :func:`decoder_from_torch`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .attention import AttentionImpl, MultiHeadAttention
from .layers import Decoder, DecoderLayer, Encoder, EncoderLayer

__all__ = [
    "from_torch",
    "mha_from_torch",
    "encoder_layer_from_torch",
    "decoder_layer_from_torch",
    "encoder_from_torch",
    "decoder_from_torch",
]

# our Residual wrapper -> torch's LayerNorm attribute, per layer kind
_ENCODER_NORMS = [("attn_res", "norm1"), ("ff_res", "norm2")]
_DECODER_NORMS = [("self_res", "norm1"), ("cross_res", "norm2"), ("ff_res", "norm3")]


def _expect(name: str, module: object, kind: type) -> None:
    if not isinstance(module, kind):
        raise TypeError(f"{name}: expected nn.{kind.__name__}, got {type(module).__name__}")


def mha_from_torch(mha: nn.MultiheadAttention, *, attn_impl: AttentionImpl = "sdpa") -> MultiHeadAttention:
    """Our :class:`MultiHeadAttention` holding the weights of ``mha`` (its packed ``in_proj`` is our ``qkv_proj``,
    its ``out_proj`` our ``o_proj``, i.e. W^O)."""
    _expect("mha", mha, nn.MultiheadAttention)
    if not mha._qkv_same_embed_dim or mha.bias_k is not None or mha.add_zero_attn:
        raise ValueError("mha: kdim/vdim different from embed_dim, add_bias_kv and add_zero_attn are not supported")
    p = mha.in_proj_weight
    ours = MultiHeadAttention(
        mha.embed_dim,
        mha.num_heads,
        mha.dropout,
        bias=mha.in_proj_bias is not None,
        attn_impl=attn_impl,
        batch_first=mha.batch_first,
    ).to(device=p.device, dtype=p.dtype)
    with torch.no_grad():
        ours.qkv_proj.weight.copy_(p)
        ours.o_proj.weight.copy_(mha.out_proj.weight)
        if mha.in_proj_bias is not None:
            ours.qkv_proj.bias.copy_(mha.in_proj_bias)
            ours.o_proj.bias.copy_(mha.out_proj.bias)
    return ours.train(mha.training)


def encoder_layer_from_torch(layer: nn.TransformerEncoderLayer, *, attn_impl: AttentionImpl = "sdpa") -> EncoderLayer:
    """Our :class:`EncoderLayer` holding the weights of ``layer`` (always batch-first; the stack converts the
    layout, see :func:`encoder_from_torch`)."""
    _expect("layer", layer, nn.TransformerEncoderLayer)
    ours = EncoderLayer(**_layer_kwargs(layer), attn_impl=attn_impl)
    _copy_layer(ours, layer, _ENCODER_NORMS)
    return ours


def decoder_layer_from_torch(layer: nn.TransformerDecoderLayer, *, attn_impl: AttentionImpl = "sdpa") -> DecoderLayer:
    """Our :class:`DecoderLayer` holding the weights of ``layer`` (its ``multihead_attn`` is our cross-attention)."""
    _expect("layer", layer, nn.TransformerDecoderLayer)
    ours = DecoderLayer(**_layer_kwargs(layer), attn_impl=attn_impl)
    _copy_layer(ours, layer, _DECODER_NORMS)
    if ours.cross_attn is None:  # DecoderLayer builds it by default; a torch decoder layer always has one
        raise RuntimeError("DecoderLayer(cross_attention=True) built no cross-attention")
    with torch.no_grad():
        ours.cross_attn.load_state_dict(mha_from_torch(layer.multihead_attn).state_dict())
    return ours


def encoder_from_torch(encoder: nn.TransformerEncoder, *, attn_impl: AttentionImpl = "sdpa") -> Encoder:
    """Our :class:`Encoder` holding the same layers, final norm and ``batch_first`` as ``encoder``."""
    _expect("encoder", encoder, nn.TransformerEncoder)
    layers = [encoder_layer_from_torch(layer, attn_impl=attn_impl) for layer in encoder.layers]
    ours = Encoder(layers, _copy_norm(encoder.norm), encoder.layers[0].self_attn.batch_first)
    return ours.train(encoder.training)


def decoder_from_torch(decoder: nn.TransformerDecoder, *, attn_impl: AttentionImpl = "sdpa") -> Decoder:
    """Our :class:`Decoder` holding the same layers, final norm and ``batch_first`` as ``decoder``."""
    _expect("decoder", decoder, nn.TransformerDecoder)
    layers = [decoder_layer_from_torch(layer, attn_impl=attn_impl) for layer in decoder.layers]
    ours = Decoder(layers, _copy_norm(decoder.norm), decoder.layers[0].self_attn.batch_first)
    return ours.train(decoder.training)


_CONVERTERS: dict[type[nn.Module], Callable[..., nn.Module]] = {
    nn.MultiheadAttention: mha_from_torch,
    nn.TransformerEncoderLayer: encoder_layer_from_torch,
    nn.TransformerDecoderLayer: decoder_layer_from_torch,
    nn.TransformerEncoder: encoder_from_torch,
    nn.TransformerDecoder: decoder_from_torch,
}


def from_torch(module: nn.Module, *, attn_impl: AttentionImpl = "sdpa") -> nn.Module:
    """Our twin of any of ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``, ``nn.TransformerDecoderLayer``,
    ``nn.TransformerEncoder`` or ``nn.TransformerDecoder``, holding the same weights."""
    for kind, convert in _CONVERTERS.items():
        if isinstance(module, kind):
            return convert(module, attn_impl=attn_impl)
    names = ", ".join(f"nn.{k.__name__}" for k in _CONVERTERS)
    raise TypeError(f"module: expected one of {names}, got {type(module).__name__}")


def _layer_kwargs(layer: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer) -> dict:
    """Our layer's constructor arguments read from a torch encoder or decoder layer."""
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


def _copy_layer(
    ours: EncoderLayer | DecoderLayer,
    theirs: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer,
    norms: list[tuple[str, str]],
) -> None:
    """Copy self-attention, feed-forward and the LayerNorms (ours inside Residual wrappers) from ``theirs``."""
    p = theirs.linear1.weight
    ours.to(device=p.device, dtype=p.dtype)
    with torch.no_grad():
        ours.self_attn.load_state_dict(mha_from_torch(theirs.self_attn).state_dict())
        ours.ff.linear1.load_state_dict(theirs.linear1.state_dict())
        ours.ff.linear2.load_state_dict(theirs.linear2.state_dict())
        for our_name, their_name in norms:
            getattr(ours, our_name).norm.load_state_dict(getattr(theirs, their_name).state_dict())
    ours.train(theirs.training)


def _copy_norm(norm: nn.Module | None) -> nn.LayerNorm | None:
    """A copy of a stack's final LayerNorm (None stays None)."""
    if norm is None:
        return None
    if not isinstance(norm, nn.LayerNorm):
        raise TypeError(f"norm: expected the stack's final nn.LayerNorm or None, got {type(norm).__name__}")
    ours = nn.LayerNorm(
        norm.normalized_shape,
        eps=norm.eps,
        bias=norm.bias is not None,
        device=norm.weight.device,
        dtype=norm.weight.dtype,
    )
    ours.load_state_dict(norm.state_dict())
    return ours

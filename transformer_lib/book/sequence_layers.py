"""The sequence layers chapter 1 compares: ``nn.RNN`` / ``nn.LSTM`` / ``nn.GRU`` against self-attention.

:func:`make_sequence_layer` builds a stack of either kind at one width and :func:`hidden_states` reads every
position's state from it; :func:`orthogonal_rnn` builds an RNN whose recurrent matrix has a chosen spectral radius;
:func:`sequential_steps` counts the steps that must run one after another: ``T`` for a recurrent layer, 1 for
attention. The measurements on these layers are in :mod:`transformer_lib.book.recurrent` (timing, gradients) and
:mod:`transformer_lib.book.recall` (the recall task).

Shape legend: ``B`` batch, ``T`` sequence length, ``C`` model width ``d_model``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..layers import Encoder, EncoderLayer
from ..validation import check_choice, check_positive

__all__ = [
    "RECURRENT_KINDS",
    "LAYER_KINDS",
    "make_sequence_layer",
    "hidden_states",
    "orthogonal_rnn",
    "sequential_steps",
]

RECURRENT_KINDS = ("rnn", "lstm", "gru")
LAYER_KINDS = (*RECURRENT_KINDS, "attention")
_RECURRENT = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}


def make_sequence_layer(kind: str, d_model: int, *, n_heads: int = 4, n_layers: int = 1) -> nn.Module:
    """A stack of ``n_layers`` sequence layers of width ``d_model``, without dropout.

    ``"rnn"`` (tanh), ``"lstm"`` and ``"gru"`` are the ``torch.nn`` layers (batch first); ``"attention"`` is a
    :class:`~transformer_lib.layers.Encoder` of self-attention blocks (``d_ff = 4 · d_model``, no mask, no positions).

    Shape:
        input (B, T, C) -> hidden states ``hidden_states(layer, x)``: (B, T, C)
    """
    check_choice("kind", kind, LAYER_KINDS)
    check_positive("d_model", d_model)
    check_positive("n_layers", n_layers)
    if kind == "attention":
        return Encoder([EncoderLayer(d_model, n_heads, 4 * d_model, dropout=0.0) for _ in range(n_layers)])
    return _RECURRENT[kind](d_model, d_model, num_layers=n_layers, batch_first=True)


def hidden_states(layer: nn.Module, x: Tensor) -> Tensor:
    """Hidden states of every position: recurrent layers return (states, last state), an Encoder the states."""
    out = layer(x)
    return out[0] if isinstance(out, tuple) else out  # (B, T, C)


def orthogonal_rnn(d_model: int, radius: float, *, seed: int = 0) -> nn.RNN:
    """A one-layer tanh RNN whose recurrent matrix is ``radius`` times a random orthogonal matrix.

    Every eigenvalue of W_hh then has modulus ``radius``, so a gradient crossing ``k`` steps is multiplied by
    about ``radius^k`` (less, where tanh saturates): < 1 vanishes, > 1 can explode.
    """
    check_positive("d_model", d_model)
    check_positive("radius", radius, integer=False)
    generator = torch.Generator().manual_seed(seed)
    rnn = nn.RNN(d_model, d_model, batch_first=True)
    q, r = torch.linalg.qr(torch.randn(d_model, d_model, generator=generator))
    q = q * torch.sign(torch.diagonal(r))  # a uniformly random orthogonal matrix (fix QR's sign ambiguity)
    with torch.no_grad():
        rnn.get_parameter("weight_hh_l0").copy_(radius * q)
    return rnn


def sequential_steps(kind: str, seq_len: int, n_layers: int = 1) -> int:
    """The longest chain of computations that must run one after another (the critical path).

    A recurrent stack needs ``h_{t-1}`` before ``h_t``: ``seq_len + n_layers - 1`` steps (layers can start as soon as
    the layer below has produced its first state). A self-attention stack computes all positions of a layer at
    once: ``n_layers`` steps, whatever the length (the paper's "sequential operations", Table 1: O(n) against O(1)).
    """
    check_choice("kind", kind, LAYER_KINDS)
    check_positive("seq_len", seq_len)
    check_positive("n_layers", n_layers)
    return n_layers if kind == "attention" else seq_len + n_layers - 1

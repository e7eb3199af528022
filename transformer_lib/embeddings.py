"""Token embeddings and positional encodings (paper §3.4 and §3.5).

Legend for shapes: ``B`` batch, ``T`` length, ``C`` model width ``d_model``.

A token id becomes a vector by a table lookup (``nn.Embedding``), scaled by √d_model as in §3.4. Attention itself
ignores order, so a position signal of the same width is *added* (not concatenated): either the paper's fixed
sinusoids or a learned table (the alternative the paper tried in Table 3, row E).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .validation import check_choice, check_positive, check_tensor

__all__ = [
    "sinusoidal_encoding",
    "TokenEmbedding",
    "SinusoidalPositionalEncoding",
    "LearnedPositionalEmbedding",
    "InputEmbedding",
]


def sinusoidal_encoding(
    max_len: int,
    d_model: int,
    *,
    base: float = 10000.0,
    interleaved: bool = True,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """Return the (max_len, d_model) sinusoidal encoding matrix of §3.5, e.g. for a heatmap.

    ``PE[pos, 2i] = sin(pos / base^(2i/d_model))`` and ``PE[pos, 2i+1] = cos(pos / base^(2i/d_model))``.
    With ``interleaved=False`` all sines come first and all cosines after (Tensor2Tensor's layout): the same
    numbers up to a permutation of the dimensions.

    Shape:
        output: (max_len, d_model)

    Example:

    >>> pe = sinusoidal_encoding(4, 6)  # 4 positions, d_model = 6
    >>> pe[0]  # position 0: sin(0) = 0 in even columns, cos(0) = 1 in odd ones
    tensor([0., 1., 0., 1., 0., 1.])
    >>> round(pe[1, 0].item(), 4)  # sin(1 / 10000^0)
    0.8415
    """
    check_positive("max_len", max_len)
    check_positive("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model: the sinusoidal encoding pairs sin and cos, so it must be even, got {d_model}")
    pos = torch.arange(max_len, device=device, dtype=torch.float64).unsqueeze(1)  # (T, 1)
    two_i = torch.arange(0, d_model, 2, device=device, dtype=torch.float64)  # (C/2,)
    angle = pos / base ** (two_i / d_model)  # (T, C/2): wavelengths grow geometrically from 2π to base·2π
    if interleaved:
        pe = torch.stack((angle.sin(), angle.cos()), dim=-1).flatten(1)  # (T, C): sin, cos, sin, cos, ...
    else:
        pe = torch.cat((angle.sin(), angle.cos()), dim=-1)  # (T, C): all sines, then all cosines
    return pe.to(dtype)


class TokenEmbedding(nn.Module):
    """Lookup table from ids to vectors, multiplied by √d_model (§3.4).

    The scaling puts the embedding on the same scale as the positional encoding (whose entries lie in [-1, 1])
    when the table is initialised with variance 1/d_model, as it is when its weights are tied to the output layer.

    Shape:
        ids: (B, T) int64 -> output: (B, T, C)
    """

    def __init__(self, vocab_size: int, d_model: int, *, scale: bool = True) -> None:
        super().__init__()
        check_positive("vocab_size", vocab_size)
        check_positive("d_model", d_model)
        self.d_model = d_model
        self.scale = scale
        self.weight = nn.Parameter(torch.randn(vocab_size, d_model) * d_model**-0.5)

    @property
    def vocab_size(self) -> int:
        return self.weight.shape[0]

    def forward(self, ids: Tensor) -> Tensor:
        x = nn.functional.embedding(ids, self.weight)  # (B, T, C): row ids[b, t] of the table
        return x * math.sqrt(self.d_model) if self.scale else x


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed sinusoids of :func:`sinusoidal_encoding`; no parameters, defined for any position < max_len.

    Shape:
        x: (B, T, C) -> output: (B, T, C); ``offset`` shifts positions (used by the KV cache when decoding).
    """

    pe: Tensor  # (max_len, C), a buffer: follows .to(device) but is not saved

    def __init__(self, d_model: int, max_len: int = 5000) -> None:
        super().__init__()
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)

    @property
    def max_len(self) -> int:
        return self.pe.shape[0]

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_room("x", x.shape[1] + offset, self.max_len)
        return x + self.pe[offset : offset + x.shape[1]].to(x.dtype)  # (T, C) broadcasts over B


class LearnedPositionalEmbedding(nn.Module):
    """A learned (max_len, d_model) table added to the input: the alternative to sinusoids (§3.5, Table 3 (E)).

    It knows nothing about positions it never saw in training, and nothing at all beyond ``max_len``.

    Shape:
        x: (B, T, C) -> output: (B, T, C)
    """

    def __init__(self, d_model: int, max_len: int = 512) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    @property
    def max_len(self) -> int:
        return self.weight.shape[0]

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_room("x", x.shape[1] + offset, self.max_len)
        return x + self.weight[offset : offset + x.shape[1]]


class InputEmbedding(nn.Module):
    """Token embedding + positions (+ optional token types and LayerNorm, as BERT has), then dropout.

    This is the whole bottom of the model diagram: String -> ids (not learned) -> vectors (learned).

    Shape:
        ids: (B, T) int64, token_type_ids: (B, T) int64 or None -> output: (B, T, C)
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_len: int,
        *,
        positional: str = "sinusoidal",
        dropout: float = 0.0,
        scale: bool = True,
        n_token_types: int = 0,
        norm: bool = False,
        layer_norm_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        check_choice("positional", positional, ("sinusoidal", "learned"))
        self.token = TokenEmbedding(vocab_size, d_model, scale=scale)
        self.position: nn.Module = (
            SinusoidalPositionalEncoding(d_model, max_len)
            if positional == "sinusoidal"
            else LearnedPositionalEmbedding(d_model, max_len)
        )
        self.token_type = nn.Embedding(n_token_types, d_model) if n_token_types else None
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps) if norm else None
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: Tensor, token_type_ids: Tensor | None = None, offset: int = 0) -> Tensor:
        x = self.position(self.token(ids), offset)  # (B, T, C)
        if self.token_type is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(ids)
            x = x + self.token_type(check_tensor("token_type_ids", token_type_ids, ndim=2, dtype="int"))
        if self.norm is not None:
            x = self.norm(x)
        return self.dropout(x)


def _check_room(name: str, needed: int, max_len: int) -> None:
    if needed > max_len:
        raise ValueError(
            f"{name}: positions up to {needed - 1} are needed but the positional table holds max_len={max_len}; "
            "build the model with a larger max_len"
        )

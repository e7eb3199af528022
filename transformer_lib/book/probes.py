"""Measurements behind Chapters 3 and 4: why positions are needed, why sinusoids, why ÷√d_k.

Each function turns one claim of the paper into a number a chapter can assert. Random samples are drawn on the
CPU from a seeded generator, so they are the same on every machine.

Probes or diagnostics? This module measures the *mechanisms* of chapters 3 and 4 on their own (the attention
function, the sinusoids, the softmax and its ÷√d_k), mostly on random vectors; the measurements of the library's
built layers and models (masked decoders, multi-head modules, parameter counts, normalisation) are in
:mod:`transformer_lib.book.diagnostics`.

Shape legend: ``B`` batch, ``T`` length, ``C`` model width ``d_model``, ``N`` samples, ``S`` keys.

* Attention is permutation-equivariant (§3.5's reason for positions): :func:`permutation_equivariance_gap`.
* The sinusoids of §3.5 turn a shift by ``k`` positions into a fixed rotation: :func:`sinusoid_shift_matrix`
  builds that block-diagonal ``M_k`` with ``PE(pos + k) = M_k · PE(pos)``; :func:`sin_cos_permutation` maps the
  paper's interleaved layout to Tensor2Tensor's concatenated one.
* The ÷√d_k of §3.2.1 and its footnote 4: :func:`dot_product_variance` measures Var(q·k) for random q, k;
  :func:`softmax_stats` and :func:`saturation_sweep` measure how peaked the softmax gets and how small its
  gradient becomes; :func:`disable_attention_scaling` builds the unscaled variant of a model to train (with
  the parametrization :class:`ScaleQueryRows`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn
from torch.nn.utils import parametrize

from ..attention import MultiHeadAttention
from ..validation import check_positive, check_tensor

__all__ = [
    "permutation_equivariance_gap",
    "sinusoid_shift_matrix",
    "sin_cos_permutation",
    "random_dot_products",
    "dot_product_variance",
    "softmax_stats",
    "saturation_sweep",
    "ScaleQueryRows",
    "disable_attention_scaling",
]


# -- positions (Chapter 3) ---------------------------------------------------------------------------------------
def permutation_equivariance_gap(
    fn: Callable[[Tensor], Tensor], x: Tensor, perm: Tensor | None = None, *, seed: int = 0
) -> float:
    """Largest |fn(x[:, perm]) - fn(x)[:, perm]|: zero (up to rounding) when shuffling the input positions
    shuffles the output the same way, as it does for attention without positions.

    ``perm`` is a permutation of ``range(T)``; by default a random one drawn from ``seed``. Introduced in
    Chapter 3.

    Shape:
        x: (B, T, C), perm: (T,) int64; ``fn`` maps (B, T, C) to (B, T, ...)
    """
    check_tensor("x", x, ndim=3, dtype="float")
    T = x.shape[1]
    if perm is None:
        perm = torch.randperm(T, generator=torch.Generator().manual_seed(seed))
    check_tensor("perm", perm, ndim=1, dtype="int")
    if not torch.equal(perm.sort().values.cpu(), torch.arange(T)):
        raise ValueError(f"perm: expected a permutation of range({T}), got {perm.tolist()}")
    perm = perm.to(x.device)
    with torch.no_grad():
        shuffled_then_fn = fn(x[:, perm])  # (B, T, ...)
        fn_then_shuffled = fn(x)[:, perm]  # (B, T, ...)
    return float((shuffled_then_fn - fn_then_shuffled).abs().max())


def sinusoid_shift_matrix(
    k: int, d_model: int, *, base: float = 10000.0, interleaved: bool = True, dtype: torch.dtype = torch.float64
) -> Tensor:
    """The matrix ``M_k`` with ``PE(pos + k) = M_k · PE(pos)`` for every ``pos`` (the sinusoids of §3.5).

    Each frequency ω_i = base^(-2i/d_model) owns the pair (sin ω_i·pos, cos ω_i·pos); by the angle-addition
    formulas, shifting ``pos`` by ``k`` rotates that pair by the angle ω_i·k::

        [sin ω(pos+k)]   [ cos ωk   sin ωk] [sin ω·pos]
        [cos ω(pos+k)] = [-sin ωk   cos ωk] [cos ω·pos]

    ``M_k`` depends on ``k`` only, not on ``pos``: the reason a linear map can read relative positions.
    With ``interleaved=True`` (the paper's layout) the 2x2 blocks sit on the diagonal; with ``False``
    (Tensor2Tensor's sines-then-cosines) the same entries sit on four diagonals. Introduced in Chapter 3.

    Shape:
        output: (d_model, d_model)
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k: expected an int offset, got {k!r} ({type(k).__name__})")
    check_positive("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model: the sinusoidal encoding pairs sin and cos, so it must be even, got {d_model}")
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (C/2,)
    angle = k / base ** (two_i / d_model)  # (C/2,): ω_i · k
    cos, sin = angle.cos(), angle.sin()
    half = d_model // 2
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    s_idx, c_idx = (
        (torch.arange(0, d_model, 2), torch.arange(1, d_model, 2))
        if interleaved
        else (torch.arange(half), torch.arange(half, d_model))
    )  # where the sines and the cosines live
    m[s_idx, s_idx], m[s_idx, c_idx] = cos, sin
    m[c_idx, s_idx], m[c_idx, c_idx] = -sin, cos
    return m.to(dtype)


def sin_cos_permutation(d_model: int) -> Tensor:
    """Column order that turns the concatenated layout into the interleaved one:
    ``sinusoidal_encoding(T, C, interleaved=False)[:, perm] == sinusoidal_encoding(T, C)``. Chapter 3.

    Shape:
        output: (d_model,) int64
    """
    check_positive("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model: the sinusoidal encoding pairs sin and cos, so it must be even, got {d_model}")
    half = d_model // 2
    return torch.stack((torch.arange(half), torch.arange(half) + half), dim=1).flatten()  # 0, h, 1, h+1, ...


# -- the √d_k argument (Chapter 4) -------------------------------------------------------------------------------
def random_dot_products(
    d_ks: Sequence[int], n_samples: int, *, n_keys: int = 1, seed: int = 0, chunk: int = 1 << 22
) -> Tensor:
    """Dot products q·k of random queries and keys with independent N(0, 1) entries, for several widths d_k.

    One draw at the largest width serves every width: the dot product over the first d_k coordinates is a prefix
    sum of q_i·k_i, so each d_k gets ``n_samples`` exact samples of its distribution (samples of different widths
    share coordinates, so they are correlated with each other). Rows are drawn ``chunk`` numbers at a time, on
    the CPU. Introduced in Chapter 4.

    Shape:
        output: (len(d_ks), n_samples, n_keys), float64; entry [j, n, s] = q_n · k_{n,s} over d_ks[j] coordinates
    """
    d_ks = _check_widths(d_ks)
    check_positive("n_samples", n_samples)
    check_positive("n_keys", n_keys)
    width = max(d_ks)
    cols = torch.tensor(d_ks) - 1  # prefix sum j ends at column d_k - 1
    gen = torch.Generator().manual_seed(seed)
    rows = max(1, chunk // (n_keys * width))
    parts = []
    for start in range(0, n_samples, rows):
        n = min(rows, n_samples - start)
        q = torch.randn(n, 1, width, generator=gen)  # (N, 1, d)
        k = torch.randn(n, n_keys, width, generator=gen)  # (N, S, d)
        prefix = (q * k).cumsum(-1, dtype=torch.float64)  # (N, S, d): q·k over the first 1, 2, ..., d coordinates
        parts.append(prefix[..., cols].permute(2, 0, 1))  # (len(d_ks), N, S)
    return torch.cat(parts, dim=1)


def dot_product_variance(d_ks: Sequence[int], n_samples: int = 50_000, *, seed: int = 0) -> dict[str, list[float]]:
    """Sample variance of q·k and of q·k/√d_k for each d_k, with q, k ~ N(0, I) (footnote 4 of §3.2.1).

    Each q_i·k_i has mean 0 and variance 1, so a sum of d_k of them has variance d_k; dividing by √d_k brings it
    back to 1. Returns lists aligned with ``d_ks``: ``d_k``, ``var`` and ``var_scaled``. Chapter 4.
    """
    check_positive("n_samples", n_samples)
    if n_samples < 2:
        raise ValueError(f"n_samples: a variance needs at least 2 samples, got {n_samples}")
    dots = random_dot_products(d_ks, n_samples, seed=seed)[..., 0]  # (len(d_ks), N)
    d = torch.tensor(d_ks, dtype=torch.float64)
    var = dots.var(dim=1)
    var_scaled = (dots / d.sqrt()[:, None]).var(dim=1)  # §3.2.1: "we scale the dot products by 1/√d_k"
    return {"d_k": list(d_ks), "var": var.tolist(), "var_scaled": var_scaled.tolist()}


def softmax_stats(scores: Tensor) -> dict[str, Tensor]:
    """How peaked softmax(scores) is along the last dimension, and how much gradient it lets through.

    Returns ``max_prob`` (the largest weight), ``entropy`` (in nats; log S for a uniform row, 0 for a one-hot row)
    and ``jacobian_norm``, the Frobenius norm of ∂softmax/∂scores = diag(p) - p pᵀ, in closed form
    ``√(Σp² - 2Σp³ + (Σp²)²)``: it tends to 0 as the row becomes one-hot, so almost no gradient reaches the scores.
    Computed in float64. Introduced in Chapter 4.

    Shape:
        scores: (..., S) -> each value (...)
    """
    check_tensor("scores", scores, dtype="float")
    if scores.dim() == 0 or scores.shape[-1] == 0:
        raise ValueError(f"scores: expected at least one key in the last dimension, got shape {tuple(scores.shape)}")
    p = scores.double().softmax(-1)  # (..., S)
    p2, p3 = (p**2).sum(-1), (p**3).sum(-1)
    entropy = -torch.special.xlogy(p, p).sum(-1)  # 0·log 0 = 0
    jac = (p2 - 2 * p3 + p2**2).clamp_min(0).sqrt()
    return {"max_prob": p.max(-1).values, "entropy": entropy, "jacobian_norm": jac}


def saturation_sweep(
    d_ks: Sequence[int], *, n_keys: int = 10, n_samples: int = 2000, scaled: bool = True, seed: int = 0
) -> dict[str, list[float]]:
    """Average :func:`softmax_stats` of one random query against ``n_keys`` random keys, for each d_k in ``d_ks``.

    Scores are q·k (:func:`random_dot_products`), divided by √d_k when ``scaled``. Returns lists aligned with
    ``d_ks``: ``d_k``, ``max_prob``, ``entropy``, ``jacobian_norm`` (means over ``n_samples`` queries), ready
    for ``pandas.DataFrame``. Chapter 4.
    """
    scores = random_dot_products(d_ks, n_samples, n_keys=n_keys, seed=seed)  # (len(d_ks), N, S)
    if scaled:
        scores = scores / torch.tensor(d_ks, dtype=torch.float64).sqrt()[:, None, None]
    stats = softmax_stats(scores)  # each (len(d_ks), N)
    return {"d_k": list(d_ks), **{name: value.mean(dim=1).tolist() for name, value in stats.items()}}


def _check_widths(d_ks: Sequence[int]) -> list[int]:
    if isinstance(d_ks, (int, Tensor)) or len(d_ks) == 0:
        raise ValueError(f"d_ks: expected a non-empty sequence of key widths, got {d_ks!r}")
    for d in d_ks:
        check_positive("d_ks[i]", d)
    return list(d_ks)


class ScaleQueryRows(nn.Module):
    """A :mod:`torch.nn.utils.parametrize` parametrization of ``MultiHeadAttention.qkv_proj``: multiplies the
    W^Q rows of the weight (its first ``d_model`` rows), or the matching entries of the bias, by ``factor``.

    Shape:
        w: (3C, C) weight or (3C,) bias -> same shape
    """

    def __init__(self, d_model: int, factor: float) -> None:
        super().__init__()
        self.d_model, self.factor = d_model, factor

    def forward(self, w: Tensor) -> Tensor:
        scale = torch.ones(w.shape[0], *([1] * (w.dim() - 1)), dtype=w.dtype, device=w.device)  # (3C, 1) or (3C,)
        scale[: self.d_model] = self.factor
        return w * scale


def disable_attention_scaling(model: nn.Module) -> nn.Module:
    """Make every :class:`~transformer_lib.attention.MultiHeadAttention` in ``model`` compute softmax(q·k) v,
    without the ÷√d_k of §3.2.1, in place; return ``model``.

    The library's attention always divides by √d_head, so this multiplies the query projection by √d_head on the
    fly (a :mod:`torch.nn.utils.parametrize` parametrization of ``qkv_proj``): (√d·q)·k / √d = q·k. The trainable
    parameters and their initial values stay the same, so training the result is training the unscaled model.
    (Their names in ``state_dict`` change to ``qkv_proj.parametrizations.weight.original`` and so on.)
    Introduced in Chapter 4.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected an nn.Module, got {type(model).__name__}")
    layers = [m for m in model.modules() if isinstance(m, MultiHeadAttention)]
    if not layers:
        raise ValueError(
            f"model: expected at least one MultiHeadAttention inside, found none in {type(model).__name__}"
        )
    for mha in layers:
        if parametrize.is_parametrized(mha.qkv_proj):
            raise ValueError("model: attention scaling is already disabled (qkv_proj is parametrized)")
        factor = math.sqrt(mha.d_head)
        for name in ("weight", "bias"):
            if getattr(mha.qkv_proj, name, None) is not None:
                parametrize.register_parametrization(mha.qkv_proj, name, ScaleQueryRows(mha.d_model, factor))
    return model

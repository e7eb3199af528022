"""Tests for transformer_lib.book.probes: the measurements of Chapters 3 and 4 return the right numbers."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny import tiny_config

import transformer_lib as tl
from transformer_lib.book import probes


# -- permutation equivariance -----------------------------------------------------------------------------------
def test_attention_without_positions_is_permutation_equivariant():
    tl.seed_everything(0)
    mha = tl.MultiHeadAttention(32, 4).eval()
    layer = tl.EncoderLayer(32, 4, 64, dropout=0.0).eval()
    x = torch.randn(2, 7, 32)
    assert probes.permutation_equivariance_gap(lambda t: mha(t, t, t)[0], x) < 1e-5
    assert probes.permutation_equivariance_gap(lambda t: layer(t)[0], x, torch.tensor([6, 5, 4, 3, 2, 1, 0])) < 1e-5


def test_positions_break_permutation_equivariance():
    tl.seed_everything(0)
    layer = tl.EncoderLayer(32, 4, 64, dropout=0.0).eval()
    pe = tl.SinusoidalPositionalEncoding(32, max_len=16)
    x = torch.randn(2, 7, 32)
    assert probes.permutation_equivariance_gap(lambda t: layer(pe(t))[0], x) > 0.1


def test_permutation_equivariance_gap_rejects_a_non_permutation():
    with pytest.raises(ValueError, match="perm: expected a permutation of range\\(3\\)"):
        probes.permutation_equivariance_gap(lambda t: t, torch.randn(1, 3, 4), torch.tensor([0, 0, 1]))
    with pytest.raises(ValueError, match="x: expected 3 dimensions"):
        probes.permutation_equivariance_gap(lambda t: t, torch.randn(3, 4))


# -- the sinusoid shift matrix ----------------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(k=st.integers(-40, 40), half=st.integers(1, 32), interleaved=st.booleans())
def test_shift_matrix_moves_every_position_by_k(k, half, interleaved):
    d_model = 2 * half
    pe = tl.sinusoidal_encoding(120, d_model, interleaved=interleaved, dtype=torch.float64)  # (T, C)
    m = probes.sinusoid_shift_matrix(k, d_model, interleaved=interleaved)
    lo, hi = max(0, -k), 120 - max(0, k)
    shifted = pe[lo:hi] @ m.T  # row pos -> M_k PE(pos)
    torch.testing.assert_close(shifted, pe[lo + k : hi + k], atol=1e-10, rtol=0)


def test_shift_matrix_is_a_rotation_group():
    m = probes.sinusoid_shift_matrix
    torch.testing.assert_close(m(0, 16), torch.eye(16, dtype=torch.float64))
    torch.testing.assert_close(m(3, 16) @ m(4, 16), m(7, 16))  # shifting by 3 then 4 = shifting by 7
    torch.testing.assert_close(m(5, 16).T @ m(5, 16), torch.eye(16, dtype=torch.float64))  # orthogonal
    torch.testing.assert_close(m(-5, 16), m(5, 16).T)
    block = m(1, 4)[:2, :2]  # the first frequency is 1 rad per position
    expected = torch.tensor([[math.cos(1), math.sin(1)], [-math.sin(1), math.cos(1)]], dtype=torch.float64)
    torch.testing.assert_close(block, expected)
    assert m(1, 4)[:2, 2:].abs().max() == 0  # block-diagonal in the interleaved layout


def test_shift_matrix_validates():
    with pytest.raises(ValueError, match="d_model: .* must be even, got 7"):
        probes.sinusoid_shift_matrix(1, 7)
    with pytest.raises(TypeError, match="k: expected an int offset"):
        probes.sinusoid_shift_matrix(1.5, 8)


def test_sin_cos_permutation_maps_concatenated_to_interleaved():
    perm = probes.sin_cos_permutation(10)
    assert perm.tolist() == [0, 5, 1, 6, 2, 7, 3, 8, 4, 9]
    inter = tl.sinusoidal_encoding(50, 10)
    concat = tl.sinusoidal_encoding(50, 10, interleaved=False)
    assert torch.equal(concat[:, perm], inter)
    assert not torch.equal(concat, inter)
    with pytest.raises(ValueError, match="must be even"):
        probes.sin_cos_permutation(5)


# -- the √d_k argument --------------------------------------------------------------------------------------------
def test_random_dot_products_are_prefix_sums_of_one_draw():
    dots = probes.random_dot_products([1, 4, 16], 300, n_keys=3, seed=1, chunk=100)  # several chunks
    assert dots.shape == (3, 300, 3)
    assert torch.equal(dots, probes.random_dot_products([1, 4, 16], 300, n_keys=3, seed=1, chunk=100))
    assert not torch.equal(dots, probes.random_dot_products([1, 4, 16], 300, n_keys=3, seed=2, chunk=100))
    with pytest.raises(ValueError, match="d_ks: expected a non-empty sequence"):
        probes.random_dot_products([], 10)
    with pytest.raises(ValueError, match=r"d_ks\[i\]: expected a value > 0, got 0"):
        probes.random_dot_products([4, 0], 10)


def test_dot_product_variance_grows_like_d_k_and_scaling_undoes_it():
    table = probes.dot_product_variance([1, 8, 64, 512], n_samples=40_000)
    assert table["d_k"] == [1, 8, 64, 512]
    for d_k, var, var_scaled in zip(table["d_k"], table["var"], table["var_scaled"], strict=True):
        assert var / d_k == pytest.approx(1.0, abs=0.06)
        assert var_scaled == pytest.approx(1.0, abs=0.06)
        assert var_scaled == pytest.approx(var / d_k)


def test_softmax_stats_of_uniform_and_peaked_rows():
    stats = probes.softmax_stats(torch.zeros(2, 5))
    torch.testing.assert_close(stats["max_prob"], torch.full((2,), 0.2, dtype=torch.float64))
    torch.testing.assert_close(stats["entropy"], torch.full((2,), math.log(5), dtype=torch.float64))
    peaked = probes.softmax_stats(torch.tensor([100.0, 0.0, 0.0]))
    assert peaked["max_prob"] > 0.999999 and peaked["entropy"] < 1e-6 and peaked["jacobian_norm"] < 1e-6
    with pytest.raises(TypeError, match="scores: expected a float"):
        probes.softmax_stats(torch.zeros(3, dtype=torch.long))


def test_softmax_jacobian_norm_matches_autograd():
    scores = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 3
    norms = probes.softmax_stats(scores)["jacobian_norm"]
    for row, norm in zip(scores, norms, strict=True):
        jac = torch.autograd.functional.jacobian(lambda s: s.softmax(-1), row)  # (S, S)
        assert float(norm) == pytest.approx(float(jac.norm()), rel=1e-9)


def test_saturation_sweep_unscaled_saturates_scaled_does_not():
    d_ks = [1, 16, 256, 1024]
    scaled = probes.saturation_sweep(d_ks, n_samples=1000, scaled=True)
    raw = probes.saturation_sweep(d_ks, n_samples=1000, scaled=False)
    assert raw["d_k"] == d_ks and set(raw) == {"d_k", "max_prob", "entropy", "jacobian_norm"}
    assert raw["max_prob"] == sorted(raw["max_prob"]) and raw["max_prob"][-1] > 0.95
    assert raw["jacobian_norm"][-1] < 0.2 * scaled["jacobian_norm"][-1]
    assert max(scaled["max_prob"]) - min(scaled["max_prob"]) < 0.08  # flat in d_k once scaled
    assert scaled["max_prob"][0] == pytest.approx(raw["max_prob"][0])  # d_k = 1: √1 = 1 changes nothing


# -- the unscaled model variant ---------------------------------------------------------------------------------
def _unscaled_reference(mha: tl.MultiHeadAttention, query: torch.Tensor, kv: torch.Tensor) -> torch.Tensor:
    C, H = mha.d_model, mha.n_heads
    W, b = mha.qkv_proj.parametrizations.weight.original, mha.qkv_proj.parametrizations.bias.original

    def split(t):
        return t.view(t.shape[0], t.shape[1], H, C // H).transpose(1, 2)  # (B, H, T, D)

    q = split(query @ W[:C].T + b[:C])
    k, v = split(kv @ W[C : 2 * C].T + b[C : 2 * C]), split(kv @ W[2 * C :].T + b[2 * C :])
    out, _ = tl.scaled_dot_product_attention(q, k, v, scale=1.0)  # softmax(q·k) v, no ÷√d_k
    return mha.o_proj(out.transpose(1, 2).reshape(query.shape))


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_disable_attention_scaling_gives_softmax_of_raw_dot_products(impl):
    tl.seed_everything(0)
    mha = tl.MultiHeadAttention(32, 2, attn_impl=impl).eval()
    x, memory = torch.randn(2, 5, 32), torch.randn(2, 4, 32)
    before = mha(x, x, x)[0]
    n_params = sum(p.numel() for p in mha.parameters())
    assert probes.disable_attention_scaling(mha) is mha
    assert sum(p.numel() for p in mha.parameters()) == n_params  # same trainable parameters
    with torch.no_grad():
        torch.testing.assert_close(mha(x, x, x)[0], _unscaled_reference(mha, x, x))  # self-attention path
        torch.testing.assert_close(mha(x, memory, memory)[0], _unscaled_reference(mha, x, memory))  # cross path
        assert (mha(x, x, x)[0] - before).abs().max() > 1e-3


def test_disable_attention_scaling_reaches_every_layer_and_trains():
    tl.seed_everything(0)
    cfg = tiny_config(src_vocab_size=12, tgt_vocab_size=12, max_len=16)  # tests/tiny.py
    model = probes.disable_attention_scaling(tl.Transformer(cfg))
    n_attn = sum(isinstance(m, tl.MultiHeadAttention) for m in model.modules())
    n_param = sum(torch.nn.utils.parametrize.is_parametrized(m) for m in model.modules())
    assert n_attn == 6 and n_param == 6  # 2 encoder self, 2 decoder self, 2 cross
    src, tgt = torch.randint(4, 12, (2, 6)), torch.randint(4, 12, (2, 5))
    model(src, tgt).sum().backward()
    grad = model.encoder.layers[0].self_attn.qkv_proj.parametrizations.weight.original.grad
    assert grad is not None and grad.abs().sum() > 0
    with pytest.raises(ValueError, match="already disabled"):
        probes.disable_attention_scaling(model)
    with pytest.raises(ValueError, match="found none"):
        probes.disable_attention_scaling(torch.nn.Linear(2, 2))


def test_disable_attention_scaling_without_bias():
    tl.seed_everything(0)
    mha = probes.disable_attention_scaling(tl.MultiHeadAttention(16, 1, bias=False).eval())
    x = torch.randn(1, 3, 16)
    W = mha.qkv_proj.parametrizations.weight.original
    q, k, v = (x @ W[i * 16 : (i + 1) * 16].T for i in range(3))
    expected = mha.o_proj((q @ k.transpose(1, 2)).softmax(-1) @ v)
    torch.testing.assert_close(mha(x, x, x)[0], expected)


def test_scale_query_rows_scales_only_the_query_part():
    scale = probes.ScaleQueryRows(d_model=2, factor=3.0)
    w = scale(torch.ones(6, 2))
    assert w[:2].eq(3.0).all() and w[2:].eq(1.0).all()
    assert scale(torch.ones(6)).tolist() == [3.0, 3.0, 1.0, 1.0, 1.0, 1.0]


def test_dot_product_variance_validates_the_sample_count():
    with pytest.raises(ValueError, match="n_samples: a variance needs at least 2 samples, got 1"):
        probes.dot_product_variance([4], n_samples=1)
    with pytest.raises(TypeError, match="n_samples: expected an int"):
        probes.dot_product_variance([4], n_samples=2.5)

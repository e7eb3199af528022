"""The attention kernel and multi-head attention: fast = eager, properties, masks, bad input."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_lib as tl


def _qkv(B=2, H=3, T=5, S=6, D=8, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(B, H, T, D, generator=g, dtype=dtype),
        torch.randn(B, H, S, D, generator=g, dtype=dtype),
        torch.randn(B, H, S, D, generator=g, dtype=dtype),
    )


def _random_mask(shape, seed, p=0.6, full_rows=True):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=g) < p
    if full_rows:
        mask[..., 0, :] = False  # one query with every key masked
    return mask


@pytest.mark.parametrize("masking", ["none", "random", "causal", "padding"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eager_and_sdpa_agree(masking, dtype):
    q, k, v = _qkv(dtype=dtype)
    mask = {
        "none": None,
        "random": _random_mask((2, 1, 5, 6), 1),
        "causal": tl.causal_mask(6)[:5],
        "padding": tl.padding_mask(torch.tensor([[4, 5, 6, 0, 0, 0], [4, 5, 6, 7, 8, 9]])),
    }[masking]
    eager, _ = tl.scaled_dot_product_attention(q, k, v, mask, impl="eager")
    fast, _ = tl.scaled_dot_product_attention(q, k, v, mask, impl="sdpa")
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    assert (eager - fast).abs().max() < tol
    assert not torch.isnan(fast).any()


def test_matches_the_formula_and_torch():
    q, k, v = _qkv(dtype=torch.float64)
    want = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), -1) @ v
    got, w = tl.scaled_dot_product_attention(q, k, v, need_weights=True)
    assert torch.allclose(got, want, atol=1e-12)
    assert torch.allclose(got, torch.nn.functional.scaled_dot_product_attention(q, k, v), atol=1e-12)
    assert w.shape == (2, 3, 5, 6)


def test_fully_masked_rows_are_zero_not_nan_in_both_paths_and_in_gradients():
    q, k, v = (t.requires_grad_() for t in _qkv())
    mask = torch.zeros(5, 6, dtype=torch.bool)
    mask[1:, :2] = True
    for impl in ("eager", "sdpa"):
        out, w = tl.scaled_dot_product_attention(q, k, v, mask, impl=impl, need_weights=impl == "eager")
        assert torch.equal(out[:, :, 0], torch.zeros_like(out[:, :, 0]))
        out.sum().backward()
        assert not any(torch.isnan(t.grad).any() for t in (q, k, v))
        if w is not None:
            assert torch.equal(w[:, :, 0], torch.zeros_like(w[:, :, 0]))


@settings(max_examples=40, deadline=None)
@given(T=st.integers(1, 6), S=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_rows_sum_to_one_over_allowed_keys_and_zero_on_masked(T, S, seed):
    q, k, v = _qkv(B=1, H=2, T=T, S=S, seed=seed)
    mask = _random_mask((1, 1, T, S), seed, full_rows=False)
    _, w = tl.scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    allowed = mask.expand_as(w)
    assert torch.all(w[~allowed] == 0)
    sums = w.sum(-1)
    has_key = mask.any(-1).expand_as(sums)
    assert torch.allclose(sums[has_key], torch.ones_like(sums[has_key]), atol=1e-6)
    assert torch.all(sums[~has_key] == 0)


@settings(max_examples=25, deadline=None)
@given(T=st.integers(2, 7), seed=st.integers(0, 10_000))
def test_self_attention_without_positions_is_permutation_equivariant(T, seed):
    torch.manual_seed(seed)
    layer = tl.EncoderLayer(16, 4, 32, dropout=0.0).double().eval()
    x = torch.randn(2, T, 16, dtype=torch.float64)
    perm = torch.randperm(T)
    out = layer(x)[0]
    assert torch.allclose(layer(x[:, perm])[0], out[:, perm], atol=1e-10)


def test_multi_head_equals_separate_heads_concatenated():
    torch.manual_seed(0)
    mha = tl.MultiHeadAttention(12, 3).double().eval()
    x = torch.randn(2, 4, 12, dtype=torch.float64)
    Wq, Wk, Wv = mha.qkv_proj.weight.chunk(3)
    bq, bk, bv = mha.qkv_proj.bias.chunk(3)
    heads = []
    for h in range(3):
        s = slice(4 * h, 4 * h + 4)
        q, k, v = x @ Wq[s].T + bq[s], x @ Wk[s].T + bk[s], x @ Wv[s].T + bv[s]
        heads.append(torch.softmax(q @ k.transpose(-1, -2) / 2.0, -1) @ v)
    want = mha.o_proj(torch.cat(heads, -1))
    assert torch.allclose(mha(x, x, x)[0], want, atol=1e-12)


def test_eager_and_sdpa_modules_agree_with_dropout_off():
    torch.manual_seed(0)
    a = tl.MultiHeadAttention(16, 4, attn_impl="eager").eval()
    b = tl.MultiHeadAttention(16, 4, attn_impl="sdpa").eval()
    b.load_state_dict(a.state_dict())
    x, m = torch.randn(2, 5, 16), torch.randn(2, 3, 16)
    assert torch.allclose(a(x, m, m)[0], b(x, m, m)[0], atol=1e-6)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda q, k, v: tl.scaled_dot_product_attention(q, k, v, torch.ones(5, 6)),
            TypeError,
            "mask: expected a boolean",
        ),
        (
            lambda q, k, v: tl.scaled_dot_product_attention(q, k, v, torch.ones(4, 6, dtype=torch.bool)),
            ValueError,
            r"mask: shape \(4, 6\) does not broadcast",
        ),
        (lambda q, k, v: tl.scaled_dot_product_attention(q, k[..., :4], v), ValueError, "q, k, v: expected"),
        (
            lambda q, k, v: tl.scaled_dot_product_attention(q.long(), k, v),
            TypeError,
            "q: expected a floating-point tensor",
        ),
        (lambda q, k, v: tl.scaled_dot_product_attention(q, k, v, impl="flash"), ValueError, "impl: expected one of"),
        (lambda q, k, v: tl.scaled_dot_product_attention(q, k, v, dropout_p=1.5), ValueError, "dropout_p"),
        (lambda q, k, v: tl.MultiHeadAttention(10, 3), ValueError, "d_model: must be divisible by n_heads=3"),
        (
            lambda q, k, v: tl.MultiHeadAttention(12, 3)(q[0], q[0], q[0]),
            ValueError,
            "expected last dimension d_model=12",
        ),
    ],
)
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(*_qkv())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_low_precision_paths_agree_with_float32_cpu(dtype):
    q, k, v = _qkv(T=64, S=64, D=64)
    mask = tl.causal_mask(64)
    want, _ = tl.scaled_dot_product_attention(q, k, v, mask)
    for impl in ("eager", "sdpa"):
        got, _ = tl.scaled_dot_product_attention(*(t.cuda().to(dtype) for t in (q, k, v)), mask.cuda(), impl=impl)
        assert (got.float().cpu() - want).abs().max() < 3e-2

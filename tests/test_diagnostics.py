"""The measurements of chapters 5 and 6: naive masks, parallel = sequential, the peeking decoder, heads one by one,
parameter counts, LayerNorm against BatchNorm, gradient norms at initialisation."""

import math

import pytest
import torch
from tiny import tiny_config
from torch import nn

import transformer_lib as tl
from transformer_lib.book import diagnostics as dg


def _tiny(**overrides) -> tl.TransformerConfig:
    return tiny_config(**{"tgt_vocab_size": 20, "max_len": 32, **overrides})  # tests/tiny.py


# --- naive masks -----------------------------------------------------------------------------------------------
def _scores_and_mask(dtype=torch.float32):
    g = torch.Generator().manual_seed(0)
    scores = torch.randn(3, 4, generator=g).to(dtype)
    mask = torch.tensor([[1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 0]], dtype=torch.bool)  # last row: all blocked
    return scores, mask


def test_multiply_after_softmax_breaks_row_sums():
    scores, mask = _scores_and_mask()
    w = dg.naive_masked_softmax(scores, mask, "multiply_after")
    assert torch.all(w[~mask] == 0)
    sums = w.sum(-1)
    assert torch.all(sums[:2] < 1 - 1e-3)  # the blocked keys' share is lost
    assert sums[2] == 0
    right = dg.naive_masked_softmax(scores, mask, "add_neg_inf")
    assert torch.allclose(right[:2].sum(-1), torch.ones(2))
    # renormalising the multiplied rows gives the right answer back
    assert torch.allclose(w[:2] / w[:2].sum(-1, keepdim=True), right[:2], atol=1e-6)


def test_multiply_before_works_only_for_positive_blocked_scores():
    scores = torch.tensor([[2.0, 1.5, 0.5], [2.0, -1.0, 0.5], [1.0, 0.0, 3.0]])
    mask = torch.tensor([[True, False, True]]).expand(3, 3)
    w = dg.naive_masked_softmax(scores, mask, "multiply_before")
    assert torch.allclose(w[0], dg.naive_masked_softmax(scores, mask, "add_neg_inf")[0])  # 1.5 * -inf = -inf: fine
    assert torch.isnan(w[1]).all()  # -1 * -inf = +inf
    assert torch.isnan(w[2]).all()  # 0 * -inf = NaN


def test_neg_inf_gives_nan_on_an_empty_row_and_the_library_gives_zeros():
    scores, mask = _scores_and_mask()
    w = dg.naive_masked_softmax(scores, mask, "add_neg_inf")
    assert torch.isnan(w[2]).all() and not torch.isnan(w[:2]).any()
    q, k, v = torch.randn(1, 3, 8), torch.randn(1, 4, 8), torch.randn(1, 4, 5)
    out, lib = tl.scaled_dot_product_attention(q, k, v, mask[None], need_weights=True)
    assert torch.all(lib[0, 2] == 0) and torch.all(out[0, 2] == 0) and not torch.isnan(out).any()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_finfo_min_gives_a_uniform_empty_row_and_exact_zeros_elsewhere(dtype):
    scores, mask = _scores_and_mask(dtype)
    w = dg.naive_masked_softmax(scores, mask, "add_finfo_min").float()
    assert torch.allclose(w[2], torch.full((4,), 0.25))
    assert torch.all(w[:2][~mask[:2]] == 0)
    big = torch.tensor(torch.finfo(dtype).min, dtype=dtype)
    assert torch.isinf(big + big)  # adding it twice (two additive masks) overflows to -inf
    if dtype == torch.float16:  # float16's largest gap is 32: even a score of -16 pushes finfo.min over the edge
        assert torch.isinf(big - 16) and not torch.isinf(big - 15)
    else:
        assert big - 100 == big


def test_naive_masked_softmax_rejects_bad_arguments():
    scores, mask = _scores_and_mask()
    with pytest.raises(ValueError, match="method"):
        dg.naive_masked_softmax(scores, mask, "subtract")
    with pytest.raises(TypeError, match="mask"):
        dg.naive_masked_softmax(scores, mask.float(), "add_neg_inf")
    with pytest.raises(ValueError, match="broadcast"):
        dg.naive_masked_softmax(scores, mask[:, :3], "add_neg_inf")


# --- parallel = sequential, and the peeking decoder --------------------------------------------------------------
def test_parallel_pass_equals_prefix_by_prefix_only_with_the_causal_mask():
    torch.manual_seed(0)
    ids = torch.randint(4, 20, (2, 7))
    honest = tl.DecoderOnlyModel(_tiny()).eval()
    assert (dg.prefix_by_prefix_logits(honest, ids) - honest(ids)).abs().max() < 1e-5
    peeking = dg.PeekingDecoderOnlyModel(_tiny()).eval()
    peeking.load_state_dict(honest.state_dict())
    diff = (dg.prefix_by_prefix_logits(peeking, ids) - peeking(ids)).abs()
    assert diff[:, -1].max() < 1e-5  # the last position sees everything either way
    assert diff[:, :-1].max() > 1e-2  # the others read the future in the parallel pass


def test_peeking_model_mask_and_generation_without_cache():
    peeking = dg.PeekingDecoderOnlyModel(_tiny())
    ids = torch.tensor([[5, 6, 0]])
    assert peeking.mask(ids).shape == (1, 1, 1, 3)
    assert peeking.mask(ids)[0, 0, 0].tolist() == [True, True, False]
    state = peeking.start_decoding(torch.tensor([[5, 6]]), 1, 3, use_cache=True)
    assert state.caches is None
    out = tl.greedy_decode(peeking, torch.tensor([[5, 6]]), 3, 1, 2)
    assert out.shape[1] <= 5 and out[0, :2].tolist() == [5, 6]


def test_copy_sequences_and_floor():
    s = dg.copy_sequences(5, 4, 10, seed=3)
    assert s.shape == (5, 10) and torch.all(s[:, 0] == 1) and torch.all(s[:, -1] == 2)
    assert torch.equal(s[:, 1:5], s[:, 5:9])
    assert s[:, 1:-1].min() >= 4 and s[:, 1:-1].max() < 14
    assert torch.equal(s, dg.copy_sequences(5, 4, 10, seed=3))
    assert not torch.equal(s, dg.copy_sequences(5, 4, 10, seed=4))
    assert dg.copy_loss_floor(4, 10) == pytest.approx(4 * math.log(10) / 9)
    with pytest.raises(ValueError, match="length"):
        dg.copy_sequences(5, 0)


def test_causal_lm_step_shifts_targets():
    model = tl.DecoderOnlyModel(_tiny())
    ids = torch.tensor([[1, 5, 6, 7], [1, 8, 9, 0]])
    with torch.no_grad():
        loss, logits, targets = dg.causal_lm_step(model, ids)
        expected = float(tl.sequence_loss(model(ids[:, :-1]), ids[:, 1:]))
    assert logits.shape == (2, 3, 20) and targets.tolist() == [[5, 6, 7], [8, 9, 0]]
    assert float(loss) == pytest.approx(expected)
    assert torch.equal(dg.causal_lm_step(model, (ids,))[2], targets)


# --- multi-head attention and parameter counts -------------------------------------------------------------------
@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_heads_one_by_one_equals_the_module(n_heads):
    torch.manual_seed(n_heads)
    mha = tl.MultiHeadAttention(32, n_heads).eval()
    nn.init.normal_(mha.qkv_proj.bias)
    x, mem = torch.randn(2, 5, 32), torch.randn(2, 6, 32)
    mask = tl.padding_mask(torch.tensor([[4, 5, 6, 7, 0, 0], [4, 5, 6, 7, 8, 9]]))
    assert (dg.heads_one_by_one(mha, x, mem, mem, mask) - mha(x, mem, mem, mask)[0]).abs().max() < 1e-5
    causal = tl.causal_mask(5)
    assert (dg.heads_one_by_one(mha, x, x, x, causal) - mha(x, x, x, causal)[0]).abs().max() < 1e-5


def test_heads_one_by_one_uses_the_right_rows():
    mha = tl.MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 3, 16)
    swapped = tl.MultiHeadAttention(16, 4).eval()
    swapped.load_state_dict(mha.state_dict())
    with torch.no_grad():  # swap W^Q rows of heads 0 and 1: the per-head loop must notice
        swapped.qkv_proj.weight[:8] = torch.cat((mha.qkv_proj.weight[4:8], mha.qkv_proj.weight[:4]))
    assert (dg.heads_one_by_one(swapped, x, x, x) - mha(x, x, x)[0]).abs().max() > 1e-3


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"bias": False},
        {"tie_embeddings": False},
        {"norm_first": True},
        {"positional": "learned"},
        {"share_src_embedding": True},
        {"src_vocab_size": 30, "n_decoder_layers": 1},
    ],
)
def test_parameter_count_matches_the_formula(overrides):
    cfg = _tiny(**overrides)
    counts = dg.count_parameters(tl.Transformer(cfg))
    assert counts == dg.transformer_parameter_formula(cfg)
    assert list(counts) == list(dg.transformer_parameter_formula(cfg))  # same order too


def test_paper_base_model_parameter_count():
    cfg = tl.TransformerConfig(share_src_embedding=True)
    formula = dg.transformer_parameter_formula(cfg)
    assert sum(formula.values()) == 63_082_496
    assert formula["embeddings"] == 37000 * 512
    assert formula["encoder self-attention"] == 6 * (4 * 512**2 + 4 * 512)


def test_count_parameters_for_decoder_only_and_encoder_only():
    counts = dg.count_parameters(tl.DecoderOnlyModel(_tiny()))
    assert set(counts) == {"embeddings", "decoder self-attention", "decoder feed-forward", "decoder layer norms"}
    assert counts["decoder self-attention"] == 2 * (4 * 32 * 32 + 4 * 32)
    enc = tl.EncoderOnlyModel(_tiny(), n_outputs=3)
    assert dg.count_parameters(enc)["output layer"] == 32 * 3 + 3
    assert sum(dg.count_parameters(enc).values()) == sum(p.numel() for p in enc.parameters())


# --- LayerNorm against BatchNorm -----------------------------------------------------------------------------------
def test_normalize_axes_match_torch_modules():
    x = torch.randn(3, 5, 8) * 3 + 1
    ln = nn.LayerNorm(8, elementwise_affine=False)
    assert torch.allclose(dg.normalize(x, "layer"), ln(x), atol=1e-5)
    bn = nn.BatchNorm1d(8, affine=False).train()
    assert torch.allclose(dg.normalize(x, "batch"), bn(x.transpose(1, 2)).transpose(1, 2), atol=1e-5)
    y = dg.normalize(x, "layer")
    assert torch.allclose(y.mean(-1), torch.zeros(3, 5), atol=1e-5)
    z = dg.normalize(x, "batch")
    assert torch.allclose(z.mean((0, 1)), torch.zeros(8), atol=1e-5)


def test_padding_changes_batchnorm_but_not_layernorm():
    x = torch.randn(2, 4, 8) + 2
    assert dg.padding_sensitivity(x, 3, "layer") == 0.0
    assert dg.padding_sensitivity(x, 3, "batch") > 0.1
    with pytest.raises(ValueError, match="kind"):
        dg.normalize(x, "group")


# --- gradient norms ------------------------------------------------------------------------------------------------
def test_layer_gradient_norms_shape_and_cleanup():
    model = tl.DecoderOnlyModel(_tiny(n_decoder_layers=3))
    ids = torch.randint(4, 20, (2, 9))
    g = dg.layer_gradient_norms(model, ids)
    assert g.shape == (3,) and torch.all(g > 0)
    assert all(p.grad is None for p in model.parameters())
    with pytest.raises(ValueError, match="param"):
        dg.layer_gradient_norms(model, ids, "ff.nothing")


@pytest.mark.slow
def test_post_ln_gradients_grow_toward_the_top_and_pre_ln_do_not():
    kw = dict(src_vocab_size=100, tgt_vocab_size=100, n_decoder_layers=12)
    post = dg.init_gradient_norms(_tiny(**kw), n_seeds=8, batch_size=16, seq_len=32)
    pre = dg.init_gradient_norms(_tiny(**kw, norm_first=True), n_seeds=8, batch_size=16, seq_len=32)
    assert post[-3:].mean() > 1.2 * post[:3].mean()
    assert pre[-3:].mean() < 0.8 * pre[:3].mean()
    assert post[-1] > 2 * pre[-1]

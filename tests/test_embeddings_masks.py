"""Positions, embeddings and masks."""

import math

import pytest
import torch

import transformer_lib as tl


def test_sinusoidal_encoding_is_the_papers_formula():
    pe = tl.sinusoidal_encoding(50, 16, dtype=torch.float64)
    pos, i = 7, 3
    angle = pos / 10000 ** (2 * i / 16)
    assert pe.shape == (50, 16)
    assert math.isclose(pe[pos, 2 * i], math.sin(angle), abs_tol=1e-12)
    assert math.isclose(pe[pos, 2 * i + 1], math.cos(angle), abs_tol=1e-12)
    assert torch.equal(pe[0, 0::2], torch.zeros(8, dtype=torch.float64))


def test_concatenated_layout_is_a_permutation_of_the_interleaved_one():
    a = tl.sinusoidal_encoding(20, 8, interleaved=True)
    b = tl.sinusoidal_encoding(20, 8, interleaved=False)
    perm = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7])
    assert torch.equal(a[:, perm], b)


def test_token_embedding_is_scaled_by_sqrt_d_model_and_equals_one_hot_product():
    emb = tl.TokenEmbedding(11, 16)
    ids = torch.tensor([[3, 0, 10]])
    one_hot = torch.nn.functional.one_hot(ids, 11).float()
    assert torch.allclose(emb(ids), one_hot @ emb.weight * 4.0, atol=1e-6)


def test_positional_offset_and_limits():
    pe = tl.SinusoidalPositionalEncoding(8, max_len=10)
    x = torch.zeros(1, 3, 8)
    assert torch.equal(pe(x, offset=4)[0], tl.sinusoidal_encoding(10, 8)[4:7])
    with pytest.raises(ValueError, match="max_len=10"):
        pe(torch.zeros(1, 11, 8))
    with pytest.raises(ValueError, match="max_len=5"):
        tl.LearnedPositionalEmbedding(8, max_len=5)(torch.zeros(1, 6, 8))
    with pytest.raises(ValueError, match="d_model: the sinusoidal encoding pairs sin and cos, so it must be even"):
        tl.sinusoidal_encoding(4, 7)


def test_masks_follow_true_means_may_attend():
    ids = torch.tensor([[5, 6, 0], [7, 0, 0]])
    pad = tl.padding_mask(ids, pad_id=0)
    assert pad.shape == (2, 1, 1, 3) and pad[0, 0, 0].tolist() == [True, True, False]
    causal = tl.causal_mask(3)
    assert causal.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    both = tl.combine_masks(causal, pad, None)
    assert both.shape == (2, 1, 3, 3) and both[1, 0].tolist() == [[True, False, False]] * 3
    assert tl.combine_masks(None, None) is None
    assert torch.equal(tl.decoder_mask(ids), both)  # the decoder's mask, used by both decoding families
    model = tl.DecoderOnlyModel(
        tl.TransformerConfig(
            src_vocab_size=8, tgt_vocab_size=8, d_model=8, n_heads=2, n_encoder_layers=0, n_decoder_layers=1, d_ff=8
        )
    )
    assert torch.equal(model.mask(ids), both)


def test_mask_errors():
    with pytest.raises(TypeError, match="ids: expected an integer tensor"):
        tl.padding_mask(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="size: expected a value > 0, got 0"):
        tl.causal_mask(0)
    with pytest.raises(TypeError, match=r"masks\[1\]: expected a torch.bool tensor"):
        tl.combine_masks(tl.causal_mask(2), torch.ones(2, 2))

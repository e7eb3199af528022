"""The three model families, incremental decoding and the config: properties and bad input."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tiny import TINY

import transformer_lib as tl


def _model(seed=0, **kw):
    torch.manual_seed(seed)
    return tl.Transformer(tl.TransformerConfig(**{**TINY, **kw})).eval()


SRC = torch.tensor([[5, 6, 7, 8, 2, 0], [9, 4, 2, 0, 0, 0]])


def test_forward_shapes_and_masks():
    model = _model()
    tgt = torch.tensor([[1, 5, 6], [1, 7, 0]])
    assert model(SRC, tgt).shape == (2, 3, 24)
    assert model.tgt_mask(tgt).shape == (2, 1, 3, 3)
    maps = model.attention_maps(SRC, tgt)
    assert maps["cross"].shape == (2, 2, 4, 3, 6)
    assert torch.all(maps["cross"][:, 1, :, :, 3:] == 0)  # padded source keys get no weight


@settings(max_examples=15, deadline=None)
@given(t=st.integers(0, 5), seed=st.integers(0, 1000))
def test_future_tokens_never_change_earlier_outputs(t, seed):
    model = _model(norm_first=seed % 2 == 0)
    g = torch.Generator().manual_seed(seed)
    tgt = torch.randint(3, 24, (2, 6), generator=g)
    changed = tgt.clone()
    changed[:, t + 1 :] = torch.randint(3, 24, (2, 5 - t), generator=g)
    a, b = model(SRC, tgt), model(SRC, changed)
    assert torch.allclose(a[:, : t + 1], b[:, : t + 1], atol=1e-6)


def test_teacher_forced_outputs_equal_step_by_step_outputs():
    model = _model()
    tgt = torch.tensor([[1, 5, 6, 7, 8], [1, 9, 10, 11, 12]])
    parallel = model(SRC, tgt)
    for t in range(1, 6):
        assert torch.allclose(model(SRC, tgt[:, :t])[:, -1], parallel[:, t - 1], atol=1e-5)
    for use_cache in (True, False):
        state = model.start_decoding(SRC, 1, 5, use_cache)
        for t in range(1, 6):
            state.tokens = tgt[:, :t]
            assert torch.allclose(model.decode_step(state), parallel[:, t - 1], atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_and_uncached_decoding_give_identical_tokens(norm_first):
    model = _model(seed=3, norm_first=norm_first)
    assert torch.equal(tl.greedy_decode(model, SRC, 12, 1, 2), tl.greedy_decode(model, SRC, 12, 1, 2, use_cache=False))
    beams = [tl.beam_search(model, SRC, 10, 1, 2, beam_size=3, n_best=2, use_cache=c) for c in (True, False)]
    for a, b in zip(*beams, strict=True):
        assert [h.tokens.tolist() for h in a] == [h.tokens.tolist() for h in b]
    draws = [
        tl.sample(model, SRC, 10, 1, 2, top_k=5, generator=torch.Generator().manual_seed(0), use_cache=c)
        for c in (True, False)
    ]
    assert torch.equal(*draws)


class _Scripted(tl.Transformer):
    """Emits 5, then <eos> for row 0 and 6, 7, 8, ... for row 1: decoding logic without training."""

    def decode_step(self, state):
        step = state.tokens.shape[1]
        logits = torch.zeros(state.tokens.shape[0], self.config.tgt_vocab_size)
        logits[0, 5 if step == 1 else 2] = 1.0
        logits[1:, 5 + step] = 1.0
        return logits


def test_greedy_stops_at_eos_pads_finished_rows_and_beam_of_one_is_greedy():
    model = _Scripted(tl.TransformerConfig(**TINY))
    out = tl.greedy_decode(model, SRC, 5, 1, 2)
    assert out.tolist() == [[1, 5, 2, 0, 0, 0], [1, 6, 7, 8, 9, 10]]
    model = _model(seed=5)
    out = tl.greedy_decode(model, SRC, 8, 1, 2)
    for i, hyps in enumerate(tl.beam_search(model, SRC, 8, 1, 2, beam_size=1, length_penalty=0.0)):
        ids = hyps[0].tokens.tolist()
        assert out[i].tolist()[: len(ids)] == ids


def test_beam_search_scores_are_sorted_and_normalised():
    model = _model(seed=2)
    hyps = tl.beam_search(model, SRC[:1], 6, 1, 2, beam_size=4, n_best=4)[0]
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    for h in hyps:
        n = len(h.tokens) - 1
        assert abs(h.score - h.log_prob / ((5 + n) / 6) ** 0.6) < 1e-4


def test_sampling_distribution_temperature_top_k_top_p():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    p = tl.sampling_distribution(logits)
    assert torch.allclose(p, logits.softmax(-1))
    assert tl.sampling_distribution(logits, temperature=0.1)[0, 0] > 0.99
    assert (tl.sampling_distribution(logits, top_k=2)[0, 2:] == 0).all()
    nucleus = tl.sampling_distribution(logits, top_p=0.7)  # 0.64 alone is not enough: keep two tokens
    assert (nucleus[0, :2] > 0).all() and (nucleus[0, 2:] == 0).all()
    assert torch.allclose(nucleus.sum(), torch.tensor(1.0))


def test_decoder_only_and_encoder_only_families():
    torch.manual_seed(0)
    cfg = tl.TransformerConfig(**TINY)
    gpt = tl.DecoderOnlyModel(cfg).eval()
    ids = torch.randint(3, 24, (2, 7))
    logits = gpt(ids)
    changed = ids.clone()
    changed[:, 4:] = 3
    assert torch.allclose(gpt(changed)[:, :4], logits[:, :4], atol=1e-6)  # causal
    prompt = ids[:, :3]
    assert torch.equal(tl.greedy_decode(gpt, prompt, 6, 1, 2), tl.greedy_decode(gpt, prompt, 6, 1, 2, use_cache=False))
    bert = tl.EncoderOnlyModel(cfg, n_outputs=5).eval()
    out = bert.encode(torch.tensor([[4, 5, 6, 0]]), need_weights=True, output_hidden_states=True)
    assert bert(torch.tensor([[4, 5, 6, 0]])).shape == (1, 4, 5)
    assert len(out.hidden_states) == 3 and len(out.attentions) == 2
    assert torch.all(out.attentions[0][..., 3] == 0)  # padding mask only
    assert (out.attentions[0][..., 0, 1:3] > 0).all()  # bidirectional: the first token sees later ones


def test_paper_base_configuration_parameter_count():
    cfg = tl.TransformerConfig(share_src_embedding=True)
    n = sum(p.numel() for p in tl.Transformer(cfg).parameters())
    attn = 4 * 512 * 512 + 4 * 512
    ffn = 2 * 512 * 2048 + 2048 + 512
    assert n == 6 * (attn + ffn + 2 * 1024) + 6 * (2 * attn + ffn + 3 * 1024) + 37000 * 512
    assert abs(n - 65e6) / 65e6 < 0.05  # the paper reports 65M


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(d_model=30, n_heads=4), "d_model: must be divisible by n_heads"),
        (dict(dropout=1.0), r"dropout: expected a probability in \[0, 1\)"),
        (dict(activation="tanh"), "activation: expected one of"),
        (dict(share_src_embedding=True), "share_src_embedding: sharing one embedding needs"),
        (dict(n_heads=0), "n_heads: expected a value > 0"),
        (dict(pad_id=30), "pad_id: must be a valid id"),
    ],
)
def test_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tl.TransformerConfig(**{**TINY, **kwargs})


def test_bad_inputs_to_models_and_decoding():
    model = _model()
    with pytest.raises(ValueError, match=r"src: token ids must lie in \[0, 20\), got id 25"):
        model(torch.tensor([[25]]), torch.tensor([[1]]))
    with pytest.raises(ValueError, match="src: sequence length 41 exceeds max_len=40"):
        model.encode(torch.ones(1, 41, dtype=torch.long))
    with pytest.raises(ValueError, match="src: expected a non-empty"):
        model.encode(torch.ones(0, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="beam_size: expected a value > 0, got 0"):
        tl.beam_search(model, SRC, 3, 1, 2, beam_size=0)
    with pytest.raises(ValueError, match="temperature: expected a number > 0"):
        tl.sample(model, SRC, 3, 1, 2, temperature=0)
    with pytest.raises(ValueError, match=r"top_p: expected a probability in \(0, 1\]"):
        tl.sample(model, SRC, 3, 1, 2, top_p=1.5)
    with pytest.raises(TypeError, match="config: expected a TransformerConfig"):
        tl.Transformer({"d_model": 32})


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_model_runs_on_cuda_and_matches_cpu():
    model = _model()
    tgt = torch.tensor([[1, 5, 6], [1, 7, 0]])
    want = model(SRC, tgt)
    gpu = model.to("cuda")
    assert torch.allclose(gpu(SRC.cuda(), tgt.cuda()).cpu(), want, atol=1e-4)
    assert torch.equal(tl.greedy_decode(gpu, SRC.cuda(), 8, 1, 2).cpu(), tl.greedy_decode(model.cpu(), SRC, 8, 1, 2))

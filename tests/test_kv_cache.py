"""transformer_lib.kv_cache: the cache buffers, the decoding state and the one cached step both families use."""

import pytest
import torch
from tiny import TINY

import transformer_lib as tl
from transformer_lib.kv_cache import cached_step, new_caches, step_mask


def test_kv_cache_grows_and_reorders():
    cache = tl.KVCache(max_len=2)
    k = torch.arange(4.0).view(2, 1, 2, 1)
    cache.append(k, k)
    cache.append(k[:, :, :1] + 10, k[:, :, :1] + 10)  # beyond max_len: grows
    assert cache.length == 3 and cache.k[0, 0, :, 0].tolist() == [0.0, 1.0, 10.0]
    cache.reorder(torch.tensor([1, 1]))
    assert cache.k[0, 0, :, 0].tolist() == [2.0, 3.0, 12.0]


def test_step_mask_lets_new_queries_see_the_past_and_not_the_future():
    assert step_mask(1, 5, torch.device("cpu")) is None  # one query sees every stored key
    m = step_mask(3, 2, torch.device("cpu"))  # queries at positions 2, 3, 4 against keys 0..4
    assert m.shape == (3, 5) and m.sum(1).tolist() == [3, 4, 5] and not m[0, 3:].any()


def test_new_caches_one_per_layer_with_a_static_cross_attention_cache():
    caches = new_caches(3, 10)
    assert len(caches) == 3 and all(c.self_attn.max_len == 10 and c.cross_attn.static for c in caches)
    assert caches[0].self_attn is not caches[1].self_attn
    with pytest.raises(ValueError, match="n_layers"):
        new_caches(0, 10)


@pytest.mark.parametrize("family", ["Transformer", "DecoderOnlyModel"])
def test_cached_step_gives_the_logits_of_a_full_recomputation(family):
    torch.manual_seed(0)
    model = getattr(tl, family)(tl.TransformerConfig(**TINY)).eval()
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 4, 3, 5, 2]])
    cached = model.start_decoding(src, 1, 6, use_cache=True)
    full = model.start_decoding(src, 1, 6, use_cache=False)
    with torch.no_grad():
        for _ in range(4):
            a, b = model.decode_step(cached), model.decode_step(full)
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
            nxt = a.argmax(-1, keepdim=True)
            cached.tokens = torch.cat((cached.tokens, nxt), 1)
            full.tokens = torch.cat((full.tokens, nxt), 1)
            assert cached.fed == cached.tokens.shape[1] - 1  # every token but the newest is in the cache
    assert cached.caches[0].self_attn.length == cached.fed


def test_cached_step_needs_caches():
    model = tl.DecoderOnlyModel(tl.TransformerConfig(**TINY))
    state = model.start_decoding(torch.tensor([[3, 4]]), 1, 2, use_cache=False)
    with pytest.raises(ValueError, match="use_cache=True"):
        cached_step(state, model.embed, model.decoder, model.lm_head)


def test_decoding_state_keeps_no_stash():
    assert set(tl.DecodingState.__dataclass_fields__) == {"tokens", "memory", "memory_mask", "caches", "fed"}


def test_decoding_accepts_any_model_that_offers_the_protocol_and_names_what_is_missing():
    assert isinstance(tl.Transformer(tl.TransformerConfig(**TINY)), tl.decoding.Decodable)
    with pytest.raises(TypeError, match="start_decoding and decode_step.*EncoderOnlyModel"):
        tl.greedy_decode(tl.EncoderOnlyModel(tl.TransformerConfig(**TINY)), torch.tensor([[3, 4]]), 3, 1, 2)

"""torch.compile compatibility: compiled modules give the same numbers as eager ones.

The backend is ``aot_eager`` by default: it runs TorchDynamo's graph capture and AOTAutograd (where library code
most often breaks compilation) without generating C++ kernels, which on a busy 2-core CPU takes minutes with the
default ``inductor`` backend. Set ``TL_COMPILE_BACKEND=inductor`` to test that one too.
"""

import os

import pytest
import torch
from tiny import tiny_config

import transformer_lib as tl

BACKEND = os.environ.get("TL_COMPILE_BACKEND", "aot_eager")


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
def test_multi_head_attention_compiles_as_one_graph(impl):
    torch.manual_seed(0)
    mha = tl.MultiHeadAttention(32, 4, attn_impl=impl).eval()
    x = torch.randn(3, 6, 32)
    keep = tl.combine_masks(
        tl.causal_mask(6), tl.padding_mask(torch.tensor([[5] * 6, [5] * 4 + [0] * 2, [0] * 6]), pad_id=0)
    )
    # fullgraph=True fails on any graph break, e.g. reading a tensor's value in Python (the last row is all padding:
    # its queries see no key, so the fully-masked-row repair must run inside the graph)
    compiled = torch.compile(mha, backend=BACKEND, fullgraph=True)
    with torch.no_grad():
        want, _ = mha(x, x, x, keep)
        got, _ = compiled(x, x, x, keep)
    assert (got - want).abs().max().item() < 1e-5
    assert torch.all(got[2] == mha.o_proj.bias)  # zero attention output for the empty rows, then W^O's bias


@pytest.mark.slow
def test_compiled_transformer_matches_eager_logits_and_gradients():
    torch.manual_seed(0)
    cfg = tiny_config(tgt_vocab_size=20, max_len=16)  # tests/tiny.py
    model = tl.Transformer(cfg).train()
    src = torch.randint(4, 20, (2, 7))
    src[1, 5:] = cfg.pad_id
    tgt_in, tgt_out = torch.randint(4, 20, (2, 5)), torch.randint(4, 20, (2, 5))
    tgt_in[1, 4:] = tgt_out[1, 4:] = cfg.pad_id

    def loss_and_grads(m):
        model.zero_grad(set_to_none=True)
        logits = m(src, tgt_in)
        tl.sequence_loss(logits, tgt_out, cfg.pad_id).backward()
        return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    want_logits, want_grads = loss_and_grads(model)
    got_logits, got_grads = loss_and_grads(torch.compile(model, backend=BACKEND))
    assert (got_logits - want_logits).abs().max().item() < 1e-5
    assert want_grads.keys() == got_grads.keys()
    for name in want_grads:
        assert (got_grads[name] - want_grads[name]).abs().max().item() < 1e-5, name

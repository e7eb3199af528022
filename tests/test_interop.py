"""transformer_lib.interop: our modules against PyTorch's own, holding the same weights (from_torch): equal outputs."""

import pytest
import torch
from torch import nn

import transformer_lib as tl

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}
D, H, FF = 32, 4, 64


def _pad_mask(batch: int, length: int, lengths: list[int]) -> torch.Tensor:
    """True = real token, (B, S)."""
    return torch.arange(length)[None, :] < torch.tensor(lengths)[:, None]


def _close(ours: torch.Tensor, theirs: torch.Tensor, dtype) -> None:
    diff = (ours - theirs).abs().max().item()
    assert diff < TOL[dtype], f"max abs diff {diff:.3g} >= {TOL[dtype]}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("masking", ["none", "causal", "padding", "both"])
def test_multi_head_attention_matches_torch(dtype, batch_first, masking):
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(D, H, batch_first=batch_first, dtype=dtype).eval()
    ours = tl.from_torch(theirs)
    B, T, S = 3, 5, 7
    q, kv = torch.randn(B, T, D, dtype=dtype), torch.randn(B, S, D, dtype=dtype)
    keep = torch.ones(B, 1, T, S, dtype=torch.bool)
    attn_mask = key_pad = None
    if masking in ("causal", "both"):
        causal = torch.ones(T, S, dtype=torch.bool).tril()
        keep = keep & causal
        attn_mask = ~causal  # torch: True = blocked
    if masking in ("padding", "both"):
        real = _pad_mask(B, S, [7, 4, 2])
        keep = keep & real[:, None, None, :]
        key_pad = ~real
    args = (q, kv, kv) if batch_first else (q.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1))
    want, want_w = theirs(*args, attn_mask=attn_mask, key_padding_mask=key_pad, average_attn_weights=False)
    got, got_w = ours(*args, mask=None if masking == "none" else keep, need_weights=True)
    _close(got, want, dtype)
    _close(got_w, want_w, dtype)


def _torch_encoder(norm_first, activation, dtype, batch_first=True, n_layers=2, final_norm=False):
    layer = nn.TransformerEncoderLayer(
        D,
        H,
        FF,
        dropout=0.0,
        activation=activation,
        norm_first=norm_first,
        batch_first=batch_first,
        dtype=dtype,
        layer_norm_eps=1e-6,
    )
    norm = nn.LayerNorm(D, eps=1e-6, dtype=dtype) if final_norm else None
    return nn.TransformerEncoder(layer, n_layers, norm=norm, enable_nested_tensor=False).eval()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("shape", [(3, 6), (1, 1), (1, 5)])
def test_encoder_layer_and_stack_match_torch(dtype, norm_first, activation, shape):
    torch.manual_seed(1)
    B, S = shape
    theirs = _torch_encoder(norm_first, activation, dtype, final_norm=norm_first)
    x = torch.randn(B, S, D, dtype=dtype)
    lengths = [S] + [max(1, S - 2 - i) for i in range(B - 1)]
    real = _pad_mask(B, S, lengths)
    causal = torch.ones(S, S, dtype=torch.bool).tril()
    for keep, torch_kwargs in [
        (None, {}),
        (real[:, None, None, :], {"src_key_padding_mask": ~real}),
        (causal, {"mask": ~causal}),
        (real[:, None, None, :] & causal, {"mask": ~causal, "src_key_padding_mask": ~real}),
    ]:
        layer_kwargs = {"src_mask" if k == "mask" else k: v for k, v in torch_kwargs.items()}
        _close(tl.from_torch(theirs.layers[0])(x, keep)[0], theirs.layers[0](x, **layer_kwargs), dtype)
        _close(tl.from_torch(theirs)(x, keep), theirs(x, **torch_kwargs), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("lengths", [(3, 4, 7), (1, 1, 1), (1, 5, 3)])
def test_decoder_layer_and_stack_match_torch(dtype, norm_first, activation, lengths):
    torch.manual_seed(2)
    B, T, S = lengths
    layer = nn.TransformerDecoderLayer(
        D, H, FF, dropout=0.0, activation=activation, norm_first=norm_first, batch_first=True, dtype=dtype, bias=True
    )
    norm = nn.LayerNorm(D, dtype=dtype) if norm_first else None
    theirs = nn.TransformerDecoder(layer, 2, norm=norm).eval()
    y, memory = torch.randn(B, T, D, dtype=dtype), torch.randn(B, S, D, dtype=dtype)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    tgt_real = _pad_mask(B, T, [T] + [max(1, T - 1 - i) for i in range(B - 1)])
    src_real = _pad_mask(B, S, [S] + [max(1, S - 2 - i) for i in range(B - 1)])
    self_keep = causal & tgt_real[:, None, None, :]
    cross_keep = src_real[:, None, None, :]
    want = theirs(y, memory, tgt_mask=~causal, tgt_key_padding_mask=~tgt_real, memory_key_padding_mask=~src_real)
    _close(tl.from_torch(theirs)(y, memory, self_keep, cross_keep), want, dtype)
    want_layer = theirs.layers[1](y, memory, tgt_mask=~causal)
    _close(tl.from_torch(theirs.layers[1])(y, memory, causal)[0], want_layer, dtype)


def test_time_first_layout_and_bias_free_layers_match_torch():
    torch.manual_seed(3)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=False, bias=False)
    theirs = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    ours = tl.from_torch(theirs)
    assert ours.batch_first is False and ours.layers[0].ff.linear1.bias is None
    x = torch.randn(6, 2, D)  # (S, B, C)
    _close(ours(x), theirs(x), torch.float32)


def test_from_torch_rejects_other_modules():
    with pytest.raises(TypeError, match="mha: expected nn.MultiheadAttention"):
        tl.interop.mha_from_torch(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="encoder: expected nn.TransformerEncoder"):
        tl.interop.encoder_from_torch(nn.Linear(2, 2))


def test_from_torch_dispatches_on_the_module_type_and_keeps_mode():
    torch.manual_seed(4)
    layer = nn.TransformerDecoderLayer(D, H, FF, dropout=0.1, batch_first=True)
    stack = nn.TransformerDecoder(layer, 2)
    for theirs, ours_type in (
        (nn.MultiheadAttention(D, H, batch_first=True), tl.MultiHeadAttention),
        (nn.TransformerEncoderLayer(D, H, FF, batch_first=True), tl.EncoderLayer),
        (layer, tl.DecoderLayer),
        (stack.eval(), tl.Decoder),
    ):
        ours = tl.from_torch(theirs)
        assert type(ours) is ours_type and ours.training == theirs.training
    with pytest.raises(TypeError, match=r"module: expected one of nn.MultiheadAttention.*got Linear"):
        tl.from_torch(nn.Linear(2, 2))


def test_only_interop_knows_torch_parameter_names():
    """layers.py and attention.py read like the paper: code that reads torch.nn's attribute names is in interop.py."""
    import ast
    import inspect

    torch_only = {
        "in_proj_weight",
        "in_proj_bias",
        "out_proj",
        "norm1",
        "norm2",
        "norm3",
        "multihead_attn",
        "_qkv_same_embed_dim",
        "num_heads",
        "embed_dim",
    }
    for module in (tl.layers, tl.attention, tl.models, tl.kv_cache):
        read = {node.attr for node in ast.walk(ast.parse(inspect.getsource(module))) if isinstance(node, ast.Attribute)}
        assert not read & torch_only, (
            f"{module.__name__} reads torch's {sorted(read & torch_only)}; that is interop's job"
        )
    read = {node.attr for node in ast.walk(ast.parse(inspect.getsource(tl.interop))) if isinstance(node, ast.Attribute)}
    assert {"in_proj_weight", "multihead_attn", "norm1"} <= read  # the check above would notice a move

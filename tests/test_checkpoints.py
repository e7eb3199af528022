"""Checkpoints: bit-exact round trips, and readable errors for missing, corrupted or mismatched files."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file
from tiny import TINY

import transformer_lib as tl

CFG = {**TINY, "dropout": 0.1}  # tests/tiny.py, with dropout: a checkpoint must keep it


@pytest.mark.parametrize("family", ["Transformer", "EncoderOnlyModel", "DecoderOnlyModel"])
def test_round_trip_is_bit_exact(tmp_path, family):
    torch.manual_seed(0)
    cfg = tl.TransformerConfig(**CFG, norm_first=True, share_src_embedding=False)
    model = getattr(tl, family)(cfg) if family != "EncoderOnlyModel" else tl.EncoderOnlyModel(cfg, n_outputs=3)
    path = tl.save_checkpoint(model, tmp_path / "m.safetensors", extra={"note": "test"})
    loaded, extra = tl.load_checkpoint(path, with_extra=True)
    assert type(loaded) is type(model) and loaded.config == cfg and not loaded.training
    assert extra == {"note": "test"} and not hasattr(loaded, "checkpoint_extra")
    a, b = model.state_dict(), loaded.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    if family == "Transformer":  # tied weights stay tied after loading
        assert loaded.lm_head.weight is loaded.tgt_embed.token.weight


def test_missing_file(tmp_path):
    with pytest.raises(tl.CheckpointError, match="path: no checkpoint file at"):
        tl.load_checkpoint(tmp_path / "nope.safetensors")


def test_corrupted_file(tmp_path):
    path = tl.save_checkpoint(tl.Transformer(tl.TransformerConfig(**CFG)), tmp_path / "m.safetensors")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(tl.CheckpointError, match="is not a readable safetensors checkpoint"):
        tl.load_checkpoint(path)
    path.write_bytes(b"not a checkpoint at all")
    with pytest.raises(tl.CheckpointError):
        tl.load_checkpoint(path)


def test_weights_that_do_not_match_the_config(tmp_path):
    path = tl.save_checkpoint(tl.Transformer(tl.TransformerConfig(**CFG)), tmp_path / "m.safetensors")
    state = load_file(str(path))
    with open(path, "rb") as f:  # keep the metadata, change the config inside it
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    meta = header["__metadata__"]
    meta["config"] = json.dumps({**json.loads(meta["config"]), "d_ff": 48})
    save_file(state, str(path), metadata=meta)
    with pytest.raises(tl.CheckpointError, match="do not match its config"):
        tl.load_checkpoint(path)


def test_foreign_safetensors_file_is_rejected(tmp_path):
    save_file({"w": torch.zeros(2)}, str(tmp_path / "x.safetensors"))
    with pytest.raises(tl.CheckpointError, match="was not written by transformer_lib.save_checkpoint"):
        tl.load_checkpoint(tmp_path / "x.safetensors")


def test_average_state_dicts_is_the_elementwise_mean():
    torch.manual_seed(0)
    a = tl.Transformer(tl.TransformerConfig(**CFG)).state_dict()
    b = {k: v + 1.0 if v.is_floating_point() else v for k, v in a.items()}
    c = {k: v * 3.0 for k, v in a.items()}
    mean = tl.average_state_dicts([a, b, c])
    assert mean.keys() == a.keys()
    key = "encoder.layers.0.ff.linear1.weight"
    assert torch.allclose(mean[key], (a[key] + b[key] + c[key]) / 3, atol=1e-6)
    same = tl.average_state_dicts([a, a])
    assert all(torch.allclose(same[k], a[k]) for k in a)  # averaging copies of one model changes nothing
    steps = {"w": torch.ones(2, dtype=torch.float16), "count": torch.tensor(7)}
    later = {"w": torch.full((2,), 3.0, dtype=torch.float16), "count": torch.tensor(9)}
    out = tl.average_state_dicts([steps, later])
    assert out["w"].dtype == torch.float16 and out["w"].tolist() == [2.0, 2.0] and int(out["count"]) == 9


def test_average_state_dicts_rejects_mismatched_states():
    w = {"w": torch.zeros(2)}
    with pytest.raises(ValueError, match="states: expected a non-empty sequence"):
        tl.average_state_dicts([])
    with pytest.raises(ValueError, match="states: expected a non-empty sequence"):
        tl.average_state_dicts(w)  # one state dict, not a list of them
    with pytest.raises(ValueError, match=r"states\[0\]: expected the keys"):
        tl.average_state_dicts([{"v": torch.zeros(2)}, w])
    with pytest.raises(ValueError, match=r"states\[0\]: expected the shapes.*'w'"):
        tl.average_state_dicts([{"w": torch.zeros(3)}, w])

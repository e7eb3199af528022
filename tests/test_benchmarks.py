"""The benchmark suite (``python -m benchmarks``) in tiny configurations: well-formed results, honest numbers."""

import json

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import transformer_lib as tl
from benchmarks import (
    attention_benchmark,
    decoding_benchmark,
    memory_benchmark,
    mfu_benchmark,
    run_all,
    train_step_benchmark,
)
from benchmarks.__main__ import main  # noqa: E402
from benchmarks.common import interleaved_times, ratio_summary, summarize  # noqa: E402
from benchmarks.memory import scores_bytes  # noqa: E402
from benchmarks.mfu import forward_flops, peak_tflops, training_flops  # noqa: E402

TINY_TRAIN = dict(
    d_model=16, n_heads=2, n_layers=1, d_ff=32, vocab_size=30, batch_size=2, seq_len=6, repeats=2, inner=1
)
TINY_DECODE = dict(
    d_model=16, n_heads=2, n_layers=1, d_ff=32, vocab_size=30, batch_size=2, src_len=5, new_tokens=(4, 8), repeats=1
)
SUMMARY_KEYS = {"median", "q1", "q3", "iqr", "min", "max", "n"}


def _is_summary(s: dict, n: int | None = None) -> bool:
    return (
        s.keys() == SUMMARY_KEYS
        and s["min"] <= s["q1"] <= s["median"] <= s["q3"] <= s["max"]
        and (n is None or s["n"] == n)
    )


def test_summaries_and_interleaving():
    s = summarize([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (s["median"], s["min"], s["max"], s["q1"], s["q3"], s["iqr"]) == (3.0, 1.0, 5.0, 2.0, 4.0, 2.0)
    assert ratio_summary([2.0, 6.0], [1.0, 2.0])["median"] == 2.5
    order = []
    times = interleaved_times({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeats=3, warmup=0)
    assert order == ["a", "b", "b", "a", "a", "b"]  # alternating, so neither always runs first
    assert all(len(t) == 3 and min(t) > 0 for t in times.values())
    with pytest.raises(ValueError, match="repeats"):
        interleaved_times({"a": lambda: None}, repeats=0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_train_step_compares_the_same_function(norm_first):
    r = train_step_benchmark(norm_first=norm_first, device="cpu", **TINY_TRAIN)
    assert r["max_abs_logit_diff"] < 1e-5  # same weights, same masks: the same logits as torch.nn.Transformer
    assert r["env"]["dtype"] == "float32" and r["config"]["norm_first"] is norm_first
    assert r["tokens_per_step"] == 2 * 2 * 6
    for name in ("ours", "torch"):
        assert _is_summary(r["step_seconds"][name], 2) and r["step_seconds"][name]["min"] > 0
        assert r["tokens_per_second"][name]["median"] > 0
    assert _is_summary(r["ratio_ours_vs_torch"], 2) and r["ratio_ours_vs_torch"]["median"] > 0


def test_attention_benchmark_rows():
    r = attention_benchmark(lengths=(16, 8), batch_size=1, n_heads=2, d_head=8, repeats=2, device="cpu")
    assert [row["length"] for row in r["rows"]] == [8, 16]
    for row in r["rows"]:
        assert all(_is_summary(row[f"{k}_ms"], 2) and row[f"{k}_ms"]["min"] > 0 for k in ("eager", "sdpa", "raw"))
        assert row["eager_vs_raw"]["median"] > 0 and row["sdpa_vs_raw"]["median"] > 0
    assert set(r["time_exponent"]) == {"eager", "sdpa", "raw"}


def test_decoding_benchmark_runs_the_full_length_and_agrees():
    r = decoding_benchmark(device="cpu", **TINY_DECODE)
    assert [row["new_tokens"] for row in r["rows"]] == [4, 8]
    for row in r["rows"]:
        assert row["same_tokens"] is True  # cached and uncached greedy decoding pick the same tokens
        assert row["cached_seconds"]["min"] > 0 and row["speedup"]["median"] > 0
        assert row["cached_ms_per_token"]["median"] == pytest.approx(
            1e3 * row["cached_seconds"]["median"] / row["new_tokens"]
        )


def test_memory_benchmark_measures_the_score_matrix():
    r = memory_benchmark(lengths=(32, 64), batch_size=1, n_heads=2, d_head=8, repeats=1, device="cpu")
    small, large = r["rows"]
    assert small["scores_bytes"] == scores_bytes(1, 2, 32) == 1 * 2 * 32 * 32 * 4
    assert large["scores_bytes"] / small["scores_bytes"] == (64 / 32) ** 2
    for row in r["rows"]:
        # the biggest tensor eager attention allocates is exactly the (B, H, n, n) score matrix
        assert row["eager"]["largest_alloc_bytes"] == row["scores_bytes"]
        assert row["eager"]["peak_bytes"] >= row["scores_bytes"] and row["sdpa"]["peak_bytes"] > 0
    assert large["sdpa"]["peak_bytes"] < large["eager"]["peak_bytes"]  # the fused kernel never holds all scores
    assert r["exponents"]["eager_peak_memory"] == pytest.approx(2.0, abs=0.1)


def test_flop_count_matches_torch_flop_counter():
    cfg = tl.TransformerConfig(
        src_vocab_size=50,
        tgt_vocab_size=60,
        d_model=32,
        n_heads=4,
        n_encoder_layers=2,
        n_decoder_layers=3,
        d_ff=48,
        dropout=0.0,
        max_len=16,
        attn_impl="eager",
    )
    model = tl.Transformer(cfg)
    src, tgt = torch.randint(4, 50, (3, 7)), torch.randint(4, 60, (3, 5))
    with FlopCounterMode(display=False) as counter:
        tl.sequence_loss(model(src, tgt), tgt).backward()
    assert counter.get_total_flops() == training_flops(cfg, 3, 7, 5) == 3 * forward_flops(cfg, 3, 7, 5)


def test_mfu_peak_table_and_cpu_skip():
    assert peak_tflops("NVIDIA H100 PCIe") == 756.0
    assert peak_tflops("NVIDIA H100 80GB HBM3") == 989.0
    assert peak_tflops("NVIDIA A100-SXM4-80GB") == 312.0
    assert peak_tflops("Some Future GPU") is None
    r = mfu_benchmark(device="cpu")
    assert "skipped" in r and "CUDA" in r["skipped"]


def test_run_all_json_has_the_headline_keys(tmp_path):
    sizes = {"train_step": TINY_TRAIN, "decoding": {**TINY_DECODE, "new_tokens": (8, 128)}}
    result = run_all(only=["train_step", "decoding", "mfu"], device="cpu", sizes=sizes, echo=None)
    data = json.loads(json.dumps(result))  # JSON-ready: no tensors, no dtypes
    for key in ("train_step_ratio_vs_torch", "kv_cache_speedup_128", "env", "targets", "benchmarks"):
        assert key in data
    assert data["train_step_ratio_vs_torch"] == data["benchmarks"]["train_step"][0]["ratio_ours_vs_torch"]["median"]
    assert data["kv_cache_speedup_128"] == data["benchmarks"]["decoding"]["rows"][1]["speedup"]["median"] > 0
    for key in ("device", "dtype", "torch", "python", "date"):
        assert data["env"][key]
    with pytest.raises(ValueError, match="only"):
        run_all(only=["nonsense"], echo=None)

    path = tmp_path / "out" / "bench.json"
    assert main(["--only", "mfu", "--json", str(path), "--threads", "0"]) == 0
    written = json.loads(path.read_text())
    assert written["train_step_ratio_vs_torch"] is None and "skipped" in written["benchmarks"]["mfu"]

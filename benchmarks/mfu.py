"""Benchmark 5 (GPU only): model FLOPs utilisation (MFU) of a training step of the paper's base model.

MFU = (model FLOPs per step ÷ step time) ÷ the device's peak dense bfloat16 FLOP/s. "Model FLOPs" count the
matrix products the model needs (2 FLOPs per multiply-add), forward and backward (backward ≈ 2 × forward), and not
the work a given implementation adds or saves (recomputation, masking, fused kernels). On the CPU there is no
meaningful peak to divide by, so the benchmark is skipped with a message.
"""

from __future__ import annotations

import torch

import transformer_lib as tl

from .common import environment, interleaved_times, summarize
from .train_step import _step_fn, random_batch

__all__ = ["PEAK_BF16_TFLOPS", "peak_tflops", "flops_breakdown", "forward_flops", "training_flops", "mfu_benchmark"]

# Dense (no structured sparsity) bfloat16 tensor-core peaks from the vendors' data sheets, in TFLOP/s.
# Matched against torch.cuda.get_device_name() in this order, so the more specific names come first.
PEAK_BF16_TFLOPS: dict[str, float] = {
    "H200": 989.0,
    "H100 PCIe": 756.0,
    "H100": 989.0,  # SXM (e.g. "NVIDIA H100 80GB HBM3")
    "A100": 312.0,
    "L40S": 362.0,
    "L4": 121.0,
    "A10": 125.0,
    "RTX 4090": 165.0,
}


def peak_tflops(device_name: str) -> float | None:
    """The peak dense bfloat16 TFLOP/s of a GPU named ``device_name``, or None when it is not in the table."""
    for key, value in PEAK_BF16_TFLOPS.items():
        if key.lower() in device_name.lower():
            return value
    return None


def flops_breakdown(cfg: tl.TransformerConfig, batch_size: int, src_len: int, tgt_len: int) -> dict[str, int]:
    """Matrix-product FLOPs of one forward pass of :class:`tl.Transformer`, by kind (2 FLOPs per multiply-add).

    With S source and T target positions, width C, feed-forward width F, vocabulary V, per sequence:

    * ``projections`` (W^Q, W^K, W^V, W^O): 8·S·C² per encoder layer; 8·T·C² (self) + 4·T·C² + 4·S·C² (cross)
      per decoder layer;
    * ``attention`` (q kᵀ and the weighted sum of v): 4·S²·C per encoder layer, 4·T²·C + 4·T·S·C per decoder
      layer. The only terms that grow with the *square* of the length. Counted in full: the causal half that
      a mask throws away is not subtracted, the usual convention;
    * ``feed_forward``: 4·S·C·F per encoder layer, 4·T·C·F per decoder layer;
    * ``output_layer``: 2·T·C·V.

    Embedding look-ups, LayerNorm and softmax are not counted (they are not matrix products).
    """
    C, F, S, T, V = cfg.d_model, cfg.d_ff, src_len, tgt_len, cfg.tgt_vocab_size
    E, D = cfg.n_encoder_layers, cfg.n_decoder_layers
    per_sequence = {
        "projections": E * 8 * S * C * C + D * (12 * T * C * C + 4 * S * C * C),
        "attention": E * 4 * S * S * C + D * (4 * T * T * C + 4 * T * S * C),
        "feed_forward": E * 4 * S * C * F + D * 4 * T * C * F,
        "output_layer": 2 * T * C * V,
    }
    return {kind: batch_size * flops for kind, flops in per_sequence.items()}


def forward_flops(cfg: tl.TransformerConfig, batch_size: int, src_len: int, tgt_len: int) -> int:
    """Matrix-product FLOPs of one forward pass: the sum of :func:`flops_breakdown`."""
    return sum(flops_breakdown(cfg, batch_size, src_len, tgt_len).values())


def training_flops(cfg: tl.TransformerConfig, batch_size: int, src_len: int, tgt_len: int) -> int:
    """FLOPs of one training step: forward + backward, with backward = 2 × forward (grads of inputs and weights)."""
    return 3 * forward_flops(cfg, batch_size, src_len, tgt_len)


def mfu_benchmark(
    *,
    batch_size: int = 64,
    seq_len: int = 128,
    repeats: int = 5,
    inner: int = 5,
    device: torch.device | str | None = None,
    peak: float | None = None,
    config: tl.TransformerConfig | None = None,
) -> dict:
    """Training-step MFU of the paper's base model in bfloat16 autocast (CUDA only; skipped elsewhere).

    ``peak`` (TFLOP/s) overrides the table :data:`PEAK_BF16_TFLOPS`; ``config`` replaces the base model.
    """
    device = torch.device(device) if device is not None else tl.get_device()
    if device.type != "cuda":
        return {"name": "mfu", "skipped": f"MFU needs a CUDA GPU (a known peak FLOP/s); this run is on {device}"}
    cfg = config or tl.TransformerConfig(max_len=max(512, seq_len))
    torch.manual_seed(0)
    model = tl.Transformer(cfg).to(device).train()
    batch = random_batch(batch_size, seq_len, cfg.src_vocab_size, pad_id=cfg.pad_id, device=device)
    times = interleaved_times(
        {"step": _step_fn(model, batch, cfg.pad_id, torch.bfloat16)},
        repeats=repeats,
        inner=inner,
        warmup=3,
        device=device,
    )["step"]
    flops = training_flops(cfg, batch_size, seq_len, seq_len)
    name = torch.cuda.get_device_name(device)
    peak = peak if peak is not None else peak_tflops(name)
    achieved = [flops / t / 1e12 for t in times]
    return {
        "name": "mfu",
        "env": environment(device, torch.bfloat16),
        "config": dict(cfg.to_dict(), batch_size=batch_size, seq_len=seq_len, repeats=repeats, inner=inner),
        "flops_per_step": flops,
        "step_seconds": summarize(times),
        "achieved_tflops": summarize(achieved),
        "peak_tflops": peak,
        "mfu": summarize([a / peak for a in achieved]) if peak else None,
        "note": None if peak else f"no peak FLOP/s known for {name!r}; pass --peak-tflops",
    }


def table(result: dict) -> str:
    """A few lines describing an :func:`mfu_benchmark` result."""
    if "skipped" in result:
        return f"MFU: skipped ({result['skipped']})"
    mfu = result["mfu"]
    return (
        f"MFU on {result['env']['device_name']}: {result['achieved_tflops']['median']:.1f} TFLOP/s achieved, "
        f"peak {result['peak_tflops']} TFLOP/s, MFU {mfu['median']:.1%}"
        if mfu
        else result["note"]
    )

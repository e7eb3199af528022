"""Benchmark 2: attention alone, three ways, across sequence lengths.

* ``eager``: :func:`tl.scaled_dot_product_attention` with ``impl="eager"``, the formula the book explains
  (``softmax(q kᵀ / √d_k) v`` written out, materialising the (T, S) score matrix of every head);
* ``sdpa``: the same function with ``impl="sdpa"``, our fast path (argument checks + the fused kernel);
* ``raw``: :func:`torch.nn.functional.scaled_dot_product_attention` called directly, the floor for ``sdpa``.

All three get the same q, k, v and the same boolean causal mask.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

import transformer_lib as tl

from .common import environment, format_table, interleaved_times, ratio_summary, summarize

__all__ = ["attention_benchmark", "loglog_slope", "FULL", "QUICK"]

FULL = dict(lengths=(64, 128, 256, 512, 1024), batch_size=4, n_heads=8, d_head=64, repeats=7)
QUICK = dict(lengths=(32, 64, 128, 256), batch_size=2, n_heads=8, d_head=64, repeats=5)


def loglog_slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x): the exponent k in y ∝ x^k (2 for a quadratic cost)."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"xs, ys: expected two equal-length lists of >= 2 points, got {len(xs)} and {len(ys)}")
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum((a - mx) ** 2 for a in lx)


def attention_benchmark(
    *,
    lengths: tuple[int, ...] = FULL["lengths"],
    batch_size: int = FULL["batch_size"],
    n_heads: int = FULL["n_heads"],
    d_head: int = FULL["d_head"],
    repeats: int = FULL["repeats"],
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    seed: int = 0,
) -> dict:
    """Forward time of eager / sdpa / raw attention at each length (self-attention, T = S = length).

    ``dtype`` defaults to float32 on the CPU and bfloat16 on CUDA. Each row holds the three timings (median and
    spread over interleaved rounds) and the per-round ratios ``eager / raw`` and ``sdpa / raw``.
    """
    device = torch.device(device) if device is not None else tl.get_device()
    dtype = dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    g = torch.Generator().manual_seed(seed)
    rows = []
    for n in sorted(lengths):
        q, k, v = (torch.randn(batch_size, n_heads, n, d_head, generator=g).to(device, dtype) for _ in range(3))
        mask = tl.causal_mask(n, device=device)  # (T, T) bool, True = may attend
        inner = max(1, 2048 // n)  # more calls per round for short sequences, so each round lasts a while

        @torch.no_grad()
        def eager():
            return tl.scaled_dot_product_attention(q, k, v, mask, impl="eager")

        @torch.no_grad()
        def sdpa():
            return tl.scaled_dot_product_attention(q, k, v, mask, impl="sdpa")

        @torch.no_grad()
        def raw():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

        times = interleaved_times(
            {"eager": eager, "sdpa": sdpa, "raw": raw}, repeats=repeats, inner=inner, warmup=1, device=device
        )
        rows.append(
            {
                "length": n,
                **{f"{name}_ms": summarize([1e3 * t for t in ts]) for name, ts in times.items()},
                "eager_vs_raw": ratio_summary(times["eager"], times["raw"]),
                "sdpa_vs_raw": ratio_summary(times["sdpa"], times["raw"]),
            }
        )
    xs = [r["length"] for r in rows]
    return {
        "name": "attention",
        "env": environment(device, dtype),
        "config": dict(lengths=xs, batch_size=batch_size, n_heads=n_heads, d_head=d_head, repeats=repeats),
        "rows": rows,
        "time_exponent": {
            name: loglog_slope(xs, [r[f"{name}_ms"]["median"] for r in rows]) if len(xs) > 1 else None
            for name in ("eager", "sdpa", "raw")
        },
    }


def table(result: dict) -> str:
    """Plain-text table of an :func:`attention_benchmark` result."""
    rows = [
        {
            "n": r["length"],
            "eager": r["eager_ms"]["median"],
            "sdpa": r["sdpa_ms"]["median"],
            "raw": r["raw_ms"]["median"],
            "e": r["eager_vs_raw"]["median"],
            "s": r["sdpa_vs_raw"]["median"],
        }
        for r in result["rows"]
    ]
    return format_table(
        rows,
        [
            ("length", "n"),
            ("eager ms", "eager"),
            ("sdpa ms", "sdpa"),
            ("raw F.sdpa ms", "raw"),
            ("eager/raw", "e"),
            ("sdpa/raw", "s"),
        ],
        "Attention forward, causal mask (median over interleaved rounds)",
    )

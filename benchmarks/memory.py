"""Benchmark 4: attention's time and memory against sequence length, the O(n²) curve.

Eager attention materialises the score matrix ``q kᵀ``: one (n, n) table per head, ``B·H·n²`` numbers, so its memory
grows with the square of the length. The fused kernel (``impl="sdpa"``) works through the keys in blocks and never
holds the whole table, so, without a mask, its memory grows only linearly (the output itself, ``B·H·n·D``).

Memory is measured on CUDA with ``torch.cuda.max_memory_allocated``; on the CPU, which keeps no such statistic,
with ``torch.profiler(profile_memory=True)``: ``largest_alloc_bytes`` is the biggest single tensor any operator
allocated (for eager attention, exactly the score matrix) and ``peak_bytes`` replays every allocation and free in
time order. No mask is used here, so that the numbers show attention's own cost.
"""

from __future__ import annotations

import contextlib
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import transformer_lib as tl

from .attention import loglog_slope
from .common import environment, format_table, interleaved_times, summarize

__all__ = ["memory_benchmark", "measure_memory", "scores_bytes", "FULL", "QUICK"]

FULL = dict(lengths=(128, 256, 512, 1024, 2048), batch_size=1, n_heads=8, d_head=64, repeats=3)
QUICK = dict(lengths=(64, 128, 256, 512), batch_size=1, n_heads=8, d_head=64, repeats=3)


def scores_bytes(batch_size: int, n_heads: int, length: int, dtype: torch.dtype = torch.float32) -> int:
    """Bytes of the (B, H, n, n) score matrix that eager attention builds: B·H·n²·(bytes per number)."""
    return batch_size * n_heads * length * length * torch.tensor([], dtype=dtype).element_size()


def measure_memory(fn, device: torch.device | str = "cpu") -> dict[str, int | None]:
    """Peak extra bytes allocated while ``fn()`` runs, and (on the CPU) the largest single allocation.

    On CUDA: ``max_memory_allocated`` minus the memory in use before the call; ``largest_alloc_bytes`` is None.
    On the CPU: from the profiler's per-operator allocation records, replayed in time order (an operator's own
    allocations and frees are counted when it ends, which can only over-, never under-state the peak).
    """
    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        torch.cuda.synchronize(device)
        return {"peak_bytes": torch.cuda.max_memory_allocated(device) - before, "largest_alloc_bytes": None}
    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted(prof.events(), key=lambda e: (e.time_range.end, e.time_range.start))
    current = peak = largest = 0
    for e in events:
        current += e.self_cpu_memory_usage
        peak = max(peak, current)
        largest = max(largest, e.self_cpu_memory_usage if e.name != "[memory]" else 0)
    return {"peak_bytes": peak, "largest_alloc_bytes": largest}


@contextlib.contextmanager
def _quiet_stderr():
    """Silence file descriptor 2 for a moment: the profiler's C++ side logs two lines per use, which would
    otherwise land in every notebook cell that measures memory."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no real stderr (some embedded interpreters): nothing to silence
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def memory_benchmark(
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
    """Forward time and memory of eager and fused attention (no mask) at each length.

    Returns rows with ``scores_bytes`` (the formula), per implementation the measured memory and the time
    (median and spread over interleaved rounds), and the fitted exponents k in cost ∝ n^k.
    """
    device = torch.device(device) if device is not None else tl.get_device()
    dtype = dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    g = torch.Generator().manual_seed(seed)
    rows = []
    for n in sorted(lengths):
        q, k, v = (torch.randn(batch_size, n_heads, n, d_head, generator=g).to(device, dtype) for _ in range(3))
        calls = {impl: (lambda impl=impl: _attend(q, k, v, impl)) for impl in ("eager", "sdpa")}
        times = interleaved_times(calls, repeats=repeats, inner=max(1, 1024 // n), warmup=1, device=device)
        row = {"length": n, "scores_bytes": scores_bytes(batch_size, n_heads, n, dtype)}
        for impl, call in calls.items():
            row[impl] = {**measure_memory(call, device), "ms": summarize([1e3 * t for t in times[impl]])}
        rows.append(row)
    xs = [r["length"] for r in rows]

    def slope(key) -> float | None:
        ys = [key(r) for r in rows]
        return loglog_slope(xs, ys) if len(xs) > 1 and all(y and y > 0 for y in ys) else None

    return {
        "name": "memory",
        "env": environment(device, dtype),
        "config": dict(lengths=xs, batch_size=batch_size, n_heads=n_heads, d_head=d_head, repeats=repeats),
        "rows": rows,
        "exponents": {
            "eager_time": slope(lambda r: r["eager"]["ms"]["median"]),
            "sdpa_time": slope(lambda r: r["sdpa"]["ms"]["median"]),
            "eager_peak_memory": slope(lambda r: r["eager"]["peak_bytes"]),
            "sdpa_peak_memory": slope(lambda r: r["sdpa"]["peak_bytes"]),
        },
    }


@torch.no_grad()
def _attend(q, k, v, impl):
    return tl.scaled_dot_product_attention(q, k, v, impl=impl)[0]


def table(result: dict) -> str:
    """Plain-text table of a :func:`memory_benchmark` result."""
    mib = 2.0**20
    rows = [
        {
            "n": r["length"],
            "scores": r["scores_bytes"] / mib,
            "ep": r["eager"]["peak_bytes"] / mib,
            "sp": r["sdpa"]["peak_bytes"] / mib,
            "et": r["eager"]["ms"]["median"],
            "st": r["sdpa"]["ms"]["median"],
        }
        for r in result["rows"]
    ]
    return format_table(
        rows,
        [
            ("length", "n"),
            ("scores MiB", "scores"),
            ("eager peak MiB", "ep"),
            ("sdpa peak MiB", "sp"),
            ("eager ms", "et"),
            ("sdpa ms", "st"),
        ],
        "Attention time and memory against length, no mask (median time over rounds)",
    )

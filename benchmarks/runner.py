"""Run every benchmark, print its table, and collect the results into one JSON-ready dict."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch

import transformer_lib as tl

from . import attention, decoding, memory, mfu, train_step
from .common import environment

__all__ = ["BENCHMARKS", "TARGETS", "run_all"]

BENCHMARKS = ("train_step", "attention", "decoding", "memory", "mfu")

# What the library aims for on the CPU in float32 (ratios, so they do not depend on the machine's speed).
TARGETS = {"train_step_ratio_vs_torch": 1.0, "kv_cache_speedup_128": 5.0}


def _sizes(module, quick: bool, override: dict | None) -> dict:
    return {**(module.QUICK if quick else module.FULL), **(override or {})}


def _train_step(quick: bool, device: torch.device, override: dict | None = None, **_) -> list[dict]:
    sizes = _sizes(train_step, quick, override)
    return [train_step.train_step_benchmark(norm_first=nf, device=device, **sizes) for nf in (False, True)]


def _attention(quick: bool, device: torch.device, override: dict | None = None, **_) -> dict:
    return attention.attention_benchmark(device=device, **_sizes(attention, quick, override))


def _decoding(quick: bool, device: torch.device, override: dict | None = None, **_) -> dict:
    return decoding.decoding_benchmark(device=device, **_sizes(decoding, quick, override))


def _memory(quick: bool, device: torch.device, override: dict | None = None, **_) -> dict:
    return memory.memory_benchmark(device=device, **_sizes(memory, quick, override))


def _mfu(
    quick: bool, device: torch.device, override: dict | None = None, peak_tflops: float | None = None, **_
) -> dict:
    sizes = {**(dict(batch_size=16, repeats=3, inner=3) if quick else {}), **(override or {})}
    return mfu.mfu_benchmark(device=device, peak=peak_tflops, **sizes)


_RUNNERS: dict[str, tuple[Callable, Callable]] = {
    "train_step": (_train_step, train_step.table),
    "attention": (_attention, attention.table),
    "decoding": (_decoding, decoding.table),
    "memory": (_memory, memory.table),
    "mfu": (_mfu, mfu.table),
}


def run_all(
    *,
    quick: bool = False,
    only: Sequence[str] | None = None,
    device: torch.device | str | None = None,
    peak_tflops: float | None = None,
    sizes: dict[str, dict] | None = None,
    echo: Callable[[str], object] | None = print,
) -> dict:
    """Run the benchmarks named in ``only`` (default: all of :data:`BENCHMARKS`) and return one dict.

    ``quick`` picks each module's ``QUICK`` sizes instead of ``FULL``; ``sizes`` overrides some of them per
    benchmark, e.g. ``{"decoding": {"new_tokens": (8, 16)}}``. ``echo`` prints each table (None: silent).

    Top-level keys: ``env``, ``quick``, ``targets``, ``train_step_ratio_vs_torch`` (post-LN, the paper's stack),
    ``train_step_ratio_vs_torch_norm_first`` (pre-LN), ``kv_cache_speedup_128`` (None when not measured),
    ``seconds`` and ``benchmarks`` (each benchmark's full result).
    """
    names = list(only) if only else list(BENCHMARKS)
    unknown = [n for n in names if n not in _RUNNERS]
    if unknown:
        raise ValueError(f"only: unknown benchmarks {unknown}; expected some of {list(BENCHMARKS)}")
    device = torch.device(device) if device is not None else tl.get_device()
    start = time.perf_counter()
    results: dict[str, object] = {}
    for name in names:
        run, table = _RUNNERS[name]
        t0 = time.perf_counter()
        results[name] = run(quick, device, override=(sizes or {}).get(name), peak_tflops=peak_tflops)
        if echo is not None:
            echo(f"{table(results[name])}\n({name}: {time.perf_counter() - t0:.1f} s)\n")
    train = results.get("train_step")
    dec = results.get("decoding")
    return {
        "env": environment(device, torch.bfloat16 if device.type == "cuda" else torch.float32),
        "quick": quick,
        "targets": TARGETS,
        "train_step_ratio_vs_torch": train[0]["ratio_ours_vs_torch"]["median"] if train else None,
        "train_step_ratio_vs_torch_norm_first": train[1]["ratio_ours_vs_torch"]["median"] if train else None,
        "kv_cache_speedup_128": decoding.speedup_at(dec, 128) if dec else None,
        "seconds": time.perf_counter() - start,
        "benchmarks": results,
    }

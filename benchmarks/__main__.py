"""``python -m benchmarks [--quick] [--json PATH] [--only NAME ...] [--device DEV] [--threads N]``.

Runs every benchmark (see :mod:`benchmarks`), prints a table for each and, with ``--json``, writes all results,
the environment and the headline ratios (``train_step_ratio_vs_torch``, ``kv_cache_speedup_128``) to ``PATH``.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import torch

from .common import write_result
from .runner import BENCHMARKS, TARGETS, run_all


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (about a minute on a CPU)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write every result to this JSON file")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=BENCHMARKS,
        metavar="NAME",
        help=f"run only these benchmarks, out of: {', '.join(BENCHMARKS)}",
    )
    parser.add_argument("--device", help="cpu, cuda, ... (default: tl.get_device())")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads for torch (default 1: timings on a shared machine are far steadier on one "
        "thread; 0 keeps torch's default)",
    )
    parser.add_argument("--peak-tflops", type=float, help="the GPU's peak bf16 TFLOP/s, if not in the MFU table")
    args = parser.parse_args(argv)
    if args.threads < 0:
        parser.error(f"--threads: expected a count >= 0, got {args.threads}")
    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", module=r"torch\.nn\.modules\.(transformer|activation)")
    result = run_all(quick=args.quick, only=args.only, device=args.device, peak_tflops=args.peak_tflops)
    summary = [
        f"train_step_ratio_vs_torch = {result['train_step_ratio_vs_torch']}"
        f" (target >= {TARGETS['train_step_ratio_vs_torch']}; pre-LN: "
        f"{result['train_step_ratio_vs_torch_norm_first']})",
        f"kv_cache_speedup_128 = {result['kv_cache_speedup_128']} (target >= {TARGETS['kv_cache_speedup_128']})",
        f"total {result['seconds']:.0f} s on {result['env']['device']} with {result['env']['threads']} thread(s)",
    ]
    print("\n".join(summary))
    write_result(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

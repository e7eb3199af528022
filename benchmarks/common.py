"""Timing and reporting helpers shared by every benchmark.

Every benchmark compares its contenders *within one run* and *interleaved*: round 1 times A then B, round 2 times
B then A, and so on. On a shared, noisy machine the absolute numbers drift with the load, but a ratio taken inside
each round sees the same load on both sides, so the median ratio over rounds is a stable figure.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path

import torch

from transformer_lib.book.timing import (  # one timing helper for book and benchmarks
    Timer,
    interleaved_times,
    synchronize,
)

__all__ = ["Timer", "interleaved_times", "summarize", "ratio_summary", "environment", "synchronize", "format_table"]


def summarize(samples: Sequence[float]) -> dict[str, float | int]:
    """Median, quartiles, IQR, min and max of a list of measurements (the spread is part of every figure)."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("samples: expected at least one measurement, got none")
    if len(xs) >= 2:
        q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    else:
        q1 = q3 = xs[0]
    return {
        "median": statistics.median(xs),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "min": xs[0],
        "max": xs[-1],
        "n": len(xs),
    }


def ratio_summary(numerator: Sequence[float], denominator: Sequence[float]) -> dict[str, float | int]:
    """Summary of the per-round ratios ``numerator[i] / denominator[i]`` (same round = same machine load)."""
    if len(numerator) != len(denominator):
        raise ValueError(f"numerator, denominator: expected equal lengths, got {len(numerator)}, {len(denominator)}")
    return summarize([a / b for a, b in zip(numerator, denominator, strict=True)])


def environment(device: torch.device, dtype: torch.dtype) -> dict:
    """Where and when the numbers were taken: device, dtype, versions, threads, load, date."""
    info = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else _cpu_name(),
        "dtype": str(dtype).replace("torch.", ""),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "threads": torch.get_num_threads(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    info["cpu_count"] = os.cpu_count()
    try:
        info["load_average_1m"] = round(os.getloadavg()[0], 2)  # > cpu_count: the machine was shared
    except (AttributeError, OSError):  # not available on Windows
        pass
    return info


def _cpu_name() -> str:
    """The CPU's model name where the system tells it (Linux), else the architecture."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def format_table(rows: list[dict], columns: list[tuple[str, str]], title: str = "") -> str:
    """A plain-text table: ``columns`` is ``[(header, key), ...]``; floats are shown with 4 significant digits."""

    def cell(v) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return "" if v is None else str(v)

    body = [[cell(row.get(key)) for _, key in columns] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in body)) if body else len(h) for i, (h, _) in enumerate(columns)]
    line = "  ".join(h.rjust(w) for (h, _), w in zip(columns, widths, strict=True))
    out = [title] if title else []
    out += [line, "-" * len(line)]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in body]
    return "\n".join(out)


def write_result(path: Path | None, result: dict) -> None:
    """Write a benchmark's result as JSON to ``path`` (its folder made if needed) and say so; nothing when None."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")

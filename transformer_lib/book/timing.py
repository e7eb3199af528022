"""Timing a piece of work honestly, for the chapters and for ``benchmarks/``: synchronise the device around the
clock, warm up first, and compare contenders interleaved (A B, B A, ...) so that a load change hits both.

Wall-clock figures are shown in the book and measured in ``benchmarks/``; no test asserts one (a busy machine
would break it): claims about speed are checked by counts, or in CPU time (``clock="cpu"``: the seconds this process
ran, which other programs on the machine cannot add to), with margins.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from ..validation import check_positive

__all__ = ["synchronize", "Timer", "time_call", "interleaved_times", "count_work"]


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work (a no-op on the CPU), so that a clock read measures finished work, not a launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


Clock = Literal["wall", "cpu"]
_CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


class Timer:
    """Seconds of a block, synchronising the device at both ends: wall-clock time (``clock="wall"``), or the CPU time
    of this process, all its threads (``clock="cpu"``), which a busy machine does not inflate. On a GPU, CPU time
    counts only the host's share (launches, and the wait in ``synchronize``)."""

    def __init__(self, device: torch.device, clock: Clock = "wall") -> None:
        if clock not in _CLOCKS:
            raise ValueError(f"clock: expected 'wall' or 'cpu', got {clock!r}")
        self.device = device
        self.seconds = float("nan")
        self._clock = _CLOCKS[clock]

    def __enter__(self) -> Timer:
        synchronize(self.device)
        self._start = self._clock()
        return self

    def __exit__(self, *exc) -> None:
        synchronize(self.device)
        self.seconds = self._clock() - self._start


def interleaved_times(
    contenders: dict[str, Callable[[], object]],
    *,
    repeats: int,
    inner: int = 1,
    warmup: int = 1,
    device: torch.device | str = "cpu",
    clock: Clock = "wall",
) -> dict[str, list[float]]:
    """Seconds per call of each contender (wall-clock, or CPU time with ``clock="cpu"``), measured in ``repeats``
    interleaved rounds of ``inner`` calls.

    The order of the contenders alternates between rounds (A B, B A, ...) so that neither always runs first.
    Returns ``{name: [seconds per call, one per round]}``.
    """
    if repeats < 1 or inner < 1 or warmup < 0:
        raise ValueError(f"repeats, inner: expected >= 1 and warmup >= 0, got {repeats}, {inner}, {warmup}")
    device = torch.device(device)
    names = list(contenders)
    for name in names:
        for _ in range(warmup):
            contenders[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            with Timer(device, clock) as t:
                for _ in range(inner):
                    contenders[name]()
            times[name].append(t.seconds / inner)
    return times


def time_call(
    fn: Callable[[], object],
    *,
    repeats: int = 5,
    warmup: int = 1,
    device: torch.device | str = "cpu",
    clock: Clock = "wall",
) -> list[float]:
    """Seconds taken by each of ``repeats`` calls of ``fn`` (wall-clock, or CPU time with ``clock="cpu"``), after
    ``warmup`` untimed calls.

    >>> fastest = min(time_call(lambda: sum(range(10_000)), repeats=3, clock="cpu"))
    >>> 0 <= fastest < 10
    True
    """
    check_positive("repeats", repeats)
    check_positive("warmup", warmup, allow_zero=True)
    device = torch.device(device)
    for _ in range(warmup):
        fn()
    seconds = []
    for _ in range(repeats):
        with Timer(device, clock) as t:
            fn()
        seconds.append(t.seconds)
    return seconds


class _CountCalls(TorchDispatchMode):
    """Counts the operators dispatched to PyTorch's kernels (each pays the fixed cost of one call)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def count_work(fn: Callable[[], object]) -> dict[str, int]:
    """What ``fn()`` asks of the machine, counted rather than timed, so that no load can change it:
    ``{"flops": matrix-product FLOPs (torch's FlopCounterMode, 2 per multiply-add), "operator_calls": operators
    dispatched to a kernel}``. Runs ``fn`` twice, once under each counter."""
    with FlopCounterMode(display=False) as flops:
        fn()
    with _CountCalls() as calls:
        fn()
    return {"flops": int(flops.get_total_flops()), "operator_calls": calls.calls}

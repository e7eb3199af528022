"""transformer_lib.book.timing: the one timing helper of the book and the benchmarks (behaviour, never a speed)."""

import time

import pytest
import torch

from transformer_lib.book import timing


def test_time_call_warms_up_then_times_each_repeat():
    calls = []
    seconds = timing.time_call(lambda: calls.append(1), repeats=3, warmup=2)
    assert len(calls) == 5 and len(seconds) == 3 and all(s >= 0 for s in seconds)
    with pytest.raises(ValueError, match="repeats"):
        timing.time_call(lambda: None, repeats=0)


def test_interleaved_times_alternate_the_order_of_contenders():
    order = []
    times = timing.interleaved_times(
        {"a": lambda: order.append("a"), "b": lambda: order.append("b")}, repeats=3, warmup=1
    )
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-ups, then A B, B A, A B
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3}


def test_timer_measures_a_block_on_the_cpu():
    with timing.Timer(torch.device("cpu")) as t:
        sum(range(1000))
    assert 0 <= t.seconds < 60


def test_the_cpu_clock_counts_work_and_not_waiting():
    with timing.Timer(torch.device("cpu"), clock="cpu") as asleep:
        time.sleep(0.2)
    with timing.Timer(torch.device("cpu"), clock="cpu") as working:
        sum(range(3_000_000))
    assert asleep.seconds < 0.1, f"0.2 s asleep counted {asleep.seconds:.3f} CPU s (expected almost none)"
    assert working.seconds > 0, working.seconds
    rounds = timing.interleaved_times({"a": lambda: None}, repeats=2, warmup=0, clock="cpu")
    assert len(rounds["a"]) == 2
    with pytest.raises(ValueError, match="clock: expected 'wall' or 'cpu', got 'gpu'"):
        timing.time_call(lambda: None, clock="gpu")  # type: ignore[arg-type]


def test_count_work_counts_flops_and_operator_calls():
    a, b = torch.ones(2, 3), torch.ones(3, 4)
    work = timing.count_work(lambda: (a @ b).relu())
    assert work == {"flops": 2 * 2 * 3 * 4, "operator_calls": 2}  # one matmul (2·m·k·n FLOPs) and one relu

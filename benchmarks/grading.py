"""Grading a class: seconds per notebook and each worker's peak memory, locally and on a Dask cluster.

``python -m benchmarks.grading [--quick] [--json PATH] [--engines NAME ...]`` grades the same class (copies of the
fixture submissions: a right and a wrong answer to assignment 3, alternating) with each engine:

- ``pool``: the grader's own pool of ``--jobs 2`` threads (before Dask replaced it; measured on that commit, its
  figures kept in ``benchmarks/results/grading.json``);
- ``local``: the embedded ``LocalCluster`` of 2 worker processes (``tl-grade FOLDER --jobs 2``, the default);
- ``scheduler``: a real ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1 (``tl-grade FOLDER
  --scheduler tcp://127.0.0.1:PORT``).

Each engine's figure is the wall-clock time of the whole class (sheets included) divided by its notebooks, and the
peak resident memory of each worker process (``ru_maxrss``). The
engines run one after the other on a machine others share too, so each is run ``repeats`` times, interleaved,
and the median kept. :func:`projection` turns a figure into hours for a course of 6,000 notebooks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .common import environment, summarize

__all__ = ["ENGINES", "QUICK", "FULL", "make_class", "grading_benchmark", "projection", "table"]

ENGINES = ("local", "scheduler")
QUICK = dict(notebooks=4, repeats=1, workers=2)
FULL = dict(notebooks=8, repeats=2, workers=2)
COURSE = 6000  # 1,000 students x 6 assignments
_FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "submissions"


def make_class(folder: Path, notebooks: int) -> Path:
    """A class of ``notebooks`` students in ``folder``, each with assignment 3: alice's right answer and bob's
    wrong one, alternating."""
    for i in range(notebooks):
        source = _FIXTURES / ("alice" if i % 2 == 0 else "bob") / "03_attention.ipynb"
        (folder / f"s{i:04d}").mkdir(parents=True)
        shutil.copy(source, folder / f"s{i:04d}" / "03_attention.ipynb")
    return folder


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def dask_processes(workers: int, *, nthreads: int = 1) -> Iterator[tuple[str, list[subprocess.Popen[bytes]]]]:
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes on 127.0.0.1 (as a teacher starts them):
    yields the scheduler's address and the workers' processes (each the leader of its own process group); all are
    stopped on the way out."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "2"}
    started: list[subprocess.Popen[bytes]] = []
    log = tempfile.TemporaryFile()
    try:
        started.append(
            subprocess.Popen(
                [*dask, "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0"],
                stdout=log,
                stderr=log,
                env=env,
            )
        )
        worker = [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", str(nthreads)]
        for i in range(workers):
            started.append(
                subprocess.Popen(
                    [*worker, "--name", f"w{i}", "--host", "127.0.0.1", "--dashboard-address", ":0"],
                    stdout=log,
                    stderr=log,
                    env=env,
                    start_new_session=True,  # a group of its own: killing it is a machine lost (nanny, worker, kernels)
                )
            )
        _wait_for_workers(address, workers)
        yield address, started[1:]
    finally:
        for p in reversed(started):
            p.terminate()
        for p in reversed(started):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()


def _wait_for_workers(address: str, n: int, timeout: float = 120) -> None:
    from distributed import Client

    with Client(address, timeout=timeout) as client:
        client.wait_for_workers(n, timeout=timeout)


def _peaks(scheduler: str | None) -> list[dict[str, Any]]:
    """Peak resident memory (MB) of each worker process; of this process (which ran the threads) for the pool."""
    if scheduler is None:
        return [_peak_here()]
    from distributed import Client

    with Client(scheduler) as client:
        return sorted(client.run(_peak_here).values(), key=lambda p: str(p["worker"]))


def _peak_here() -> dict[str, Any]:
    try:
        from distributed import get_worker

        name = str(get_worker().name)
    except (ImportError, ValueError):
        name = "grader"
    # (the kernels' own peaks are not measured here: a child's ru_maxrss counts its parent's pages from before exec)
    return {"worker": name, "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _grade(engine: str, folder: Path, out: Path, workers: int) -> tuple[float, list[dict[str, Any]]]:
    """Seconds to grade ``folder`` with ``engine``, and the workers' peaks."""
    from transformer_lib.classroom.folder import grade_folder

    if engine == "pool":  # the grader's own thread pool (before Dask; kept to measure it on that commit)
        started = time.perf_counter()
        grade_folder(folder, out, jobs=workers, progress=False)
        return time.perf_counter() - started, _peaks(None)
    if engine == "local":
        started = time.perf_counter()
        grade_folder(folder, out, jobs=workers, progress=False, worker_peaks=(peaks := []))  # type: ignore[call-arg]
        return time.perf_counter() - started, peaks
    with dask_processes(workers) as (address, _):
        started = time.perf_counter()
        grade_folder(folder, out, scheduler=address, progress=False)  # type: ignore[call-arg]
        seconds = time.perf_counter() - started
        return seconds, _peaks(address)


def grading_benchmark(
    *, notebooks: int = 8, repeats: int = 2, workers: int = 2, engines: Sequence[str] = ENGINES
) -> dict[str, Any]:
    """Grade one class of ``notebooks`` with each of ``engines`` (``workers`` at once), ``repeats`` rounds in
    alternating order; returns seconds per notebook (summarized over rounds) and peak memory per engine, the Dask
    overhead against ``local``/``pool`` where both ran, and :func:`projection` of each."""
    results: dict[str, Any] = {e: {"seconds": [], "peaks": []} for e in engines}
    with tempfile.TemporaryDirectory(prefix="tl-bench-grading-") as tmp:
        folder = make_class(Path(tmp) / "class", notebooks)
        for r in range(repeats):
            for engine in engines if r % 2 == 0 else list(reversed(engines)):
                out = Path(tmp) / f"{engine}-{r}" / "grades.csv"
                out.parent.mkdir()
                seconds, peaks = _grade(engine, folder, out, workers)
                results[engine]["seconds"].append(seconds / notebooks)
                results[engine]["peaks"].append(peaks)
    figures: dict[str, Any] = {}
    for engine, found in results.items():
        per_notebook = summarize(found["seconds"])
        figures[engine] = {
            "seconds_per_notebook": per_notebook,
            "workers_peak_mb": found["peaks"][-1],
            "projection": projection(per_notebook["median"], workers),
        }
    return {"notebooks": notebooks, "workers": workers, "repeats": repeats, "engines": figures}


def projection(seconds_per_notebook: float, workers: int, course: int = COURSE) -> dict[str, float]:
    """Hours for ``course`` notebooks at the measured rate: ``seconds_per_notebook`` is the class's wall time per
    notebook with ``workers`` at once, so one worker takes ``seconds_per_notebook * workers`` per notebook; on
    32 and 256 workers (one core each, as measured) the course takes that times ``course / n`` seconds."""
    per_worker = seconds_per_notebook * workers
    return {f"hours_on_{n}": round(per_worker * course / n / 3600, 2) for n in (32, 256)}


def table(result: dict[str, Any]) -> str:
    """The benchmark as a text table."""
    lines = [f"{'engine':<10} {'s/notebook':>10} {'6000 on 32':>11} {'on 256':>8}  peak MB per worker"]
    for engine, f in result["engines"].items():
        peaks = ", ".join(f"{p['worker']}: {p['peak_mb']:.0f}" for p in f["workers_peak_mb"])
        lines.append(
            f"{engine:<10} {f['seconds_per_notebook']['median']:>10.2f} {f['projection']['hours_on_32']:>9.2f} h "
            f"{f['projection']['hours_on_256']:>6.2f} h  {peaks}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grading", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK} instead of {FULL}")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the result to this JSON file")
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=("pool", *ENGINES), metavar="NAME")
    args = parser.parse_args(argv)
    import torch

    result = {
        "env": environment(torch.device("cpu"), torch.float32),
        **grading_benchmark(**(QUICK if args.quick else FULL), engines=args.engines),
    }
    print(table(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

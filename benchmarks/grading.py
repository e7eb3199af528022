"""Grading a class: seconds per notebook and each worker's peak memory, locally and on a Dask cluster.

``python -m benchmarks.grading [--quick] [--json PATH] [--engines NAME ...]`` grades the same class (copies of the
fixture submissions: a right and a wrong answer to assignment 3, alternating) with each engine:

- ``pool``: the grader's own pool of ``--jobs 2`` threads, before Dask replaced it (commit 51d62d1): run from a
  checkout of that commit named by ``TL_POOL_SOURCE`` (``git archive 51d62d1 | tar -x -C DIR``), in a process of
  its own;
- ``serial``: the notebooks one after another in this process, no Dask (:func:`~transformer_lib.classroom.notebook.
  grade_notebook`, one library copy): the local route, which the Dask route's overhead is measured against;
- ``local``: the embedded ``LocalCluster`` of 2 worker processes (``tl-grade FOLDER --jobs 2``, the default);
- ``scheduler``: a real ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1 (``tl-grade FOLDER
  --scheduler tcp://127.0.0.1:PORT``).

Each engine's figures are the wall-clock time of the whole class (sheets included) divided by its notebooks, the CPU
seconds of this process and every process it started (workers, kernels: ``RUSAGE_CHILDREN``, counted once they are
reaped) divided by its notebooks, which load from other users moves far less, and the peak resident memory of each
worker process (``ru_maxrss``). The
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

from .common import environment, summarize, write_result

__all__ = ["ENGINES", "QUICK", "FULL", "make_class", "grading_benchmark", "projection", "table"]

ENGINES = ("serial", "local", "scheduler")
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


def _cpu_seconds() -> float:
    """CPU seconds (user and system) of this process and of every process it started that has ended."""
    return sum(
        u.ru_utime + u.ru_stime
        for u in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    )


def _grade(engine: str, folder: Path, out: Path, workers: int) -> tuple[float, float, list[dict[str, Any]]]:
    """Seconds and CPU seconds to grade ``folder`` with ``engine``, and the workers' peaks."""
    cpu = _cpu_seconds()
    seconds, peaks = _grade_with(engine, folder, out, workers)
    return seconds, _cpu_seconds() - cpu, peaks


def _grade_with(engine: str, folder: Path, out: Path, workers: int) -> tuple[float, list[dict[str, Any]]]:
    from transformer_lib.classroom.folder import find_submissions, grade_folder

    if engine == "pool":  # the grader's own thread pool, before Dask: run from a checkout of that commit
        return _pool(folder, out, workers)
    peaks: dict[str, float] = {}
    started = time.perf_counter()
    if engine == "serial":  # one after another, here: no cluster, one library copy (as a worker keeps it)
        from transformer_lib.classroom.notebook import grade_notebook
        from transformer_lib.classroom.sandbox import LibraryCopy
        from transformer_lib.classroom.stubs import stubs_for

        library = LibraryCopy(stubs=stubs_for("03_attention"))
        try:
            for student, path in find_submissions(folder):
                grade_notebook(path, student, library=library)
        finally:
            library.cleanup()
        return time.perf_counter() - started, [_peak_here()]
    if engine == "local":
        grade_folder(folder, out, jobs=workers, progress=False, worker_peaks=peaks)
        seconds = time.perf_counter() - started
    else:
        with dask_processes(workers) as (address, _):
            started = time.perf_counter()
            grade_folder(folder, out, scheduler=address, progress=False, worker_peaks=peaks)
            seconds = time.perf_counter() - started
    return seconds, [{"worker": w, "peak_mb": mb} for w, mb in sorted(peaks.items())]


POOL_SOURCE = os.environ.get("TL_POOL_SOURCE", "")  # a checkout of the commit before Dask (git archive 51d62d1)
_POOL_RUN = """
import json, resource, sys, time
from transformer_lib.classroom.folder import grade_folder
started = time.perf_counter()
grade_folder(sys.argv[1], sys.argv[2], jobs=int(sys.argv[3]), progress=False)
seconds = time.perf_counter() - started
print(json.dumps([seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]))
"""


def _pool(folder: Path, out: Path, workers: int) -> tuple[float, list[dict[str, Any]]]:
    """The old pool's time and peak, graded by the library of :data:`POOL_SOURCE` in a process of its own."""
    if not (Path(POOL_SOURCE) / "transformer_lib" / "classroom" / "folder.py").is_file():
        raise FileNotFoundError(
            f"TL_POOL_SOURCE: expected a checkout of the grader before Dask (git archive 51d62d1), got {POOL_SOURCE!r}"
        )
    env = {**os.environ, "PYTHONPATH": POOL_SOURCE}
    command = [sys.executable, "-c", _POOL_RUN, str(folder), str(out), str(workers)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=POOL_SOURCE)
    seconds, peak = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds, [{"worker": "grader (threads)", "peak_mb": round(peak, 1)}]


def grading_benchmark(
    *, notebooks: int = 8, repeats: int = 2, workers: int = 2, engines: Sequence[str] = ENGINES
) -> dict[str, Any]:
    """Grade one class of ``notebooks`` with each of ``engines`` (``workers`` at once), ``repeats`` rounds in
    alternating order; returns seconds per notebook (summarized over rounds) and peak memory per engine, the Dask
    overhead against ``pool`` where it ran (per round, so that both saw the same load), and :func:`projection` of
    each."""
    results: dict[str, Any] = {e: {"seconds": [], "cpu": [], "peaks": []} for e in engines}
    with tempfile.TemporaryDirectory(prefix="tl-bench-grading-") as tmp:
        folder = make_class(Path(tmp) / "class", notebooks)
        for r in range(repeats):
            for engine in engines if r % 2 == 0 else list(reversed(engines)):
                out = Path(tmp) / f"{engine}-{r}" / "grades.csv"
                out.parent.mkdir()
                seconds, cpu, peaks = _grade(engine, folder, out, workers)
                results[engine]["seconds"].append(seconds / notebooks)
                results[engine]["cpu"].append(cpu / notebooks)
                results[engine]["peaks"].append(peaks)
    figures: dict[str, Any] = {}
    for engine, found in results.items():
        per_notebook = summarize(found["seconds"])
        figures[engine] = {
            "seconds_per_notebook": per_notebook,
            "cpu_seconds_per_notebook": summarize(found["cpu"]),
            "workers_peak_mb": found["peaks"][-1],
            "projection": projection(per_notebook["median"], 1 if engine == "serial" else workers),
        }
    base = next((b for b in ("serial", "pool") if b in results), None)
    overhead = {  # per notebook against the local route, round by round (the same load on both)
        e: {
            "cpu": summarize([x / y - 1 for x, y in zip(results[e]["cpu"], results[base]["cpu"], strict=True)]),
            "seconds": summarize(  # a worker's seconds per notebook (wall time x workers) against one process's
                [
                    x * (workers if e != "pool" else 1) / y / (1 if base == "serial" else workers) - 1
                    for x, y in zip(results[e]["seconds"], results[base]["seconds"], strict=True)
                ]
            ),
        }
        for e in results
        if base is not None and e != base
    }
    return {
        "notebooks": notebooks,
        "workers": workers,
        "repeats": repeats,
        "base": base,
        "engines": figures,
        "overhead": overhead,
    }


def projection(seconds_per_notebook: float, workers: int, course: int = COURSE) -> dict[str, float]:
    """Hours for ``course`` notebooks at the measured rate: ``seconds_per_notebook`` is the class's wall time per
    notebook with ``workers`` at once, so one worker takes ``seconds_per_notebook * workers`` per notebook; on
    32 and 256 workers (one core each, as measured) the course takes that times ``course / n`` seconds."""
    per_worker = seconds_per_notebook * workers
    return {f"hours_on_{n}": round(per_worker * course / n / 3600, 2) for n in (32, 256)}


def table(result: dict[str, Any]) -> str:
    """The benchmark as a text table."""
    lines = [f"{'engine':<10} {'s/notebook':>10} {'CPU s/nb':>9} {'6000 on 32':>11} {'on 256':>8}  peak MB per worker"]
    for engine, f in result["engines"].items():
        peaks = ", ".join(f"{p['worker']}: {p['peak_mb']:.0f}" for p in f["workers_peak_mb"])
        lines.append(
            f"{engine:<10} {f['seconds_per_notebook']['median']:>10.2f} "
            f"{f['cpu_seconds_per_notebook']['median']:>9.2f} "
            f"{f['projection']['hours_on_32']:>9.2f} h {f['projection']['hours_on_256']:>6.2f} h  {peaks}"
        )
    for engine, o in result.get("overhead", {}).items():
        lines.append(
            f"{engine}: CPU {o['cpu']['median']:+.1%} per notebook against {result['base']} "
            f"(rounds: {o['cpu']['min']:+.1%} "
            f"to {o['cpu']['max']:+.1%}); a worker's seconds {o['seconds']['median']:+.1%}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grading", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK} instead of {FULL}")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the result to this JSON file")
    parser.add_argument(
        "--engines",
        nargs="+",
        default=list(ENGINES),
        choices=("pool", *ENGINES),
        metavar="NAME",
        help=f"of pool (needs TL_POOL_SOURCE), {', '.join(ENGINES)} (default: %(default)s)",
    )
    args = parser.parse_args(argv)
    import torch

    result = {
        "env": environment(torch.device("cpu"), torch.float32),
        **grading_benchmark(**(QUICK if args.quick else FULL), engines=args.engines),
    }
    print(table(result))
    write_result(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

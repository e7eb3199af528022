"""Grading a class: CPU seconds per notebook and each worker's peak memory, locally and on a Dask cluster.

``python -m benchmarks.grading [--quick] [--json PATH] [--engines NAME ...]`` grades the same classes (copies of the
fixture submissions: a right and a wrong answer to assignment 3, alternating) with each engine:

- ``serial``: the notebooks one after another in this process, no Dask: :func:`~transformer_lib.classroom.folder.
  grade_folder` with each notebook graded here by :func:`~transformer_lib.classroom.cluster.grade_task` (the
  single-notebook path a worker runs, sandbox included) and the same sheets, similarity and feedback written: the
  local route, which the Dask route's overhead is measured against;
- ``local``: the embedded ``LocalCluster`` of 2 worker processes (``tl-grade FOLDER --jobs 2``, the default);
- ``scheduler``: a real ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1 (``tl-grade FOLDER
  --scheduler tcp://127.0.0.1:PORT``), their start and stop included;
- ``pool``: the grader's own pool of ``--jobs 2`` threads, before Dask replaced it (commit 51d62d1), run from a
  checkout of that commit named by ``TL_POOL_SOURCE`` (``git archive 51d62d1 | tar -x -C DIR``).

What is measured is CPU time, which other users' load moves far less than wall time, of everything an engine runs:
this process, the workers and the notebooks' kernels. A kernel runs in bubblewrap's PID namespace, whose first
process is killed when the kernel is: its CPU time never reaches this process's ``RUSAGE_CHILDREN``. So where this
process can make a cgroup of its own (cgroup v2, as root), it moves there, and everything it starts is counted in
the cgroup's ``cpu.stat``; elsewhere the figures are ``RUSAGE_SELF`` and ``RUSAGE_CHILDREN``, the kernels left out,
and the result says so (``cpu_meter``).

Each engine grades a class of ``small`` notebooks (one per worker) and one of ``large``; the difference is the cost
of ``large - small`` notebooks, start-up excluded: the engine's **CPU seconds per notebook**. What the small class
cost beyond its notebooks is the engine's **start-up** (its processes, imports, library copies, the sandbox's probe,
stopping). The Dask route's overhead is its CPU per notebook against the serial engine's, round by round. The wall
time per notebook of the large class, each worker's peak resident memory (``ru_maxrss``) and :func:`projection` (hours
for a course of 6,000 notebooks) are given too. The engines run one after the other on a machine others share, so
each is run ``repeats`` times, interleaved, and the median kept, after a first run of each on the small class that
the rounds leave out (what this process does once: imports, library copies; its CPU is reported apart).
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

__all__ = [
    "ENGINES",
    "QUICK",
    "FULL",
    "KernelPeaks",
    "attackers_memory",
    "make_class",
    "grading_benchmark",
    "projection",
    "table",
]

ENGINES = ("serial", "local", "scheduler")
QUICK = dict(small=2, large=4, repeats=1, workers=2)
FULL = dict(small=2, large=6, repeats=2, workers=2)
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


class CpuMeter:
    """CPU seconds of this process and everything it starts: a cgroup v2 of its own where it can make one (the
    kernels included), else ``RUSAGE_SELF`` and ``RUSAGE_CHILDREN`` (the kernels left out: see the module's
    docstring). ``kind`` says which; :meth:`close` moves the processes back and removes the cgroup."""

    def __init__(self) -> None:
        self.kind, self._group = "rusage (kernels not counted)", None
        try:
            self._group = _own_cgroup()
            self.kind = "cgroup"
        except OSError:
            pass

    def seconds(self) -> float:
        if self._group is None:
            return sum(
                u.ru_utime + u.ru_stime
                for u in (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
            )
        with open(self._group / "cpu.stat") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("usage_usec ")) / 1e6

    def close(self) -> None:
        if self._group is None:
            return
        for _ in range(50):  # a process may start while the others move, or still be ending
            for pid in (self._group / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    (self._group.parent / "cgroup.procs").write_text(pid)
            try:
                self._group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
        self._group = None


def _own_cgroup() -> Path:
    """A new cgroup v2 below this process's, with this process in it (OSError where that cannot be done)."""
    line = next((x for x in Path("/proc/self/cgroup").read_text().splitlines() if x.startswith("0::")), None)
    mounts = [m.split()[1] for m in Path("/proc/self/mounts").read_text().splitlines() if m.split()[2] == "cgroup2"]
    if line is None or not mounts:
        raise OSError("no cgroup v2 here")
    parent = Path(mounts[0]) / line[3:].lstrip("/")
    group = parent / f"tl-bench-grading-{os.getpid()}"
    group.mkdir()
    try:
        (group / "cgroup.procs").write_text(str(os.getpid()))
        if not (group / "cpu.stat").exists():
            raise OSError("no cpu.stat")
    except OSError:
        group.rmdir()
        raise
    return group


def _grade(
    engine: str, folder: Path, out: Path, workers: int, meter: CpuMeter
) -> tuple[float, float, list[dict[str, Any]]]:
    """Seconds and CPU seconds to grade ``folder`` with ``engine``, and the workers' peaks."""
    cpu = meter.seconds()
    seconds, peaks = _grade_with(engine, folder, out, workers)
    return seconds, meter.seconds() - cpu, peaks


def _here(submissions: list[Any], options: dict[str, Any], **_: Any) -> list[Any]:
    """Each notebook graded in this process, one after another, by the path a worker runs (no Dask)."""
    from transformer_lib.classroom.cluster import grade_task

    return [grade_task(s.student, s.path.name, s.path.read_bytes(), options) for s in submissions]


def _grade_with(engine: str, folder: Path, out: Path, workers: int) -> tuple[float, list[dict[str, Any]]]:
    from unittest import mock

    from transformer_lib.classroom import folder as by_folder

    if engine == "pool":  # the grader's own thread pool, before Dask: run from a checkout of that commit
        return _pool(folder, out, workers)
    peaks: dict[str, float] = {}
    started = time.perf_counter()
    if engine == "serial":  # the same grade_folder, sheets included, its notebooks graded here
        with mock.patch.object(by_folder, "grade_on_cluster", _here):
            by_folder.grade_folder(folder, out, progress=False)
        return time.perf_counter() - started, [_peak_here()]
    if engine == "local":
        by_folder.grade_folder(folder, out, jobs=workers, progress=False, worker_peaks=peaks)
    else:
        with dask_processes(workers) as (address, _):
            by_folder.grade_folder(folder, out, scheduler=address, progress=False, worker_peaks=peaks)
    return time.perf_counter() - started, [{"worker": w, "peak_mb": mb} for w, mb in sorted(peaks.items())]


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
    *, small: int = 2, large: int = 8, repeats: int = 2, workers: int = 2, engines: Sequence[str] = ENGINES
) -> dict[str, Any]:
    """Grade a class of ``small`` and one of ``large`` notebooks with each of ``engines`` (``workers`` at once),
    ``repeats`` rounds in alternating order; returns per engine the CPU seconds per notebook and of start-up (see the
    module's docstring), the wall seconds per notebook of the large class, the peak memory per worker, the Dask
    overhead per notebook against ``serial`` (or ``pool``) per round, and :func:`projection` of each."""
    if not 0 < small < large:
        raise ValueError(f"small, large: expected 0 < small < large notebooks, got {small}, {large}")
    results: dict[str, Any] = {e: {"seconds": [], "cpu": [], "startup": [], "peaks": []} for e in engines}
    first: dict[str, float] = {}
    meter = CpuMeter()
    try:
        with tempfile.TemporaryDirectory(prefix="tl-bench-grading-") as tmp:
            classes = {n: make_class(Path(tmp) / f"class-{n}", n) for n in (small, large)}
            for engine in engines:  # what this process does once (imports, library copies): not in the rounds
                out = Path(tmp) / f"{engine}-first" / "grades.csv"
                out.parent.mkdir()
                first[engine] = _grade(engine, classes[small], out, workers, meter)[1]
            for r in range(repeats):
                for engine in engines if r % 2 == 0 else list(reversed(engines)):
                    cpu = {}
                    for n, folder in classes.items():
                        out = Path(tmp) / f"{engine}-{r}-{n}" / "grades.csv"
                        out.parent.mkdir()
                        seconds, cpu[n], peaks = _grade(engine, folder, out, workers, meter)
                    cpu_per_notebook = (cpu[large] - cpu[small]) / (large - small)
                    results[engine]["cpu"].append(cpu_per_notebook)
                    results[engine]["startup"].append(cpu[small] - small * cpu_per_notebook)
                    results[engine]["seconds"].append(seconds / large)
                    results[engine]["peaks"].append(peaks)
    finally:
        meter.close()
    figures: dict[str, Any] = {}
    for engine, found in results.items():
        per_notebook = summarize(found["seconds"])
        figures[engine] = {
            "cpu_seconds_per_notebook": summarize(found["cpu"]),
            "startup_cpu_seconds": summarize(found["startup"]),
            "first_run_cpu_seconds": first[engine],  # the small class, graded first in this process
            "seconds_per_notebook": per_notebook,
            "workers_peak_mb": found["peaks"][-1],
            "projection": projection(per_notebook["median"], 1 if engine == "serial" else workers),
        }
    base = next((b for b in ("serial", "pool") if b in results), None)
    overhead = {  # CPU per notebook against the local route, round by round (the same load on both)
        e: summarize([x / y - 1 for x, y in zip(results[e]["cpu"], results[base]["cpu"], strict=True)])
        for e in results
        if base is not None and e != base
    }
    return {
        "notebooks": [small, large],
        "workers": workers,
        "repeats": repeats,
        "cpu_meter": meter.kind,
        "base": base,
        "engines": figures,
        "overhead": overhead,
    }


_ATTACKS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "attacks"


class KernelPeaks:
    """The resident memory of each sandbox, sampled every ``interval`` seconds from ``/proc`` while it runs: a
    sandbox is the processes whose command line names a kernel folder under ``under`` (its kernel and whatever the
    kernel forks); its peak is the largest sum of their ``VmRSS`` seen, and ``VmHWM`` (each process's own high-water
    mark) the largest of one process. Sampled: a peak shorter than ``interval`` can be missed by the sum. The
    grader's own processes below this one (the workers, and the child each forks to hold a kernel's client,
    :mod:`~transformer_lib.classroom.client_process`) are followed too: the largest ``VmHWM`` of each."""

    def __init__(self, under: Path, interval: float = 0.1) -> None:
        import threading

        self.under, self.interval = str(under), interval
        self.sums: dict[str, int] = {}  # kB, per kernel folder
        self.hwm: dict[str, int] = {}
        self.grader: dict[int, int] = {}  # kB, VmHWM of each process of the grader's below this one
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    @staticmethod
    def _status(proc: Path) -> dict[str, str]:
        return dict(line.split(":", 1) for line in (proc / "status").read_text().splitlines() if ":" in line)

    def _run(self) -> None:
        me = str(os.getpid())
        while not self._stop.is_set():
            now: dict[str, int] = {}
            parents: dict[str, str] = {}
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit():
                    continue
                with contextlib.suppress(OSError):
                    argv = (proc / "cmdline").read_bytes().split(b"\0")
                    if b"ipykernel_launcher" not in b" ".join(argv) or b"-f" not in argv:
                        if not argv[0].endswith(b"bwrap"):  # (the sandbox's own processes: a few MB)
                            parents[proc.name] = self._status(proc)["PPid"].strip()
                        continue
                    folder = os.fsdecode(argv[argv.index(b"-f") + 1]).rsplit("/", 1)[0]
                    if not folder.startswith(self.under):
                        continue
                    status = self._status(proc)
                    rss, hwm = int(status["VmRSS"].split()[0]), int(status["VmHWM"].split()[0])
                    now[folder] = now.get(folder, 0) + rss
                    self.hwm[folder] = max(self.hwm.get(folder, 0), hwm)
            for folder, kb in now.items():
                self.sums[folder] = max(self.sums.get(folder, 0), kb)
            for pid in parents:  # the grader's processes: those below this one
                up, seen = parents.get(pid), 0
                while up is not None and up != me and seen < 64:
                    up, seen = parents.get(up), seen + 1
                if up == me:
                    with contextlib.suppress(OSError, KeyError):
                        hwm = int(self._status(Path("/proc") / pid)["VmHWM"].split()[0])
                        self.grader[int(pid)] = max(self.grader.get(int(pid), 0), hwm)
            self._stop.wait(self.interval)

    def stop(self) -> dict[str, Any]:
        """The sandboxes' peaks in MB: ``sandboxes`` (each one's, largest first) and ``largest_process``."""
        self._stop.set()
        self._thread.join()
        return {
            "sandboxes_peak_mb": sorted((round(kb / 1024, 1) for kb in self.sums.values()), reverse=True),
            "largest_process_peak_mb": round(max(self.hwm.values(), default=0) / 1024, 1),
            "grader_processes_peak_mb": sorted((round(kb / 1024, 1) for kb in self.grader.values()), reverse=True),
        }


def attackers_memory(jobs: int = 2) -> dict[str, Any]:
    """The grader's peak memory with the attackers in the class (issue 43): the attack notebooks of
    ``tests/test_attacks.py`` (``tests/fixtures/attacks``) graded as one class with ``--jobs jobs`` in bubblewrap;
    the teacher's process's peak resident memory (this process: ``ru_maxrss``), each worker's, and each sandbox's
    (:class:`KernelPeaks`)."""
    from transformer_lib.classroom import folder as by_folder

    with tempfile.TemporaryDirectory(prefix="tl-bench-attackers-") as tmp:
        root = Path(tmp)
        shutil.copytree(_ATTACKS, root / "class", ignore=shutil.ignore_patterns("*.py"))
        temporary = root / "tmp"
        temporary.mkdir()
        before = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = str(temporary)  # the workers' (and so their kernels' folders), to find the sandboxes
        peaks: dict[str, float] = {}
        sampler = KernelPeaks(temporary)
        started = time.perf_counter()
        try:
            graded = by_folder.grade_folder(
                root / "class",
                root / "out" / "grades.csv",
                jobs=jobs,
                progress=False,
                worker_peaks=peaks,
                cell_timeout=30,
                time_limit=3,
            )
        finally:
            kernels = sampler.stop()
            if before is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = before
    return {
        "notebooks": len(graded),
        "jobs": jobs,
        "seconds": round(time.perf_counter() - started, 1),
        "teacher_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "workers_peak_mb": {w: mb for w, mb in sorted(peaks.items())},
        **kernels,
    }


def projection(seconds_per_notebook: float, workers: int, course: int = COURSE) -> dict[str, float]:
    """Hours for ``course`` notebooks at the measured rate: ``seconds_per_notebook`` is the class's wall time per
    notebook with ``workers`` at once, so one worker takes ``seconds_per_notebook * workers`` per notebook; on
    32 and 256 workers (one core each, as measured) the course takes that times ``course / n`` seconds."""
    per_worker = seconds_per_notebook * workers
    return {f"hours_on_{n}": round(per_worker * course / n / 3600, 2) for n in (32, 256)}


def table(result: dict[str, Any]) -> str:
    """The benchmark as a text table."""
    lines = [
        f"CPU: {result['cpu_meter']}",
        f"{'engine':<10} {'CPU s/nb':>9} {'start CPU s':>11} {'s/nb':>6} {'6000 on 32':>11} {'on 256':>8}  "
        "peak MB per worker",
    ]
    for engine, f in result["engines"].items():
        peaks = ", ".join(f"{p['worker']}: {p['peak_mb']:.0f}" for p in f["workers_peak_mb"])
        lines.append(
            f"{engine:<10} {f['cpu_seconds_per_notebook']['median']:>9.2f} "
            f"{f['startup_cpu_seconds']['median']:>11.2f} {f['seconds_per_notebook']['median']:>6.2f} "
            f"{f['projection']['hours_on_32']:>9.2f} h {f['projection']['hours_on_256']:>6.2f} h  {peaks}"
        )
    for engine, o in result.get("overhead", {}).items():
        lines.append(
            f"{engine}: CPU per notebook {o['median']:+.1%} against {result['base']} "
            f"(rounds: {o['min']:+.1%} to {o['max']:+.1%})"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grading", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"sizes {QUICK} instead of {FULL}")
    parser.add_argument("--repeats", type=int, metavar="N", help="rounds (default: the size's)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the result to this JSON file")
    parser.add_argument(
        "--engines",
        nargs="+",
        default=list(ENGINES),
        choices=("pool", *ENGINES),
        metavar="NAME",
        help=f"of pool (needs TL_POOL_SOURCE), {', '.join(ENGINES)} (default: %(default)s)",
    )
    parser.add_argument(
        "--attackers",
        action="store_true",
        help="instead: the peak memory of the teacher's process, each worker and each sandbox while the attack "
        "notebooks of tests/test_attacks.py are graded as one class with --jobs 2",
    )
    args = parser.parse_args(argv)
    import torch

    if args.attackers:
        found = {"env": environment(torch.device("cpu"), torch.float32), "attackers": attackers_memory()}
        print(json.dumps(found["attackers"], indent=1))
        write_result(args.json, found)
        return 0

    result = {
        "env": environment(torch.device("cpu"), torch.float32),
        **grading_benchmark(
            **{**(QUICK if args.quick else FULL), **({"repeats": args.repeats} if args.repeats else {})},
            engines=args.engines,
        ),
    }
    print(table(result))
    write_result(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())

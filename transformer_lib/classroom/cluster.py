"""Grading a class's notebooks at once on a Dask cluster (:func:`grade_on_cluster`): one task per notebook.

The teacher's process sends each notebook (its file name and bytes: a worker needs no shared folder) to a Dask
scheduler, either one the teacher started (``tl-grade FOLDER --scheduler tcp://HOST:8786``: ``dask scheduler`` and
``dask worker``, dask-jobqueue on Slurm or PBS, dask-kubernetes) or an embedded ``LocalCluster`` of ``jobs``
processes with one thread each (the default: the same code path on one machine). Each worker grades its notebook
with :func:`grade_task`, the single-notebook path (:func:`~.notebook.grade_notebook`), in its own bubblewrap sandbox
with the same limits, and returns the :class:`~.graded.GradedNotebook`; the teacher's process alone writes the
sheets, the feedback, the similarity report and the HMAC.

Nothing is lost with a worker. A worker that dies while grading (killed, out of memory, its machine gone) has its
notebook re-run on another by the scheduler; a notebook whose worker dies every time, after the scheduler's
``distributed.scheduler.allowed-failures`` (:data:`ALLOWED_FAILURES` for the embedded cluster; set
``DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES`` where ``dask scheduler`` runs) gets failed rows with a note, and
the rest of the class is graded. Each notebook has exactly one task and one result, whichever worker ran it last;
:class:`Graded` says which worker that was (``workers.csv`` in the run's folder). A worker where bubblewrap cannot
run refuses every notebook it is given, and the rows say why (unless the run is ``--no-sandbox``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bwrap import python_view
from .graded import GradedNotebook
from .notebook import grade_notebook, not_graded
from .sandbox import bwrap_problem
from .sheet_rows import clean_text
from .submissions import Submission, assignment_for

__all__ = [
    "ALLOWED_FAILURES",
    "WORKER_COLUMNS",
    "ClusterUnavailable",
    "Graded",
    "grade_task",
    "grade_on_cluster",
    "local_cluster",
]

ALLOWED_FAILURES = 2  # deaths of a worker while grading one notebook that the embedded cluster re-runs it after
# The embedded cluster's settings: what Dask does all along that grading does not need, each costing CPU while the
# notebooks run (an idle cluster of 2 workers: 0.081 CPU-s per second with Dask's defaults, 0.048 with these)
_EMBEDDED = {
    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
    "distributed.worker.profile.enabled": False,  # the dashboard's profile: the running task's stack every 10 ms
    "distributed.admin.system-monitor.interval": "2s",  # the dashboard's samples of each process (500 ms)
    "distributed.worker.memory.monitor-interval": "1s",  # the nanny's look at its worker's memory (100 ms)
    # one notebook per worker at a time, the others queued in the class's order on the scheduler (1.1 sent a second
    # one ahead, to wait behind a long notebook or be stolen back): nothing to steal, no stealing to run (100 ms)
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.scheduler.work-stealing": False,
}
WORKER_COLUMNS = ("student", "assignment", "file_name", "worker", "outcome", "seconds")
_CONNECT_TIMEOUT = 30  # seconds to reach a teacher's scheduler


class ClusterUnavailable(RuntimeError):
    """The Dask scheduler given cannot be reached."""


@dataclass
class Graded:
    """One notebook's result as the teacher's process receives it: what grading found, the worker that graded it
    (its name and address), and ``outcome``: ``graded``, or why the notebook could not be (``no sandbox``,
    ``worker died``, ``grader failed``)."""

    notebook: GradedNotebook
    worker: str
    outcome: str = "graded"


# --------------------------------------------------------------------------------------------------------------
# On a worker
# --------------------------------------------------------------------------------------------------------------
def _worker_name() -> str:
    """``name (address)`` of the Dask worker running this task; the process id outside a worker."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"
    name, address = str(worker.name), str(worker.address)
    return address if name == address else f"{name} ({address})"


def _failed(student: str, name: str, unsandboxed: bool, problem: str, summary: str) -> GradedNotebook:
    """Failed rows for every exercise of the notebook ``name``, the ``problem`` in its note too."""
    graded = GradedNotebook(student, Path(name).stem, Path(name), unsandboxed=unsandboxed)
    assignment = assignment_for(Path(name))
    not_graded(
        graded,
        assignment.exercises if assignment is not None else (),
        problem,
        summary,
        "Tell your teacher; the note in the grades sheet says what went wrong.",
    )
    graded.assignment = assignment.id if assignment is not None else graded.assignment
    graded.notes.append(problem)
    return graded


def _peak_mb() -> float:
    """This process's peak resident memory in MB."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def grade_task(student: str, name: str, data: bytes, options: dict[str, Any]) -> Graded:
    """Grade one notebook on this worker: ``data``, the bytes of the file called ``name``, handed in by
    ``student``, graded by :func:`~.notebook.grade_notebook` with ``options`` in a bubblewrap sandbox (refused, with
    failed rows that say why, where bubblewrap cannot run and ``options`` does not say ``unsandboxed``). The
    grader's own failure on it gives failed rows that say why, never an exception."""
    from .workers import library_for, prepare_worker  # (distributed: imported where a cluster runs)

    worker = _worker_name()
    unsandboxed = bool(options.get("unsandboxed"))
    assignment = assignment_for(Path(name))
    if not worker.startswith("pid "):  # on a Dask worker (called directly, it leaves the caller's temporary folder)
        prepare_worker((assignment.id,) if assignment is not None else (), unsandboxed)
    if not unsandboxed and (problem := bwrap_problem()):
        return Graded(
            _failed(
                student,
                name,
                unsandboxed,
                f"Worker {worker} refused to grade this notebook: it cannot run a sandbox ({problem}); grade it on a "
                "worker with bubblewrap.",
                "The grader could not grade this notebook: your teacher will look at it.",
            ),
            worker,
            "no sandbox",
        )
    with tempfile.TemporaryDirectory(prefix="tl-task-") as tmp:
        path = Path(tmp) / Path(name).name
        path.write_bytes(data)
        try:
            library = library_for(assignment.id) if assignment is not None else None
            return Graded(grade_notebook(path, student, library=library, **options), worker)
        except Exception as e:  # the grader's own failure: a bug, or a submission it was not ready for
            reason = clean_text(f"{type(e).__name__}: {e}")[:300]
            return Graded(
                _failed(
                    student,
                    name,
                    unsandboxed,
                    f"The grader failed on this notebook ({reason}); the other notebooks were graded.",
                    "The grader could not grade this notebook: your teacher will look at it.",
                ),
                worker,
                "grader failed",
            )


# --------------------------------------------------------------------------------------------------------------
# In the teacher's process
# --------------------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _client(scheduler: str | None, jobs: int) -> Any:
    """A Dask client of the teacher's scheduler, or of an embedded ``LocalCluster`` of ``jobs`` worker processes
    (one thread each) that ends with the block (:func:`local_cluster`)."""
    from distributed import Client

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=_CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as e:
            raise ClusterUnavailable(
                f"scheduler: could not reach a Dask scheduler at {scheduler!r} within {_CONNECT_TIMEOUT} s ({e}); "
                "start one with `dask scheduler` and workers with `dask worker ADDRESS`"
            ) from None
        with client:
            yield client
        return
    with local_cluster(jobs) as cluster, Client(cluster) as client:
        yield client


@contextlib.contextmanager
def local_cluster(jobs: int) -> Iterator[Any]:
    """The embedded cluster: a ``LocalCluster`` of ``jobs`` worker processes (one thread each) with grading's
    settings (:data:`_EMBEDDED`), which ends with the block. (The tests also start one to grade several classes on
    it through its ``scheduler_address``, as a teacher's ``--scheduler``.)"""
    import dask
    from distributed import LocalCluster

    with (
        dask.config.set(_EMBEDDED),
        LocalCluster(
            n_workers=jobs,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
    ):
        yield cluster
    from .workers import remove_stale

    remove_stale()  # the folder of a worker killed on this machine (its replacement, if any, removed the others)


class _Progress:
    """The class's progress bar: notebooks done, running and failed, and per worker."""

    def __init__(self, total: int, show: bool) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc="grading", unit="notebook", disable=not show)
        self.done: Counter[str] = Counter()
        self.failed = 0

    def finished(self, graded: Graded) -> None:
        self.done[graded.worker.split(" ")[0]] += 1
        self.failed += graded.outcome != "graded"
        self.bar.update()

    def show(self, client: Any) -> None:
        running = {str(w): len(keys) for w, keys in client.processing().items()}
        names = {str(a): str(info.get("name", a)) for a, info in client.scheduler_info()["workers"].items()}
        per_worker = ", ".join(
            f"{names.get(a, a)}: {running.get(a, 0)} running, {self.done.get(names.get(a, a), 0)} done"
            for a in sorted(running, key=lambda a: names.get(a, a))
        )
        self.bar.set_postfix_str(f"running {sum(running.values())}, failed {self.failed} | {per_worker}")

    def close(self) -> None:
        self.bar.close()


def grade_on_cluster(
    submissions: list[Submission],
    options: dict[str, Any],
    *,
    scheduler: str | None = None,
    jobs: int = 1,
    progress: bool = True,
    peaks: dict[str, float] | None = None,
) -> list[Graded]:
    """:func:`grade_task` for each of ``submissions`` on the Dask ``scheduler`` (an address), or on an embedded
    ``LocalCluster`` of ``jobs`` processes; returns one :class:`Graded` per submission, in their order. A notebook
    whose worker died every time it was graded gets failed rows that say so; :class:`ClusterUnavailable` if the
    scheduler cannot be reached. ``peaks``, if given, receives each worker's peak resident memory in MB. The embedded
    cluster has no more workers than notebooks."""
    from distributed import wait

    from .workers import Prepare, RemoveDead

    found: dict[int, Graded] = {}
    token = secrets.token_hex(4)
    # no more embedded workers than notebooks: each costs a process, its imports and its library copies to start
    with _client(scheduler, max(1, min(jobs, len(submissions)))) as client:
        # every worker, and each that joins later (one that replaces a dead one), prepares before its first notebook
        ids = {a.id for s in submissions if (a := assignment_for(s.path)) is not None}
        unsandboxed = bool(options.get("unsandboxed"))
        # workers on this machine share the teacher's view of the venv (adopt_view); for a teacher's scheduler,
        # whose workers may be elsewhere, only one made already (by the bubblewrap probe)
        view = python_view(make=scheduler is None) if not unsandboxed else None
        client.register_plugin(Prepare(tuple(sorted(ids)), unsandboxed, view))
        client.register_plugin(RemoveDead())  # each nanny, when it closes: no folder of a dead worker left
        bar = _Progress(len(submissions), progress)
        futures = {
            client.submit(
                grade_task,
                s.student,
                s.path.name,
                s.path.read_bytes(),
                options,
                # the student's name is for Dask's dashboard only, and travels as text any name can become
                # (msgpack refuses a surrogate that a folder name not in UTF-8 leaves in a str)
                key=f"tl-grade-{i}-{token} {_printable(s.student)}/{_printable(s.path.name)}",
                pure=False,
                priority=-i,  # in the class's order
            ): i
            for i, s in enumerate(submissions)
        }
        pending = set(futures)
        last = 0.0
        try:
            while pending:
                try:
                    done, pending = wait(pending, timeout=1, return_when="FIRST_COMPLETED")
                except TimeoutError:  # none finished in the last second: show who is running what
                    done = set()
                for future in done:
                    i = futures[future]
                    found[i] = _result(future, submissions[i], options)
                    bar.finished(found[i])
                if progress and time.monotonic() - last > 1:  # (two requests to the scheduler)
                    bar.show(client)
                    last = time.monotonic()
        finally:
            bar.close()
            for future in pending:
                future.cancel()
        if peaks is not None:
            peaks.update(client.run(_peak_mb))
    return [found[i] for i in range(len(submissions))]


def _result(future: Any, submission: Submission, options: dict[str, Any]) -> Graded:
    """The future's :class:`Graded`, or failed rows that say why there is none (its worker died every time)."""
    from distributed import KilledWorker

    unsandboxed = bool(options.get("unsandboxed"))
    try:
        graded: Graded = future.result()
        return graded
    except KilledWorker as e:
        worker = str(getattr(e.last_worker, "address", e.last_worker))
        tries = int(e.allowed_failures) + 1
        problem = (
            f"Its worker died each of the {tries} times this notebook was graded (the last was {worker}): a notebook "
            "that brings its worker down (memory, a crash) is not graded; the other notebooks were."
        )
        summary = "The grader could not grade this notebook: your teacher will look at it."
        return Graded(
            _failed(submission.student, submission.path.name, unsandboxed, problem, summary), worker, "worker died"
        )
    except Exception as e:  # the cluster's own failure on this task
        reason = clean_text(f"{type(e).__name__}: {e}")[:300]
        problem = f"The grader failed on this notebook ({reason}); the other notebooks were graded."
        summary = "The grader could not grade this notebook: your teacher will look at it."
        return Graded(
            _failed(submission.student, submission.path.name, unsandboxed, problem, summary), "?", "grader failed"
        )


def worker_rows(graded: list[Graded], file_names: list[str]) -> list[dict[str, Any]]:
    """``workers.csv``'s rows (:data:`WORKER_COLUMNS`): which worker graded which notebook, and how it ended."""
    return [
        {
            "student": g.notebook.student,
            "assignment": g.notebook.assignment,
            "file_name": name,
            "worker": g.worker,
            "outcome": g.outcome,
            "seconds": round(g.notebook.seconds, 1),
        }
        for g, name in zip(graded, file_names, strict=True)
    ]


def _printable(name: str, limit: int = 80) -> str:
    """A name as plain UTF-8 text of at most ``limit`` characters: undecodable bytes escaped, control characters
    dropped (a task key is shown and sent, never parsed back)."""
    text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""Grading a class on Dask (transformer_lib.classroom.cluster): one task per notebook, on the embedded LocalCluster or
a teacher's scheduler; nothing lost with a worker, a worker without a sandbox refuses, and the deadline in the note.

The classes are small (2-4 notebooks): the machine is shared."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from transformer_lib.classroom import cluster, grade, sandbox
from transformer_lib.classroom.checks import CheckResult
from transformer_lib.classroom.registry import ASSIGNMENTS

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "submissions"))
from make_submissions import solved  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "submissions"
needs_bwrap = pytest.mark.skipif(bool(sandbox.bwrap_problem()), reason=sandbox.bwrap_problem() or "bwrap works")


def _class(folder: Path, students: dict[str, str]) -> Path:
    """``folder`` with ``{student: fixture student}``'s 03_attention notebooks."""
    for student, source in students.items():
        (folder / student).mkdir(parents=True)
        (folder / student / "03_attention.ipynb").write_bytes((FIXTURES / source / "03_attention.ipynb").read_bytes())
    return folder


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------------------------------------------
# On a worker: grade_task
# --------------------------------------------------------------------------------------------------------------
def test_a_worker_without_a_sandbox_refuses_and_the_row_says_why(monkeypatch):
    monkeypatch.setattr(cluster, "bwrap_problem", lambda: "bubblewrap is not installed (apt-get install bubblewrap)")
    data = (FIXTURES / "alice" / "03_attention.ipynb").read_bytes()
    done = cluster.grade_task("alice", "03_attention.ipynb", data, {})
    assert done.outcome == "no sandbox" and done.notebook.assignment == "03_attention"
    assert [r.passed for r in done.notebook.results] == [False] * len(ASSIGNMENTS["03_attention"].exercises)
    (note,) = done.notebook.notes
    assert note.startswith("Worker pid ") and "refused" in note and "bubblewrap is not installed" in note
    # --no-sandbox was the teacher's choice: then the worker grades (here the stub below stands in for the kernel)
    monkeypatch.setattr(cluster, "grade_notebook", lambda path, student, **kw: grade.GradedNotebook(student, "x", path))
    assert cluster.grade_task("alice", "03_attention.ipynb", data, {"unsandboxed": True}).outcome == "graded"


def test_the_grader_failing_on_one_notebook_fails_that_notebook_alone(monkeypatch):
    """The grader's own failure on a notebook (a bug, a submission it was not ready for) gives that notebook failed
    rows that say so, cleaned of control characters, instead of an exception that would end the class's run."""

    def grade_notebook(path, student, **kwargs):
        raise RecursionError("maximum recursion depth exceeded \x1b[2K\rforged")

    monkeypatch.setattr(cluster, "grade_notebook", grade_notebook)
    data = (FIXTURES / "bob" / "03_attention.ipynb").read_bytes()
    done = cluster.grade_task("bob", "03_attention.ipynb", data, {"unsandboxed": True})
    assert done.outcome == "grader failed" and not any(r.passed for r in done.notebook.results)
    assert (
        "The grader failed on this notebook (RecursionError: maximum recursion depth exceeded  forged)"
        in (done.notebook.problems[0])
    )
    assert "\x1b" not in " ".join(done.notebook.notes + done.notebook.problems)


def test_a_notebook_stopped_at_its_deadline_says_so_in_its_note_even_when_graded():
    """Its exercises graded before the deadline (here: every one passed), the row's note still says the kernel
    was stopped there (before, only the feedback did)."""
    from transformer_lib.classroom.kernels import CellRun
    from transformer_lib.classroom.notebook import _gather
    from transformer_lib.classroom.runs import NotebookRun
    from transformer_lib.classroom.sheet_rows import exercise_rows

    assignment = ASSIGNMENTS["04_masks"]
    run = NotebookRun(assignment, [], {}, None, None, "python3", 5, 1, 1, 0, 30, "m")  # type: ignore[arg-type]
    run.results = {ex.name: CheckResult(ex.name, True, "ok") for ex in assignment.exercises}
    stopped = CellRun()
    stopped.stopped = ("deadline", ("cell", 9))
    assert run._go_on(stopped, []) is False and run.stopped_at_deadline
    graded = grade.GradedNotebook("sleeper", assignment.id, Path("04_masks.ipynb"))
    _gather(graded, run, {})
    assert all(r.passed for r in graded.results)
    assert any("reached its deadline (30 s in all, --notebook-timeout" in n for n in graded.notes), graded.notes
    (note,) = {r["note"] for r in exercise_rows([graded])}
    assert "reached its deadline (30 s in all" in note


def test_a_bad_scheduler_is_refused_with_its_name(tmp_path):
    _class(tmp_path / "class", {"alice": "alice"})
    with pytest.raises(ValueError, match=r"scheduler: expected a Dask scheduler's address .* got 'localhost'"):
        grade.grade_folder(tmp_path / "class", tmp_path / "out" / "grades.csv", scheduler="localhost")
    with pytest.raises(cluster.ClusterUnavailable, match=r"could not reach a Dask scheduler at 'tcp://127.0.0.1:9'"):
        cluster._CONNECT_TIMEOUT = 3
        try:
            grade.grade_folder(tmp_path / "class", tmp_path / "out" / "grades.csv", scheduler="tcp://127.0.0.1:9")
        finally:
            cluster._CONNECT_TIMEOUT = 30


# --------------------------------------------------------------------------------------------------------------
# Workers lost: the class is graded all the same, every row once
# --------------------------------------------------------------------------------------------------------------
def _kill_whoever_grades(address: str, match: str, stop: threading.Event, kill) -> list[str]:
    """Watch the scheduler at ``address``; each time a worker starts a task whose key contains ``match``, ``kill``
    it (given its address and process id); returns the workers killed."""
    from distributed import Client

    killed: list[str] = []
    with Client(address, timeout=60) as client:
        while not stop.is_set():
            for worker, keys in client.processing().items():
                if any(match in str(k) for k in keys) and worker not in killed:
                    try:
                        pid = client.run(os.getpid, workers=[worker]).get(worker)
                    except OSError:  # that worker is gone (a busy machine: it missed its heartbeats): look again
                        continue
                    if pid:
                        kill(worker, pid)
                        killed.append(worker)
            time.sleep(0.2)
    return killed


@pytest.mark.slow
@needs_bwrap
def test_a_notebook_that_kills_its_worker_every_time_gets_a_failed_row_and_the_class_is_graded(tmp_path, monkeypatch):
    """Every worker that starts on carol's notebook is killed (SIGKILL, as the out-of-memory killer does): after
    ``allowed-failures`` + 1 tries her rows fail with a note that says so, alice is graded, each row is
    written once, and workers.csv says who graded what; nothing the killed workers made is left in the temporary
    folder after the cluster closed (their library copies and kernels' folders: the nannies remove them on close)."""
    import tempfile

    import dask
    from distributed import LocalCluster

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))  # the workers' (processes started afresh)
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))  # and this process's
    # alice's notebook is the rest of the class (a second student's added a kernel and proved nothing more here:
    # the scheduler test below grades a wrong answer on a cluster that loses a worker)
    folder = _class(tmp_path / "class", {"alice": "alice", "carol": "alice"})
    out = tmp_path / "out" / "grades.csv"
    stop = threading.Event()
    killed: list[str] = []
    with (
        # as the embedded cluster runs (one notebook per worker at a time: with a second one queued on a worker, the
        # kill meant for carol's notebook took the one waiting there with it, twice in one run), one failure allowed
        dask.config.set({**cluster._EMBEDDED, "distributed.scheduler.allowed-failures": 1}),
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as local,
    ):
        watcher = threading.Thread(
            target=lambda: killed.extend(
                _kill_whoever_grades(local.scheduler_address, "carol/", stop, lambda w, pid: os.kill(pid, 9))
            )
        )
        watcher.start()
        try:
            grade.grade_folder(folder, out, scheduler=local.scheduler_address, progress=False, cell_timeout=60)
        finally:
            stop.set()
            watcher.join()
    assert len(killed) == 2, killed  # allowed-failures 1: two tries, two deaths
    rows = _rows(out)
    exercises = [ex.name for ex in ASSIGNMENTS["03_attention"].exercises]
    assert sorted((r["student"], r["exercise"]) for r in rows) == sorted(
        (s, e) for s in ("alice", "carol") for e in exercises
    )
    by_student = {r["student"]: r for r in rows}
    assert by_student["alice"]["passed"] == "1"
    assert by_student["carol"]["passed"] == "0" and "Its worker died each of the 2 times" in by_student["carol"]["note"]
    workers = {r["student"]: r for r in _rows(out.with_name("workers.csv"))}
    assert workers["carol"]["outcome"] == "worker died" and workers["alice"]["outcome"] == "graded"
    assert workers["alice"]["worker"].startswith(("0 (tcp://", "1 (tcp://"))
    # the class can be graded, and the cluster closed, before the nanny's replacement of the worker killed last has
    # started (and removed that worker's folder): the nannies remove what dead workers left as they close
    assert not list(temporary.glob("tl-*")), list(temporary.iterdir())


@pytest.mark.slow
@needs_bwrap
def test_a_scheduler_and_two_workers_one_lost_grade_as_the_embedded_default(tmp_path):
    """Done when (issue 43): a class graded through `dask scheduler` and two `dask worker` processes on 127.0.0.1,
    one of them killed (with its nanny and kernels: a machine lost) while it grades, gives the same sheets, grades
    and similarity pairs as the embedded default, with every row present once."""
    from benchmarks.grading import dask_processes

    folder = _class(tmp_path / "class", {"alice": "alice", "bob": "bob", "carol": "alice"})
    local = tmp_path / "local" / "grades.csv"
    grade.grade_folder(folder, local, jobs=2, progress=False)
    remote = tmp_path / "remote" / "grades.csv"
    stop = threading.Event()
    killed: list[str] = []
    with dask_processes(2) as (address, workers):
        lost = _once(lambda worker, pid: os.killpg(os.getpgid(pid), signal.SIGKILL))  # nanny, worker and kernels
        watcher = threading.Thread(
            target=lambda: killed.extend(_kill_whoever_grades(address, "/03_attention", stop, lost))
        )
        watcher.start()
        try:
            assert grade.main([str(folder), "--out", str(remote), "--scheduler", address, "--no-progress"]) == 0
        finally:
            stop.set()
            watcher.join()
        assert sum(w.poll() is not None for w in workers) == 1  # one machine lost, one left
    assert len(lost.killed) == 1, lost.killed
    for name in ("grades.csv", "grades_totals.csv", "grades_answers.csv", "similarity.csv"):
        assert _rows(remote.with_name(name)) == _rows(local.with_name(name)), name
    rows = _rows(remote)
    assert (
        len(rows)
        == len({(r["student"], r["exercise"]) for r in rows})
        == 3 * len(ASSIGNMENTS["03_attention"].exercises)
    )
    assert [r["passed"] for r in rows if r["student"] in ("alice", "carol")] == ["1"] * (len(rows) * 2 // 3)
    pairs = _rows(remote.with_name("similarity.csv"))
    assert {(p["student_a"], p["student_b"]) for p in pairs} >= {("alice", "carol")}, pairs
    assert {r["outcome"] for r in _rows(remote.with_name("workers.csv"))} == {"graded"}


class _once:
    """``kill``, but only the first time it is called (one machine lost); ``killed`` lists whom."""

    def __init__(self, kill) -> None:
        self.kill, self.killed = kill, []

    def __call__(self, worker: str, pid: int) -> None:
        if not self.killed:
            self.killed.append(worker)
            self.kill(worker, pid)


def test_the_library_copies_of_an_embedded_run_are_removed(tmp_path, monkeypatch):
    """Each worker process makes its library copies (in its TMPDIR) and removes them when the cluster closes."""
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # read by the worker processes, started afresh
    (tmp_path / "tmp").mkdir()
    folder = tmp_path / "class" / "alice"
    folder.mkdir(parents=True)
    nbformat.write(solved("01_tokenizer"), folder / "01_tokenizer.ipynb")
    root = ["--allow-root-without-sandbox"] if os.geteuid() == 0 else []
    out = tmp_path / "out" / "grades.csv"
    # in a process of its own, as a teacher runs it: nothing an earlier test left in this one reaches the workers
    command = [str(tmp_path / "class"), "--out", str(out), "--no-progress", "--no-sandbox", *root]
    code = "import sys; from transformer_lib.classroom import grade; sys.exit(grade.main(sys.argv[1:]))"
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "OMP_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", code, *command], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = _rows(out)
    # solved, it passes (under pytest-xdist, TMPDIR here is deep enough that a kernel's socket path was past the 107
    # bytes of a Unix socket: every check failed until the kernels' folders moved to a shorter root)
    assert len(rows) == 3 and all(r["passed"] == "1" for r in rows), [(r["exercise"], r["note"]) for r in rows]
    assert "pid " not in _rows(out.with_name("workers.csv"))[0]["worker"]  # graded on a Dask worker
    assert not list((tmp_path / "tmp").glob("tl-lib-*"))


def test_the_benchmark_projects_a_course_from_seconds_per_notebook():
    """9.6 s a notebook with 2 workers is 19.2 s of one worker: 6,000 notebooks on 32 workers take 6,000 / 32 x 19.2
    s = 1.0 h, on 256 workers 0.125 h."""
    from benchmarks.grading import projection

    assert projection(9.6, 2) == {"hours_on_32": 1.0, "hours_on_256": 0.12}
    assert projection(9.6, 1) == {"hours_on_32": 0.5, "hours_on_256": 0.06}


def test_the_benchmark_class_alternates_right_and_wrong_answers(tmp_path):
    from benchmarks.grading import make_class

    folder = make_class(tmp_path / "class", 3)
    found = grade.find_submissions(folder)
    assert [(s, p.name) for s, p in found] == [(f"s000{i}", "03_attention.ipynb") for i in range(3)]
    assert (folder / "s0000" / "03_attention.ipynb").read_bytes() == (
        FIXTURES / "alice" / "03_attention.ipynb"
    ).read_bytes()
    assert (folder / "s0001" / "03_attention.ipynb").read_bytes() == (
        FIXTURES / "bob" / "03_attention.ipynb"
    ).read_bytes()


def test_the_progress_bar_shows_done_running_and_failed_per_worker(capsys):
    class Scheduler:  # what the bar asks of a client: who runs what, and the workers' names
        def processing(self):
            return {"tcp://10.0.0.1:1": ["tl-grade-2 carol/03_attention.ipynb"], "tcp://10.0.0.2:1": []}

        def scheduler_info(self):
            return {"workers": {"tcp://10.0.0.1:1": {"name": "w0"}, "tcp://10.0.0.2:1": {"name": "w1"}}}

    bar = cluster._Progress(3, show=True)
    notebook = grade.GradedNotebook("alice", "03_attention", Path("03_attention.ipynb"))
    bar.finished(cluster.Graded(notebook, "w1 (tcp://10.0.0.2:1)"))
    bar.finished(cluster.Graded(notebook, "w1 (tcp://10.0.0.2:1)", "worker died"))
    bar.show(Scheduler())
    bar.close()
    shown = capsys.readouterr().err.replace("\r", "\n").splitlines()[-1]
    assert "2/3" in shown and "running 1, failed 1 | w0: 1 running, 0 done, w1: 0 running, 2 done" in shown, shown


def test_an_embedded_cluster_starts_no_more_workers_than_notebooks(tmp_path):
    """One notebook with --jobs 2 starts one worker process (each costs its start, imports and library copies)."""
    (tmp_path / "class" / "erin").mkdir(parents=True)
    shutil.copy(FIXTURES / "erin" / "notes.ipynb", tmp_path / "class" / "erin" / "notes.ipynb")  # needs no kernel
    peaks: dict[str, float] = {}
    out = tmp_path / "out" / "grades.csv"
    grade.grade_folder(tmp_path / "class", out, jobs=2, progress=False, unsandboxed=True, worker_peaks=peaks)
    assert len(peaks) == 1, peaks
    assert [r["outcome"] for r in _rows(out.with_name("workers.csv"))] == ["graded"]


def test_removing_a_dead_workers_folder_never_changes_the_folder_that_holds_it(tmp_path):
    """/tmp was found at mode 1700 and every kernel run as nobody died: removing a worker's folder that another
    process had just removed (two workers, or a nanny and a worker, removing the same dead worker's folder) made its
    parent, the temporary folder, mode 0700. Now only folders inside the one removed are ever made writable."""
    from transformer_lib.classroom import workers

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    temporary.chmod(0o1777)  # as /tmp
    ended = subprocess.Popen(["true"])
    ended.wait()  # a worker's process id that is gone
    dead = temporary / f"tl-worker-{ended.pid}-x"
    (dead / "tl-lib-y" / "transformer_lib").mkdir(parents=True)
    (dead / "tl-lib-y" / "transformer_lib" / "__init__.py").write_text("")
    for p in (dead / "tl-lib-y" / "transformer_lib" / "__init__.py", dead / "tl-lib-y" / "transformer_lib"):
        p.chmod(0o555 if p.is_dir() else 0o444)  # a library copy is read-only
    assert workers.remove_stale(str(temporary)) == [str(dead)] and not dead.exists()
    workers._remove_tree(dead)  # a second remover, a moment late
    workers._remove_tree(temporary / "tl-worker-1-never-there")
    assert temporary.stat().st_mode & 0o7777 == 0o1777 and list(temporary.iterdir()) == []


def test_a_dead_workers_folder_is_gone_once_the_teachers_cluster_closes(tmp_path, monkeypatch):
    """A worker killed mid-run left its folder until the next worker started on that machine: a class graded on a
    teacher's cluster (here a LocalCluster reached by its address, as `dask worker` processes are) registers a nanny
    plugin that removes the folders of dead workers when the nanny closes, whether or not a replacement started."""
    import tempfile

    from distributed import Client, LocalCluster

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))  # the workers'
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))  # and this process's (its nanny's)
    (tmp_path / "class" / "alice").mkdir(parents=True)
    (tmp_path / "class" / "alice" / "notes.ipynb").write_text("{}")  # no assignment's: graded without a kernel
    ended = subprocess.Popen(["true"])
    ended.wait()
    dead = temporary / f"tl-worker-{ended.pid}-killed"
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as local:
        grade.grade_folder(
            tmp_path / "class", tmp_path / "out" / "grades.csv", scheduler=local.scheduler_address, progress=False
        )
        with Client(local.scheduler_address) as client:
            plugins = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.nanny_plugins))
        (dead / "tl-lib-x").mkdir(parents=True)  # killed after its replacement's start (which removes dead ones)
    assert not dead.exists() and not list(temporary.glob("tl-*")), list(temporary.iterdir())
    assert "tl-grade-remove-dead" in plugins, plugins

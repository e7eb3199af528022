"""Grade a folder of submitted assignment notebooks offline.

    python -m transformer_lib.classroom.grade SUBMISSIONS_DIR --out grades.csv [--roster roster.csv]

(or ``tl-grade SUBMISSIONS_DIR ...``; ``tl-grade verify`` and ``tl-grade totals`` are in :mod:`.sheets`).
``SUBMISSIONS_DIR`` holds one folder per student with that student's notebooks, each named after its assignment
(as in ``book/assignments/``), or the files of an LMS bulk download (``smithjohn_123_03_attention.ipynb``), or
both; :mod:`transformer_lib.classroom.submissions` says which file is whose and which of several is graded::

    submissions/
        alice/03_attention.ipynb
        alice/04_masks.ipynb
        bob/03_attention.ipynb

:mod:`transformer_lib.classroom.gradebook` then writes the sheets (one row per exercise with points, file name
and the file's SHA-256; a totals sheet; the written answers), one markdown feedback file per student
(``feedback/<student>.md`` next to the CSV unless ``--feedback`` says otherwise) and a checksum manifest.

Where each step lives: this module is the command line (:func:`main`); :mod:`.folder` grades a class's folder
(:func:`~.folder.grade_folder`), :mod:`.cluster` sends its notebooks to Dask workers (an embedded ``LocalCluster`` of
``--jobs`` processes, or the cluster of ``--scheduler``), :mod:`.gradescope` is the Gradescope autograder
(``tl-grade gradescope``), :mod:`.notebook` one notebook (:func:`~.notebook.grade_notebook`), :mod:`.runs` runs
it until each exercise has a verdict (the verdict itself is the check replayed here, :func:`~.runs.verdict`), and
:mod:`.sandbox` (with :mod:`.bwrap` and :mod:`.limits`) is where its kernel runs. The names used before the split
are all importable from here.

How a notebook is graded
------------------------
The grader opens the notebook with nbformat (plain JSON; nothing in a submission is ever unpickled) and runs the
student's code cells (not the check cells, tagged ``check``) in a fresh kernel, then one injected cell per
exercise. That cell runs the exercise's check in *record* mode (:mod:`.checks.record`): the student's function is
called on the check's inputs and what it returned is printed as data (tensors as exact bytes, modules as
snapshots of their weights), after a marker with a random nonce. The grader reads exactly one such line per
exercise, parses it strictly (size and types limited) and *replays* the check in its own process: the comparison
with the reference, the catalogue of mistakes, the verdict and the hints are computed here, where the student's
code cannot reach them. A recording that does not match the calls the check makes fails the exercise.

The grader never runs an object the student chose. A recording is plain data (:mod:`.checks.snapshot`), and every
part of it is capped: at most :data:`~.checks.snapshot.MAX_RECORDING_CHARS` (8 MB) per exercise, 200,000 values,
24 levels of nesting, and no tensor, shape or module attribute the grader rebuilds may hold more than
:data:`~.checks.snapshot.MAX_ELEMENTS` (2**20) elements; a recording past a cap fails its exercise
("RecordingError"). A module comes back as one of the classes its check names, and only those: the check's
allow-list, ``@_check(..., replays=...)`` (``nn.Linear`` for multi-head attention; ``tl.MultiHeadAttention``,
``tl.FeedForward``, ``nn.LayerNorm``, ``nn.Linear`` and ``nn.Dropout`` for the decoder layer; nothing for the
others). Any other class, whatever the recording names (``torch.nn.Upsample`` included), comes back as a shadow
whose ``forward`` refuses to run, and a check that would run such a sub-module fails it first with a note that names
its class (:mod:`.checks.modules`). A check that builds the student's module gives it weights of its own, from a
seeded generator, so an answer whose ``__init__`` zeroes a projection cannot hide a step it leaves out.

The kernel imports a copy of the library in which what the assignment asks for is a stub (:mod:`.stubs`): an
answer that calls ``tl.scaled_dot_product_attention`` in assignment 3, or swaps it in after the fact, gets an error
back, and a forged recording needs the right outputs, which is solving the exercise. The grader also reads the
source (:mod:`.integrity`): an answer that calls the library's reference or PyTorch's
(``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``, ...), a notebook that hides what it runs anywhere
(``exec``, ``eval``, ``compile``, ``setattr``, ``globals()``, ``importlib``, ``inspect.getsource``), rebinds a
graded name, reaches into the checks or patches a module, gets a note in ``CheckResult.flags`` ("... : the teacher
decides"); the exercise still passes or fails on its numbers.

Each kernel runs in bubblewrap (:mod:`.sandbox`): new PID, mount, IPC, UTS and network namespaces, a world of
read-only Python and library copy, a read-only ``/`` and ``/dev``, a private home, ``/tmp`` and ``/dev/shm`` (tmpfs
of ``--file-mb`` each), its sockets in a 1 MB tmpfs of its own, its own ``/proc`` and no ``/sys``, a cleared
environment, a user id of its own (when the grader is root) and :class:`~.sandbox.Limits` on memory (heap, and
address space, which counts shared memory: no cgroup is used, and the run says so at its start), processes, file
size, CPU time and output. Nothing of the teacher's exists in it, nothing it can write is shared, and everything it
started ends with its kernel. Without a working ``bwrap`` the grader refuses (:class:`~.sandbox.SandboxUnavailable`)
unless told ``--no-sandbox``, which a banner says at the start and the end of the run, and every row's ``note`` and
``sandbox`` column record; as root it also needs ``--allow-root-without-sandbox``. A cell that meets a limit
counts as one that raised (memory, processes, file size), printed too much (its output past the limit is dropped)
or killed the kernel (CPU time), and the row's ``note`` names the limit.

Time is bounded. A cell that runs longer than ``--timeout`` is interrupted; a kernel that ignores the interrupt for 5 s
(a loop that catches ``BaseException``, code that ignores SIGINT), or that dies (``os._exit``, a crash), is killed, the
problem names the cell, and the exercises not yet graded are checked in a fresh kernel that runs only the cells up to
their definitions, without that cell and the cells that timed out. A notebook gets at most ``--notebook-timeout`` (900 s
by default), and no more than ``--timeout`` per code cell, and per exercise the larger of ``--timeout`` and 30 times
``--check-time-limit`` (a check limits the learner's calls by CPU time; on a busy machine its cell must not be stopped
by the wall clock first), plus 120 s for starting kernels; past that its kernel is stopped, the problems say so, and
what is not graded by then fails. A notebook that is not valid JSON, misses cells, has a syntax error, raises, holds
more code than :data:`~.source.MAX_CODE_CHARS`, or on which the grader itself fails gets failed rows with the reason,
and grading goes on: the sheets are always written. Messages reach the sheets and feedback without control characters.

What is not guarded against
---------------------------
- A kernel is the student's: it can print any recording. A forged recording must carry the right *outputs* for the
  check's inputs, which the stubbed library no longer computes; PyTorch's own functions and the library classes
  that a later assignment's code runs on (``tl.DecoderLayer`` for assignment 6, whose decoding exercises run a
  ``tl.Transformer``; ``tl.MultiHeadAttention`` outside assignment 5, ``tl.Vocab`` outside assignment 1) stay in the
  room, and using them is only flagged.
- Source flags are a static reading: code assembled from strings at run time shows only as "dynamic code".
- With ``--no-sandbox`` the kernel can read every file the grader's user can (other submissions included) and
  write the grader's files; a process that clears its environment escapes the clean-up.
- The venv's path shows in a kernel's ``/proc/self/mountinfo`` when it cannot be hard-linked into a temporary
  folder (another file system); nothing else of its folder is there.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import sheets
from .checks import DEFAULT_TIME_LIMIT
from .cluster import ClusterUnavailable
from .folder import find_submissions, grade_folder
from .gradebook import feedback_markdown, write_csv
from .graded import GradedNotebook
from .limits import ADDRESS_SLACK_MB
from .notebook import grade_notebook
from .runs import NOTEBOOK_TIMEOUT, SLACK, read_recording
from .sandbox import NO_SANDBOX_BANNER, Limits, SandboxUnavailable, memory_accounting
from .similarity import DEFAULT_THRESHOLD

__all__ = [
    "GradedNotebook",
    "find_submissions",
    "grade_notebook",
    "grade_folder",
    "write_csv",
    "feedback_markdown",
    "main",
]

_SLACK = SLACK  # (kept for the tests: the bound grade_notebook promises)
_read_recording = read_recording


def _parser() -> argparse.ArgumentParser:
    """``tl-grade``'s arguments, in the order its ``--help`` lists them."""
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lib.classroom.grade",
        description="Run each submitted notebook (SUBMISSIONS_DIR/<student>/<assignment>.ipynb, or LMS bulk-download "
        "names such as smithjohn_123_03_attention.ipynb) in its own kernel, check every exercise, and "
        "write the gradebook: a CSV per exercise, a totals CSV, a CSV of written answers, a markdown "
        "feedback file per student and a SHA-256 manifest of them all.",
        epilog="After grading: `tl-grade totals FOLDER --answers CSV` merges the written answers' points into the "
        "totals, `tl-grade verify FOLDER --key-file KEY` checks the sheets against their HMAC (see their --help).",
    )
    _add_sheet_options(parser)
    _add_run_options(parser)
    _add_report_options(parser)
    _add_sandbox_options(parser)
    return parser


def _add_sheet_options(parser: argparse.ArgumentParser) -> None:
    """What is graded, and where the sheets and feedback go."""
    parser.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("grades.csv"),
        help="the per-exercise CSV to write (default: %(default)s); the other sheets go next to it",
    )
    parser.add_argument(
        "--totals",
        type=Path,
        default=None,
        metavar="CSV",
        help="one row per student with points per assignment (default: <out>_totals.csv)",
    )
    parser.add_argument(
        "--answers",
        type=Path,
        default=None,
        metavar="CSV",
        help="the written answers, for grading by hand (default: <out>_answers.csv)",
    )
    parser.add_argument(
        "--roster",
        type=Path,
        default=None,
        metavar="CSV",
        help="maps LMS ids/names to students: columns student, lms_id and/or lms_name",
    )
    parser.add_argument(
        "--templates",
        type=Path,
        default=None,
        metavar="DIR",
        help="the student notebooks handed out, whose 'answer' cells hold the written questions "
        "(default: book/assignments)",
    )
    parser.add_argument(
        "--feedback",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder for <student>.md feedback files (default: 'feedback' next to --out)",
    )


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """How each notebook runs: its time limits, its kernel, how many at once."""
    parser.add_argument(
        "--timeout",
        type=float,
        default=60,
        metavar="SECONDS",
        help="time limit per notebook cell (default: %(default)s)",
    )
    parser.add_argument(
        "--notebook-timeout",
        type=float,
        default=NOTEBOOK_TIMEOUT,
        metavar="SECONDS",
        help="time limit per notebook, all its kernels together; past it the kernel is stopped and the row says so "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--check-time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        metavar="SECONDS",
        help="time limit per call of a student's function inside a check (default: %(default)s)",
    )
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel name (default: %(default)s)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="notebooks graded at once on this machine: the worker processes of an embedded Dask cluster "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="grade on the Dask cluster of this scheduler (e.g. tcp://host:8786; started with `dask scheduler` and "
        "`dask worker ADDRESS`, or dask-jobqueue) instead of on this machine; each worker grades in its own sandbox",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    """What else is written: the similarity flags, an LMS import file, the HMAC anchor."""
    parser.add_argument(
        "--similarity",
        type=float,
        default=DEFAULT_THRESHOLD,
        metavar="SCORE",
        help="flag pairs whose solution code is at least this similar, 0..1 (default: %(default)s; similarity.csv)",
    )
    parser.add_argument(
        "--lms", choices=("moodle", "canvas"), help="also write <out>_<lms>.csv in that LMS's grade-import format"
    )
    parser.add_argument(
        "--key-file",
        type=Path,
        metavar="KEY",
        help="anchor the sheets with an HMAC keyed by this file (created if missing; keep it outside --out's "
        "folder); check them later with `tl-grade verify FOLDER --key-file KEY`",
    )


def _add_sandbox_options(parser: argparse.ArgumentParser) -> None:
    """The limits of each kernel, and grading without the sandbox."""
    limits = parser.add_argument_group(
        "limits per kernel", "a cell that meets one fails as if it raised, and the row's note names the limit"
    )
    for name, flag, what in (
        ("memory_mb", "--memory-mb", f"MB of heap and private memory; {ADDRESS_SLACK_MB} MB more of address space"),
        ("processes", "--processes", "processes and threads"),
        ("file_mb", "--file-mb", "MB per file written, and per private folder"),
        ("cpu_seconds", "--cpu-seconds", "CPU seconds per process"),
        ("output_mb", "--output-mb", "MB printed by the notebook's cells"),
    ):
        limits.add_argument(flag, type=int, default=getattr(Limits(), name), help=f"{what} (default: %(default)s)")
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="grade without bubblewrap: each kernel can then read and write what you can; said at the start and "
        "the end of the run, and in every row's note and 'sandbox' column",
    )
    parser.add_argument(
        "--allow-root-without-sandbox",
        action="store_true",
        help="with --no-sandbox as root: grade all the same (a kernel could then do anything root can)",
    )


def _summary(args: argparse.Namespace, graded: list[GradedNotebook], written: dict[Path, str]) -> None:
    """What was graded, and the checksums of the sheets written (their anchor too, with ``--key-file``)."""
    rows = [row for g in graded for row in g.rows()]
    n_students = len({g.student for g in graded})
    print(
        f"Graded {len(graded)} notebook{'s' * (len(graded) != 1)} of {n_students} student{'s' * (n_students != 1)}: "
        f"{sum(r['passed'] for r in rows)}/{len(rows)} exercises pass. Wrote {args.out}."
    )
    for path in written:
        if path.suffix == ".csv":
            print(f"sha256 {written[path]}  {path}")
    manifest = args.out.with_suffix(".sha256")
    if args.key_file is not None:
        anchor = args.out.with_suffix(".hmac")
        print(
            f"Anchored every file with {args.key_file} in {anchor}; check with "
            f"`tl-grade verify {anchor.parent} --key-file {args.key_file}`."
        )
    print(
        f"sha256 {written[manifest]}  {manifest} (checksums of every file written; verify with "
        f"`sha256sum -c {manifest.name}` in {manifest.parent})"
    )


def main(argv: list[str] | None = None) -> int:
    """``tl-grade``: grade a folder of submissions and write the gradebook (see the module's docstring), or run
    ``tl-grade verify`` / ``tl-grade totals`` (:mod:`.sheets`) or ``tl-grade gradescope`` (:mod:`.gradescope`).
    Returns the exit status: 0, or 2 for a usage problem (a missing folder, a bad option, no sandbox, no scheduler)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["verify"], ["totals"]):  # tl-grade verify ..., tl-grade totals ...
        return sheets.main(argv)
    if argv[:1] == ["gradescope"]:  # tl-grade gradescope ASSIGNMENT --out autograder.zip
        from . import gradescope

        return gradescope.main(argv[1:])
    parser = _parser()
    args = parser.parse_args(argv)
    if args.no_sandbox and os.geteuid() == 0 and not args.allow_root_without_sandbox:
        print(
            "--no-sandbox: refusing to grade as root without the sandbox (a kernel could do anything root can: read "
            "every file, change the system, leave processes running); got --no-sandbox as root. Grade with "
            "bubblewrap, as another user, or add --allow-root-without-sandbox.",
            file=sys.stderr,
        )
        return 2
    print(memory_accounting(), file=sys.stderr)
    if args.no_sandbox:
        print(NO_SANDBOX_BANNER, file=sys.stderr)
    written: dict[Path, str] = {}
    try:
        graded = grade_folder(
            args.submissions,
            args.out,
            args.feedback,
            cell_timeout=args.timeout,
            time_limit=args.check_time_limit,
            notebook_timeout=args.notebook_timeout,
            kernel_name=args.kernel,
            jobs=args.jobs,
            progress=not args.no_progress,
            roster=args.roster,
            totals=args.totals,
            answers=args.answers,
            templates=args.templates,
            written=written,
            lms=args.lms,
            key_file=args.key_file,
            similarity_threshold=args.similarity,
            limits=Limits(args.memory_mb, args.processes, args.file_mb, args.cpu_seconds, args.output_mb),
            unsandboxed=args.no_sandbox,
            scheduler=args.scheduler,
        )
    except (FileNotFoundError, NotADirectoryError, ValueError, SandboxUnavailable, ClusterUnavailable) as e:
        print(e, file=sys.stderr)
        return 2
    _summary(args, graded, written)
    if args.no_sandbox:
        print(NO_SANDBOX_BANNER, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

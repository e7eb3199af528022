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

Time is bounded. A cell that runs longer than ``--timeout`` is interrupted; a kernel that ignores the interrupt
for 5 s (a loop that catches ``BaseException``, code that ignores SIGINT), or that dies (``os._exit``, a crash), is
killed, the problem names the cell, and the exercises not yet graded are checked in a fresh kernel that runs only the
cells up to their definitions, without that cell and the cells that timed out. A notebook gets at most
``--notebook-timeout`` (900 s by default), and no more than ``--timeout`` per code cell and exercise plus 120 s for
starting kernels; past that its kernel is stopped, the problems say so, and what is not graded by then fails. A
notebook that is not valid JSON, misses cells, has a syntax error, raises, holds more code than
:data:`~.source.MAX_CODE_CHARS`, or on which the grader itself fails gets failed rows with the reason, and grading
goes on: the sheets are always written. Messages reach the sheets and feedback without control characters.

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
import contextlib
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from . import integrity, sheets, source
from .checks import DEFAULT_TIME_LIMIT, RESULT_MARKER
from .gradebook import csv_text, feedback_markdown, sha256_file, totals_table, write_csv, write_gradebook
from .kernels import GRACE
from .lms import lms_csv, unmatched
from .registry import ASSIGNMENTS, Exercise
from .results import GradedNotebook
from .runs import NOTEBOOK_TIMEOUT, SLACK, NotebookRun, failed, read_recording
from .sandbox import (
    ADDRESS_SLACK_MB,
    NO_SANDBOX_BANNER,
    UNSANDBOXED_NOTE,
    LibraryCopy,
    Limits,
    SandboxUnavailable,
    memory_accounting,
    require_bwrap,
)
from .similarity import DEFAULT_THRESHOLD, SIMILARITY_COLUMNS, flag_similar, similar_pairs
from .stubs import stubs_for
from .submissions import Submission, assignment_for, collect_submissions, read_roster, roster_rows
from .tables import clean_text

__all__ = [
    "GradedNotebook",
    "find_submissions",
    "grade_notebook",
    "grade_folder",
    "write_csv",
    "feedback_markdown",
    "main",
]

_LIBRARY = Path(__file__).resolve().parents[1]  # this transformer_lib: kernels import a read-only copy of it
_LIBRARY_PARENT = str(_LIBRARY.parent)  # the repository it sits in (its book/assignments)


def find_submissions(folder: str | Path, roster: dict[str, str] | None = None) -> list[tuple[str, Path]]:
    """``(student, notebook)`` for every notebook that will be graded under ``folder``, sorted: one per student and
    assignment (see :func:`~transformer_lib.classroom.submissions.collect_submissions`)."""
    return [(s.student, s.path) for s in collect_submissions(folder, roster)]


_SLACK = SLACK  # (kept for the tests: the bound grade_notebook promises)
_read_recording = read_recording


def _code_cells(path: Path) -> tuple[list[tuple[int, str]] | None, str]:
    """The student's code cells of the notebook at ``path``, ``(number, source)`` numbered from the top of the
    notebook with markdown cells (their own check cells are left out: the injected cells run the same checks), or
    None and why it cannot be read."""
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)  # plain JSON: nothing in a submission is ever unpickled
        if not isinstance(nb.get("cells"), list):
            raise ValueError("it has no list of cells")
        return [
            (number, str(cell.get("source", "")))
            for number, cell in enumerate(nb.cells, start=1)
            if cell.get("cell_type") == "code" and "check" not in cell.get("metadata", {}).get("tags", [])
        ], ""
    except Exception as e:  # not JSON, not a notebook, not UTF-8, too deep for the JSON reader, ...
        return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")


def _not_graded(graded: GradedNotebook, exercises: tuple[Exercise, ...], problem: str, summary: str, hint: str) -> None:
    graded.problems.append(problem)
    graded.results = [failed(ex, summary, hint, "NotebookError") for ex in exercises]


def _check_seconds(name: str, value: float, least: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= least:
        raise ValueError(f"{name}: expected a number of seconds >= {least}, got {value!r}")


def grade_notebook(
    path: str | Path,
    student: str = "",
    *,
    cell_timeout: float = 60,
    time_limit: float = DEFAULT_TIME_LIMIT,
    kernel_name: str = "python3",
    library: LibraryCopy | None = None,
    limits: Limits | None = None,
    unsandboxed: bool = False,
    grace: float = GRACE,
    notebook_timeout: float = NOTEBOOK_TIMEOUT,
) -> GradedNotebook:
    """Run one submitted notebook in a fresh sandboxed kernel and check each exercise of its assignment.

    ``cell_timeout`` limits each cell: a cell that runs longer is interrupted, and a kernel that does not answer the
    interrupt within ``grace`` seconds (or dies) is killed; the exercises left are then checked in a fresh kernel
    that runs only the cells up to their definitions, without the cell that hung and those that never finished.
    The whole notebook gets at most ``notebook_timeout`` seconds, and no more than ``cell_timeout`` per code cell
    and exercise plus a fixed allowance: past that its kernel is stopped and the problems say so.
    ``time_limit`` limits each call of the student's code inside a check. ``library`` is the read-only copy of
    transformer_lib the kernel imports (one with the assignment's references stubbed out is made, and removed, if
    not given); ``limits`` bound each kernel (:class:`~.sandbox.Limits`): a cell that meets one is treated as one
    that raised or killed the kernel, and the ``note`` says which limit. ``unsandboxed`` runs the kernel without
    bubblewrap (:mod:`.sandbox`; the ``note`` says so); otherwise :class:`~.sandbox.SandboxUnavailable` is raised
    where bubblewrap cannot run. A notebook that cannot be read, or whose code is too long
    (:data:`~.source.MAX_CODE_CHARS`), gets failed rows that say why.
    """
    for name, value, least in (
        ("cell_timeout", cell_timeout, 1),
        ("grace", grace, 0.1),
        ("time_limit", time_limit, 0),
        ("notebook_timeout", notebook_timeout, 1),
    ):
        _check_seconds(name, value, least)
    started = time.monotonic()
    path = Path(path)
    graded = GradedNotebook(student or path.parent.name, path.stem, path, unsandboxed=unsandboxed)
    assignment = assignment_for(path)  # 03_attention.ipynb, 03_attention (1).ipynb, an LMS name
    if assignment is None:
        graded.problems.append(
            f"Unknown assignment file name {path.name!r}: expected one of "
            f"{', '.join(a + '.ipynb' for a in ASSIGNMENTS)}."
        )
        return graded
    graded.assignment = assignment.id
    code, why = _code_cells(path)
    if code is None:
        _not_graded(
            graded,
            assignment.exercises,
            f"The notebook could not be read ({why}).",
            "The notebook could not be read: it is not a valid .ipynb file.",
            "Save the notebook from Jupyter (File > Save) and submit the .ipynb file itself, not a copy edited by "
            "hand or renamed from another format.",
        )
        return graded
    if why := source.too_long(src for _, src in code):
        _not_graded(
            graded,
            assignment.exercises,
            f"The notebook was not run: {why}.",
            "The notebook was not run: its code is far longer than the assignment needs.",
            "Submit the assignment's notebook with your solution, without generated or pasted bulk code.",
        )
        return graded
    cells = source.read_cells(src for _, src in code)
    graded.code = [c.python for c in cells]  # what the kernel runs: similarity compares it
    flags = integrity.flags(cells, {ex.name: ex.names for ex in assignment.exercises})
    if not unsandboxed:
        require_bwrap()  # SandboxUnavailable says why and what to do
    own_library = library is None
    library = library or LibraryCopy(stubs=stubs_for(assignment.id))
    limit = cell_timeout * (len(code) + len(assignment.exercises)) + SLACK
    notebook = NotebookRun(
        assignment=assignment,
        code=code,
        defined=integrity.definitions(cells),
        library=library,
        limits=limits or Limits(),
        kernel_name=kernel_name,
        cell_timeout=cell_timeout,
        time_limit=time_limit,
        grace=grace,
        deadline=started + min(limit, notebook_timeout),
        notebook_timeout=notebook_timeout,
        marker=RESULT_MARKER + secrets.token_hex(16) + " ",
        unsandboxed=unsandboxed,
    )
    try:
        notebook.run()
    finally:
        if own_library:
            library.cleanup()
    graded.notes += notebook.limit_notes + ([UNSANDBOXED_NOTE] if unsandboxed else [])
    for ex in assignment.exercises:
        result = (
            notebook.results[ex.name]
            if ex.name in notebook.results  # (a failed CheckResult is falsy)
            else failed(
                ex,
                "The check did not finish (a time-out, or the kernel stopped).",
                "Make sure the notebook runs from top to bottom (Kernel > Restart & Run All) in reasonable time.",
                "GraderError",
            )
        )
        result.flags = list(flags.get(ex.name, []))
        graded.results.append(result)
    graded.problems = [notebook.errors[n] for n in sorted(notebook.errors)] + notebook.notes
    graded.seconds = time.monotonic() - started
    return graded


def _grade_one(submission: Submission, library: LibraryCopy | None, options: dict[str, Any]) -> GradedNotebook:
    """:func:`grade_notebook`, and failed rows that say why if the grader itself fails on this notebook: one
    notebook never stops the class's grading."""
    try:
        return grade_notebook(submission.path, submission.student, library=library, **options)
    except Exception as e:  # the grader's own failure: a bug, or a submission it was not ready for
        unsandboxed = bool(options.get("unsandboxed"))
        graded = GradedNotebook(submission.student, submission.path.stem, submission.path, unsandboxed=unsandboxed)
        assignment = assignment_for(submission.path)
        reason = clean_text(f"{type(e).__name__}: {e}")[:300]
        _not_graded(
            graded,
            assignment.exercises if assignment is not None else (),
            f"The grader failed on this notebook ({reason}); the other notebooks were graded.",
            "The grader could not grade this notebook: your teacher will look at it.",
            "Tell your teacher; the note in the grades sheet says what went wrong.",
        )
        graded.assignment = assignment.id if assignment is not None else graded.assignment
        return graded


def _grade_all(
    submissions: list[Submission], jobs: int, progress: bool, options: dict[str, Any]
) -> list[GradedNotebook]:
    """:func:`_grade_one` for each submission, ``jobs`` at once, with a read-only library copy per assignment
    (checked after every notebook, removed however the grading ends)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from tqdm.auto import tqdm

    graded_at: dict[int, GradedNotebook] = {}
    with contextlib.ExitStack() as stack:
        libraries: dict[str, LibraryCopy] = {}
        for s in submissions:
            a = assignment_for(s.path)
            if a is not None and a.id not in libraries:
                libraries[a.id] = LibraryCopy(stubs=stubs_for(a.id))
                stack.callback(libraries[a.id].cleanup)
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=jobs))  # (left before the copies are removed)
        bar = stack.enter_context(tqdm(total=len(submissions), desc="grading", unit="notebook", disable=not progress))
        futures = {
            pool.submit(_grade_one, s, libraries.get(a.id) if (a := assignment_for(s.path)) else None, options): i
            for i, s in enumerate(submissions)
        }
        for future in as_completed(futures):
            i = futures[future]
            graded_at[i] = future.result()
            bar.set_postfix_str(f"{submissions[i].student}/{submissions[i].path.name}")
            bar.update()
    return [graded_at[i] for i in range(len(submissions))]


def _default_templates() -> Path | None:
    """The student notebooks that were handed out: ``book/assignments`` of the current folder, else of the
    repository this library sits in."""
    for root in (Path.cwd(), Path(_LIBRARY_PARENT)):
        if (root / "book" / "assignments").is_dir():
            return root / "book" / "assignments"
    return None


def grade_folder(
    folder: str | Path,
    out: str | Path,
    feedback_dir: str | Path | None = None,
    *,
    cell_timeout: float = 60,
    time_limit: float = DEFAULT_TIME_LIMIT,
    kernel_name: str = "python3",
    jobs: int = 1,
    progress: bool = True,
    roster: str | Path | None = None,
    totals: str | Path | None = None,
    answers: str | Path | None = None,
    templates: str | Path | None = None,
    written: dict[Path, str] | None = None,
    lms: str | None = None,
    key_file: str | Path | None = None,
    similarity_threshold: float = DEFAULT_THRESHOLD,
    limits: Limits | None = None,
    unsandboxed: bool = False,
    notebook_timeout: float = NOTEBOOK_TIMEOUT,
) -> list[GradedNotebook]:
    """Grade every notebook under ``folder`` (student folders or LMS file names; ``roster``, a CSV, maps LMS
    names and ids to students) and write the gradebook: the CSV ``out``, the totals and answers sheets, the
    feedback files and the checksum manifest (see :func:`~transformer_lib.classroom.gradebook.write_gradebook`;
    ``templates`` is the folder of the handed-out notebooks, default ``book/assignments``). ``jobs`` notebooks
    run at once, each in its own kernel. Returns what was graded, sorted by student and file; ``written``, if
    given, receives ``{path: sha256}`` of the files written. ``lms`` (``"moodle"`` or ``"canvas"``) also writes
    ``<out>_<lms>.csv`` for that LMS's grade import (:mod:`.lms`); ``key_file`` anchors every file written with an
    HMAC keyed by it (:mod:`.sheets`; the key is created if missing and must lie outside the output folder).
    Pairs of near-identical solutions (:mod:`.similarity`, at ``similarity_threshold`` or more) go to
    ``similarity.csv`` next to ``out`` and are flagged on both students' rows. ``limits``, ``unsandboxed`` and
    ``notebook_timeout``: see :func:`grade_notebook` (:class:`~.sandbox.SandboxUnavailable` is raised before
    anything is graded). A notebook the grader itself fails on gets failed rows that say so; the others are graded
    and the sheets written all the same."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected an int >= 1, got {jobs!r}")
    if isinstance(similarity_threshold, bool) or not 0 < similarity_threshold <= 1:
        raise ValueError(f"similarity_threshold: expected a number in (0, 1], got {similarity_threshold!r}")
    if not unsandboxed:
        require_bwrap()
    key = sheets.load_key(key_file, Path(out).parent) if key_file is not None else None  # before hours of grading
    roster_table = roster_rows(roster) if roster is not None else None
    submissions = collect_submissions(folder, read_roster(roster) if roster is not None else None)
    if not submissions:
        raise FileNotFoundError(
            f"submissions: no <student>/<assignment>.ipynb or LMS-named .ipynb files under {folder}"
        )
    digests = [sha256_file(s.path) for s in submissions]  # before any kernel runs
    out = Path(out)
    feedback_dir = Path(feedback_dir) if feedback_dir is not None else out.parent / "feedback"
    options = dict(
        cell_timeout=cell_timeout,
        time_limit=time_limit,
        kernel_name=kernel_name,
        limits=limits,
        unsandboxed=unsandboxed,
        notebook_timeout=notebook_timeout,
    )
    graded = _grade_all(submissions, jobs, progress, options)
    for g, s, digest in zip(graded, submissions, digests, strict=True):
        g.student, g.sha256, g.notes = s.student, digest, [*g.notes, *s.notes]
        g.file_name = s.path.relative_to(folder).as_posix() if Path(folder) in s.path.parents else s.path.name
    templates = templates if templates is not None else _default_templates()
    pairs = similar_pairs(graded, templates, similarity_threshold)
    flag_similar(graded, pairs)
    extra = {out.with_name("similarity.csv"): csv_text(SIMILARITY_COLUMNS, pairs)}
    if lms is not None:
        columns, table = totals_table(graded, roster_table)
        extra[out.with_name(f"{out.stem}_{lms}.csv")] = lms_csv(lms, columns, table, roster_table, skip_unmatched=True)
        if unmatched(lms, table):
            print(
                f"Left out of {out.stem}_{lms}.csv, for want of an {'e-mail' if lms == 'moodle' else 'lms_id'} in "
                f"the roster: {', '.join(unmatched(lms, table))}.",
                file=sys.stderr,
            )
    files = write_gradebook(
        out,
        graded,
        feedback_dir=feedback_dir,
        totals=totals,
        answers=answers,
        templates=templates,
        roster=roster_table,
        extra=extra,
    )
    if key is not None:
        hmac_path = out.with_suffix(".hmac")
        files[hmac_path] = sheets.anchor(list(files), key, hmac_path)
    if written is not None:
        written.update(files)
    return graded


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["verify"], ["totals"]):  # tl-grade verify ..., tl-grade totals ...
        return sheets.main(argv)
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lib.classroom.grade",
        description="Run each submitted notebook (SUBMISSIONS_DIR/<student>/<assignment>.ipynb, or LMS bulk-download "
        "names such as smithjohn_123_03_attention.ipynb) in its own kernel, check every exercise, and "
        "write the gradebook: a CSV per exercise, a totals CSV, a CSV of written answers, a markdown "
        "feedback file per student and a SHA-256 manifest of them all.",
        epilog="After grading: `tl-grade totals FOLDER --answers CSV` merges the written answers' points into the "
        "totals, `tl-grade verify FOLDER --key-file KEY` checks the sheets against their HMAC (see their --help).",
    )
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
    parser.add_argument("--jobs", type=int, default=1, help="notebooks graded at once (default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
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
        )
    except (FileNotFoundError, NotADirectoryError, ValueError, SandboxUnavailable) as e:
        print(e, file=sys.stderr)
        return 2
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
    if args.no_sandbox:
        print(NO_SANDBOX_BANNER, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

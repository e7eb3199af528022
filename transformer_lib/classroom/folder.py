"""Grading a class's folder (:func:`grade_folder`): which notebook is whose (:mod:`.submissions`), each graded in
its own kernel on a Dask worker (:func:`~.cluster.grade_on_cluster`: a teacher's scheduler, or an embedded
``LocalCluster`` of ``jobs`` processes), near-identical solutions flagged (:mod:`.similarity`), then the gradebook
written here, in the teacher's process alone (:mod:`.gradebook`), with an LMS import file (:mod:`.lms`), which worker
graded what (``workers.csv``) and an HMAC anchor (:mod:`.sheets`) where asked for.

A notebook the grader itself fails on, or whose worker died every time it was graded, gets failed rows that say so;
the others are graded and the sheets written all the same.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import sheets
from .checks import DEFAULT_TIME_LIMIT
from .cluster import WORKER_COLUMNS, grade_on_cluster, worker_rows
from .gradebook import csv_text, sha256_file, totals_table, write_gradebook
from .graded import GradedNotebook
from .lms import lms_csv, unmatched
from .runs import NOTEBOOK_TIMEOUT
from .sandbox import Limits, require_bwrap
from .similarity import DEFAULT_THRESHOLD, SIMILARITY_COLUMNS, flag_similar, similar_pairs
from .submissions import Submission, collect_submissions, read_roster, roster_rows

__all__ = ["find_submissions", "grade_folder"]

_LIBRARY = Path(__file__).resolve().parents[1]  # this transformer_lib
_LIBRARY_PARENT = str(_LIBRARY.parent)  # the repository it sits in (its book/assignments)


def find_submissions(folder: str | Path, roster: dict[str, str] | None = None) -> list[tuple[str, Path]]:
    """``(student, notebook)`` for every notebook that will be graded under ``folder``, sorted: one per student and
    assignment (see :func:`~transformer_lib.classroom.submissions.collect_submissions`)."""
    return [(s.student, s.path) for s in collect_submissions(folder, roster)]


def _default_templates() -> Path | None:
    """The student notebooks that were handed out: ``book/assignments`` of the current folder, else of the
    repository this library sits in."""
    for root in (Path.cwd(), Path(_LIBRARY_PARENT)):
        if (root / "book" / "assignments").is_dir():
            return root / "book" / "assignments"
    return None


def _submissions(folder: str | Path, roster: str | Path | None) -> list[Submission]:
    """The notebooks to grade under ``folder`` (:func:`~.submissions.collect_submissions`); FileNotFoundError if
    there are none."""
    submissions = collect_submissions(folder, read_roster(roster) if roster is not None else None)
    if not submissions:
        raise FileNotFoundError(
            f"submissions: no <student>/<assignment>.ipynb or LMS-named .ipynb files under {folder}"
        )
    return submissions


def _check_options(jobs: int, similarity_threshold: float, scheduler: str | None) -> None:
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected an int >= 1, got {jobs!r}")
    if scheduler is not None and (not isinstance(scheduler, str) or "://" not in scheduler):
        raise ValueError(f"scheduler: expected a Dask scheduler's address such as tcp://host:8786, got {scheduler!r}")
    if isinstance(similarity_threshold, bool) or not 0 < similarity_threshold <= 1:
        raise ValueError(f"similarity_threshold: expected a number in (0, 1], got {similarity_threshold!r}")


def _lms_file(lms: str, out: Path, graded: list[GradedNotebook], roster: list[dict[str, str]] | None) -> str:
    """The text of ``<out>_<lms>.csv``, the totals in that LMS's import format; the students it cannot match (no
    e-mail for Moodle, no ``lms_id`` for Canvas in the roster) are left out, and named on stderr."""
    columns, table = totals_table(graded, roster)
    if unmatched(lms, table):
        print(
            f"Left out of {out.stem}_{lms}.csv, for want of an {'e-mail' if lms == 'moodle' else 'lms_id'} in "
            f"the roster: {', '.join(unmatched(lms, table))}.",
            file=sys.stderr,
        )
    return lms_csv(lms, columns, table, roster, skip_unmatched=True)


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
    scheduler: str | None = None,
    worker_peaks: dict[str, float] | None = None,
) -> list[GradedNotebook]:
    """Grade every notebook under ``folder`` (student folders or LMS file names; ``roster``, a CSV, maps LMS names and
    ids to students) and write the gradebook: the CSV ``out``, the totals and answers sheets, the feedback files and the
    checksum manifest (see :func:`~transformer_lib.classroom.gradebook.write_gradebook`; ``templates`` is the folder
    of the handed-out notebooks, default ``book/assignments``). Each notebook is a task on the Dask ``scheduler``
    (an address such as ``tcp://host:8786``; its workers check their own sandbox) or, by default, on an embedded
    cluster of ``jobs`` worker processes; ``workers.csv`` next to ``out`` says which worker graded which notebook,
    and ``worker_peaks``, if given, receives each worker's peak memory (MB). Returns what was graded, sorted by
    student and file; ``written``, if given, receives ``{path: sha256}`` of the files written. ``lms`` (``"moodle"``
    or ``"canvas"``) also writes ``<out>_<lms>.csv`` for that LMS's grade import (:mod:`.lms`); ``key_file`` anchors
    every file written with an HMAC keyed by it (:mod:`.sheets`; the key is created if missing and must lie outside
    the output folder). Pairs of near-identical solutions (:mod:`.similarity`, at ``similarity_threshold`` or more)
    go to ``similarity.csv`` next to ``out`` and are flagged on both students' rows. ``limits``, ``unsandboxed`` and
    ``notebook_timeout``: see :func:`grade_notebook` (:class:`~.sandbox.SandboxUnavailable` is raised before
    anything is graded). A notebook the grader itself fails on gets failed rows that say so; the others are graded
    and the sheets written all the same."""
    _check_options(jobs, similarity_threshold, scheduler)
    if not unsandboxed and scheduler is None:  # (a teacher's workers each check their own)
        require_bwrap()
    key = sheets.load_key(key_file, Path(out).parent) if key_file is not None else None  # before hours of grading
    roster_table = roster_rows(roster) if roster is not None else None
    submissions = _submissions(folder, roster)
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
    on_workers = grade_on_cluster(
        submissions, options, scheduler=scheduler, jobs=jobs, progress=progress, peaks=worker_peaks
    )
    graded = [g.notebook for g in on_workers]
    for g, s, digest in zip(graded, submissions, digests, strict=True):
        g.student, g.path, g.sha256, g.notes = s.student, s.path, digest, [*g.notes, *s.notes]
        g.file_name = s.path.relative_to(folder).as_posix() if Path(folder) in s.path.parents else s.path.name
    templates = templates if templates is not None else _default_templates()
    pairs = similar_pairs(graded, templates, similarity_threshold)
    flag_similar(graded, pairs)
    extra = {
        out.with_name("similarity.csv"): csv_text(SIMILARITY_COLUMNS, pairs),
        out.with_name("workers.csv"): csv_text(WORKER_COLUMNS, worker_rows(on_workers, [g.file_name for g in graded])),
    }
    if lms is not None:
        extra[out.with_name(f"{out.stem}_{lms}.csv")] = _lms_file(lms, out, graded, roster_table)
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

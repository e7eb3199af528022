"""The gradebook: the sheets a teacher uploads, the students' written answers, feedback, and a checksum manifest.

From what :mod:`transformer_lib.classroom.grade` found, :func:`write_gradebook` writes, next to ``grades.csv``:

* ``grades.csv``: one row per student per exercise (:mod:`.sheet_rows`: points, flags, the graded file and its
  hash, the roster's ids, a ``no submission`` row for an assignment not handed in);
* ``grades_totals.csv``: one row per student, every roster student included: a column of points and one of
  maximum points per assignment, ``extra`` (optional extensions), ``total``, ``max`` and ``note``;
* ``grades_answers.csv``: one row per student per written question (:mod:`.written_answers`), with an empty ``points``
  column to fill in by hand;
* any ``extra`` files the grader asks for (``similarity.csv``, an LMS import file), ``feedback/<student>.md``
  (:mod:`.feedback`), and ``grades.sha256``: the SHA-256 of every file above in ``sha256sum`` format. (That
  proves that nothing changed by accident; :mod:`.sheets` anchors them against edits with the teacher's key.)

Every file is written atomically: to a temporary file in the same folder, flushed to disk, then renamed over the
old one, so that a reader never sees half a sheet and an interrupted run leaves the previous sheet in place.
The names of :mod:`.sheet_rows`, :mod:`.written_answers` and :mod:`.feedback` are re-exported here.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .feedback import feedback_file_name, feedback_markdown
from .graded import GradedNotebook
from .sheet_rows import (
    EXERCISE_COLUMNS,
    NO_SUBMISSION,
    ROSTER_COLUMNS,
    clean_text,
    exercise_rows,
    graded_assignments,
    not_a_formula,
    totals_from_rows,
    totals_table,
    written_points,
)
from .written_answers import ANSWER_COLUMNS, answer_rows

__all__ = [
    "EXERCISE_COLUMNS",
    "ANSWER_COLUMNS",
    "sha256_file",
    "write_atomic",
    "csv_text",
    "ROSTER_COLUMNS",
    "NO_SUBMISSION",
    "graded_assignments",
    "exercise_rows",
    "written_points",
    "totals_from_rows",
    "totals_table",
    "read_sheet",
    "answer_rows",
    "feedback_markdown",
    "write_csv",
    "write_gradebook",
]


def sha256_file(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, as hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_atomic(path: str | Path, text: str) -> str:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns its SHA-256.

    The text goes to a temporary file in the same folder (a rename is atomic only within one file system), is
    flushed and fsync'ed, then ``os.replace``'d over ``path``. On any error the temporary file is removed and
    ``path`` keeps its old content.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tl-", suffix=".tmp")  # (a long name has no room for more)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # make the rename itself durable; not every platform lets a folder be opened
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass
    return hashlib.sha256(data).hexdigest()


def _cell(value: Any, lines: bool = False) -> Any:
    """A text as one clean line (:func:`~.sheet_rows.clean_text`; its line breaks kept with ``lines``); one that a
    spreadsheet would run as a formula (a student's answer ``=HYPERLINK(...)``) gets a leading apostrophe, so that
    it shows as text (OWASP's advice against CSV injection); numbers are left alone."""
    if not isinstance(value, str):
        return value
    return not_a_formula(clean_text(value, lines=lines))  # no escape sequence: `cat` shows the rows as they are


def csv_text(columns: Iterable[str], rows: Iterable[dict[str, Any]], *, lines: bool = False) -> str:
    """The CSV of ``rows`` under ``columns``, every text cleaned (see ``_cell``; ``lines`` keeps line breaks, for
    the written answers)."""
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=list(columns))
    writer.writeheader()
    writer.writerows({k: _cell(v, lines) for k, v in row.items()} for row in rows)
    return buffer.getvalue()


def write_csv(path: str | Path, graded: list[GradedNotebook], roster: list[dict[str, str]] | None = None) -> str:
    """Write the per-exercise sheet atomically; returns its SHA-256."""
    return write_atomic(path, csv_text(EXERCISE_COLUMNS, exercise_rows(graded, roster)))


def read_sheet(path: str | Path) -> list[dict[str, str]]:
    """The rows of a sheet written here (or filled in by hand and saved as CSV)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def _manifest_name(path: Path, folder: Path) -> str:
    return path.relative_to(folder).as_posix() if folder in path.parents else str(path)


def write_gradebook(
    out: str | Path,
    graded: list[GradedNotebook],
    *,
    feedback_dir: str | Path | None = None,
    totals: str | Path | None = None,
    answers: str | Path | None = None,
    manifest: str | Path | None = None,
    templates: str | Path | None = None,
    roster: list[dict[str, str]] | None = None,
    extra: dict[Path, str] | None = None,
) -> dict[Path, str]:
    """Write every sheet, the feedback files and the manifest (defaults: ``feedback/``, ``<out>_totals.csv``,
    ``<out>_answers.csv`` and ``<out>.sha256`` next to ``out``; no answers sheet without ``templates``).

    ``roster`` (:func:`~.submissions.roster_rows`) carries its ids into the sheets and gives a row to every
    student in it; ``extra`` maps more files (e.g. an LMS export) to their text, written before the manifest.
    Returns ``{path: sha256}`` of everything written, the manifest last.
    """
    out = Path(out)
    folder = out.parent
    totals = Path(totals) if totals else out.with_name(f"{out.stem}_totals.csv")
    manifest = Path(manifest) if manifest else out.with_suffix(".sha256")
    feedback_dir = Path(feedback_dir) if feedback_dir is not None else folder / "feedback"
    written = {out: write_csv(out, graded, roster)}
    columns, table = totals_table(graded, roster)
    written[totals] = write_atomic(totals, csv_text(columns, table))
    if templates is not None:
        answers = Path(answers) if answers else out.with_name(f"{out.stem}_answers.csv")
        written[answers] = write_atomic(
            answers, csv_text(ANSWER_COLUMNS, answer_rows(graded, templates, roster), lines=True)
        )
    for path, text in (extra or {}).items():
        written[Path(path)] = write_atomic(path, text)
    for student in sorted({g.student for g in graded}):
        path = feedback_dir / f"{feedback_file_name(student)}.md"
        written[path] = write_atomic(path, feedback_markdown(student, [g for g in graded if g.student == student]))
    lines = [
        f"{digest}  {_manifest_name(path.resolve(), manifest.resolve().parent)}\n" for path, digest in written.items()
    ]
    written[manifest] = write_atomic(manifest, "".join(lines))
    return written

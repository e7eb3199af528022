"""The gradebook: the sheets a teacher uploads, the students' written answers, feedback, and a checksum manifest.

From what :mod:`transformer_lib.classroom.grade` found, :func:`write_gradebook` writes, next to ``grades.csv``:

* ``grades.csv``: one row per student per exercise: ``student, assignment, exercise, passed, message, optional,
  points, max_points, flags, file_name, sha256, note``. ``points`` is what the row earned (the exercise's points
  from :data:`~transformer_lib.classroom.assignments.ASSIGNMENTS` when it passes, else 0); ``optional`` is 1 for
  an extension; ``flags`` says what the teacher should look at (e.g. a function that calls the library's own
  reference); ``sha256`` is the hash of the graded file, and ``note`` names duplicates that were not graded.
* ``grades_totals.csv``: one row per student: a column of points per assignment, ``extra`` (points earned on
  optional extensions, included in the assignment columns and the total), ``total`` and ``max`` (required
  exercises only, so extensions are extra credit).
* ``grades_answers.csv``: one row per student per written question (the markdown cell tagged ``answer``): the
  question, the student's answer, an empty ``points`` column to fill in by hand, and ``max_points``.
* ``feedback/<student>.md``, and ``grades.sha256``: the SHA-256 of every file above in ``sha256sum`` format, so
  that ``sha256sum -c grades.sha256`` (run in that folder) proves that nothing was changed afterwards.

Every file is written atomically: to a temporary file in the same folder, flushed to disk, then renamed over the
old one, so that a reader never sees half a sheet and an interrupted run leaves the previous sheet in place.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .assignments import ANSWER_HERE, ASSIGNMENTS

if TYPE_CHECKING:
    from .grade import GradedNotebook

__all__ = [
    "EXERCISE_COLUMNS",
    "ANSWER_COLUMNS",
    "sha256_file",
    "write_atomic",
    "exercise_rows",
    "totals_table",
    "answer_rows",
    "feedback_markdown",
    "write_csv",
    "write_gradebook",
]

EXERCISE_COLUMNS = (
    "student",
    "assignment",
    "exercise",
    "passed",
    "message",
    "optional",
    "points",
    "max_points",
    "flags",
    "file_name",
    "sha256",
    "note",
)
ANSWER_COLUMNS = (
    "student",
    "assignment",
    "question",
    "question_text",
    "answer",
    "points",
    "max_points",
    "file_name",
    "sha256",
)
_QUESTION = re.compile(r"\s*(\d+)[.)]\s+(.*)")


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 4)


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
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
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


def _cell(value: Any) -> Any:
    """A text that a spreadsheet would run as a formula (a student's answer ``=HYPERLINK(...)``) gets a leading
    apostrophe, so that it shows as text (OWASP's advice against CSV injection); numbers are left alone."""
    formula = isinstance(value, str) and (value[:1] in ("=", "+", "@", "\t", "\r") or value[:1] == "-" != value)
    return "'" + value if formula else value


def _csv_text(columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> str:
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=list(columns))
    writer.writeheader()
    writer.writerows({k: _cell(v) for k, v in row.items()} for row in rows)
    return buffer.getvalue()


def _file_name(student: str) -> str:
    """A student's name as a file name in the feedback folder (no separators, no leading dot)."""
    return re.sub(r'[\\/:*?"<>|\x00-\x1f]', "_", student).lstrip(". ") or "_"


def _markdown_cells(path: Path) -> list[tuple[str | None, str]]:
    """``(id, source)`` of each markdown cell of a submitted notebook; none if it cannot be read."""
    import nbformat

    try:
        cells = nbformat.read(path, as_version=4).get("cells", [])
    except Exception:  # not JSON, not a notebook: its exercise rows say why
        return []
    found = []
    for c in cells if isinstance(cells, list) else []:
        if isinstance(c, dict) and c.get("cell_type") == "markdown":
            source = c.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            found.append((c.get("id"), source if isinstance(source, str) else ""))
    return found


# --------------------------------------------------------------------------------------------------------------
# The sheets
# --------------------------------------------------------------------------------------------------------------
def _flags(*objects: Any) -> str:
    return "; ".join(str(f) for obj in objects for f in getattr(obj, "flags", None) or [])


def exercise_rows(graded: list[GradedNotebook]) -> list[dict[str, Any]]:
    """One row per student per exercise (:data:`EXERCISE_COLUMNS`); a notebook of no known assignment gets one
    row with exercise ``-`` and 0 of 0 points."""
    rows = []
    for g in graded:
        common = {
            "student": g.student,
            "assignment": g.assignment,
            "file_name": getattr(g, "file_name", ""),
            "sha256": getattr(g, "sha256", ""),
            "note": " ".join(getattr(g, "notes", [])),
        }
        assignment = ASSIGNMENTS.get(g.assignment)
        if assignment is None or not g.results:
            rows.append(
                {
                    **common,
                    "exercise": "-",
                    "passed": 0,
                    "message": "; ".join(g.problems),
                    "optional": 0,
                    "points": 0,
                    "max_points": 0,
                    "flags": _flags(g),
                }
            )
            continue
        for r in g.results:
            ex = assignment.exercise(r.exercise)
            points = ex.points if ex else 0
            rows.append(
                {
                    **common,
                    "exercise": r.exercise,
                    "passed": int(r.passed),
                    "message": r.message,
                    "optional": int(bool(ex and ex.extension)),
                    "points": _number(points if r.passed else 0),
                    "max_points": _number(points),
                    "flags": _flags(r, g),
                }
            )
    return rows


def totals_table(graded: list[GradedNotebook]) -> tuple[list[str], list[dict[str, Any]]]:
    """``(columns, rows)`` of the totals sheet: one row per student, a column per assignment that anyone handed
    in (0 for a student who did not), ``extra`` (optional points earned), ``total`` and ``max``."""
    rows = exercise_rows(graded)
    assignments = sorted({r["assignment"] for r in rows if r["assignment"] in ASSIGNMENTS})
    maximum = sum(ASSIGNMENTS[a].max_points for a in assignments)
    table = []
    for student in sorted({r["student"] for r in rows}, key=str.lower):
        mine = [r for r in rows if r["student"] == student]
        row: dict[str, Any] = {"student": student}
        for a in assignments:
            row[a] = _number(sum(r["points"] for r in mine if r["assignment"] == a))
        row["extra"] = _number(sum(r["points"] for r in mine if r["optional"]))
        row["total"] = _number(sum(r["points"] for r in mine))
        row["max"] = _number(maximum)
        table.append(row)
    return ["student", *assignments, "extra", "total", "max"], table


def _questions(template: str) -> list[str]:
    """The numbered questions of a template answer cell (continuation lines joined)."""
    questions: list[str] = []
    for line in template.splitlines():
        if line.strip() == ANSWER_HERE:
            break
        m = _QUESTION.fullmatch(line)
        if m:
            questions.append(m[2].strip())
        elif questions and line.startswith(" ") and line.strip():
            questions[-1] += " " + line.strip()
    return questions


def _answer(template: str, submitted: str) -> str:
    """What the student added to the template cell: its lines that the template does not have."""
    given = {line.strip() for line in template.splitlines()}
    return "\n".join(line for line in submitted.splitlines() if line.strip() not in given).strip()


def _split_answer(answer: str, n: int) -> list[str] | None:
    """The answer cut at its numbered items ``1.`` .. ``n.``, when it is numbered exactly so."""
    parts: list[list[str]] = []
    for line in answer.splitlines():
        m = _QUESTION.fullmatch(line)
        if m and int(m[1]) == len(parts) + 1:
            parts.append([m[2]])
        elif parts:
            parts[-1].append(line.strip())
        elif line.strip():
            return None  # text before the first number
    if len(parts) != n:
        return None
    return [" ".join(p).strip() for p in parts]


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def answer_rows(graded: list[GradedNotebook], templates: str | Path) -> list[dict[str, Any]]:
    """One row per student per written question (:data:`ANSWER_COLUMNS`).

    ``templates`` is the folder of student notebooks handed out (``book/assignments``): its cells tagged
    ``answer`` give the questions, and a submission's markdown cell with the same id (else, for a pasted copy
    with a new id, the one that starts with the same heading) gives the answer: its lines that the template does
    not have. An answer numbered ``1.``, ``2.``, ... like the questions is cut into one row
    per question; otherwise the whole answer goes on one row whose ``question`` is e.g. ``1-2``.
    """
    import nbformat

    rows = []
    for g in graded:
        template_path = Path(templates) / f"{g.assignment}.ipynb"
        if g.assignment not in ASSIGNMENTS or not template_path.exists():
            continue
        asked = [c for c in nbformat.read(template_path, as_version=4).cells if "answer" in c.metadata.get("tags", [])]
        cells = _markdown_cells(Path(g.path))
        by_id = dict(cells)
        common = {
            "student": g.student,
            "assignment": g.assignment,
            "points": "",
            "file_name": getattr(g, "file_name", ""),
            "sha256": getattr(g, "sha256", ""),
        }
        for k, question_cell in enumerate(asked):
            source = by_id.get(question_cell.get("id"))
            if source is None:  # a copy of the cell (new id): the k-th markdown cell that starts like the question
                heading = question_cell.source.splitlines()[0]
                same = [text for _, text in cells if text.splitlines()[:1] == [heading]]
                source = same[k] if k < len(same) else None
            answer = _answer(question_cell.source, source) if source is not None else ""
            questions = _questions(question_cell.source) or [question_cell.source.splitlines()[0].lstrip("# ")]
            parts = _split_answer(answer, len(questions))
            if parts is None:
                label = "1" if len(questions) == 1 else f"1-{len(questions)}"
                rows.append(
                    {
                        **common,
                        "question": label,
                        "question_text": _short(" ".join(questions)),
                        "answer": answer,
                        "max_points": len(questions),
                    }
                )
            else:
                rows += [
                    {**common, "question": str(i), "question_text": _short(q), "answer": a, "max_points": 1}
                    for i, (q, a) in enumerate(zip(questions, parts), start=1)
                ]
    return rows


# --------------------------------------------------------------------------------------------------------------
# Feedback
# --------------------------------------------------------------------------------------------------------------
def feedback_markdown(student: str, graded: list[GradedNotebook]) -> str:
    """One student's feedback: a table of results and points, then for each failure what failed, the hints, and
    the problems met while running each notebook (and any files that were not graded)."""
    rows = exercise_rows(graded)
    lines = [f"# Feedback for {student}", "", "| Assignment | Exercise | Result | Points |", "|---|---|---|---|"]
    for r in rows:
        optional = " (optional)" if r["optional"] else ""
        lines.append(
            f"| {r['assignment']} | {r['exercise']}{optional} | {'PASS' if r['passed'] else 'FAIL'} | "
            f"{r['points']}/{r['max_points']} |"
        )
    for g in graded:
        passed = sum(r.passed for r in g.results)
        mine = [r for r in rows if r["assignment"] == g.assignment and r["student"] == g.student]
        points = _number(sum(r["points"] for r in mine))
        maximum = ASSIGNMENTS[g.assignment].max_points if g.assignment in ASSIGNMENTS else 0
        lines += [
            "",
            f"## {g.assignment}: {passed} of {len(g.results)} exercises pass ({points} of {_number(maximum)} points)",
            "",
        ]
        if getattr(g, "file_name", ""):
            lines += [f"Graded file: `{g.file_name}`", ""]
        for note in getattr(g, "notes", []):
            lines += [f"*{note}*", ""]
        for r in g.results:
            lines += [f"### {r.exercise}: {'PASS' if r.passed else 'FAIL'}", "", r.summary, ""]
            if not r.passed:
                if r.details:
                    lines += ["```text", r.details, "```", ""]
                if r.hints:
                    lines += [f"**Hint:** {r.hints[0]}", ""]
                for level, hint in enumerate(r.hints[1:], start=2):
                    lines += [f"<details><summary>Hint {level}</summary>", "", hint, "", "</details>", ""]
        if g.problems:
            lines += [
                "### Problems with your notebook",
                "",
                "Cells are numbered from the top, markdown cells included.",
                "",
            ]
            lines += [f"- {p}" for p in g.problems] + [""]
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------------------------------------------
# Writing it all
# --------------------------------------------------------------------------------------------------------------
def write_csv(path: str | Path, graded: list[GradedNotebook]) -> str:
    """Write the per-exercise sheet atomically; returns its SHA-256."""
    return write_atomic(path, _csv_text(EXERCISE_COLUMNS, exercise_rows(graded)))


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
) -> dict[Path, str]:
    """Write every sheet, the feedback files and the manifest (defaults: ``feedback/``, ``<out>_totals.csv``,
    ``<out>_answers.csv`` and ``<out>.sha256`` next to ``out``; no answers sheet without ``templates``).

    Returns ``{path: sha256}`` of everything written, the manifest last.
    """
    out = Path(out)
    folder = out.parent
    totals = Path(totals) if totals else out.with_name(f"{out.stem}_totals.csv")
    manifest = Path(manifest) if manifest else out.with_suffix(".sha256")
    feedback_dir = Path(feedback_dir) if feedback_dir is not None else folder / "feedback"
    written = {out: write_csv(out, graded)}
    columns, table = totals_table(graded)
    written[totals] = write_atomic(totals, _csv_text(columns, table))
    if templates is not None:
        answers = Path(answers) if answers else out.with_name(f"{out.stem}_answers.csv")
        written[answers] = write_atomic(answers, _csv_text(ANSWER_COLUMNS, answer_rows(graded, templates)))
    for student in sorted({g.student for g in graded}):
        path = feedback_dir / f"{_file_name(student)}.md"
        written[path] = write_atomic(path, feedback_markdown(student, [g for g in graded if g.student == student]))
    lines = [
        f"{digest}  {_manifest_name(path.resolve(), manifest.resolve().parent)}\n" for path, digest in written.items()
    ]
    written[manifest] = write_atomic(manifest, "".join(lines))
    return written

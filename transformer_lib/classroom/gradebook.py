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
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .registry import ANSWER_HERE, ASSIGNMENTS
from .results import GradedNotebook

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

ROSTER_COLUMNS = ("lms_id", "email")  # carried from the roster into every sheet, so that an LMS can match its rows
NO_SUBMISSION = "no submission"
EXERCISE_COLUMNS = (
    "student",
    *ROSTER_COLUMNS,
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
    *ROSTER_COLUMNS,
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


def csv_text(columns: Iterable[str], rows: Iterable[dict[str, Any]]) -> str:
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


def _ids(student: str, roster: list[dict[str, str]] | None) -> dict[str, str]:
    """The roster's id and e-mail of ``student`` (empty when not in the roster)."""
    row = next((r for r in roster or [] if r.get("student") == student), {})
    return {c: row.get(c, "") for c in ROSTER_COLUMNS}


def _students(graded: list[GradedNotebook], roster: list[dict[str, str]] | None) -> list[str]:
    """Everyone with a sheet row: the roster's students, then those graded who are not in it."""
    names = [r["student"] for r in roster or []]
    return list(dict.fromkeys(names + sorted({g.student for g in graded}, key=str.lower)))


def graded_assignments(graded: list[GradedNotebook]) -> list[str]:
    """The assignments of this run: those that anyone handed in, in order."""
    return sorted({g.assignment for g in graded if g.assignment in ASSIGNMENTS})


def exercise_rows(graded: list[GradedNotebook], roster: list[dict[str, str]] | None = None) -> list[dict[str, Any]]:
    """One row per student per exercise (:data:`EXERCISE_COLUMNS`); a notebook of no known assignment gets one
    row with exercise ``-`` and 0 of 0 points; a student (of the roster, or graded on another assignment) who
    handed in nothing for an assignment of this run gets one row with exercise ``-``, 0 points of the
    assignment's maximum and ``no submission``. Points are :meth:`~.registry.Exercise.earned`: all of them for a
    pass, the parts passed for a partly right answer."""
    rows = []
    for g in graded:
        common = {
            "student": g.student,
            **_ids(g.student, roster),
            "assignment": g.assignment,
            "file_name": g.file_name,
            "sha256": g.sha256,
            "note": " ".join(g.notes),
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
            rows.append(
                {
                    **common,
                    "exercise": r.exercise,
                    "passed": int(r.passed),
                    "message": _with_parts(r),
                    "optional": int(bool(ex and ex.extension)),
                    "points": _number(ex.earned(r) if ex else 0),
                    "max_points": _number(ex.points if ex else 0),
                    "flags": _flags(r, g),
                }
            )
    handed_in = {(g.student, g.assignment) for g in graded}
    for student in _students(graded, roster):
        for aid in graded_assignments(graded):
            if (student, aid) not in handed_in:
                rows.append(
                    {
                        "student": student,
                        **_ids(student, roster),
                        "assignment": aid,
                        "exercise": "-",
                        "passed": 0,
                        "message": NO_SUBMISSION,
                        "optional": 0,
                        "points": 0,
                        "max_points": _number(ASSIGNMENTS[aid].max_points),
                        "flags": "",
                        "file_name": "",
                        "sha256": "",
                        "note": NO_SUBMISSION,
                    }
                )
    return rows


def _with_parts(r: Any) -> str:
    """The sheet's message: the check's, and for a fail with parts, which parts passed (partial credit)."""
    if r.passed or not getattr(r, "parts", None):
        return str(r.message)
    parts = ", ".join(f"{p} {'PASS' if ok else 'FAIL'}" for p, ok in r.parts.items())
    return f"{r.message} Parts: {parts}."


def _float(value: Any, what: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a number, got {value!r}") from None
    if x != x or x in (float("inf"), float("-inf")):
        raise ValueError(f"{what}: expected a finite number, got {value!r}")
    return x


def written_points(
    rows: Iterable[dict[str, Any]], where: str = "answers"
) -> dict[tuple[str, str], tuple[float, float]]:
    """``{(student, assignment): (points, max_points)}`` from a filled answers sheet (:data:`ANSWER_COLUMNS`);
    rows whose ``points`` is still empty count 0. A point outside 0..max_points is an error that names the row."""
    found: dict[tuple[str, str], tuple[float, float]] = {}
    for number, row in enumerate(rows, start=2):
        what = f"{where}, line {number} ({row.get('student')}, {row.get('assignment')}, question {row.get('question')})"
        maximum = _float(row.get("max_points"), f"{what}: max_points")
        text = str(row.get("points") or "").strip()
        points = _float(text, f"{what}: points") if text else 0.0
        if not 0 <= points <= maximum:
            raise ValueError(f"{what}: points: expected a number from 0 to {_number(maximum)}, got {text!r}")
        key = (str(row["student"]), str(row["assignment"]))
        have = found.get(key, (0.0, 0.0))
        found[key] = (have[0] + points, have[1] + maximum)
    return found


def totals_from_rows(
    rows: list[dict[str, Any]], written: dict[tuple[str, str], tuple[float, float]] | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    """``(columns, rows)`` of the totals sheet from the per-exercise rows (as :func:`exercise_rows` gives them, or
    as read back from ``grades.csv``) and, once the teacher has filled the answers sheet, its points
    (:func:`written_points`).

    One row per student: the roster's ``lms_id`` and ``email``; for each assignment of the run its points and
    ``<assignment>_max``, the points possible in it (the required exercises' points from the registry, plus its
    written questions' once they are merged); ``written`` (points of written answers, when merged), ``extra``
    (points earned on optional extensions, included in the assignment's points and the total), ``total``, ``max``
    (the sum of the row's ``_max`` columns: every assignment of the run counts for every student, so one handed
    in late or not at all is 0 of its maximum, never a smaller maximum) and ``note`` (``no submission`` for the
    assignments not handed in).
    """
    assignments = sorted({r["assignment"] for r in rows if r["assignment"] in ASSIGNMENTS})
    written = written or {}
    written_max = {a: max((m for (_, b), (_, m) in written.items() if b == a), default=0.0) for a in assignments}
    table = []
    students = list(dict.fromkeys(r["student"] for r in rows))
    for student in sorted(students, key=str.lower):
        mine = [r for r in rows if r["student"] == student]
        row: dict[str, Any] = {"student": student, **{c: mine[0].get(c, "") for c in ROSTER_COLUMNS}}
        total = maximum = extra = points_written = 0.0
        missing = []
        for a in assignments:
            auto = sum(_float(r["points"], "points") for r in mine if r["assignment"] == a)
            w = written.get((student, a), (0.0, 0.0))[0]
            row[a] = _number(auto + w)
            row[f"{a}_max"] = _number(ASSIGNMENTS[a].max_points + written_max[a])
            total += auto + w
            maximum += ASSIGNMENTS[a].max_points + written_max[a]
            points_written += w
            extra += sum(
                _float(r["points"], "points") for r in mine if r["assignment"] == a and str(r["optional"]) == "1"
            )
            if any(r["assignment"] == a and r["message"] == NO_SUBMISSION for r in mine):
                missing.append(a)
        if written:
            row["written"] = _number(points_written)
        row.update(extra=_number(extra), total=_number(total), max=_number(maximum))
        row["note"] = f"{NO_SUBMISSION}: {', '.join(missing)}" if missing else ""
        table.append(row)
    columns = ["student", *ROSTER_COLUMNS, *(c for a in assignments for c in (a, f"{a}_max"))]
    columns += [*(["written"] if written else []), "extra", "total", "max", "note"]
    return columns, table


def totals_table(
    graded: list[GradedNotebook], roster: list[dict[str, str]] | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    """``(columns, rows)`` of the totals sheet of a grading run (see :func:`totals_from_rows`)."""
    return totals_from_rows(exercise_rows(graded, roster))


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


def answer_rows(
    graded: list[GradedNotebook], templates: str | Path, roster: list[dict[str, str]] | None = None
) -> list[dict[str, Any]]:
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
            **_ids(g.student, roster),
            "assignment": g.assignment,
            "points": "",
            "file_name": g.file_name,
            "sha256": g.sha256,
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
                    for i, (q, a) in enumerate(zip(questions, parts, strict=True), start=1)
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
        required = _number(sum(r["points"] for r in mine if not r["optional"]))
        extra = _number(sum(r["points"] for r in mine if r["optional"]))
        maximum = ASSIGNMENTS[g.assignment].max_points if g.assignment in ASSIGNMENTS else 0
        bonus = f", plus {extra} extra for the optional extension" if extra else ""
        lines += [
            "",
            f"## {g.assignment}: {passed} of {len(g.results)} exercises pass "
            f"({required} of {_number(maximum)} points{bonus})",
            "",
        ]
        if getattr(g, "file_name", ""):
            lines += [f"Graded file: `{g.file_name}`", ""]
        for note in getattr(g, "notes", []):
            lines += [f"*{note}*", ""]
        for result in g.results:
            lines += [f"### {result.exercise}: {'PASS' if result.passed else 'FAIL'}", "", result.summary, ""]
            if not result.passed:
                if result.parts:
                    passed_parts = ", ".join(f"{p} {'PASS' if ok else 'FAIL'}" for p, ok in result.parts.items())
                    lines += [f"Parts (partial credit): {passed_parts}.", ""]
                if result.details:
                    lines += ["```text", result.details, "```", ""]
                if result.hints:
                    lines += [f"**Hint:** {result.hints[0]}", ""]
                for level, hint in enumerate(result.hints[1:], start=2):
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
        written[answers] = write_atomic(answers, csv_text(ANSWER_COLUMNS, answer_rows(graded, templates, roster)))
    for path, text in (extra or {}).items():
        written[Path(path)] = write_atomic(path, text)
    for student in sorted({g.student for g in graded}):
        path = feedback_dir / f"{_file_name(student)}.md"
        written[path] = write_atomic(path, feedback_markdown(student, [g for g in graded if g.student == student]))
    lines = [
        f"{digest}  {_manifest_name(path.resolve(), manifest.resolve().parent)}\n" for path, digest in written.items()
    ]
    written[manifest] = write_atomic(manifest, "".join(lines))
    return written

"""The sheets' rows: one per student and exercise, and the totals, one per student.

:func:`exercise_rows` turns what :mod:`.grade` found into the rows of ``grades.csv`` (:data:`EXERCISE_COLUMNS`):
``points`` is what the row earned (:meth:`~.registry.Exercise.earned`: all the exercise's points for a pass, the
points of the parts passed for a partly right answer, else 0), ``optional`` is 1 for an extension, ``flags`` what
the teacher should look at (a function that calls the library's own reference, code near-identical to another
student's), ``sha256`` the hash of the graded file, ``note`` duplicates not graded, a late file, a name not in the
roster, ``sandbox`` whether its kernel ran in bubblewrap. The roster's ``lms_id`` and ``email`` are carried into
every row, and every student (of the roster, or graded on another assignment of the run) who handed in nothing for
an assignment gets a ``no submission`` row.

:func:`totals_from_rows` sums them per student and assignment (:func:`totals_table` for a grading run), and merges
the points of the written answers once the teacher has filled the answers sheet (:func:`written_points`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from .graded import GradedNotebook
from .registry import ASSIGNMENTS

__all__ = [
    "ROSTER_COLUMNS",
    "NO_SUBMISSION",
    "EXERCISE_COLUMNS",
    "graded_assignments",
    "exercise_rows",
    "written_points",
    "totals_from_rows",
    "totals_table",
    "clean_text",
    "not_a_formula",
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
    "sandbox",  # "bubblewrap", or "NONE (--no-sandbox)": what the kernel could reach
)
SANDBOXED, UNSANDBOXED = "bubblewrap", "NONE (--no-sandbox)"


# what a terminal or an editor would act on rather than show: ANSI escape sequences (colours, cursor moves, window
# titles), C0 and C1 control characters (a carriage return that lets a line overwrite the one shown); and what hides
# or reorders text: every Unicode format character (category Cf: zero-width spaces and joiners, the bidi marks,
# embeddings, overrides and isolates of "Trojan Source", CVE-2021-42574, the BOM, soft hyphens, tag characters), the
# line and paragraph separators, and the Hangul fillers that show as nothing
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?|\x9b[0-?]*[ -/]*[@-~]?")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u115f\u1160\u3164\uffa0]")
_SURROGATES = re.compile("[\ud800-\udfff]")
_SPACES = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")  # spaces of other widths: one space


def _visible(text: str) -> str:
    return "".join(c for c in _CONTROLS.sub("", text) if unicodedata.category(c) != "Cf")


def clean_text(text: str, *, lines: bool = False) -> str:
    """``text`` without control characters, escape sequences and invisible or reordering characters, for a sheet or
    a feedback file: one line (tabs and line breaks become spaces), or with ``lines`` its line breaks kept (a
    carriage return becomes one)."""
    text = _SURROGATES.sub("\ufffd", text)  # a name that is not UTF-8 (Python's surrogate escapes): shown as �
    text = _SPACES.sub(" ", _ESCAPES.sub("", text).replace("\r\n", "\n").replace("\r", "\n"))
    text = _visible(text) if lines else _visible(text.replace("\n", " ").replace("\t", " "))
    return text.replace("\t", "    ") if lines else text


_FORMULA_START = ("=", "+", "-", "@")  # (OWASP's list: also tab and carriage return, which clean_text removes)


def not_a_formula(value: str) -> str:
    """``value`` (a cleaned text), with a leading apostrophe if a spreadsheet could read it as a formula: one that
    starts with ``= + - @`` once spaces are stripped and compatibility forms folded (the full-width ``＝``, which an
    East-Asian spreadsheet takes for ``=``), other than a plain negative number or a lone ``-``."""
    start = unicodedata.normalize("NFKC", value.lstrip()[:1])
    if start in _FORMULA_START and not re.fullmatch(r"-(\d+(\.\d+)?)?", value):
        return "'" + value
    return value


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 4)


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
            "sandbox": UNSANDBOXED if g.unsandboxed else SANDBOXED if g.results else "",
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
                        "sandbox": "",
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
    """``{(student, assignment): (points, max_points)}`` from a filled answers sheet
    (:data:`.written_answers.ANSWER_COLUMNS`); rows whose ``points`` is still empty count 0. A point outside
    0..max_points is an error that names the row."""
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

"""The totals in the CSV formats that Moodle's and Canvas's gradebooks import, one column per assignment.

* **Moodle** (Grades > Import > CSV file): any header names; on import the teacher maps one column to the
  user ("Identify user by": *Email address*, or *ID number*) and each other column to a grade item. The file
  written here has ``Email address``, ``ID number`` (the roster's ``id_number`` column, if any), ``Full name`` and
  one column per assignment named after it (``03_attention``), with the points as plain numbers.
* **Canvas** (Grades > Import): the layout of Canvas's own gradebook export: ``Student``, ``ID`` (Canvas's user
  id, the roster's ``lms_id``), ``SIS User ID``, ``SIS Login ID``, ``Section`` (from the roster's ``sis_id``,
  ``sis_login_id`` and ``section`` columns, if any), then one column per assignment; the second row is
  ``Points Possible`` with each assignment's maximum, as in Canvas's export. Canvas matches rows by ``ID``, and a
  column whose name is not yet an assignment becomes a new one.

Every roster student has a row (0 for an assignment not handed in). A student the LMS could not match (no e-mail
for Moodle, no ``lms_id`` for Canvas) is an error that names them (add them to the roster); the grader, which
must not lose a run over it, leaves them out of the file and names them on stderr instead.
"""

from __future__ import annotations

from typing import Any

from .gradebook import csv_text
from .registry import ASSIGNMENTS

__all__ = ["LMS_FORMATS", "lms_csv", "unmatched"]

LMS_FORMATS = ("moodle", "canvas")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
MOODLE_COLUMNS = ("Email address", "ID number", "Full name")


def unmatched(kind: str, table: list[dict[str, Any]]) -> list[str]:
    """The students of the totals ``table`` that ``kind`` could not match: no e-mail (Moodle), no lms_id (Canvas)."""
    key = "email" if kind == "moodle" else "lms_id"
    return [str(row["student"]) for row in table if not row.get(key)]


def lms_csv(
    kind: str,
    columns: list[str],
    table: list[dict[str, Any]],
    roster: list[dict[str, str]] | None = None,
    *,
    skip_unmatched: bool = False,
) -> str:
    """The totals sheet ``(columns, table)`` (as :func:`~.gradebook.totals_from_rows` gives it) as the CSV text
    that ``kind`` (``"moodle"`` or ``"canvas"``) imports; ``roster`` adds the optional columns it has. A student
    the LMS cannot match (:func:`unmatched`) is an error, or with ``skip_unmatched`` left out."""
    if kind not in LMS_FORMATS:
        raise ValueError(f"lms: expected one of {', '.join(LMS_FORMATS)}, got {kind!r}")
    assignments = [c for c in columns if c in ASSIGNMENTS]
    extra = {r["student"]: r for r in roster or []}
    key, need = ("email", "an e-mail") if kind == "moodle" else ("lms_id", "an lms_id")
    missing = unmatched(kind, table)
    if missing and not skip_unmatched:
        raise ValueError(
            f"lms: {kind} matches students by {key}; the roster gives no {key} for {', '.join(missing)} "
            f"(add {need} for each to the roster's {key!r} column)"
        )
    possible = {a: table[0][f"{a}_max"] for a in assignments} if table else None  # the same for every row
    table = [row for row in table if row["student"] not in missing]
    rows: list[dict[str, Any]] = []
    if kind == "moodle":
        header = [*MOODLE_COLUMNS, *assignments]
        for row in table:
            mine = extra.get(row["student"], {})
            rows.append(
                {
                    "Email address": row["email"],
                    "ID number": mine.get("id_number", ""),
                    "Full name": row["student"],
                    **{a: row[a] for a in assignments},
                }
            )
    else:
        header = [*CANVAS_COLUMNS, *assignments]
        if possible is not None:
            rows.append({"Student": "Points Possible", **possible})
        for row in table:
            mine = extra.get(row["student"], {})
            rows.append(
                {
                    "Student": row["student"],
                    "ID": row["lms_id"],
                    "SIS User ID": mine.get("sis_id", ""),
                    "SIS Login ID": mine.get("sis_login_id", ""),
                    "Section": mine.get("section", ""),
                    **{a: row[a] for a in assignments},
                }
            )
    return csv_text(header, rows)

"""Which file of a class folder is whose, for which assignment, and which one is graded.

Two layouts are read, and may be mixed in one folder:

* one folder per student, each notebook named after its assignment (as in ``book/assignments/``)::

      submissions/alice/03_attention.ipynb
      submissions/bob/03_attention.ipynb

* a flat LMS bulk download, where the LMS puts the student and its own ids in front of the file name:
  ``smithjohn_123_03_attention.ipynb`` (``<student>_<id>_<file>``, Moodle and Canvas), Canvas's
  ``smithjohn_late_123_456_03_attention-1.ipynb`` (a late resubmission: two ids, and ``-1`` added to the
  file name) and Moodle's ``John Smith_4711_assignsubmission_file_03_attention.ipynb``, or its download "in
  folders", ``John Smith_4711_assignsubmission_file_/03_attention.ipynb``.

An optional roster (a CSV with a ``student`` column and an ``lms_id`` and/or ``lms_name`` column) maps the LMS's
ids and names, and student folder names, to the names the sheets show.

**Duplicates.** When one student has several files for one assignment (``03_attention.ipynb`` and
``03_attention (1).ipynb``, or two LMS submissions), the most recently modified file is graded: it holds the
student's last work, whatever the browser or the LMS named it. Equal modification times go to the higher copy
number (``(2)`` after ``(1)``, Canvas's ``-2`` after ``-1``), then to the later name in sort order. The other
files are not graded; the sheet's ``note`` column and the student's feedback list them.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from .registry import ASSIGNMENTS, Assignment

__all__ = ["Submission", "assignment_for", "parse_lms_name", "read_roster", "roster_rows", "collect_submissions"]

_LMS_NAME = re.compile(r"(?P<name>.+?)(?P<late>_late)?_(?P<id>\d+)_(?P<rest>.+)", re.IGNORECASE)
_MOODLE_FOLDER = re.compile(r"(?P<name>.+?)_(?P<id>\d+)_assignsubmission_\w*")
_COPY_NUMBER = re.compile(r"(?: \((\d+)\)|-(\d+))$")  # "03_attention (2)" from a browser, "03_attention-2" from Canvas


@dataclass(frozen=True)
class Submission:
    """One file to grade: whose it is (``student``), which ``assignment`` it is (its id; the file's stem when no
    assignment matches, ``known`` then False), the files it was preferred to (``others``) and ``notes`` for the
    sheet."""

    student: str
    path: Path
    assignment: str
    known: bool
    others: tuple[Path, ...] = ()
    notes: tuple[str, ...] = ()


def _plain_assignment(stem: str) -> Assignment | None:
    """``03_attention``, ``03_attention (1)``, ``03_attention-2`` and the like."""
    if stem in ASSIGNMENTS:
        return ASSIGNMENTS[stem]
    matches = [a for a in ASSIGNMENTS.values() if stem.startswith(a.id)]
    return matches[0] if len(matches) == 1 else None


def parse_lms_name(file_name: str) -> tuple[str, str, bool, Assignment] | None:
    """``(lms_name, lms_id, late, assignment)`` for an LMS bulk-download name such as
    ``smithjohn_123_03_attention.ipynb``; None when the name is not one."""
    m = _LMS_NAME.fullmatch(Path(file_name).stem)
    if m is None:
        return None
    rest = m["rest"].removeprefix("assignsubmission_file_")
    candidates = [rest]
    second_id = re.fullmatch(r"\d+_(.+)", rest)  # Canvas: <name>_<user id>_<submission id>_<file>
    if second_id:
        candidates.append(second_id[1].removeprefix("assignsubmission_file_"))
    for candidate in candidates:
        assignment = _plain_assignment(candidate)
        if assignment is not None:
            return m["name"], m["id"], m["late"] is not None, assignment
    return None


def assignment_for(path: str | Path) -> Assignment | None:
    """The assignment a file name stands for: ``03_attention.ipynb``, ``03_attention (1).ipynb``, or an LMS name
    such as ``smithjohn_123_03_attention.ipynb``; None when none matches."""
    path = Path(path)
    plain = _plain_assignment(path.stem)
    if plain is not None:
        return plain
    lms = parse_lms_name(path.name)
    return lms[3] if lms else None


def roster_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows of a roster CSV, each a dict of its (stripped) cells, in file order.

    The header has ``student`` and at least one of ``lms_id`` and ``lms_name``; other columns (``email``,
    ``sis_id``, ``section``, ...) are kept, and the sheets carry ``lms_id`` and ``email`` (see
    :mod:`.gradebook`). A row without a student name is an error.
    """
    path = Path(path)
    with open(path, newline="", encoding="utf-8-sig") as f:  # utf-8-sig: spreadsheets often write a BOM
        reader = csv.DictReader(f)
        columns = [c.strip() for c in reader.fieldnames or []]
        if "student" not in columns or not {"lms_id", "lms_name"} & set(columns):
            raise ValueError(
                f"roster: expected a CSV whose header has 'student' and 'lms_id' and/or 'lms_name', "
                f"got the columns {columns} in {path}"
            )
        rows = []
        for number, row in enumerate(reader, start=2):
            cells = {k.strip(): (v or "").strip() for k, v in row.items() if isinstance(k, str) and k}
            if not cells.get("student"):
                raise ValueError(f"roster: line {number} of {path} has no student name")
            rows.append(cells)
    return rows


def read_roster(path: str | Path) -> dict[str, str]:
    """A roster CSV as a lookup table: every LMS id and LMS name (lower case) -> the student's name.

    The CSV has a header with ``student`` and at least one of ``lms_id`` and ``lms_name``; empty cells are
    skipped. One id or name given to two students is an error.
    """
    table: dict[str, str] = {}
    for number, row in enumerate(roster_rows(path), start=2):
        student = row["student"]
        for key in (row.get("lms_id", ""), row.get("lms_name", "").lower()):
            if key and table.setdefault(key, student) != student:
                raise ValueError(
                    f"roster: {key!r} on line {number} of {path} maps to both {table[key]!r} and {student!r}"
                )
    return table


def _copy_number(path: Path) -> int:
    m = _COPY_NUMBER.search(path.stem)
    return int(m[1] or m[2]) if m else 0


def _newest_first(paths: list[Path]) -> list[Path]:
    """The rule for duplicates (see the module's docstring): the graded file first."""
    return sorted(paths, key=lambda p: (p.stat().st_mtime_ns, _copy_number(p), p.name), reverse=True)


def collect_submissions(folder: str | Path, roster: dict[str, str] | None = None) -> list[Submission]:
    """Every notebook under ``folder`` (``<student>/*.ipynb`` and LMS-named ``*.ipynb``), one per student and
    assignment (the rule for duplicates is in the module's docstring), sorted by student and file name.
    Checkpoints and hidden folders are skipped."""
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"submissions: expected a folder of student folders or LMS files, got {folder}")
    groups: dict[tuple[str, str, bool], list[tuple[Path, tuple[str, ...]]]] = {}
    for path in sorted(folder.glob("*/*.ipynb")) + sorted(folder.glob("*.ipynb")):
        if path.name.startswith("._") or path.parent != folder and path.parent.name.startswith((".", "__MACOSX")):
            continue  # checkpoints, and the resource forks that a zip made on macOS carries
        notes: list[str] = []
        if path.parent != folder:  # <student>/<assignment>.ipynb
            name, key, assignment = path.parent.name, path.parent.name.lower(), assignment_for(path)
            moodle = _MOODLE_FOLDER.fullmatch(name)
            if moodle:
                name = moodle["name"]
                key = moodle["id"] if roster and moodle["id"] in roster else name.lower()
        else:
            lms = parse_lms_name(path.name)
            if lms is None:
                name, key, assignment = path.stem, "", None
                notes.append(
                    "The file name is neither <student>/<assignment>.ipynb nor an LMS name "
                    "<student>_<id>_<assignment>.ipynb."
                )
            else:
                name, lms_id, late, assignment = lms
                key = lms_id if roster and lms_id in roster else name.lower()
                if late:
                    notes.append("Late, according to the LMS file name.")
        student = name
        if roster is not None:
            if key in roster:
                student = roster[key]
            else:
                notes.append(f"{name!r} is not in the roster.")
        aid = assignment.id if assignment else path.stem
        groups.setdefault((student, aid, assignment is not None), []).append((path, tuple(notes)))

    found = []
    for (student, aid, known), entries in groups.items():
        if not known:  # every unknown file stays on its own row
            found += [Submission(student, path, aid, False, (), notes) for path, notes in entries]
            continue
        paths = _newest_first([path for path, _ in entries])
        kept = dict(entries)[paths[0]]
        if len(paths) > 1:
            kept += (
                f"Graded {paths[0].name}, the most recently modified of {len(paths)} files for {aid}; not "
                f"graded: {', '.join(p.name for p in paths[1:])}.",
            )
        found.append(Submission(student, paths[0], aid, True, tuple(paths[1:]), kept))
    return sorted(found, key=lambda s: (s.student.lower(), s.path.name))

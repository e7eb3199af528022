"""Copying between students: pairs of submissions whose solution code is near-identical, for the teacher to judge.

For each exercise the solution code of a submission is the source of the functions and classes the exercise
grades (their last top-level definition in the notebook) and of every helper they reach, transitively: defined in
the notebook, or in a Python file of the submission that the notebook imports (a ``.py`` beside the notebook in the
student's own folder, or one the notebook writes with ``%%writefile``), with the helpers inlined where they are
called and independent statements put in one order (:mod:`.solution_code`), so a classmate's body moved into one
helper or several, or into a file, or with independent lines swapped, reads as the body it was. The other
exercises' graded definitions are not followed (each is compared on its own).
`copydetect <https://pypi.org/project/copydetect/>`_
(the winnowing algorithm of Schleimer, Wilkerson and Aiken, SIGMOD 2003, as MOSS uses it) tokenizes it with
Pygments, replaces every variable, function and class name by one letter and every string by another (so renaming
variables or rewording strings changes nothing), and keeps fingerprints of its k-grams. The handed-out starter
code (signature, docstring, stub) is *boilerplate*: its fingerprints are removed, so two untouched or barely
started notebooks never look alike (and an exercise whose check found the stub still in place is not compared).
The score of a pair is the smaller of the two shares of each one's remaining code found in the other (1.0: each
is wholly contained in the other); a pair at or above ``threshold`` is written to ``similarity.csv`` and flagged
on both students' rows. Short exercises have few ways to be written, so
a flag is a reason to look, never a verdict: the teacher decides.
"""

from __future__ import annotations

import io
import itertools
from pathlib import Path
from typing import Any

from ..optional import require
from .graded import GradedNotebook
from .registry import ASSIGNMENTS
from .solution_code import solution_code

__all__ = ["SIMILARITY_COLUMNS", "DEFAULT_THRESHOLD", "solution_code", "similar_pairs", "flag_similar"]

SIMILARITY_COLUMNS = ("student_a", "student_b", "assignment", "exercise", "score")
DEFAULT_THRESHOLD = 0.8  # share of each solution found in the other; a renamed copy scores 1.0
NOISE = 25  # copydetect's defaults: k-grams of 25 filtered characters, every one kept (window 1)
GUARANTEE = 25


def _code_cells(path: Path) -> list[str]:
    import nbformat

    try:
        cells = nbformat.read(path, as_version=4).get("cells", [])
    except Exception:  # not a notebook: its exercise rows say why
        return []
    sources = []
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            if "check" not in tags:
                source = cell.get("source", "")
                sources.append("".join(source) if isinstance(source, list) else str(source))
    return sources


def _own_files(g: GradedNotebook) -> dict[str, str]:
    """The Python files beside a student's notebook in their own folder (not in an LMS download's shared one)."""
    folder = Path(g.path).parent
    if folder.name != g.student:
        return {}
    files = {}
    for path in sorted(folder.glob("*.py"))[:50]:
        try:
            if path.is_file() and path.stat().st_size <= 200_000:
                files[path.stem] = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    return files


def _copydetect() -> Any:
    """The copydetect module, imported when first used (it is heavy: matplotlib), or an error naming the extra."""
    return require("copydetect", extra="classroom", purpose="comparing solutions (tl-grade's similarity check)")


def _fingerprint(code: str, boilerplate: Any = None) -> Any:
    return _copydetect().CodeFingerprint(
        "solution.py", NOISE, GUARANTEE - NOISE + 1, boilerplate=boilerplate, language="python", fp=io.StringIO(code)
    )


def similar_pairs(
    graded: list[GradedNotebook], templates: str | Path | None, threshold: float = DEFAULT_THRESHOLD
) -> list[dict[str, Any]]:
    """Pairs of students whose solution code of one exercise scores ``threshold`` or more (see the module's
    docstring), as rows of :data:`SIMILARITY_COLUMNS`, most similar first. ``templates`` is the folder of the
    notebooks handed out (their code is the starter code, left out of the comparison)."""
    compare_files = _copydetect().compare_files
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"threshold: expected a number in (0, 1], got {threshold!r}")
    rows = []
    for aid in sorted({g.assignment for g in graded if g.assignment in ASSIGNMENTS}):
        mine = sorted((g for g in graded if g.assignment == aid and g.results), key=lambda g: g.student)
        template = Path(templates) / f"{aid}.ipynb" if templates is not None else None
        starter_cells = _code_cells(template) if template is not None and template.exists() else []
        cells = {g.student: g.code or _code_cells(Path(g.path)) for g in mine}
        files = {g.student: _own_files(g) for g in mine}
        graded_names = {n for ex in ASSIGNMENTS[aid].exercises for n in ex.names}
        for ex in ASSIGNMENTS[aid].exercises:
            starter = solution_code(starter_cells, ex.names)
            boilerplate = list(_fingerprint(starter).hashes) if starter else None
            prints = {}
            for g in mine:
                if any(r.exercise == ex.name and r.not_implemented for r in g.results):
                    continue  # the stub handed out: nothing of the student's to compare
                code = solution_code(cells[g.student], ex.names, files[g.student], skip=graded_names)
                if code:
                    fp = _fingerprint(code, boilerplate)
                    if fp.token_coverage > 0:  # something beyond the starter code
                        prints[g.student] = fp
            for a, b in itertools.combinations(sorted(prints), 2):
                _, (share_a, share_b), _ = compare_files(prints[a], prints[b])
                score = float(min(share_a, share_b))
                if score >= threshold:
                    rows.append(
                        {
                            "student_a": a,
                            "student_b": b,
                            "assignment": aid,
                            "exercise": ex.name,
                            "score": round(score, 3),
                        }
                    )
    return sorted(rows, key=lambda r: (-r["score"], r["assignment"], r["exercise"], r["student_a"], r["student_b"]))


def flag_similar(graded: list[GradedNotebook], pairs: list[dict[str, Any]]) -> None:
    """Add a flag to the exercise's result of both students of each pair (what the sheet's ``flags`` shows)."""
    for pair in pairs:
        for me, other in ((pair["student_a"], pair["student_b"]), (pair["student_b"], pair["student_a"])):
            for g in graded:
                if g.student == me and g.assignment == pair["assignment"]:
                    for r in g.results:
                        if r.exercise == pair["exercise"]:
                            r.flags.append(
                                f"code near-identical to {other}'s (similarity {pair['score']:.2f}, "
                                "similarity.csv): the teacher decides"
                            )

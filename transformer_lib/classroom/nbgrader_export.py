"""The assignments as an nbgrader course folder, for teachers who grade with nbgrader.

    python -m transformer_lib.classroom.assignments --nbgrader COURSE_DIR [--solutions PRIVATE_DIR]

writes ``COURSE_DIR/nbgrader_config.py`` and ``COURSE_DIR/source/<id>/<id>.ipynb`` for every solution notebook.
Then, in ``COURSE_DIR``, ``nbgrader generate_assignment <id>`` makes the students' version (``release/``) and
``nbgrader autograde <id>`` grades what was collected into ``submitted/<student>/<id>/``.

nbgrader reads roles from each cell's ``metadata.nbgrader`` (schema version 3), which the export adds:

* a code cell with ``### BEGIN SOLUTION`` markers is a *solution* cell (nbgrader replaces the marked block with
  its stub, ``raise NotImplementedError()``, which our checks report as "not implemented yet");
* each exercise's check cell is an *autograded test* (``grade``, ``points`` from
  :data:`~transformer_lib.classroom.assignments.ASSIGNMENTS`, ``grade_id`` ``test_<exercise>``). nbgrader gives
  a test cell its points unless its output holds an error or anything on stderr, and reads a number as a partial
  score. The export's ``nbgrader_config.py`` has ``autograde`` grade with tl-grade's engine in place of running the
  notebook (:mod:`~transformer_lib.classroom.nbgrader_grade`): the check cells never run there, and their outputs
  are written from tl-grade's verdicts. The cells still work when the notebook is run (by a student, by
  ``nbgrader validate``, or by nbgrader's own ``Execute`` if the config is changed): each prints the check's result
  and raises ``AssertionError`` when the check failed, or ends with the points its passed parts earn. nbgrader has
  no automatic extra credit: an optional extension's test is worth 0 points there (it shows PASS or FAIL; add extra
  credit by hand in formgrader);
* the markdown cell tagged ``answer`` (the written questions) is a *manually graded answer*, one point per
  question, as in the gradebook's answers sheet;
* the instructions (markdown) and the set-up cell are *locked* (nbgrader restores them before grading); the
  "Try it" and exploration cells stay free. Teacher-only cells (tag ``solution-only``) are left out.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

from .registry import ANSWER_HERE, BEGIN, END, get_assignment

__all__ = ["nbgrader_notebook", "export_course", "grade_id_of", "CONFIG", "GRADER", "SANDBOXED"]

GRADER = "transformer_lib.classroom.nbgrader_grade.GradeInSandbox"  # nbgrader's Execute step, replaced

SANDBOXED = (
    "nbgrader autograde grades with tl-grade's engine here (nbgrader_config.py replaces nbgrader's Execute step by "
    f"{GRADER}): each submission runs in tl-grade's bubblewrap sandbox with its limits, never in a kernel of yours, "
    "and its points are the verdicts replayed in the grader's process, so a wrong answer that patches its check gets "
    "the same points and flag as with tl-grade. Keep that line in nbgrader_config.py: nbgrader's own Execute runs "
    "every student's code with YOUR rights and takes the score from the student's own kernel. nbgrader validate "
    "(and the students' own runs) still execute the notebook as whoever runs it."
)


def grade_id_of(exercise: str) -> str:
    """The ``grade_id`` of ``exercise``'s autograded test cell."""
    return _grade_id(f"test_{exercise}")


def _grade_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)


CONFIG = f"""# nbgrader's configuration for the course that the book's assignments exported
# (python -m transformer_lib.classroom.assignments --nbgrader)
#
{textwrap.fill(SANDBOXED, 116, initial_indent="# ", subsequent_indent="# ")}
#
c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = "attention-by-running-it"
# The stubs that replace the marked solutions: the same words as the book's own student notebooks.
c.ClearSolutions.text_stub = {ANSWER_HERE!r}
# autograde: tl-grade's engine in place of nbgrader's Execute (the other steps are nbgrader's defaults)
c.Autograde.autograde_preprocessors = [
    {GRADER!r},
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# tl-grade's limits, by default its command line's (`tl-grade --help`); e.g. seconds per cell, the kernel's heap in MB:
# c.GradeInSandbox.cell_timeout = 60
# c.GradeInSandbox.memory_mb = 2048
"""

_CHECK_CALL = re.compile(r"checks\.(check_\w+)\(")


def _meta(
    grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False, points: float | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "schema_version": 3,
        "grade": grade,
        "solution": solution,
        "locked": locked,
        "grade_id": _grade_id(grade_id),
    }
    if grade:
        meta["points"] = points
    return meta


def _raising_check(source: str, check: str, parts: tuple[tuple[str, float], ...] = ()) -> str:
    """The check cell, rewritten to raise when the check fails (nbgrader scores a test cell by its errors).

    With ``parts`` (partial credit), a check that fails but passes some parts ends with the points those parts earn
    as the cell's value: nbgrader reads a test cell's numeric result as its partial score (``determine_grade``),
    so nbgrader gives the same points as :meth:`~.registry.Exercise.earned`. No part passed still raises."""
    call = next(line for line in source.splitlines() if f"checks.{check}(" in line)
    if not parts:
        return f'{call}\nprint(result)\nassert result.passed, f"{{result.exercise}}: {{result.summary}}"'
    table = ", ".join(f"{part!r}: {points!r}" for part, points in parts)
    return (
        f"{call}\nprint(result)\n"
        "# partial credit: nbgrader takes this cell's value as its score (the points of the parts passed)\n"
        f"_parts = {{{table}}}\n"
        "_earned = sum(_parts.values()) if result.passed else sum(\n"
        "    points for part, points in _parts.items() if result.parts.get(part) is True\n)\n"
        'assert _earned > 0, f"{result.exercise}: {result.summary}"\n'
        "_earned"
    )


def nbgrader_notebook(solution: Any, assignment_id: str) -> Any:
    """The nbgrader source version of a solution notebook (an ``nbformat.NotebookNode``; the input is unchanged)."""
    import nbformat

    assignment = get_assignment(assignment_id)
    nb = nbformat.from_dict(solution)  # a deep copy
    cells, setup_done = [], False
    for i, cell in enumerate(nb.cells):
        tags = cell.metadata.get("tags", [])
        if "solution-only" in tags:
            continue
        name = str(cell.get("id") or i)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            calls = _CHECK_CALL.findall(cell.source)
            exercise = next((ex for ex in assignment.exercises if ex.check in calls), None)
            if BEGIN in cell.source:
                match = next(
                    (
                        ex
                        for ex in assignment.exercises
                        if re.search(rf"^(def|class) {ex.names[0]}\b", cell.source, re.M)
                    ),
                    None,
                )
                cell.metadata["nbgrader"] = _meta(f"solution_{match.name if match else name}", solution=True)
            elif "check" in tags and exercise is not None:
                cell.source = _raising_check(cell.source, exercise.check, () if exercise.extension else exercise.parts)
                cell.metadata["nbgrader"] = _meta(
                    grade_id_of(exercise.name),
                    grade=True,
                    locked=True,
                    points=0 if exercise.extension else exercise.points,
                )
            elif "check" in tags or not setup_done:  # check_assignment's summary; the imports
                cell.metadata["nbgrader"] = _meta(f"locked_{name}", locked=True)
            setup_done = True
        elif cell.cell_type == "markdown":
            if "answer" in tags:
                if BEGIN not in cell.source or END not in cell.source:
                    raise ValueError(
                        f"solution: the answer cell {name} of {assignment_id} has no {BEGIN} ... {END} block"
                    )
                n_questions = len(re.findall(r"^\d+\.\s", cell.source.split(BEGIN)[0], re.M)) or 1
                cell.metadata["nbgrader"] = _meta("written_answers", grade=True, solution=True, points=n_questions)
            else:
                cell.metadata["nbgrader"] = _meta(f"locked_{name}", locked=True)
        cells.append(cell)
    nb.cells = cells
    return nb


def export_course(dest: str | Path, solutions: str | Path) -> list[Path]:
    """Write an nbgrader course folder to ``dest`` from the solution notebooks ``solutions/NN_name.ipynb``;
    returns the source notebooks written. ``dest`` must be new or empty."""
    import nbformat

    dest, solutions = Path(dest), Path(solutions)
    sources = sorted(solutions.glob("[0-9][0-9]_*.ipynb"))
    if not sources:
        raise FileNotFoundError(f"solutions: no solution notebooks NN_name.ipynb in {solutions}")
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"dest: expected a new or empty folder, got {dest}")
    written = []
    for src in sources:
        nb = nbgrader_notebook(nbformat.read(src, as_version=4), src.stem)
        path = dest / "source" / src.stem / src.name
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, path)
        written.append(path)
    (dest / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    return written

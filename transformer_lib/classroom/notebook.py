"""Grading one notebook (:func:`grade_notebook`): read it, flag what its source does, run it in a sandboxed kernel
until each exercise has a verdict (:class:`~.runs.NotebookRun`), and gather the verdicts in a
:class:`~.graded.GradedNotebook`.

A notebook that cannot be read, whose code is too long (:data:`~.source.MAX_CODE_CHARS`) or whose file name names no
assignment gets failed rows that say why, and no kernel is started for it.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

from . import integrity, source
from .checks import DEFAULT_TIME_LIMIT, RESULT_MARKER
from .checks.hidden import hand_in
from .graded import GradedNotebook
from .kernels import GRACE
from .registry import ASSIGNMENTS, Assignment, Exercise
from .runs import NOTEBOOK_TIMEOUT, SLACK, NotebookRun, check_timeout, failed
from .sandbox import UNSANDBOXED_NOTE, LibraryCopy, Limits, require_bwrap
from .stubs import REMOVED_ERROR, stubs_for
from .submissions import assignment_for

__all__ = ["grade_notebook", "not_graded"]


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


def not_graded(graded: GradedNotebook, exercises: tuple[Exercise, ...], problem: str, summary: str, hint: str) -> None:
    """Fail every exercise of ``graded`` with ``summary`` and ``hint``, and add ``problem`` to its problems."""
    graded.problems.append(problem)
    graded.results = [failed(ex, summary, hint, "NotebookError") for ex in exercises]


def _check_seconds(name: str, value: float, least: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= least:
        raise ValueError(f"{name}: expected a number of seconds >= {least}, got {value!r}")


def _readable_code(path: Path, assignment: Assignment, graded: GradedNotebook) -> list[tuple[int, str]] | None:
    """The notebook's code cells (see :func:`_code_cells`), or None after failing ``graded``'s exercises with the
    reason: the file cannot be read as a notebook, or its code is too long to be an answer."""
    code, why = _code_cells(path)
    if code is None:
        not_graded(
            graded,
            assignment.exercises,
            f"The notebook could not be read ({why}).",
            "The notebook could not be read: it is not a valid .ipynb file.",
            "Save the notebook from Jupyter (File > Save) and submit the .ipynb file itself, not a copy edited by "
            "hand or renamed from another format.",
        )
        return None
    if why := source.too_long(src for _, src in code):
        not_graded(
            graded,
            assignment.exercises,
            f"The notebook was not run: {why}.",
            "The notebook was not run: its code is far longer than the assignment needs.",
            "Submit the assignment's notebook with your solution, without generated or pasted bulk code.",
        )
        return None
    return code


def _gather(graded: GradedNotebook, notebook: NotebookRun, flags: dict[str, list[str]]) -> None:
    """Copy the run's verdicts (a failed row for an exercise it did not reach), its flags, notes and problems into
    ``graded``."""
    graded.notes += notebook.limit_notes + ([UNSANDBOXED_NOTE] if graded.unsandboxed else [])
    if notebook.stopped_at_deadline:  # in the row's note too, whether or not its exercises were graded by then
        graded.notes.append(notebook.deadline_note())
    if notebook.failure:  # a kernel that could not start: the teacher must see why every exercise failed
        graded.notes.append(notebook.failure)
    for ex in notebook.assignment.exercises:
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
        called = _removed_call(result.summary) if result.error == REMOVED_ERROR else ""
        if called and not any(called.rsplit(".", 1)[-1] in f for f in result.flags):  # unless the source showed it
            result.flags.append(
                f"calls {called}, which the grader's kernel leaves out while {notebook.assignment.id} is graded "
                "(a stub raised): the teacher decides"
            )
        graded.results.append(result)
    graded.problems = [notebook.errors[n] for n in sorted(notebook.errors)] + notebook.notes


def _random_cases(assignment: Assignment, seed: int | None) -> dict[str, str]:
    """Each exercise's random cases, drawn in this process from ``seed`` (None: a fresh secret one), as the kernel is
    handed them: inputs only, never the seed."""
    seed = secrets.randbits(256) if seed is None else seed
    return {ex.name: hand_in(ex.check, seed) for ex in assignment.exercises}


def _removed_call(summary: str) -> str:
    """What a check's summary says the student's code called that is a stub in the kernel
    ("attention raised ReferenceRemoved: torch.nn.functional.scaled_dot_product_attention is not available ...")."""
    _, _, said = summary.partition(f"{REMOVED_ERROR}: ")
    return said.split(" is not available")[0] if " is not available" in said else ""


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
    seed: int | None = None,
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

    Each check's random cases are drawn here from ``seed`` (by default a new one from :mod:`secrets` for every call,
    kept in this process): the kernel is handed the inputs only (:mod:`.checks.hidden`), so a notebook cannot know
    them before its check runs.
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
    code = _readable_code(path, assignment, graded)
    if code is None:
        return graded
    cells = source.read_cells(src for _, src in code)
    graded.code = [c.python for c in cells]  # what the kernel runs: similarity compares it
    flags = integrity.flags(cells, {ex.name: ex.names for ex in assignment.exercises})
    if not unsandboxed:
        require_bwrap()  # SandboxUnavailable says why and what to do
    own_library = library is None
    library = library or LibraryCopy(stubs=stubs_for(assignment.id))
    limit = cell_timeout * len(code) + check_timeout(cell_timeout, time_limit) * len(assignment.exercises) + SLACK
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
        cases=_random_cases(assignment, seed),
    )
    try:
        notebook.run()
    finally:
        if own_library:
            library.cleanup()
    _gather(graded, notebook, flags)
    graded.seconds = time.monotonic() - started
    return graded

"""nbgrader's autograde step, done by tl-grade's engine: :class:`GradeInSandbox`.

``nbgrader autograde`` restores the teacher's locked and test cells in each submission, then runs its
``Autograde.autograde_preprocessors``; by default the first of them, ``Execute``, runs the whole notebook in a kernel
of the teacher's, and ``SaveAutoGrades`` reads each test cell's score from what the cell shows (an error: 0; a number:
that partial score; anything else: full marks). A student's code runs first in that kernel, as the teacher, and can
patch the check its test cell calls. The export's ``nbgrader_config.py``
(:mod:`~transformer_lib.classroom.nbgrader_export`) puts :class:`GradeInSandbox` in ``Execute``'s place: it grades
the restored notebook as ``tl-grade`` grades it (:func:`~.cluster.grade_task`: bubblewrap, the same limits, the
checks' random cases from a seed of this process, the verdicts replayed here, the flags), then writes into each
autograded test cell the output from which nbgrader reads tl-grade's points (:func:`cell_outputs`), with the verdict,
the flags and the notebook's notes shown for the teacher. The check cells themselves never run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..optional import require
from .checks import DEFAULT_TIME_LIMIT
from .cluster import grade_task
from .graded import GradedNotebook
from .nbgrader_export import grade_id_of
from .registry import ASSIGNMENTS
from .runs import NOTEBOOK_TIMEOUT
from .sandbox import Limits

__all__ = ["cell_outputs"]  # and GradeInSandbox, defined when first asked for (__getattr__)


def _stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text if text.endswith("\n") else text + "\n"}


def cell_outputs(graded: GradedNotebook) -> dict[str, list[dict[str, Any]]]:
    """The outputs to give each autograded test cell (by ``grade_id``) so that nbgrader's ``determine_grade`` reads
    the points tl-grade gives (:meth:`~.registry.Exercise.earned`): the verdict and the flags on stdout, then nothing
    more for all the points (nbgrader: full marks), the points as the cell's value for part of them (a partial
    score), an error for none. An optional extension is worth 0 points in nbgrader: an error when it fails. The
    notebook's notes and problems go on its first test cell. Never anything on stderr (nbgrader: 0 points)."""
    assignment = ASSIGNMENTS.get(graded.assignment)
    about = [*graded.notes, *graded.problems]
    notes = [_stream("notes: " + "; ".join(about))] if about else []
    if assignment is None:  # not an assignment's notebook: every test fails, and says why
        return {}
    results = {r.exercise: r for r in graded.results}
    outputs: dict[str, list[dict[str, Any]]] = {}
    for ex in assignment.exercises:
        result = results.get(ex.name)
        shown = [_stream(str(result) if result is not None else f"FAIL: {ex.name} was not graded")]
        flags = [*(result.flags if result is not None else []), *graded.flags]
        if flags:
            shown.append(_stream("flags (for the teacher): " + "; ".join(flags)))
        earned = 0.0 if result is None else ex.earned(result)
        if result is not None and result.passed:
            pass  # nothing but stdout: all the points
        elif earned > 0 and not ex.extension:
            shown.append(
                {
                    "output_type": "execute_result",
                    "execution_count": None,
                    "metadata": {},
                    "data": {"text/plain": repr(float(earned))},
                }
            )
        else:
            summary = result.summary if result is not None else "not graded"
            shown.append(
                {"output_type": "error", "ename": "CheckFailed", "evalue": f"{ex.name}: {summary}", "traceback": []}
            )
        outputs[grade_id_of(ex.name)] = (notes if not outputs else []) + shown
    return outputs


def _is_test(cell: Any) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(cell.get("cell_type") == "code" and meta.get("grade") and not meta.get("solution"))


def _define() -> type:
    """:class:`GradeInSandbox`, defined when first asked for (the module's ``__getattr__``): its base class is
    nbgrader's, which only the ``[classroom]`` extra installs, and this module must import without it (as every module
    of the library does: ``tests/test_extras.py``)."""
    preprocessors = require(
        "nbgrader.preprocessors", extra="classroom", purpose="grading through nbgrader (GradeInSandbox)"
    )
    from traitlets import Bool, Float, Integer, Unicode

    base: Any = preprocessors.NbGraderPreprocessor

    class GradeInSandbox(base):
        """nbgrader's execution step replaced by tl-grade's (the module's docstring): configured in
        ``nbgrader_config.py`` as ``c.GradeInSandbox.<trait>``."""

        cell_timeout = Float(60.0, help="time limit per notebook cell, seconds (tl-grade --timeout)").tag(config=True)
        check_time_limit = Float(
            DEFAULT_TIME_LIMIT, help="time limit per call of a student's function in a check (--check-time-limit)"
        ).tag(config=True)
        notebook_timeout = Float(NOTEBOOK_TIMEOUT, help="time limit per notebook (--notebook-timeout)").tag(config=True)
        kernel_name = Unicode("python3", help="the Jupyter kernel (--kernel)").tag(config=True)
        memory_mb = Integer(Limits().memory_mb, help="the kernel's heap, MB (--memory-mb)").tag(config=True)
        processes = Integer(Limits().processes, help="the kernel's processes and threads (--processes)").tag(
            config=True
        )
        file_mb = Integer(Limits().file_mb, help="MB per file written and per private folder (--file-mb)").tag(
            config=True
        )
        cpu_seconds = Integer(Limits().cpu_seconds, help="CPU seconds per process (--cpu-seconds)").tag(config=True)
        output_mb = Integer(Limits().output_mb, help="MB printed by the notebook's cells (--output-mb)").tag(
            config=True
        )
        unsandboxed = Bool(
            False,
            help="grade without bubblewrap (tl-grade --no-sandbox): each kernel can then read and write what you can; "
            "every test cell's notes say so",
        ).tag(config=True)

        def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
            """Grade ``nb`` (the submission as nbgrader restored it) with tl-grade's engine and write each autograded
            test cell's outputs (:func:`cell_outputs`); no cell of ``nb`` runs."""
            import nbformat

            info = resources["nbgrader"]
            copy = nbformat.from_dict(nb)
            for (
                cell
            ) in copy.cells:  # the test cells are the teacher's (nbgrader restored them): never run as the student's
                if _is_test(cell):
                    cell.setdefault("metadata", {}).setdefault("tags", [])
                    if "check" not in cell.metadata.tags:
                        cell.metadata.tags.append("check")
            options = {
                "cell_timeout": self.cell_timeout,
                "time_limit": self.check_time_limit,
                "notebook_timeout": self.notebook_timeout,
                "kernel_name": self.kernel_name,
                "limits": Limits(self.memory_mb, self.processes, self.file_mb, self.cpu_seconds, self.output_mb),
                "unsandboxed": self.unsandboxed,
            }
            name = f"{Path(str(info['notebook'])).name}.ipynb"
            graded = grade_task(str(info["student"]), name, nbformat.writes(copy).encode("utf-8"), options).notebook
            outputs = cell_outputs(graded)
            why = "; ".join(graded.problems + graded.notes) or "not graded"
            for cell in nb.cells:
                if _is_test(cell):
                    grade_id = str(cell.metadata.nbgrader.get("grade_id", ""))
                    cell.outputs = [
                        nbformat.from_dict(o)
                        for o in outputs.get(
                            grade_id,
                            [{"output_type": "error", "ename": "NotGraded", "evalue": why, "traceback": []}],
                        )
                    ]
                    cell.execution_count = None
            self.log.info("tl-grade: %s of %s graded in the sandbox", name, info["student"])
            return nb, resources

    return GradeInSandbox


_defined: dict[str, type] = {}


def __getattr__(name: str) -> type:
    """``GradeInSandbox``, the class nbgrader's configuration names (``c.Autograde.autograde_preprocessors``)."""
    if name != "GradeInSandbox":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name not in _defined:
        _defined[name] = _define()
    return _defined[name]

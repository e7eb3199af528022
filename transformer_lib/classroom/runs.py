"""Running one notebook until each exercise has a verdict: the student's cells and one injected check cell per
exercise, in a fresh sandboxed kernel, then again in another for what is left (:class:`NotebookRun`).

The injected cell runs the exercise's check in record mode and prints the recording after a marker with a random
nonce; :func:`verdict` reads exactly one such line and replays the check here, in the grader. A kernel that stops
early (a cell that hung or killed it) is followed by a fresh one that runs only the cells up to the definitions still
to grade, without the bad cells; a notebook's deadline (``--notebook-timeout``) ends it all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .checks import RESULT_MARKER, CheckResult
from .checks.core import WALL_LIMIT_FACTOR
from .checks.record import RecordingError, replay_exercise
from .client_process import run_bounded
from .kernels import SETUP_KEY, CellRun, error_of
from .registry import Assignment, Exercise
from .sandbox import LibraryCopy, Limits, Sandbox
from .stubs import REMOVED_ERROR

__all__ = ["NotebookRun", "failed", "verdict", "read_recording", "SLACK", "NOTEBOOK_TIMEOUT"]

SLACK = 120  # seconds per notebook on top of its cells' time limits: starting kernels, importing the library
NOTEBOOK_TIMEOUT = 900  # seconds a notebook may take in all (a solution takes under 60 on 2 busy cores)
_SETUP = "import transformer_lib.classroom.checks.record  # loaded before the student's cells are timed"


def _record_cell(ex: Exercise, nonce: str, time_limit: float, cases: str | None = None) -> Any:
    """The injected cell: runs the check in record mode on the random cases handed in (``cases``, data drawn in the
    grader; never the seed) and prints the recording after the marker."""
    import nbformat

    return nbformat.v4.new_code_cell(
        "from transformer_lib.classroom.checks.record import record_exercise as _tl_record\n"
        f"print({RESULT_MARKER + nonce!r} + _tl_record({ex.check!r}, globals(), {list(ex.names)!r}, "
        f"time_limit={time_limit!r}, cases={cases!r}))"
    )


def _stdout(cell: Any) -> str:
    return "".join(
        o.get("text", "")
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream" and o.get("name") == "stdout"
    )


def read_recording(cell: Any, marker: str) -> tuple[str | None, str]:
    """The recording an injected cell printed, or None and why not. Exactly one line must carry the marker: a
    second one means the student's code printed an imitation, and nothing from that cell is trusted."""
    lines = [line[len(marker) :] for line in _stdout(cell).splitlines() if line.startswith(marker)]
    if len(lines) == 1:
        return lines[0], ""
    return None, "no recording" if not lines else "more than one recording (an imitation printed by the notebook)"


def failed(ex: Exercise, summary: str, hint: str, error: str) -> CheckResult:
    """A failed result of ``ex`` that says why (``summary``) and what to do (``hint``)."""
    return CheckResult(ex.name, False, summary, "", (hint,), error)


def verdict(ex: Exercise, cell: Any, marker: str, time_limit: float, cases: str | None = None) -> CheckResult:
    """The result of ``ex``, computed here by replaying the check on the recording the kernel printed, with the
    random cases the kernel was handed (``cases``)."""
    text, why = read_recording(cell, marker)
    if text is None:
        error = error_of(cell)
        return failed(
            ex,
            "The check did not finish (a time-out, or the kernel stopped)."
            if not error and why == "no recording"
            else f"The grader could not read the check's result: {error or why}.",
            "Make sure the notebook runs from top to bottom (Kernel > Restart & Run All) in reasonable "
            "time, and that it does not print lines that imitate the grader's.",
            "GraderError",
        )
    try:
        return replay_exercise(ex.check, ex.names, text, time_limit, cases)
    except RecordingError as e:
        return failed(
            ex,
            f"The kernel's recording of the check could not be read: {e}.",
            "Run the notebook as handed out: do not change the checks, the library or the grader's "
            "cells. If you did not, tell your teacher.",
            "RecordingError",
        )


def _why_hung(source: str) -> str:
    """Why a cell may have ignored the interrupt, as its source shows it (the grader only sees that it did)."""
    if re.search(r"\bSIGINT\b|\bsigmask\b|\bSIG_IGN\b", source):
        return " (it changes how SIGINT is handled)"
    if re.search(r"except\s*(\(|:|BaseException|KeyboardInterrupt)", source):
        return " (it catches KeyboardInterrupt, a bare except or BaseException)"
    return ""


def check_timeout(cell_timeout: float, time_limit: float) -> float:
    """The wall-clock limit of a check cell: at least the check's own backstop for one call of the learner's code
    (``WALL_LIMIT_FACTOR`` times its CPU limit ``time_limit``), so that on a busy machine a call that computes too
    long is stopped by its CPU limit, whose message says so, and not by the cell's wall clock first.

    >>> check_timeout(60, 10), check_timeout(10, 3), check_timeout(120, 1)
    (300, 90, 120)
    """
    return max(cell_timeout, WALL_LIMIT_FACTOR * time_limit)


@dataclass
class NotebookRun:
    """One notebook's kernels, run until each exercise of ``assignment`` has a result or nothing more can run.
    ``code`` is the student's code cells ``(number in the notebook, source)``, ``defined`` the code cells (indices
    into ``code``) that bind each top-level name; :meth:`run` fills ``results``, ``errors`` (cell number -> what
    went wrong there), ``notes``, ``limit_notes`` and ``stopped_at_deadline``."""

    assignment: Assignment
    code: list[tuple[int, str]]
    defined: dict[str, list[int]]
    library: LibraryCopy
    limits: Limits
    kernel_name: str
    cell_timeout: float
    time_limit: float
    grace: float
    deadline: float  # time.monotonic() past which no kernel runs
    notebook_timeout: float
    marker: str  # RESULT_MARKER and this notebook's nonce
    unsandboxed: bool = False
    cases: dict[str, str] = field(default_factory=dict)  # exercise -> its random cases, drawn here (hidden.hand_in)
    results: dict[str, CheckResult] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)  # first report wins
    left_out: set[int] = field(default_factory=set)  # cells a fresh kernel must not run: hung, killed it, timed out
    notes: list[str] = field(default_factory=list)
    limit_notes: list[str] = field(default_factory=list)
    stopped_at_deadline: bool = False  # its kernel was stopped at the notebook's deadline (the row's note says so)
    failure: str = ""  # why a kernel could not run at all (the grader's or the machine's problem: the note says it)

    @property
    def check_timeout(self) -> float:
        return check_timeout(self.cell_timeout, self.time_limit)

    def deadline_note(self) -> str:
        """What the problems and the row's note say of a notebook whose kernel was stopped at its deadline."""
        return (
            f"Grading this notebook reached its deadline ({self.notebook_timeout:g} s in all, "
            f"--notebook-timeout; {self.cell_timeout:g} s per cell, --timeout): its kernel was stopped, and the "
            "exercises not graded by then fail."
        )

    def run(self) -> None:
        """Run kernels until every exercise has a result, or one stops for good."""
        first = True
        while pending := [ex for ex in self.assignment.exercises if ex.name not in self.results]:
            if first:
                chosen = list(range(len(self.code)))
            else:  # the cells up to the last definition of a name still to grade, without the bad ones
                last = max((self.defined[n][-1] for ex in pending for n in ex.names if n in self.defined), default=-1)
                chosen = [i for i in range(last + 1) if self.code[i][0] not in self.left_out]
            cells = self._cells(chosen, pending)
            sandbox = Sandbox(self.library, self.limits, unsandboxed=self.unsandboxed)
            # the kernel client in a child of bounded memory: a kernel's messages cannot grow the grader itself
            run = run_bounded(
                cells, sandbox, self.kernel_name, self.cell_timeout, self.deadline, self.grace, self.check_timeout
            )
            self._take(run, dict(cells), pending)
            if not self._go_on(run, pending):
                return
            first = False

    def _cells(self, chosen: list[int], pending: list[Exercise]) -> list[tuple[tuple[str | int, ...], Any]]:
        import nbformat

        cells: list[tuple[tuple[str | int, ...], Any]] = [(SETUP_KEY, nbformat.v4.new_code_cell(_SETUP))]
        cells += [(("cell", self.code[i][0]), nbformat.v4.new_code_cell(self.code[i][1])) for i in chosen]
        nonce = self.marker[len(RESULT_MARKER) :]
        return cells + [
            (("check", ex.name), _record_cell(ex, nonce, self.time_limit, self.cases.get(ex.name))) for ex in pending
        ]

    def _take(self, run: CellRun, by_key: dict[Any, Any], pending: list[Exercise]) -> None:
        """What one kernel's run says: limits met, cells that raised or timed out, the checks' results."""
        for key, which in run.limits.items():
            where = f"cell {key[1]}" if key[0] == "cell" else f"the check of {key[1]}" if key[0] == "check" else ""
            note = f"Hit the limit on {self.limits.describe(which)} in {where or 'starting the kernel'}"
            if not any(n.startswith(note) for n in self.limit_notes):
                self.limit_notes.append(note + "; graded on what finished.")
        if not self.library.verify():
            self.notes.append(
                "The notebook changed the grader's copy of transformer_lib; the copy was restored before anything "
                "else ran."
            )
        if run.leftovers:
            self.notes.append(
                f"{run.leftovers} process(es) the notebook started were still running after its kernel ended, and "
                "were killed."
            )
        for key, state in run.state.items():
            if key[0] == "cell" and key[1] not in self.errors:
                self._cell_state(key[1], state, by_key[key])
            elif key == SETUP_KEY and state != "ok":
                self.notes.append(
                    f"The grader could not import transformer_lib in the kernel {self.kernel_name!r}: install the "
                    "library in that kernel's environment (pip install -e .) or pick another with --kernel."
                )
            elif key[0] == "check" and state in ("ok", "error", "timeout"):
                ex = next(e for e in pending if e.name == key[1])
                self.results[ex.name] = verdict(ex, by_key[key], self.marker, self.time_limit, self.cases.get(ex.name))

    def _cell_state(self, number: int, state: str, cell: Any) -> None:
        error = str(error_of(cell))
        if state == "error" and error.startswith(REMOVED_ERROR):
            called = error.split(": ", 1)[-1].split(" is not available")[0]
            self.errors[number] = (
                f"Cell {number} calls {called}, which the grader's copy of the library leaves out while "
                f"{self.assignment.id} is graded (it does what the assignment asks for); in a cell that only "
                "compares with it, this costs no points."
            )
        elif state == "error":
            self.errors[number] = f"Cell {number} raised {error}"
        elif state == "timeout":
            self.errors[number] = (
                f"Cell {number} did not finish within {self.cell_timeout:g} s and was stopped (an endless loop?)."
            )
            self.left_out.add(number)

    def _go_on(self, run: CellRun, pending: list[Exercise]) -> bool:
        """Whether a fresh kernel should grade what is left after ``run`` stopped (False: the notebook is done)."""
        if run.failure:
            self.failure = f"Running the notebook failed: {run.failure}"
            self.notes.append(self.failure)
            return False
        if run.stopped is None:
            return False
        how, key = run.stopped
        if how == "deadline":
            self.notes.append(self.deadline_note())
            self.stopped_at_deadline = True
            return False
        if key == SETUP_KEY or key is None:
            self.notes.append("The kernel died while starting.")
            return False
        if key[0] == "cell":
            self.left_out.add(key[1])
            source = next((src for n, src in self.code if n == key[1]), "")
            what = (
                f"did not finish within {self.cell_timeout:g} s and ignored the interrupt{_why_hung(source)}, so its "
                "kernel was killed"
                if how == "hung"
                else "stopped the kernel (os._exit, a crash, running out of memory?)"
            )
            self.errors[key[1]] = (
                f"Cell {key[1]} {what}; the exercises were graded in a fresh kernel that ran the cells defining "
                f"them, without cell {key[1]}."
            )
            return True
        ex = next(e for e in pending if e.name == key[1])
        self.results[ex.name] = failed(
            ex,
            f"The check of {ex.name} did not finish: your code "
            + (
                "ignored the time limit and the interrupt, so its kernel was killed."
                if how == "hung"
                else "stopped the kernel (os._exit, a crash, running out of memory?)."
            ),
            "Run the check cell in your notebook: your function must return within the time limit, and must "
            "neither catch KeyboardInterrupt (or BaseException) nor ignore SIGINT.",
            "TimeoutError" if how == "hung" else "KernelDied",
        )
        return True

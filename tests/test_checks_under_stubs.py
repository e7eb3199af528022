"""Every exercise's check holds under the kernel's stubs: the reference solution, graded the way the grader grades it
but in this process (no kernel, no sandbox), passes.

In the grader's kernel each reference of the assignment is a stub (``REMOVED`` in
``transformer_lib/classroom/stubs.py``) that answers with what the learner's function returned last; the check's
calls are recorded there and replayed in the grader against the real references (``checks/record.py``). A check
that takes its expected value from a reference's result transformed (``int(causal_mask(n).sum())``) or called on
other inputs than the learner's function holds in a notebook and in ``tests/test_checks.py`` (no stubs) but fails
right answers in the grader: "The recorded calls do not match the check". The classroom tests that show it start
sandboxed kernels (``tests/test_grade.py``, slow); this file finds it in seconds.

The path is the grader's own: the cells it runs (``notebook._code_cells``: the solution notebook without its check
cells; a cell that raises is passed over, as a kernel does), the random cases it hands in (``hidden.hand_in``, from a
fixed seed here), the injected cell it writes (``runs._record_cell``), executed with the stubs in place
(``Stubs.in_this_process``: the source ``Stubs.apply`` writes into a kernel's copy), then the verdict it computes from
the printed recording (``runs.verdict``, which replays it). PyTorch's attention, which the kernels of assignments 3
and 5 leave out (``TORCH_REMOVED``), raises here by its Python names only (``F.scaled_dot_product_attention``,
``nn.MultiheadAttention``, ...), not in the dispatcher, which a process cannot restore.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import nbformat
import pytest

from transformer_lib.classroom import notebook, runs
from transformer_lib.classroom.checks import DEFAULT_TIME_LIMIT, RESULT_MARKER, CheckResult, core, hidden, record
from transformer_lib.classroom.registry import ASSIGNMENTS, Assignment, Exercise
from transformer_lib.classroom.stubs import REMOVED, REMOVED_ERROR, TORCH_REMOVED, stubs_for

pytestmark = pytest.mark.usefixtures("one_thread")  # the decoding checks: 0.9 s of CPU time on one thread, 8 on two

ROOT = Path(__file__).resolve().parents[1]
SEED = 41  # the grader draws a secret seed per notebook; a fixed one keeps a failure reproducible
NONCE = "under-stubs "
EXERCISES = [(a, ex) for a in ASSIGNMENTS.values() for ex in a.exercises]


ReferenceRemoved = type(REMOVED_ERROR, (RuntimeError,), {})  # PyTorch's attention here, named as the kernel names it


@contextlib.contextmanager
def _kernel_of(assignment: str):
    """The references of ``assignment`` as its kernel has them: the library's stubs, and PyTorch's attention
    raising by its Python names."""
    stubs = stubs_for(assignment)
    with contextlib.ExitStack() as stack, pytest.MonkeyPatch.context() as mp:
        if stubs is not None:
            stack.enter_context(stubs.in_this_process())
        for name in TORCH_REMOVED.get(assignment, ()):
            owner, attr = name.rsplit(".", 1)
            try:
                module = importlib.import_module(owner)
                original = getattr(module, attr)
            except (ImportError, AttributeError):  # a version of torch without it
                continue

            def removed(*args, _name=name, **kwargs):
                raise ReferenceRemoved(f"{_name} is not available while assignment {assignment} is graded")

            if isinstance(original, type):  # the class itself: every alias and subclass
                mp.setattr(original, "__init__", removed)
                mp.setattr(original, "forward", removed)
            else:
                mp.setattr(module, attr, removed)
        yield


def kernel_namespace(assignment: Assignment, path: Path | None = None) -> tuple[dict, list[str]]:
    """The globals of a notebook of ``assignment`` (``path``; its solution by default) as the grader's kernel has
    them (the cells the grader runs, with the assignment's references stubbed while they run), and what its cells
    raised: a kernel goes on after a cell that raises, as here (a demo cell that compares with a removed reference
    raises ReferenceRemoved there)."""
    path = path or ROOT / "assignments" / f"{assignment.id}.ipynb"
    cells, why = notebook._code_cells(path)
    assert cells is not None, f"{path}: {why}"
    namespace: dict = {"__name__": "__main__"}
    raised = []
    with _kernel_of(assignment.id), contextlib.redirect_stdout(io.StringIO()):
        for number, source in cells:
            try:
                exec(compile(source, f"{path.name} (cell {number})", "exec"), namespace)
            except Exception as e:
                raised.append(f"cell {number} raised {type(e).__name__}: {str(e)[:200]}")
    return namespace, raised


def _calls(recording: str) -> list[dict]:
    return json.loads(recording)["calls"]


def _said(call: dict) -> str:
    if "error" in call:
        return f"raised {call['error']['type']}: {call['error']['message'][:200]}"
    return "returned a value"


def _first_difference(kernel: list[dict], grader: list[dict]) -> str:
    """The first call of the learner's code that the kernel's recording and the grader's own run of the check (real
    references, no stubs) do not share."""
    for i, (k, g) in enumerate(zip(kernel, grader, strict=False), start=1):
        if k["fp"] != g["fp"]:
            return (
                f"call {i}, of {g['name']}: the check called it with other arguments under the stubs (fingerprint "
                f"{k['fp'][:12]} in the kernel, {g['fp'][:12]} with the real references)"
            )
    if len(kernel) < len(grader):
        n = len(kernel)
        return (
            f"call {n + 1}, of {grader[n]['name']}: the check makes {len(grader)} calls with the real references and "
            f"stopped after {n} under the stubs" + (f" (call {n} {_said(kernel[-1])})" if kernel else "")
        )
    if len(kernel) > len(grader):
        return f"call {len(grader) + 1}, of {kernel[len(grader)]['name']}: made under the stubs only"
    return "none: the kernel's calls are the grader's, and the replay's verdict differs"


def record_and_replay(
    assignment: Assignment, ex: Exercise, namespace: dict, seed: int = SEED
) -> tuple[CheckResult, Any, str]:
    """The grader's verdict on ``ex`` for ``namespace``: the record cell it injects, run here under the kernel's stubs,
    then replayed with the real references (runs.verdict). Returns the verdict, the cell with its output, the cases."""
    cases = hidden.hand_in(ex.check, seed)  # what notebook._random_cases hands the kernel for this exercise
    cell = runs._record_cell(ex, NONCE, DEFAULT_TIME_LIMIT, cases)  # the cell the grader injects into the kernel
    printed = io.StringIO()
    with _kernel_of(assignment.id), contextlib.redirect_stdout(printed):
        exec(compile(cell.source, f"the check cell of {ex.name}", "exec"), namespace)
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed.getvalue())]
    return runs.verdict(ex, cell, RESULT_MARKER + NONCE, DEFAULT_TIME_LIMIT, cases), cell, cases


def grade_under_stubs(
    assignment: Assignment, ex: Exercise, namespace: dict, raised: Sequence[str] = (), seed: int = SEED
) -> str:
    """Grade ``ex`` on ``namespace`` as the grader does (record under the stubs, replay with the real references);
    "" if it passes, else a message that names the assignment, the exercise and the first call that differs.
    ``raised``: what the notebook's cells raised in the kernel, for the message."""
    result, cell, cases = record_and_replay(assignment, ex, namespace, seed)
    if result.passed:
        return ""
    kernel_text, _ = runs.read_recording(cell, RESULT_MARKER + NONCE)
    with _kernel_of(assignment.id), contextlib.redirect_stdout(io.StringIO()):  # what the check said in the kernel
        in_kernel, _ = record._record(ex.check, namespace, ex.names, DEFAULT_TIME_LIMIT, cases)
    grader_text = record.record_exercise(ex.check, namespace, ex.names, DEFAULT_TIME_LIMIT, cases)
    first = _first_difference(_calls(kernel_text or '{"calls": []}'), _calls(grader_text))
    return (
        f"{assignment.id}, exercise {ex.name} ({ex.check}): the reference solution fails under the kernel's stubs.\n"
        f"First call that differs: {first}.\n"
        f"In the kernel the check said: {in_kernel.summary} {in_kernel.details}\n"
        f"The grader's verdict: {result.summary} {result.details}\n"
        + "".join(f"In the kernel the notebook's {r}\n" for r in raised)
        + "Take the expected value from the reference called on the learner's inputs and compared as it returns it "
        "(CONTRIBUTING.md, 'Add an exercise and its grader check', step 2)."
    )


@pytest.fixture(scope="module")
def namespaces():
    return {}


def _namespace(namespaces: dict, assignment: Assignment) -> tuple[dict, list[str]]:
    if assignment.id not in namespaces:
        namespaces[assignment.id] = kernel_namespace(assignment)
    return namespaces[assignment.id]


@pytest.mark.parametrize("assignment, ex", EXERCISES, ids=[f"{a.id}-{ex.name}" for a, ex in EXERCISES])
def test_every_check_holds_under_the_kernels_stubs(namespaces, assignment, ex):
    failure = grade_under_stubs(assignment, ex, *_namespace(namespaces, assignment))
    if failure:
        pytest.fail(failure, pytrace=False)  # the message says it all: where the check broke and why


def test_a_check_that_transforms_a_reference_fails_here(namespaces, monkeypatch):
    """The mistake this file is for, planted: a count taken from the reference's mask (``int(causal_mask(n).sum())``)
    holds without stubs and fails right answers under them; the message names the call where it broke."""
    from transformer_lib.masks import causal_mask

    name = "check_visible_pairs_planted"
    for table in (core._CHECKS, core._REPLAYS):
        monkeypatch.setitem(table, name, None)  # removed again after the test

    @core._check("visible_pairs_planted")
    def check_visible_pairs_planted(visible_pairs):
        for size in (3, 5):
            got = core._call(visible_pairs, size, inputs=f"size = {size}")
            if got != int(causal_mask(size).sum()):
                raise core._Fail("The count differs from the reference.", f"Input: size = {size}")
        return "All 2 cases match the reference."

    ex = Exercise(("visible_pairs",), name)
    right = {"visible_pairs": lambda n: n * (n + 1) // 2}
    masks = ASSIGNMENTS["04_masks"]
    assert check_visible_pairs_planted(right["visible_pairs"]).passed  # a notebook, test_checks: it holds
    failure = grade_under_stubs(masks, ex, right)
    assert failure.startswith("04_masks, exercise visible_pairs_planted (check_visible_pairs_planted):"), failure
    assert "First call that differs: call 2, of <lambda>: the check makes 2 calls" in failure, failure
    assert "AttributeError: 'int' object has no attribute 'sum'" in failure, failure
    assert "The recorded calls do not match the check." in failure, failure


@pytest.mark.parametrize("assignment", [a for a in ASSIGNMENTS if a in REMOVED])
def test_the_stubs_are_in_place_in_the_block_and_gone_after(assignment):
    """Inside ``Stubs.in_this_process`` every reference of ``REMOVED`` is the kernel's stub (outside a recording it
    raises ReferenceRemoved, as a learner's call in the kernel does); after it, each has its own code again."""
    functions = []
    for file, name, shown, _ in REMOVED[assignment]:
        owner = importlib.import_module(f"transformer_lib.{file.removesuffix('.py').replace('/', '.')}")
        *classes, last = name.split(".")
        for cls in classes:
            owner = getattr(owner, cls)
        raw = vars(owner)[last]
        self_ = (None,) if classes and not isinstance(raw, classmethod) else ()  # a method called on its class
        functions.append((shown, getattr(owner, last), self_, inspect.unwrap(getattr(raw, "__func__", raw))))
    before = [f.__code__ for *_, f in functions]
    with stubs_for(assignment).in_this_process():
        for shown, callable_, self_, _ in functions:
            expected = f"^{re.escape(shown)} is not available while assignment {assignment} is graded"
            with pytest.raises(Exception, match=expected) as e:
                callable_(*self_)
            assert type(e.value).__name__ == REMOVED_ERROR
    assert [f.__code__ for *_, f in functions] == before

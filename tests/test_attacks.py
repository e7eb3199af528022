"""Attacks on the grader, run as a student would: each must fail (0 points or a flag), and nothing of the teacher's
may reach a feedback file or a sheet.

The class (tests/fixtures/hostile/make_attacks.py) is graded once, next to a fake teacher's folder: an LMS zip,
roster.csv, a solutions folder and a secret in the grader's environment (LMS_API_TOKEN). Without bubblewrap the
kernel tests are skipped (tests/test_sandbox.py checks that the grader then refuses).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from transformer_lib.classroom import grade, sandbox, stubs
from transformer_lib.classroom.registry import ASSIGNMENTS

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "submissions"))
from make_submissions import solved  # noqa: E402

ATTACKS = Path(__file__).resolve().parent / "fixtures" / "attacks"
SECRET = "lms-token-0123456789-do-not-leak"
needs_bwrap = pytest.mark.skipif(bool(sandbox.bwrap_problem()), reason=sandbox.bwrap_problem() or "bwrap works")


# --------------------------------------------------------------------------------------------------------------
# The reference is not in the room
# --------------------------------------------------------------------------------------------------------------
def _in_copy(assignment: str, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` with the library copy of ``assignment`` first on the path (as a kernel imports it)."""
    lib = sandbox.LibraryCopy(stubs=stubs.stubs_for(assignment))
    try:
        env = {"PATH": os.environ.get("PATH", "/usr/bin"), "PYTHONPATH": str(lib.parent)}
        return subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=lib.parent
        )
    finally:
        lib.cleanup()


def test_the_reference_of_an_assignment_is_a_stub_source_included():
    done = _in_copy(
        "03_attention",
        "import inspect, torch, transformer_lib as tl\n"
        "print(tl.__file__)\n"
        "print(inspect.getsource(tl.scaled_dot_product_attention))\n"
        "q = torch.ones(1, 2, 4)\n"
        "try:\n"
        "    tl.scaled_dot_product_attention(q, q, q)\n"
        "except RuntimeError as e:\n"
        "    print(type(e).__name__, e)\n"
        "print(tl.causal_mask(2).tolist())  # everything else stays\n",
    )
    assert done.returncode == 0, done.stderr
    assert "tl-lib-" in done.stdout and "softmax" not in done.stdout  # the copy, with no trace of the code
    assert "Left out of the grader's copy of transformer_lib while assignment 03_attention is graded" in done.stdout
    assert (
        "ReferenceRemoved tl.scaled_dot_product_attention is not available while assignment 03_attention" in done.stdout
    )
    assert "[[True, False], [True, True]]" in done.stdout


@pytest.mark.parametrize("assignment", sorted(stubs.REMOVED))
def test_every_stub_replaces_a_definition(assignment):
    """Each name in REMOVED exists in the library (a renamed function would leave its reference in the room)."""
    lib = sandbox.LibraryCopy(stubs=stubs.stubs_for(assignment))
    try:
        for file, name, _, _ in stubs.REMOVED[assignment]:
            text = (lib.path / file).read_text()
            assert f"def {name.split('.')[-1]}(" in text and f"while assignment {assignment} is graded" in text
            assert (sandbox._LIBRARY / file).read_text() != text  # the original is untouched
    finally:
        lib.cleanup()


@pytest.fixture(scope="module")
def solutions(tmp_path_factory):
    """Every assignment's solution, as a student would hand it in, graded with its stubbed library."""
    folder = tmp_path_factory.mktemp("solved") / "class"
    (folder / "zed").mkdir(parents=True)
    for a in ASSIGNMENTS:
        nbformat.write(solved(a), folder / "zed" / f"{a}.ipynb")
    return grade.grade_folder(folder, folder.parent / "out" / "grades.csv", jobs=2, progress=False)


@pytest.mark.slow
@needs_bwrap
def test_every_solution_passes_under_its_stubbed_library(solutions):
    assert len(solutions) == len(ASSIGNMENTS)
    for g in solutions:
        assert [r.passed for r in g.results] == [True] * len(g.results), (g.assignment, g.results)
        assert not any("limit" in n for n in g.notes), g.notes  # no limit met by a correct notebook

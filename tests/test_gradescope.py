"""The Gradescope autograder (transformer_lib.classroom.gradescope): the zip Gradescope asks for, and its
run_autograder in the real /autograder layout grading an honest submission and a wrong one with two attacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

import nbformat
import pytest

from transformer_lib.classroom import gradescope, sandbox
from transformer_lib.classroom.registry import ASSIGNMENTS

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "submissions"))
from make_submissions import solved  # noqa: E402
from registry_points import points  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "submissions"
needs_bwrap = pytest.mark.skipif(bool(sandbox.bwrap_problem()), reason=sandbox.bwrap_problem() or "bwrap works")
ASSIGNMENT = "03_attention"
POINTS = ASSIGNMENTS[ASSIGNMENT].max_points
# bob's answer (tests/fixtures/submissions: no division by √d_k) earns the other parts of the one exercise:
# an attack beside it must leave that score as it is
BOB = points(ASSIGNMENT, "attention", failed_parts={"scaling"})


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """The zip, built once (with this project's wheel, built from the repository)."""
    return gradescope.build_autograder(ASSIGNMENT, tmp_path_factory.mktemp("zip") / "autograder.zip")


def test_the_zip_holds_what_gradescope_runs(autograder):
    with zipfile.ZipFile(autograder) as z:
        names = set(z.namelist())
        setup = z.read("setup.sh").decode()
        run = z.read("run_autograder").decode()
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
    (wheel,) = [n for n in names if n.endswith(".whl")]
    assert wheel.startswith("transformer_lib-0.1.0-") and {"constraints.txt", f"templates/{ASSIGNMENT}.ipynb"} <= names
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    assert "torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu" in setup
    assert f'"/autograder/source/{wheel}[classroom]"' in setup and "bubblewrap" in setup
    assert f"transformer_lib.classroom.gradescope run \\\n    {ASSIGNMENT}" in run
    with pytest.raises(ValueError, match=r"assignment: expected one of 01_tokenizer.*got '03_attn'"):
        gradescope.build_autograder("03_attn", autograder.parent / "x.zip")


def _with_cells(source_student: str, *code: str) -> nbformat.NotebookNode:
    """The fixture's notebook of ``source_student`` with each of ``code`` appended as a code cell, in order."""
    nb = nbformat.read(FIXTURES / source_student / f"{ASSIGNMENT}.ipynb", as_version=4)
    nb.cells.extend(nbformat.v4.new_code_cell(c) for c in code)
    return nb


# writes a full score where Gradescope reads it, wherever the grader lives (and a file that would outlast the run)
WRITES_RESULTS = """
import json, os
for root in ({root!r}, '/autograder'):
    for name in ('results.json', 'forged.json'):
        try:
            json.dump({{'score': 1000, 'tests': []}}, open(root + '/results/' + name, 'w'))
            print('wrote', root, name)
        except OSError as e:
            print('could not write', root, e)
"""


def _reader(root: Path) -> str:
    """A cell that reads the grader's wheel (its reference) and, if it can, swaps a right answer in for the wrong
    one: the score says whether the read worked."""
    solution = nbformat.read(FIXTURES / "alice" / f"{ASSIGNMENT}.ipynb", as_version=4)
    (right,) = [c.source for c in solution.cells if c.cell_type == "code" and c.source.startswith("def attention(")]
    return (
        "import glob, zipfile\n"
        f"wheels = glob.glob({str(root)!r} + '/source/*.whl') + glob.glob('/autograder/source/*.whl')\n"
        "print('found', wheels)\n"
        "if wheels and zipfile.ZipFile(wheels[0]).read('transformer_lib/attention.py'):\n"
        + textwrap.indent(right, "    ")
        + "\n"
    )


@pytest.fixture
def layout(tmp_path):
    """The /autograder layout (the real one when it is free, else under tmp_path), removed afterwards."""
    root = Path("/autograder")
    if root.exists() or os.geteuid() != 0:
        root = tmp_path / "autograder"
    root.mkdir()
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _lay_out(autograder: Path, root: Path) -> None:
    """Gradescope's folders under ``root``, empty, with the autograder unzipped into ``source``."""
    for folder in ("source", "submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
        (root / folder).mkdir()
    with zipfile.ZipFile(autograder) as z:
        z.extractall(root / "source")


def _run(autograder: Path, root: Path, nb: nbformat.NotebookNode) -> dict:
    """Unzip the autograder into root/source, hand in ``nb``, run run_autograder, read results.json."""
    _lay_out(autograder, root)
    (root / "source" / "run_autograder").chmod(0o755)
    nbformat.write(nb, root / "submission" / "my work (final).ipynb")
    env = {**os.environ, "TL_AUTOGRADER_PYTHON": sys.executable, "TL_AUTOGRADER_ROOT": str(root)}
    done = subprocess.run(
        [str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True, timeout=900, cwd=root
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((root / "results" / "results.json").read_text())


@pytest.mark.slow
@needs_bwrap
def test_run_autograder_scores_honest_wrong_and_attacking_submissions(autograder, layout):
    honest = _run(autograder, layout, nbformat.read(FIXTURES / "alice" / f"{ASSIGNMENT}.ipynb", as_version=4))
    exercises = [ex.name for ex in ASSIGNMENTS[ASSIGNMENT].exercises]
    scored = [t for t in honest["tests"] if "score" in t]
    assert [t["name"].split(" ")[0] for t in scored] == exercises
    assert all(t.keys() >= {"name", "score", "max_score", "output", "visibility"} for t in scored)
    assert honest["score"] == sum(t["score"] for t in scored) == POINTS, honest
    written = [t for t in honest["tests"] if "score" not in t]
    assert written and all(t["name"].startswith("Written answer") and t["max_score"] == 0 for t in written)

    # a wrong answer with both attacks beside it (two runs less than one for each, and one for bob alone): a forged
    # results file left behind would show in the folder, a read of the grader's wheel would swap in the right answer
    attacks = _run(autograder, layout, _with_cells("bob", WRITES_RESULTS.format(root=str(layout)), _reader(layout)))
    assert attacks["score"] == BOB < POINTS, attacks  # neither its own results.json nor the grader's wheel counts
    assert not all(t["score"] == t["max_score"] for t in attacks["tests"] if "score" in t)
    assert sorted(p.name for p in (layout / "results").iterdir()) == ["results.json"]


def _in_process(autograder: Path, root: Path, nb: nbformat.NotebookNode) -> dict:
    """As :func:`_run`, but run_autograder called here (so that a test can take bubblewrap away)."""
    _lay_out(autograder, root)
    nbformat.write(nb, root / "submission" / f"{ASSIGNMENT}.ipynb")
    gradescope.run_autograder(ASSIGNMENT, root)
    return json.loads((root / "results" / "results.json").read_text())


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to nobody needs root, as in Gradescope's container")
def test_without_bubblewrap_the_kernel_runs_as_nobody_and_cannot_reach_the_grader(autograder, layout, monkeypatch):
    """Gradescope's container may forbid bubblewrap's namespaces: the kernel then runs as nobody, and the attacks
    that write the results or load the reference from the grader's wheel still change nothing."""
    monkeypatch.setattr(gradescope, "bwrap_problem", lambda: "bwrap cannot build a sandbox here (no namespaces)")
    honest = _in_process(autograder, layout, solved(ASSIGNMENT))
    assert honest["score"] == POINTS and "ran as an unprivileged user, without bubblewrap" in honest["output"]
    attacks = _in_process(
        autograder, layout, _with_cells("bob", WRITES_RESULTS.format(root=str(layout)), _reader(layout))
    )
    assert attacks["score"] == BOB < POINTS, attacks  # bob's wrong answer's score, as without the attacks
    assert sorted(p.name for p in (layout / "results").iterdir()) == ["results.json"]
    assert "JUPYTER_PATH" not in os.environ or "tl-unprivileged" not in os.environ["JUPYTER_PATH"]


def test_without_bubblewrap_a_temporary_folder_closed_to_nobody_is_named_not_a_dead_kernel(tmp_path, monkeypatch):
    """/tmp was once found at mode 1700, owned by nobody, and every kernel run as nobody died before it answered (a
    worker's clean-up had made /tmp mode 0700). Whatever left it so, the results now say which folder is closed, and
    nothing runs."""
    closed = Path(tempfile.mkdtemp(prefix="tl-test-closed-"))  # (pytest's own folders are closed to others)
    try:
        (closed / "inside").mkdir()
        closed.chmod(0o1700)
        monkeypatch.setattr(tempfile, "tempdir", str(closed / "inside"))
        monkeypatch.setattr(gradescope, "bwrap_problem", lambda: "bwrap cannot build a sandbox here (no namespaces)")
        (tmp_path / "submission").mkdir()
        nbformat.write(solved(ASSIGNMENT), tmp_path / "submission" / f"{ASSIGNMENT}.ipynb")
        results = gradescope.run_autograder(ASSIGNMENT, tmp_path)
        assert results["score"] == 0 and results["tests"] == []
        assert f"closed to other users at {closed} (mode 1700" in results["output"], results["output"]
        closed.chmod(0o1777)
        assert gradescope.closed_to_others(closed / "inside") == ""
    finally:
        shutil.rmtree(closed)


def test_run_autograder_without_a_notebook_says_so(tmp_path):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "answers.pdf").write_bytes(b"%PDF")
    results = gradescope.run_autograder(ASSIGNMENT, tmp_path)
    assert results["score"] == 0 and results["tests"] == []
    assert f"No .ipynb file in the submission: upload {ASSIGNMENT}.ipynb." == results["output"]
    assert json.loads((tmp_path / "results" / "results.json").read_text()) == results

"""The nbgrader export: cell metadata that nbgrader's own validator accepts, points from the registry, check cells
that raise on failure; and a round trip through the real nbgrader (generate_assignment for every assignment,
autograde of correct, buggy and untouched submissions) that must score them as our grader does."""

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from transformer_lib.classroom import assignments as A
from transformer_lib.classroom import grade
from transformer_lib.classroom.assignments import ASSIGNMENTS, BEGIN, END
from transformer_lib.classroom.checks import CheckResult
from transformer_lib.classroom.nbgrader_export import export_course, nbgrader_notebook

ROOT = Path(__file__).resolve().parents[1]


def meta(cell):
    return cell.metadata.get("nbgrader", {})


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    dest = tmp_path_factory.mktemp("course")
    assert A.main(["--root", str(ROOT), "--nbgrader", str(dest)]) == 0
    return dest


@pytest.mark.parametrize("aid", list(ASSIGNMENTS))
def test_every_exercise_is_a_solution_and_a_test_worth_its_points(course, aid):
    from nbgrader.nbgraderformat import MetadataValidator

    nb = nbformat.read(course / "source" / aid / f"{aid}.ipynb", as_version=4)
    MetadataValidator().validate_nb(nb)  # nbgrader's own check: ids, points, markdown answers graded
    tests = {meta(c)["grade_id"]: meta(c)["points"] for c in nb.cells if meta(c).get("grade") and c.cell_type == "code"}
    assert tests == {f"test_{ex.name}": 0 if ex.extension else ex.points for ex in ASSIGNMENTS[aid].exercises}
    assert sum(tests.values()) == ASSIGNMENTS[aid].max_points
    solutions = [c for c in nb.cells if meta(c).get("solution") and c.cell_type == "code"]
    assert [meta(c)["grade_id"] for c in solutions] == [f"solution_{ex.name}" for ex in ASSIGNMENTS[aid].exercises]
    assert all(meta(c).get("solution") for c in nb.cells if BEGIN in c.source)  # else generate_assignment refuses
    (answers,) = [c for c in nb.cells if c.cell_type == "markdown" and meta(c).get("solution")]
    assert meta(answers) == {
        "schema_version": 3,
        "grade": True,
        "solution": True,
        "locked": False,
        "grade_id": "written_answers",
        "points": 2,
    }
    assert not any("solution-only" in c.metadata.get("tags", []) for c in nb.cells)
    assert all(meta(c).get("locked") for c in nb.cells if c.cell_type == "markdown" and c is not answers)
    assert (course / "nbgrader_config.py").read_text().count("c.") >= 3


@pytest.mark.parametrize("aid", list(ASSIGNMENTS))
def test_the_handout_of_command_1_carries_the_exports_nbgrader_metadata(course, aid):
    """One handout for both routes: book/assignments/NN.ipynb has the cells' nbgrader roles of the export."""
    from nbgrader.nbgraderformat import MetadataValidator

    handout = nbformat.read(ROOT / "book" / "assignments" / f"{aid}.ipynb", as_version=4)
    source = nbformat.read(course / "source" / aid / f"{aid}.ipynb", as_version=4)
    assert [meta(c) for c in handout.cells] == [meta(c) for c in source.cells]
    assert {meta(c)["grade_id"]: meta(c)["points"] for c in handout.cells if meta(c).get("grade")} == {
        **{f"test_{ex.name}": 0 if ex.extension else ex.points for ex in ASSIGNMENTS[aid].exercises},
        "written_answers": meta(next(c for c in source.cells if meta(c).get("grade_id") == "written_answers"))[
            "points"
        ],
    }
    MetadataValidator().validate_nb(handout)


def test_an_exported_check_cell_raises_when_the_check_fails():
    nb = nbgrader_notebook(nbformat.read(ROOT / "assignments" / "03_attention.ipynb", as_version=4), "03_attention")
    (cell,) = [c for c in nb.cells if meta(c).get("grade_id") == "test_attention"]
    for passed in (True, False):
        verdict = CheckResult("attention", passed, "x")
        fake = type("Checks", (), {"check_attention": staticmethod(lambda f, verdict=verdict: verdict)})
        namespace = {"checks": fake, "attention": None}
        if passed:
            exec(cell.source, namespace)
        else:
            with pytest.raises(AssertionError, match="attention: x"):
                exec(cell.source, namespace)


def test_an_exported_check_in_parts_ends_with_the_points_its_parts_earn():
    """Assignment 3 is graded in parts (scaling 3, softmax rows 2, masking 3, returned weights 2): the exported
    check cell's value is the points earned, which nbgrader reads as a partial score; no part passed raises."""
    nb = nbgrader_notebook(nbformat.read(ROOT / "assignments" / "03_attention.ipynb", as_version=4), "03_attention")
    (cell,) = [c for c in nb.cells if meta(c).get("grade_id") == "test_attention"]
    (exercise,) = ASSIGNMENTS["03_attention"].exercises
    assert dict(exercise.parts) == {"scaling": 3, "softmax rows": 2, "masking": 3, "returned weights": 2}
    *body, last = cell.source.splitlines()
    for passed, parts, expected in [
        (True, {}, 10),
        (False, {"scaling": False, "softmax rows": True, "masking": True, "returned weights": True}, 7),
        (False, {"scaling": True, "softmax rows": True, "masking": False, "returned weights": False}, 5),
        (False, dict.fromkeys(dict(exercise.parts), False), None),
    ]:
        verdict = CheckResult("attention", passed, "x", parts=parts)
        fake = type("Checks", (), {"check_attention": staticmethod(lambda f, verdict=verdict: verdict)})
        namespace = {"checks": fake, "attention": None}
        if expected is None:
            with pytest.raises(AssertionError, match="attention: x"):
                exec("\n".join(body), namespace)
            continue
        exec("\n".join(body), namespace)
        assert eval(last, namespace) == expected == exercise.earned(verdict)


def test_the_autograde_outputs_give_nbgrader_the_points_of_our_grader():
    """nbgrader's own determine_grade, read from the outputs GradeInSandbox writes into each test cell, gives
    Exercise.earned for a pass, a fail in parts (partial credit), a fail, a fail of a 0-point extension and an
    exercise not graded; the verdict, flags and the notebook's notes are shown on stdout, nothing on stderr."""
    from nbgrader.utils import determine_grade

    from transformer_lib.classroom.graded import GradedNotebook
    from transformer_lib.classroom.nbgrader_export import grade_id_of
    from transformer_lib.classroom.nbgrader_grade import cell_outputs

    parts = {"scaling": False, "softmax rows": True, "masking": True, "returned weights": True}
    cases = [  # (assignment, exercise, its result or None, the points tl-grade gives)
        ("03_attention", "attention", CheckResult("attention", True, "ok"), 10),
        ("03_attention", "attention", CheckResult("attention", False, "no scaling", parts=parts), 7),
        ("03_attention", "attention", CheckResult("attention", False, "wrong", parts=dict.fromkeys(parts, False)), 0),
        ("04_masks", "causal_mask", CheckResult("causal_mask", False, "the future"), 0),
        ("04_masks", "causal_mask", None, 0),
    ]
    extension = next((a.id, ex) for a in ASSIGNMENTS.values() for ex in a.exercises if ex.extension)
    cases.append((extension[0], extension[1].name, CheckResult(extension[1].name, False, "no"), 0))
    for aid, name, result, points in cases:
        graded = GradedNotebook("s", aid, Path(f"{aid}.ipynb"), problems=["cell 3 raised"], notes=["a note"])
        graded.results = [result] if result is not None else []
        if result is not None:
            result.flags = ["patches a check: the teacher decides"]
            assert ASSIGNMENTS[aid].exercise(name).earned(result) == points
        outputs = cell_outputs(graded)
        exercise = ASSIGNMENTS[aid].exercise(name)
        max_points = 0 if exercise.extension else exercise.points
        cell = nbformat.from_dict(
            nbformat.v4.new_code_cell("result = checks.check_x(x)", outputs=outputs[grade_id_of(name)])
        )
        cell.metadata["nbgrader"] = {"grade": True, "solution": False, "points": max_points, "grade_id": "t"}
        assert determine_grade(cell) == (points if max_points else 0, max_points), (name, result, outputs)
        assert not any(o.get("name") == "stderr" for o in outputs[grade_id_of(name)])
        shown = "".join(o.get("text", "") for out in outputs.values() for o in out)
        assert "cell 3 raised" in shown and "a note" in shown  # once, on the first test cell
        assert shown.count("a note") == 1
        if result is not None:
            assert ("PASS" if result.passed else "FAIL") in shown and "patches a check" in shown


def test_the_export_refuses_a_used_folder_and_a_missing_one(tmp_path):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("")
    with pytest.raises(FileExistsError, match="dest: expected a new or empty folder"):
        export_course(tmp_path / "used", ROOT / "assignments")
    with pytest.raises(FileNotFoundError, match="solutions: no solution notebooks"):
        A.main(["--root", str(ROOT), "--nbgrader", str(tmp_path / "new"), "--solutions", str(tmp_path)])


# --------------------------------------------------------------------------------------------------------------
# The real nbgrader (the [classroom] extra): generate_assignment of all six in one run, then one autograde run and
# our grader on the same seven submissions of 04_masks and 03_attention (fourteen kernels: seven in each)
# --------------------------------------------------------------------------------------------------------------
PATCH = """from transformer_lib.classroom.checks import CheckResult

checks.check_attention = lambda f, *args, **kwargs: CheckResult("attention", True, "all good")"""


def nbgrader(course, *args):
    bin_dir = Path(sys.executable).parent  # nbgrader runs the `alembic` command when it creates its database
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",
    }
    run = subprocess.run(
        [str(bin_dir / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0 and "ERROR" not in run.stderr, run.stderr[-3000:]
    return run


@pytest.mark.slow
def test_nbgrader_generates_every_assignment_and_autogrades_like_our_grader(course, tmp_path):
    start = time.perf_counter()
    # nbgrader reads the assignment id as a glob: every assignment in one run (each run of nbgrader costs about 7 s of
    # CPU before it reads a notebook: 6 runs took 45 s, one 9 s)
    nbgrader(course, "generate_assignment", "*")
    for aid in ASSIGNMENTS:
        released = nbformat.read(course / "release" / aid / f"{aid}.ipynb", as_version=4)
        text = nbformat.writes(released)
        assert BEGIN not in text and "raise NotImplementedError()" in text and "*Write your answer here.*" in text

    aid = "04_masks"
    source = nbformat.read(course / "source" / aid / f"{aid}.ipynb", as_version=4)
    buggy = nbformat.from_dict(source)
    (cell,) = [c for c in buggy.cells if c.cell_type == "code" and ".tril()" in c.source]
    cell.source = cell.source.replace(".tril()", ".triu()")  # the future instead of the past: a wrong causal mask
    handout = nbformat.read(ROOT / "book" / "assignments" / f"{aid}.ipynb", as_version=4)  # command 1's
    filled = nbformat.from_dict(handout)
    for cell, solved in zip(filled.cells, source.cells, strict=True):
        if meta(cell).get("solution") and cell.cell_type == "code":  # the student's answers, in the handout
            cell.source = "\n".join(line for line in solved.source.splitlines() if line.strip() not in (BEGIN, END))
    submissions = {  # (a correct 04_masks as nbgrader's source has it: "handout" passes all three, and the source
        # path is "buggy"'s and 03_attention's "correct": two kernels fewer, one in each grader)
        "buggy": buggy,
        "untouched": nbformat.read(course / "release" / aid / f"{aid}.ipynb", as_version=4),
        "handout": filled,
        "handout_untouched": handout,
    }
    # assignment 3 in parts: without the 1/√d_k scaling, the softmax rows, the masking and the weights still pass
    attention = nbformat.read(course / "source" / "03_attention" / "03_attention.ipynb", as_version=4)
    unscaled = nbformat.from_dict(attention)
    (cell,) = [c for c in unscaled.cells if c.cell_type == "code" and c.source.startswith("def attention(")]
    cell.source = cell.source.replace("/ math.sqrt(d_k)", "")
    patched = nbformat.from_dict(unscaled)  # the same wrong answer, and a check that says it passed
    (cell,) = [c for c in patched.cells if c.cell_type == "code" and c.source.startswith("def attention(")]
    cell.source += f"\n\n\n{PATCH}"
    by_assignment = {aid: submissions, "03_attention": {"correct": attention, "unscaled": unscaled, "patched": patched}}
    for assignment, notebooks in by_assignment.items():
        for student, nb in notebooks.items():
            for where in (
                course / "submitted" / student / assignment / f"{assignment}.ipynb",
                tmp_path / "ours" / student / f"{assignment}.ipynb",
            ):
                where.parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, where)
    nbgrader(course, "autograde", "*")  # both assignments' submissions, one run of nbgrader

    from nbgrader.api import Gradebook

    theirs = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for assignment, notebooks in by_assignment.items():
            for student in notebooks:
                for g in gb.find_submission_notebook(assignment, assignment, student).grades:
                    if g.name.startswith("test_"):
                        theirs[student, g.name.removeprefix("test_")] = g.score
    grade.grade_folder(
        tmp_path / "ours", tmp_path / "grades.csv", cell_timeout=60, time_limit=10, jobs=2, progress=False
    )
    with open(tmp_path / "grades.csv", encoding="utf-8", newline="") as f:
        ours = {(r["student"], r["exercise"]): float(r["points"]) for r in csv.DictReader(f) if r["exercise"] != "-"}
    assert theirs == ours
    assert ours == {
        ("buggy", "padding_mask"): 3,
        ("buggy", "causal_mask"): 0,
        ("buggy", "decoder_mask"): 0,
        ("untouched", "padding_mask"): 0,
        ("untouched", "causal_mask"): 0,
        ("untouched", "decoder_mask"): 0,
        ("handout", "padding_mask"): 3,  # the notebook that command 1 hands out, graded by nbgrader too
        ("handout", "causal_mask"): 3,
        ("handout", "decoder_mask"): 4,
        ("handout_untouched", "padding_mask"): 0,
        ("handout_untouched", "causal_mask"): 0,
        ("handout_untouched", "decoder_mask"): 0,
        ("correct", "attention"): 10,
        ("unscaled", "attention"): 7,  # partial credit in both graders: scaling (3 points) lost
        ("patched", "attention"): 7,  # its patched check is the kernel's: both routes judge in the grader's process
    }
    # what nbgrader's autograded notebook shows in the test cell: the verdict, and the flag for the teacher
    autograded = nbformat.read(course / "autograded" / "patched" / "03_attention" / "03_attention.ipynb", as_version=4)
    (cell,) = [c for c in autograded.cells if meta(c).get("grade_id") == "test_attention"]
    shown = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    assert "FAIL" in shown and "check" in shown.split("flags:")[-1], shown
    print(f"nbgrader round trip: {time.perf_counter() - start:.0f} s")

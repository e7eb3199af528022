"""The grader: a fixture folder of submissions (correct, wrong, looping, raising, syntax error, not JSON, missing
cells, unknown name) gives the expected CSV rows and feedback, and grading never stops on a broken notebook."""

import contextlib
import csv
import hashlib
import shutil
import time
from pathlib import Path

import nbformat
import pytest
from registry_points import exercises

from transformer_lib.classroom import cluster, grade, sandbox
from transformer_lib.classroom import folder as class_folder
from transformer_lib.classroom.assignments import ASSIGNMENTS
from transformer_lib.classroom.checks import RESULT_MARKER, CheckResult
from transformer_lib.classroom.submissions import assignment_for

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "submissions"


# --------------------------------------------------------------------------------------------------------------
# Without a kernel
# --------------------------------------------------------------------------------------------------------------
def test_find_submissions_and_assignment_names(tmp_path):
    found = grade.find_submissions(FIXTURES)
    assert [(s, p.name) for s, p in found] == [
        ("alice", "03_attention.ipynb"),
        ("bob", "03_attention.ipynb"),
        ("carol", "02_positional_encoding.ipynb"),
        ("carol", "04_masks.ipynb"),
        ("dave", "01_tokenizer.ipynb"),
        ("dave", "03_attention.ipynb"),
        ("erin", "04_masks.ipynb"),
        ("erin", "notes.ipynb"),
    ]
    assert assignment_for(Path("x/03_attention (1).ipynb")).id == "03_attention"
    assert assignment_for(Path("x/attention.ipynb")) is None
    with pytest.raises(NotADirectoryError):
        grade.find_submissions(tmp_path / "missing")


def test_a_recording_is_read_only_from_a_single_line_with_the_nonce():
    cell = nbformat.v4.new_code_cell("")
    marker = RESULT_MARKER + "abc "

    def printed(text):
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        return grade._read_recording(cell, marker)

    assert printed(f'scratch\n{marker}{{"format": 1}}\n') == ('{"format": 1}', "")
    assert printed(f"{RESULT_MARKER}{{}}\n")[0] is None  # no nonce: ignored
    text, why = printed(f"{marker}{{}}\n{marker}{{}}\n")  # the notebook printed an imitation as well
    assert text is None and "more than one" in why


def test_a_kernel_folder_leaves_room_for_its_sockets_under_a_deep_tmpdir(tmp_path, monkeypatch):
    """A Unix socket's path holds at most 107 bytes: under pytest-xdist's deep TMPDIR (112 bytes to a kernel's socket)
    ZeroMQ refused to bind, and a solved notebook failed every check with no word in its note."""
    import os
    import tempfile

    deep = tmp_path / ("d" * 80)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    box = sandbox.Sandbox(None, unsandboxed=True)  # type: ignore[arg-type]  # (the library is not read here)
    try:
        assert len(os.fsencode(str(Path(box.sockets, "kernel-65535")))) <= 107, box.sockets
    finally:
        box.close()
    short = tempfile.mkdtemp(prefix="k", dir="/tmp")  # (tmp_path itself can be too deep under pytest-xdist)
    try:
        monkeypatch.setattr(tempfile, "tempdir", short)  # short enough: the kernel's folder stays there
        assert sandbox.kernel_root() == short
    finally:
        os.rmdir(short)


def test_a_kernel_that_cannot_run_says_why_in_the_row_note():
    from transformer_lib.classroom.kernels import CellRun
    from transformer_lib.classroom.notebook import _gather
    from transformer_lib.classroom.runs import NotebookRun
    from transformer_lib.classroom.sheet_rows import exercise_rows

    assignment = ASSIGNMENTS["01_tokenizer"]
    run = NotebookRun(assignment, [], {}, None, None, "python3", 5, 1, 1, 0, 30, "m")  # type: ignore[arg-type]
    failed = CellRun()
    failed.failure = "ZMQError: File name too long"
    assert run._go_on(failed, list(assignment.exercises)) is False
    graded = grade.GradedNotebook("alice", assignment.id, Path("01_tokenizer.ipynb"))
    _gather(graded, run, {})
    (note,) = {r["note"] for r in exercise_rows([graded])}
    assert "Running the notebook failed: ZMQError: File name too long" in note, note


@pytest.fixture(scope="module")
def scheduler():
    """The Dask cluster this file's classes are graded on, reached by its address as a teacher's ``--scheduler``: the
    embedded cluster's own (:func:`~transformer_lib.classroom.cluster.local_cluster`, two workers), started once
    instead of once per class (each start and stop cost 5.7 CPU s; tests/test_cluster.py tests the embedded one).
    What a class gets here that an embedded run does not: workers that graded the file's earlier classes, with
    their folders and their library copy of each assignment (made once per worker, checked after every notebook,
    as on a teacher's cluster), in the environment they were started in, and two of them whatever the class's size;
    the sandbox is probed by the workers, not the teacher's process."""
    with cluster.local_cluster(2) as local:
        yield local.scheduler_address


def test_unreadable_and_unknown_notebooks_need_no_kernel(tmp_path, capsys, scheduler):
    for student, name in (("dave", "01_tokenizer.ipynb"), ("erin", "notes.ipynb")):
        (tmp_path / "in" / student).mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / student / name, tmp_path / "in" / student / name)
    (tmp_path / "in" / "frank").mkdir()
    (tmp_path / "in" / "frank" / "04_masks.ipynb").write_text('{"nbformat": 4}')  # JSON, but no cells
    code = grade.main(
        [str(tmp_path / "in"), "--out", str(tmp_path / "out" / "g.csv"), "--no-progress", "--scheduler", scheduler]
    )
    n = len(exercises("01_tokenizer")) + 1 + len(exercises("04_masks"))  # dave's, erin's unknown file, frank's
    assert code == 0 and f"Graded 3 notebooks of 3 students: 0/{n} exercises pass" in capsys.readouterr().out
    rows = list(csv.DictReader(open(tmp_path / "out" / "g.csv", encoding="utf-8")))
    missing = [(r["student"], r["assignment"]) for r in rows if r["message"] == "no submission"]
    assert missing == [("dave", "04_masks"), ("erin", "01_tokenizer"), ("erin", "04_masks"), ("frank", "01_tokenizer")]
    rows = [r for r in rows if r["message"] != "no submission"]
    assert [(r["student"], r["exercise"], r["passed"]) for r in rows] == [
        *[("dave", name, "0") for name in exercises("01_tokenizer")],
        ("erin", "-", "0"),
        *[("frank", name, "0") for name in exercises("04_masks")],
    ]
    assert all("could not be read" in r["message"] for r in rows if r["student"] != "erin")
    assert "Unknown assignment file name 'notes.ipynb'" in next(r for r in rows if r["student"] == "erin")["message"]
    feedback = (tmp_path / "out" / "feedback" / "dave.md").read_text()
    assert "The notebook could not be read (NotJSONError" in feedback
    assert grade.main([str(tmp_path / "nothing"), "--out", str(tmp_path / "g.csv")]) == 2


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(cell_timeout=0), "cell_timeout: expected a number of seconds >= 1, got 0"),
        (dict(cell_timeout="60"), "cell_timeout: expected a number of seconds >= 1, got '60'"),
        (dict(grace=-1), "grace: expected a number of seconds >= 0.1, got -1"),
        (dict(time_limit=float("nan")), "time_limit: expected a number of seconds >= 0, got nan"),
    ],
)
def test_bad_time_limits_name_themselves(kw, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        grade.grade_notebook(FIXTURES / "alice" / "03_attention.ipynb", **kw)


def test_feedback_lists_results_details_and_tiered_hints(tmp_path):
    g = grade.GradedNotebook(
        "zoe",
        "03_attention",
        tmp_path,
        [CheckResult("attention", False, "The weights differ.", "Expected 1\nGot 2", ("First.", "Second."))],
        ["Cell 4 raised ValueError: bad"],
    )
    text = grade.feedback_markdown("zoe", [g])
    assert text.startswith("# Feedback for zoe\n") and "| 03_attention | attention | FAIL |" in text
    assert "## 03_attention: 0 of 1 exercises pass" in text and "```text\nExpected 1\nGot 2\n```" in text
    assert "**Hint:** First." in text and "<summary>Hint 2</summary>\n\nSecond." in text
    assert "- Cell 4 raised ValueError: bad" in text


# --------------------------------------------------------------------------------------------------------------
# With kernels: the whole fixture folder (six kernels, two at a time; about 35 s of CPU)
# --------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graded(tmp_path_factory, scheduler):
    out = tmp_path_factory.mktemp("grades") / "grades.csv"
    grade.grade_folder(FIXTURES, out, cell_timeout=10, time_limit=3, progress=False, scheduler=scheduler)
    with open(out, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    # the tests below read the columns by position and count the graded rows: leave out the roster's columns and
    # the "no submission" rows of students who handed in other assignments (tests/test_sheets.py tests those)
    keep = [i for i, column in enumerate(rows[0]) if column not in ("lms_id", "email")]
    message = rows[0].index("message")
    rows = [[r[i] for i in keep] for r in rows if r[message] != "no submission"]
    return rows, out.parent / "feedback"


def row(rows, student, assignment, exercise):
    (hit,) = [r for r in rows[1:] if r[:3] == [student, assignment, exercise]]
    return hit


@pytest.mark.slow
def test_csv_has_one_row_per_exercise(graded):
    rows, _ = graded
    assert rows[0][:5] == ["student", "assignment", "exercise", "passed", "message"]  # then the gradebook's columns
    expected = (
        sum(
            len(ASSIGNMENTS[a].exercises)
            for a in (
                "03_attention",
                "03_attention",
                "02_positional_encoding",
                "04_masks",
                "01_tokenizer",
                "03_attention",
                "04_masks",
            )
        )
        + 1
    )  # + the unknown notebook
    assert len(rows) - 1 == expected


@pytest.mark.slow
def test_correct_and_wrong_submissions(graded):
    rows, feedback = graded
    assert row(rows, "alice", "03_attention", "attention")[3] == "1"
    bob = row(rows, "bob", "03_attention", "attention")
    assert bob[3] == "0" and "The scores are √d_k too large: did you divide q·kᵀ by √d_k?" in bob[4]
    text = (feedback / "bob.md").read_text()
    assert "### attention: FAIL" in text and "Expected weights[0, 0, :]" in text and "<summary>Hint 2</summary>" in text
    assert "| 03_attention | attention | PASS |" in (feedback / "alice.md").read_text()


@pytest.mark.slow
def test_an_endless_loop_is_stopped_and_grading_goes_on(graded):
    rows, feedback = graded
    r = row(rows, "carol", "02_positional_encoding", "positional_encoding")
    assert r[3] == "0" and "did not finish within 3 s" in r[4] and "loop that never ends" in r[4]
    assert "did not finish within 10 s and was stopped" in (feedback / "carol.md").read_text()


@pytest.mark.slow
def test_a_syntax_error_fails_only_what_depends_on_it(graded):
    rows, feedback = graded
    assert [row(rows, "carol", "04_masks", e)[3] for e in ("padding_mask", "causal_mask", "decoder_mask")] == [
        "1",
        "0",
        "0",
    ]
    assert "make_causal_mask is not defined" in row(rows, "carol", "04_masks", "causal_mask")[4]
    assert "NameError" in row(rows, "carol", "04_masks", "decoder_mask")[4]
    assert "raised SyntaxError" in (feedback / "carol.md").read_text()


@pytest.mark.slow
def test_raising_and_unreadable_submissions(graded):
    rows, feedback = graded
    r = row(rows, "dave", "03_attention", "attention")
    assert r[3] == "0" and "attention raised RuntimeError" in r[4]
    text = (feedback / "dave.md").read_text()
    assert "scores = q @ k.T" in text and "k.transpose(-2, -1)" in text  # the failing line and the detailed hint
    assert all(
        row(rows, "dave", "01_tokenizer", e)[3] == "0"
        and "could not be read" in row(rows, "dave", "01_tokenizer", e)[4]
        for e in ("build_vocab", "encode", "pad_sequences")
    )


@pytest.mark.slow
def test_missing_cells_and_unknown_names(graded):
    rows, feedback = graded
    assert [row(rows, "erin", "04_masks", e)[3] for e in ("padding_mask", "causal_mask", "decoder_mask")] == [
        "1",
        "1",
        "0",
    ]
    assert "make_decoder_mask is not defined" in row(rows, "erin", "04_masks", "decoder_mask")[4]
    assert row(rows, "erin", "notes", "-")[3] == "0"
    assert sorted(p.name for p in feedback.iterdir()) == ["alice.md", "bob.md", "carol.md", "dave.md", "erin.md"]


# --------------------------------------------------------------------------------------------------------------
# A hostile class (tests/fixtures/hostile/make_hostile.py): eight notebooks, two at a time, about 40 s (the ninth,
# ref, is graded in this process: test_a_reference_call_fails_and_is_flagged)
# --------------------------------------------------------------------------------------------------------------
HOSTILE = Path(__file__).resolve().parent / "fixtures" / "hostile"
_CELL_TIMEOUT = 8
needs_namespaces = pytest.mark.skipif(bool(sandbox.bwrap_problem()), reason=sandbox.bwrap_problem() or "bwrap works")


def _library_digest():
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(class_folder._LIBRARY.rglob("*.py")))).hexdigest()


def _daemons():
    """Processes that the daemon submission left behind (it marks its own environment)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if b"TL_HOSTILE_DAEMON=1" in (entry / "environ").read_bytes():
                found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, scheduler):
    """The class graded from a copy whose path the snoop is told (a student may know or guess it)."""
    folder = tmp_path_factory.mktemp("hostile") / "class"
    shutil.copytree(HOSTILE, folder, ignore=shutil.ignore_patterns("*.py", "ref"))  # ref: graded in this process
    snoop = nbformat.read(folder / "snoop" / "03_attention.ipynb", as_version=4)
    (cell,) = [c for c in snoop.cells if "GRADED = None" in c.source]
    cell.source = cell.source.replace("GRADED = None", f"GRADED = {str(folder)!r}")
    nbformat.write(snoop, folder / "snoop" / "03_attention.ipynb")
    out = folder.parent / "out" / "grades.csv"
    before = _library_digest()
    graded = grade.grade_folder(
        folder, out, cell_timeout=_CELL_TIMEOUT, time_limit=3, progress=False, scheduler=scheduler
    )
    sheet = out.read_bytes()
    return {g.student: g for g in graded}, out, sheet, before


def _passed(g):
    return [r.passed for r in g.results]


def _cell_number(student, needle):
    nb = nbformat.read(
        HOSTILE / student / "03_attention.ipynb"
        if (HOSTILE / student / "03_attention.ipynb").exists()
        else HOSTILE / student / "04_masks.ipynb",
        as_version=4,
    )
    (number,) = [i for i, c in enumerate(nb.cells, start=1) if c.cell_type == "code" and needle in c.source]
    return number


def test_a_reference_call_fails_and_is_flagged():
    """The library copy of assignment 3 holds a stub of tl.scaled_dot_product_attention (classroom/stubs.py): an
    answer that only calls it gets nothing back but an error, and the source flag stays. Graded as the grader grades
    it, in this process under the kernel's stubs (tests/test_checks_under_stubs.py): a call of a stubbed reference in
    a real kernel, failed and flagged, is tests/test_attacks.py's (vocablib, mhalib: one kernel less here)."""
    from test_checks_under_stubs import kernel_namespace, record_and_replay

    from transformer_lib.classroom import integrity, notebook, source

    path = HOSTILE / "ref" / "03_attention.ipynb"
    assignment = ASSIGNMENTS["03_attention"]
    (ex,) = assignment.exercises
    namespace, _ = kernel_namespace(assignment, path)
    result, _, _ = record_and_replay(assignment, ex, namespace)
    assert not result.passed and "ReferenceRemoved" in result.summary, result.summary
    cells, why = notebook._code_cells(path)
    assert cells is not None, why
    flags = integrity.flags(source.read_cells(code for _, code in cells), {ex.name: ex.names})[ex.name]
    assert flags == ["uses the library's reference tl.scaled_dot_product_attention: the teacher decides"]


@pytest.mark.slow
def test_an_honest_answer_is_not_flagged(hostile):
    (honest,) = hostile[0]["hung"].results
    assert [f for f in honest.flags if "near-identical" not in f] == []


@pytest.mark.slow
def test_patched_checks_and_a_patched_library_cannot_pass_stubs(hostile):
    graded, _, _, before = hostile
    for student in ("patch", "libpatch", "untouched"):
        assert _passed(graded[student]) == [False] * len(exercises("04_masks")), student
    # the patch forges the recording of the decoder's mask; every other check's recording no longer matches
    forged = ["RecordingError" if name == "decoder_mask" else "RecordingMismatch" for name in exercises("04_masks")]
    assert [r.error for r in graded["patch"].results] == forged
    assert any("_CHECKS" in f for f in graded["patch"].results[0].flags)
    assert all(r.not_implemented for r in graded["untouched"].results + graded["libpatch"].results)
    assert _library_digest() == before  # the library the grader imports is untouched


@pytest.mark.slow
@needs_namespaces
def test_a_kernel_finds_no_other_submission(hostile):
    assert _passed(hostile[0]["snoop"]) == [True]  # its answer turns wrong if it finds another student's notebook


@pytest.mark.slow
@needs_namespaces
def test_a_detached_process_is_killed_and_the_sheet_stays(hostile):
    graded, out, sheet, _ = hostile
    assert _passed(graded["daemon"]) == [True]
    assert _daemons() == []
    time.sleep(1.5)  # the daemon would rewrite every grades.csv under /tmp twice a second
    assert out.read_bytes() == sheet and b"hacked" not in sheet


@pytest.mark.slow
def test_a_cell_that_ignores_interrupts_is_killed_and_named(hostile):
    g = hostile[0]["hung"]
    number = _cell_number("hung", "except BaseException")
    assert _passed(g) == [True]
    assert any(
        p.startswith(f"Cell {number} did not finish within {_CELL_TIMEOUT} s and ignored the interrupt")
        for p in g.problems
    ), g.problems
    n_cells = sum(c.cell_type == "code" for c in nbformat.read(HOSTILE / "hung" / "03_attention.ipynb", 4).cells)
    assert g.seconds < _CELL_TIMEOUT * (n_cells + 1) + grade._SLACK  # the bound grade_notebook promises


@pytest.mark.slow
def test_an_exiting_scratch_cell_does_not_zero_correct_functions(hostile):
    g = hostile[0]["exit"]
    assert _passed(g) == [True] * len(exercises("04_masks"))
    assert any(p.startswith(f"Cell {_cell_number('exit', 'os._exit')} stopped the kernel") for p in g.problems)


@pytest.mark.slow
def test_forged_result_lines_are_ignored(hostile):
    (result,) = hostile[0]["forge"].results
    assert not result.passed and "more than one recording" in result.summary
    assert "touches IPython event hooks: the teacher decides" in result.flags

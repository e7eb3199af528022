"""The gradebook on a fixture class: points from the registry (extensions not in the maximum), which file is graded
(student folders, LMS bulk-download names, a roster, duplicates), the three sheets, the feedback, the checksum
manifest and atomic writes; one end-to-end run of the grader with kernels."""

import csv
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
import pytest
from registry_points import exercises, maximum, points, shown

from transformer_lib.classroom import grade, gradebook
from transformer_lib.classroom.assignments import ASSIGNMENTS, BEGIN, END, Exercise
from transformer_lib.classroom.checks import CheckResult
from transformer_lib.classroom.submissions import assignment_for, collect_submissions, parse_lms_name, read_roster

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "submissions"
TEMPLATES = ROOT / "book" / "assignments"


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def touch(path, mtime, text="{}"):
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


# --------------------------------------------------------------------------------------------------------------
# Points
# --------------------------------------------------------------------------------------------------------------
def test_points_are_set_in_the_registry_and_extensions_are_extra_credit():
    for assignment in ASSIGNMENTS.values():  # any total: the registry decides it, and nothing else retypes it
        required = [ex.points for ex in assignment.exercises if not ex.extension]
        assert required and assignment.max_points == sum(required) > 0, assignment.id
    decoder = ASSIGNMENTS["06_decoder"]
    beam = decoder.exercise("beam_search")
    assert beam.extension and decoder.max_points == sum(ex.points for ex in decoder.exercises) - beam.points
    assert decoder.exercise("nope") is None


def test_every_registered_check_is_exported_by_the_checks_package():
    """A notebook's check cell and the grader find a check as ``checks.<name>``: a check written in its module but
    not imported into transformer_lib/classroom/checks/__init__.py (and its ``__all__``) is named here."""
    from transformer_lib.classroom import checks

    registered = {ex.check for a in ASSIGNMENTS.values() for ex in a.exercises}
    missing = sorted(name for name in registered if not callable(getattr(checks, name, None)))
    assert not missing, f"checks not exported from transformer_lib/classroom/checks/__init__.py: {missing}"
    assert not registered - set(checks.__all__), sorted(registered - set(checks.__all__))
    for bad in (0, -1, "2", True):
        with pytest.raises(ValueError, match=r"points: expected a number > 0 for check_f, got"):
            Exercise(("f",), "check_f", points=bad)


# --------------------------------------------------------------------------------------------------------------
# Which file is whose
# --------------------------------------------------------------------------------------------------------------
def test_lms_bulk_download_names():
    a3, a4 = ASSIGNMENTS["03_attention"], ASSIGNMENTS["04_masks"]
    assert parse_lms_name("smithjohn_123_03_attention.ipynb") == ("smithjohn", "123", False, a3)
    assert parse_lms_name("smithjohn_late_123_456_04_masks-1.ipynb") == ("smithjohn", "123", True, a4)  # Canvas
    assert parse_lms_name("John Smith_4711_assignsubmission_file_03_attention.ipynb") == (
        "John Smith",
        "4711",
        False,
        a3,
    )  # Moodle
    assert parse_lms_name("smithjohn_123_456_03_attention (1).ipynb")[3] is a3
    for not_lms in ("03_attention.ipynb", "smithjohn_123_notes.ipynb", "smithjohn_03_attention.ipynb"):
        assert parse_lms_name(not_lms) is None, not_lms
    assert assignment_for("x/smithjohn_123_03_attention.ipynb") is a3
    assert assignment_for(Path("03_attention (2).ipynb")) is a3
    assert assignment_for("x/attention.ipynb") is None


@pytest.fixture
def messy_class(tmp_path):
    """Student folders with duplicates, and LMS files, one of them late, and a file that is neither."""
    c = tmp_path / "class"
    touch(c / "alice" / "03_attention.ipynb", 1_000)
    touch(c / "alice" / "03_attention (1).ipynb", 2_000)  # newer: graded
    touch(c / "bob" / "03_attention.ipynb", 3_000)  # newer than the copy numbered (1): graded
    touch(c / "bob" / "03_attention (1).ipynb", 1_000)
    touch(c / "carol" / "04_masks.ipynb", 5_000)
    touch(c / "carol" / "04_masks (2).ipynb", 5_000)  # same time: the higher copy number
    touch(c / "carol" / "04_masks (1).ipynb", 5_000)
    touch(c / ".ipynb_checkpoints" / "03_attention.ipynb", 9_000)
    touch(c / "smithjohn_123_03_attention.ipynb", 1_000)
    touch(c / "smithjohn_late_123_456_04_masks-1.ipynb", 1_000)
    touch(c / "doejane_77_03_attention.ipynb", 1_000)
    touch(c / "readme.ipynb", 1_000)
    touch(c / "Jim Beam_4711_assignsubmission_file_" / "03_attention.ipynb", 1_000)  # Moodle's download in folders
    touch(c / "__MACOSX" / "._smithjohn_123_03_attention.ipynb", 1_000)
    touch(c / "._doejane_77_03_attention.ipynb", 1_000)
    (tmp_path / "roster.csv").write_text(
        "student,lms_id,lms_name\nJohn Smith,123,\nJane Doe,,DoeJane\nAlice A.,,alice\nJames Beam,4711,\n",
        encoding="utf-8",
    )
    return c


def test_student_folders_lms_names_and_the_rule_for_duplicates(messy_class):
    found = {(s.student, s.assignment): s for s in collect_submissions(messy_class)}
    assert sorted(found) == [
        ("Jim Beam", "03_attention"),
        ("alice", "03_attention"),
        ("bob", "03_attention"),
        ("carol", "04_masks"),
        ("doejane", "03_attention"),
        ("readme", "readme"),
        ("smithjohn", "03_attention"),
        ("smithjohn", "04_masks"),
    ]
    alice, bob, carol = found["alice", "03_attention"], found["bob", "03_attention"], found["carol", "04_masks"]
    assert alice.path.name == "03_attention (1).ipynb" and [p.name for p in alice.others] == ["03_attention.ipynb"]
    assert "not graded: 03_attention.ipynb" in alice.notes[-1] and "most recently modified of 2" in alice.notes[-1]
    assert bob.path.name == "03_attention.ipynb" and [p.name for p in bob.others] == ["03_attention (1).ipynb"]
    assert carol.path.name == "04_masks (2).ipynb"
    assert [p.name for p in carol.others] == ["04_masks (1).ipynb", "04_masks.ipynb"]
    assert found["smithjohn", "04_masks"].notes == ("Late, according to the LMS file name.",)
    assert not found["readme", "readme"].known and "neither" in found["readme", "readme"].notes[0]
    assert grade.find_submissions(messy_class)[0] == ("alice", alice.path)  # the grader's list: graded files only


def test_a_roster_maps_lms_ids_and_names_and_folder_names(messy_class, tmp_path):
    roster = read_roster(tmp_path / "roster.csv")
    assert roster == {"123": "John Smith", "doejane": "Jane Doe", "alice": "Alice A.", "4711": "James Beam"}
    found = {(s.student, s.assignment): s for s in collect_submissions(messy_class, roster)}
    assert {"John Smith", "Jane Doe", "Alice A.", "James Beam"} <= {student for student, _ in found}
    assert found["John Smith", "04_masks"].notes == ("Late, according to the LMS file name.",)
    assert found["bob", "03_attention"].notes[0] == "'bob' is not in the roster."
    assert found["Jane Doe", "03_attention"].notes == ()


@pytest.mark.parametrize(
    "text, message",
    [
        ("name,lms_id\nJohn,1\n", "expected a CSV whose header has 'student'"),
        ("student,email\nJohn,j@x\n", "'lms_id' and/or 'lms_name'"),
        ("student,lms_id\nJohn,1\nJane,1\n", "'1' on line 3 .* maps to both 'John' and 'Jane'"),
        ("student,lms_id\n,1\n", "line 2 .* has no student name"),
    ],
)
def test_a_bad_roster_is_refused_with_the_reason(tmp_path, text, message):
    (tmp_path / "r.csv").write_text(text)
    with pytest.raises(ValueError, match=f"roster: .*{message}"):
        read_roster(tmp_path / "r.csv")


# --------------------------------------------------------------------------------------------------------------
# The sheets, from grading results (no kernel)
# --------------------------------------------------------------------------------------------------------------
def graded_class(tmp_path):
    def result(name, passed, flags=()):
        r = CheckResult(name, passed, "Fine." if passed else "Wrong.", "", () if passed else ("Look again.",))
        if flags:
            r.flags = list(flags)  # what the grader's integrity work adds to a result
        return r

    g = grade.GradedNotebook
    return [
        g(
            "zoe",
            "03_attention",
            tmp_path / "a.ipynb",
            [result("attention", True)],
            [],
            "zoe/03_attention (1).ipynb",
            "ab" * 32,
            ["Graded 03_attention (1).ipynb, the most recently modified of 2 files."],
        ),
        g(
            "zoe",
            "06_decoder",
            tmp_path / "b.ipynb",
            [
                result("decoder_layer", True, ["calls tl.DecoderLayer: the teacher decides"]),
                result("greedy_decode", False),
                result("beam_search", True),
            ],
            [],
            "zoe/06_decoder.ipynb",
            "cd" * 32,
        ),
        g(
            "yan",
            "03_attention",
            tmp_path / "c.ipynb",
            [result("attention", False)],
            ["Cell 4 raised ValueError"],
            "yan_7_03_attention.ipynb",
            "ef" * 32,
        ),
        g(
            "erin",
            "notes",
            tmp_path / "d.ipynb",
            [],
            ["Unknown assignment file name 'notes.ipynb'."],
            "erin/notes.ipynb",
        ),
    ]


def test_the_per_exercise_sheet_has_points_optional_flags_file_and_hash(tmp_path):
    written = gradebook.write_gradebook(tmp_path / "out" / "grades.csv", graded_class(tmp_path))
    rows = read_csv(tmp_path / "out" / "grades.csv")
    assert list(rows[0]) == list(gradebook.EXERCISE_COLUMNS)
    by = {(r["student"], r["exercise"]): r for r in rows if r["message"] != "no submission"}
    assert len(rows) == 6 + 3  # and a "no submission" row for yan's 06 and erin's 03 and 06
    missing = [(r["student"], r["assignment"], r["points"], r["max_points"]) for r in rows if r["exercise"] == "-"]
    m3, m6 = shown(maximum("03_attention")), shown(maximum("06_decoder"))
    assert missing[1:] == [
        ("erin", "03_attention", "0", m3),
        ("erin", "06_decoder", "0", m6),
        ("yan", "06_decoder", "0", m6),
    ]
    beam, greedy, layer = by["zoe", "beam_search"], by["zoe", "greedy_decode"], by["zoe", "decoder_layer"]
    beam_points = shown(points("06_decoder", "beam_search"))
    assert (beam["optional"], beam["points"], beam["max_points"], beam["passed"]) == (
        "1",
        beam_points,
        beam_points,
        "1",
    )
    assert (greedy["optional"], greedy["points"], greedy["max_points"]) == (
        "0",
        "0",
        shown(points("06_decoder", "greedy_decode")),
    )
    assert greedy["message"] == "Wrong. Hint: Look again."
    assert layer["flags"] == "calls tl.DecoderLayer: the teacher decides" and greedy["flags"] == ""
    zoe = by["zoe", "attention"]
    assert (zoe["points"], zoe["file_name"], zoe["sha256"]) == (m3, "zoe/03_attention (1).ipynb", "ab" * 32)
    assert zoe["note"].startswith("Graded 03_attention (1).ipynb")
    erin = by["erin", "-"]
    assert (erin["points"], erin["max_points"]) == ("0", "0") and "Unknown assignment" in erin["message"]
    assert set(written) == {
        tmp_path / "out" / n
        for n in (
            "grades.csv",
            "grades_totals.csv",
            "feedback/erin.md",
            "feedback/yan.md",
            "feedback/zoe.md",
            "grades.sha256",
        )
    }


def test_the_totals_sheet_counts_optional_points_as_extra_not_in_the_maximum(tmp_path):
    gradebook.write_gradebook(tmp_path / "grades.csv", graded_class(tmp_path))
    rows = read_csv(tmp_path / "grades_totals.csv")
    assert list(rows[0]) == [
        "student",
        "lms_id",
        "email",
        "03_attention",
        "03_attention_max",
        "06_decoder",
        "06_decoder_max",
        "extra",
        "total",
        "max",
        "note",
    ]
    m3, m6, both = (
        shown(maximum("03_attention")),
        shown(maximum("06_decoder")),
        shown(maximum("03_attention", "06_decoder")),
    )
    layer, beam = points("06_decoder", "decoder_layer"), points("06_decoder", "beam_search")
    zoe06 = layer + beam  # 06: the layer, and the beam (its points counted as extra too); greedy failed
    assert [list(r.values()) for r in rows] == [
        ["erin", "", "", "0", m3, "0", m6, "0", "0", both, "no submission: 03_attention, 06_decoder"],
        ["yan", "", "", "0", m3, "0", m6, "0", "0", both, "no submission: 06_decoder"],
        ["zoe", "", "", m3, m3, shown(zoe06), m6, shown(beam), shown(maximum("03_attention") + zoe06), both, ""],
    ]
    feedback = (tmp_path / "feedback" / "zoe.md").read_text()
    assert f"| 06_decoder | beam_search (optional) | PASS | {shown(beam)}/{shown(beam)} |" in feedback
    n = len(exercises("06_decoder"))
    assert (
        f"## 06_decoder: 2 of {n} exercises pass ({shown(layer)} of {m6} points, plus {shown(beam)} extra for the "
        "optional extension)"
    ) in feedback
    assert "*Graded 03_attention (1).ipynb, the most recently modified of 2 files.*" in feedback


def test_the_manifest_holds_each_files_sha256_and_sha256sum_accepts_it(tmp_path):
    written = gradebook.write_gradebook(tmp_path / "grades.csv", graded_class(tmp_path))
    manifest = (tmp_path / "grades.sha256").read_text().splitlines()
    assert len(manifest) == len(written) - 1  # every file but the manifest itself
    for line in manifest:
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == digest == written[tmp_path / name]
    assert written[tmp_path / "grades.sha256"] == hashlib.sha256((tmp_path / "grades.sha256").read_bytes()).hexdigest()
    if shutil.which("sha256sum"):
        assert subprocess.run(["sha256sum", "--quiet", "-c", "grades.sha256"], cwd=tmp_path).returncode == 0
        with open(tmp_path / "grades_totals.csv", "a") as f:
            f.write("mallory,10,10,0,20,20\n")  # changed afterwards: the check says so
        assert (
            subprocess.run(
                ["sha256sum", "--quiet", "-c", "grades.sha256"], cwd=tmp_path, capture_output=True
            ).returncode
            != 0
        )
    assert not list(tmp_path.rglob("*.tmp"))  # atomic writes leave no temporary file


def test_an_atomic_write_that_fails_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "grades.csv"
    assert gradebook.write_atomic(path, "old\n") == hashlib.sha256(b"old\n").hexdigest()

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(gradebook.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        gradebook.write_atomic(path, "new\n")
    assert path.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["grades.csv"]


# --------------------------------------------------------------------------------------------------------------
# Written answers
# --------------------------------------------------------------------------------------------------------------
def answered(tmp_path, name, answer=None, new_id=False):
    """The handed-out 03_attention with its answer cell's placeholder replaced by ``answer``."""
    nb = nbformat.read(TEMPLATES / "03_attention.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if "answer" in c.metadata.get("tags", [])]
    if answer is not None:
        cell.source = cell.source.replace("*Write your answer here.*", answer)
    if new_id:
        cell.id = "pasted-cell"
        cell.metadata.pop("tags")
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return grade.GradedNotebook(name, "03_attention", path, file_name=path.name, sha256="00" * 32)


def test_written_answers_one_row_per_question(tmp_path):
    solution = nbformat.read(ROOT / "assignments" / "03_attention.ipynb", as_version=4)
    (cell,) = [c for c in solution.cells if "answer" in c.metadata.get("tags", [])]
    teacher = cell.source.split(BEGIN)[1].split(END)[0].strip()
    graded = [
        answered(tmp_path, "ann", teacher),
        answered(tmp_path, "ben", "Both are about the scores."),
        answered(tmp_path, "cid"),
        answered(tmp_path, "dee", "1. NaN.\n2. The last axis,\n   the keys.", True),
    ]
    graded.append(grade.GradedNotebook("eve", "03_attention", tmp_path / "missing.ipynb"))
    rows = gradebook.answer_rows(graded, TEMPLATES)
    got = [(r["student"], r["question"], r["answer"], r["max_points"]) for r in rows]
    assert [g[:2] for g in got] == [
        ("ann", "1"),
        ("ann", "2"),
        ("ben", "1-2"),
        ("cid", "1-2"),
        ("dee", "1"),
        ("dee", "2"),
        ("eve", "1-2"),
    ]
    assert got[0][2].startswith("NaN") and got[0][3] == 1 and got[1][2].startswith("Over the keys")
    assert got[2][2:] == ("Both are about the scores.", 2) and got[3][2] == "" and got[6][2] == ""
    assert got[4][2] == "NaN." and got[5][2] == "The last axis, the keys."  # matched by its heading, not its id
    assert rows[0]["question_text"].startswith("What does your function return for a query whose keys are all")
    assert rows[1]["question_text"].startswith("Which axis does the softmax run over")
    assert rows[0]["points"] == "" and rows[0]["sha256"] == "00" * 32 and rows[0]["file_name"] == "ann.ipynb"


def test_a_students_text_cannot_become_a_spreadsheet_formula_or_a_path(tmp_path):
    graded = [
        answered(tmp_path, "ann", '=HYPERLINK("http://x", "click")'),
        answered(tmp_path, "eve", "+1"),
        answered(tmp_path, "bob", "- a list item"),
    ]
    graded[1].student = "../../etc/evil\nname"  # a name from a teacher's roster
    broken = tmp_path / "broken.ipynb"
    broken.write_text('{"cells": [{"cell_type": "markdown", "source": 3}, "junk"], "nbformat": 4}')
    graded.append(grade.GradedNotebook("cy", "03_attention", broken))
    gradebook.write_gradebook(tmp_path / "out" / "grades.csv", graded, templates=TEMPLATES)
    answers = {r["student"]: r["answer"] for r in read_csv(tmp_path / "out" / "grades_answers.csv")}
    assert answers["ann"] == '\'=HYPERLINK("http://x", "click")' and answers["../../etc/evil\nname"] == "'+1"
    assert answers["bob"] == "'- a list item" and answers["cy"] == ""
    assert sorted(p.name for p in (tmp_path / "out" / "feedback").iterdir()) == [
        "_.._etc_evil name.md",  # the line break became a space (clean_text), the separators underscores
        "ann.md",
        "bob.md",
        "cy.md",
    ]
    assert [r["exercise"] for r in read_csv(tmp_path / "out" / "grades.csv")] == ["-"] * 4  # a lone dash stays


# --------------------------------------------------------------------------------------------------------------
# End to end, with kernels: a duplicate, an LMS file, a roster (two kernels; about 15 s of CPU)
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_grading_a_class_writes_every_sheet_and_prints_the_checksums(tmp_path, capsys):
    c = tmp_path / "class"
    (c / "alice").mkdir(parents=True)
    shutil.copy(FIXTURES / "alice" / "03_attention.ipynb", c / "alice" / "03_attention.ipynb")
    shutil.copy(FIXTURES / "bob" / "03_attention.ipynb", c / "alice" / "03_attention (1).ipynb")
    shutil.copy(FIXTURES / "bob" / "03_attention.ipynb", c / "smithjohn_123_03_attention.ipynb")
    os.utime(c / "alice" / "03_attention (1).ipynb", (1_000, 1_000))  # the older copy: not graded
    (tmp_path / "roster.csv").write_text("student,lms_id\nJohn Smith,123\nAlice,\n")
    out = tmp_path / "out" / "grades.csv"
    code = grade.main(
        [
            str(c),
            "--out",
            str(out),
            "--roster",
            str(tmp_path / "roster.csv"),
            "--jobs",
            "2",
            "--no-progress",
            "--timeout",
            "30",
            "--check-time-limit",
            "5",
            "--lms",
            "canvas",
            "--key-file",
            str(tmp_path / "teacher.key"),
        ]
    )
    printed, errors = capsys.readouterr()
    assert code == 0
    rows = read_csv(out)
    m3 = shown(maximum("03_attention"))
    john = shown(points("03_attention", "attention", failed_parts={"scaling"}))  # partial credit: the scaling is wrong
    assert [(r["student"], r["passed"], r["points"], r["file_name"]) for r in rows] == [
        ("alice", "1", m3, "alice/03_attention.ipynb"),
        ("John Smith", "0", john, "smithjohn_123_03_attention.ipynb"),
        ("Alice", "0", "0", ""),  # in the roster, but "alice" is not matched to her: a row all the same
    ]
    assert rows[0]["sha256"] == hashlib.sha256((c / "alice" / "03_attention.ipynb").read_bytes()).hexdigest()
    assert "not graded: 03_attention (1).ipynb" in rows[0]["note"] and "not in the roster" in rows[0]["note"]
    assert [list(r.values()) for r in read_csv(tmp_path / "out" / "grades_totals.csv")] == [
        ["alice", "", "", m3, m3, "0", m3, m3, ""],
        ["Alice", "", "", "0", m3, "0", "0", m3, "no submission: 03_attention"],
        ["John Smith", "123", "", john, m3, "0", john, m3, ""],
    ]
    answers = read_csv(tmp_path / "out" / "grades_answers.csv")
    assert [(r["student"], r["question"]) for r in answers] == [
        ("alice", "1"),
        ("alice", "2"),
        ("John Smith", "1"),
        ("John Smith", "2"),
    ]
    assert answers[0]["answer"].startswith("NaN")
    assert "not graded: 03_attention (1).ipynb" in (tmp_path / "out" / "feedback" / "alice.md").read_text()
    for line in (tmp_path / "out" / "grades.sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((tmp_path / "out" / name).read_bytes()).hexdigest() == digest
        if name.endswith(".csv"):
            assert f"sha256 {digest}  {tmp_path / 'out' / name}" in printed
    manifest_digest = hashlib.sha256((tmp_path / "out" / "grades.sha256").read_bytes()).hexdigest()
    assert f"sha256 {manifest_digest}  {tmp_path / 'out' / 'grades.sha256'}" in printed
    assert not list((tmp_path / "out").rglob("*.tmp"))
    assert "Left out of grades_canvas.csv, for want of an lms_id in the roster: alice, Alice." in errors
    canvas = read_csv(tmp_path / "out" / "grades_canvas.csv")
    assert [(r["Student"], r["ID"], r["03_attention"]) for r in canvas] == [
        ("Points Possible", "", m3),
        ("John Smith", "123", john),
    ]
    assert f"Anchored every file with {tmp_path / 'teacher.key'} in {tmp_path / 'out' / 'grades.hmac'}" in printed
    assert grade.main(["verify", str(tmp_path / "out"), "--key-file", str(tmp_path / "teacher.key")]) == 0
    # the fixtures' buggy notebook is the solution without ÷√d_k: a copy but for one line, and flagged as such
    (pair,) = read_csv(tmp_path / "out" / "similarity.csv")
    assert (pair["student_a"], pair["student_b"], pair["exercise"]) == ("John Smith", "alice", "attention")
    assert "near-identical to alice's" in rows[1]["flags"]

"""The sheets an LMS takes as they are: the roster's ids and a row for every roster student, a maximum per
assignment, written answers merged by `tl-grade totals`, Moodle's and Canvas's import formats, and sheets anchored
with an HMAC that `tl-grade verify` checks (no kernel: grading results are made by hand)."""

import csv
import hashlib
import io
import subprocess
from pathlib import Path

import pytest
from registry_points import exercises, maximum, points, shown

from transformer_lib.classroom import grade, gradebook, lms, sheets
from transformer_lib.classroom.checks import CheckResult
from transformer_lib.classroom.submissions import roster_rows

ROOT = Path(__file__).resolve().parents[1]


def read_csv(path):
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture
def graded_run(tmp_path):
    """ann passed 03 and failed 04's causal mask; ben passed half of 03 (partial credit); cat handed in nothing."""
    roster = tmp_path / "roster.csv"
    roster.write_text(
        "student,lms_id,lms_name,email,section\n"
        "Ann Lee,101,leeann,ann@example.edu,A\n"
        "Ben Ode,102,odeben,ben@example.edu,A\n"
        "Cat Ray,103,raycat,cat@example.edu,B\n",
        encoding="utf-8",
    )

    def r(name, passed, parts=None):
        return CheckResult(
            name, passed, "ok" if passed else "Wrong.", "", () if passed else ("Look.",), parts=parts or {}
        )

    g = grade.GradedNotebook
    half = {"scaling": False, "softmax rows": True, "masking": True, "returned weights": True}
    graded = [
        g("Ann Lee", "03_attention", tmp_path / "a.ipynb", [r("attention", True)], file_name="a", sha256="0" * 64),
        g(
            "Ann Lee",
            "04_masks",
            tmp_path / "b.ipynb",
            [r("padding_mask", True), r("causal_mask", False), r("decoder_mask", True)],
        ),
        g("Ben Ode", "03_attention", tmp_path / "c.ipynb", [r("attention", False, half)]),
    ]
    return tmp_path, graded, roster_rows(roster)


# What graded_run earns, from the registry: ann all of 03 and 04's padding and decoder masks; ben 03's parts but the
# scaling
ANN_03, ANN_04 = maximum("03_attention"), points("04_masks", "padding_mask") + points("04_masks", "decoder_mask")
BEN_03 = points("03_attention", "attention", failed_parts={"scaling"})
MAX = maximum("03_attention", "04_masks")


def test_every_roster_student_has_a_row_with_ids_and_a_maximum_per_assignment(graded_run):
    tmp_path, graded, roster = graded_run
    gradebook.write_gradebook(tmp_path / "grades" / "grades.csv", graded, roster=roster)
    totals = {r["student"]: r for r in read_csv(tmp_path / "grades" / "grades_totals.csv")}
    assert list(totals) == ["Ann Lee", "Ben Ode", "Cat Ray"]
    ann, ben, cat = totals["Ann Lee"], totals["Ben Ode"], totals["Cat Ray"]
    assert (ann["lms_id"], ann["email"]) == ("101", "ann@example.edu")
    assert (ann["03_attention"], ann["04_masks"], ann["total"], ann["max"]) == tuple(
        map(shown, (ANN_03, ANN_04, ANN_03 + ANN_04, MAX))
    )
    assert (ben["03_attention"], ben["04_masks"], ben["note"]) == (shown(BEN_03), "0", "no submission: 04_masks")
    assert (cat["03_attention"], cat["04_masks"], cat["total"]) == ("0", "0", "0")
    assert cat["note"] == "no submission: 03_attention, 04_masks"
    assert (ann["03_attention_max"], ann["04_masks_max"]) == (
        shown(maximum("03_attention")),
        shown(maximum("04_masks")),
    )
    rows = read_csv(tmp_path / "grades" / "grades.csv")
    cat_rows = [
        (r["assignment"], r["points"], r["max_points"], r["message"]) for r in rows if r["student"] == "Cat Ray"
    ]
    assert cat_rows == [
        ("03_attention", "0", shown(maximum("03_attention")), "no submission"),
        ("04_masks", "0", shown(maximum("04_masks")), "no submission"),
    ]
    assert all(r["lms_id"] and r["email"] for r in rows)
    ben_row = next(r for r in rows if r["student"] == "Ben Ode" and r["exercise"] == "attention")
    assert ben_row["points"] == shown(BEN_03) and "Parts: scaling FAIL, softmax rows PASS" in ben_row["message"]


def _answers(tmp_path, points):
    path = tmp_path / "answers.csv"
    rows = [("Ann Lee", "03_attention", "1", points[0], "1"), ("Ann Lee", "03_attention", "2", points[1], "1")]
    rows += [("Ben Ode", "03_attention", "1", points[2], "1"), ("Ben Ode", "03_attention", "2", "", "1")]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["student", "lms_id", "email", "assignment", "question", "question_text", "answer", "points", "max_points"]
        )
        w.writerows([(s, "", "", a, q, "?", "...", p, m) for s, a, q, p, m in rows])
    return path


def test_tl_grade_totals_merges_the_written_answers_points(graded_run):
    tmp_path, graded, roster = graded_run
    out = tmp_path / "grades"
    gradebook.write_gradebook(out / "grades.csv", graded, roster=roster)
    assert grade.main(["totals", str(out), "--answers", str(_answers(tmp_path, ["1", "0.5", "1"]))]) == 0
    totals = {r["student"]: r for r in read_csv(out / "grades_totals.csv")}
    ann, written = totals["Ann Lee"], 2  # two written questions of 1 point each; ann earned 1.5, ben 1
    assert (ann["03_attention"], ann["03_attention_max"]) == (shown(ANN_03 + 1.5), shown(maximum("03_attention") + 2))
    assert (ann["written"], ann["total"], ann["max"]) == ("1.5", shown(ANN_03 + ANN_04 + 1.5), shown(MAX + written))
    assert (totals["Ben Ode"]["03_attention"], totals["Ben Ode"]["max"]) == (shown(BEN_03 + 1), shown(MAX + written))
    assert (totals["Cat Ray"]["total"], totals["Cat Ray"]["max"]) == ("0", shown(MAX + written))
    for line in (out / "grades.sha256").read_text().splitlines():  # the manifest follows the new totals
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name
    with pytest.raises(
        ValueError,
        match=r"line 3 \(Ann Lee, 03_attention, question 2\): points: expected a number from 0 to 1, got '2'",
    ):
        sheets.retotal(out, _answers(tmp_path, ["1", "2", "1"]))


def _parse_like_moodle(text, item):
    """What Moodle's CSV grade import needs: a header; a column to identify users by (e-mail) mapped to a user,
    and the grade item's column holding a number (or empty)."""
    rows = list(csv.DictReader(io.StringIO(text)))
    assert "Email address" in rows[0] and item in rows[0]
    return {r["Email address"]: float(r[item]) for r in rows}


def _parse_like_canvas(text, item):
    """What Canvas's gradebook import needs: Student, ID, SIS User ID, SIS Login ID, Section, then assignment
    columns; a "Points Possible" row is read as the maximum; students are matched by ID; scores are numbers."""
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0])[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    possible = [r for r in rows if r["Student"].strip() == "Points Possible"]
    assert len(possible) == 1 and float(possible[0][item]) > 0
    return {int(r["ID"]): float(r[item]) for r in rows if r["Student"].strip() != "Points Possible"}


def test_the_totals_import_into_moodle_and_canvas(graded_run):
    tmp_path, graded, roster = graded_run
    columns, table = gradebook.totals_table(graded, roster)
    moodle = _parse_like_moodle(lms.lms_csv("moodle", columns, table, roster), "04_masks")
    assert moodle == {"ann@example.edu": ANN_04, "ben@example.edu": 0.0, "cat@example.edu": 0.0}  # one per student
    canvas = _parse_like_canvas(lms.lms_csv("canvas", columns, table, roster), "03_attention")
    assert canvas == {101: ANN_03, 102: BEN_03, 103: 0.0}
    assert "Section" in lms.lms_csv("canvas", columns, table, roster) and ",A," in lms.lms_csv(
        "canvas", columns, table, roster
    )
    with pytest.raises(
        ValueError, match=r"lms: moodle matches students by email; the roster gives no email for Ann Lee"
    ):
        lms.lms_csv("moodle", columns, [dict(table[0], email=""), *table[1:]])
    nobody = [dict(row, lms_id="") for row in table]  # no one the LMS could match: a header and a Points Possible row
    text = lms.lms_csv("canvas", columns, nobody, skip_unmatched=True)
    assert [r["Student"] for r in csv.DictReader(io.StringIO(text))] == ["Points Possible"]
    with pytest.raises(ValueError, match=r"lms: expected one of moodle, canvas, got 'blackboard'"):
        lms.lms_csv("blackboard", columns, table)


def test_an_edited_sheet_fails_verify_even_with_a_regenerated_sha256(graded_run):
    tmp_path, graded, roster = graded_run
    out, key_file = tmp_path / "grades", tmp_path / "teacher" / "grading.key"
    files = gradebook.write_gradebook(out / "grades.csv", graded, roster=roster)
    with pytest.raises(ValueError, match="key_file: must lie outside the output folder"):
        sheets.load_key(out / "k.key", out)
    key = sheets.load_key(key_file, out)  # created
    assert key_file.stat().st_mode & 0o077 == 0 and sheets.load_key(key_file, out) == key
    sheets.anchor(list(files), key, out / "grades.hmac")
    assert sheets.verify(out, key) == []
    assert grade.main(["verify", str(out), "--key-file", str(key_file)]) == 0
    totals = out / "grades_totals.csv"
    totals.write_text(totals.read_text().replace("Ben Ode,102,ben@example.edu,7", "Ben Ode,102,ben@example.edu,10"))
    subprocess.run("sha256sum feedback/*.md grades*.csv > grades.sha256", shell=True, cwd=out, check=True)
    assert subprocess.run(["sha256sum", "--quiet", "-c", "grades.sha256"], cwd=out).returncode == 0  # fooled
    assert sorted(sheets.verify(out, key)) == [
        "grades.sha256: changed since grading",
        "grades_totals.csv: changed since grading",
    ]
    assert grade.main(["verify", str(out), "--key-file", str(key_file)]) == 1
    other = tmp_path / "other.key"
    other.write_text("x" * 64)
    assert "another key" in sheets.verify(out, sheets.load_key(other, out))[0]  # a forged anchor needs the key
    with pytest.raises(ValueError, match="not re-anchored"):
        sheets.retotal(out, None, key_file=key_file)


def test_the_teachers_folders_are_ignored_by_git():
    for path in ("submissions/alice/03_attention.ipynb", "grades/grades.csv", "roster.csv", "teacher-book/x"):
        assert subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0, path


def test_the_optional_extension_is_never_more_than_the_maximum_in_the_feedback(tmp_path):
    results = [CheckResult(n, True, "ok") for n in exercises("06_decoder")]
    text = gradebook.feedback_markdown("zoe", [grade.GradedNotebook("zoe", "06_decoder", tmp_path / "x", results)])
    m6, beam = shown(maximum("06_decoder")), shown(points("06_decoder", "beam_search"))
    assert (
        f"## 06_decoder: 3 of 3 exercises pass ({m6} of {m6} points, plus {beam} extra for the optional extension)"
        in text
    )
    assert f"{shown(maximum('06_decoder') + points('06_decoder', 'beam_search'))} of {m6}" not in text


@pytest.mark.slow
def test_a_kernel_that_ignores_sigint_is_told_it_ignored_the_interrupt(tmp_path):
    import nbformat

    nb = nbformat.read(ROOT / "assignments" / "03_attention.ipynb", as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell(
            "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.05)"
        )
    )
    path = tmp_path / "kim" / "03_attention.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    g = grade.grade_notebook(path, "kim", cell_timeout=4, grace=1)
    (problem,) = [p for p in g.problems if p.startswith(f"Cell {len(nb.cells)} ")]
    assert "ignored the interrupt (it changes how SIGINT is handled), so its kernel was killed" in problem
    assert "BaseException" not in problem and [r.passed for r in g.results] == [True]


def test_the_filled_answers_sheet_is_merged_and_anchored_anew_with_the_key(graded_run):
    tmp_path, graded, roster = graded_run
    out, key_file = tmp_path / "grades", tmp_path / "teacher.key"
    templates = ROOT / "book" / "assignments"
    files = gradebook.write_gradebook(out / "grades.csv", graded, roster=roster, templates=templates)
    sheets.anchor(list(files), sheets.load_key(key_file, out), out / "grades.hmac")
    answers = gradebook.read_sheet(out / "grades_answers.csv")
    assert {r["student"] for r in answers} == {"Ann Lee", "Ben Ode"} and all(r["points"] == "" for r in answers)
    for r in answers:
        r["points"] = r["max_points"] if r["student"] == "Ann Lee" else "0"  # the teacher grades them
    (out / "grades_answers.csv").write_text(gradebook.csv_text(gradebook.ANSWER_COLUMNS, answers), encoding="utf-8")
    assert sheets.verify(out, sheets.load_key(key_file, out)) == ["grades_answers.csv: changed since grading"]
    argv = ["totals", str(out), "--answers", str(out / "grades_answers.csv"), "--lms", "canvas"]
    assert grade.main([*argv, "--roster", str(tmp_path / "roster.csv"), "--key-file", str(key_file)]) == 0
    assert sheets.verify(out, sheets.load_key(key_file, out)) == []  # the filled sheet and the new totals anchored
    ann = next(r for r in read_csv(out / "grades_totals.csv") if r["student"] == "Ann Lee")
    written = sum(int(r["max_points"]) for r in answers if r["student"] == "Ann Lee")
    assert written > 0 and ann["written"] == str(written) and ann["total"] == shown(ANN_03 + ANN_04 + written)
    canvas = {r["Student"]: r for r in read_csv(out / "grades_canvas.csv")}
    assert canvas["Ann Lee"]["Section"] == "A" and canvas["Points Possible"]["04_masks"] == shown(
        maximum("04_masks") + written // 2
    )

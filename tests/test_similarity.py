"""Copying between students: a renamed copy of a solution is flagged on both students' rows and in
similarity.csv; honest solutions written differently, and the starter code the handout gives, are not."""

import csv
import re
from pathlib import Path

import nbformat
import pytest

from transformer_lib.classroom import gradebook, similarity
from transformer_lib.classroom.checks import CheckResult
from transformer_lib.classroom.graded import GradedNotebook

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "book" / "assignments"

SIGNATURE = "def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:"
ALICE = """
    d_k = q.shape[-1]
    raw = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        raw = raw.masked_fill(~mask, float("-inf"))
    att = torch.softmax(raw, dim=-1)
    out = torch.matmul(att, v)
    return out, att
"""
BOB = """
    width = q.shape[-1]
    logits = q @ k.transpose(-2, -1) / math.sqrt(width)  # my own comment
    if mask is not None:
        logits = logits.masked_fill(~mask, float('-inf'))
    probs = torch.softmax(logits, dim=-1)
    result = torch.matmul(probs, v)
    return result, probs
"""  # alice's code with every name renamed, another quote style and a comment
CAROL = """
    scale = 1.0 / q.size(-1) ** 0.5
    sims = torch.einsum("...td,...sd->...ts", q * scale, k)
    blocked = torch.zeros_like(sims)
    if mask is not None:
        blocked = torch.where(mask, 0.0, -math.inf)
    sims = sims + blocked
    sims = sims - sims.amax(dim=-1, keepdim=True)
    e = sims.exp()
    w = e / e.sum(dim=-1, keepdim=True)
    return torch.einsum("...ts,...sd->...td", w, v), w
"""
DAN = """
    import torch.nn.functional as F
    w = F.softmax(
        (q.unsqueeze(-2) * k.unsqueeze(-3)).sum(-1) * q.shape[-1] ** -0.5
        + (0 if mask is None else (~mask).to(q.dtype) * -1e30),
        -1,
    )
    outputs = [w[..., t, :] @ v for t in range(w.shape[-2])]
    return torch.stack(outputs, dim=-2), w
"""


def _notebook(tmp_path, student, body):
    """The handed-out notebook with the student's body in place of the stub (None: untouched)."""
    nb = nbformat.read(TEMPLATES / "03_attention.ipynb", as_version=4)
    if body is not None:
        (cell,) = [c for c in nb.cells if c.cell_type == "code" and SIGNATURE in c.source]
        cell.source = re.sub(
            r"    # YOUR CODE HERE\n    raise NotImplementedError\(.*\)", body.strip("\n"), cell.source
        )
        assert "NotImplementedError" not in cell.source
    path = tmp_path / student / "03_attention.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    return GradedNotebook(student, "03_attention", path, [CheckResult("attention", True, "ok")])


@pytest.fixture
def class_of_five(tmp_path):
    bodies = {"alice": ALICE, "bob": BOB, "carol": CAROL, "dan": DAN, "eve": None, "fay": None}
    return [_notebook(tmp_path, student, body) for student, body in bodies.items()]


def test_a_renamed_copy_is_flagged_and_honest_solutions_and_starter_code_are_not(class_of_five, tmp_path):
    pairs = similarity.similar_pairs(class_of_five, TEMPLATES)
    assert [(p["student_a"], p["student_b"], p["exercise"]) for p in pairs] == [("alice", "bob", "attention")]
    assert pairs[0]["score"] >= 0.95
    similarity.flag_similar(class_of_five, pairs)
    flags = {g.student: g.results[0].flags for g in class_of_five}
    assert flags["alice"] == ["code near-identical to bob's (similarity 1.00, similarity.csv): the teacher decides"]
    assert flags["bob"][0].startswith("code near-identical to alice's") and flags["carol"] == flags["eve"] == []
    written = gradebook.write_gradebook(
        tmp_path / "grades" / "grades.csv",
        class_of_five,
        extra={tmp_path / "grades" / "similarity.csv": gradebook.csv_text(similarity.SIMILARITY_COLUMNS, pairs)},
    )
    assert tmp_path / "grades" / "similarity.csv" in written
    with open(tmp_path / "grades" / "similarity.csv", newline="") as f:
        assert [list(r.values()) for r in csv.DictReader(f)] == [["alice", "bob", "03_attention", "attention", "1.0"]]
    with open(tmp_path / "grades" / "grades.csv", newline="") as f:
        sheet = {r["student"]: r["flags"] for r in csv.DictReader(f)}
    assert "near-identical to bob's" in sheet["alice"] and sheet["carol"] == ""


def test_without_the_starter_code_left_out_untouched_notebooks_would_look_copied(class_of_five):
    # the docstring and signature are shared by everyone: only removing them as boilerplate keeps eve and fay apart
    assert {(p["student_a"], p["student_b"]) for p in similarity.similar_pairs(class_of_five, None)} >= {("eve", "fay")}
    for g in class_of_five[4:]:  # graded as what they are: the stub, not implemented
        g.results = [CheckResult("attention", False, "not yet", error="NotImplementedError")]
    assert ("eve", "fay") not in {
        (p["student_a"], p["student_b"]) for p in similarity.similar_pairs(class_of_five, None)
    }
    with pytest.raises(ValueError, match=r"threshold: expected a number in \(0, 1\], got 0"):
        similarity.similar_pairs(class_of_five, TEMPLATES, threshold=0)


# ALICE's body moved into a helper of the notebook (renamed), and into a file of the submission's own
GREG = """
    return _scores_then_weights(q, k, v, mask)


def _scores_then_weights(query, key, value, keep):
    width = query.shape[-1]
    logits = query @ key.transpose(-2, -1) / math.sqrt(width)
    if keep is not None:
        logits = logits.masked_fill(~keep, float('-inf'))
    probs = torch.softmax(logits, dim=-1)
    result = torch.matmul(probs, value)
    return result, probs
"""
HELPER_FILE = """import math
import torch


def attend(query, key, value, keep=None):
    return _inner(query, key, value, keep)


def _inner(a, b, c, keep):
    width = a.shape[-1]
    logits = a @ b.transpose(-2, -1) / math.sqrt(width)
    if keep is not None:
        logits = logits.masked_fill(~keep, float('-inf'))
    probs = torch.softmax(logits, dim=-1)
    result = torch.matmul(probs, c)
    return result, probs
"""


@pytest.mark.parametrize("where", ["a helper", "a file beside the notebook", "a file the notebook writes"])
def test_a_copy_moved_into_a_helper_or_a_file_of_the_submission_is_flagged(tmp_path, where):
    """Before, similarity compared only the graded function's body: a one-line `return helper(...)` matched nobody,
    and alice's copied body in the helper (or a file the notebook imports) went unseen. Now the helper is compared
    too; the glue (the wrapper's call, the helper's own signature) keeps a short copy's score near 0.65, under the
    default threshold of 0.8 and far above honest pairs (0.30 at most)."""
    if where == "a helper":
        copier = _notebook(tmp_path, "greg", GREG)
    elif where == "a file beside the notebook":
        copier = _notebook(tmp_path, "greg", "    return helpers.attend(q, k, v, mask)")
        (tmp_path / "greg" / "helpers.py").write_text(HELPER_FILE)
        nb = nbformat.read(copier.path, as_version=4)
        nb.cells.insert(1, nbformat.v4.new_code_cell("import helpers"))
        nbformat.write(nb, copier.path)
    else:
        copier = _notebook(tmp_path, "greg", "    return attend_as(q, k, v, mask)")
        nb = nbformat.read(copier.path, as_version=4)
        nb.cells.insert(1, nbformat.v4.new_code_cell("%%writefile helpers.py\n" + HELPER_FILE))
        nb.cells.insert(2, nbformat.v4.new_code_cell("from helpers import attend as attend_as"))
        nbformat.write(nb, copier.path)
    graded = [_notebook(tmp_path, s, b) for s, b in (("alice", ALICE), ("carol", CAROL), ("dan", DAN))] + [copier]
    pairs = similarity.similar_pairs(graded, TEMPLATES, threshold=0.5)  # honest pairs: 0.30 at most
    assert [(p["student_a"], p["student_b"]) for p in pairs] == [("alice", "greg")], pairs
    assert pairs[0]["score"] >= 0.5


def test_helpers_a_solution_shares_with_other_exercises_are_not_followed():
    """split_heads and merge_heads are graded on their own: two multi-head answers that call them are compared on
    their own code, not on the split and merge every student writes alike."""
    cells = [
        "def split_heads(x, n):\n    return x.view(x.shape[0], x.shape[1], n, -1).transpose(1, 2)\n",
        "def helper(x):\n    return x * 2\n",
        "class MultiHead:\n    def forward(self, x):\n        return helper(split_heads(x, 2))\n",
    ]
    code = similarity.solution_code(cells, ("MultiHead",), skip=("split_heads", "MultiHead"))
    assert "def helper" in code and "def split_heads" not in code and code.index("class MultiHead") == 0

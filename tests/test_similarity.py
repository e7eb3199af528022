"""Copying between students: a renamed copy of a solution is flagged on both students' rows and in
similarity.csv; honest solutions written differently, and the starter code the handout gives, are not."""

import csv
import re
from pathlib import Path

import nbformat
import pytest

from transformer_lib.classroom import gradebook, similarity, solution_code
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


# ALICE's body split over two helpers, called one inside the other (it ends its own way: 0.83, not 1.0)
TWO_HELPERS = """
    probs = _weights(_scores(q, k), mask)
    return torch.matmul(probs, v), probs


def _weights(logits, keep):
    if keep is not None:
        logits = logits.masked_fill(~keep, float('-inf'))
    return torch.softmax(logits, dim=-1)


def _scores(query, key):
    width = query.shape[-1]
    return query @ key.transpose(-2, -1) / math.sqrt(width)
"""
# an honest solution with independent lines (keys, d_k and scale can come in any order) ...
OLGA = """
    d_k = q.shape[-1]
    keys = k.transpose(-2, -1)
    scale = math.sqrt(d_k)
    raw = q @ keys / scale
    if mask is not None:
        raw = raw.masked_fill(~mask, float("-inf"))
    att = torch.softmax(raw, dim=-1)
    out = torch.matmul(att, v)
    return out, att
"""
# ... and its copy, renamed, moved into a helper, the independent lines swapped
OLGA_REORDERED = """
    return _helper(q, k, v, mask)


def _helper(query, key, value, keep):
    keys = key.transpose(-2, -1)
    width = query.shape[-1]
    scale = math.sqrt(width)
    logits = query @ keys / scale
    if keep is not None:
        logits = logits.masked_fill(~keep, float('-inf'))
    probs = torch.softmax(logits, dim=-1)
    result = torch.matmul(probs, value)
    return result, probs
"""
COPIES = {  # how the copy is made -> (the original, its copy's body, the copy's extra cells, a file beside it)
    "a helper": (ALICE, GREG, [], None),
    "two helpers": (ALICE, TWO_HELPERS, [], None),
    "reordered lines in a helper": (OLGA, OLGA_REORDERED, [], None),
    "a decorated helper": (ALICE, GREG.replace("\n\ndef _scores", "\n\n@torch.no_grad()\ndef _scores"), [], None),
    "a file beside the notebook": (ALICE, "    return helpers.attend(q, k, v, mask)", ["import helpers"], HELPER_FILE),
    "a file the notebook writes": (
        ALICE,
        "    return attend_as(q, k, v, mask)",
        ["%%writefile helpers.py\n" + HELPER_FILE, "from helpers import attend as attend_as"],
        None,
    ),
}


@pytest.mark.parametrize("how", list(COPIES))
def test_a_copy_moved_into_helpers_or_a_file_of_the_submission_is_flagged(tmp_path, how):
    """Before, the helper was compared as it was written: its call and its own signature were glue that the original
    lacks, so a copy moved into one helper scored 0.65, two helpers 0.38, a file 0.52, reordered lines in a helper
    0.53, a decorated helper 0.61, all under the default threshold of 0.8. Now helpers are inlined and independent
    lines put in one order: 1.0 (two helpers 0.83: the copy ends its own way); honest pairs stay at 0.30 at most."""
    original, body, extra_cells, beside = COPIES[how]
    copier = _notebook(tmp_path, "greg", body)
    nb = nbformat.read(copier.path, as_version=4)
    for i, source in enumerate(extra_cells, start=1):
        nb.cells.insert(i, nbformat.v4.new_code_cell(source))
    nbformat.write(nb, copier.path)
    if beside is not None:
        (tmp_path / "greg" / "helpers.py").write_text(beside)
    graded = [_notebook(tmp_path, s, b) for s, b in (("alice", original), ("carol", CAROL), ("dan", DAN))] + [copier]
    pairs = similarity.similar_pairs(graded, TEMPLATES)  # the default threshold
    assert [(p["student_a"], p["student_b"]) for p in pairs] == [("alice", "greg")], pairs
    assert pairs[0]["score"] >= similarity.DEFAULT_THRESHOLD
    honest = [p for p in similarity.similar_pairs(graded, TEMPLATES, threshold=0.01) if "greg" not in p.values()]
    assert max(p["score"] for p in honest) <= 0.3, honest  # clearly under the threshold


def test_independent_lines_are_put_in_one_order_and_dependent_ones_keep_theirs():
    orders = [
        ("y = b.sum(0)", "x = a.t()", "a.add_(1)", "z = x + a"),
        ("x = a.t()", "y = b.sum(0)", "a.add_(1)", "z = x + a"),
        ("x = a.t()", "a.add_(1)", "y = b.sum(0)", "z = x + a"),  # y crosses the in-place call: x cannot
    ]
    codes = [
        similarity.solution_code(["def f(a, b):\n" + "".join(f"    {s}\n" for s in o) + "    return z, y\n"], "f")
        for o in orders
    ]
    assert codes[0] == codes[1] == codes[2], codes
    assert codes[0].index("x = a.t()") < codes[0].index("a.add_(1)") < codes[0].index("z = x + a")
    chained = ["def f(p, r):\n    s = p.t()\n    t = r.sum(0)\n    w = s * 2\n    v = t * 3\n    return w, v\n"]
    code = similarity.solution_code(chained, ("f",))
    assert code.index("s = p.t()") < code.index("w = s * 2") and code.index("t = r.sum(0)") < code.index("v = t * 3")


def test_inlining_is_bounded():
    """A helper called 3,000 times, or a recursive one, is written out, not inlined past the bound; a block too long
    to order keeps its order."""
    calls = "\n".join(f"    y{i} = g(x)" for i in range(3000))
    wide = [f"def g(x):\n    u = x + 1\n    return u * 2\n\n\ndef f(x):\n{calls}\n    return x\n"]
    code = similarity.solution_code(wide, ("f",))
    assert code.count("u = x + 1") <= solution_code.MAX_INLINED // 2 + 1 and "def g(x)" in code  # + g itself
    recursive = ["def f(x):\n    return g(x)\n\n\ndef g(x):\n    return g(x - 1) if x else 0\n"]
    assert similarity.solution_code(recursive, ("f",)).count("def g") == 1
    for n, ordered in ((solution_code.MAX_ORDERED - 1, True), (solution_code.MAX_ORDERED, False)):  # + the return
        lines = "".join(f"    a{i} = x + {n - i}\n" for i in range(n))  # sorted, a1 (x + n - 1) comes first
        code = similarity.solution_code([f"def f(x):\n{lines}    return x\n"], ("f",))
        assert (code.index("a1 =") < code.index("a0 =")) is ordered


def test_helpers_a_solution_shares_with_other_exercises_are_not_followed():
    """split_heads and merge_heads are graded on their own: two multi-head answers that call them are compared on
    their own code, not on the split and merge every student writes alike."""
    cells = [
        "def split_heads(x, n):\n    return x.view(x.shape[0], x.shape[1], n, -1).transpose(1, 2)\n",
        "def helper(x):\n    return x * 2\n",
        "class MultiHead:\n    def forward(self, x):\n        return helper(split_heads(x, 2))\n",
    ]
    code = similarity.solution_code(cells, ("MultiHead",), skip=("split_heads", "MultiHead"))
    assert "x * 2" in code and "def split_heads" not in code and code.index("class MultiHead") == 0
    assert "def helper" not in code  # inlined: return x * 2 where helper(...) was called

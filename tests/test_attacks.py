"""Attacks on the grader, run as a student would: each must fail (0 points or a flag), and nothing of the teacher's
may reach a feedback file or a sheet.

The class (tests/fixtures/hostile/make_attacks.py) is graded once, next to a fake teacher's folder: an LMS zip,
roster.csv, a solutions folder and a secret in the grader's environment (LMS_API_TOKEN). Without bubblewrap the
kernel tests are skipped (tests/test_sandbox.py checks that the grader then refuses).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import nbformat
import pytest
import torch

from transformer_lib.classroom import grade, integrity, sandbox, stubs
from transformer_lib.classroom.checks import CheckResult
from transformer_lib.classroom.registry import ASSIGNMENTS

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "submissions"))
from make_submissions import solved  # noqa: E402

MASKS_PASS = [True] * len(ASSIGNMENTS["04_masks"].exercises)  # assignment 4 all passed, as the registry lists it

ATTACKS = Path(__file__).resolve().parent / "fixtures" / "attacks"
ROOT = Path(__file__).resolve().parents[1]
SECRET = "lms-token-0123456789-do-not-leak"
_problem = sandbox.bwrap_problem() if hasattr(sandbox, "bwrap_problem") else ""  # (older graders: no bwrap)
needs_bwrap = pytest.mark.skipif(bool(_problem), reason=_problem or "bwrap works")


# --------------------------------------------------------------------------------------------------------------
# The reference is not in the room
# --------------------------------------------------------------------------------------------------------------
def _in_copy(assignment: str, code: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``code`` (with ``args`` in ``sys.argv[1:]``) with the library copy of ``assignment`` first on the path (as
    a kernel imports it)."""
    lib = sandbox.LibraryCopy(stubs=stubs.stubs_for(assignment))
    try:
        env = {"PATH": os.environ.get("PATH", "/usr/bin"), "PYTHONPATH": str(lib.parent)}
        return subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300, cwd=lib.parent
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
def solutions(attacked):
    """Every assignment's solution, as a student would hand it in, graded with its stubbed library: alice's
    03_attention and zed's others, graded in the class of attackers below (one run of the grader, one cluster, for
    both: a run of its own cost one more embedded cluster and a second kernel for 03_attention)."""
    return [g for g in attacked[4] if g.student == "zed" or (g.student, g.assignment) == ("alice", "03_attention")]


@pytest.mark.slow
@needs_bwrap
def test_every_solution_passes_under_its_stubbed_library(solutions):
    assert sorted(g.assignment for g in solutions) == sorted(ASSIGNMENTS)
    for g in solutions:
        assert [r.passed for r in g.results] == [True] * len(g.results), (g.assignment, g.results)
        assert not any("limit" in n for n in g.notes), g.notes  # no limit met by a correct notebook


# --------------------------------------------------------------------------------------------------------------
# The class of attackers, graded next to a fake teacher's folder
# --------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    teacher = tmp_path_factory.mktemp("teacher")  # the teacher's working folder, as the README lays it out
    submissions = teacher / "submissions"
    shutil.copytree(ATTACKS, submissions, ignore=shutil.ignore_patterns("*.py"))
    (submissions / "alice").mkdir()
    nbformat.write(solved("03_attention"), submissions / "alice" / "03_attention.ipynb")
    (submissions / "zed").mkdir()  # every other assignment's solution (test_every_solution_passes_...)
    for a in ASSIGNMENTS:
        if a != "03_attention":
            nbformat.write(solved(a), submissions / "zed" / f"{a}.ipynb")
    with zipfile.ZipFile(teacher / "attention-submissions.zip", "w") as z:
        z.write(submissions / "alice" / "03_attention.ipynb", "alice_101_03_attention.ipynb")
    (teacher / "solutions").mkdir()
    shutil.copy(ROOT / "assignments" / "03_attention.ipynb", teacher / "solutions" / "03_attention.ipynb")
    students = sorted(p.name for p in submissions.iterdir() if p.is_dir())
    with open(teacher / "roster.csv", "w", newline="") as f:
        rows = [{"student": s, "lms_id": str(100 + i), "email": f"{s}@school.example"} for i, s in enumerate(students)]
        writer = csv.DictWriter(f, ["student", "lms_id", "email"])
        writer.writeheader()
        writer.writerows(rows)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    reached: list[str] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                reached.append("connected")
                conn.close()
            except OSError:
                continue

    stop = threading.Event()
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    network = nbformat.read(submissions / "network" / "03_attention.ipynb", as_version=4)
    (cell,) = [c for c in network.cells if "PORT = None" in c.source]
    cell.source = cell.source.replace("PORT = None", f"PORT = {listener.getsockname()[1]}")
    nbformat.write(network, submissions / "network" / "03_attention.ipynb")
    os.environ["LMS_API_TOKEN"] = SECRET  # a secret in the grader's environment
    out = teacher / "grades" / "grades.csv"
    try:
        graded = grade.grade_folder(
            submissions, out, roster=teacher / "roster.csv", cell_timeout=30, time_limit=3, jobs=2, progress=False
        )
    finally:
        del os.environ["LMS_API_TOKEN"]
        stop.set()
        thread.join()
        listener.close()
    return {g.student: g for g in graded if g.student != "zed"}, teacher, out.parent, reached, graded


def _passed(g):
    return [r.passed for r in g.results]


def _flags(g):
    return [f for r in g.results for f in r.flags]


def _feedback(attacked, student):
    return (attacked[2] / "feedback" / f"{student}.md").read_text()


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize(
    "student, flag",
    [
        ("swap", "reads or writes the notebook's namespace (globals())"),
        ("source", "runs code the source does not show (exec)"),
        ("jsonforge", "changes an object's attribute at run time (setattr on json)"),
    ],
)
@pytest.mark.slow
def test_a_swapped_sourced_or_forged_reference_fails_and_is_flagged(attacked, student, flag):
    g = attacked[0][student]
    assert _passed(g) == [False]
    assert any(f.startswith(flag) for f in _flags(g)), _flags(g)


@pytest.mark.slow
@needs_bwrap
def test_pytorchs_operator_registry_is_flagged(attacked):
    """attention answered by torch.ops.aten._scaled_dot_product_attention_math (output and weights): 3 of 3 points with
    no flag at all at first; then flagged; now the operator is a stub in assignment 3's kernel (stubs.TORCH_REMOVED),
    so it earns nothing, and the teacher is still told."""
    g = attacked[0]["x_aten"]
    assert _passed(g) == [False], [(r.exercise, r.passed, r.message) for r in g.results]
    assert any(f.startswith("uses PyTorch's torch.ops.aten._scaled_dot_product_attention_math") for f in _flags(g)), (
        _flags(g)
    )


@pytest.mark.slow
@needs_bwrap
def test_the_librarys_own_multi_head_module_is_not_there_to_answer_assignment_5(attacked):
    """split_heads through tl.MultiHeadAttention._split and the forward through tl.MultiHeadAttention with the
    student's weights copied in: both are stubs in the kernel's library (10 of 10 before, flagged only)."""
    g = attacked[0]["mhalib"]
    assert [(r.exercise, r.passed) for r in g.results] == [
        ("split_heads", False),
        ("merge_heads", True),  # the student's own
        ("multi_head_attention", False),
    ]
    assert any(f.startswith("uses the library's reference tl.MultiHeadAttention") for f in _flags(g)), _flags(g)


@pytest.mark.slow
@needs_bwrap
def test_the_books_package_is_not_in_the_room(attacked):
    """The book's probes compute the sinusoidal table another way (PE(pos) = M_pos PE(0)): 10 of 10 before, flagged
    only; the kernel's library copy has no transformer_lib.book (no assignment imports it)."""
    g = attacked[0]["shiftpe"]
    assert _passed(g) == [False]
    assert "No module named 'transformer_lib.book'" in g.results[0].message


@pytest.mark.slow
@needs_bwrap
def test_the_librarys_vocabulary_is_not_there_to_answer_assignment_1(attacked):
    """build_vocab from tl.Vocab.build and encode from tl.Vocab.to_ids: 7 of 10 points before, not even flagged."""
    g = attacked[0]["vocablib"]
    assert [(r.exercise, r.passed) for r in g.results] == [
        ("build_vocab", False),
        ("encode", False),
        ("pad_sequences", True),  # the student's own
    ]
    assert "tl.Vocab.build is not available while assignment 01_tokenizer is graded" in g.results[0].message


def test_the_kernels_library_copy_leaves_the_book_out():
    lib = sandbox.LibraryCopy(stubs=stubs.stubs_for("02_positional_encoding"))
    try:
        assert (lib.path / "classroom" / "checks").is_dir() and (lib.path / "embeddings.py").is_file()
        assert not (lib.path / "book").exists() and not list(lib.path.rglob("*.pyc"))
    finally:
        lib.cleanup()


@pytest.mark.slow
@needs_bwrap
def test_nothing_of_the_teachers_folder_is_there_to_copy(attacked):
    assert _passed(attacked[0]["copier"]) == [False]  # its own wrong answer: it found no other to copy
    assert _passed(attacked[0]["alice"]) == [True]


@pytest.mark.slow
@needs_bwrap
def test_nothing_of_the_teachers_reaches_a_feedback_file_or_a_sheet(attacked):
    graded, teacher, out, _, _ = attacked
    assert _passed(graded["leak"]) == [True] and _passed(graded["environ"]) == [True]
    assert "Cell" in _feedback(attacked, "leak") and "RuntimeError" in _feedback(attacked, "leak")  # it did raise
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert SECRET not in text, path
            assert str(teacher) not in text, path  # no path of the teacher's folder (mountinfo, a walk, ...)
    for student in ("leak", "environ"):
        text = _feedback(attacked, student)
        assert "alice@school.example" not in text and "lms_id" not in text, student  # no roster
    assert "/proc/self/mountinfo" not in _feedback(attacked, "leak") and "tl-lib-" in _feedback(attacked, "leak")
    assert str(ROOT) not in _feedback(attacked, "leak")  # not even the repository the grader's venv lives in


@pytest.mark.slow
@needs_bwrap
def test_resources_are_limited_and_the_note_says_which(attacked):
    graded, _, out, _, _ = attacked
    # the flood's one huge output message is refused by the cap on a message's size before the output cap sees it
    limits = (("memory", ("memory",)), ("fork", ("processes",)), ("flood", ("output", "messages")))
    for student, limit in (*limits, ("flood", ("file size",))):
        g = graded[student]
        assert _passed(g) == MASKS_PASS, (student, g.results)  # graded on what finished
        assert any(n.startswith(tuple(f"Hit the limit on {w}" for w in limit)) for n in g.notes), (student, g.notes)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    assert size < 2_000_000, size  # 200 MB written through every descriptor: none of it reached the grader's disk
    with open(out / "grades.csv", encoding="utf-8") as f:
        notes = {r["student"]: r["note"] for r in csv.DictReader(f) if r["assignment"] == "04_masks"}
    assert "Hit the limit on memory" in notes["memory"] and "Hit the limit on processes" in notes["fork"]


@pytest.mark.slow
@needs_bwrap
def test_the_machine_is_out_of_reach(attacked):
    graded, _, _, reached, _ = attacked
    assert _passed(graded["sysfs"]) == MASKS_PASS  # no write to /proc/sys or /sys went through
    assert _passed(graded["network"]) == [True] and reached == []  # no connection to the grader's machine
    assert _passed(graded["libwrite"]) == [True]  # the library it imports is read-only
    assert not any("changed the grader's copy" in n for g in graded.values() for n in g.notes)
    assert _passed(graded["killall"]) == MASKS_PASS  # it reached no process of the grader's
    assert all(g.results for g in graded.values())  # and the grader graded every other notebook after it


@pytest.mark.slow
@needs_bwrap
def test_a_kernel_past_its_cpu_time_is_killed_and_the_note_says_so(tmp_path):
    nb = solved("04_masks")
    nb.cells.insert(4, nbformat.v4.new_code_cell("while True:\n    pass"))
    nbformat.write(nb, tmp_path / "04_masks.ipynb")
    # 8 CPU seconds: the fresh kernel that grades after the kill runs under the same limit, and importing torch and
    # grading took over 3 s of CPU time on a busy 2-core machine (threads spinning while they wait for a core)
    limits = sandbox.Limits(cpu_seconds=8)
    g = grade.grade_notebook(tmp_path / "04_masks.ipynb", "cpu", cell_timeout=90, limits=limits)
    assert [r.passed for r in g.results] == MASKS_PASS, g.notes  # graded in a fresh kernel without that cell
    assert any(n.startswith("Hit the limit on CPU time (8 s)") for n in g.notes), g.notes


# --------------------------------------------------------------------------------------------------------------
# A notebook fails alone (issue 35): no parse, no size and no failure of the grader's stops the class's run
# --------------------------------------------------------------------------------------------------------------
DEEP = "total = " + " + ".join(["1"] * 5000)  # 28 KB that ast.parse cannot build: RecursionError


def _with_cell(assignment: str, code: str, at: int = 3) -> nbformat.NotebookNode:
    nb = solved(assignment)
    nb.cells.insert(at, nbformat.v4.new_code_cell(code))
    return nb


def test_a_cell_too_deep_to_parse_is_flagged_not_raised():
    found = integrity.flags(["import torch", DEEP], {"attention": ("attention",)})["attention"]
    assert any("could not be read as Python" in f and "RecursionError" in f for f in found), found
    assert integrity.definitions(["x = 1", DEEP]) == {"x": [0]}


def test_a_notebook_whose_code_is_too_long_is_not_run_and_says_why(tmp_path):
    nb = solved("03_attention")
    nb.cells += [nbformat.v4.new_code_cell("x = 1\n" * 20_000) for _ in range(10)]  # 1.2 MB of code
    nbformat.write(nb, tmp_path / "03_attention.ipynb")
    g = grade.grade_notebook(tmp_path / "03_attention.ipynb", "bulk")  # returns before any kernel starts
    assert [r.passed for r in g.results] == [False]
    assert any("over the grader's limit of 500,000" in p for p in g.problems), g.problems


# --------------------------------------------------------------------------------------------------------------
# Nothing writable is shared, and every limit holds (issue 35)
# --------------------------------------------------------------------------------------------------------------
FILL = """
import json, mmap, os
argv = open('/proc/self/cmdline').read().split('\\0')
connection = argv[argv.index('-f') + 1]  # ipykernel_launcher -f <connection file>
sockets = os.path.dirname(json.load(open(connection))['ip'])  # where the kernel binds its sockets
escaped = []
for place in (sockets, '/', '/dev', '/dev/shm', '/tmp', os.path.expanduser('~')):
    written = 0
    try:
        for i in range(24):  # 24 files of 1 MB: past every folder's limit (the test's 8 MB, the sockets' 1 MB)
            with open(os.path.join(place, f'fill{i}'), 'wb') as f:
                f.write(b'x' * 1_000_000)
            written += 1
    except OSError:
        pass
    if written > 8:
        escaped.append(f'{place}: {written} MB')
try:
    shared = mmap.mmap(-1, 3 << 30)  # shared memory, which RLIMIT_DATA does not count
    for page in range(0, len(shared), 1 << 20):
        shared[page] = 1
    escaped.append('3 GB of shared memory')
except (OSError, MemoryError, ValueError):
    pass
if escaped:
    raise RuntimeError('ESCAPED ' + ', '.join(escaped))
"""


@pytest.mark.slow
@needs_bwrap
def test_no_folder_or_shared_memory_passes_its_limit(tmp_path):
    """The kernel's sockets folder was the grader's TMPDIR, with no size limit (1.5 GB written; two classmates on a
    full disk got 0/10); /, /dev and /dev/shm were tmpfs of half the RAM; 3 GB of shared memory passed a 2 GB
    limit. Now each writable place is a tmpfs of its own size, / and /dev are read-only, and the address space is
    bounded."""
    nbformat.write(_with_cell("04_masks", FILL), tmp_path / "04_masks.ipynb")
    limits = sandbox.Limits(memory_mb=1024, file_mb=8)
    g = grade.grade_notebook(tmp_path / "04_masks.ipynb", "filler", cell_timeout=120, limits=limits)
    assert not any(p.startswith("Cell 4 ") for p in g.problems), g.problems  # it ran, and nothing escaped
    assert [r.passed for r in g.results] == MASKS_PASS, (g.problems, g.notes)


@pytest.mark.slow
@needs_bwrap
def test_a_notebook_of_sleeping_cells_meets_its_deadline_and_says_so(tmp_path):
    """1,000 cells of time.sleep(timeout - 1) held a slot for about 16 hours: the deadline was timeout x cells."""
    nb = solved("04_masks")
    nb.cells += [nbformat.v4.new_code_cell("import time\ntime.sleep(4)") for _ in range(40)]
    nbformat.write(nb, tmp_path / "04_masks.ipynb")
    # a 12 s deadline, not the default (NOTEBOOK_TIMEOUT, 900 s): what is tested is that the notebook's deadline holds,
    # and the test waits out the whole deadline on one of the test run's two cores (30 s before)
    g = grade.grade_notebook(tmp_path / "04_masks.ipynb", "sleeper", cell_timeout=5, notebook_timeout=12)
    # the deadline plus room for starting and killing the kernel on a loaded machine; without the deadline the
    # sleeps alone would take 160 s (a bound that load can stretch past is no bound: 45 s was too close)
    assert g.seconds < 100, f"graded in {g.seconds:.0f} s with a 12 s notebook deadline (the sleeps take 160 s)"
    assert any("reached its deadline (12 s in all, --notebook-timeout" in p for p in g.problems), g.problems


# --------------------------------------------------------------------------------------------------------------
# --no-sandbox is loud (issue 35)
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.skipif(os.geteuid() != 0, reason="the refusal is for root")
def test_no_sandbox_as_root_is_refused_unless_said_so(tmp_path, capsys):
    """As root without the sandbox a kernel read the reference, wrote into the teacher's repository and left a
    process running as root."""
    (tmp_path / "class" / "alice").mkdir(parents=True)
    nbformat.write(solved("03_attention"), tmp_path / "class" / "alice" / "03_attention.ipynb")
    assert grade.main([str(tmp_path / "class"), "--out", str(tmp_path / "g.csv"), "--no-sandbox"]) == 2
    assert "refusing to grade as root without the sandbox" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()


@pytest.mark.slow
def test_no_sandbox_says_so_at_the_start_the_end_and_in_a_column(tmp_path, capsys):
    (tmp_path / "class" / "alice").mkdir(parents=True)
    nbformat.write(solved("04_masks"), tmp_path / "class" / "alice" / "04_masks.ipynb")
    out = tmp_path / "out" / "grades.csv"
    argv = [str(tmp_path / "class"), "--out", str(out), "--no-sandbox", "--allow-root-without-sandbox"]
    assert grade.main([*argv, "--no-progress", "--timeout", "60"]) == 0
    printed, said = capsys.readouterr()
    assert said.count("GRADED WITHOUT THE SANDBOX (--no-sandbox)") == 2 and "Memory: no cgroup" in said
    assert said.index("GRADED WITHOUT") > said.index("Memory:")  # the banner opens the run ...
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert {r["sandbox"] for r in rows} == {"NONE (--no-sandbox)"}, rows
    assert all("graded without the sandbox (--no-sandbox)" in r["note"] for r in rows), rows
    assert [r["passed"] for r in rows] == ["1", "1", "1"]


# --------------------------------------------------------------------------------------------------------------
# Flags read what runs (issue 35): IPython syntax, run-time names, aliases, copies behind a magic
# --------------------------------------------------------------------------------------------------------------
_SETUP = "import torch\nimport transformer_lib as tl\n"
_ATEN = "def attention(q, k, v, mask=None):\n    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v)[0]"


def _attention_flags(code: str) -> list[str]:
    return integrity.flags([_SETUP, code], {"attention": ("attention",)})["attention"]


@pytest.mark.parametrize(
    "code, flag",
    [
        ("%xmode Context\n" + _ATEN, "uses PyTorch's torch.ops.aten._scaled_dot_product_attention_math"),
        ("%%time\n" + _ATEN, "uses PyTorch's torch.ops.aten._scaled_dot_product_attention_math"),
        ("%%capture out\n%time x = 1\n" + _ATEN, "uses PyTorch's torch.ops.aten._scaled_dot_product_attention_math"),
        ("!ls\n" + _ATEN, "runs shell commands (a ! line)"),
        ("%run helper.py\n", "runs the IPython command %run"),
        ("%%bash\necho hi\n", "runs the IPython command %%bash"),
        ("await x\n" + _ATEN, "uses PyTorch's torch.ops.aten"),  # top-level await: IPython runs it
        (
            "def attention(q, k, v, mask=None):\n    return q +\n",
            "code cell 2 of the notebook's code cells could not be read as Python (SyntaxError",
        ),
        (
            "t = torch\ndef attention(q, k, v, mask=None):\n"
            "    return getattr(t.ops.aten, '_scaled_dot_product_' + 'attention_math')(q, k, v)[0]",
            "uses getattr with a name built at run time",
        ),
        (
            "def attention(q, k, v, mask=None):\n    t = torch\n    return t.ops.aten._softmax(q, -1, False) @ v",
            "uses PyTorch's torch.ops.aten._softmax",
        ),
        (
            "lib = tl\ndef attention(q, k, v, mask=None):\n    return lib.scaled_dot_product_attention(q, k, v)",
            "uses the library's reference tl.scaled_dot_product_attention",
        ),
        (
            "def attention(q, k, v, mask=None):\n    return torch._softmax(q, -1, False)",
            "uses PyTorch's torch._softmax",
        ),
    ],
)
def test_a_cheat_behind_ipython_syntax_or_a_run_time_name_is_flagged(code, flag):
    found = _attention_flags(code)
    assert any(f.startswith(flag) for f in found), found


def test_harmless_magics_raise_no_flag():
    assert _attention_flags("%matplotlib inline\n%xmode Plain\ndef attention(q, k, v, mask=None):\n    return v") == []


def test_a_copy_behind_a_magic_line_is_still_a_copy():
    """A verbatim copy flagged at 0.82 was not flagged once `%xmode Context` topped its cell."""
    from transformer_lib.classroom import similarity

    answer = solved("03_attention")
    cells = [c.source for c in answer.cells if c.cell_type == "code" and "check" not in c.metadata.get("tags", [])]
    plain = similarity.solution_code(cells, ("attention",))
    hidden = similarity.solution_code([f"%xmode Context\n{c}" for c in cells], ("attention",))
    assert plain and hidden == plain


# --------------------------------------------------------------------------------------------------------------
# No degenerate answer passes a check
# --------------------------------------------------------------------------------------------------------------
def _graded(check: str, **objects):
    """The result in the kernel (live) and the grader's, replayed from the kernel's recording."""
    from transformer_lib.classroom.checks import record

    names = list(objects)
    live, text = record._record(check, objects, names, 10.0)
    return live, record.replay_exercise(check, names, text, 10.0)


def _never_attends(sol, zero_init: bool):
    """Multi-head attention that gives every key the same weight: W^Q and W^K zero-initialised (the issue's
    answer), or q and k ignored in forward."""
    split, merge = sol["split_heads"], sol["merge_heads"]

    class NeverAttends(sol["MultiHead"]):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            if zero_init:
                torch.nn.init.zeros_(self.w_q.weight)
                torch.nn.init.zeros_(self.w_k.weight)

        def forward(self, query, key, value, mask=None):
            v = split(self.w_v(value), self.n_heads)  # (B, H, S, D)
            scores = torch.zeros(v.shape[0], self.n_heads, query.shape[1], key.shape[1], dtype=v.dtype)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            weights = scores.softmax(-1)
            return self.w_o(merge(weights @ v)), weights

    return NeverAttends


@pytest.mark.parametrize("zero_init", [True, False], ids=["zero-initialised W^Q W^K", "q and k ignored"])
def test_multi_head_attention_that_never_attends_fails_and_says_why(sol, zero_init):
    for result in _graded("check_multi_head_attention", MultiHead=_never_attends(sol, zero_init)):
        assert not result.passed, str(result)
        assert "same weight" in result.hints[0], str(result)


def _skips(sol, sublayer: str):
    """A decoder layer whose sub-layer ``sublayer`` is zero-initialised and left out of forward."""

    class Skips(sol["DecoderBlock"]):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            for p in getattr(self, sublayer).parameters():
                torch.nn.init.zeros_(p)

        def forward(self, y, memory, self_mask=None, cross_mask=None):
            if sublayer != "self_attn":
                y = y + self.self_attn(y, y, y, self_mask)[0]
            y = self.norm1(y)
            if sublayer != "cross_attn":
                y = y + self.cross_attn(y, memory, memory, cross_mask)[0]
            y = self.norm2(y)
            return self.norm3(y + self.ff(y) if sublayer != "ff" else y)

    return Skips


@pytest.mark.parametrize("sublayer", ["self_attn", "cross_attn", "ff"])
def test_a_decoder_layer_that_skips_a_zeroed_sub_layer_fails_and_says_which(sol, sublayer):
    for result in _graded("check_decoder_layer", DecoderBlock=_skips(sol, sublayer)):
        assert not result.passed, str(result)
        assert f"self.{sublayer}" in result.hints[0], str(result)


# --------------------------------------------------------------------------------------------------------------
# The grader never runs an object the student chose
# --------------------------------------------------------------------------------------------------------------
class _Upsample(torch.nn.Upsample):
    """The issue's attack: nn.Upsample(scale_factor=4e6) carrying FeedForward's weights; a feed-forward in the
    kernel, a 4 GB interpolation wherever nn.Upsample's own forward runs."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__(scale_factor=4e6)
        self.activation = "relu"
        self.linear1, self.linear2 = torch.nn.Linear(d_model, d_ff), torch.nn.Linear(d_ff, d_model)
        self.dropout = torch.nn.Dropout(0.0)

    def forward(self, x):
        return self.linear2(torch.relu(self.linear1(x)))


@pytest.fixture
def upsample_runs(monkeypatch):
    """Every call of nn.Upsample's own forward (the kernel's subclass overrides it)."""
    runs = []
    monkeypatch.setattr(torch.nn.Upsample, "forward", lambda self, x: runs.append(tuple(x.shape)) or x)
    return runs


def _pre_ln_with(sol, ff_class):
    """A wrong (pre-LN) decoder layer, so that the grader looks for the mistake, whose ff is ``ff_class``."""

    class Block(sol["DecoderBlock"]):
        def __init__(self, d_model, n_heads, d_ff, dropout=0.1):
            super().__init__(d_model, n_heads, d_ff, dropout)
            self.ff = ff_class(d_model, d_ff)

        def forward(self, y, memory, self_mask=None, cross_mask=None):
            y = y + self.self_attn(self.norm1(y), self.norm1(y), self.norm1(y), self_mask)[0]
            y = y + self.cross_attn(self.norm2(y), memory, memory, cross_mask)[0]
            return y + self.ff(self.norm3(y))

    return Block


def test_a_sub_module_of_a_class_the_check_does_not_name_is_never_run_in_the_grader(sol, upsample_runs):
    live, replayed = _graded("check_decoder_layer", DecoderBlock=_pre_ln_with(sol, _Upsample))
    assert upsample_runs == []
    for result in (live, replayed):
        assert not result.passed and "self.ff" in result.summary and "torch.nn.Upsample" in result.summary, result
        assert "tl.FeedForward" in result.hints[0]


def _sequential(d_model: int, d_ff: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(d_model, d_ff), torch.nn.ReLU(), torch.nn.Linear(d_ff, d_model))


def _upsample_inside(d_model: int, d_ff: int) -> torch.nn.Module:
    """A tl.FeedForward whose dropout (no weights: the state dict is the same) is an nn.Upsample."""
    import transformer_lib as tl

    ff = tl.FeedForward(d_model, d_ff)
    ff.dropout = type("Up", (torch.nn.Upsample,), {"forward": lambda self, x: x})(scale_factor=4e6)
    return ff


@pytest.mark.parametrize(
    "ff_class, note",
    [
        (_sequential, "self.ff is a torch.nn.Sequential"),
        (_upsample_inside, "self.ff.dropout is a torch.nn.Upsample"),
    ],
    ids=["another module class", "nested"],
)
def test_a_sub_module_of_another_class_fails_with_a_note_in_the_kernel_and_the_grader(
    sol, upsample_runs, ff_class, note
):
    live, replayed = _graded("check_decoder_layer", DecoderBlock=_pre_ln_with(sol, ff_class))
    assert upsample_runs == []
    for result in (live, replayed):
        assert not result.passed and result.summary.startswith(note), result


def test_a_subclass_of_a_named_class_runs_as_the_library_class_in_the_grader(sol):
    """A tl.FeedForward subclass whose forward is the student's own: the grader rebuilds a tl.FeedForward."""
    import transformer_lib as tl

    runs = []

    class Doubled(tl.FeedForward):
        def forward(self, x):
            runs.append(1)
            return 2 * super().forward(x)

    from transformer_lib.classroom.checks import record

    live, text = record._record("check_decoder_layer", {"B": _pre_ln_with(sol, Doubled)}, ["B"], 10.0)
    assert runs and not live.passed
    runs.clear()
    replayed = record.replay_exercise("check_decoder_layer", ["B"], text, 10.0)
    assert runs == [] and not replayed.passed and replayed.summary == live.summary


def _forged(sol, edit) -> str:
    """An honest recording of a wrong (pre-LN) decoder layer, with ``edit`` applied to the layer's snapshot."""
    import json

    import transformer_lib as tl
    from transformer_lib.classroom.checks import record

    _, text = record._record("check_decoder_layer", {"B": _pre_ln_with(sol, tl.FeedForward)}, ["B"], 10.0)
    data = json.loads(text)
    edit(data["calls"][0]["value"])
    return json.dumps(data)


_UPSAMPLE = "torch.nn.modules.upsampling:Upsample"


def _as_upsample(snapshot):
    snapshot.update(cls=_UPSAMPLE)
    snapshot["attrs"].update(scale_factor={"t": "float", "v": (4e6).hex()}, mode="nearest")


@pytest.mark.parametrize(
    "edit, note",
    [
        (lambda m: _as_upsample(m["children"]["ff"]), "self.ff is a torch.nn.Upsample"),
        (lambda m: _as_upsample(m["children"]["self_attn"]["children"]["qkv_proj"]), "self.self_attn.qkv_proj is a"),
        (lambda m: m["children"]["ff"].update(cls="torch.nn.modules.linear:Linear"), "self.ff is a torch.nn.Linear"),
        (lambda m: m["children"]["ff"].update(cls="os:system"), "self.ff is a os.system"),
        (
            lambda m: m["children"]["ff"]["children"]["linear1"].update(cls="transformer_lib.layers:FeedForward"),
            "self.ff.linear1 is a tl.FeedForward; the check accepts a torch.nn.Linear there",
        ),
        (
            lambda m: m["children"]["ff"]["children"].update(up=m["children"]["ff"]["children"]["dropout"]),
            "self.ff has the sub-modules ['dropout', 'linear1', 'linear2', 'up']",
        ),
    ],
    ids=["Upsample", "nested Upsample", "another named class", "not torch", "a named class elsewhere", "one more"],
)
def test_a_forged_class_in_a_recording_is_never_rebuilt(sol, upsample_runs, edit, note):
    from transformer_lib.classroom.checks import record

    result = record.replay_exercise("check_decoder_layer", ["B"], _forged(sol, edit), 10.0)
    assert upsample_runs == []
    assert not result.passed and result.summary.startswith(note), result


def _huge_param(m):
    m["children"]["ff"]["children"]["linear1"]["params"]["weight"].update(shape=[0, 10**9], data="")


@pytest.mark.parametrize(
    "edit",
    [
        _huge_param,
        lambda m: m["children"]["norm1"]["attrs"].update(normalized_shape={"t": "tuple", "v": [4096, 4096]}),
        lambda m: m["children"]["self_attn"]["attrs"].update(d_head=10**12),
        lambda m: m["children"]["ff"]["attrs"].update(scale={"t": "float", "v": (1e300).hex()}),
    ],
    ids=["empty tensor of 10^9 columns", "shape of 16M elements", "huge int", "huge float"],
)
def test_huge_shapes_or_numbers_in_a_recording_are_refused(sol, edit):
    from transformer_lib.classroom.checks import record

    with pytest.raises(record.RecordingError, match="larger than"):
        record.replay_exercise("check_decoder_layer", ["B"], _forged(sol, edit), 10.0)


def _nest(m, depth=30):
    """self.ff holding a module holding a module ..., 30 deep."""
    ff = m["children"]["ff"]
    for _ in range(depth):
        ff = {**ff, "children": {"inner": ff}}
    m["children"]["ff"] = ff


def _wide(m, n=250_000):
    m["children"]["ff"]["children"].update({f"c{i}": None for i in range(n)})


@pytest.mark.parametrize("edit", [_nest, _wide], ids=["modules 30 deep", "a quarter million children"])
def test_a_recording_of_too_many_or_too_deep_modules_is_refused(sol, edit):
    from transformer_lib.classroom.checks import record

    with pytest.raises(record.RecordingError, match="too large or too deeply nested"):
        record.replay_exercise("check_decoder_layer", ["B"], _forged(sol, edit), 10.0)


def _forged_mha(sol, edit) -> str:
    """An honest recording of the multi-head solution, with ``edit`` applied to the module's snapshot."""
    import json

    from transformer_lib.classroom.checks import record

    _, text = record._record("check_multi_head_attention", {"M": sol["MultiHead"]}, ["M"], 10.0)
    data = json.loads(text)
    edit(data["calls"][0]["value"])
    return json.dumps(data)


def test_a_multi_head_projection_forged_as_another_class_is_never_rebuilt(sol, upsample_runs):
    from transformer_lib.classroom.checks import record

    text = _forged_mha(sol, lambda m: _as_upsample(m["children"]["w_q"]))
    result = record.replay_exercise("check_multi_head_attention", ["M"], text, 10.0)
    assert upsample_runs == [] and not result.passed
    assert result.summary == "The module has no nn.Linear attribute(s) ['w_q'].", result


def test_multi_head_projections_of_another_width_fail_with_a_note(sol):
    class Narrow(sol["MultiHead"]):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            self.w_k = torch.nn.Linear(d_model, d_model // 2)

    for result in _graded("check_multi_head_attention", MultiHead=Narrow):
        assert not result.passed and result.summary.startswith("self.w_k: expected nn.Linear(d_model, d_model)"), result


# --------------------------------------------------------------------------------------------------------------
# The class's worst student (issue 43): each attack below was seen to succeed before its fix
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("aid, ex", [(a.id, ex) for a in ASSIGNMENTS.values() for ex in a.exercises])
def test_a_rows_passed_and_points_always_agree(aid, ex):
    """All the points for a pass and only for a pass, whatever the check reports of its parts (every combination of
    passed, failed and unreported): a row with passed=0 and full points, or passed=1 and fewer, cannot be written."""
    import itertools

    names = [part for part, _ in ex.parts]
    for passed in (True, False):
        for outcome in itertools.product((True, False, None), repeat=len(names)):
            parts = {n: o for n, o in zip(names, outcome, strict=True) if o is not None}
            earned = ex.earned(CheckResult(ex.name, passed, "", parts=parts))
            assert (earned == ex.points) is passed and 0 <= earned <= ex.points, (aid, ex.name, passed, parts, earned)


def test_a_float64_answer_neither_passes_nor_earns_all_the_points(sol):
    """Attention that computes in float64 and returns float64 for float32 inputs: passed=0 with 10 of 10 points
    before (every part passed, the check failed on the dtype); now a row's passed and its points agree."""
    from transformer_lib.classroom.graded import GradedNotebook
    from transformer_lib.classroom.sheet_rows import exercise_rows

    def attention(q, k, v, mask=None):
        out, weights = sol["attention"](q.double(), k.double(), v.double(), mask)
        return out, weights

    _, result = _graded("check_attention", attention=attention)
    assert not result.passed and result.parts and all(result.parts.values()), result
    graded = GradedNotebook("f64", "03_attention", Path("03_attention.ipynb"), results=[result])
    rows = [r for r in exercise_rows([graded]) if r["exercise"] == "attention"]
    assert [(r["passed"], r["points"] == r["max_points"]) for r in rows] == [(0, False)], rows


_FORGED_TEXT = (
    '＝HYPERLINK("http://evil.example")',
    "\u200b=1+1",
    "\u202e=cmd|' /C calc'!A0",
    "\u3000@SUM(A1)",
    'ok\n| attention | PASS | 10/10 |\n<img src="http://evil.example/beacon.png"> <!-- ',
)


def test_text_cannot_forge_a_sheet_formula_or_a_feedback_row(tmp_path):
    """A student's message (an exception text, a folder name) reaches the sheets and feedback.md. Before: `=` was
    neutralised, but `＝`, a zero-width or bidi mark, or a wide space before `=`/`@` passed; markdown and HTML went
    into feedback.md as they were (a fake PASS row, an <img> beacon, an open <!-- that hid the rest)."""
    from transformer_lib.classroom.feedback import feedback_markdown
    from transformer_lib.classroom.gradebook import csv_text
    from transformer_lib.classroom.graded import GradedNotebook

    results = [
        CheckResult("attention", False, text, details=text + "\n```\n<b>out</b>", hints=(text, text))
        for text in _FORGED_TEXT
    ]
    graded = GradedNotebook(_FORGED_TEXT[0], "03_attention", Path("x.ipynb"), results=results, problems=[*_FORGED_TEXT])
    graded.notes, graded.file_name = list(_FORGED_TEXT), _FORGED_TEXT[4]
    text = csv_text(["student", "message"], [{"student": t, "message": t} for t in _FORGED_TEXT])
    for row in csv.DictReader(text.splitlines()):
        for cell in row.values():
            assert cell.startswith("'") or cell.startswith("ok"), row
            assert not any(c in cell for c in "\u200b\u202e\u3000"), row
    md = feedback_markdown(graded.student, [graded])
    fenced = r"^(`{3,})text\n.*?^\1$"  # a code block shows its text as it is
    prose = re.sub(fenced, "", md, flags=re.MULTILINE | re.DOTALL)
    assert len(re.findall(fenced, md, flags=re.MULTILINE | re.DOTALL)) == len(results), md
    assert "<img" not in prose and "<!--" not in prose and "<b>" not in prose, prose
    table = [line for line in prose.splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(results), table  # the header, its rule and one row per result: nothing forged
    fences = [line for line in md.splitlines() if line.startswith("```") and line.endswith("text")]
    assert len(fences) == len(results) and all(f == "````text" for f in fences), (
        fences
    )  # longer than the ``` inside: not closed early


def _listening(path: Path) -> tuple[list[str], threading.Event, threading.Thread]:
    """A Unix socket of the host's at ``path`` that counts who connects to it (until the event is set)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(64)
    server.settimeout(0.2)
    reached: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        with server:
            while not stop.is_set():
                try:
                    conn, _ = server.accept()
                    reached.append("connected")
                    conn.close()
                except OSError:
                    continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    return reached, stop, thread


REDIRECT = """
import os, time
from ipykernel.kernelapp import IPKernelApp
app = IPKernelApp.instance()
for port in (app.stdin_port, app.iopub_port, app.hb_port):
    path = f"{app.ip}-{port}"
    os.rename(path, path + ".old")
    os.symlink(HOST, path)
app.kernel.stdin_socket.close(linger=0)  # the grader's end reconnects: to the link, if it follows it
time.sleep(3)
"""


@pytest.mark.slow
@needs_bwrap
def test_the_grader_never_follows_a_link_the_kernel_made_to_a_host_socket(tmp_path):
    """A kernel replaced its stdin socket with a link to a Unix socket of the host; the grader, which reached the
    sandbox's sockets through /proc/PID/root, followed it and connected to the host's socket (51-53 times in a run).
    Now it opens each socket once, without following a link, and connects through that descriptor."""
    host = tmp_path / "host.sock"
    reached, stop, thread = _listening(host)
    nbformat.write(_with_cell("04_masks", f"HOST = {str(host)!r}\n" + REDIRECT), tmp_path / "04_masks.ipynb")
    try:
        g = grade.grade_notebook(tmp_path / "04_masks.ipynb", "redirect", cell_timeout=30)
    finally:
        stop.set()
        thread.join()
    assert reached == [], f"the grader connected to the host's socket {len(reached)} times"
    assert [r.passed for r in g.results] == MASKS_PASS, (g.problems, g.notes)


HOARD = """
import ctypes, mmap, os
held, chunk = [], b"x" * (1 << 20)
def hoard_memfd():
    for i in range(20):  # 20 files of 32 MB (each under the file-size limit), never mapped
        fd = os.memfd_create(f"hoard{i}")
        for _ in range(32):
            os.write(fd, chunk)
        held.append(32)
def hoard_sysv():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    for _ in range(20):  # 20 segments of 32 MB, filled, then detached: they stay in the IPC namespace
        sid = libc.shmget(0, 32 << 20, 0o1600)
        if sid < 0:
            raise OSError(ctypes.get_errno(), "shmget")
        address = libc.shmat(sid, None, 0)
        ctypes.memset(address, 1, 32 << 20)
        libc.shmdt(ctypes.c_void_p(address))
        held.append(32)
for hoard in (hoard_memfd, hoard_sysv):
    try:
        hoard()
    except OSError:
        pass
if sum(held) > 512:
    raise RuntimeError(f"HELD {sum(held)} MB outside the limits")
"""


@pytest.mark.slow
@needs_bwrap
def test_memfd_and_sysv_shared_memory_are_bounded(tmp_path):
    """24 os.memfd_create files of 192 MB each added 4.6 GB of host memory: no limit counted them (neither the heap
    nor the address space; only each file's size). SysV shared memory filled and detached is the same. Scaled
    down here: 640 MB of each against a 512 MB memory limit."""
    nbformat.write(_with_cell("04_masks", HOARD), tmp_path / "04_masks.ipynb")
    limits = sandbox.Limits(memory_mb=512, file_mb=32)
    g = grade.grade_notebook(tmp_path / "04_masks.ipynb", "hoarder", cell_timeout=60, limits=limits)
    assert not any("HELD" in p for p in g.problems), g.problems
    assert [r.passed for r in g.results] == MASKS_PASS, (g.problems, g.notes)


@contextlib.contextmanager
def _peak_memory():
    """``[MB]``: how far this process's resident memory rose above its start while the block ran (sampled)."""
    page = os.sysconf("SC_PAGE_SIZE") / 1e6
    rss = lambda: int(Path("/proc/self/statm").read_text().split()[1]) * page  # noqa: E731
    start, peak, done = rss(), [0.0], threading.Event()

    def sample() -> None:
        while not done.wait(0.005):
            peak[0] = max(peak[0], rss() - start)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()


FLOOD_BUFFERS = """
kernel = get_ipython().kernel
big = b"x" * (64 << 20)  # three 64 MB buffers on iopub (the issue's were 1.4 GB each), past a 4 MB cap
kernel.session.send(kernel.iopub_socket, "display_data", {"data": {}, "metadata": {}}, buffers=[big, big, big])
"""


@pytest.mark.slow
@needs_bwrap
def test_a_kernel_cannot_make_the_grader_hold_a_huge_message(tmp_path):
    """Three 1.4 GB buffers sent on iopub grew the grader's own memory to 4.8 GB: the output cap counted a message
    only once it was held. Now ZeroMQ refuses a part of a message past Limits.message_mb before the grader holds
    it (ZMQ_MAXMSGSIZE on every socket of the grader's), the kernel is stopped, and the row's note says so."""
    nbformat.write(_with_cell("04_masks", FLOOD_BUFFERS), tmp_path / "04_masks.ipynb")
    with _peak_memory() as peak:
        g = grade.grade_notebook(
            tmp_path / "04_masks.ipynb", "flood", cell_timeout=60, limits=sandbox.Limits(message_mb=4)
        )
    assert peak[0] < 96, f"the grader's memory grew by {peak[0]:.0f} MB"  # 192 MB were sent
    assert [r.passed for r in g.results] == MASKS_PASS, (g.problems, g.notes)
    assert any(n.startswith("Hit the limit on messages (4 MB per part") for n in g.notes), g.notes
    assert any(p.startswith("Cell 4 stopped the kernel") for p in g.problems), g.problems


FLOOD_PARTS = """
kernel = get_ipython().kernel
part = b"x" * (3 << 20)  # 70 parts of 3 MB in one message: each under a 4 MB cap, 210 MB in all
kernel.session.send(kernel.iopub_socket, "display_data", {"data": {}, "metadata": {}}, buffers=[part] * 70)
"""


@pytest.mark.slow
@needs_bwrap
def test_a_kernel_cannot_make_the_grader_hold_a_message_of_many_parts(tmp_path):
    """A message of many parts, each under ZMQ_MAXMSGSIZE, is held whole before its first part is read: 210 MB sent
    grew the grader by about 200 MB. Now the kernel client runs in a child of its own with Limits.client_mb of
    memory: the child is stopped, not the grader, which grows by a few MB; the row's note names the limit and the
    other exercises are graded in a fresh kernel."""
    nbformat.write(_with_cell("04_masks", FLOOD_PARTS), tmp_path / "04_masks.ipynb")
    limits = sandbox.Limits(message_mb=4, client_mb=64)
    with _peak_memory() as peak:
        g = grade.grade_notebook(tmp_path / "04_masks.ipynb", "parts", cell_timeout=60, limits=limits)
    assert peak[0] < 48, f"the grader's memory grew by {peak[0]:.0f} MB"  # 210 MB were sent
    assert [r.passed for r in g.results] == MASKS_PASS, (g.problems, g.notes)
    assert any(
        n.startswith("Hit the limit on messages (4 MB per part of a message it sends, 64 MB held by the grader")
        for n in g.notes
    ), g.notes
    assert any(p.startswith("Cell 4 stopped the kernel") for p in g.problems), g.problems


@needs_bwrap
def test_any_folder_name_is_graded_and_the_sheets_and_their_hmac_are_written(tmp_path):
    """A submission folder whose name is 240 bytes crashed the run with ENAMETOOLONG (its feedback file's temporary
    name passed 255 bytes): no .sha256, no .hmac, later feedback lost. A name that is not UTF-8 (a zip made on
    another system) is the same kind of name. Each gets its rows; the sheets and their HMAC are written."""
    folder = tmp_path / "class"
    names = ["é" * 120, "a" * 240, os.fsdecode(b"bad-\xff\xfe-bytes"), "=cmd|' -C calc'!A0", "two\nlines\u202e"]
    for name in names:
        (folder / name).mkdir(parents=True)
        (folder / name / "04_masks.ipynb").write_text("not a notebook")  # no kernel: the rows say why
    out = tmp_path / "out" / "grades.csv"
    graded = grade.grade_folder(folder, out, progress=False, key_file=tmp_path / "key")
    assert sorted(g.student for g in graded) == sorted(names)
    assert out.with_suffix(".sha256").exists() and out.with_suffix(".hmac").exists()
    feedback = list((out.parent / "feedback").iterdir())
    assert len(feedback) == len(names) and all(len(os.fsencode(p.name)) <= 200 for p in feedback), feedback
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert len(rows) == len(MASKS_PASS) * len(names) and all(r["passed"] == "0" for r in rows), rows


@pytest.mark.parametrize(
    "exercise, code, flag",
    [
        (
            "attention",
            "from torch.nn.functional import *\ndef attention(q, k, v, mask=None):\n"
            "    return scaled_dot_product_attention(q, k, v), None",
            "uses PyTorch's F.scaled_dot_product_attention",
        ),
        (
            "attention",
            "import pickle\nclass Answer:\n    def __reduce__(self):\n        return (exec, ('import torch',))\n"
            "def attention(q, k, v, mask=None):\n    pickle.loads(pickle.dumps(Answer()))\n    return q, None",
            "defines __reduce__",
        ),
        (
            "attention",
            "import marshal, types\nCODE = b''\ndef attention(q, k, v, mask=None):\n"
            "    return types.FunctionType(marshal.loads(CODE), {})(q, k, v)",
            "turns data into code (marshal.loads)",
        ),
        (
            "attention",
            "from transformers.models.bert.modeling_bert import eager_attention_forward as ref\n"
            "def attention(q, k, v, mask=None):\n    return ref(None, q, k, v, mask)",
            "imports transformers.models.bert.modeling_bert, a package the assignments do not hand out",
        ),
        (
            "decoder_layer",
            "import transformer_lib as tl\ndef decoder_layer(cfg):\n    return tl.Transformer(cfg).decoder.layers[0]",
            "uses the library's reference tl.Transformer",
        ),
        (
            "attention",
            "from os import *\ndef attention(q, k, v, mask=None):\n    return q, None",
            "imports every name of os (import *)",
        ),
    ],
    ids=["star import", "pickle __reduce__", "marshal", "transformers", "tl.Transformer's layer", "star elsewhere"],
)
def test_flags_read_star_imports_code_from_data_and_other_packages(exercise, code, flag):
    """Each passed 10/10 (or 5/5) unflagged before: a star import hid F.scaled_dot_product_attention, a pickle
    whose __reduce__ calls exec ran code the source does not show, an implementation came from transformers, and
    the decoder exercise returned a layer of the library's whole model."""
    found = integrity.flags(["import torch", code], {exercise: (exercise,)})[exercise]
    assert any(f.startswith(flag) for f in found), found


def test_the_nbgrader_route_grades_in_the_sandbox_and_says_so(tmp_path, capsys):
    """nbgrader autograde ran student code as the teacher (as uid 0, the solutions readable) and a wrong answer that
    patched its check got 10/10 there, without a word. The export's config now replaces nbgrader's Execute step by
    tl-grade's engine (the same grade on both routes: test_nbgrader_export's round trip), and says so."""
    from transformer_lib.classroom import assignments
    from transformer_lib.classroom.nbgrader_export import GRADER

    assert assignments.main(["--nbgrader", str(tmp_path / "course")]) == 0
    said = capsys.readouterr().err
    config = (tmp_path / "course" / "nbgrader_config.py").read_text()
    for text in (said, config):
        flat = " ".join(text.replace("\n#", " ").split())  # (the config's comment is wrapped)
        assert "tl-grade's bubblewrap sandbox" in flat and "patches its check" in flat, text
    from traitlets.config import Config

    loaded = Config()
    exec(config, {"get_config": lambda: loaded})  # as nbgrader loads it: autograde's first step is ours, no Execute
    steps = loaded.Autograde.autograde_preprocessors
    assert steps[0] == GRADER and not any(step.endswith(".Execute") for step in steps), steps


# --------------------------------------------------------------------------------------------------------------
# Inputs the student cannot know: the checks' random cases come from a seed the kernel never sees
# --------------------------------------------------------------------------------------------------------------
_FUNCTIONS = [  # the exercises answered by a function (the module exercises take the check's own weights)
    (a.id, ex) for a in ASSIGNMENTS.values() for ex in a.exercises if ex.names[0][:1].islower()
]


def _looked_up(sol, ex):
    """``ex``'s function answered from a table of the solution's outputs on the public inputs (what a student can
    compute at home by running the notebook's own check), and a wrong answer for anything else."""
    import copy

    from transformer_lib.classroom.checks import grade_exercise
    from transformer_lib.classroom.checks.record import _fingerprint

    table = {}

    def at_home(*args, **kwargs):
        key = _fingerprint(None, args, kwargs)
        table[key] = copy.deepcopy(sol[ex.names[0]](*copy.deepcopy(args), **copy.deepcopy(kwargs)))
        return copy.deepcopy(table[key])

    at_home.__name__ = ex.names[0]
    assert grade_exercise(ex.check, {ex.names[0]: at_home}, ex.names).passed  # the table is complete

    def answer(*args, **kwargs):
        key = _fingerprint(None, args, kwargs)
        if key not in table:
            raise LookupError("not in my table")  # the fallback: anything wrong will do
        return copy.deepcopy(table[key])

    answer.__name__ = ex.names[0]
    return answer, len(table)


@pytest.mark.parametrize("assignment, ex", _FUNCTIONS, ids=[ex.name for _, ex in _FUNCTIONS])
def test_a_table_of_the_public_inputs_outputs_earns_nothing_in_the_grader(sol, assignment, ex):
    """A function that answers from a table of outputs for the public inputs: full marks before (the checks' inputs
    were fixed and seeded); now the grader hands the kernel random cases drawn from a seed of its own, the table
    misses them, and the exercise neither passes nor earns a point."""
    import secrets

    from transformer_lib.classroom.checks import hidden, record

    answer, size = _looked_up(sol, ex)
    names = list(ex.names)
    live, text = record._record(ex.check, {names[0]: answer}, names, 10.0)
    assert record.replay_exercise(ex.check, names, text, 10.0).passed  # the public cases: all in the table
    cases = hidden.hand_in(ex.check, secrets.randbits(256))
    live, text = record._record(ex.check, {names[0]: answer}, names, 10.0, cases)
    result = record.replay_exercise(ex.check, names, text, 10.0, cases)
    assert not result.passed and ex.earned(result) == 0, (size, result)
    assert "random case" in result.details and "not in my table" in result.summary, result
    honest = {names[0]: sol[names[0]]}
    live, text = record._record(ex.check, honest, names, 10.0, cases)
    assert record.replay_exercise(ex.check, names, text, 10.0, cases).passed  # the solution passes them


def test_the_random_cases_differ_by_seed_and_carry_no_seed():
    from transformer_lib.classroom.checks import hidden

    for _, ex in _FUNCTIONS:
        one, two = hidden.hand_in(ex.check, 1), hidden.hand_in(ex.check, 2)
        assert one != two and hidden.read_handed(one) and one == hidden.hand_in(ex.check, 1), ex.check
        assert hidden.hand_in(ex.check, hidden.PUBLIC_SEED) != one


@pytest.mark.slow
@needs_bwrap
def test_a_notebook_that_looks_its_answers_up_gets_no_points_for_the_random_cases(tmp_path, sol):
    """The whole route: a notebook whose attention answers from a table of outputs for the public inputs (keyed by
    the bytes of q, k and v) and falls back to a wrong formula got 10/10 unflagged before; now 0/10."""
    from transformer_lib.classroom.checks import grade_exercise

    table = {}

    def key(q, k, v):
        return "".join(hashlib.sha256(t.float().numpy().tobytes()).hexdigest()[:16] for t in (q, k, v))

    def at_home(q, k, v, mask=None):
        out, w = sol["attention"](q, k, v, mask)
        table[key(q, k, v)] = (str(out.dtype).removeprefix("torch."), out.double().tolist(), w.double().tolist())
        return out, w

    at_home.__name__ = "attention"
    assert grade_exercise("check_attention", {"attention": at_home}, ("attention",)).passed
    code = (
        "import hashlib, torch\n"
        f"TABLE = {table!r}\n"
        "def attention(q, k, v, mask=None):\n"
        "    key = ''.join(hashlib.sha256(t.float().numpy().tobytes()).hexdigest()[:16] for t in (q, k, v))\n"
        "    if key in TABLE:\n"
        "        dtype, out, w = TABLE[key]\n"
        "        return torch.tensor(out).to(getattr(torch, dtype)), torch.tensor(w).to(getattr(torch, dtype))\n"
        "    w = (q @ k.transpose(-2, -1)).softmax(-1)  # wrong: no scaling, no mask\n"
        "    return w @ v, w\n"
    )
    nb = solved("03_attention")
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "def attention(" in c.source]
    cell.source = code
    nbformat.write(nb, tmp_path / "03_attention.ipynb")
    g = grade.grade_notebook(tmp_path / "03_attention.ipynb", "table", cell_timeout=120)
    (result,) = g.results
    ex = ASSIGNMENTS["03_attention"].exercises[0]
    assert not result.passed and ex.earned(result) == 0, (result, result.parts, g.problems)


_EXERCISES = [ex for a in ASSIGNMENTS.values() for ex in a.exercises]


@pytest.mark.parametrize("ex", _EXERCISES, ids=[ex.name for ex in _EXERCISES])
def test_the_solutions_pass_random_cases_handed_in(sol, ex):
    """Every exercise, modules included: the random cases read back from what the kernel is handed (a decoder case of
    five values was once refused as malformed)."""
    import secrets

    from transformer_lib.classroom.checks import hidden, record

    cases = hidden.hand_in(ex.check, secrets.randbits(256))
    objects = {n: sol[n] for n in ex.names}
    live, text = record._record(ex.check, objects, list(ex.names), 10.0, cases)
    result = record.replay_exercise(ex.check, list(ex.names), text, 10.0, cases)
    assert live.passed and result.passed and "random case" in result.summary, result


# --------------------------------------------------------------------------------------------------------------
# PyTorch's own attention is a stub in the kernel of the assignments that ask for attention
# --------------------------------------------------------------------------------------------------------------
_BLOCK_MASK = (  # FlexAttention's block mask of every query seeing every key, as its operator takes it
    "import torch\nfrom torch.nn.attention.flex_attention import create_block_mask\n"
    "m = create_block_mask(lambda b, h, i, j: i >= 0, None, None, 2, 2, device='cpu').as_tuple()\n"
)
_ROUTES = {
    "F": "import torch.nn.functional as F\nF.scaled_dot_product_attention(q, q, q)",
    "star import": "from torch.nn.functional import *\nscaled_dot_product_attention(q, q, q)",
    "getattr": "import torch\ngetattr(torch.nn.functional, 'scaled_' + 'dot_product_attention')(q, q, q)",
    "importlib": "import importlib\n"
    "importlib.import_module('torch.nn.functional').scaled_dot_product_attention(q, q, q)",
    "torch._C._nn": "import torch\ntorch._C._nn.scaled_dot_product_attention(q, q, q)",
    "torch.ops.aten": "import torch\ntorch.ops.aten.scaled_dot_product_attention(q, q, q)",
    "the math operator": "import torch\ntorch.ops.aten._scaled_dot_product_attention_math(q, q, q)",
    "nn.MultiheadAttention": "import torch\ntorch.nn.MultiheadAttention(4, 1)(q, q, q)",
    "its module's alias": "from torch.nn.modules.activation import MultiheadAttention\nMultiheadAttention(4, 1)",
    "a transformer layer": "import torch\ntorch.nn.TransformerEncoderLayer(4, 1)(q)",
    "multi_head_attention_forward": "import torch.nn.functional as F\nF.multi_head_attention_forward(q, q, q, 4, 1, "
    "None, None, None, None, False, 0.0, torch.eye(4), None)",
    # FlexAttention ran in assignments 3 and 5 before (flagged, but 10/10): the function, its higher-order operator,
    # the operator's eager kernel and the function that computes it; an encoder layer's fused forward (its attention
    # operator is the stub already)
    "flex_attention": "from torch.nn.attention.flex_attention import flex_attention\n"
    "flex_attention(q[None], q[None], q[None])",
    "flex_attention's operator": _BLOCK_MASK
    + "torch.ops.higher_order.flex_attention(q[None], q[None], q[None], lambda s, b, h, i, j: s, m, 0.5, {})",
    "flex_attention's eager kernel": _BLOCK_MASK
    + "op = torch.ops.higher_order.flex_attention.py_kernels[torch._C.DispatchKey.CompositeExplicitAutograd]\n"
    "op(q[None], q[None], q[None], lambda s, b, h, i, j: s, m, 0.5, {}, (), ())",
    "flex_attention's math": _BLOCK_MASK
    + "import sys\nsys.modules['torch._higher_order_ops.flex_attention'].math_attention(q[None], q[None], q[None], "
    "lambda s, b, h, i, j: s, m, 0.5, {})",
    "an encoder layer's fused forward": "import torch\nw, b = torch.eye(4), torch.zeros(4)\n"
    "torch._C._VariableFunctions._transformer_encoder_layer_fwd(q, 4, 1, torch.cat([w, w, w]), torch.zeros(12), w, b, "
    "False, False, 1e-5, torch.ones(4), b, torch.ones(4), b, torch.zeros(8, 4), torch.zeros(8), torch.zeros(4, 8), b)",
}


# Each route runs in a process of its own, forked from one that has imported the library copy and torch (what a
# fresh process does first): one import and one library copy per assignment instead of one per route (30 Pythons
# importing torch before, 2 now). The child's exit status and what it printed come back as one JSON line.
_EACH_ROUTE = """
import contextlib, io, json, os, sys
import transformer_lib, torch
for name, code in json.loads(sys.argv[1]).items():
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        printed, status = io.StringIO(), 0
        try:
            with contextlib.redirect_stdout(printed):
                exec(code, {"__name__": "__main__"})
        except BaseException as e:
            printed.write(f"escaped: {type(e).__name__} {e}")
            status = 1
        sys.__stdout__.write(json.dumps([name, status, printed.getvalue()]) + "\\n")
        sys.__stdout__.flush()
        os._exit(status)
    _, wait_status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(wait_status) not in (0, 1):
        print(json.dumps([name, os.waitstatus_to_exitcode(wait_status), "died"]))
"""


@pytest.fixture(scope="module")
def routes_run():
    """``{(assignment, route): (exit status, what it printed)}``: each route of _ROUTES in a kernel's library copy."""
    found = {}
    for assignment in sorted(stubs.TORCH_REMOVED):
        codes = {
            route: "import transformer_lib, torch\nq = torch.ones(1, 2, 4)\ntry:\n"
            + "".join(f"    {line}\n" for line in code.splitlines())
            + "    print('RAN')\nexcept Exception as e:\n    print(type(e).__name__, e)\n"
            for route, code in _ROUTES.items()
        }
        done = _in_copy(assignment, _EACH_ROUTE, json.dumps(codes))
        assert done.returncode == 0, done.stderr
        for line in done.stdout.splitlines():
            route, status, printed = json.loads(line)
            found[assignment, route] = status, printed
    return found


@pytest.mark.parametrize("assignment", sorted(stubs.TORCH_REMOVED))
@pytest.mark.parametrize("route", list(_ROUTES))
def test_pytorchs_attention_is_a_stub_in_the_kernel_whatever_the_route(routes_run, assignment, route):
    """Each route ran PyTorch's attention in the kernel of assignments 3 and 5 before (flagged at best: a star import,
    getattr or importlib hid it from the flags); now it raises ReferenceRemoved, which names what was called."""
    status, printed = routes_run[assignment, route]
    assert status == 0, printed
    assert "RAN" not in printed and f"while assignment {assignment} is graded" in printed, printed
    assert printed.startswith("ReferenceRemoved torch."), printed


@pytest.mark.parametrize("assignment", ["04_masks", "06_decoder"])
def test_pytorchs_attention_stays_where_no_assignment_asks_for_it(assignment):
    """The decoder's layers run tl.MultiHeadAttention, whose fused path is F.scaled_dot_product_attention."""
    done = _in_copy(
        assignment,
        "import transformer_lib, torch\nq = torch.ones(1, 2, 4)\n"
        "print(torch.nn.functional.scaled_dot_product_attention(q, q, q).shape, torch.nn.MultiheadAttention(4, 1))",
    )
    assert done.returncode == 0 and "torch.Size([1, 2, 4])" in done.stdout, (done.stdout, done.stderr)

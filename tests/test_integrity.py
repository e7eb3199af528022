"""Reading a submission's source (transformer_lib.classroom.integrity): which cell defines what, and the flags a
teacher sees (reference calls, dynamic code, code that reaches into the checks); the starters and the solutions
raise none."""

from pathlib import Path

import nbformat
import pytest

from transformer_lib.classroom import integrity
from transformer_lib.classroom.assignments import ASSIGNMENTS

ROOT = Path(__file__).resolve().parents[1]
SETUP = "import torch\nimport transformer_lib as tl\nfrom torch import nn\nimport torch.nn.functional as F\n"


def flags_of(code, exercise="attention", names=("attention",)):
    return integrity.flags([SETUP, code], {exercise: names})[exercise]


@pytest.mark.parametrize("folder", ["assignments", "book/assignments"])
@pytest.mark.parametrize("aid", sorted(ASSIGNMENTS))
def test_solutions_and_starters_raise_no_flag(folder, aid):
    nb = nbformat.read(ROOT / folder / f"{aid}.ipynb", as_version=4)
    sources = [c.source for c in nb.cells if c.cell_type == "code" and "check" not in c.metadata.get("tags", [])]
    found = integrity.flags(sources, {ex.name: ex.names for ex in ASSIGNMENTS[aid].exercises})
    assert all(f == [] for f in found.values()), found


@pytest.mark.parametrize(
    "code, flag",
    [
        (
            "def attention(q, k, v, mask=None):\n    return tl.scaled_dot_product_attention(q, k, v, mask)",
            "uses the library's reference tl.scaled_dot_product_attention",
        ),
        (
            "def attention(q, k, v, mask=None):\n    return F.scaled_dot_product_attention(q, k, v)",
            "uses PyTorch's F.scaled_dot_product_attention",
        ),
        (
            "from transformer_lib.attention import scaled_dot_product_attention as sdpa\n"
            "def attention(q, k, v, mask=None):\n    return sdpa(q, k, v)",
            "uses the library's reference tl.attention.scaled_dot_product_attention",
        ),
        (
            "ref = tl.scaled_dot_product_attention\ndef helper(q, k, v):\n    return ref(q, k, v)\n"
            "def attention(q, k, v, mask=None):\n    return helper(q, k, v)",
            "uses the library's reference tl.scaled_dot_product_attention",
        ),  # through an alias and a helper
        (
            "def attention(q, k, v, mask=None):\n    m = nn.MultiheadAttention(8, 2)\n    return m(q, k, v)",
            "uses PyTorch's nn.MultiheadAttention",
        ),
        (
            "def attention(q, k, v, mask=None):\n    return eval('tl.' + 'scaled_dot_product_attention')(q, k, v)",
            "uses dynamic code (eval)",
        ),
        (
            "def attention(q, k, v, mask=None):\n    return getattr(tl, 'scaled_dot_product_attention')(q, k, v)",
            "uses getattr on the module tl",
        ),
        (
            "import importlib\ndef attention(q, k, v, mask=None):\n    return importlib.import_module('x').f(q)",
            "imports by name at run time (importlib)",
        ),
        (
            "from transformer_lib.classroom.checks import core\ncore._CHECKS.clear()\n"
            "def attention(q, k, v, mask=None):\n    return q",
            "reaches into the checks (_CHECKS)",
        ),
        (
            "tl.scaled_dot_product_attention = print\ndef attention(q, k, v, mask=None):\n    return q",
            "changes the module transformer_lib (assigns to .scaled_dot_product_attention)",
        ),
    ],
)
def test_flags(code, flag):
    found = flags_of(code)
    assert any(f.startswith(flag) and f.endswith(": the teacher decides") for f in found), found


def test_what_is_not_a_reference_call():
    code = (
        "ref = tl.scaled_dot_product_attention  # defined, never used by the answer\n"
        "def attention(q: torch.Tensor, k, v, mask=None) -> tl.Transformer:  # annotations call nothing\n"
        "    ref = 1  # a local name that shadows the top-level alias\n"
        "    return (q @ k.transpose(-2, -1)).softmax(-1) @ v, tl.PAD_ID"
    )
    assert flags_of(code) == []


def test_definitions_name_the_cells_in_order():
    found = integrity.definitions(
        [
            "import torch",
            "def f(): pass",
            "x = 1",
            "syntax error (",
            "def f(): return 2",
            "class A: pass\nif True:\n    def g(): pass",
        ]
    )
    assert found["f"] == [1, 4] and found["x"] == [2] and found["A"] == [5] and found["g"] == [5]
    assert found["torch"] == [0]


WRONG = "def attention(q, k, v, mask=None):\n    return q, None\n"


@pytest.mark.parametrize(
    "code, flag",
    [
        (  # issue 22: the swap after the fact, in a cell of its own
            WRONG + "globals().update(attention=lambda q, k, v, mask=None: "
            "tl.scaled_dot_product_attention(q, k, v, mask, need_weights=True))",
            "reads or writes the notebook's namespace (globals())",
        ),
        (
            WRONG + "import inspect\nexec(compile(inspect.getsource(tl.scaled_dot_product_attention), 'a', 'exec'))",
            "runs code the source does not show (exec)",
        ),
        (
            WRONG + "import inspect\nexec(compile(inspect.getsource(tl.scaled_dot_product_attention), 'a', 'exec'))",
            "reads source code at run time (inspect.getsource)",
        ),
        (
            WRONG + "import json\nsetattr(json, 'dumps', print)",
            "changes an object's attribute at run time (setattr on json)",
        ),
        (WRONG + "vars()['attention'] = print", "reads or writes the notebook's namespace (vars())"),
        (WRONG + "m = __import__('transformer_lib')", "runs code the source does not show (__import__)"),
        (WRONG + "import importlib\nm = importlib.import_module('transformer_lib')", "imports by name at run time"),
        (WRONG + "attention = print", "rebinds the graded name attention (binds it 2 times)"),
        (
            WRONG + "def swap():\n    global attention\n    attention = print\nswap()",
            "rebinds the graded name attention (declares it global in a function)",
        ),
    ],
)
def test_code_anywhere_that_hides_what_runs_is_flagged(code, flag):
    """Outside the graded definition too (the source flags used to read only the statements that bind the name)."""
    found = flags_of(code)
    assert any(f.startswith(flag) and f.endswith(": the teacher decides") for f in found), found


def test_a_parse_survives_another_thread_building_an_ast(monkeypatch):
    """CPython 3.11 can fail a correct parse while another thread builds an AST (python/cpython#106905; it failed 7
    grader tests at once in CI): the parse is tried again, and any other error still comes through."""
    import ast
    import threading

    from transformer_lib.classroom import integrity, source

    real, calls = source._parse_once, []

    def flaky(source, *args, **kwargs):
        calls.append(source)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=30, after=25)")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(source, "_parse_once", flaky)
    assert isinstance(integrity.parse_source("x = 1"), ast.Module) and len(calls) == 2
    monkeypatch.setattr(source, "_parse_once", lambda *a, **k: (_ for _ in ()).throw(SystemError("something else")))
    with pytest.raises(SystemError, match="something else"):
        integrity.parse_source("x = 1")
    monkeypatch.setattr(source, "_parse_once", real)
    # many threads at once: every parse comes back whole
    code = "def attention(q, k, v):\n    return (q @ k.T) @ v\n" * 50
    results: list[int] = []
    threads = [
        threading.Thread(target=lambda: results.extend(len(integrity.parse_source(code).body) for _ in range(20)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [50] * 80

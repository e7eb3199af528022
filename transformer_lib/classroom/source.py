"""A submission's code as the kernel runs it, read once per cell and never run (:class:`Cell`, :func:`read_cells`).

The grader's source readers (:mod:`.integrity`'s flags and definitions, :mod:`.similarity`) all read the same
:class:`Cell`: its IPython syntax turned into Python by IPython's own input transformer (what the kernel runs: a
``%magic`` line becomes ``get_ipython().run_line_magic(...)``, a ``!`` line ``get_ipython().system(...)``), then
parsed once. The body of a cell magic that runs Python (``%%time``, ``%%capture``, ...) and the code argument of a
line magic that runs it (``%time f()``) are parsed too and take the magic's place, so a magic hides nothing.

Every parse is bounded: a cell longer than :data:`MAX_CELL_CHARS` is not parsed, and one nested too deep for the
parser (``1 + 1 + ...`` five thousand times: ``RecursionError``), or too large for memory, gets a :attr:`Cell.problem`
instead of a tree. A notebook's code past :data:`MAX_CODE_CHARS` in all is not graded (:func:`too_long`).
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Cell", "read_cell", "read_cells", "parse_source", "too_long", "MAX_CELL_CHARS", "MAX_CODE_CHARS"]

MAX_CELL_CHARS = 100_000  # the longest code cell of an assignment's solution is under 5,000 characters
MAX_CODE_CHARS = 500_000  # a notebook's code cells together (the longest solution: under 20,000)
CODE_MAGICS = frozenset({"time", "timeit", "prun", "capture"})  # their argument or body is Python the kernel runs
_DEPTH = 3  # a magic inside a magic's body, inside ...: read this deep

# CPython 3.11 keeps one AST-construction depth counter per interpreter: two threads building ASTs at once can fail
# with "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905). The grader grades --jobs
# notebooks in threads (seen in CI: 7 tests at once), and Python 3.11 also parses source lines whenever a thread
# formats a traceback (the carets under an error). Our own parses take turns, and a parse that still meets the
# error is tried again: its input was fine.
_AST_LOCK = threading.Lock()
_AST_TRIES = 5
# IPython runs a cell with a top-level ``await`` (autoawait): such a cell is Python the kernel runs
_FLAGS = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


def _parse_once(source: str) -> ast.Module:
    tree = compile(source, "<cell>", "exec", flags=_FLAGS, dont_inherit=True)
    assert isinstance(tree, ast.Module)
    return tree


def parse_source(source: str) -> ast.Module:
    """``ast.parse(source)`` (top-level ``await`` allowed), safe in threads. Raises SyntaxError or ValueError as
    ``ast.parse`` does, RecursionError or MemoryError for code nested too deep or too large to parse."""
    for attempt in range(_AST_TRIES):
        try:
            with _AST_LOCK:
                return _parse_once(source)
        except SystemError as error:
            if "recursion depth mismatch" not in str(error) or attempt == _AST_TRIES - 1:
                raise
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Cell:
    """One code cell as the grader reads it: ``source`` as written, ``python`` what the kernel runs (IPython syntax
    transformed), ``tree`` its parse (None if it has none) and ``problem``, why not ("" when parsed)."""

    source: str
    python: str
    tree: ast.Module | None
    problem: str = ""


def _to_python(source: str) -> str:
    """IPython syntax (magics, ``!`` lines, ``x?``) turned into the Python IPython runs; ``source`` if it cannot."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return str(TransformerManager().transform_cell(source))
    except Exception:  # (IPython's transformer never raises on a cell the kernel runs; keep what was written)
        return source


def _magic(stmt: ast.stmt) -> tuple[str, str, list[str]] | None:
    """``("line" | "cell", magic name, its string arguments)`` if ``stmt`` is IPython's call of a magic."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ("run_line_magic", "run_cell_magic")
        and isinstance(call.func.value, ast.Call)
        and isinstance(call.func.value.func, ast.Name)
        and call.func.value.func.id == "get_ipython"
        and call.args
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
    ):
        return None
    args = [str(a.value) for a in call.args if isinstance(a, ast.Constant)]
    return call.func.attr.split("_")[1], args[0], args[1:]


_OPTIONS = re.compile(r"^\s*(?:-[A-Za-z]+\s*\d*\s+)*")  # %timeit -n 10 -r 3 f(): the options before the code


def _inline_magics(tree: ast.Module, depth: int) -> ast.Module:
    """``tree`` with each top-level magic that runs Python replaced by the statements it runs."""
    body: list[ast.stmt] = []
    for stmt in tree.body:
        magic = _magic(stmt)
        code = None
        if magic is not None and magic[1] in CODE_MAGICS and depth < _DEPTH:
            kind, _, args = magic
            code = args[-1] if kind == "cell" else _OPTIONS.sub("", args[0]) if args else None
        inner = read_cell(code, depth + 1).tree if code else None
        body += inner.body if inner is not None else [stmt]
    tree.body = body
    return tree


def read_cell(source: str, depth: int = 0) -> Cell:
    """``source`` (one code cell) as the kernel runs it, parsed once: see the module's docstring."""
    if len(source) > MAX_CELL_CHARS:
        return Cell(source, source, None, f"{len(source):,} characters, over the limit of {MAX_CELL_CHARS:,}")
    python = _to_python(source)
    try:
        return Cell(source, python, _inline_magics(parse_source(python), depth))
    except SyntaxError as e:
        return Cell(source, python, None, f"SyntaxError: {e.msg} (line {e.lineno})")
    except (ValueError, TypeError) as e:  # a null byte, ...
        return Cell(source, python, None, f"{type(e).__name__}: {e}")
    except RecursionError:
        return Cell(source, python, None, "it is nested too deeply for the grader to parse (RecursionError)")
    except MemoryError:
        return Cell(source, python, None, "it is too large for the grader to parse (MemoryError)")


def read_cells(sources: Iterable[str | Cell]) -> list[Cell]:
    """Each of ``sources`` read (see :func:`read_cell`); a :class:`Cell` already read is kept as it is."""
    return [s if isinstance(s, Cell) else read_cell(s) for s in sources]


def too_long(sources: Iterable[str]) -> str:
    """Why a notebook whose code cells are ``sources`` is too long to grade ("" when it is not)."""
    total = sum(len(s) for s in sources)
    if total <= MAX_CODE_CHARS:
        return ""
    return (
        f"its code cells hold {total:,} characters, over the grader's limit of {MAX_CODE_CHARS:,} "
        "(the assignments' solutions need under 20,000)"
    )

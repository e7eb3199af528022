"""Library source shown in a chapter as highlighted code, folded away when it is long.

The book explains the library by showing it (``inspect.getsource``, never a pasted copy), so the text cannot drift
from the code. Printed as plain text, a 40-line function is a grey block cut at the right; :func:`show_source`
renders it with syntax colours inside a ``<details>`` element that is open for short sources and folded for long
ones, in Jupyter and on the website alike, and prints as plain source where HTML is not shown.
"""

from __future__ import annotations

import ast
import html
import inspect
import textwrap
from typing import Any

__all__ = ["show_source", "Source"]


class Source:
    """The source of one or more library objects, displayed as highlighted HTML (plain text elsewhere)."""

    def __init__(self, objects: tuple[Any, ...], collapse_after: int, docstrings: bool = True) -> None:
        if not objects:
            raise ValueError("objects: expected at least one function, class or module, got none")
        self.items = []
        for obj in objects:
            try:
                code = textwrap.dedent(inspect.getsource(obj))
            except (TypeError, OSError) as err:
                raise TypeError(f"objects: cannot show the source of {obj!r} ({err})") from err
            if not docstrings:
                code = without_docstrings(code)
            name = getattr(obj, "__qualname__", getattr(obj, "__name__", repr(obj)))
            module = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
            self.items.append((f"{module}.{name}" if module and module != name else name, code))
        self.collapse_after = collapse_after

    def __repr__(self) -> str:
        return "\n\n".join(code.rstrip("\n") for _, code in self.items)

    def _repr_html_(self) -> str:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer

        parts = []
        for name, code in self.items:
            n = code.count("\n")
            body = highlight(code, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=True))
            folded = "" if n <= self.collapse_after else " (click to unfold)"
            parts.append(
                f"<details class='tl-source'{' open' if n <= self.collapse_after else ''}>"
                f"<summary>Source of <code>{html.escape(name)}</code>, {n} lines{folded}</summary>"
                f"{body}</details>"
            )
        return "".join(parts)


def without_docstrings(code: str) -> str:
    """``code`` without the docstrings of its functions and classes (one that is a whole body stays)."""
    drop: set[int] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and len(node.body) > 1:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                drop.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines = code.splitlines(keepends=True)
    return "".join(line for number, line in enumerate(lines, start=1) if number not in drop)


def show_source(*objects: Any, collapse_after: int = 25, docstrings: bool = True) -> Source:
    """The source of ``objects`` (functions, methods, classes), highlighted; folded when longer than
    ``collapse_after`` lines. ``docstrings=False`` leaves the docstrings out (a page that reads many pieces in a row
    and explains them in its prose). Return it as a cell's last expression to display it."""
    if collapse_after < 0:
        raise ValueError(f"collapse_after: expected a number of lines >= 0, got {collapse_after}")
    return Source(objects, collapse_after, docstrings)

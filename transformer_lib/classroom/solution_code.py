"""A submission's solution code to one exercise, written out in a form that moving code around does not change.

:func:`solution_code` starts from the functions and classes the exercise grades (their last top-level definition in
the notebook) and follows every helper they reach, transitively: defined in the notebook, or in a Python file of
the submission that the notebook imports (a ``.py`` beside the notebook, or one it writes with ``%%writefile``).
Two rewrites then take away what a copier can change without changing what runs:

* **Helpers are inlined.** A call of a plain helper function is replaced by the helper's body (its ``return``
  becoming the assignment the call was part of; a call inside a larger expression is computed just before it), to
  a depth of :data:`MAX_DEPTH` and :data:`MAX_INLINED` statements in all. A classmate's body moved into one helper,
  split over two, or moved into an imported file then reads as the body it was. A helper that cannot be inlined (a
  class, a generator, one with an early ``return``, a recursive one, one used as a value) is written out after the
  graded definitions, in the order it is reached.
* **Independent statements are put in one order.** Within each block, the assignments and compound statements whose
  order does not matter (neither writes a name, or ``a.b`` path, that the other reads or writes; an in-place call
  ``x.add_(...)`` or ``xs.append(...)`` writes ``x``) are sorted by their text as copydetect reads it (names and
  strings replaced), keeping every dependent pair in order (a call run for its effect, ``f(x)``, writes ``x`` and
  ``f``'s module); a ``return``, ``raise``, docstring, ``try``, import or definition keeps its place, and a block of
  more than :data:`MAX_ORDERED` statements keeps its order. Swapping two independent lines of a copy changes nothing.

What this cannot see: a copy rewritten statement by statement (a loop for a comprehension, ``@`` for ``matmul``),
or one whose helper is reached through a name the parse cannot follow (``getattr``, a dict of functions).
"""

from __future__ import annotations

import ast
import copy
import heapq
from collections.abc import Iterable
from typing import Any

from ..optional import require
from .source import Cell, parse_source, read_cells

__all__ = ["solution_code", "MAX_DEPTH", "MAX_INLINED", "MAX_ORDERED"]

MAX_DEPTH = 6  # helpers inlined into inlined helpers, this deep (the solutions nest two)
MAX_INLINED = 2_000  # statements inlined into one exercise's code in all: past it calls stay calls
MAX_ORDERED = 400  # a block of more statements keeps its order (ordering compares every pair: n² steps)
# methods that change their object in place, beside PyTorch's trailing-underscore ones (x.add_, x.masked_fill_)
_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "sort", "reverse", "add"}
    | {"discard", "register_buffer", "register_parameter", "add_module", "apply", "requires_grad_", "zero_"}
)

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
Scope = dict[str, Any]  # a name -> a definition, or (an imported module) its definitions


def _definitions(body: Iterable[ast.stmt]) -> dict[str, _Definition]:
    """The last top-level definition of each name in ``body``."""
    return {s.name: s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _imports(body: Iterable[ast.stmt], modules: dict[str, dict[str, _Definition]]) -> Scope:
    """What the top-level imports of ``body`` bind from the submission's own ``modules``: a local name -> the
    module's definitions (``import helpers``) or one definition (``from helpers import attend as a``)."""
    bound: Scope = {}
    for stmt in body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name in modules:
                    bound[alias.asname or alias.name] = modules[alias.name]
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module in modules:
            for alias in stmt.names:
                if alias.name in modules[stmt.module]:
                    bound[alias.asname or alias.name] = modules[stmt.module][alias.name]
    return bound


def _written_files(cells: list[Cell]) -> dict[str, str]:
    """The Python files the notebook writes with ``%%writefile NAME.py`` (IPython's run_cell_magic): module -> code."""
    files = {}
    for cell in cells:
        for stmt in cell.tree.body if cell.tree is not None else ():
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "run_cell_magic"
                and len(call.args) == 3
                and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
            ):
                magic, line, body = (str(a.value) for a in call.args if isinstance(a, ast.Constant))
                name = line.split()[-1] if magic == "writefile" and line.split() else ""
                if name.endswith(".py") and "/" not in name:
                    files[name.removesuffix(".py")] = body
    return files


def _parsed_modules(files: dict[str, str]) -> dict[str, Scope]:
    """Each file's definitions, and what its own imports bind from the other files."""
    parsed = {}
    for name, code in files.items():
        try:
            parsed[name] = parse_source(code).body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    modules: dict[str, Scope] = {name: dict(_definitions(body)) for name, body in parsed.items()}
    for name, body in parsed.items():
        modules[name] |= {k: v for k, v in _imports(body, modules).items() if k not in modules[name]}
    return modules


def _path(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name (the part of a name's state a statement touches), else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _root(node: ast.expr) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
        node = node.value
    return _path(node) if isinstance(node, ast.Name) else None


def _reads_writes(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    reads: set[str] = set()
    writes: set[str] = set()
    inner = {id(n.value) for n in ast.walk(stmt) if isinstance(n, ast.Attribute)}  # a.b of a.b.c: read as a.b.c
    for node in ast.walk(stmt):
        if isinstance(node, (ast.Name, ast.Attribute)) and id(node) not in inner:
            path = _path(node)
            if path is not None:
                (reads if isinstance(node.ctx, ast.Load) else writes).add(path)
        if isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
            writes.add(_root(node) or "")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr.endswith("_") or node.func.attr in _MUTATORS:
                writes.add(_root(node.func.value) or "")
    if isinstance(stmt, ast.AugAssign):
        reads |= writes
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):  # run for what it changes: its arguments,
        call = stmt.value  # or state of the module or object it belongs to (torch.manual_seed(0), print(x))
        writes |= {r for e in (call.func, *call.args, *(k.value for k in call.keywords)) if (r := _root(e))}
    return reads, writes


def _conflict(a: set[str], b: set[str]) -> bool:
    return any(p == q or p.startswith(q + ".") or q.startswith(p + ".") or "" in (p, q) for p in a for q in b)


_MOVABLE = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.If, ast.For, ast.While, ast.With)


def _movable(stmt: ast.stmt) -> bool:
    return isinstance(stmt, _MOVABLE) and not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))


def _ordered(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` with its independent statements sorted by their filtered text (see the module's docstring)."""
    if not 2 <= len(body) <= MAX_ORDERED:
        return body
    filter_code = require("copydetect", extra="classroom", purpose="comparing solutions").utils.filter_code
    keys = [str(filter_code(ast.unparse(s), "solution.py", "python")[0]) for s in body]
    effects = [_reads_writes(s) if _movable(s) else None for s in body]
    after: list[set[int]] = [set() for _ in body]  # j in after[i]: j must come after i
    for j, ej in enumerate(effects):
        for i in range(j):
            ei = effects[i]
            if (
                ei is None
                or ej is None
                or _conflict(ei[1], ej[0] | ej[1])  # i writes what j reads or writes
                or _conflict(ei[0], ej[1])  # j writes what i reads
            ):
                after[i].add(j)
    waiting = [0] * len(body)
    for i in range(len(body)):
        for j in after[i]:
            waiting[j] += 1
    ready = [(keys[i], i) for i in range(len(body)) if waiting[i] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        _, i = heapq.heappop(ready)
        out.append(body[i])
        for j in after[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (keys[j], j))
    return out


class _Writer:
    """Inlines helper calls and orders statements in the definitions of one exercise (see the module's docstring)."""

    def __init__(self, modules: dict[str, Scope], graded: set[int], skipped: set[str]) -> None:
        self.modules, self.graded, self.skipped = modules, graded, skipped  # graded: ids of the graded definitions
        self.inlined = 0
        self.reached: list[tuple[_Definition, Scope]] = []  # definitions referred to, not inlined

    def _resolve(self, node: ast.expr, scope: Scope) -> tuple[_Definition, Scope] | None:
        if isinstance(node, ast.Name) and node.id not in self.skipped:
            target = scope.get(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = scope.get(node.value.id)
            target = module.get(node.attr) if isinstance(module, dict) else None
        else:
            return None
        if not isinstance(target, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        owner = next((m for m in self.modules.values() if m.get(target.name) is target), None)
        return target, scope if owner is None else owner

    def _inlinable(self, call: ast.AST, scope: Scope, stack: tuple[int, ...], whole: bool) -> Any:
        """The helper that ``call`` runs and its scope, when its body can take the call's place (``whole``: the call
        is what a ``return`` returns, so the helper's own returns can stay)."""
        if not isinstance(call, ast.Call) or len(stack) >= MAX_DEPTH:
            return None
        found = self._resolve(call.func, scope)
        if found is None or not isinstance(found[0], ast.FunctionDef) or id(found[0]) in (*stack, *self.graded):
            return None
        fn = found[0]
        inner = [n for s in fn.body for n in _walk_here(s)]
        # decorators are left out: what the body reads as is what is compared (@torch.no_grad() hides nothing)
        if any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal)) for n in inner):
            return None
        returns = [n for n in inner if isinstance(n, ast.Return)]
        if not whole and (returns[:-1] or (returns and fn.body[-1] is not returns[-1])):
            return None
        if self.inlined + len(fn.body) > MAX_INLINED:
            return None
        return found

    def _body(self, call: ast.Call, fn: ast.FunctionDef) -> list[ast.stmt]:
        """The helper's body, after its parameters bound to the call's arguments that are more than a name."""
        self.inlined += len(fn.body)
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        binds: list[ast.stmt] = []
        for name, arg in [*zip(params, call.args, strict=False), *((k.arg, k.value) for k in call.keywords if k.arg)]:
            if not isinstance(arg, (ast.Name, ast.Constant, ast.Starred)):
                binds.append(ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=arg, lineno=0))
        body = copy.deepcopy(fn.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        return binds + body

    def _inline(self, stmt: ast.stmt, scope: Scope, stack: tuple[int, ...]) -> list[ast.stmt]:
        """``stmt`` with the helper calls it makes replaced by the helpers' bodies."""
        out: list[ast.stmt] = []
        value = getattr(stmt, "value", None)
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for call in _calls_innermost_first(stmt):
                whole = call is value and isinstance(stmt, (ast.Return, ast.Assign, ast.Expr))
                found = self._inlinable(call, scope, stack, whole=isinstance(stmt, ast.Return) and whole)
                if found is None:
                    continue
                fn, fscope = found
                body = self._body(call, fn)
                if whole and isinstance(stmt, ast.Return):
                    return out + self.block(body, fscope, (*stack, id(fn)))
                result = _pop_result(body)
                if whole and isinstance(stmt, ast.Assign):
                    body.append(ast.Assign(targets=stmt.targets, value=result, lineno=0))
                elif whole:
                    body.append(ast.Expr(value=result))
                elif _replace(stmt, call, ast.Name(id="_", ctx=ast.Load())):
                    body.append(ast.Assign(targets=[ast.Name(id="_", ctx=ast.Store())], value=result, lineno=0))
                else:
                    continue
                out += self.block(body, fscope, (*stack, id(fn)))
                if whole:
                    return out
        for field in ("body", "orelse", "finalbody"):
            if isinstance(getattr(stmt, field, None), list):
                setattr(stmt, field, self.block(getattr(stmt, field), scope, stack))
        for handler in getattr(stmt, "handlers", []):
            handler.body = self.block(handler.body, scope, stack)
        for node in _expressions(stmt):
            found = self._resolve(node, scope) if isinstance(node, (ast.Name, ast.Attribute)) else None
            if found is not None:
                self.reached.append(found)
        return [*out, stmt]

    def block(self, body: list[ast.stmt], scope: Scope, stack: tuple[int, ...]) -> list[ast.stmt]:
        return _ordered([new for stmt in body for new in self._inline(stmt, scope, stack)])

    def write(self, definition: _Definition, scope: Scope) -> str:
        node = copy.deepcopy(definition)
        node.body = self.block(node.body, scope, ())
        return ast.unparse(node)


def _walk_here(node: ast.AST) -> Iterable[ast.AST]:
    """The nodes of ``node`` that run when it runs: not inside a nested function, class or lambda."""
    todo = [node]
    while todo:
        current = todo.pop()
        yield current
        todo += [
            c
            for c in ast.iter_child_nodes(current)
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
        ]


def _expressions(stmt: ast.stmt) -> Iterable[ast.AST]:
    """The nodes of ``stmt`` outside the statements nested in it (each of which is read on its own)."""
    todo: list[ast.AST] = [c for c in ast.iter_child_nodes(stmt) if not isinstance(c, (ast.stmt, ast.excepthandler))]
    while todo:
        current = todo.pop()
        yield current
        todo += [c for c in ast.iter_child_nodes(current) if not isinstance(c, (ast.stmt, ast.excepthandler))]


def _pop_result(body: list[ast.stmt]) -> ast.expr:
    """What an inlined body returns, its final ``return`` taken off (None where it has none)."""
    last = body[-1] if body else None
    if isinstance(last, ast.Return):
        body.pop()
        return last.value if last.value is not None else ast.Constant(None)
    return ast.Constant(None)


def _calls_innermost_first(stmt: ast.stmt) -> list[ast.Call]:
    """The calls ``stmt``'s own expressions make, each after the calls in its arguments (the order they run)."""
    order: list[ast.Call] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.stmt, ast.excepthandler, ast.Lambda, ast.ListComp, ast.SetComp)) and not (
                isinstance(child, (ast.DictComp, ast.GeneratorExp))
            ):
                visit(child)
        if isinstance(node, ast.Call):
            order.append(node)

    for child in ast.iter_child_nodes(stmt):
        if not isinstance(child, (ast.stmt, ast.excepthandler)):
            visit(child)
    return order


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> bool:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return True
            if isinstance(value, list) and any(v is old for v in value):
                value[[i for i, v in enumerate(value) if v is old][0]] = new
                return True
    return False


def solution_code(
    sources: Iterable[str | Cell], names: Iterable[str], files: dict[str, str] | None = None, skip: Iterable[str] = ()
) -> str:
    """The last top-level definition of each of ``names`` in the code cells ``sources`` and every function or class
    they reach, helpers inlined and independent statements ordered (the module's docstring). ``files``: the
    submission's own Python files (module name -> code: files beside the notebook; those it writes with
    ``%%writefile`` are added). Read as the kernel runs it (IPython syntax turned into Python, magics read as the
    code they run: :mod:`.source`) and written out again from its parse, graded definitions first, then the helpers
    not inlined in the order they are reached, so that layout, comments and names count for nothing. ``skip``: names
    not followed (the other exercises' graded definitions, compared on their own)."""
    cells = read_cells(sources)
    body = [stmt for cell in cells for stmt in (cell.tree.body if cell.tree is not None else ())]
    defined: Scope = dict(_definitions(body))
    modules = _parsed_modules({**(files or {}), **_written_files(cells)})
    defined |= {k: v for k, v in _imports(body, modules).items() if k not in defined}
    wanted = sorted(set(names))
    writer = _Writer(modules, {id(defined[n]) for n in wanted if n in defined}, set(skip) - set(wanted))
    queue: list[tuple[_Definition, Scope]] = [(defined[n], defined) for n in wanted if n in defined]
    seen: set[int] = set()
    out = []
    while queue:
        node, scope = queue.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        try:
            out.append(writer.write(node, scope))
        except (RecursionError, MemoryError, ValueError):  # too deep to write out: compared as missing
            continue
        queue += writer.reached
        writer.reached = []
    return "\n\n".join(out)

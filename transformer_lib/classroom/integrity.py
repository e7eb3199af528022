"""What a submission's source says about it, read in the grader from the notebook's cells (never run).

- :func:`definitions`: the cell that defines each top-level name, so that a fresh kernel can re-run only the cells
  an exercise needs after a scratch cell hung or killed the kernel.
- :func:`flags`: for each exercise, what the teacher should look at: the graded function (or class, and every
  top-level helper it uses) calls the library's reference or PyTorch's (``tl.scaled_dot_product_attention``,
  ``F.scaled_dot_product_attention``, ``nn.MultiheadAttention``, ``tl.beam_search``, ...) or hides what it calls
  (``exec``, ``eval``, ``__import__``, ``importlib``, ``getattr`` on a module); and, for the whole notebook, code
  that reaches into the checks or patches a module (``checks._CHECKS``, ``tl.x = ...``, ``sys.modules``, IPython's
  event hooks), that runs or binds what the source does not show, anywhere (``exec``/``eval``/``compile``,
  ``setattr``, ``globals()``/``vars()``, ``__import__``/``importlib``, ``inspect.getsource``), and a graded name
  bound again after its definition (``attention = ...``, a second ``def``, ``global attention`` in a function). A
  flag decides nothing: the exercise still passes or fails on its numbers, and the sheet says "the teacher decides".

Names are resolved through the notebook's imports (``import transformer_lib as tl``, ``from torch.nn import
functional as F``, ``from transformer_lib import beam_search as bs``) and top-level aliases (``ref =
tl.beam_search``). Type annotations are not calls and are skipped. What no static reading can see (a name built from
strings at run time, code fetched from a file) shows up only as the dynamic-code flag.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterable, Iterator, Sequence

from .source import CODE_MAGICS, Cell, parse_source, read_cells

__all__ = ["definitions", "flags", "parse_source", "REFERENCE_NOTE"]

REFERENCE_NOTE = "the teacher decides"
# library names a starter notebook itself hands out, per exercise (the decoder layer is built from them)
_ALLOWED = {
    "decoder_layer": {"MultiHeadAttention", "FeedForward"},
    "multi_head_attention": {"scaled_dot_product_attention"},
}
_LIBRARY_HELPERS = {"get_device", "seed_everything", "Transformer", "TransformerConfig"}  # not answers to anything
# exercises that build a piece of tl.Transformer: a whole model holds the answer (model.decoder.layers[0])
_BUILT_BY_HAND = {"attention", "split_heads", "merge_heads", "multi_head_attention", "decoder_layer"}
# what turns data into code: unpickling (a __reduce__ that calls exec), marshalled code objects, code and function
# objects built by hand
_CODE_FROM_DATA = (
    *("pickle", "_pickle", "marshal", "dill", "cloudpickle", "shelve", "copyreg", "joblib", "torch.load"),
    *("types.CodeType", "types.FunctionType", "torch.package", "torch.jit.load", "torch.hub"),
)
# packages a notebook of the assignments may import: the standard library, and what the assignments hand out
_HANDED_OUT = {"torch", "numpy", "transformer_lib", "matplotlib", "IPython", "tqdm", "plotly", "pandas"}
_TORCH_REFERENCES = {
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.MultiheadAttention",
    "torch.nn.modules.activation.MultiheadAttention",
    "torch.nn.Transformer",
    "torch.nn.TransformerEncoder",
    "torch.nn.TransformerDecoder",
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.modules.transformer.Transformer",
}
_DYNAMIC = {"exec", "eval", "compile", "__import__", "globals", "vars", "breakpoint"}
_GRADER_NAMES = {
    "_CHECKS",
    "_call",
    "_tape",
    "_Fail",
    "grade_exercise",
    "record_exercise",
    "replay_exercise",
    "RESULT_MARKER",
    "_time_limit",
    "_alarm",
    "core",
    "record",
    "sandbox",
}


def _bound_names(stmt: ast.stmt) -> Iterator[str]:
    """Names a top-level statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names:
            yield (a.asname or a.name).split(".")[0]
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for t in targets:
            for node in ast.walk(t):
                if isinstance(node, ast.Name):
                    yield node.id
    elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For)):  # definitions inside a guard still count
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                yield from _bound_names(child)


def definitions(sources: Sequence[str | Cell]) -> dict[str, list[int]]:
    """For each top-level name, the indices (into ``sources``, code cells or :class:`~.source.Cell`) of the cells
    that bind it, in order."""
    found: dict[str, list[int]] = {}
    for i, cell in enumerate(read_cells(sources)):
        tree = cell.tree
        for stmt in tree.body if tree else ():
            for name in _bound_names(stmt):
                found.setdefault(name, []).append(i)
    return found


def _aliases(trees: Iterable[ast.Module]) -> dict[str, str]:
    """Local name -> dotted module path, from every import anywhere in the notebook."""
    alias: dict[str, str] = {}
    stars: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        alias[a.asname] = a.name
                    else:
                        alias[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        alias[a.asname or a.name] = f"{node.module}.{a.name}"
                    else:  # from torch.nn.functional import *: each name it brings, where it comes from
                        stars.update({name: f"{node.module}.{name}" for name in _public_names(node.module)})
    alias = {**stars, **alias}  # a name imported by name wins over one a star brings
    for tree in trees:  # t = torch, aten = torch.ops.aten (anywhere: a function's local name counts too)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                path = _dotted(node.value, alias)
                if path is not None and node.targets[0].id not in alias:
                    alias[node.targets[0].id] = path
    return alias


_STAR_SOURCES = ("torch", "transformer_lib", "numpy", "math")  # modules whose names a star import is read for


def _public_names(module: str) -> list[str]:
    """The names ``from module import *`` binds, for the modules the grader may import itself (PyTorch, this
    library, numpy, math); none for any other (the grader never imports a module a student names: such a star
    import is flagged instead, :func:`_hidden_code`)."""
    if module.split(".")[0] not in _STAR_SOURCES:
        return []
    try:
        found = importlib.import_module(module)
    except Exception:  # not a module (a class's path, a typo): the kernel fails on it too
        return []
    names = getattr(found, "__all__", None)
    return [str(n) for n in names] if names is not None else [n for n in vars(found) if not n.startswith("_")]


def _dotted(node: ast.AST, alias: dict[str, str]) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in alias:
        return ".".join([alias[node.id], *reversed(parts)])
    return None


def _without_annotations(node: ast.AST) -> Iterator[ast.AST]:
    """ast.walk that skips type annotations (``model: tl.Transformer`` calls nothing)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for field, value in ast.iter_fields(n):
            if field in ("annotation", "returns"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    stack.append(child)


def _short(path: str) -> str:
    for long, short in (("transformer_lib.", "tl."), ("torch.nn.functional.", "F."), ("torch.nn.", "nn.")):
        if path.startswith(long):
            return short + path[len(long) :]
    return path


_TORCH_WORDS = ("attention", "multihead", "transformer")


def _torch_inside(parts: list[str]) -> bool:
    """A PyTorch path past the names the book uses: its operator registry and C bindings (``torch.ops.aten``,
    ``torch._C``, any private name), which hold every attention kernel under names no list can keep up with, or a
    name that says attention (``F.scaled_dot_product_attention``'s siblings)."""
    return (
        parts[0] in ("ops", "library")
        or any(p.startswith("_") for p in parts)
        or any(w in p.lower() for p in parts for w in _TORCH_WORDS)
    )


def _reference(path: str, exercise: str) -> str | None:
    """The flag for using ``path`` in the answer to ``exercise``, or None."""
    if path.startswith("transformer_lib.") and not path.startswith("transformer_lib.classroom"):
        last = path.rsplit(".", 1)[-1]
        if (
            last.isupper()
            or last in _LIBRARY_HELPERS
            and not (last == "Transformer" and exercise in _BUILT_BY_HAND)
            or last in _ALLOWED.get(exercise, ())
            or path.count(".") == 1
            and last in ("tokenization", "decoding", "attention", "masks", "layers")
        ):
            return None
        return f"uses the library's reference {_short(path)}: {REFERENCE_NOTE}"
    if path in _TORCH_REFERENCES or any(path.startswith(p + ".") for p in _TORCH_REFERENCES):
        return f"uses PyTorch's {_short(path)}: {REFERENCE_NOTE}"
    if path.startswith("torch.") and _torch_inside(path.split(".")[1:]):
        return f"uses PyTorch's {_short(path)}: {REFERENCE_NOTE}"
    if path == "importlib" or path.startswith("importlib."):
        return f"imports by name at run time (importlib), which hides what it calls: {REFERENCE_NOTE}"
    return None


def _statement_flags(stmts: list[ast.stmt], alias: dict[str, str], exercise: str) -> list[str]:
    out: list[str] = []
    modules = {k for k, v in alias.items() if "." not in v or v.split(".")[-1].islower()}
    for stmt in stmts:
        for node in _without_annotations(stmt):
            flag = None
            if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(getattr(node, "ctx", None), ast.Load):
                path = _dotted(node, alias)
                flag = _reference(path, exercise) if path else None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                name = node.func.id
                if name in _DYNAMIC:
                    flag = f"uses dynamic code ({name}), which hides what it calls: {REFERENCE_NOTE}"
                elif (
                    name in ("getattr", "setattr")
                    and node.args
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id in modules
                ):
                    flag = f"uses {name} on the module {node.args[0].id}, which hides what it calls: {REFERENCE_NOTE}"
                elif name == "getattr" and len(node.args) > 1 and not isinstance(node.args[1], ast.Constant):
                    shown = ast.unparse(node.args[1])[:40]
                    flag = f"uses getattr with a name built at run time ({shown}), which hides what it calls: "
                    flag += REFERENCE_NOTE
            if flag and flag not in out:
                out.append(flag)
    # torch.ops and torch.ops.aten said once, by the longest path that names them (torch.ops.aten.f)
    return [f for f in out if not any(g != f and g.startswith(f.split(":")[0] + ".") for g in out)]


def _closure(names: Iterable[str], top: dict[str, list[ast.stmt]]) -> list[ast.stmt]:
    """The top-level statements that define ``names`` and every top-level name they use, transitively."""
    seen: set[str] = set()
    todo, stmts = list(names), list[ast.stmt]()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for stmt in top.get(name, ()):
            if any(stmt is s for s in stmts):
                continue
            stmts.append(stmt)
            todo += [n for n in _free_names(stmt) if n in top]
    return stmts


def _free_names(stmt: ast.stmt) -> set[str]:
    """Names ``stmt`` reads but does not bind itself (a function's parameters and locals shadow top-level names)."""
    nodes = list(_without_annotations(stmt))
    bound = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    bound |= {
        a.arg
        for n in nodes
        if isinstance(n, ast.arguments)
        for a in n.posonlyargs + n.args + n.kwonlyargs + [n.vararg, n.kwarg]
        if a is not None
    }
    return {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


def _tampering(trees: list[ast.Module], alias: dict[str, str]) -> list[str]:
    """Flags for code that reaches into the grader's checks or patches a module, anywhere in the notebook."""
    out: list[str] = []
    for tree in trees:
        for node in ast.walk(tree):
            flag = None
            if isinstance(node, ast.Attribute) and node.attr in _GRADER_NAMES:
                flag = f"reaches into the checks ({node.attr})"
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, (ast.Store, ast.Del))
                and _dotted(node.value, alias) is not None
            ):
                flag = f"changes the module {_dotted(node.value, alias)} (assigns to .{node.attr})"
            elif isinstance(node, ast.Name) and node.id in _GRADER_NAMES - {"core", "record", "sandbox"}:
                flag = f"reaches into the checks ({node.id})"
            elif (
                isinstance(node, ast.Attribute)
                and node.attr in ("modules", "events")
                and isinstance(node.value, (ast.Name, ast.Call))
            ):
                flag = f"touches {'sys.modules' if node.attr == 'modules' else 'IPython event hooks'}"
            if flag and flag + f": {REFERENCE_NOTE}" not in out:
                out.append(flag + f": {REFERENCE_NOTE}")
    # pickle, pickle.loads: said once, by the longest path
    return [f for f in out if not any(g != f and g.startswith(f.split(")")[0] + ".") for g in out)]


_HIDDEN_CALLS = {"exec", "eval", "compile", "__import__", "breakpoint"}
_NAMESPACES = {"globals", "vars"}


# magics that change nothing a check sees (those that run Python, CODE_MAGICS, are read as the code they run)
_QUIET_MAGICS = CODE_MAGICS | {"matplotlib", "xmode", "precision", "pprint", "who", "whos", "pinfo", "pinfo2"}


def _ipython(node: ast.AST) -> str | None:
    """The flag for a call of IPython's shell (what ``%magic`` and ``!command`` lines become), or None."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "get_ipython"
    ):
        return None
    what = node.func.attr
    if what in ("system", "getoutput"):
        return "runs shell commands (a ! line), which the grader cannot read"
    name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
    if what in ("run_line_magic", "run_cell_magic") and name in _QUIET_MAGICS:
        return None
    shown = f"%{'%' * (what == 'run_cell_magic')}{name}" if isinstance(name, str) else f"get_ipython().{what}"
    return f"runs the IPython command {shown[:40]}, which the grader cannot read"


def _imported_code(node: ast.AST, alias: dict[str, str]) -> str | None:
    """A flag for code that comes from elsewhere than the notebook's source: data turned into code (pickle,
    marshal, a class that defines ``__reduce__``), an implementation from a package the assignments do not hand
    out (``transformers``), or a star import from a module the grader does not read."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in ("__reduce__", "__reduce_ex__"):
        return f"defines {node.name}, which makes unpickling run code the source does not show"
    path = _dotted(node, alias) if isinstance(node, (ast.Attribute, ast.Name)) else None
    if path and any(path == p or path.startswith(p + ".") for p in _CODE_FROM_DATA):
        return f"turns data into code ({_short(path)}), which hides what it runs"
    modules: list[str] = []
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        modules = [node.module]
        if any(a.name == "*" for a in node.names) and not _public_names(node.module):
            return f"imports every name of {node.module} (import *), which hides where a name comes from"
    for module in modules:
        top = module.split(".")[0]
        if top not in _HANDED_OUT and top not in sys.stdlib_module_names:
            return f"imports {module}, a package the assignments do not hand out (its code is not the notebook's)"
    return None


def _hidden_code(trees: list[ast.Module], alias: dict[str, str]) -> list[str]:
    """Flags for code anywhere in the notebook that runs or binds what its source does not show."""
    out: list[str] = []
    for tree in trees:
        for node in ast.walk(tree):
            flag = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                name = node.func.id
                if name in _HIDDEN_CALLS:
                    flag = f"runs code the source does not show ({name})"
                elif name == "setattr":
                    target = _dotted(node.args[0], alias) if node.args else None
                    shown = ast.unparse(node.args[0])[:40] if node.args else ""
                    flag = f"changes an object's attribute at run time (setattr on {target or shown})"
                elif name in _NAMESPACES:
                    flag = f"reads or writes the notebook's namespace ({name}()), which can rebind any name"
            flag = _ipython(node) or flag
            flag = _imported_code(node, alias) or flag
            path = _dotted(node, alias) if isinstance(node, (ast.Attribute, ast.Name)) else None
            if path and (path == "importlib" or path.startswith("importlib.")):
                flag = "imports by name at run time (importlib)"
            elif path and path.startswith("inspect.getsource"):
                flag = "reads source code at run time (inspect.getsource)"
            if flag and flag + f": {REFERENCE_NOTE}" not in out:
                out.append(flag + f": {REFERENCE_NOTE}")
    # pickle, pickle.loads: said once, by the longest path
    return [f for f in out if not any(g != f and g.startswith(f.split(")")[0] + ".") for g in out)]


def _rebound(trees: list[ast.Module], names: Iterable[str]) -> list[str]:
    """Flags for a graded name bound more than once, or declared ``global`` inside a function, anywhere."""
    out = []
    for name in names:
        binds, declared = 0, False
        for tree in trees:
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                    binds += 1
                elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
                    binds += 1
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    binds += sum((a.asname or a.name).split(".")[0] == name for a in node.names)
                elif isinstance(node, ast.Global) and name in node.names:
                    declared = True
        if binds > 1 or declared:
            how = "declares it global in a function" if declared else f"binds it {binds} times"
            out.append(f"rebinds the graded name {name} ({how}): {REFERENCE_NOTE}")
    return out


def _unread(cells: list[Cell]) -> list[str]:
    """Flags for code cells the grader could not read as Python: nothing in them is checked for the flags above."""
    return [
        f"code cell {i} of the notebook's code cells could not be read as Python ({cell.problem}), so nothing in it "
        f"was checked: {REFERENCE_NOTE}"
        for i, cell in enumerate(cells, start=1)
        if cell.tree is None and cell.python.strip()
    ]


def flags(sources: Sequence[str | Cell], exercises: dict[str, Iterable[str]]) -> dict[str, list[str]]:
    """For each exercise (name -> the names it grades), the flags of its definitions and of the whole notebook.

    ``sources`` are the student's code cells (not the check cells), as written or read (:class:`~.source.Cell`);
    a cell that cannot be read as Python is itself flagged.
    """
    cells = read_cells(sources)
    trees = [c.tree for c in cells if c.tree is not None]
    alias = _aliases(trees)
    top: dict[str, list[ast.stmt]] = {}
    for tree in trees:
        for stmt in tree.body:
            for name in _bound_names(stmt):
                if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
                    top.setdefault(name, []).append(stmt)
    everywhere = _tampering(trees, alias)
    everywhere += [f for f in _hidden_code(trees, alias) + _unread(cells) if f not in everywhere]
    found = {}
    for ex, names in exercises.items():
        own = _statement_flags(_closure(names, top), alias, ex)
        found[ex] = own + [f for f in everywhere + _rebound(trees, names) if f not in own]
    return found

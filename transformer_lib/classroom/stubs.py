"""The library a kernel imports (:class:`LibraryCopy`), and why the reference is not in the room: the copy of
``transformer_lib`` a kernel imports for an assignment has no working version of what that assignment asks the
student to write.

:data:`REMOVED` names, per assignment, the library's functions (and the checks' own catalogue functions, which
compute the right answer next to the wrong ones) that do what the assignment's exercises do. :class:`Stubs`
rewrites their source in a :class:`~transformer_lib.classroom.sandbox.LibraryCopy`: each becomes a stub, so that
``inspect.getsource`` shows the stub, and calling it raises :class:`ReferenceRemoved` with a sentence that says why.
Everything else stays (``tl.scaled_dot_product_attention`` stays for the multi-head assignment, which builds on it).

A check recorded in the kernel (:mod:`.checks.record`) still runs its comparisons there, but its verdict is thrown
away: only what the student's code returned matters, and the grader replays the check against the real reference.
So, *while a recording runs*, a stub answers with the value the student's code returned last (what makes the
recording go on to the next input as it would for a right answer); the student's own code gets nothing out of that
but its own answers. A forged recording then needs the right outputs, which is solving the exercise.

PyTorch's own attention is left out too where an assignment asks for attention (:data:`TORCH_REMOVED`: assignments 3
and 5): the copy's ``__init__`` imports ``_torch_removed``, which replaces ``F.scaled_dot_product_attention`` and
``F.multi_head_attention_forward`` by a stub under every name a loaded module holds them (``torch._C._nn`` included,
so a star import, ``getattr`` or ``importlib`` reaches the stub), makes ``nn.MultiheadAttention`` raise when built or
run (the class itself, so every module's alias and ``nn.TransformerEncoderLayer`` too), does the same for FlexAttention
(``torch.nn.attention.flex_attention.flex_attention``, the functions that compute it, and its higher-order operator:
the operator's class, so ``torch.ops.higher_order.flex_attention`` and every other alias, and the kernels it holds),
and overrides the operators behind them in PyTorch's dispatcher (``torch.ops.aten.scaled_dot_product_attention``,
``..._math``, ``_native_multi_head_attention``, which an encoder layer's fused forward runs). Each raises
:class:`ReferenceRemoved` naming what was called; the grader shows it in the feedback and flags the row
(:mod:`.notebook`). Assignment 6 keeps them: its layers run ``tl.MultiHeadAttention``.

The copy has no ``transformer_lib.book`` at all (no assignment imports it; its probes compute a positional encoding
another way). What stays in the room: the rest of PyTorch, and the library classes that a later assignment's code
runs on (``tl.DecoderLayer`` for assignment 6, whose decoding exercises run a ``tl.Transformer``): using those is
flagged by :mod:`.integrity`.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import inspect
import shutil
import stat
import sys
import tempfile
import textwrap
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .integrity import parse_source

__all__ = ["LibraryCopy", "REMOVED", "TORCH_REMOVED", "Stubs", "stubs_for", "REMOVED_ERROR"]

_LIBRARY = Path(__file__).resolve().parents[1]  # the transformer_lib package folder

REMOVED_ERROR = "ReferenceRemoved"
# assignment -> (file in the package, function or Class.method, how the student knows it, what a recording gets)
REMOVED: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "01_tokenizer": (
        ("tokenization/padding.py", "pad_batch", "tl.tokenization.pad_batch", "value"),
        ("tokenization/vocab.py", "Vocab.build", "tl.Vocab.build", "value"),  # counts, orders and numbers the words
        ("tokenization/vocab.py", "Vocab.to_ids", "tl.Vocab.to_ids", "value"),  # words to ids, unknown to <unk>
        ("classroom/checks/tokenizer.py", "_reference_vocab", "the check's vocabulary", "value"),
        ("classroom/checks/tokenizer.py", "_reference_ids", "the check's ids", "value"),
    ),
    "02_positional_encoding": (
        ("embeddings.py", "sinusoidal_encoding", "tl.sinusoidal_encoding", "value"),
        ("classroom/checks/positions.py", "_pe_variant", "the check's encodings", "value"),
    ),
    "03_attention": (
        ("attention.py", "scaled_dot_product_attention", "tl.scaled_dot_product_attention", "value"),
        ("classroom/checks/attention.py", "_attention_variant", "the check's attention variants", "value"),
    ),
    "04_masks": (
        ("masks.py", "padding_mask", "tl.padding_mask", "value"),
        ("masks.py", "causal_mask", "tl.causal_mask", "value"),
        ("masks.py", "decoder_mask", "tl.decoder_mask", "value"),
    ),
    "05_multi_head_attention": (  # the library's module splits, attends and merges as the assignment asks
        ("attention.py", "MultiHeadAttention.forward", "tl.MultiHeadAttention", "value"),
        ("attention.py", "MultiHeadAttention._split", "tl.MultiHeadAttention._split", "value"),
        ("classroom/checks/multi_head.py", "_mha_variant", "the check's multi-head variants", "value"),
    ),
    "06_decoder": (
        ("decoding.py", "greedy_decode", "tl.greedy_decode", "value"),
        ("decoding.py", "sample", "tl.sample", "value"),  # top_k=1 is greedy decoding
        ("decoding.py", "beam_search", "tl.beam_search", "hypotheses"),
        ("decoding.py", "_beam_one", "tl.decoding._beam_one", "value"),
        ("classroom/checks/decoding.py", "_greedy_variant", "the check's decoding variants", "value"),
        ("classroom/checks/decoding.py", "_beam_variant", "the check's beam-search variants", "value"),
        ("classroom/checks/decoder.py", "_decoder_variant", "the check's decoder-layer variants", "value"),
    ),
}

# PyTorch's own attention (its Python names, and the operators behind them with their dispatch key): in the kernel of
# an assignment of TORCH_REMOVED each is a stub that raises ReferenceRemoved, whatever route reaches it (an alias, a
# star import, getattr, importlib, torch._C._nn, torch.ops.aten)
_TORCH_ATTENTION: dict[str, tuple[tuple[str, str], ...]] = {
    "torch.nn.functional.scaled_dot_product_attention": (
        ("scaled_dot_product_attention", "CompositeImplicitAutograd"),
        ("_scaled_dot_product_attention_math", "CompositeImplicitAutograd"),
        ("_scaled_dot_product_flash_attention_for_cpu", "CPU"),
        ("_scaled_dot_product_flash_attention", "CUDA"),
        ("_scaled_dot_product_efficient_attention", "CUDA"),
        ("_scaled_dot_product_cudnn_attention", "CUDA"),
    ),
    "torch.nn.functional.multi_head_attention_forward": (),
    "torch.nn.MultiheadAttention": (("_native_multi_head_attention", "CPU"), ("_native_multi_head_attention", "CUDA")),
    # FlexAttention (PyTorch 2.5+): the function, its higher-order operator (every alias: torch.ops.higher_order's
    # included) and the plain functions that compute it in eager mode
    "torch.nn.attention.flex_attention.flex_attention": (),
    "torch._higher_order_ops.flex_attention.flex_attention": (),
    "torch._higher_order_ops.flex_attention.math_attention": (),
    "torch._higher_order_ops.flex_attention.sdpa_dense": (),
}
# assignment -> what of PyTorch's does what it asks (declared here only; tests read it)
TORCH_REMOVED: dict[str, tuple[str, ...]] = {
    "03_attention": tuple(_TORCH_ATTENTION),
    "05_multi_head_attention": tuple(_TORCH_ATTENTION),
}

_TORCH_HELPER = '''"""PyTorch's own attention, left out while an assignment that asks for it is graded: written by
transformer_lib.classroom.stubs into the grader's copy, imported by its __init__ before any student code runs."""

import importlib
import sys
import warnings

import torch

from transformer_lib._removed import ReferenceRemoved

ASSIGNMENT = {assignment!r}
NAMES = {names!r}
OPERATORS = {operators!r}


def _message(name):
    return (
        f"{{name}} is not available while assignment {{ASSIGNMENT}} is graded: it does what the assignment asks you to "
        "write, so the grader's kernel leaves PyTorch's own out. Use your own code."
    )


def _function(name):
    def removed(*args, **kwargs):
        raise ReferenceRemoved(_message(name))

    removed.__name__ = removed.__qualname__ = name.rsplit(".", 1)[-1]
    removed.__doc__ = f"Left out of the grader's kernel while assignment {{ASSIGNMENT}} is graded."
    return removed


def _class(cls, name):
    def removed(self, *args, **kwargs):
        raise ReferenceRemoved(_message(name))

    cls.__init__ = removed  # the class itself: every module that imported it holds this one
    cls.forward = removed


def _everywhere(original, stub):
    """Every alias of ``original`` in a loaded module becomes ``stub`` (torch._C._nn's builtin is F's). Locals: the
    loop's own module is among those it visits, and a global it compared with would be replaced mid-loop."""
    for module in list(sys.modules.values()):
        for key, value in list(getattr(module, "__dict__", {{}}).items()):
            if value is original:
                setattr(module, key, stub)


def _operator_object(op, name):
    """A higher-order operator (an object, not a function): its class calls and dispatches to the stub, so every
    alias of the object reaches it, and the kernels it holds are stubs too."""
    def removed(self, *args, **kwargs):
        raise ReferenceRemoved(_message(name))

    type(op).__call__ = removed
    type(op).dispatch = removed
    for _key in list(op.py_kernels):
        op.py_kernels[_key] = _function(name)


for _name in NAMES:
    _owner, _attr = _name.rsplit(".", 1)
    try:
        _original = getattr(importlib.import_module(_owner), _attr)
    except (ImportError, AttributeError):  # a version of torch without it
        continue
    if isinstance(_original, type):
        _class(_original, _name)
        continue
    if isinstance(_original, torch._ops.HigherOrderOperator):
        _operator_object(_original, _name)
        continue
    _everywhere(_original, _function(_name))

_LIBRARY = torch.library.Library("aten", "IMPL")  # the operators, for routes below the Python names


def _operator(name):
    def removed(*args, **kwargs):
        raise ReferenceRemoved(_message(f"torch.ops.aten.{{name}}"))

    return removed


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "overriding a previously registered kernel": that is the point
    for _op, _key in OPERATORS:
        try:
            _LIBRARY.impl(_op, _operator(_op), _key)
        except (RuntimeError, ValueError, AttributeError):  # an operator or key this build of torch does not have
            pass
'''

_HELPER = '''"""What a removed reference does: written by transformer_lib.classroom.stubs into the grader's copy."""


class ReferenceRemoved(RuntimeError):
    """A reference that the grader's copy of the library leaves out while an assignment that asks for it is graded."""


def removed(name, assignment, answer):
    """Raise ReferenceRemoved; while the grader records a check, answer with what the student's code returned last."""
    from transformer_lib.classroom.checks.record import last_recorded_value

    try:
        value = last_recorded_value()
    except LookupError:
        raise ReferenceRemoved(
            f"{name} is not available while assignment {assignment} is graded: it does what the assignment asks "
            "you to write, so the grader's copy of transformer_lib leaves it out. Use your own code."
        ) from None
    if answer == "hypotheses":  # beam_search's shape: [[Hypothesis]] for one source
        import types

        import torch

        return [[types.SimpleNamespace(tokens=torch.as_tensor(value))]]
    return value
'''


def _stub(node: ast.FunctionDef | ast.AsyncFunctionDef, indent: str, shown: str, assignment: str, answer: str) -> str:
    first = "cls, " if any(isinstance(d, ast.Name) and d.id == "classmethod" for d in node.decorator_list) else ""
    first = "self, " if not first and indent and not node.decorator_list else first
    lines = [
        f"def {node.name}({first}*args, **kwargs):",
        f'    """Left out of the grader\'s copy of transformer_lib while assignment {assignment} is graded: {shown} '
        'does what the assignment asks for."""',
        "    from transformer_lib._removed import removed",
        "",
        f"    return removed({shown!r}, {assignment!r}, {answer!r})",
    ]
    return "".join(indent + line + "\n" if line else "\n" for line in lines)


@dataclass(frozen=True)
class Stubs:
    """The stubs of one assignment (see :data:`REMOVED`)."""

    assignment: str

    def apply(self, package: Path) -> None:
        """Rewrite the copied package folder ``package`` in place."""
        by_file: dict[str, list[tuple[str, str, str]]] = {}
        for file, name, shown, answer in REMOVED[self.assignment]:
            by_file.setdefault(file, []).append((name, shown, answer))
        (package / "_removed.py").write_text(_HELPER)
        if torch_names := TORCH_REMOVED.get(self.assignment, ()):
            operators = tuple(op for name in torch_names for op in _TORCH_ATTENTION[name])
            (package / "_torch_removed.py").write_text(
                _TORCH_HELPER.format(assignment=self.assignment, names=torch_names, operators=operators)
            )
            with open(package / "__init__.py", "a") as init:
                init.write(
                    "\nfrom . import _torch_removed  # noqa: E402,F401  (the grader's: PyTorch's attention out)\n"
                )
        for file, names in by_file.items():
            path = package / file
            source = path.read_text()
            lines = source.splitlines(keepends=True)
            edits = []
            for name, shown, answer in names:
                node, indent = _find(parse_source(source), name, lines)
                edits.append(
                    (node.lineno, node.end_lineno or node.lineno, _stub(node, indent, shown, self.assignment, answer))
                )
            for start, end, text in sorted(edits, reverse=True):  # the decorators stay
                lines[start - 1 : end] = [text]
            path.write_text("".join(lines))

    @contextlib.contextmanager
    def in_this_process(self) -> Iterator[None]:
        """While the block runs, the references of :data:`REMOVED` are this assignment's stubs in the running
        interpreter, for a test that records a check as a kernel does without starting one
        (``tests/test_checks_under_stubs.py``). Each function runs the code :meth:`apply` writes into a kernel's copy,
        compiled from the same source: its ``__code__`` is swapped, so that every alias (``from ...masks import
        causal_mask``) and every decorator around it (``@torch.no_grad()``) reaches the stub, and
        ``transformer_lib._removed`` is the copy's helper. Everything is restored on exit. PyTorch's own attention
        (:data:`TORCH_REMOVED`) is left as it is: overriding the dispatcher cannot be undone in a process."""
        package = _LIBRARY.name
        helper = types.ModuleType(f"{package}._removed")
        exec(compile(_HELPER, f"<{helper.__name__} of the grader's copy>", "exec"), helper.__dict__)
        previous = sys.modules.get(helper.__name__)
        sys.modules[helper.__name__] = helper
        swapped: list[tuple[types.FunctionType, types.CodeType]] = []
        try:
            for file, name, shown, answer in REMOVED[self.assignment]:
                owner: object = importlib.import_module(f"{package}.{file.removesuffix('.py').replace('/', '.')}")
                *classes, last = name.split(".")
                for cls in classes:
                    owner = getattr(owner, cls)
                raw = vars(owner)[last]
                function = inspect.unwrap(getattr(raw, "__func__", raw))  # a classmethod's, a decorator's inner one
                source = (_LIBRARY / file).read_text()
                node, indent = _find(parse_source(source), name, source.splitlines(keepends=True))
                stub: dict[str, types.FunctionType] = {}
                text = textwrap.dedent(_stub(node, indent, shown, self.assignment, answer))
                exec(compile(text, f"<stub of {shown}>", "exec"), stub)
                swapped.append((function, function.__code__))
                function.__code__ = stub[node.name].__code__
            yield
        finally:
            for function, code in reversed(swapped):
                function.__code__ = code
            if previous is None:
                sys.modules.pop(helper.__name__, None)
            else:
                sys.modules[helper.__name__] = previous


def _find(tree: ast.Module, name: str, lines: list[str]) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str]:
    """The definition of ``name`` (``f`` or ``Class.method``) in ``tree``, and its indentation."""
    body: list[ast.stmt] = tree.body
    *owners, last = name.split(".")
    for owner in owners:
        body = next(n.body for n in body if isinstance(n, ast.ClassDef) and n.name == owner)
    node = next(n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == last)
    line = lines[node.lineno - 1]
    return node, line[: len(line) - len(line.lstrip())]


_NOT_COPIED = ("book",)  # subpackages of transformer_lib that a kernel never gets (see LibraryCopy._leave_out)


def stubs_for(assignment: str) -> Stubs | None:
    """The stubs for ``assignment`` (an id such as ``"03_attention"``), or None if it removes nothing."""
    return Stubs(assignment) if assignment in REMOVED or assignment in TORCH_REMOVED else None


class LibraryCopy:
    """``transformer_lib`` copied into a temporary folder (``parent`` goes on a kernel's ``PYTHONPATH``), read-only,
    and checked by hash: :meth:`verify` copies it again if anything changed it. ``stubs`` (:class:`Stubs`) replaces
    the reference of what an assignment asks for in the copy."""

    def __init__(self, source: Path = _LIBRARY, stubs: Stubs | None = None) -> None:
        self.source = Path(source)
        self.stubs = stubs
        self.parent = Path(tempfile.mkdtemp(prefix="tl-lib-"))
        self.parent.chmod(0o755)  # a kernel runs as a user of its own
        self.copies = 0
        self._lock = threading.Lock()  # notebooks graded in parallel threads verify the same copy
        self._copy()

    @property
    def path(self) -> Path:
        """The copied package folder (``parent / "transformer_lib"``)."""
        return self.parent / self.source.name

    def _copy(self) -> None:
        if self.path.exists():
            _make_writable(self.path)
            shutil.rmtree(self.path)
        shutil.copytree(self.source, self.path, ignore=self._leave_out)
        if self.stubs is not None:
            self.stubs.apply(self.path)
        for p in sorted(self.path.rglob("*"), reverse=True) + [self.path]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        self.digest = self._digest()
        self.copies += 1

    def _leave_out(self, folder: str, names: list[str]) -> set[str]:
        """What the copy leaves out: compiled files, and the book's package (figures, probes, recipes), which no
        assignment imports and which computes what several assignments ask for (a positional encoding from
        ``probes.sinusoid_shift_matrix``, a masked softmax from ``diagnostics``)."""
        left_out = {n for n in names if n == "__pycache__" or n.endswith(".pyc")}
        if Path(folder) == self.source:
            left_out |= {n for n in names if n in _NOT_COPIED}
        return left_out

    def _digest(self) -> str:
        h = hashlib.sha256()
        for p in sorted(self.path.rglob("*")):
            h.update(str(p.relative_to(self.path)).encode() + b"\0")
            if p.is_file() and not p.is_symlink():
                h.update(hashlib.sha256(p.read_bytes()).digest())
            h.update(oct(p.lstat().st_mode).encode())
        return h.hexdigest()

    def verify(self) -> bool:
        """True if the copy is unchanged; otherwise it is copied afresh and False is returned."""
        with self._lock:
            if self._digest() == self.digest:
                return True
            self._copy()
            return False

    def close(self) -> None:
        """Remove the copy (``contextlib.closing`` calls this)."""
        self.cleanup()

    def cleanup(self) -> None:
        _make_writable(self.parent)
        shutil.rmtree(self.parent, ignore_errors=True)


def _make_writable(folder: Path) -> None:
    for p in [folder, *folder.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)

"""What a page's outputs depend on: its code, and the project's modules it imports, directly or through other
modules. The build re-executes a page only when one of those changed, and re-reads (renders) it when one of them
or the site's own rendering code changed.

jupyter-cache (the build's notebook cache, ``_build/.jupyter_cache``) matches a page by the source of its code cells
only; it cannot know that chapter 4's outputs change when ``transformer_lib/attention.py`` does. So each cache record
also keeps, in its ``data``, the :func:`modules_fingerprint` of the modules the page imported when it ran
(``scripts/execute_notebooks.py`` writes and compares it), and :func:`setup` tells Sphinx the same files, so that
Sphinx re-reads exactly those pages.

The modules are found from the import statements (``ast``) of the page's code cells and, transitively, of the
modules they import, within the project's own packages (:data:`PACKAGES`); an import inside a function counts too,
so the list errs on the side of re-running. Data files a page reads (checkpoints, the exported translator) are not
followed: change one and run ``scripts/build_book.sh --force``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("transformer_lib", "benchmarks")  # the project's own code that a page may import
SITE = Path(__file__).resolve().parent  # the site's rendering code: every page is re-read when it changes


def _module_file(name: str, root: Path) -> Path | None:
    """The source file of module ``name`` (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``) under ``root``, if any."""
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _imports(source: str, module: str | None = None, is_package: bool = False) -> set[str]:
    """The absolute names that the import statements of ``source`` may load: for ``from a import b``, both ``a``
    and ``a.b`` (``b`` may be a submodule). ``module`` (a dotted name) resolves relative imports. Code that is not
    Python (IPython's ``%magic`` and ``!shell`` lines) is left out line by line."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    names: set[str] = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level and module is not None:
                parts = module.split(".")
                package = parts if is_package else parts[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return {name for name in names if name}


def page_modules(page: Path, root: Path = ROOT) -> list[Path]:
    """The source files of the project's modules that ``page`` (a notebook) imports, directly or through other
    modules, each package's ``__init__.py`` included; sorted."""
    notebook = json.loads(page.read_text(encoding="utf-8"))
    code = [c["source"] for c in notebook.get("cells", []) if c.get("cell_type") == "code"]
    todo = {name for cell in code for name in _imports("".join(cell) if isinstance(cell, list) else cell)}
    seen: set[str] = set()
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        parts = name.split(".")
        if name in seen or parts[0] not in PACKAGES:
            continue
        seen.add(name)
        todo.update(".".join(parts[:i]) for i in range(1, len(parts)))  # importing a.b.c runs a and a.b first
        path = _module_file(name, root)
        if path is not None and path not in files:
            files.add(path)
            todo |= _module_imports(path, name, path.stat().st_mtime_ns)
    return sorted(files)


@functools.lru_cache(maxsize=1024)
def _module_imports(path: Path, name: str, mtime_ns: int) -> frozenset[str]:
    """:func:`_imports` of a module's file, parsed once per version of the file (every page shares the core's)."""
    return frozenset(_imports(path.read_text(encoding="utf-8"), name, path.name == "__init__.py"))


def _digest(files: list[Path], root: Path, extra: bytes = b"") -> str:
    digest = hashlib.sha256(extra)
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def modules_fingerprint(page: Path, root: Path = ROOT) -> str:
    """The hash of the modules :func:`page_modules` finds (names and bytes): it changes when one of them does."""
    return _digest(page_modules(page, root), root)


def fingerprint(page: Path, root: Path = ROOT) -> str:
    """What a page's executed outputs depend on: the page's own bytes and the modules it imports. Two runs with the
    same fingerprint print the same page (the notebook test keeps its run for the build under it)."""
    return _digest(page_modules(page, root), root, page.read_bytes())


# ---------------------------------------------------------------------------------------------------------------------
# Sphinx: re-read a page when a module it imports, or the site's rendering code, changed


def _note_dependencies(app: Any, docname: str, source: list[str]) -> None:
    page = Path(app.env.doc2path(docname))
    if page.suffix != ".ipynb":
        return
    for path in [*page_modules(page), *sorted(SITE.glob("*.py"))]:
        app.env.note_dependency(str(path))


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension: each notebook page depends on the modules it imports and on ``transformer_lib/site``, so
    that Sphinx re-reads it (from the notebook cache) when one of them changes, and only then."""
    app.connect("source-read", _note_dependencies)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The assignments: their list, and student notebooks generated from the solution notebooks.

There is one source per assignment, the solution notebook ``assignments/NN_name.ipynb``, whose answers sit
between nbgrader's markers::

    def attention(q, k, v, mask=None):
        \"\"\"...docstring...\"\"\"
        ### BEGIN SOLUTION
        ...
        ### END SOLUTION

``python -m transformer_lib.classroom.assignments`` writes the student notebook ``book/assignments/NN_name.ipynb`` with
each marked block replaced by a stub that raises ``NotImplementedError`` (the signature and docstring stay), every
output cleared, cells tagged ``solution-only`` dropped, and cells tagged ``demo`` (which call the learner's code)
tagged ``raises-exception`` as well, so that executing a student notebook (nbval, the website build) expects their
``NotImplementedError``. ``--check`` only reports whether the committed student notebooks are up to date,
``--teacher-book DIR`` copies the book with the solutions in place of the student notebooks (build it with
``jupyter-book build DIR``; never publish it), and ``--nbgrader DIR`` writes an nbgrader course folder
(:mod:`transformer_lib.classroom.nbgrader_export`). ``--solutions PRIVATE_DIR`` reads the solution notebooks from
a folder outside the repository instead of ``assignments/``, for a class whose answers must stay private.

:data:`ASSIGNMENTS` (defined in :mod:`.registry`, re-exported here) lists each assignment's exercises: the name
the notebook defines, the check of :mod:`transformer_lib.classroom.checks` that grades it, its points and whether
it is an optional extension; the grader, its gradebook, the nbgrader export and ``checks.check_assignment`` read
it. The student notebooks carry the nbgrader export's cell metadata, so nbgrader can grade them too. The markdown
cell that asks the written questions is tagged ``answer``: the gradebook collects the students' text from it for
grading by hand.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from .nbgrader_export import SANDBOXED, export_course, nbgrader_notebook
from .registry import ANSWER_HERE, ASSIGNMENTS, BEGIN, END, Assignment, Exercise, get_assignment

__all__ = [
    "BEGIN",
    "END",
    "ANSWER_HERE",
    "Exercise",
    "Assignment",
    "ASSIGNMENTS",
    "get_assignment",
    "student_source",
    "student_notebook",
    "generate",
    "notebook_namespace",
    "build_teacher_book",
    "main",
]


# --------------------------------------------------------------------------------------------------------------
# Solution -> student
# --------------------------------------------------------------------------------------------------------------
def _enclosing_name(lines: list[str], indent: str) -> str:
    """``Class.method`` or ``function`` that the marker at ``indent`` sits in (from the lines above it)."""
    names, level = [], len(indent)
    for line in reversed(lines):
        m = re.match(r"(\s*)(?:async\s+)?(def|class)\s+(\w+)", line)
        if m and len(m.group(1)) < level:
            names.append(m.group(3))
            level = len(m.group(1))
    return ".".join(reversed(names)) or "this cell"


def student_source(source: str, *, code: bool = True) -> str:
    """``source`` with each ``### BEGIN SOLUTION`` ... ``### END SOLUTION`` block replaced by a stub.

    In code the stub is ``raise NotImplementedError(...)`` at the marker's indentation; in markdown it is an
    "answer here" line. Unbalanced markers raise ``ValueError``.
    """
    out: list[str] = []
    inside = False
    for number, line in enumerate(source.splitlines(), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise ValueError(f"source: line {number} opens a solution block inside another one")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            if code:
                name = _enclosing_name(out, indent)
                out += [
                    f"{indent}# YOUR CODE HERE",
                    f'{indent}raise NotImplementedError("{name}: not implemented yet")',
                ]
            else:
                out.append(ANSWER_HERE)
        elif marker == END:
            if not inside:
                raise ValueError(f"source: line {number} closes a solution block that was never opened")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"source: a solution block is never closed ({END!r} missing)")
    return "\n".join(out)


def student_notebook(solution: Any, assignment_id: str | None = None) -> Any:
    """The student version of a solution notebook (an ``nbformat.NotebookNode``); the input is not changed.

    With the ``assignment_id`` of an assignment in :data:`ASSIGNMENTS`, every cell also carries the nbgrader
    metadata of the nbgrader export (:func:`~.nbgrader_export.nbgrader_notebook`: solution, test and locked cells,
    the same ``grade_id`` and points), so that ``nbgrader autograde`` grades this handout as it grades nbgrader's
    own release: one handout for both routes.
    """
    import nbformat

    nb = nbformat.from_dict(solution)  # a deep copy
    if assignment_id in ASSIGNMENTS:
        graded = list(nbgrader_notebook(solution, assignment_id).cells)
        kept = [c for c in nb.cells if "solution-only" not in c.metadata.get("tags", [])]
        for cell, twin in zip(kept, graded, strict=True):  # both leave out the same teacher-only cells
            if "nbgrader" in twin.metadata:
                cell.metadata["nbgrader"] = dict(twin.metadata["nbgrader"])
    cells = []
    for i, cell in enumerate(nb.cells):
        tags = list(cell.metadata.get("tags", []))
        if "solution-only" in tags:
            continue
        try:
            cell.source = student_source(cell.source, code=cell.cell_type == "code")
        except ValueError as e:
            raise ValueError(f"cell {i}: {e}") from None
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if "demo" in tags and "raises-exception" not in tags:
                cell.metadata["tags"] = tags + ["raises-exception"]
        cells.append(cell)
    nb.cells = cells
    return nb


def _clean(nb: Any) -> str:
    import nbformat

    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nbformat.writes(nb) + "\n"


def generate(root: str | Path, *, check_only: bool = False, solutions: str | Path | None = None) -> list[Path]:
    """Write ``book/assignments/NN.ipynb`` under ``root`` for every solution notebook ``NN.ipynb`` in
    ``solutions`` (default: ``root/assignments``; a private folder keeps the solutions out of the repository).

    Returns the student notebooks that were (with ``check_only``: that would be) created or changed.
    """
    import nbformat

    src_dir, dst_dir = _solutions_dir(root, solutions), Path(root) / "book" / "assignments"
    sources = sorted(src_dir.glob("[0-9][0-9]_*.ipynb"))
    changed = []
    for src in sources:
        text = _clean(student_notebook(nbformat.read(src, as_version=4), src.stem))
        dst = dst_dir / src.name
        if not dst.exists() or dst.read_text(encoding="utf-8") != text:
            changed.append(dst)
            if not check_only:
                dst_dir.mkdir(parents=True, exist_ok=True)
                dst.write_text(text, encoding="utf-8")
    return changed


def _solutions_dir(root: str | Path, solutions: str | Path | None) -> Path:
    """The folder of solution notebooks: ``solutions``, or ``root/assignments``; it must hold some."""
    src_dir = Path(solutions) if solutions is not None else Path(root) / "assignments"
    if not any(src_dir.glob("[0-9][0-9]_*.ipynb")):
        where = (
            f"solutions: no solution notebooks NN_name.ipynb in {src_dir}"
            if solutions is not None
            else f"root: no solution notebooks assignments/NN_name.ipynb under {root}"
        )
        raise FileNotFoundError(where)
    return src_dir


def notebook_namespace(path: str | Path, *, skip_tags: tuple[str, ...] = ("check",)) -> dict[str, Any]:
    """Run the code cells of the notebook at ``path`` (except those tagged ``skip_tags``) in one fresh namespace
    and return it: the way tests and teachers get at a notebook's functions without a kernel."""
    import nbformat

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    namespace: dict[str, Any] = {"__name__": f"notebook_{path.stem}"}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and not set(cell.metadata.get("tags", [])) & set(skip_tags):
            exec(compile(cell.source, f"{path.name} (cell {i})", "exec"), namespace)
    return namespace


# --------------------------------------------------------------------------------------------------------------
# A teacher's copy of the book, with the solutions
# --------------------------------------------------------------------------------------------------------------
_NOT_COPIED = (
    ".git",
    ".venv",
    ".venv-reader",
    "venv",
    "_build",
    "__pycache__",
    ".pytest_cache",
    ".ipynb_checkpoints",
    "node_modules",
    "*.egg-info",
    ".jupyter_cache",
)


def _limit_to_assignments(dest: Path) -> None:
    """Make the copy's table of contents the introduction, the Assignments part and the Reference part only."""
    import yaml  # type: ignore[import-untyped]

    toc_path = dest / "_toc.yml"
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    toc["parts"] = [p for p in toc.get("parts", []) if p.get("caption") in ("Assignments", "Reference")]
    if not any(p.get("caption") == "Assignments" for p in toc["parts"]):
        raise ValueError(f"root: the table of contents {toc_path} has no part with the caption 'Assignments'")
    toc_path.write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")


def _seed_executed(dest: Path, root: Path) -> None:
    """Give the copy the pages that the notebook test (nbval) executed in the repository, ``root/_build/.executed``:
    the book's pages where they are, and each solution, run in ``assignments/``, where the copy puts it,
    ``book/assignments/``. The copy's build takes a page from there only when its fingerprint (the page's bytes and
    the source of the modules it imports) is the page's in the copy (``scripts/execute_notebooks.py``), so a
    solution from another folder (``solutions``), or a page changed since the test ran, runs again."""
    executed = root / "_build" / ".executed"
    if (executed / "book").is_dir():
        shutil.copytree(executed / "book", dest / "_build" / ".executed" / "book", dirs_exist_ok=True)
    for kept in sorted((executed / "assignments").glob("[0-9][0-9]_*.ipynb")):
        (dest / "_build" / ".executed" / "book" / "assignments").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(kept, dest / "_build" / ".executed" / "book" / "assignments" / kept.name)


def _jupyter_book() -> list[str]:
    """The command that runs Jupyter Book with this Python (no activated virtual environment needed)."""
    return [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())"]


def _build(dest: Path, root: Path, jobs: int, strict: bool) -> None:
    """Build the copy at ``dest`` the way ``scripts/build_book.sh`` builds the book: execute the notebooks ``jobs``
    at a time with the copy's ``scripts/execute_notebooks.py`` into its jupyter cache (seeded with the book's own
    cache at ``root/_build/.jupyter_cache``, so that chapters that did not change are not run again), then
    ``jupyter-book build`` (``-W`` when ``strict``), both with this Python."""
    cache = root / "_build" / ".jupyter_cache"
    if cache.is_dir():
        shutil.copytree(cache, dest / "_build" / ".jupyter_cache", dirs_exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}  # as build_book.sh
    subprocess.run(
        [sys.executable, str(dest / "scripts" / "execute_notebooks.py"), "--jobs", str(jobs), "--timeout", "600"],
        cwd=dest,
        env=env,
        check=True,
    )
    flags = ["-W", "--keep-going"] if strict else ["--keep-going"]
    subprocess.run([*_jupyter_book(), "build", str(dest), "--builder", "html", *flags], cwd=dest, env=env, check=True)


def build_teacher_book(
    dest: str | Path,
    root: str | Path,
    *,
    build: bool = False,
    solutions: str | Path | None = None,
    assignments_only: bool = False,
    jobs: int = 2,
) -> Path:
    """Copy the book sources under ``root`` to ``dest`` and put the solution notebooks (from ``solutions``,
    default ``root/assignments``) in place of the student ones; with ``build`` also build it into
    ``dest/_build/html`` as ``scripts/build_book.sh`` builds the book (see :func:`_build`: the same notebook
    execution, ``jobs`` at a time, reusing the book's cache for unchanged chapters). ``assignments_only`` keeps
    only the introduction and the Assignments part in the copy's table of contents (a quick build, without
    ``-W``: the pages' links to chapters are left dangling). Returns ``dest``.

    The public site only ever holds the student notebooks: hiding a cell on a page is not secrecy.
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected an int >= 1, got {jobs!r}")
    root, dest = Path(root).resolve(), Path(dest).resolve()
    if dest == root or root in dest.parents:
        raise ValueError(f"dest: must lie outside the repository {root}, got {dest}")
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"dest: expected a new or empty folder, got {dest}")
    src_dir = _solutions_dir(root, solutions)
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(*_NOT_COPIED), dirs_exist_ok=True)
    for solution in sorted(src_dir.glob("[0-9][0-9]_*.ipynb")):
        shutil.copyfile(solution, dest / "book" / "assignments" / solution.name)
    _seed_executed(dest, root)
    if assignments_only:
        _limit_to_assignments(dest)
    if build:
        _build(dest, root, jobs, strict=not assignments_only)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lib.classroom.assignments",
        description="Generate the student notebooks book/assignments/NN.ipynb from the solutions in "
        "assignments/, or build a teacher's copy of the book with the solutions.",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=Path.cwd(),
        help="the book's repository, holding assignments/ and book/ (default: the current folder)",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit with status 1 if a student notebook is out of date"
    )
    parser.add_argument(
        "--teacher-book",
        type=Path,
        metavar="DIR",
        help="copy the book to DIR with the solution notebooks in place of the student ones",
    )
    parser.add_argument(
        "--build",
        action="store_true",
        help="with --teacher-book: also build it into DIR/_build/html, as scripts/build_book.sh builds the book",
    )
    parser.add_argument(
        "--assignments-only",
        action="store_true",
        help="with --teacher-book: only the introduction and the Assignments part (a quick build)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="with --build: notebooks executed at once (default 2)")
    parser.add_argument(
        "--nbgrader",
        type=Path,
        metavar="DIR",
        help="write an nbgrader course folder to DIR (source/<id>/<id>.ipynb, nbgrader_config.py)",
    )
    parser.add_argument(
        "--solutions",
        type=Path,
        metavar="DIR",
        help="the folder of solution notebooks (default: ROOT/assignments); keep it private",
    )
    args = parser.parse_args(argv)
    if args.nbgrader:
        written = export_course(args.nbgrader, _solutions_dir(args.root, args.solutions))
        print(f"nbgrader course with {len(written)} assignments: {args.nbgrader}")
        print(f"Then: cd {args.nbgrader} && nbgrader generate_assignment {written[0].stem}")
        print(f"Note: {SANDBOXED}", file=sys.stderr)
        return 0
    if args.teacher_book:
        dest = build_teacher_book(
            args.teacher_book,
            args.root,
            build=args.build,
            solutions=args.solutions,
            assignments_only=args.assignments_only,
            jobs=args.jobs,
        )
        print(f"Teacher's copy with solutions: {dest}")
        print(f"Open {dest / '_build' / 'html' / 'index.html'}" if args.build else "Build it: add --build")
        return 0
    changed = generate(args.root, check_only=args.check, solutions=args.solutions)
    for path in changed:
        print(f"{'out of date' if args.check else 'wrote'}: {path.relative_to(args.root)}")
    if args.check and changed:
        print("Run `python -m transformer_lib.classroom.assignments` and commit the result.", file=sys.stderr)
        return 1
    if not changed:
        print("Student notebooks are up to date.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

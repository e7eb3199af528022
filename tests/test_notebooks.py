"""Hygiene of the book's notebooks, checked without running them (nbval and the build run them).

* Committed without outputs: the build executes every notebook, so stored outputs would only go stale.
* Chapters use the library: each imports ``transformer_lib``, never redefines (``def``/``class`` at the top
  level of a cell) a public name the library exports, and fixes its seeds.
* Every ``# Check:`` cell asserts something and is collapsed (``hide-cell``) or hidden (``remove-cell``).
* ``_toc.yml`` and the notebooks agree: every listed page exists, every chapter notebook is listed.

Notebooks under ``book/assignments/`` are exempt from the chapter rules: a student notebook leaves pieces for
the reader to write, under the library's own names so that a checker can compare them.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
EXEMPT_FOLDERS = {"assignments"}
NOTEBOOKS = sorted(p for p in BOOK.rglob("*.ipynb") if not {"_build", ".ipynb_checkpoints"} & set(p.parts))
CHAPTERS = [p for p in NOTEBOOKS if not EXEMPT_FOLDERS & set(p.relative_to(BOOK).parts[:-1])]
HIDING_TAGS = {"hide-cell", "remove-cell"}
SEED_CALL = re.compile(r"\b(seed_everything|manual_seed)\(")


def _ids(paths: list[Path]) -> list[str]:
    return [p.relative_to(ROOT).as_posix() for p in paths]


@cache
def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _code(nb: nbformat.NotebookNode) -> list[tuple[int, str]]:
    return [(i, cell.source) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]


def _parse(source: str) -> ast.Module:
    """A cell as Python, with IPython's ``%magic`` and ``!shell`` lines blanked out."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    return ast.parse("\n".join(lines))


@cache
def _library_names() -> frozenset[str]:
    """Public names of ``transformer_lib``: its namespace and every submodule's ``__all__``."""
    import types

    import transformer_lib

    names = {n for n in dir(transformer_lib) if not n.startswith("_")}
    for value in vars(transformer_lib).values():
        if isinstance(value, types.ModuleType) and value.__name__.startswith("transformer_lib."):
            names.update(getattr(value, "__all__", ()))
    return frozenset(names)


def test_the_book_has_notebooks() -> None:
    assert (BOOK / "intro.ipynb") in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_committed_without_outputs(path: Path) -> None:
    nb = _read(path)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not dirty, f"cells {dirty} carry outputs or execution counts: clear them before committing"
    assert "widgets" not in nb.metadata, "saved widget state: clear outputs (the build stores fresh state)"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3", "kernel must be 'python3'"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_imports_the_library_and_fixes_seeds(path: Path) -> None:
    nb = _read(path)
    imported = set()
    for _, source in _code(nb):
        for node in ast.walk(_parse(source)):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module.split(".")[0])
    assert "transformer_lib" in imported, "a chapter must import transformer_lib (as tl)"
    assert any(SEED_CALL.search(source) for _, source in _code(nb)), (
        "a chapter must fix its seeds: call tl.seed_everything(...) or torch.manual_seed(...)"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_runs_torch_on_one_thread(path: Path) -> None:
    """The thread count changes the order of torch's float sums, and a short training run moves with it (chapter 4's
    unscaled curve: a loss of 1.71, 1.60 and 1.52 at step 120 with 1, 2 and 4 threads). So every chapter that uses
    torch pins it to one thread in its setup cell, and the reader's numbers are the book's; the checks' bounds hold
    with 1, 2 and 4 threads anyway, for a reader who changes it."""
    sources = [source for _, source in _code(_read(path))]
    if not any(re.search(r"^import torch\b", source, re.M) for source in sources):
        return
    assert any("torch.set_num_threads(1)" in source for source in sources), (
        "call torch.set_num_threads(1) in the setup cell, after tl.seed_everything(0)"
    )


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_does_not_redefine_library_names(path: Path) -> None:
    clashes = []
    for i, source in _code(_read(path)):
        for node in _parse(source).body:  # top level of the cell
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and node.name in _library_names()
            ):
                clashes.append(f"cell {i}: {node.name}")
    assert not clashes, (
        f"{clashes} shadow names that transformer_lib exports: use the library's, or give a "
        "from-scratch version its own name (e.g. attention_from_scratch) and compare"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_check_cells_assert_and_are_hidden(path: Path) -> None:
    problems = []
    for i, cell in enumerate(_read(path).cells):
        if cell.cell_type != "code" or not cell.source.lstrip().startswith("# Check:"):
            continue
        if not any(isinstance(node, ast.Assert) for node in ast.walk(_parse(cell.source))):
            problems.append(f"cell {i} has no assert")
        if not HIDING_TAGS & set(cell.metadata.get("tags", [])):
            problems.append(f"cell {i} lacks the hide-cell (or remove-cell) tag")
        if path in CHAPTERS and "check" not in cell.metadata.get("mystnb", {}).get("code_prompt_show", "").lower():
            problems.append(
                f"cell {i}: its toggle on the site must say it is a check (metadata mystnb.code_prompt_show)"
            )
    assert not problems, problems


def _toc_files() -> list[str]:
    def walk(entries: list[dict]) -> list[str]:
        found = []
        for entry in entries:
            if "file" in entry:
                found.append(entry["file"])
            for key in ("parts", "chapters", "sections"):
                found += walk(entry.get(key, []))
        return found

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [toc["root"], *walk(toc.get("parts", [])), *walk(toc.get("chapters", []))]


def test_toc_lists_existing_pages_and_every_chapter() -> None:
    listed = _toc_files()
    missing = [f for f in listed if not any((ROOT / f).with_suffix(s).exists() for s in (".ipynb", ".md"))]
    assert not missing, f"_toc.yml lists pages that do not exist: {missing}"
    unlisted = [p for p in _ids(CHAPTERS) if p.removesuffix(".ipynb") not in listed]
    assert not unlisted, f"chapter notebooks missing from _toc.yml (they would not be built): {unlisted}"


def _math_continuation_lines(markdown: str) -> list[str]:
    """Lines that start inside an open ``$…$`` or ``$$…$$`` with ``+``, ``-`` or ``*``: Markdown reads such a line
    as a list item and breaks the formula (seen on the site as "$1 + 2 + \\dots" and a stray bullet)."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)  # fenced code
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code
    text = text.replace(r"\$", "")  # an escaped dollar is not math
    found, open_math = [], False
    for line in text.split("\n"):
        if open_math and re.match(r"\s*[-+*](\s|$)", line):
            found.append(line.strip())
        for token in re.findall(r"\$\$|\$", line):
            open_math = not open_math if token == "$" or not open_math else False
    return found


SOURCES = NOTEBOOKS + sorted((ROOT / "assignments").glob("*.ipynb"))


@pytest.mark.parametrize("path", SOURCES, ids=_ids(SOURCES))
def test_no_formula_line_starts_like_a_list_item(path: Path) -> None:
    problems = [
        f"cell {i}: {line!r}"
        for i, cell in enumerate(_read(path).cells)
        if cell.cell_type == "markdown"
        for line in _math_continuation_lines(cell.source)
    ]
    assert not problems, f"{problems}: join the line to the one before, or break it before another symbol"


def test_the_formula_lint_finds_a_broken_formula() -> None:
    assert _math_continuation_lines("cost $1 + 2 + \\dots\n+ n$ positions") == ["+ n$ positions"]
    assert _math_continuation_lines("$$\na\n- b\n$$") == ["- b"]
    assert _math_continuation_lines("$a$ and\n- a list item, $b$\n* another `$x`") == []


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_live_controls_show_no_dead_widget_on_the_site(path: Path) -> None:
    """An ipywidgets control cannot recompute on the website: its output is removed there (``remove-output``)
    and the text before it says it is live in Jupyter; where a twin exists, it is a precomputed figure."""
    cells = _read(path).cells
    problems = []
    for i, cell in enumerate(cells):
        if cell.cell_type != "code" or not ("widgets.interact(" in cell.source or ".observe(" in cell.source):
            continue
        if "remove-output" not in cell.metadata.get("tags", []):
            problems.append(f"cell {i}: a live control without the remove-output tag would be dead on the site")
        before = next((c.source for c in reversed(cells[:i]) if c.cell_type == "markdown"), "")
        if "Live in Jupyter" not in before:
            problems.append(f"cell {i}: the markdown before it must say 'Live in Jupyter'")
    assert not problems, problems


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_opens_on_colab_with_its_library(path: Path) -> None:
    """The first code cell fetches the book where transformer_lib is missing (Colab); hidden on the website."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("colab_cell", ROOT / "scripts" / "colab_cell.py")
    colab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(colab)
    first = next(c for c in _read(path).cells if c.cell_type == "code")
    assert first.source == colab.cell_source(), "run: python scripts/colab_cell.py"
    assert "remove-cell" in first.metadata.get("tags", [])


NUMBERED = [p for p in CHAPTERS if re.match(r"\d\d[a-z]?_", p.name)]  # a chapter's second page: 06b_...


@pytest.mark.parametrize("path", NUMBERED, ids=_ids(NUMBERED))
def test_chapter_opens_with_its_goal_prerequisites_and_time(path: Path) -> None:
    first = next(c for c in _read(path).cells if c.cell_type == "markdown").source
    assert ":::{admonition} In this chapter" in first
    assert all(part in first for part in ("**Goal:**", "**Assumes:**", "**Runs in:**")), first[-300:]


ENDING = NUMBERED + [p for p in CHAPTERS if p.name.startswith("appendix_")]
HEADING = re.compile(r"^## (.+)$", re.MULTILINE)
EXERCISE = re.compile(r"^\*\*(\d+)\.\*\* ", re.MULTILINE)
# A folded block in the one form that folds on the site, in JupyterLab and on Colab (scripts/myst_live.py).
FOLD = r"^<details class=\"[\w-]+\">\n<summary>{title}</summary>\n"


def _exercise_blocks(nb: nbformat.NotebookNode) -> dict[int, list[nbformat.NotebookNode]]:
    """The cells of each exercise under '## Exercises', keyed by its number: its own text to the next one."""
    blocks: dict[int, list] = {}
    current = None
    inside = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for piece in re.split(r"(?=^## )", cell.source, flags=re.MULTILINE):
                title = HEADING.match(piece)
                if title:
                    inside, current = title.group(1).strip() == "Exercises", None
                if not inside:
                    continue
                for text in re.split(r"(?=^\*\*\d+\.\*\* )", piece, flags=re.MULTILINE):
                    number = EXERCISE.match(text)
                    if number:
                        current = int(number.group(1))
                        blocks[current] = []
                    if current is not None:
                        blocks[current].append(nbformat.v4.new_markdown_cell(text))
        elif inside and current is not None:
            blocks[current].append(cell)
    return blocks


@pytest.mark.parametrize("path", ENDING, ids=_ids(ENDING))
def test_chapter_ends_with_a_summary_and_folded_exercises(path: Path) -> None:
    """Every numbered chapter and appendix ends with a summary (its last section before the exercises and
    references); every exercise has a folded hint and a stated, checked answer: a folded solution whose text states
    the result with its number, and after it a ``# Solution to exercise N`` code cell that runs the experiment and
    asserts that result (``hide-cell``, so that its output does not give the answer away either)."""
    nb = _read(path)
    headings = [h.strip() for c in nb.cells if c.cell_type == "markdown" for h in HEADING.findall(c.source)]
    body = [h for h in headings if h not in ("Exercises", "References")]
    assert body and re.fullmatch(r"(\d+\.\d+ )?Summary", body[-1]), f"the last section is {body[-1:]}, not a summary"
    assert headings.index(body[-1]) == len(body) - 1, "Exercises or References come before the summary"
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    exercises_at = text.find("## Exercises")
    if exercises_at < 0:
        return
    listed = re.findall(r"^\d+\. ", text[exercises_at:].split("## References")[0], re.MULTILINE)
    assert not listed, "write each exercise as '**N.** text' followed by its hint and solution, not as a list item"
    blocks = _exercise_blocks(nb)
    assert list(blocks) == list(range(1, len(blocks) + 1)) and blocks, f"exercises numbered {list(blocks)}"
    problems = []
    for number, cells in blocks.items():
        prose = "\n".join(c.source for c in cells if c.cell_type == "markdown")
        if not re.search(FOLD.format(title="Hint"), prose, re.MULTILINE):
            problems.append(f"exercise {number}: no folded hint ('<details>' with '<summary>Hint</summary>')")
        code = [c for c in cells if c.cell_type == "code" and c.source.startswith("# Solution")]
        stated = re.search(FOLD.format(title="Solution") + r"(.*?)^</details>", prose, re.MULTILINE | re.DOTALL)
        if not stated:
            problems.append(f"exercise {number}: no folded solution ('<details>' with '<summary>Solution</summary>')")
        elif not re.search(r"\d", stated.group(1)):
            problems.append(f"exercise {number}: its solution states no result with a number")
        if not any(re.match(rf"# Solution to exercise {number}\b", c.source) for c in code):
            problems.append(
                f"exercise {number}: no '# Solution to exercise {number}' cell that runs the experiment and asserts "
                "the stated result"
            )
        for c in code:
            if "hide-cell" not in c.metadata.get("tags", []) or not any(
                isinstance(n, ast.Assert) for n in ast.walk(_parse(c.source))
            ):
                problems.append(f"exercise {number}: its solution cell must be folded (hide-cell) and assert")
    assert not problems, problems


@pytest.mark.parametrize(
    "chapter, source",
    [
        ("04_attention.ipynb", "tl.scaled_dot_product_attention"),
        ("06_multi_head_attention.ipynb", "tl.MultiHeadAttention.forward"),
    ],
)
def test_the_explained_code_is_shown_whole(chapter: str, source: str) -> None:
    """The chapter that explains attention shows the eager function, and the multi-head chapter the module's
    forward, whole and unfolded: ``show_source`` of that object, as a cell's last expression, with
    ``collapse_after`` at least as long as the source today."""
    import inspect

    import transformer_lib as tl

    obj = eval(source, {"tl": tl})  # a dotted name from the list above, not user input
    n_lines = inspect.getsource(obj).count("\n")
    shown = []
    for _, code in _code(_read(BOOK / chapter)):
        last = _parse(code).body[-1:] if code.strip() else []
        for node in last:
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func) == "show_source"
                and source in [ast.unparse(a) for a in node.value.args]
            ):
                limits = [k.value for k in node.value.keywords if k.arg == "collapse_after"]
                shown.append(ast.literal_eval(limits[0]) if limits else 25)
    assert shown, f"{chapter} never ends a cell with show_source({source}, ...)"
    assert max(shown) >= n_lines, f"{chapter} folds {source} ({n_lines} lines) after {max(shown)} lines"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_folded_blocks_use_the_form_that_folds_everywhere(path: Path) -> None:
    """Hints and solutions fold as HTML ``<details>``: a MyST dropdown (``:class: dropdown``, ``{dropdown}``)
    folds on the site and in JupyterLab but prints as raw text, solution included, on Colab. Fix: run
    ``python scripts/myst_live.py`` (it rewrites only those blocks)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("myst_live", ROOT / "scripts" / "myst_live.py")
    assert spec is not None and spec.loader is not None
    myst_live = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(myst_live)
    old = [i for i, c in enumerate(_read(path).cells) if c.cell_type == "markdown" and myst_live.has_old_form(c.source)]
    assert not old, f"cells {old} fold with a MyST dropdown: run `python scripts/myst_live.py`"
    assert myst_live.has_old_form(":::{admonition} Hint\n:class: dropdown\nText.\n:::"), (
        "the detector misses a dropdown"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_solution_code_cells_are_folded_in_jupyterlab_too(path: Path) -> None:
    """A solution written as code (``# Solution ...``) is folded on the site (tag ``hide-cell``) and in JupyterLab
    (``"jupyter": {"source_hidden": true}``), so a student opens it on purpose. Fix: ``python scripts/myst_live.py``."""
    open_cells = [
        i
        for i, c in enumerate(_read(path).cells)
        if c.cell_type == "code"
        and c.source.startswith("# Solution")
        and not (
            "hide-cell" in c.metadata.get("tags", []) and c.metadata.get("jupyter", {}).get("source_hidden") is True
        )
    ]
    assert not open_cells, f"solution cells {open_cells} are not folded on the site and in JupyterLab"

"""Hygiene of the book's notebooks, checked without running them (nbval and the build run them).

* Committed without outputs: the build executes every notebook, so stored outputs would only go stale.
* Chapters use the library: each imports ``transformer_lib``, never redefines (``def``/``class`` at the top
  level of a cell) a public name the library exports, and fixes its seeds.
* Check cells are found by their tag, ``text-check``: each asserts something that can fail and is collapsed
  (``hide-cell``) or hidden (``remove-cell``), and a cell that reads as a check (a ``# check`` comment in any case,
  or a toggle that says "check") without the tag fails, so that no check escapes these rules. Every assert of a check
  cell carries a message that says what it measured, the value found and the one expected.
* Every numbered chapter opens with its part of Figure 1 (``diagrams.transformer_diagram``, its ``highlight`` from
  ``FIGURE_1_PARTS``) before its first section.
* ``_toc.yml`` and the notebooks agree: every listed page exists, every chapter notebook is listed (a rule per page,
  so that ``-k NN_name`` runs it too).
* CONTRIBUTING.md works as written: ``tests/fixtures/chapter/99_tiny.ipynb``, a page written by its "Add a chapter"
  steps, passes every page rule here, and each fault planted in a copy of it fails the rule that promises to catch it.

Notebooks under ``book/assignments/`` are exempt from the chapter rules: a student notebook leaves pieces for
the reader to write, under the library's own names so that a checker can compare them.
"""

from __future__ import annotations

import ast
import re
import textwrap
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
CHECK_TAG = "text-check"  # a check cell: the hidden cell that asserts what the text around it states
READS_AS_A_CHECK = re.compile(r"\s*#+\s*check\b", re.IGNORECASE)  # "# Check:", "# check", "## CHECK -" ...
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


def live_asserts(source: str) -> list[ast.Assert]:
    """The ``assert`` statements of a cell that can fail: not one on a non-empty tuple or a true constant (always
    true: ``assert (x == 1, "message")``), not one in a function or class the cell never calls.

    >>> [ast.unparse(a.test) for a in live_asserts("def f():\\n    assert x\\nassert (y, 'm')\\nassert z == 2")]
    ['z == 2']
    """
    tree = _parse(source)
    called = {
        node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    found = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child.name not in called:
                continue
            if isinstance(child, ast.Lambda):
                continue
            if isinstance(child, ast.Assert) and not (
                (isinstance(child.test, ast.Tuple) and child.test.elts)
                or (isinstance(child.test, ast.Constant) and child.test.value)
            ):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def bare_asserts(source: str) -> list[str]:
    """The asserts of a cell that can fail (:func:`live_asserts`) but carry no message, or an empty one: a reader whose
    run fails one sees a bare AssertionError and cannot tell what was measured. Each as 'line N: assert <test>'.

    >>> bare_asserts("assert x > 1\\nassert y < 2, f'y is {y} (expected < 2)'\\nassert z, ''")
    ['line 1: assert x > 1', 'line 3: assert z']
    """
    return [
        f"line {node.lineno}: assert {ast.unparse(node.test)[:70]}"
        for node in live_asserts(source)
        if node.msg is None or (isinstance(node.msg, ast.Constant) and not node.msg.value)
    ]


def check_cell_problems(nb: nbformat.NotebookNode, chapter: bool = True, messages: bool = True) -> list[str]:
    """What is wrong with a notebook's check cells: the cells tagged ``text-check``, and the cells that read as one
    without the tag (a first line ``# check ...`` in any case, or a toggle that says "check"); with ``messages``, an
    assert of a check cell without a message."""
    problems = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tags = set(cell.metadata.get("tags", []))
        toggle = cell.metadata.get("mystnb", {}).get("code_prompt_show", "")
        if CHECK_TAG not in tags:
            if READS_AS_A_CHECK.match(cell.source) or "check" in toggle.lower():
                first = cell.source.lstrip().split("\n")[0][:60]
                problems.append(f"cell {i} ({first!r}) reads as a check but lacks the tag {CHECK_TAG!r}: tag it")
            continue
        if not live_asserts(cell.source):
            problems.append(f"check cell {i} has no assert that can fail")
        if messages:
            problems += [
                f"check cell {i}, {bare}: give it a message that says what it measured, the value found and the one "
                "expected (assert gap < 1e-4, f'... differ by {gap:.1e} (expected < 1e-4)')"
                for bare in bare_asserts(cell.source)
            ]
        if not HIDING_TAGS & tags:
            problems.append(f"check cell {i} lacks the hide-cell (or remove-cell) tag")
        if chapter and "check" not in toggle.lower():
            problems.append(
                f"check cell {i}: its toggle on the site must say it is a check (metadata mystnb.code_prompt_show)"
            )
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_check_cells_assert_and_are_hidden(path: Path) -> None:
    problems = check_cell_problems(_read(path), chapter=path in CHAPTERS)
    assert not problems, problems


def test_the_check_cell_rules_catch_a_planted_fault() -> None:
    """A check cell written oddly (lower case, no assert, an assert that cannot fail, no tag) is caught."""
    meta = {"tags": ["hide-cell", CHECK_TAG], "mystnb": {"code_prompt_show": "Show the check behind the text"}}

    def notebook(source: str, metadata: dict) -> nbformat.NotebookNode:
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source, metadata=metadata)])

    assert check_cell_problems(notebook("# Check: two\nassert 1 + 1 == 2, f'1 + 1 = {1 + 1}, expected 2'", meta)) == []
    assert check_cell_problems(notebook("# check: two\nprint(1 + 1)", meta)) == [
        "check cell 0 has no assert that can fail"
    ]
    bare = check_cell_problems(notebook("# Check: two\nx = 1 + 1\nassert x == 2, f'x = {x}'\nassert x > 1", meta))
    assert len(bare) == 1 and bare[0].startswith("check cell 0, line 4: assert x > 1: give it a message"), bare
    assert check_cell_problems(notebook("# Check: two\nassert 1 + 1 == 2", meta), messages=False) == []
    assert check_cell_problems(notebook("# Check\nassert (1 + 1 == 3, 'two')", meta)) == [
        "check cell 0 has no assert that can fail"
    ]
    untagged = {"tags": ["hide-cell"]}
    assert check_cell_problems(notebook("#check: two\nprint(2)", untagged)) == [
        "cell 0 ('#check: two') reads as a check but lacks the tag 'text-check': tag it"
    ]
    assert check_cell_problems(notebook("x = 2\nassert x", {**meta, "tags": ["hide-cell"]}))[0].startswith("cell 0")


def _toc_files(toc_file: Path = ROOT / "_toc.yml") -> list[str]:
    def walk(entries: list[dict]) -> list[str]:
        found = []
        for entry in entries:
            if "file" in entry:
                found.append(entry["file"])
            for key in ("parts", "chapters", "sections"):
                found += walk(entry.get(key, []))
        return found

    toc = yaml.safe_load(toc_file.read_text(encoding="utf-8"))
    return [toc["root"], *walk(toc.get("parts", [])), *walk(toc.get("chapters", []))]


def test_toc_lists_existing_pages() -> None:
    listed = _toc_files()
    missing = [f for f in listed if not any((ROOT / f).with_suffix(s).exists() for s in (".ipynb", ".md"))]
    assert not missing, f"_toc.yml lists pages that do not exist: {missing}"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_is_listed_in_the_toc(path: Path) -> None:
    """A chapter page is built only if the table of contents lists it ("Add a chapter", step 8): the ``_toc.yml`` of
    the book the page is in (the nearest one above it; the repository's for ``book/``)."""
    book = next((folder for folder in path.resolve().parents if (folder / "_toc.yml").is_file()), None)
    assert book is not None, f"{path.name}: no _toc.yml in any folder above it"
    page = path.resolve().relative_to(book).with_suffix("").as_posix()
    listed = _toc_files(book / "_toc.yml")
    assert page in listed, f"{page} is missing from {book.name}/_toc.yml (it would not be built): list it (step 8)"


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
    """One control per experiment: an ipywidgets control is built only by ``controls.live``, whose output carries
    the widget for Jupyter and its precomputed view for the website (which has no kernel), never by a bare
    ``interact``/``observe`` that the site would show dead or not at all."""
    cells = _read(path).cells
    bare = re.compile(r"\bwidgets\.interact(ive)?\(|\binteract(ive)?\(|\.observe\(")
    problems = [
        f"cell {i}: a bare ipywidgets control; build it with controls.live (live in Jupyter, precomputed on the site)"
        for i, cell in enumerate(cells)
        if cell.cell_type == "code" and bare.search(cell.source)
    ]
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


def figure_1_problems(nb: nbformat.NotebookNode) -> list[str]:
    """What keeps a chapter from opening with its part of Figure 1: a code cell before its first section (``## ``)
    that calls ``transformer_diagram`` (``transformer_lib.book.diagrams``), with a ``highlight`` (if any) written
    as a literal of part names from ``FIGURE_1_PARTS``. Read from the source: nothing runs."""
    from transformer_lib.book.transformer_diagram import FIGURE_1_PARTS

    calls = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.search(r"^## ", cell.source, re.MULTILINE):
            break
        if cell.cell_type == "code":
            calls += [
                node
                for node in ast.walk(_parse(cell.source))
                if isinstance(node, ast.Call)
                and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "transformer_diagram"
            ]
    if not calls:
        return ["no Figure 1 before the first section: call diagrams.transformer_diagram(..., highlight={...})"]
    problems = []
    for call in calls:
        for keyword in (k for k in call.keywords if k.arg == "highlight"):
            try:
                value = ast.literal_eval(keyword.value)
            except ValueError:
                problems.append(f"highlight={ast.unparse(keyword.value)}: write the part names as a literal")
                continue
            parts = {value} if isinstance(value, str) else set(value)
            if not parts or parts - set(FIGURE_1_PARTS):
                problems.append(f"highlight: {sorted(parts - set(FIGURE_1_PARTS))} not in FIGURE_1_PARTS")
    return problems


@pytest.mark.parametrize("path", NUMBERED, ids=_ids(NUMBERED))
def test_chapter_opens_with_its_part_of_figure_1(path: Path) -> None:
    problems = figure_1_problems(_read(path))
    assert not problems, problems


def test_the_figure_1_rule_catches_a_planted_fault() -> None:
    def opening(code: str) -> nbformat.NotebookNode:
        cells = [nbformat.v4.new_markdown_cell("# 9. A page"), nbformat.v4.new_code_cell(code)]
        return nbformat.v4.new_notebook(cells=[*cells, nbformat.v4.new_markdown_cell("## 9.1 A section")])

    assert figure_1_problems(opening('diagrams.transformer_diagram(cfg, highlight={"feed_forward"})')) == []
    assert figure_1_problems(opening("transformer_diagram(model, compact=True)")) == []  # the whole model
    assert figure_1_problems(opening("print(1)"))[0].startswith("no Figure 1")
    assert figure_1_problems(opening('diagrams.transformer_diagram(cfg, highlight="attention")')) == [
        "highlight: ['attention'] not in FIGURE_1_PARTS"
    ]
    late = opening("print(1)")
    late.cells.append(nbformat.v4.new_code_cell("diagrams.transformer_diagram(cfg)"))
    assert figure_1_problems(late)[0].startswith("no Figure 1")  # after the first section: not the opening


TOOL_BOX = re.compile(
    r"^:::\{admonition\} Used here as a tool; explained in (chapters? .+)\n((?:.*\n)*?):::", re.MULTILINE
)


def tool_box_problems(nb: nbformat.NotebookNode, page: str) -> list[str]:
    """What is wrong with a page's "Used here as a tool; explained in chapter N" boxes (the book teaches in order:
    nothing is used before its chapter without such a box): a chapter it names that is not after the page
    (``06b_...`` is chapter (6, "b")), or a box without a link."""

    def order(chapter: str) -> tuple[int, str]:
        number = re.match(r"(\d+)([a-z]?)", chapter)
        return int(number[1]), number[2]

    problems = []
    for cell in (c for c in nb.cells if c.cell_type == "markdown"):
        for named, body in TOOL_BOX.findall(cell.source):
            if early := [n for n in re.findall(r"\d+[a-z]?", named) if order(n) <= order(page)]:
                problems.append(f"box '{named}' names chapter {', '.join(early)}, not after page {page}")
            if "{ref}`" not in body and ".ipynb)" not in body:
                problems.append(f"box '{named}' links no chapter: add {{ref}}`chapter N <label>` or a link")
    return problems


@pytest.mark.parametrize("path", NUMBERED, ids=_ids(NUMBERED))
def test_tool_boxes_point_forward_with_a_link(path: Path) -> None:
    problems = tool_box_problems(_read(path), path.name)
    assert not problems, problems


def test_the_tool_box_rule_catches_a_planted_fault() -> None:
    def page(title: str, body: str) -> nbformat.NotebookNode:
        box = f":::{{admonition}} Used here as a tool; explained in {title}\n:class: seealso\n{body}\n:::"
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"## 5.4 A section\n\n{box}")])

    linked = "The loss is {ref}`chapter 7b's <ch7-loss>`."
    assert tool_box_problems(page("chapters 6b, 7b and 8", linked), "05_masks") == []
    assert tool_box_problems(page("chapters 3 to 8", "See [chapter 8](08_training.ipynb)."), "02_tokens") == []
    assert tool_box_problems(page("chapters 5 and 7", linked), "05_masks") == [
        "box 'chapters 5 and 7' names chapter 5, not after page 05_masks"
    ]
    assert tool_box_problems(page("chapter 6", linked), "06b_encoder_block")[0].startswith("box 'chapter 6' names")
    assert tool_box_problems(page("chapter 8", "No link here."), "05_masks")[0].endswith("or a link")


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


# ---------------------------------------------------------------------------------------------------------------------
# CONTRIBUTING.md as written: a tiny page that follows its "Add a chapter" steps passes every rule above, and each
# fault those steps warn about, planted in a copy, fails the rule that promises to catch it
# ---------------------------------------------------------------------------------------------------------------------
TINY = ROOT / "tests" / "fixtures" / "chapter" / "99_tiny.ipynb"


def page_failures(path: Path) -> dict[str, str]:
    """Each rule of this file that a chapter page at ``path`` breaks, with the first line of its message."""
    failures = {}
    for rule in PAGE_RULES:
        try:
            rule(path)
        except AssertionError as error:
            failures[rule.__name__] = str(error).split("\n")[0]
    problems = check_cell_problems(_read(path), chapter=True)
    if problems:
        failures["check cells"] = "; ".join(problems)
    return failures


def _tiny_page(tmp_path: Path, name: str, plant=None, listed: bool = True) -> Path:
    """The tiny page (with today's Colab cell: step 1 runs scripts/colab_cell.py), a fault planted by ``plant``, in a
    book of its own whose ``_toc.yml`` lists it (step 8) unless ``listed`` is False."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("colab_cell", ROOT / "scripts" / "colab_cell.py")
    colab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(colab)
    nb = nbformat.read(TINY, as_version=4)
    next(c for c in nb.cells if c.cell_type == "code").source = colab.cell_source()
    if plant is not None:
        plant({c.source.split("\n")[0]: c for c in nb.cells})
    book = tmp_path / name
    (book / "book").mkdir(parents=True)
    path = book / "book" / f"99_{name}.ipynb"
    nbformat.write(nb, path)
    chapters = [{"file": f"book/99_{name}"}] if listed else []
    toc = {"format": "jb-book", "root": "book/intro", "parts": [{"caption": "Chapters", "chapters": chapters}]}
    (book / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    return path


def test_a_page_written_as_contributing_says_passes_and_each_planted_fault_fails(tmp_path: Path) -> None:
    assert page_failures(_tiny_page(tmp_path, "tiny")) == {}

    def lower_case_check_without_assert(cells: dict) -> None:
        cells["# Check: 15 of 25 pairs open"].source = "# check: 15 of 25 pairs open\nprint(int(mask.sum()) == 15)"

    def check_without_its_tag(cells: dict) -> None:
        cells["# Check: 15 of 25 pairs open"].metadata.tags = ["hide-cell"]
        lower_case_check_without_assert(cells)

    def no_figure_1(cells: dict) -> None:
        cells["from transformer_lib.book import diagrams"].source = "print(tl.TransformerConfig())"

    def a_part_figure_1_lacks(cells: dict) -> None:
        figure = cells["from transformer_lib.book import diagrams"]
        figure.source = figure.source.replace('"masked_self_attention"', '"masked_attention"')

    def torch_on_all_threads(cells: dict) -> None:
        cells["import torch"].source = cells["import torch"].source.replace("torch.set_num_threads(1)", "")

    def a_myst_dropdown_hint(cells: dict) -> None:
        exercises = cells["## Exercises"]
        exercises.source = exercises.source.replace(
            '<details class="hint">\n<summary>Hint</summary>\n\n'
            "Count the lower triangle with its diagonal.\n\n</details>",
            ":::{admonition} Hint\n:class: dropdown\nCount the lower triangle with its diagonal.\n:::",
        )

    def no_summary(cells: dict) -> None:
        cells["## 99.2 Summary"].source = cells["## 99.2 Summary"].source.replace("Summary", "What we saw")

    def an_open_solution_cell(cells: dict) -> None:
        del cells["# Solution to exercise 1"].metadata["jupyter"]

    def a_bare_widget(cells: dict) -> None:
        cells["import torch"].source += "\nwidgets.interact(print, x=widgets.IntSlider(1))"

    def an_unfolded_setup_cell(cells: dict) -> None:
        cells["import torch"].metadata.tags = []

    def an_assert_without_a_message(cells: dict) -> None:
        cells["# Check: 15 of 25 pairs open"].source = "# Check: 15 of 25 pairs open\nassert int(mask.sum()) == 15"

    planted = {
        a_bare_widget: ("test_live_controls_show_no_dead_widget_on_the_site", "a bare ipywidgets control"),
        lower_case_check_without_assert: ("check cells", "check cell 6 has no assert that can fail"),
        check_without_its_tag: ("check cells", "reads as a check but lacks the tag 'text-check'"),
        no_figure_1: ("test_chapter_opens_with_its_part_of_figure_1", "no Figure 1 before the first section"),
        a_part_figure_1_lacks: ("test_chapter_opens_with_its_part_of_figure_1", "['masked_attention'] not in"),
        torch_on_all_threads: ("test_chapter_runs_torch_on_one_thread", "call torch.set_num_threads(1)"),
        a_myst_dropdown_hint: ("test_chapter_ends_with_a_summary_and_folded_exercises", "no folded hint"),
        no_summary: ("test_chapter_ends_with_a_summary_and_folded_exercises", "not a summary"),
        an_open_solution_cell: ("test_solution_code_cells_are_folded_in_jupyterlab_too", "are not folded"),
        an_unfolded_setup_cell: ("test_the_model_in_front_and_the_machinery_folded", "the first code a reader sees"),
        an_assert_without_a_message: ("check cells", "check cell 6, line 2: assert int(mask.sum()) == 15: give it"),
    }
    for plant, (rule, message) in planted.items():
        failures = page_failures(_tiny_page(tmp_path, plant.__name__, plant))
        assert rule in failures and message in failures[rule], (plant.__name__, failures)
    failures = page_failures(_tiny_page(tmp_path, "not_in_the_toc", listed=False))
    assert list(failures) == ["test_chapter_is_listed_in_the_toc"], failures
    assert failures["test_chapter_is_listed_in_the_toc"].startswith("book/99_not_in_the_toc is missing from"), failures


# ---------------------------------------------------------------------------------------------------------------------
# The model in front, the machinery folded (STYLE.md, "The book"): the first code a reader sees on a page is not an
# import list, a figure or a control; a cell that only draws or builds a control is folded; one check per section
# ---------------------------------------------------------------------------------------------------------------------
FOLDED_TAGS = {"hide-input", "remove-input", "hide-cell", "remove-cell"}
# what draws or builds a control: plotly, the book's figure and control helpers, ipywidgets, matplotlib, display
_DRAWS = re.compile(
    r"\b(go|px|plt|viz|controls|precomputed_controls|widgets|diagrams|attention_diagrams|heatmaps|curves|"
    r"flow_diagrams|block_diagrams|token_strips|attention_grids|attention_explorer|live_translator)\."
    r"|\bfig\d*\b|\bfigure\b|\.show\(|\bdisplay\(|\bHTML\(|make_subplots\(|\binteract\(|_figure\(|\bdraw_\w+\("
)


def _statements(source: str) -> list[str]:
    tree = _parse(source)
    lines = source.splitlines()
    return ["\n".join(lines[node.lineno - 1 : node.end_lineno]) for node in tree.body]


def draws_only(source: str) -> bool:
    """True for a cell whose every statement draws, builds a control or imports (machinery to fold).

    >>> draws_only("fig = go.Figure()\\nfor k in ks:\\n    fig.add_trace(go.Scatter(y=k))\\nfig.show()")
    True
    >>> draws_only("maps = model.encoder.run(x).attentions\\nviz.attention_grid(maps, words, words)")
    False
    """
    statements = _statements(source)
    return bool(statements) and all(
        _DRAWS.search(s) or re.match(r"(import|from)\s", s) or s.startswith(("#", "pass")) for s in statements
    )


def imports_only(source: str) -> bool:
    """True for a cell that only imports and sets up (seeds, device, threads): the page's preamble."""
    setup = re.compile(
        r"(import|from)\s|tl\.seed_everything|device = |torch\.set_num_threads|warnings\.|pd\.set_option|[A-Z_]+ = |"
        r"print\(.*device|if device\.type"
    )
    statements = _statements(source)
    return bool(statements) and all(setup.match(s) or setup.search(s.split("\n")[0]) for s in statements)


def _draws(statement: str) -> bool:
    return bool(
        _DRAWS.search(statement) or re.match(r"(import|from)\s", statement) or statement.startswith(("#", "pass"))
    )


def _only_prints(statement: str) -> bool:
    """True for a statement that only prints: a ``print(...)`` call, or a loop whose body only prints."""
    node = _parse(textwrap.dedent(statement)).body[0]
    if isinstance(node, ast.For):
        return all(_only_prints(ast.unparse(inner)) for inner in node.body)
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "print"
    )


def ends_drawing_after_model(source: str) -> bool:
    """True for a cell that computes and then draws: its last statements draw, a statement before them does not.
    Prints after the figure do not hide it (they belong to the model half, before the figure).

    Such a cell splits in two at that boundary: the model half shown, the drawing half folded.

    >>> ends_drawing_after_model("maps = model.encoder.run(x).attentions\\nviz.attention_grid(maps, words, words)")
    True
    >>> ends_drawing_after_model("fig = go.Figure()\\nfig.show()")
    False
    >>> ends_drawing_after_model("viz.attention_grid(maps, words, words)\\nprint(maps.shape)")
    False
    >>> ends_drawing_after_model("g = model(x)\\nfig = viz.line_plot(g)\\nfig.show()\\nprint(g.max())")
    True
    >>> ends_drawing_after_model("g = model(x)\\nviz.line_plot(g).show()\\nfor k in g:\\n    print(k)")
    True
    >>> ends_drawing_after_model("g = model(x)\\nprint(g.max())")
    False
    """
    statements = _statements(source)
    while len(statements) > 1 and _only_prints(statements[-1]):
        statements.pop()
    tail = len(statements)
    while tail and _draws(statements[tail - 1]):
        tail -= 1
    return 0 < tail < len(statements) and any(_DRAWS.search(s) for s in statements[tail:])


def _shown(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and not FOLDED_TAGS & set(cell.metadata.get("tags", []))


# Shown cells (by cell id) that end drawing after model code but cannot be split at one statement boundary: the
# drawing code interleaves with model code, or the model is computed inside the drawing code, so the split needs a
# person. Each entry may only go away.
DRAWING_LEFT_IN = {
    "b5452f04",  # 07: the ONNX translator check ends with the live translator's page
}


def folding_problems(nb: nbformat.NotebookNode) -> list[str]:
    """The page's first shown code cell imports or draws; a cell that only draws is shown unfolded; a shown cell
    computes and then draws (split it: the drawing half folded)."""
    problems = []
    shown = [(i, c) for i, c in enumerate(nb.cells) if _shown(c)]
    if shown and (imports_only(shown[0][1].source) or draws_only(shown[0][1].source)):
        problems.append(f"cell {shown[0][0]}: the first code a reader sees only imports or draws: fold it (hide-input)")
    problems += [
        f"cell {i}: it only draws or builds a control: fold it (tag hide-input)"
        for i, c in shown[1:]
        if draws_only(c.source) and not imports_only(c.source)
    ]
    problems += [
        f"cell {i}: it computes and then draws: split it after the model code and fold the drawing half (hide-input)"
        for i, c in shown
        if CHECK_TAG not in c.metadata.get("tags", [])
        and c.get("id") not in DRAWING_LEFT_IN
        and not draws_only(c.source)
        and ends_drawing_after_model(c.source)
    ]
    return problems


def checks_per_section(nb: nbformat.NotebookNode) -> dict[str, int]:
    """The number of check cells in each '## ' section that has more than one."""
    counts: dict[str, int] = {}
    section = "(opening)"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            headings = re.findall(r"^## (.*)$", cell.source, re.M)
            section = headings[-1] if headings else section
        elif CHECK_TAG in cell.metadata.get("tags", []):
            counts[section] = counts.get(section, 0) + 1
    return {name: n for name, n in counts.items() if n > 1}


FOLDING_PAGES = [p for p in CHAPTERS if p.name != "06c_the_whole_model.ipynb"]  # 6c: its own engineer's page


@pytest.mark.parametrize("path", FOLDING_PAGES, ids=_ids(FOLDING_PAGES))
def test_the_model_in_front_and_the_machinery_folded(path: Path) -> None:
    nb = _read(path)
    problems = folding_problems(nb)
    assert not problems, problems


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_one_check_per_section(path: Path) -> None:
    crowded = checks_per_section(_read(path))
    assert not crowded, f"sections with more than one check cell: {crowded}; merge them into one at the section's end"


def test_the_folding_rules_catch_a_planted_fault() -> None:
    def page(*cells: tuple[str, list[str]]) -> nbformat.NotebookNode:
        return nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell(s, metadata={"tags": tags}) for s, tags in cells]
        )

    imports = ("import torch\nimport transformer_lib as tl\ntl.seed_everything(0)", ["hide-input"])
    model = ("model = tl.Transformer(cfg)\nprint(model(src, tgt).shape)", [])
    plot = ("fig = go.Figure()\nfig.add_trace(go.Scatter(y=[1, 2]))\nfig.show()", ["hide-input"])
    assert folding_problems(page(imports, model, plot)) == []
    assert folding_problems(page((imports[0], []), model, plot))[0].startswith("cell 0: the first code")
    assert folding_problems(page(imports, (plot[0], []), model))[0].startswith("cell 1: the first code")
    assert folding_problems(page(imports, model, (plot[0], []))) == [
        "cell 2: it only draws or builds a control: fold it (tag hide-input)"
    ]
    assert folding_problems(page(imports, (model[0] + "\n" + plot[0], []))) == [
        "cell 1: it computes and then draws: split it after the model code and fold the drawing half (hide-input)"
    ]
    check = {"tags": ["hide-cell", CHECK_TAG]}
    two_checks = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("## 1.1 A"),
            nbformat.v4.new_code_cell("assert 1", metadata=check),
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("assert x", metadata=check),
            nbformat.v4.new_markdown_cell("## 1.2 B"),
            nbformat.v4.new_code_cell("assert 2", metadata=check),
        ]
    )
    assert checks_per_section(two_checks) == {"1.1 A": 2}


# Every rule above and below that takes one page (``-k NN_name`` runs each on a new chapter); the list sits at the
# end of the file so that it can name the rules defined after the tiny page's test
PAGE_RULES = [
    test_committed_without_outputs,
    test_chapter_imports_the_library_and_fixes_seeds,
    test_chapter_runs_torch_on_one_thread,
    test_chapter_does_not_redefine_library_names,
    test_chapter_is_listed_in_the_toc,
    test_no_formula_line_starts_like_a_list_item,
    test_live_controls_show_no_dead_widget_on_the_site,
    test_chapter_opens_on_colab_with_its_library,
    test_chapter_opens_with_its_goal_prerequisites_and_time,
    test_chapter_opens_with_its_part_of_figure_1,
    test_tool_boxes_point_forward_with_a_link,
    test_chapter_ends_with_a_summary_and_folded_exercises,
    test_folded_blocks_use_the_form_that_folds_everywhere,
    test_solution_code_cells_are_folded_in_jupyterlab_too,
    test_the_model_in_front_and_the_machinery_folded,
    test_one_check_per_section,
]


def test_the_tiny_page_is_held_to_every_page_rule() -> None:
    """Each test of this file that takes one page is in PAGE_RULES (the check cells' rule runs as
    check_cell_problems), so that a rule added later holds the tiny page, and CONTRIBUTING's steps, to it too."""
    per_page = {
        name
        for name, test in globals().items()
        if name.startswith("test_")
        and any(mark.name == "parametrize" and mark.args[0] == "path" for mark in getattr(test, "pytestmark", []))
    }
    missing = per_page - {rule.__name__ for rule in PAGE_RULES} - {"test_check_cells_assert_and_are_hidden"}
    assert not missing, f"page rules that the tiny page is not held to: {sorted(missing)}; add them to PAGE_RULES"

"""A solution states the number its cell prints, and so does the prose of every page.

Each chapter exercise has a folded solution that states its result, and after it a ``# Solution to exercise N``
cell that runs the experiment, prints what it measured and asserts it (``tests/test_notebooks.py`` checks that
shape). The assert bounds the measurement; this test checks the *text*: every decimal number and every percentage
in a solution's text must be printed by its cell, to the digits the text gives (a stated 0.13 matches a printed
0.1267 or 0.13, not 0.14), unless the exercise itself gives it (its question, its hint or the cell's source) or it
names a section (4.4, "section 5.4"). A retyped number that a rerun moved, a rounding off by one digit or a
percentage from an older run fails here with the number and what the cell printed.

The body of each page (its prose outside the exercises) is held to the same rule, section by section: every decimal
and percentage is printed (or glued with ``myst_nb.glue``) by a cell of its '## ' section (the summary and the
opening: of the page), or is a setting or a bound of the page's code (``dropout=0.1``, ``assert share > 0.7``; a
value the code only compares for equality is a measurement retyped, and does not count), or is the paper's
(``GIVEN``, per page, each with its source). The book prints rather than glues: jupyterlab-myst, which renders the
notebooks in JupyterLab, has no ``glue`` role and shows a glued number as its key (``final_loss:.2f``).

The executed notebooks come, in this order, from a folder named by ``STATED_NUMBERS_EXECUTED`` (a copy counts only
if its code is the notebook's), from the notebook stage's copies in ``_build/.executed`` (book/conftest.py keeps
them; ``scripts/test_all.sh`` runs this test after that stage, with the unit tests), from the build's
jupyter-cache when it holds the current notebook, or from running the notebook here (slow: about a minute each).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PAGES = sorted(
    p for p in BOOK.glob("*.ipynb") if re.match(r"(\d\d[a-z]?|appendix)_", p.name) and "## Exercises" in p.read_text()
)
SOLUTION = re.compile(r"^<details class=\"solution\">\n<summary>Solution</summary>\n(.*?)^</details>", re.M | re.S)
# a decimal (0.13) or a percentage (32%, 4.5 %), the kinds a measurement gives; not a part of 3.2.1, of an exponent
# 10^{-6} or of a name. Whole numbers are left out: most are the exercise's settings (60 steps, d_k = 32).
STATED = re.compile(
    r"(?<![\w.,^{\\-])(\d+\.\d+(?:e-?\d+)?|\d+(?=\s?%))(?![.,]?\d)(\s?%|\s*(?:\\cdot|\\times|×)\s*10\^\{?(-?\d+)\}?)?"
)
PRINTED = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
SECTION = re.compile(r"^#+ (\d+\.\d+) ", re.M)


def _value(text: str) -> tuple[float, float]:
    """A stated number's value and half a unit of its last digit: '1.50' -> (1.5, 0.005), '5.5e-07' -> (5.5e-07,
    5e-09)."""
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(text), 0.5 * 10 ** (int(exponent or 0) - decimals)


def unprinted(stated: str, given: str, printed: str, sections: frozenset[str] = frozenset()) -> list[str]:
    """The numbers of ``stated`` that ``printed`` does not show to their digits and ``given`` does not give.

    >>> unprinted("the loss falls to 1.31, 32% of its start", "", "loss 1.3112, share 0.318")
    []
    >>> unprinted("the loss falls to 1.33", "", "loss 1.3112")
    ['1.33']
    """
    shown = [float(x) for x in PRINTED.findall(printed)]
    missing = []
    for match in STATED.finditer(stated):
        number, percent = match.group(1), "%" in (match.group(2) or "")
        named = re.search(r"(section|§|table|chapter)s?\s*(\d+\.\d+,?\s*(and|or)?\s*)*$", stated[: match.start()], re.I)
        if number in sections or named or re.search(rf"(?<![\d.]){re.escape(number)}(?![\d]|\.\d)", given):
            continue
        value, half_unit = _value(number + (f"e{match.group(3)}" if match.group(3) else ""))  # 4.7 \cdot 10^{11}
        candidates = shown + ([100 * x for x in shown] if percent else [])
        if not any(abs(x - value) <= half_unit * (1 + 1e-9) for x in candidates):
            missing.append(number + ("%" if percent else ""))
    return missing


def exercises(nb: nbformat.NotebookNode) -> dict[int, dict[str, str]]:
    """Each exercise under '## Exercises': its solution text, what it gives, and what its solution cells print."""
    found: dict[int, dict[str, str]] = {}
    current, inside = None, False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for piece in re.split(r"(?=^## )", cell.source, flags=re.M):
                if piece.startswith("## "):
                    inside, current = piece.startswith("## Exercises"), None
                if not inside:
                    continue
                for text in re.split(r"(?=^\*\*\d+\.\*\* )", piece, flags=re.M):
                    number = re.match(r"\*\*(\d+)\.\*\* ", text)
                    if number:
                        current = int(number.group(1))
                        found[current] = {"stated": "", "given": "", "printed": ""}
                    if current is None:
                        continue
                    solutions = SOLUTION.findall(text)
                    found[current]["stated"] += "\n".join(solutions)
                    found[current]["given"] += SOLUTION.sub("", text)
        elif inside and current is not None and cell.source.startswith("# Solution"):
            found[current]["given"] += "\n" + cell.source
            for output in cell.get("outputs", []):
                if output.output_type == "stream":
                    found[current]["printed"] += output.text
                elif "text/plain" in output.get("data", {}):
                    found[current]["printed"] += output.data["text/plain"]
    return found


def _same_code(a: nbformat.NotebookNode, b: nbformat.NotebookNode) -> bool:
    def code(nb: nbformat.NotebookNode) -> list[str]:
        return [c.source for c in nb.cells if c.cell_type == "code"]

    return code(a) == code(b)


def _with_outputs(nb: nbformat.NotebookNode, run: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` (today's text) with the outputs of ``run``, an execution of the same code."""
    for cell, ran in zip(
        (c for c in nb.cells if c.cell_type == "code"), (c for c in run.cells if c.cell_type == "code"), strict=True
    ):
        cell.outputs = ran.outputs
    return nb


def executed(path: Path) -> nbformat.NotebookNode:
    """The notebook's text with its outputs: from a copy in $STATED_NUMBERS_EXECUTED, the build's cache, or a run here.
    The text is always today's, so that a number retyped after the run is compared too."""
    nb = nbformat.read(path, as_version=4)
    folder = os.environ.get("STATED_NUMBERS_EXECUTED")
    if folder and (Path(folder) / path.name).is_file():
        copy = nbformat.read(Path(folder) / path.name, as_version=4)
        if _same_code(copy, nb):
            return _with_outputs(nb, copy)
    kept = ROOT / "_build" / ".executed" / path.relative_to(ROOT)  # as the notebook stage (nbval) ran it
    if kept.is_file():
        copy = nbformat.read(kept, as_version=4)
        if _same_code(copy, nb):
            return _with_outputs(nb, copy)
    cache_dir = ROOT / "_build" / ".jupyter_cache"
    if (cache_dir / "global.db").is_file():
        from jupyter_cache import get_cache

        cache = get_cache(cache_dir)
        try:
            return _with_outputs(nb, cache.get_cache_bundle(cache.match_cache_notebook(nb).pk).nb)
        except KeyError:
            pass
    from nbclient import NotebookClient

    from transformer_lib.site.execution import SlicedPollKernelManager  # without it a cell can stall to its timeout

    NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(BOOK)}},
        kernel_manager_class=SlicedPollKernelManager,
    ).execute()
    return nb


def test_a_retyped_number_fails() -> None:
    printed = "steps behind: {60: 21, 120: 70} | loss at step 60: {'scaled': 1.31, 'unscaled': 1.97} | 0.318"
    given = "Train for 60 steps with four heads of d_k = 32."
    good = "It is 21 steps behind at step 60 and 70 at step 120; its loss is 1.97 against 1.31 (32%, section 4.5)."
    assert unprinted(good, given, printed, frozenset({"4.5"})) == []
    assert unprinted(good.replace("1.97", "1.96"), given, printed, frozenset({"4.5"})) == ["1.96"]  # off by a digit
    assert unprinted(good.replace("32%", "35%"), given, printed, frozenset({"4.5"})) == ["35%"]  # an older run
    assert unprinted("1.9 to 2.0", given, printed) == ["1.9"]  # a range where the cell prints one number
    assert unprinted("about 0.017 of it", "", "0.22") == ["0.017"]  # a result that no cell prints
    assert unprinted("5.5e-07 against 0.22", "", "{'a': '5.5e-07', 'b': '0.22'}") == []
    assert unprinted("5.4e-07", "", "5.5e-07") == ["5.4e-07"]
    assert unprinted("about $4.7 \\cdot 10^{11}$ and 3 × 10^8", "", "4.74e+11 and 3.1e+08") == []
    assert unprinted("as section 5.4 and sections 4.4 and 4.5 show", "", "") == []
    assert unprinted("see §3.2.1 and 1,500 tokens; Var = 0.8", "", "0.80") == []  # 0.8 is 0.80


@pytest.mark.executed  # after the notebook stage, which keeps each page as it ran (scripts/test_all.sh)
@pytest.mark.slow
@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_solutions_state_the_numbers_their_cells_print(path: Path) -> None:
    nb = executed(path)
    sections = frozenset(SECTION.findall("\n".join(c.source for c in nb.cells if c.cell_type == "markdown")))
    problems = {
        number: (missing, parts["printed"][-600:])
        for number, parts in exercises(nb).items()
        if (missing := unprinted(parts["stated"], parts["given"], parts["printed"], sections))
    }
    assert not problems, "\n".join(
        f"exercise {n}: states {missing}, which its solution cell does not print; it printed:\n{printed}"
        for n, (missing, printed) in problems.items()
    )


# ---------------------------------------------------------------------------------------------------------------------
# The body of each page: its prose outside '## Exercises' (whose solutions the test above reads)

BODY_PAGES = sorted(
    p for p in BOOK.glob("*.ipynb") if re.match(r"(\d\d[a-z]?|appendix)_", p.name) or p.name == "intro.ipynb"
)
# Every section number of the book ("6.7", "4.5"): a page may name another chapter's section without the word.
BOOK_SECTIONS = frozenset(
    number
    for p in BODY_PAGES
    for c in nbformat.read(p, as_version=4).cells
    if c.cell_type == "markdown"
    for number in SECTION.findall(c.source)
)
# What the prose may state that no cell of the page prints or uses: the paper's numbers (and other papers'), and
# arithmetic a reader can redo in their head. Each entry says where it comes from; a measurement never goes here.
GIVEN: dict[str, dict[str, str]] = {
    "01_why_not_rnn.ipynb": {"0.98": "the paper's Adam beta_2 (§5.3)", "0.999": "PyTorch's default beta_2"},
    "02_tokens_and_embeddings.ipynb": {"0.98": "the paper's Adam beta_2 (§5.3)"},
    "04_attention.ipynb": {"2.30": "ln 10, the entropy of a uniform row of 10"},
    "08_training.ipynb": {
        "4.5": "the paper's WMT 2014 English-German pairs, in millions (§5.1)",
        "27.3": "the paper's Table 2: base model, EN-DE",
        "28.4": "the paper's Table 2: big model, EN-DE",
        "38.1": "the paper's Table 2: base model, EN-FR",
        "41.8": "the paper's Table 2: big model, EN-FR",
        "1.8": "Post (2018): tokenization and reference choices move BLEU by up to 1.8 points",
        "0.3": "the paper's dropout for the big English-German model (§6.1)",
        "0.6": "the paper's length penalty alpha for beam search (§6.1)",
    },
    "appendix_notes_checked.ipynb": {
        "0.81": "0.9 squared: dropout 0.1 applied twice",
        "22.6": "the square root of 512",
        "25.7": "the paper's Table 3 (E): learned positions, dev BLEU",
        "25.8": "the paper's Table 3: sinusoids, dev BLEU",
        "4.92": "the paper's Table 3: their perplexity",
    },
}
_GLUED = re.compile(r"\{glue(?::\w+)?\}`[^`]*`")  # a glued number: what the build put there, nothing retyped
_NOT_PROSE = re.compile(r"`[^`\n]*`|\]\([^)\s]*\)|^\([\w-]+\)=$|\{cite:\w+\}`[^`]*`", re.M)  # code, link targets


_LEFT_OUT = re.compile(r"^## (?:\d+\.\d+ )?(?:Exercises|References)\b")  # solutions: the test above
_WHOLE_PAGE = re.compile(r"^(?:## (?:\d+\.\d+ )?Summary\b|$)")  # the summary and the opening restate the sections


def sections(nb: nbformat.NotebookNode) -> list[tuple[str, str, str]]:
    """The page's prose by '## ' section, each with what its cells print: (title, prose, printed). The prose is
    without glue roles, inline code and link targets; the exercises and references are left out. The summary and the
    opening (before the first section) get what the whole page prints, as they restate its results."""
    found: list[tuple[str, list[str], list[nbformat.NotebookNode]]] = [("", [], [])]
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            found[-1][2].append(cell)
            continue
        for piece in re.split(r"(?=^## )", cell.source, flags=re.M):
            if piece.startswith("## "):
                found.append((piece.split("\n")[0], [], []))
            found[-1][1].append(piece)
    everything = printed_by(nb.cells)
    return [
        (
            title,
            _NOT_PROSE.sub("", _GLUED.sub("", "\n".join(prose))),
            everything if _WHOLE_PAGE.match(title) else printed_by(cells),
        )
        for title, prose, cells in found
        if not _LEFT_OUT.match(title)
    ]


def printed_by(cells: list[nbformat.NotebookNode]) -> str:
    """Everything these cells printed or displayed as text, glued values included (a glue's output is
    ``application/papermill.record/text/plain``)."""
    texts = []
    for cell in cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if output.output_type == "stream":
                texts.append(output.text)
            for mime, value in output.get("data", {}).items():
                if mime.endswith("text/plain") or mime in ("text/html", "text/markdown"):
                    texts.append(value if isinstance(value, str) else "".join(value))
    return "\n".join(texts)


def code_numbers(code: str) -> frozenset[float]:
    """The decimal constants of ``code`` that are settings (``dropout=0.1``) or bounds (``assert w > 0.7``): not the
    ones it only compares for equality (``assert round(loss, 2) == 1.34``), which are a measurement retyped, and not
    the ones in comments or strings.

    >>> sorted(code_numbers("model = f(p=0.1)\\nassert w > 0.7 and round(loss, 2) == 1.34  # 0.5\\n%timeit f()"))
    [0.1, 0.7]
    """
    tree = ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines()))
    compared = {
        id(node)
        for compare in ast.walk(tree)
        if isinstance(compare, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq)) for op in compare.ops)
        for side in [compare.left, *compare.comparators]
        for node in ast.walk(side)
    }
    return frozenset(
        round(node.value, 9)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and type(node.value) is float and id(node) not in compared
    )


def unaccounted(prose: str, printed: str, code: str, given: dict[str, str]) -> list[str]:
    """The decimals and percentages of ``prose`` that ``printed`` does not show, that are not a setting or a bound of
    ``code`` (:func:`code_numbers`: 'more than 0.7' with ``assert ... > 0.7``; a percentage as a fraction or a
    factor: 'at least 95%' with ``>= 0.95``, 'more than 20% higher' with ``> 1.2 * ...``) and not in ``given``.

    >>> unaccounted("the loss is 1.31; 95% right; beta_2 = 0.98", "loss 1.3112", "assert acc >= 0.95", {"0.98": ""})
    []
    >>> unaccounted("the loss falls to 1.33, more than 0.7", "loss 1.3112", "assert w > 0.75", {})
    ['1.33', '0.7']
    """
    in_code = code_numbers(code)
    missing = []
    for number in unprinted(prose, "", printed, BOOK_SECTIONS):
        value, percent = float(number.rstrip("%")), number.endswith("%")
        as_code = {round(value / 100, 9), round(1 + value / 100, 9)} if percent else {round(value, 9)}
        if number.rstrip("%") in given or as_code & in_code:
            continue
        missing.append(number)
    return missing


def test_a_retyped_number_in_the_body_fails() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("## 4.5 Training\nThe loss falls to 1.31, 21% of its start (section 4.5)."),
        nbformat.v4.new_code_cell("loss = train()\nassert loss < 1.5"),
        nbformat.v4.new_markdown_cell("## 4.6 Maps\nA head puts 0.31 of its weight on itself."),
        nbformat.v4.new_code_cell("print(share)"),
        nbformat.v4.new_markdown_cell("## Summary\n* The loss falls to 1.31.\n\n## Exercises\n**1.** Use 0.25."),
    ]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="loss 1.3112 (0.214 of the start)\n")]
    nb.cells[3].outputs = [nbformat.v4.new_output("stream", text="0.309\n")]
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")

    def missing(notebook: nbformat.NotebookNode) -> list[str]:
        return [n for _, prose, printed in sections(notebook) for n in unaccounted(prose, printed, code, {})]

    assert missing(nb) == []  # the summary's 1.31 is printed in 4.5; the exercise's 0.25 is the test above's
    retyped = nbformat.from_dict(nb)
    retyped.cells[0].source = retyped.cells[0].source.replace("1.31", "1.32")  # from an older run
    assert missing(retyped) == ["1.32"]
    retyped.cells[2].source = "## 4.6 Maps\nA head puts 0.21 of its weight on itself (21% above)."
    assert missing(retyped) == ["1.32", "0.21", "21%"]  # printed in 4.5, not here: a coincidence, not the number
    glued = nbformat.from_dict(nb)
    glued.cells[0].source = glued.cells[0].source.replace("1.31", "{glue:text}`final_loss:.2f`")
    assert missing(glued) == []
    assert unaccounted("It is 0.4 below.", "", code, {"0.4": "the paper's"}) == []


# A number the prose states as a bound ("more than 0.7", "at least 95%", "about 290 words", "faster by > 1.5×"). The
# bound belongs in the assert; the prose says what the section printed.
BOUND = re.compile(
    r"(?<![\w-])(more than|less than|fewer than|at least|at most|above|below|within|about|>|<|≥|≤|\\geq|\\leq)\s*"
    r"\$?(\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)(\s?%|\s?×|\s+times\b)?(?![\d.,]?\d)",
    re.I,
)


def stated_bounds(prose: str, printed: str, given: dict[str, str]) -> list[str]:
    """The bounds of ``prose`` where the section prints the value: a decimal, a percentage or a factor after "more
    than", "at least", "about", ">", "≥"... that the section does not print itself, and a whole number after "about"
    when the section prints a whole number within 5% of it that is not it ("about 290 words" where 287 is printed). A
    whole number after another bound word ("at most 11 words", "T > 1") is a setting, and the paper's numbers
    (``given``) are the paper's.

    >>> stated_bounds("more than 0.7 of its weight, at least 95% right, about 290 words", "0.858 99.17% 287 words", {})
    ['more than 0.7', 'at least 95%', 'about 290']
    >>> stated_bounds("0.858 of its weight, 99.17% right, 287 words, at most 11 words", "0.858 0.9917 287", {})
    []
    >>> stated_bounds("a gap of at most 1.9e-06, within 5e-06", "max gap 1.9e-06", {})  # the exponent is the number's
    ['within 5e-06']
    >>> stated_bounds("about 20 seconds; about 37,000 tokens; below 0.5", "the loss 1.31", {"37,000": "", "0.5": ""})
    []
    """
    shown = [float(x) for x in PRINTED.findall(printed.replace(",", ""))]
    counts = [float(x) for x in PRINTED.findall(printed.replace(",", "")) if "." not in x and "e" not in x]
    found = []
    for match in BOUND.finditer(prose):
        word, number, unit = match.group(1), match.group(2).rstrip(","), (match.group(3) or "").strip()
        if number in given or number.rstrip("0").rstrip(".") in given:
            continue
        value, half_unit = _value(number.replace(",", ""))
        values = [value, value / 100] if unit == "%" else [value]
        if any(abs(x - v) <= half_unit * (1 + 1e-9) * (v / value if value else 1) for x in shown for v in values):
            continue  # printed to the digits the prose gives: the prose states the value, not a bound
        if "." not in number and "e" not in number.lower() and not unit:
            if word.lower() != "about" or not any(x != value and abs(x - value) <= 0.05 * value for x in counts):
                continue  # a whole number: a setting ("at most 11 words"), unless the section prints a count it rounds
        found.append(f"{word} {number}{'%' if unit == '%' else '×' if unit else ''}")
    return found


def test_a_bound_in_the_prose_fails_where_the_section_prints_the_value() -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("## 4.5 Training\nThe unscaled model puts 0.858 of its weight on one key."),
        nbformat.v4.new_code_cell("share = top_share()\nprint(f'{share:.3f}')"),
        nbformat.v4.new_code_cell("assert share > 0.7", metadata={"tags": ["hide-cell", "text-check"]}),
    ]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="0.858\n")]
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")

    def problems(notebook: nbformat.NotebookNode) -> list[str]:
        return [
            n
            for _, prose, printed in sections(notebook)
            for n in unaccounted(prose, printed, code, {}) + stated_bounds(prose, printed, {})
        ]

    assert problems(nb) == []
    bounded = nbformat.from_dict(nb)
    bounded.cells[0].source = bounded.cells[0].source.replace("0.858", "more than 0.7")
    assert unaccounted(sections(bounded)[1][1], sections(bounded)[1][2], code, {}) == []  # the assert's bound
    assert problems(bounded) == ["more than 0.7"]  # ... is no longer enough: the section printed 0.858


@pytest.mark.executed  # after the notebook stage, which keeps each page as it ran (scripts/test_all.sh)
@pytest.mark.slow
@pytest.mark.parametrize("path", BODY_PAGES, ids=[p.name for p in BODY_PAGES])
def test_the_prose_states_the_numbers_its_cells_print(path: Path) -> None:
    """Every decimal and percentage of a page's prose is printed (or glued) by a cell of its section (the summary:
    of the page), is a setting or a bound in the page's code, or is the paper's (``GIVEN``, each with its source).
    A number retyped from a run fails here when a rerun or a library change moves it."""
    nb = executed(path)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    problems = {
        title or "(opening)": missing
        for title, prose, printed in sections(nb)
        if (
            missing := unaccounted(prose, printed, code, GIVEN.get(path.name, {}))
            + stated_bounds(prose, printed, GIVEN.get(path.name, {}))
        )
    }
    assert not problems, (
        f"{path.name}: the prose states numbers that no cell of its section prints and no code or paper gives: "
        f"{problems}. Print each from the cell that computes it (or glue it) and state what it printed, rounded as "
        "printed, rather than a bound (the bound belongs in the assert); for a number of the paper, add it to GIVEN "
        "with its source"
    )

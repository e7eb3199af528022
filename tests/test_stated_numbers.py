"""A solution states the number its cell prints.

Each chapter exercise has a folded solution that states its result, and after it a ``# Solution to exercise N``
cell that runs the experiment, prints what it measured and asserts it (``tests/test_notebooks.py`` checks that
shape). The assert bounds the measurement; this test checks the *text*: every decimal number and every percentage
in a solution's text must be printed by its cell, to the digits the text gives (a stated 0.13 matches a printed
0.1267 or 0.13, not 0.14), unless the exercise itself gives it (its question, its hint or the cell's source) or it
names a section (4.4, "section 5.4"). A retyped number that a rerun moved, a rounding off by one digit or a
percentage from an older run fails here with the number and what the cell printed.

The executed notebooks come, in this order, from a folder named by ``STATED_NUMBERS_EXECUTED`` (a copy counts only
if its code is the notebook's), from the notebook stage's copies in ``_build/.executed`` (book/conftest.py keeps
them; ``scripts/test_all.sh`` runs this test right after that stage, marked ``executed``), from the build's
jupyter-cache when it holds the current notebook, or from running the notebook here (slow: about a minute each).
"""

from __future__ import annotations

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

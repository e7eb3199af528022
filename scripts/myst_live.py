"""Rewrite the notebooks' folded blocks (hints, solutions) as HTML ``<details>``, which folds everywhere.

The old form, a MyST dropdown::

    :::{admonition} Hint
    :class: dropdown
    Body.
    :::

folds on the website and in JupyterLab with jupyterlab-myst, but Colab (plain CommonMark) prints it as raw text,
solution included, right under the question. The new form::

    <details class="hint">
    <summary>Hint</summary>

    Body.

    </details>

folds in all three: Sphinx passes the HTML through, jupyterlab-myst renders a ``<details>`` element, and any
CommonMark renderer parses the body (between blank lines) as Markdown inside it. The class is the title in lower
case (``hint``, ``solution``); ``book/_static/details.css`` styles the blocks on the website.

Converts ``:::{admonition} TITLE`` with a ``:class:`` that names ``dropdown``, and ``{dropdown} TITLE``, in colon
or backtick fences, in every markdown cell of every notebook under ``book/`` and ``assignments/``. Only the fence
and option lines change; the body is kept line for line. Running it again changes nothing (the new form has no
fence left to match). A solution written as a code cell (``# Solution ...``, tagged ``hide-cell`` for the site) gets
JupyterLab's own fold in its metadata. ``tests/test_notebooks.py`` fails while any old form or open solution remains.

    python scripts/myst_live.py           rewrite in place, print what changed
    python scripts/myst_live.py --check   change nothing; exit 1 if a notebook still holds the old form
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("book", "assignments")

# A fence of 3+ colons or backticks opening an admonition or a dropdown, its option lines, its body, and the
# closing fence of the same characters (the backreference). Nested fences inside a hint are not expected.
FOLDED = re.compile(
    r"^(?P<fence>:{3,}|`{3,})\{(?P<kind>admonition|dropdown)\}[ \t]*(?P<title>[^\n]*)\n"
    r"(?P<options>(?::[\w-]+:[^\n]*\n)*)"
    r"(?P<body>.*?)\n?"
    r"^(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
CLASS_OPTION = re.compile(r"^:class:[ \t]*(?P<classes>[^\n]*)$", re.MULTILINE)


def _folds(match: re.Match[str]) -> bool:
    """Whether a matched block is a folded one: every ``{dropdown}``, an admonition with class ``dropdown``."""
    if match["kind"] == "dropdown":
        return True
    option = CLASS_OPTION.search(match["options"])
    return option is not None and "dropdown" in option["classes"].split()


def _details(match: re.Match[str]) -> str:
    title = match["title"].strip() or "Details"
    css_class = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "details"
    body = match["body"].strip("\n")
    return f'<details class="{css_class}">\n<summary>{title}</summary>\n\n{body}\n\n</details>'


def convert_markdown(text: str) -> str:
    """The markdown ``text`` with every folded MyST block rewritten as ``<details>``; other blocks untouched."""
    return FOLDED.sub(lambda m: _details(m) if _folds(m) else m.group(0), text)


def has_old_form(text: str) -> bool:
    """Whether ``text`` still holds a folded MyST block that :func:`convert_markdown` would rewrite."""
    return any(_folds(m) for m in FOLDED.finditer(text))


def _split_lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def fold_solution_cell(cell: dict) -> bool:
    """Fold a ``# Solution`` code cell (tagged ``hide-cell``, folded on the site) in JupyterLab too, with JupyterLab's
    own cell metadata ``"jupyter": {"source_hidden": true, "outputs_hidden": true}``; True if the cell changed."""
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    if not source.startswith("# Solution") or "hide-cell" not in cell.get("metadata", {}).get("tags", []):
        return False
    hidden = cell["metadata"].setdefault("jupyter", {})
    if hidden.get("source_hidden") and hidden.get("outputs_hidden"):
        return False
    hidden.update(source_hidden=True, outputs_hidden=True)
    return True


def convert_notebook(path: Path, write: bool) -> int:
    """Rewrite ``path`` in place (when ``write``); return how many cells changed (markdown folds, solution cells)."""
    raw = path.read_text(encoding="utf-8")
    notebook = json.loads(raw)
    changed = 0
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "code":
            changed += fold_solution_cell(cell)
            continue
        if cell.get("cell_type") != "markdown":
            continue
        source = cell["source"]
        text = "".join(source) if isinstance(source, list) else source
        new = convert_markdown(text)
        if new != text:
            changed += 1
            cell["source"] = _split_lines(new) if isinstance(source, list) else new
    if changed and write:
        # The layout that nbformat and JupyterLab write (indent 1, keys sorted, UTF-8 kept), so that the diff
        # holds only the changed lines.
        path.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def notebooks(root: Path = ROOT) -> list[Path]:
    """Every notebook under the book's folders, checkpoints and build output left out."""
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.ipynb")):
            if not {"_build", ".ipynb_checkpoints"} & set(path.parts):
                found.append(path)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if the old form remains")
    args = parser.parse_args(argv)
    total = 0
    for path in notebooks():
        changed = convert_notebook(path, write=not args.check)
        if changed:
            total += changed
            verb = "would rewrite" if args.check else "rewrote"
            print(f"{path.relative_to(ROOT)}: {verb} {changed} cell(s)")
    if args.check and total:
        print("myst_live: old dropdown form found; run `python scripts/myst_live.py`", file=sys.stderr)
        return 1
    print(f"myst_live: {total} cell(s) {'to rewrite' if args.check else 'rewritten'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

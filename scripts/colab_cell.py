"""Put the same first code cell in every chapter: on Colab (or anywhere transformer_lib is missing) it fetches
the book and installs its library, then runs from the book's folder; elsewhere it does nothing. Hidden on the
website (tag remove-cell). Run after adding a chapter; tests/test_notebooks.py checks every chapter has it. Only
the notebooks whose cell it adds or changes are written.

    python scripts/colab_cell.py
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
MARK = "# Colab, or anywhere without the book:"


def cell_source() -> str:
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    return f'''{MARK} fetch it and install its library once (does nothing where transformer_lib is installed).
import importlib.util, os, subprocess, sys

if importlib.util.find_spec("transformer_lib") is None:
    subprocess.run(["git", "clone", "--depth", "1", "{url}", "transformer-book"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "transformer-book[book]"], check=True)
    sys.path.insert(0, os.path.abspath("transformer-book"))
    os.chdir("transformer-book/book")'''


def chapters() -> list[Path]:
    return sorted((ROOT / "book").glob("*.ipynb"))


def main() -> None:
    source = cell_source()
    for path in chapters():
        nb = nbformat.read(path, as_version=4)
        first = next((c for c in nb.cells if c.cell_type == "code"), None)
        if first is not None and first.source == source:
            continue  # unchanged: leave the file as it is (nbformat would reorder a hand-edited cell's metadata)
        if first is not None and first.source.startswith(MARK):
            first.source = source
        else:
            cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["remove-cell"]})
            nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0, cell)
        nbformat.write(nb, path)
        print(f"colab cell: {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

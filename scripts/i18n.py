"""The Chinese edition: extract the book's messages, keep the catalogs in step, build the Chinese site.

    .venv/bin/python scripts/i18n.py update   # messages -> _build/gettext/*.pot -> locale/zh_CN/LC_MESSAGES/*.po
    .venv/bin/python scripts/i18n.py build    # the Chinese site, from the same notebooks, into _build/html/zh

Both reuse the executed notebooks of the English build (``_build/.jupyter_cache``), so nothing runs twice; each has
its own doctree folder, because Sphinx cannot share one between builders or languages. ``update`` changes the
catalogs under ``locale/``: a changed English sentence comes back as a "fuzzy" entry, and the catalog test
(tests/test_i18n.py) fails until its translation is updated. ``build`` runs with -W, as the English build does.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
LANGUAGE = "zh_CN"


def _sphinx(builder: str, out: Path, doctrees: Path, overrides: dict) -> int:
    from jupyter_book.sphinx import build_sphinx

    result = build_sphinx(
        ROOT,
        out,
        noconfig=True,
        path_config=str(ROOT / "_config.yml"),
        doctreedir=doctrees,
        confoverrides={
            "nb_execution_cache_path": str(BUILD / ".jupyter_cache"),  # the English build's executed notebooks
            "latex_individualpages": False,  # jupyter-book's CLI always passes it
            **overrides,
        },
        builder=builder,
        warningiserror=True,
        keep_going=True,
        quiet=True,
    )
    if isinstance(result, Exception):
        print(f"i18n: the {builder} build failed: {result}", file=sys.stderr)
        return 1
    return int(result)


def extract(pot: Path = BUILD / "gettext") -> int:
    """The book's messages, one template per page, into ``pot`` (no notebook runs: outputs hold no messages)."""
    pot = Path(pot)
    return _sphinx("gettext", pot, pot.parent / f".doctrees-{pot.name}", {"nb_execution_mode": "off"})


def update() -> int:
    """Extract the messages and merge them into the Chinese catalogs (new ones empty, changed ones fuzzy)."""
    pot = BUILD / "gettext"
    if extract(pot) != 0:
        return 1
    done = subprocess.run(
        [sys.executable, "-m", "sphinx_intl", "update", "-p", str(pot), "-l", LANGUAGE, "-d", str(ROOT / "locale")],
        cwd=ROOT,
    )
    return done.returncode


def build() -> int:
    """The Chinese site into _build/html/zh."""
    start = time.perf_counter()
    code = _sphinx("html", BUILD / "html" / "zh", BUILD / ".doctrees-zh", {"language": LANGUAGE})
    if code == 0:
        print(f"i18n: built _build/html/zh in {time.perf_counter() - start:.0f} s")
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["update", "build"])
    args = parser.parse_args(argv)
    return update() if args.command == "update" else build()


if __name__ == "__main__":
    sys.exit(main())

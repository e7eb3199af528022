"""The Chinese edition: extract the book's messages, keep the catalogs in step, build the Chinese site.

    .venv/bin/python scripts/i18n.py update   # messages -> _build/gettext/*.pot -> locale/zh_CN/LC_MESSAGES/*.po
    .venv/bin/python scripts/i18n.py pending [--messages] [pages]  # pending messages: a count per page (and each)
    .venv/bin/python scripts/i18n.py build    # the Chinese site, from the same notebooks, into _build/html/zh
    .venv/bin/python scripts/i18n.py labels [book/04_attention ...]  # figure labels figures.po lacks
    .venv/bin/python scripts/i18n.py share-static  # after both builds: the Chinese pages use the English _static

The rule (transformer_lib/site/translated.py): translation follows, it does not block. Every page has a catalog; a
message its catalog has no Chinese for (new, changed: sphinx-intl marks it fuzzy, or absent) is *pending*: the
Chinese site shows it in English, on a page listed in ``TRANSLATED`` marked and under a notice ("Some paragraphs of
this page ... are shown in English"), on any other page under the notice that the whole page is not translated yet.
The catalog test (tests/test_i18n.py) and ``pending`` list them; what fails is a broken translation (a number,
formula, code span, role, link or glossary term of the English changed).

``update`` and ``build`` reuse the executed notebooks of the English build (``_build/.jupyter_cache``), so nothing
runs twice; each has its own doctree folder, because Sphinx cannot share one between builders or languages.
``update`` changes the catalogs under ``locale/``: a new page gets its catalog (every message empty), a changed
English sentence comes back as a "fuzzy" entry (pending: Sphinx never shows a fuzzy translation) until someone
translates it and removes the fuzzy mark. ``build`` runs with -W, as the English build does.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
LANGUAGE = "zh_CN"
# Words a label keeps in every language: code names (d_model, seq_len) and the names the glossary keeps (softmax)
_CODE_WORDS = re.compile(r"\w*_\w*|\b(?:softmax|relu|ReLU|LayerNorm|GELU|Adam|RNN|LSTM|GRU|BLEU|cpu|cuda)\b")


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
    import shutil

    start = time.perf_counter()
    # viewcode rewrites a module's page only when the module is newer than it, and share-static touches every page:
    # without this, the source pages would keep the words, templates and catalogs of the first build for ever
    shutil.rmtree(BUILD / "html" / "zh" / "_modules", ignore_errors=True)
    code = _sphinx("html", BUILD / "html" / "zh", BUILD / ".doctrees-zh", {"language": LANGUAGE})
    if code == 0:
        print(f"i18n: built _build/html/zh in {time.perf_counter() - start:.0f} s")
    return code


def missing_labels(pages: list[str]) -> dict[str, list[str]]:
    """Per page, the figure labels in the English build's executed notebooks (``_build/.jupyter_cache``) that
    :func:`transformer_lib.book.labels.translate` cannot translate (not in ``locale/zh_CN/LC_MESSAGES/figures.po``,
    no rule of ``label_patterns.PATTERNS``): what the Chinese site would still show in English."""
    from jupyter_cache import get_cache

    from transformer_lib.book.labels import figure_texts, translate

    if not (BUILD / ".jupyter_cache").is_dir():
        raise SystemExit("i18n labels: no _build/.jupyter_cache; build the English site first (scripts/build_book.sh)")
    cache = get_cache(BUILD / ".jupyter_cache")
    newest = {}  # page -> its newest cached run
    for record in sorted(cache.list_cache_records(), key=lambda r: r.created):
        if not Path(record.uri).is_file():
            continue  # a page since removed
        newest[Path(record.uri).resolve().relative_to(ROOT).with_suffix("").as_posix()] = record.pk
    found: dict[str, list[str]] = {}
    for page, pk in sorted(newest.items()):
        if pages and page not in pages:
            continue
        notebook = cache.get_cache_bundle(pk).nb
        missing: list[str] = []
        for cell in notebook.cells:
            for output in cell.get("outputs", []):
                figure = output.get("data", {}).get("application/vnd.plotly.v1+json")
                if figure is None:
                    continue
                for text in figure_texts(figure):
                    if "_" in text and re.fullmatch(r"[\w.=, ]+", text):
                        continue  # a code name (a diagram node's id, a slider's "kind=rnn, seq_len=16"): kept as is
                    untranslated = [
                        line
                        for line in text.split("<br>")
                        if re.search("[A-Za-z]{2}", _CODE_WORDS.sub("", line)) and translate(line, "zh") == line
                    ]
                    if untranslated and text not in missing:
                        missing.append(text)
        if missing:
            found[page] = missing
    return found


def share_static(site: Path = BUILD / "html") -> tuple[int, int]:
    """Let the Chinese pages load the English site's copy of every ``_static`` entry that is the same in both
    languages (plotly.js, MathJax, onnxruntime-web, the theme's scripts and styles: 30 MB), so that the site carries
    them once. An entry (a top-level file or folder of ``_static``) goes only when every file in it is identical, so
    that the files in it that refer to each other stay together; the Chinese pages' links to it gain one ``../``.
    Returns (entries shared, bytes saved)."""
    import filecmp
    import shutil

    english, chinese = site / "_static", site / "zh" / "_static"

    def same(a: Path, b: Path) -> bool:
        if a.is_file() and b.is_file():
            return filecmp.cmp(a, b, shallow=False)
        if not (a.is_dir() and b.is_dir()):
            return False
        names_a = sorted(x.name for x in a.iterdir())
        return names_a == sorted(x.name for x in b.iterdir()) and all(same(a / n, b / n) for n in names_a)

    shared = [e.name for e in sorted(chinese.iterdir()) if (english / e.name).exists() and same(e, english / e.name)]
    if not shared:
        return 0, 0
    files = [f for name in shared for f in [chinese / name, *(chinese / name).rglob("*")] if f.is_file()]
    saved = sum(f.stat().st_size for f in files)
    link = re.compile(r'((?:src|href)=")((?:\.\./)*)_static/(' + "|".join(re.escape(n) for n in shared) + r')([/"?#])')
    for page in (site / "zh").rglob("*.html"):
        if page.is_relative_to(chinese):
            continue
        text = page.read_text(encoding="utf-8")
        moved = link.sub(lambda m: f"{m[1]}{m[2]}../_static/{m[3]}{m[4]}", text)
        if moved != text:
            page.write_text(moved, encoding="utf-8")
    for name in shared:
        entry = chinese / name
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    return len(shared), saved


def pending(pot: Path | None = None) -> dict[str, list[str]]:
    """Per page, its pending messages (transformer_lib.site.translated: absent, empty or fuzzy in its catalog), for
    every page that has some: of the page's messages now where ``pot`` holds Sphinx's templates (``extract``),
    otherwise of its catalog's (what ``update`` last wrote)."""
    from babel.messages.pofile import read_po

    from transformer_lib.site.translated import pending_messages, read_catalog

    folder = ROOT / "locale" / LANGUAGE / "LC_MESSAGES"
    found = {}
    for po in sorted(p for p in folder.rglob("*.po") if p.parent != folder):
        page = po.relative_to(folder).with_suffix("").as_posix()
        messages = None
        if pot is not None and (pot / f"{page}.pot").is_file():
            with open(pot / f"{page}.pot", "rb") as f:
                messages = [m.id for m in read_po(f) if m.id]
        left = pending_messages(read_catalog(po), messages)
        if left:
            found[page] = left
    return found


def pending_report(found: dict[str, list[str]], totals: dict[str, int], show_messages: bool = False) -> str:
    """What ``scripts/i18n.py pending`` prints: a line per page (its pending messages, of how many), the messages
    themselves with ``show_messages``."""
    from transformer_lib.site.translated import TRANSLATED

    lines = []
    for page, messages in found.items():
        how = "changed or new, shown in English" if page in TRANSLATED else "page not translated yet, shown in English"
        lines.append(f"{page}: {len(messages)} of {totals.get(page, len(messages))} messages pending ({how})")
        if show_messages:
            lines.extend(f"    {m[:100]!r}" for m in messages)
    lines.append(f"{sum(len(m) for m in found.values())} messages pending on {len(found)} pages")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["update", "pending", "build", "labels", "share-static"])
    parser.add_argument("pages", nargs="*", help="labels and pending: the pages to look at (default: all)")
    parser.add_argument("--messages", action="store_true", help="pending: list each pending message too")
    args = parser.parse_intermixed_args(
        argv
    )  # "pending --messages book/intro" as well as "pending book/intro --messages"
    if args.command == "labels":
        for page, labels in missing_labels(args.pages).items():
            print(f"{page}:")
            print("".join(f"  {label!r}\n" for label in labels), end="")
        return 0
    if args.command == "pending":
        from transformer_lib.site.translated import read_catalog

        folder = ROOT / "locale" / LANGUAGE / "LC_MESSAGES"
        found = {p: m for p, m in pending().items() if not args.pages or p in args.pages}
        totals = {p: sum(1 for m in read_catalog(folder / f"{p}.po") if m.id) for p in found}
        print(pending_report(found, totals, args.messages))
        return 0
    if args.command == "share-static":
        entries, saved = share_static()
        print(f"i18n: the Chinese pages share {entries} entries of the English _static ({saved / 2**20:.0f} MB once)")
        return 0
    return update() if args.command == "update" else build()


if __name__ == "__main__":
    sys.exit(main())

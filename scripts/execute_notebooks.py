"""Execute the book's notebooks in parallel into the build's jupyter-cache, before `jupyter-book build` reads them.

Jupyter Book (myst-nb, execution mode "cache") runs every notebook that has no matching entry in
`_build/.jupyter_cache`, one after another. This script fills that cache first, with two notebooks at a time,
doing exactly what myst-nb would do for each (jupyter-cache's `single_nb_execution`: the same notebook reader,
the notebook's folder as working directory since `_config.yml` sets `run_in_temp: false`, the same per-cell
timeout, no errors allowed), with one difference: the kernel client waits in short slices
(transformer_lib.site.execution explains the stall this removes). The build then finds every notebook in the
cache ("Using cached notebook") and only renders.

A page runs again only when its code changed (jupyter-cache's own match), it is new (just added to ``_toc.yml``),
or a module it imports changed: each cache record keeps, in its data, the fingerprint of the modules the page
imports (``transformer_lib.site.page_dependencies``), and a record whose modules changed since is removed and its
page executed. The others stay cached, whatever else changed in the library.

A page that the notebook test (nbval, ``book/conftest.py``) already executed is not run again: its executed copy
in ``_build/.executed/`` goes into the cache when its fingerprint (the page's bytes and its modules' source)
matches the page as it is now.

    python scripts/execute_notebooks.py [--jobs 2] [--timeout 600]

Exit status 1 if a notebook failed; its traceback is printed and nothing is cached for it, so the build runs it
again and reports the same error.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution

from transformer_lib.site.execution import SlicedPollKernelManager
from transformer_lib.site.page_dependencies import fingerprint, modules_fingerprint

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"  # where jupyter-book 1 keeps it (myst-nb's execution_cache_path)
EXECUTED = ROOT / "_build" / ".executed"  # pages that nbval executed (book/conftest.py)


def toc_notebooks(toc: Path = ROOT / "_toc.yml") -> list[Path]:
    """The .ipynb pages listed in the table of contents, in its order."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                found.append(node["file"])
            if isinstance(node.get("root"), str):
                found.append(node["root"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(toc.read_text()))
    return [ROOT / f"{name}.ipynb" for name in found if (ROOT / f"{name}.ipynb").is_file()]


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_unused_widget_state(notebook: nbformat.NotebookNode) -> bool:
    """Remove the saved ipywidgets state: the website renders no widget view.

    A widget cannot recompute without a kernel: ``_config.yml`` drops the widget view's MIME type from what the site
    renders (a ``controls.live`` output shows its precomputed figure or HTML instead), but the state of its widgets,
    saved outputs included, would still be embedded in the page, with the JavaScript that reads it (85 KB of chapter
    3's page). Returns whether there was a state to drop.
    """
    return notebook.metadata.pop("widgets", None) is not None


def _execute(path: Path, timeout: int) -> tuple[Path, nbformat.NotebookNode, float, str | None]:
    notebook = nbformat.read(path, as_version=4)
    result = single_nb_execution(
        notebook,
        cwd=str(path.parent),
        allow_errors=False,
        timeout=timeout,
        meta_override=True,
        kernel_manager_class=SlicedPollKernelManager,
    )
    drop_unused_widget_state(notebook)
    return path, notebook, result.time, (result.exc_string if result.err is not None else None)


def executed_by_the_test(path: Path) -> nbformat.NotebookNode | None:
    """The page as the notebook test executed it, if that run saw the page and the library as they are now."""
    copy = EXECUTED / path.relative_to(ROOT)
    if not copy.is_file():
        return None
    notebook = nbformat.read(copy, as_version=4)
    kept = notebook.metadata.pop("tl_executed", {})
    return notebook if kept.get("fingerprint") == fingerprint(path, ROOT) else None


def cached(cache, path: Path) -> str | None:
    """Whether ``path`` is in the cache as it must be now: None if so, else why it runs again ("new or its code
    changed", "a module it imports changed"). A record whose modules changed is removed from the cache."""
    try:
        record = cache.match_cache_notebook(nbformat.read(path, as_version=4))
    except KeyError:
        return "new or its code changed"
    if record.data.get("modules") == modules_fingerprint(path, ROOT):
        return None
    cache.remove_cache(record.pk)
    return "a module it imports changed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at once (default 2)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell, as in _config.yml")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: expected a positive number, got {args.jobs}")

    cache = get_cache(str(CACHE))
    CACHE.mkdir(parents=True, exist_ok=True)
    todo = []
    for path in toc_notebooks():
        why = cached(cache, path)
        if why is None:
            continue
        executed = executed_by_the_test(path)
        if executed is None:
            todo.append(path)
            print(f"execute_notebooks: {path.relative_to(ROOT)} runs: {why}", flush=True)
        else:
            drop_unused_widget_state(executed)
            _cache(cache, path, executed, None)
            print(f"execute_notebooks: reused {path.relative_to(ROOT)} as the notebook test ran it", flush=True)
    print(f"execute_notebooks: {len(todo)} notebook(s) to run, {args.jobs} at a time", flush=True)
    failed = []
    start = time.time()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:  # the cache's database is written here only
        for path, notebook, seconds, error in pool.map(_execute, todo, [args.timeout] * len(todo)):
            name = path.relative_to(ROOT)
            if error is not None:
                failed.append(name)
                print(f"execute_notebooks: FAILED {name}\n{error}", flush=True)
                continue
            _cache(cache, path, notebook, seconds)
            print(f"execute_notebooks: {seconds:6.1f} s  {name}", flush=True)
    print(f"execute_notebooks: done in {time.time() - start:.0f} s", flush=True)
    return 1 if failed else 0


def _cache(cache, path: Path, notebook: nbformat.NotebookNode, seconds: float | None) -> None:
    record = cache.add_nb_to_project(str(path))
    # the modules' fingerprint: a later run re-executes the page when one of them changed (cached())
    data = {"execution_seconds": seconds, "modules": modules_fingerprint(path, ROOT)}
    cache.cache_notebook_bundle(
        CacheBundleIn(notebook, record.uri, data=data),
        check_validity=False,
        overwrite=True,
    )


if __name__ == "__main__":
    sys.exit(main())

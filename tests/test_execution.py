"""The build's notebook execution (transformer_lib.site.execution): a kernel client that cannot miss a ready reply;
which pages run again (transformer_lib.site.page_dependencies, scripts/execute_notebooks.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from queue import Empty

import pytest

from transformer_lib.site import execution, page_dependencies

ROOT = Path(__file__).resolve().parents[1]


def execute_notebooks():
    """scripts/execute_notebooks.py, imported as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _MissedWakeUpSocket:
    """A socket whose first poll misses the wake-up of a message that is already there (the build's stall)."""

    def __init__(self, ready_from_call: int) -> None:
        self.timeouts_ms: list[int] = []
        self.ready_from_call = ready_from_call

    async def poll(self, timeout_ms: int) -> int:
        self.timeouts_ms.append(timeout_ms)
        return int(len(self.timeouts_ms) >= self.ready_from_call)


def _channel(socket: _MissedWakeUpSocket) -> execution.SlicedPollChannel:
    channel = execution.SlicedPollChannel.__new__(execution.SlicedPollChannel)  # no real ZeroMQ socket needed
    channel.socket = socket

    async def recv() -> dict:
        return {"msg_type": "execute_reply"}

    channel._recv = recv
    return channel


def test_a_reply_whose_wake_up_was_missed_is_read_in_the_next_slice_not_at_the_cell_timeout() -> None:
    socket = _MissedWakeUpSocket(ready_from_call=2)
    msg = asyncio.run(_channel(socket).get_msg(timeout=600))
    assert msg == {"msg_type": "execute_reply"}
    # the stock channel asks for one poll of the whole 600 s; each of ours is one slice long at most
    assert len(socket.timeouts_ms) == 2 and max(socket.timeouts_ms) <= 1000 * execution.POLL_SLICE_S


def test_no_reply_still_ends_in_empty_at_the_deadline() -> None:
    socket = _MissedWakeUpSocket(ready_from_call=10**9)
    with pytest.raises(Empty):
        asyncio.run(_channel(socket).get_msg(timeout=0.05))
    assert 1 <= len(socket.timeouts_ms) and max(socket.timeouts_ms) <= 50


def test_the_kernel_manager_hands_out_sliced_channels() -> None:
    client = execution.SlicedPollKernelManager().client()
    assert client.shell_channel_class is execution.SlicedPollChannel
    assert client.iopub_channel_class is execution.SlicedPollChannel


def test_widget_state_is_dropped_since_the_site_renders_no_widget():
    import importlib.util

    import nbformat

    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    view = {"output_type": "display_data", "metadata": {}, "data": {module.WIDGET_VIEW: {"model_id": "m"}}}

    def notebook(tags):
        nb = nbformat.v4.new_notebook(metadata={"widgets": {"state": {"m": {}}}})
        nb.cells.append(nbformat.v4.new_code_cell("interact(...)", outputs=[view], metadata={"tags": tags}))
        return nb

    removed, shown = notebook(["remove-output"]), notebook([])  # a widget's output removed, or shown beside its
    assert module.drop_unused_widget_state(removed) and "widgets" not in removed.metadata  # precomputed view
    assert module.drop_unused_widget_state(shown) and "widgets" not in shown.metadata
    assert not module.drop_unused_widget_state(shown)  # nothing left to drop


# ---------------------------------------------------------------------------------------------------------------------
# Executing once per run: nbval's messages replayed into the page the build renders


def _message(msg_type: str, **content) -> dict:
    return {"msg_type": msg_type, "content": content, "header": {"msg_type": msg_type}, "parent_header": {}}


def test_replay_makes_the_outputs_nbclient_makes() -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# a page"),
            nbformat.v4.new_code_cell("print('a'); print('b')"),
            nbformat.v4.new_code_cell("from IPython.display import clear_output\nprint('old'); clear_output(); 1 + 1"),
            nbformat.v4.new_code_cell("f();  # a value kept quiet"),
        ]
    )
    idle = _message("status", execution_state="idle")
    messages = {
        1: [_message("stream", name="stdout", text="a\n"), _message("stream", name="stdout", text="b\n"), idle],
        2: [
            _message("stream", name="stdout", text="old\n"),
            _message("clear_output", wait=False),
            _message("execute_result", data={"text/plain": "2"}, metadata={}, execution_count=1),
            idle,
        ],
        3: [_message("execute_result", data={"text/plain": "'shown'"}, metadata={}, execution_count=1), idle],
    }
    info = {"name": "python", "pygments_lexer": "ipython3"}
    execution.replay(notebook, messages, info)
    first, second, third = notebook.cells[1:]
    assert [o.text for o in first.outputs] == ["a\n", "b\n"]  # one output a message, as nbclient keeps them
    assert [o.output_type for o in second.outputs] == ["execute_result"] and second.outputs[0].execution_count == 2
    assert third.outputs == []  # IPython hides the value of a cell ending with ";"
    assert [c.execution_count for c in notebook.cells[1:]] == [1, 2, 3]
    assert notebook.metadata["language_info"] == info


def _project(root: Path) -> Path:
    """A project with a package of four modules (``a`` imports ``.b`` inside a function; ``c`` and ``d`` are imported
    by no one the page imports) and a page that imports ``transformer_lib.a``; returns the page."""
    import nbformat

    package = root / "transformer_lib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from .b import x\n    return x\n")
    (package / "b.py").write_text("import json\n\nx = 1\n")
    (package / "c.py").write_text("from . import d\n")
    (package / "d.py").write_text("y = 2\n")
    page = root / "book" / "page.ipynb"
    page.parent.mkdir()
    cells = [nbformat.v4.new_code_cell("%matplotlib inline\nfrom transformer_lib import a\nimport numpy")]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), page)
    return page


def test_a_page_depends_on_the_modules_it_imports_transitively_and_no_others(tmp_path: Path) -> None:
    page = _project(tmp_path)
    found = [p.relative_to(tmp_path).as_posix() for p in page_dependencies.page_modules(page, tmp_path)]
    assert found == ["transformer_lib/__init__.py", "transformer_lib/a.py", "transformer_lib/b.py"]
    before, whole = page_dependencies.modules_fingerprint(page, tmp_path), page_dependencies.fingerprint(page, tmp_path)
    (tmp_path / "transformer_lib" / "d.py").write_text("y = 3\n")  # a module the page does not import
    assert page_dependencies.modules_fingerprint(page, tmp_path) == before
    assert page_dependencies.fingerprint(page, tmp_path) == whole
    (tmp_path / "transformer_lib" / "b.py").write_text("x = 2\n")  # imported through a
    assert page_dependencies.modules_fingerprint(page, tmp_path) != before
    assert page_dependencies.fingerprint(page, tmp_path) != whole


def test_the_modules_of_every_page_of_the_book_are_found() -> None:
    """Each page imports the core's package; the appendix on performance the benchmarks too; no page all of the
    book's figures (then a figure module's change would re-run every page)."""
    pages = execute_notebooks().toc_notebooks()
    modules = {
        page.stem: {p.relative_to(ROOT).as_posix() for p in page_dependencies.page_modules(page)} for page in pages
    }
    assert len(modules) >= 20 and all("transformer_lib/__init__.py" in found for found in modules.values())
    assert "benchmarks/memory.py" in modules["appendix_performance"]
    assert "transformer_lib/book/live_translator.py" in modules["07_cross_attention_and_decoding"]
    users = [page for page, found in modules.items() if "transformer_lib/book/live_translator.py" in found]
    assert sorted(users) == ["07_cross_attention_and_decoding", "intro"], users


def test_the_build_re_executes_a_page_only_when_its_code_or_one_of_its_modules_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbformat
    from jupyter_cache import get_cache

    script = execute_notebooks()
    page = _project(tmp_path)
    monkeypatch.setattr(script, "ROOT", tmp_path)
    cache = get_cache(str(tmp_path / "cache"))
    assert script.cached(cache, page) == "new or its code changed"
    script._cache(cache, page, nbformat.read(page, as_version=4), 0.1)
    assert script.cached(cache, page) is None
    (tmp_path / "transformer_lib" / "d.py").write_text("y = 3\n")  # not imported by the page: still cached
    assert script.cached(cache, page) is None
    (tmp_path / "transformer_lib" / "b.py").write_text("x = 2\n")  # imported through a: runs again
    assert script.cached(cache, page) == "a module it imports changed"
    assert cache.list_cache_records() == [], "the stale record was not removed"
    assert script.cached(cache, page) == "new or its code changed"


def test_the_build_reuses_a_page_only_as_the_test_ran_it_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat

    execute_notebooks = globals()["execute_notebooks"]()
    monkeypatch.setattr(execute_notebooks, "ROOT", tmp_path)
    monkeypatch.setattr(execute_notebooks, "EXECUTED", tmp_path / "_build" / ".executed")
    source = tmp_path / "book" / "page.ipynb"
    source.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), source)
    assert execute_notebooks.executed_by_the_test(source) is None  # the test did not run it
    ran = nbformat.read(source, as_version=4)
    ran.metadata["tl_executed"] = {"fingerprint": page_dependencies.fingerprint(source, tmp_path)}
    copy = tmp_path / "_build" / ".executed" / "book" / "page.ipynb"
    copy.parent.mkdir(parents=True)
    nbformat.write(ran, copy)
    reused = execute_notebooks.executed_by_the_test(source)
    assert reused is not None and "tl_executed" not in reused.metadata
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("2")]), source)  # the page changed
    assert execute_notebooks.executed_by_the_test(source) is None


def test_sphinx_re_reads_a_page_when_a_module_it_imports_or_the_site_changes(tmp_path: Path) -> None:
    """The extension notes, for a notebook page, the modules it imports and the site's rendering code as the page's
    dependencies (Sphinx re-reads a page when one of them is newer than its last reading); other pages get none."""
    noted: dict[str, set[str]] = {}

    class Env:
        docname = ""

        def doc2path(self, docname: str) -> str:
            return str(ROOT / "book" / docname) + (".md" if docname == "glossary" else ".ipynb")

        def note_dependency(self, filename: str) -> None:
            noted.setdefault(self.docname, set()).add(Path(filename).relative_to(ROOT).as_posix())

    class App:
        env = Env()

    for docname in ("intro", "glossary"):
        App.env.docname = docname
        page_dependencies._note_dependencies(App, docname, [""])
    assert {"transformer_lib/book/live_translator.py", "transformer_lib/site/figures.py"} <= noted["intro"]
    assert "transformer_lib/book/ablation.py" not in noted["intro"] and "glossary" not in noted

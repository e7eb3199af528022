"""The live notebooks in a real JupyterLab: every chapter page read as a student reads it.

Starts ``jupyter lab`` from this environment on 127.0.0.1 (a free port, a random token, no browser, settings and
workspaces in a temporary folder, news and update checks off) and stops it at the end, also on failure. Opens each
page ``book/*.ipynb`` in one JupyterLab tab in headless Chromium (every non-loopback request aborted; the front end
loads once per worker, each page is closed and its kernel shut down after its test; a page with no widget runs
nothing and opens with no kernel) and asserts:

* on a page with ipywidgets, the cells up to its first widget run without an error output (the first widget is
  found in the build's executed copy of the page, ``_build/.jupyter_cache``; without one, all cells run); every
  other cell's run is nbval's test (the notebooks stage), in the same kind of kernel, and no page runs twice here;
* no rendered markdown cell shows raw MyST (a colon or backtick fence, a role such as ``{cite:p}``, an option
  such as ``:class:``): jupyterlab-myst renders what the book uses, and what it cannot render must not show up;
* every hint and solution is folded (a closed ``<details>`` whose body is hidden) and opens on a click, and no
  "Solution" is visible outside one;
* on a page with ipywidgets, moving its first control (slider, dropdown, toggle buttons) changes the output.

Screenshots of each page with ``TL_SCREENSHOTS=1`` (tests/site_browser.py says where). Skipped, with a message,
without Chromium.
Run: ``pytest tests/test_jupyterlab.py -m jupyterlab`` (one page: ``-k 08_training``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from site_browser import CHROMIUM, screenshot  # and the browser fixture (offline: site_browser.OFFLINE): conftest.py

pytestmark = pytest.mark.jupyterlab

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PAGES = sorted(p.name for p in BOOK.glob("*.ipynb"))
CACHE = ROOT / "_build" / ".jupyter_cache"  # the build's executed notebooks (scripts/execute_notebooks.py)
EXECUTED = ROOT / "_build" / ".executed"  # the notebook stage's executed pages (book/conftest.py)
START_TIMEOUT_S = 120
RUN_TIMEOUT_MS = 600_000  # all cells of one page; the slowest takes ~15 s idle, a few times that under load
WIDGET_TIMEOUT_MS = 30_000
# Raw MyST that a reader must never see: fences, roles (by the names MyST and Jupyter Book define, so that the
# TeX source of a formula, say \text{softmax}, does not count), directive options, target labels.
RAW_MYST = re.compile(
    r":::|```\{|\{(?:cite|ref|numref|eq|doc|term|glue|abbr|download|math|sub|sup|prf)(?::[\w-]+)?\}"
    r"|^:(?:class|name|label|open):|^\([\w-]+\)=$",
    re.MULTILINE,
)
# JupyterLab settings for a quiet, deterministic test: every cell in the DOM (no windowing), no news or update
# checks (they would fetch from the internet), no autosave (the committed notebooks must stay without outputs).
SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (with its token) of a JupyterLab serving ``book/``; stopped when the module ends."""
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: install Debian's package with `apt-get install chromium`")
    home = tmp_path_factory.mktemp("jupyterlab")
    for name, values in SETTINGS.items():
        path = home / "settings" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        str(Path(sys.executable).parent / "jupyter"),
        "lab",
        "--no-browser",
        "--allow-root",  # CI runs as root in a container
        "--ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={BOOK}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: run all cells, read the cells' models
    ]
    log = (home / "lab.log").open("w")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not start in {START_TIMEOUT_S} s:\n{(home / 'lab.log').read_text()}")
                time.sleep(0.5)
        yield f"{base}/lab/tree/{{page}}?reset&token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


NOTEBOOK_JS = "window.jupyterapp.shell.currentWidget"
KERNEL_READY_JS = f"""() => {{
    const w = window.jupyterapp && {NOTEBOOK_JS};
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return !!(k && k.connectionStatus === 'connected' && k.status === 'idle' && w.content.widgets.length);
}}"""
# Done when every code cell with source, up to the cell given (-1: all), has an execution count and the kernel is
# idle, or when one failed (running stops there).
RUN_DONE_JS = f"""(last) => {{
    const w = {NOTEBOOK_JS};
    const code = w.content.widgets.filter((c, i) => (last < 0 || i <= last) && c.model.type === 'code'
        && c.model.sharedModel.getSource().trim());
    const failed = code.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
    const k = w.sessionContext.session.kernel;
    return failed || (k.status === 'idle' && code.every(c => c.model.executionCount !== null));
}}"""
ERRORS_JS = f"""() => {NOTEBOOK_JS}.content.widgets.flatMap((c, i) => c.model.type !== 'code' ? [] :
    c.model.outputs.toJSON().filter(o => o.output_type === 'error')
        .map(o => `cell ${{i}}: ${{o.ename}}: ${{o.evalue}}`))"""
# every markdown cell with text rendered, its text shown (the editor is hidden once rendered: innerText is what the
# renderer wrote); a page opened with no kernel gets here sooner than the renderer and must not be read half drawn
MARKDOWN_RENDERED_JS = f"""() => {{ const cells = {NOTEBOOK_JS}.content.widgets.filter(c => c.model.type === 'markdown'
        && c.model.sharedModel.getSource().trim());
    return cells.length > 0 && cells.every(c => c.node.classList.contains('jp-mod-rendered')
        && c.node.querySelector('.jp-Cell-inputArea').innerText.trim()); }}"""
# Text a reader sees in each rendered markdown cell, every fold opened (innerText leaves out what is hidden: the
# cell's hidden editor, and a closed <details>'s body, which is opened for the reading and closed again).
MARKDOWN_TEXT_JS = """() => [...document.querySelectorAll('.jp-Notebook .jp-MarkdownCell')].map(c => {
    const closed = [...c.querySelectorAll('details:not([open])')];
    closed.forEach(d => { d.open = true; });
    const text = c.querySelector('.jp-Cell-inputArea').innerText;
    closed.forEach(d => { d.open = false; });
    return text;
})"""
# Every <details> in rendered markdown: closed, body hidden, opens on a click (then closed again). And no visible
# element reading "Solution" outside a <summary>.
FOLDS_JS = """() => {
    const problems = [];
    let folds = 0;
    for (const [i, cell] of [...document.querySelectorAll('.jp-Notebook .jp-MarkdownCell')].entries()) {
        for (const d of cell.querySelectorAll('details')) {
            folds += 1;
            const summary = d.querySelector(':scope > summary');
            const title = summary ? summary.innerText.trim() : '(no summary)';
            const body = [...d.children].filter(e => e !== summary);
            const shown = () => body.some(e => e.checkVisibility() && e.innerText.trim());
            if (d.open || shown()) problems.push(`markdown cell ${i}: "${title}" is not folded`);
            if (!summary) { problems.push(`markdown cell ${i}: a <details> without <summary>`); continue; }
            summary.click();
            if (!shown()) problems.push(`markdown cell ${i}: "${title}" shows nothing when opened`);
            summary.click();
        }
        const walker = document.createTreeWalker(cell.querySelector('.jp-Cell-inputArea'), NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            const e = n.parentElement;
            if (/^\\s*Solution\\b/.test(n.textContent) && !e.closest('summary') && !e.closest('.cm-editor')
                && e.checkVisibility()) {
                problems.push(`markdown cell ${i}: "Solution" shown outside a fold: ${n.textContent.slice(0, 60)}`);
            }
        }
    }
    return {problems, folds};
}"""
WIDGET_CELLS_JS = f"""() => {NOTEBOOK_JS}.content.widgets.flatMap((c, i) => c.model.type === 'code' &&
    c.model.outputs.toJSON().some(o => o.data && o.data['application/vnd.jupyter.widget-view+json']) ? [i] : [])"""
CONTROLS = ".widget-dropdown select, .widget-toggle-buttons button, .widget-hslider .noUi-handle, .widget-text input"
# What a control changes: the cell's outputs without the controls themselves (a slider's readout always moves).
SNAPSHOT_JS = """(cell) => {
    const area = cell.querySelector('.jp-Cell-outputWrapper').cloneNode(true);
    area.querySelectorAll('.widget-slider, .widget-dropdown, .widget-toggle-buttons, .widget-text, .widget-readout, '
        + '.widget-label').forEach(e => e.remove());
    return area.innerHTML;
}"""


def first_widget_cell(page_name: str) -> int | None:
    """The index of the first cell whose output shows a widget, read from an executed copy of the page as it is now
    (the notebook stage's, ``_build/.executed``, else the build's cache, which keeps code cells only); -1 when there
    is none to read (run every cell and look), None when the page shows no widget."""
    import nbformat

    from transformer_lib.site.page_dependencies import fingerprint

    source = nbformat.read(BOOK / page_name, as_version=4)
    code = [i for i, cell in enumerate(source.cells) if cell.cell_type == "code"]
    kept = EXECUTED / "book" / page_name
    try:
        if kept.is_file() and nbformat.read(kept, as_version=4).metadata.get("tl_executed", {}).get(
            "fingerprint"
        ) == fingerprint(BOOK / page_name):
            executed = [c for c in nbformat.read(kept, as_version=4).cells if c.cell_type == "code"]
        else:
            from jupyter_cache import get_cache

            if not CACHE.is_dir():
                return -1
            cache = get_cache(str(CACHE))
            executed = cache.get_cache_bundle(cache.match_cache_notebook(source).pk).nb.cells
    except (KeyError, ImportError, OSError):
        return -1
    if len(executed) != len(code):
        return -1
    for position, cell in zip(code, executed, strict=True):
        if any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in cell.get("outputs", [])):
            return position
    return None


def _markdown_cells(page_name: str) -> list[dict]:
    cells = json.loads((BOOK / page_name).read_text(encoding="utf-8"))["cells"]
    return [{**c, "source": "".join(c["source"])} for c in cells if c["cell_type"] == "markdown"]


def _move(control) -> str:
    """Move one control the way a reader would; return what was done."""
    classes = control.evaluate("e => e.tagName + ' ' + (e.closest('.jupyter-widgets') || e).className")
    if control.evaluate("e => e.tagName") == "SELECT":
        options = control.evaluate("e => [...e.options].map(o => o.value)")
        current = control.evaluate("e => e.value")
        control.select_option(next(o for o in options if o != current))
        return f"dropdown -> another option ({classes})"
    if control.evaluate("e => e.tagName") == "BUTTON":
        buttons = control.locator("xpath=..").locator("button")
        for i in range(buttons.count()):
            if "mod-active" not in (buttons.nth(i).get_attribute("class") or ""):
                buttons.nth(i).click()
                return "toggle buttons -> another button"
    if control.evaluate("e => e.tagName") == "INPUT":
        control.fill(control.input_value() + " x")
        control.press("Enter")
        return "text -> appended ' x'"
    control.focus()
    control.press("ArrowRight")
    control.press("ArrowRight")
    return "slider -> two steps right"


@pytest.fixture(scope="module")
def lab_tab(lab: str, browser) -> Iterator:
    """One JupyterLab tab for the module's pages: its front end (megabytes of JavaScript, parsed and started) loads
    once, and each page is opened in it, then closed with its kernel shut down."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000}, service_workers="block")
    tab = context.new_page()
    try:
        tab.goto(lab.replace("/tree/{page}", ""), wait_until="load")
        tab.wait_for_function("() => !!window.jupyterapp", timeout=START_TIMEOUT_S * 1000)
        tab.evaluate("() => window.jupyterapp.restored.then(() => true)")
        yield tab
    finally:
        context.close()


# a page with no widget runs nothing here, so it opens with no kernel (kernelPreference: what docmanager:open passes to
# the page's session, over the notebook factory's own): what it checks is how JupyterLab renders the markdown
OPEN_JS = """([path, kernel]) => window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'Notebook',
        kernelPreference: kernel ? {} : {shouldStart: false, canStart: false}})
    .then(w => { window.jupyterapp.shell.activateById(w.id); return true; })"""
NO_KERNEL_JS = f"""() => {{ const w = {NOTEBOOK_JS}; return !!(w && w.context.isReady && w.content.widgets.length
    && !(w.sessionContext.session && w.sessionContext.session.kernel)) && !document.querySelector('.jp-Dialog'); }}"""
OPENED_JS = f"(path) => {{ const w = {NOTEBOOK_JS}; return !!(w && w.context && w.context.path === path); }}"
# the page's kernel shut down (its memory freed now rather than when the server stops) and the page closed unsaved
CLOSE_JS = f"""() => {{ const w = {NOTEBOOK_JS}; if (!w || !w.sessionContext) {{ return true; }}
    return w.sessionContext.shutdown().then(() => {{ w.dispose(); return true; }}); }}"""


@pytest.mark.parametrize("page_name", PAGES)
def test_page_reads_like_the_website(page_name: str, lab_tab) -> None:
    page = lab_tab
    try:
        last = first_widget_cell(page_name)
        page.evaluate(OPEN_JS, [page_name, last is not None])
        # polled every 100 ms, not every frame: a kernel starts in seconds, and each frame's check costs the tab CPU
        page.wait_for_function(OPENED_JS, arg=page_name, timeout=START_TIMEOUT_S * 1000, polling=100)
        wait = NO_KERNEL_JS if last is None else KERNEL_READY_JS
        page.wait_for_function(wait, timeout=START_TIMEOUT_S * 1000, polling=100)
        if last is not None:  # run up to the first widget (or everything, to find it)
            page.evaluate(
                "(last) => { const app = window.jupyterapp, w = app.shell.currentWidget;"
                " if (last < 0) { return app.commands.execute('notebook:run-all-cells'); }"
                " w.content.activeCellIndex = last; return app.commands.execute('notebook:run-all-above')"
                ".then(() => app.commands.execute('notebook:run-cell')); }",
                last,
            )
            page.wait_for_function(RUN_DONE_JS, arg=last, timeout=RUN_TIMEOUT_MS, polling=500)
            errors = page.evaluate(ERRORS_JS)
            assert not errors, f"{page_name}: error outputs after running to cell {last}: {errors}"
        else:  # nothing runs; the markdown is rendered once the page is open
            page.wait_for_function(MARKDOWN_RENDERED_JS, timeout=WIDGET_TIMEOUT_MS, polling=100)

        raw = []
        for i, text in enumerate(page.evaluate(MARKDOWN_TEXT_JS)):
            for match in RAW_MYST.finditer(text):
                line = text[text.rfind("\n", 0, match.start()) + 1 :].split("\n")[0]
                raw.append(f"markdown cell {i}: {line[:100]!r}")
        assert not raw, f"{page_name}: raw MyST shown in JupyterLab: {raw}"

        folds = page.evaluate(FOLDS_JS)
        assert not folds["problems"], f"{page_name}: {folds['problems']}"
        written = sum(c["source"].count("<details") for c in _markdown_cells(page_name))
        assert folds["folds"] == written, f"{page_name}: {written} <details> written, {folds['folds']} rendered"

        widget_cells = page.evaluate(WIDGET_CELLS_JS)
        assert last is None or last < 0 or widget_cells == [last], f"{page_name}: widgets in {widget_cells}, not {last}"
        if widget_cells:
            cell = page.locator(".jp-Notebook .jp-Cell").nth(widget_cells[0])
            controls = cell.locator(CONTROLS)
            controls.first.wait_for(timeout=WIDGET_TIMEOUT_MS)
            cell.scroll_into_view_if_needed()
            page.wait_for_timeout(1000)  # let the first drawing settle
            before = cell.evaluate(SNAPSHOT_JS)
            how = _move(controls.first)
            try:
                page.wait_for_function(
                    f"([cell, before]) => ({SNAPSHOT_JS})(cell) !== before",
                    arg=[cell.element_handle(), before],
                    timeout=WIDGET_TIMEOUT_MS,
                    polling=250,
                )
            except Exception as exc:  # playwright's TimeoutError; say what did not happen
                raise AssertionError(
                    f"{page_name}: cell {widget_cells[0]}'s output did not change in {WIDGET_TIMEOUT_MS // 1000} s "
                    f"after moving its first control ({how})"
                ) from exc
    finally:
        screenshot(page, f"jupyterlab_{Path(page_name).stem}")
        page.evaluate(CLOSE_JS)

"""The website plumbing: plotly's MIME type drawn with the site's shared plotly.js (transformer_lib.site.figures)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from transformer_lib.book import viz
from transformer_lib.book.labels import CATALOGS
from transformer_lib.site import figures as site


class _FakeRenderer:
    def __init__(self) -> None:
        self.js_files: dict[str, tuple] = {}

    def add_js_file(self, key: str, uri: str | None, kwargs: dict) -> None:
        self.js_files[key] = (uri, kwargs)


def test_mystnb_plugin_draws_plotly_json_with_the_shared_plotly_js() -> None:
    fig = viz.heatmap(np.eye(2), ["</script>", "b"], ["x", "y"])
    data = SimpleNamespace(mime_type=site.PLOTLY_MIME, content=json.loads(fig.to_json()), cell_index=4, output_index=1)
    renderer = _FakeRenderer()
    (node,) = site.PlotlyMystNbRenderer.handle_mime(renderer, data, False)
    html = node.astext()
    assert node["format"] == "html"
    assert (
        '<div id="tl-plotly-4-1" class="tl-plotly-figure" role="figure" aria-label="' in html
        and "Plotly.newPlot" in html
    )
    assert '"showSendToCloud": false' in html and '"displaylogo": false' in html  # no upload button, no logo
    assert html.index("window.tlPlotlyPrepare(fig, el)") < html.index("Plotly.newPlot")  # phones: laid out first
    # the figure's data is JSON that the browser does not run (text first, issue 41), and the label's "</script>" was
    # escaped: it ends neither tag early, and reads back whole
    assert html.count("</script>") == 2 and html.count("<script") == 2
    data_tag = '<script type="application/json" id="tl-plotly-4-1-data" class="tl-plotly-data">'
    payload = html.split(data_tag, 1)[1].split("</script>", 1)[0]
    assert "</script>" in json.dumps(json.loads(payload))
    assert 'JSON.parse(document.getElementById("tl-plotly-4-1-data").textContent)' in html
    # text first: no page loads plotly.min.js in its head; plotly-theme.js fetches it for the first figure
    assert renderer.js_files == {"plotly-theme": ("plotly-theme.js", {})}
    assert "window.tlDrawWhenNear(el, draw, 300, null)" in html  # its layout's height; English: plotly's words
    assert '"locale"' not in html
    # on the Chinese site the labels come from figures.po, so a page depends on it: a changed catalog re-reads the page
    noted: list[str] = []
    env = SimpleNamespace(config=SimpleNamespace(language="zh_CN"), docname="p", note_dependency=noted.append)
    renderer.renderer = SimpleNamespace(sphinx_env=env)
    (node,) = site.PlotlyMystNbRenderer.handle_mime(renderer, data, False)
    assert noted == [str(CATALOGS["zh"])] and CATALOGS["zh"].name == "figures.po"
    assert "2 行 × 2 列" in node.astext()  # its text alternative in Chinese
    # plotly's toolbar in Chinese: its zh-CN locale, which plotly-theme.js loads with plotly.js
    assert '"locale": "zh-CN"' in node.astext() and 'draw, 300, "zh-CN"); }' in node.astext()
    assert (site.STATIC / "vendor" / "plotly" / "plotly-locale-zh-cn.js").is_file()
    other = SimpleNamespace(
        mime_type="text/html", content="<b>hi</b>", string="<b>hi</b>", cell_index=0, output_index=0
    )
    assert site.PlotlyMystNbRenderer.handle_mime(renderer, other, False) is None
    assert ("html", site.PLOTLY_MIME, 15) in site.PlotlyMystNbRenderer.mime_priority_overrides


def test_sphinx_extension_copies_plotly_js_after_an_html_build(tmp_path) -> None:
    handlers = {}
    app = SimpleNamespace(
        connect=lambda event, fn, priority=500: handlers.setdefault(event, fn),
        builder=SimpleNamespace(format="html"),
        outdir=str(tmp_path),
    )
    meta = site.setup(app)
    assert meta["parallel_read_safe"]
    handlers["build-finished"](app, None)
    copied = tmp_path / "_static" / "plotly.min.js"
    assert copied.stat().st_size > 1_000_000 and b"Plotly" in copied.read_bytes()[:2000]
    failed = tmp_path / "failed"
    handlers["build-finished"](SimpleNamespace(builder=app.builder, outdir=str(failed)), RuntimeError("x"))
    assert not failed.exists()  # nothing is copied when the build failed


def test_the_vendored_plotly_locale_is_of_the_plotly_js_the_site_ships(tmp_path, monkeypatch) -> None:
    """scripts/vendor_js.sh takes the locale from the npm release of the installed plotly's plotly.js; a build
    with another plotly stops and says to refresh it."""
    assert site.vendored_locale_version() == site.plotly_js_version()
    locale = (site.STATIC / "vendor" / "plotly" / "plotly-locale-zh-cn.js").read_text(encoding="utf-8")
    assert 'name:"zh-CN"' in locale and "Plotly.register(locale)" in locale
    # its `var locale` kept out of the page's globals, where sphinx-copybutton's `let locale` made it a SyntaxError
    assert locale.startswith("(function () {\nvar locale=") and locale.rstrip().endswith("})();")
    versions = tmp_path / "VERSIONS.txt"
    versions.write_text("plotly.js@1.0.0 (MIT) -> plotly/\n", encoding="utf-8")
    assert site.vendored_locale_version(versions) == "1.0.0"
    app = SimpleNamespace(connect=lambda *args, **kwargs: None)
    monkeypatch.setattr(site, "VENDOR_VERSIONS", versions)
    with pytest.raises(RuntimeError, match=r"plotly locales: the site ships plotly.js .* locales of plotly.js 1.0.0"):
        site.setup(app)
    header = tmp_path / "plotly.min.js"
    header.write_text("/* no version here */", encoding="utf-8")
    with pytest.raises(ValueError, match="expected a 'plotly.js vX.Y.Z' header"):
        site.plotly_js_version(header)


def test_pages_extension_writes_each_script_once() -> None:
    from transformer_lib.site import pages

    handlers: dict = {}
    app = SimpleNamespace(connect=lambda event, fn, priority=500: handlers.setdefault(event, fn))
    assert pages.setup(app)["parallel_write_safe"]
    context = {"script_files": ["a.js", "b.js", "a.js"]}
    handlers["html-page-context"](app, "page", "page.html", context, None)
    assert context["script_files"] == ["a.js", "b.js"]  # every page's scripts, each once


def test_importing_the_core_library_loads_no_plotting_or_jupyter_module() -> None:
    import subprocess
    import sys

    code = (
        "import sys, transformer_lib\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'plotly', 'matplotlib', 'ipywidgets', "
        "'IPython', 'ipykernel', 'jupyter_client', 'nbformat', 'nbclient', 'pandas'})\n"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "", f"import transformer_lib loaded {out}; only transformer_lib.book may import them"


def test_unique_scripts_drops_repeated_inline_and_file_scripts():
    from sphinx.builders.html._assets import _JavaScript

    from transformer_lib.site.pages import unique_scripts

    thebe = 'const THEBE_JS_URL = "x"'
    scripts = [
        _JavaScript(None, body=thebe),
        _JavaScript("a.js"),
        _JavaScript("", body=thebe, priority=800),
        _JavaScript("a.js"),
        _JavaScript(None, body="var other = 1"),
    ]
    kept = unique_scripts(scripts)
    assert [(js.filename, js.attributes.get("body")) for js in kept] == [
        (None, thebe),
        ("a.js", None),
        (None, "var other = 1"),
    ]

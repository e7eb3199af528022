"""How the book's plotly figures reach the website: a myst-nb renderer plugin and a tiny Sphinx extension.

Nothing here is needed to draw a figure in a live notebook (that is :mod:`transformer_lib.book.viz`); this is
the build-time plumbing, kept apart so that Sphinx loads it without plotly's Python package.

* :class:`PlotlyMystNbRenderer` (a myst-nb plugin, registered in ``pyproject.toml``) turns plotly's MIME type
  into a ``<div>`` plus a call to ``Plotly.newPlot``.
* :func:`setup` (listed in ``_config.yml`` under ``sphinx.extra_extensions``) copies ``plotly.min.js`` from
  the installed plotly package into the site once, so no page inlines it and nothing is fetched.

Text first: no page loads plotly.js in its head. A page carries only ``plotly-theme.js`` (small), which fetches
``plotly.min.js`` (4.8 MB) when the first figure comes near the viewport (or when the page is printed), and on the
Chinese pages plotly's own Chinese locale with it (``vendor/plotly/plotly-locale-zh-cn.js``, from the npm release of
the same plotly.js: :data:`PLOTLY_LOCALES`, ``scripts/vendor_js.sh``).

What the build does to every page's HTML besides is in :mod:`.pages`.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from pathlib import Path
from typing import Any

from transformer_lib.book.labels import (
    CATALOGS,
    alt_sentence,
    figure_texts,
    say,
    translate_figure,
    translate_table_html,
)
from transformer_lib.book.toolbar import PLOTLY_CONFIG

from .glossary import label_words
from .i18n import site_language

PLOTLY_MIME = "application/vnd.plotly.v1+json"
STATIC = Path(__file__).resolve().parents[2] / "book" / "_static"
# plotly.js's locale for a page language (its toolbar's tooltips and messages), loaded with plotly.min.js by
# plotly-theme.js from _static/vendor/plotly/plotly-locale-<locale in lower case>.js; English is plotly's own
PLOTLY_LOCALES = {"zh": "zh-CN"}
VENDOR_VERSIONS = STATIC / "vendor" / "VERSIONS.txt"


def plotly_js_source() -> Path:
    """The installed plotly package's ``plotly.min.js``: the one the site ships."""
    import plotly

    source = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not source.is_file():
        raise FileNotFoundError(f"plotly.min.js: expected it in the plotly package at {source}")
    return source


def plotly_js_version(source: Path | None = None) -> str:
    """The version of the plotly.js the site ships, from its header (``* plotly.js v4.1.1``)."""
    source = plotly_js_source() if source is None else source
    with open(source, encoding="utf-8") as f:
        head = f.read(500)
    found = re.search(r"plotly\.js v(\d+\.\d+\.\d+)", head)
    if found is None:
        raise ValueError(f"plotly.min.js: expected a 'plotly.js vX.Y.Z' header in {source}, got {head[:80]!r}")
    return found[1]


def vendored_locale_version(versions: Path | None = None) -> str | None:
    """The plotly.js release whose locales ``scripts/vendor_js.sh`` vendored (``VERSIONS.txt`` by default), None if
    none."""
    text = (VENDOR_VERSIONS if versions is None else versions).read_text(encoding="utf-8")
    found = re.search(r"^plotly\.js@(\S+) ", text, re.M)
    return found[1] if found else None


class PlotlyMystNbRenderer:
    """myst-nb plugin: draws plotly's MIME type on the website with the site's shared ``plotly.min.js``.

    Registered under the ``myst_nb.mime_renderers`` entry point in ``pyproject.toml``. Without it myst-nb
    knows no renderer for ``application/vnd.plotly.v1+json`` and leaves an empty space.
    """

    mime_priority_overrides = [(builder, PLOTLY_MIME, 15) for builder in ("html", "dirhtml", "singlehtml", "gettext")]

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list | None:
        if data.mime_type == "text/html" and not inline:
            return _table(renderer, data)  # a pandas table: its headers and labels in the page's language
        if data.mime_type != PLOTLY_MIME:
            return None  # let myst-nb's own renderers handle everything else
        from docutils import nodes

        # plotly-theme.js (book/_static) fetches _static/plotly.min.js when the first figure is about to be drawn:
        # no page waits for plotly.js in its head (text first, issue 41); it also gives the figures the dark mode
        renderer.add_js_file("plotly-theme", "plotly-theme.js", {})
        figure = json.loads(data.content) if isinstance(data.content, (str, bytes)) else data.content
        figure = single_precision(figure)
        env = getattr(getattr(renderer, "renderer", None), "sphinx_env", None)  # the Chinese site: labels in Chinese
        lang = "zh" if env is not None and site_language(env.config) == "zh_CN" else "en"
        if env is not None and lang != "en":  # a changed figures.po re-reads the pages whose figures it translates
            env.note_dependency(str(CATALOGS[lang]))
        figure = translate_figure(figure, lang)
        if lang != "en":  # the words a Chinese label keeps whole when plotly-theme.js breaks it into lines
            figure["line_words"] = label_words(figure_texts(figure))
        label = html.escape(alt_text(figure, lang), quote=True)
        locale = PLOTLY_LOCALES.get(lang)  # plotly's toolbar in the page's language
        plotly_config = {**PLOTLY_CONFIG, **({"locale": locale} if locale else {})}
        figure = without_alt(figure)
        div_id = f"tl-plotly-{data.cell_index}-{data.output_index}"
        # the template (the book's, about 7 KB) goes into the page once, and each figure names it
        template, template_key, figure = shared_template(figure, getattr(env, "docname", None))
        use_template = f"    fig.layout.template = window.tlTemplates[{template_key!r}];\n" if template_key else ""
        # the figure's data (most of a chapter's bytes) as JSON that the browser does not run: parsed (JSON.parse) only
        # when the figure is drawn, not compiled and run as a script while the page's text is parsed (text first,
        # issue 41). Every "<" escaped, so that no label can end or comment out the tag
        payload = json.dumps(figure).replace("<", "\\u003c")
        height = (figure.get("layout") or {}).get("height")
        # role="figure", not "img": plotly draws focusable controls (toolbar, sliders, menus) inside the figure, which
        # an image role would hide from assistive technology (axe: nested-interactive)
        role = "figure"
        unloaded = say("plotly.js did not load; this figure cannot be drawn.", lang)
        code = (
            f'<div id="{div_id}" class="tl-plotly-figure" role="{role}" aria-label="{label}"></div>\n'
            f'<script type="application/json" id="{div_id}-data" class="tl-plotly-data">{payload}</script>\n'
            f'<script type="text/javascript">\n'
            f"(function () {{\n{template}  function draw() {{\n"
            f'    var fig = JSON.parse(document.getElementById("{div_id}-data").textContent);\n{use_template}'
            f'    var el = document.getElementById("{div_id}");\n'
            f"    if (!window.Plotly) {{ el.textContent = {json.dumps(unloaded, ensure_ascii=False)}; return; }}\n"
            f"    var config = Object.assign({{responsive: true}}, fig.config || {{}}, {json.dumps(plotly_config)});\n"
            # a touch screen has no hover: plotly would show its toolbar all the time, over the figure's title
            f'    if (window.matchMedia && window.matchMedia("(hover: none)").matches) {{\n'
            f"      config.displayModeBar = false;\n    }}\n"
            # long plotly menus become HTML <select>s, which work by touch (plotly-theme.js)
            f"    if (window.tlPlotlyMenus) {{ window.tlPlotlyMenus(fig, el); }}\n"
            f"    if (window.tlPlotlyPrepare) {{ window.tlPlotlyPrepare(fig, el); }}\n"  # phones: plotly-theme.js
            f"    return Plotly.newPlot(el, {{data: fig.data, layout: fig.layout, frames: fig.frames || [], "
            f"config: config}}).then(function () {{\n"
            f"      if (window.tlPlotlyTheme) {{ return window.tlPlotlyTheme(el); }}\n    }});\n"
            f"  }}\n"
            # drawn when it comes near the viewport, plotly.js (and its locale) fetched first (plotly-theme.js), so
            # that a page is ready before its first figure
            f'  var el = document.getElementById("{div_id}");\n'
            f"  if (window.tlDrawWhenNear) {{ window.tlDrawWhenNear(el, draw, {json.dumps(height)}, "
            f"{json.dumps(locale)}); }}\n"
            f'  else if (document.readyState === "loading") {{ document.addEventListener("DOMContentLoaded", draw); }}'
            f" else {{ draw(); }}\n}})();\n</script>"
        )
        return [nodes.raw(text=code, format="html", classes=["output", "text_html"])]


_TEMPLATES_ON_PAGE: dict[str, set[str]] = {}  # page -> the templates its figures have already put into it


def _table(renderer: Any, data: Any) -> list | None:
    """A notebook's HTML output on the Chinese site: a pandas table with its labels through the figures' catalog
    (:func:`translate_table_html`); anything else, and every English page, is left to myst-nb (None)."""
    env = getattr(getattr(renderer, "renderer", None), "sphinx_env", None)
    if env is None or site_language(env.config) != "zh_CN" or "<table" not in data.string:
        return None
    from docutils import nodes

    env.note_dependency(str(CATALOGS["zh"]))
    return [nodes.raw(text=translate_table_html(data.string, "zh"), format="html", classes=["output", "text_html"])]


def shared_template(figure: dict[str, Any], page: str | None) -> tuple[str, str | None, dict[str, Any]]:
    """Move a figure's ``layout.template`` into a page-wide table (``window.tlTemplates``): the first figure of a
    page that uses a template defines it as the page is parsed, every figure refers to it by a hash when it is drawn
    (in any order). Returns the JavaScript that defines it, the hash and the figure without its template (no
    JavaScript, no hash and the figure unchanged when it has none)."""
    layout = figure.get("layout") or {}
    if page is None or not isinstance(layout.get("template"), dict):
        return "", None, figure
    template = layout["template"]
    text = json.dumps(template, sort_keys=True)
    key = hashlib.sha1(text.encode()).hexdigest()[:12]
    seen = _TEMPLATES_ON_PAGE.setdefault(page, set())
    script = ""
    if key not in seen:
        seen.add(key)
        script = "  window.tlTemplates = window.tlTemplates || {};\n"
        script += f"  window.tlTemplates[{key!r}] = {text.replace('<', chr(92) + 'u003c')};\n"
    return script, key, {**figure, "layout": {k: v for k, v in layout.items() if k != "template"}}


def single_precision(node: Any) -> Any:
    """A figure's JSON with its float64 arrays (plotly's binary ``{"dtype": "f8", "bdata": ...}``) as float32: a
    screen shows no more than float32's seven digits, and the page carries half the bytes (a chapter's figures are
    most of its weight, tests/test_browser.py's budget).

    >>> import base64, numpy as np
    >>> f8 = {"dtype": "f8", "bdata": base64.b64encode(np.array([0.1, 2.0]).tobytes()).decode()}
    >>> out = single_precision({"data": [{"z": f8, "name": "x"}]})["data"][0]["z"]
    >>> out["dtype"], np.frombuffer(base64.b64decode(out["bdata"]), "<f4").tolist()
    ('f4', [0.10000000149011612, 2.0])
    """
    if isinstance(node, dict):
        if node.get("dtype") == "f8" and isinstance(node.get("bdata"), str):
            import base64

            import numpy as np

            values = np.frombuffer(base64.b64decode(node["bdata"]), dtype="<f8").astype("<f4")
            return {**node, "dtype": "f4", "bdata": base64.b64encode(values.tobytes()).decode("ascii")}
        return {key: single_precision(value) for key, value in node.items()}
    if isinstance(node, list):
        return [single_precision(item) for item in node]
    return node


def alt_text(figure: dict[str, Any], lang: str = "en") -> str:
    """A figure's short text alternative in ``lang``, for readers who cannot see it (``aria-label`` on the website).

    The drawing function's own facts when it recorded some (``layout.meta.alt_facts``, set by :mod:`.viz` and the
    diagrams, said by :func:`.labels.alt_sentence`), or its own sentence (``layout.meta.alt``), else what the figure
    says of itself: its title, its axes and, for a control, how many views it holds (labels as the figure has them:
    :func:`.labels.translate_figure` has already put them in ``lang``).
    """
    layout = figure.get("layout") or {}
    meta = layout.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("alt_facts"), dict):
        return alt_sentence(meta["alt_facts"], lang)
    if isinstance(meta, dict) and isinstance(meta.get("alt"), str) and meta["alt"].strip():
        return meta["alt"].strip()

    def text(value: Any) -> str:
        value = value.get("text") if isinstance(value, dict) else value
        return " ".join(re.sub(r"<[^>]+>", " ", value).split()) if isinstance(value, str) else ""

    # its words are entries of the figures' catalog, like alt_sentence's (labels.say)
    kinds = sorted({str(t.get("type") or "scatter") for t in figure.get("data") or []})
    parts = [text(layout.get("title")) or say("Figure", lang)]
    described = {"heatmap": "heat map", "scatter": "plot", "bar": "bar chart"}
    if kinds:
        parts.append(say(" and ", lang).join(say(described[k], lang) if k in described else k for k in kinds))
    axes = [
        say("{axis}: {title}", lang, axis=key[0], title=text(axis.get("title")))
        for key, axis in sorted(layout.items())
        if re.fullmatch(r"[xy]axis\d*", key) and isinstance(axis, dict) and text(axis.get("title"))
    ]
    if axes:
        parts.append(say(", ", lang).join(dict.fromkeys(axes)))
    views = sum(len(c.get("steps") or c.get("buttons") or []) for c in layout.get("sliders") or [])
    if views:
        parts.append(say("{views} views, chosen with a slider", lang, views=views))
    return say("; ", lang).join(parts)


def without_alt(figure: dict[str, Any]) -> dict[str, Any]:
    """``figure`` without its text alternative (``meta.alt`` and ``meta.alt_facts``), which the page carries as the
    figure's ``aria-label``: no need to ship it twice."""
    meta = (figure.get("layout") or {}).get("meta")
    if not isinstance(meta, dict) or not {"alt", "alt_facts"} & set(meta):
        return figure
    rest = {k: v for k, v in meta.items() if k not in ("alt", "alt_facts")}
    layout = {k: v for k, v in figure["layout"].items() if k != "meta"}
    return {**figure, "layout": {**layout, **({"meta": rest} if rest else {})}}


def setup(app: Any) -> dict[str, Any]:
    """Sphinx extension (``sphinx.extra_extensions`` in ``_config.yml``): ship ``plotly.min.js`` once.

    The file comes from the installed plotly package, so the site's plotly.js always matches the Python
    plotly that wrote the figures; it is copied to ``_static/`` after the build, like myst-nb's own CSS. Its
    locales (``_static/vendor/plotly/``) must come from the same plotly.js release: a build with another plotly
    stops here and says to refresh them.
    """
    source = plotly_js_source()
    shipped, vendored = plotly_js_version(source), vendored_locale_version()
    if shipped != vendored:
        raise RuntimeError(
            f"plotly locales: the site ships plotly.js {shipped} (the installed plotly package) but "
            f"book/_static/vendor/plotly/ holds the locales of plotly.js {vendored}: run `bash scripts/vendor_js.sh`"
        )

    def copy_plotly_js(app: Any, exception: Exception | None) -> None:
        if exception is None and app.builder.format == "html":
            static = Path(app.outdir) / "_static"
            static.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, static / "plotly.min.js")

    app.connect("build-finished", copy_plotly_js)
    # a page read again starts without templates: its first figure defines them anew
    app.connect("env-purge-doc", lambda app, env, docname: _TEMPLATES_ON_PAGE.pop(docname, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}

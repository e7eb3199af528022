"""Controls that work on the website without a kernel: a live ipywidgets control's twin, precomputed.

A chapter's ``widgets.interact`` recomputes with the real model, but only where a kernel runs (Jupyter, Colab,
Binder); on the website it would show a dead control frozen in its saved state. :func:`precomputed` calls the
same drawing function for every value the website offers and packs the results into one plotly figure whose
slider or menu switches between them in the browser. The figures are the real model's outputs, computed when
the book is built; only the choice among them happens in the page.
"""

from __future__ import annotations

import hashlib
import html
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from .labels import translate

__all__ = ["precomputed", "precomputed_html", "label_html", "pre_html"]

MAX_VIEWS = 48  # every view's traces ship in the page: keep the page light


def _combinations(choices: Mapping[str, Sequence[Any]], initial: Mapping[str, Any] | None) -> tuple[list[dict], int]:
    if not choices or any(len(v) == 0 for v in choices.values()):
        raise ValueError(f"choices: expected at least one value for every argument, got {dict(choices)}")
    names = list(choices)
    combos = [dict(zip(names, values, strict=True)) for values in itertools.product(*(choices[n] for n in names))]
    if len(combos) > MAX_VIEWS:
        raise ValueError(f"choices: {len(combos)} combinations; at most {MAX_VIEWS} fit in a page")
    start = 0
    if initial:
        wanted = {**combos[0], **initial}
        if wanted not in combos:
            raise ValueError(f"initial: {dict(initial)} is not among the choices {dict(choices)}")
        start = combos.index(wanted)
    return combos, start


def label_html(text: str) -> str:
    """``text`` as HTML for a view of :func:`precomputed_html`, with its Chinese from the figures' catalog (or a rule
    of :mod:`.label_patterns`) for the Chinese page, which shows it in place of the English: a line that a chapter's
    own render function writes into its views ("12 tokens, vocabulary 80, 0 unknown") is a label, like a menu's word.

    >>> label_html("12 tokens, vocabulary 80, 0 unknown")
    '<span data-zh="12 个词元，词表 80，未知词元 0 个">12 tokens, vocabulary 80, 0 unknown</span>'
    >>> label_html("the cat")  # no translation: the English alone
    'the cat'
    """
    shown = _data_zh(text)
    return f"<span{shown}>{html.escape(text)}</span>" if shown else html.escape(text)


def pre_html(text: str) -> str:
    r"""``text`` as a ``<pre>`` block for a view of :func:`precomputed_html`, each line a :func:`label_html` (so that a
    line with a Chinese rule reads in Chinese on the Chinese page, its numbers kept).

    >>> pre_html("peak memory during the call: 1.5 MiB\nthe cat")
    '<pre><span data-zh="调用期间的内存峰值：1.5 MiB">peak memory during the call: 1.5 MiB</span>\nthe cat</pre>'
    """
    return "<pre>" + "\n".join(label_html(line) for line in text.splitlines()) + "</pre>"


def _data_zh(text: str) -> str:
    """The ``data-zh`` attribute that gives ``text`` its Chinese on the Chinese page, or "" when it has none."""
    zh = translate(text, "zh")
    return f' data-zh="{html.escape(zh, quote=True)}"' if zh != text else ""


def precomputed_html(
    render: Callable[..., str], choices: Mapping[str, Sequence[Any]], *, initial: Mapping[str, Any] | None = None
):
    """An HTML twin of a live control: ``render(**values)`` (an HTML string) for every combination of
    ``choices``, with one menu per argument that shows the matching view in the page (a few lines of inline
    JavaScript, no kernel, no library). Returns an ``IPython.display.HTML`` object. The menus' words, and the words a
    view wraps in :func:`label_html`, show in Chinese on the Chinese page.
    """
    from IPython.display import HTML

    if not callable(render):
        raise TypeError(f"render: expected a function returning an HTML string, got {type(render).__name__}")
    combos, start = _combinations(choices, initial)
    views = []
    for combo in combos:
        text = render(**combo)
        if not isinstance(text, str):
            raise TypeError(f"render: expected an HTML string for {combo}, got {type(text).__name__}")
        views.append(text)

    def key(combo: dict) -> str:  # what the page's script builds: JSON.stringify of the menus' values
        values = [str(v) for v in combo.values()]
        return html.escape(json.dumps(values, separators=(",", ":"), ensure_ascii=False), quote=True)

    uid = "tl-choice-" + hashlib.sha1("".join(views).encode()).hexdigest()[:10]  # stable across builds

    def option(value: Any, selected: bool) -> str:  # the value stays what the views are keyed by; its text is shown
        text, chosen = str(value), " selected" if selected else ""
        return f'<option value="{html.escape(text, quote=True)}"{_data_zh(text)}{chosen}>{html.escape(text)}</option>'

    menus = []
    for name, values in choices.items():
        options = "".join(option(v, v == combos[start][name]) for v in values)
        menus.append(f"<label style='margin-right:1em'>{label_html(name)} <select>{options}</select></label>")
    panes = "".join(
        f'<div data-view="{key(c)}"{"" if i == start else " hidden"}>{v}</div>'
        for i, (c, v) in enumerate(zip(combos, views, strict=True))
    )
    script = (
        "<script>(function () {\n"
        f"  var root = document.getElementById('{uid}'), menus = root.querySelectorAll('select');\n"
        "  function show() {\n"
        "    var key = JSON.stringify(Array.prototype.map.call(menus, function (m) { return m.value; }));\n"
        "    root.querySelectorAll('[data-view]').forEach(function (d) {"
        " d.hidden = d.getAttribute('data-view') !== key; });\n"
        "  }\n"
        "  menus.forEach(function (m) { m.addEventListener('change', show); });\n"
        # the menus' words in the page's language (the Chinese site's <html lang="zh-CN">): the same output serves both
        "  if (document.documentElement.lang === 'zh-CN') {\n"
        "    root.querySelectorAll('[data-zh]').forEach(function (e) { e.textContent = e.getAttribute('data-zh'); });\n"
        "  }\n"
        "})();</script>"
    )
    return HTML(f"<div id='{uid}' class='tl-precomputed'><div>{''.join(menus)}</div>{panes}</div>{script}")


def _view(draw: Callable[..., go.Figure], combo: dict) -> go.Figure:
    """``draw(**combo)``, checked: a plotly figure without a slider or menu of its own."""
    fig = draw(**combo)
    if not isinstance(fig, go.Figure):
        raise TypeError(f"draw: expected a plotly Figure for {combo}, got {type(fig).__name__}")
    if fig.layout.sliders or fig.layout.updatemenus:  # their visibility lists would index the wrong traces
        raise ValueError(f"draw: the figure for {combo} has its own slider or menu; draw one view per call")
    return fig


def _stacked(views: list[go.Figure], start: int) -> tuple[go.Figure, list[tuple[int, int]]]:
    """One figure with every view's traces, only view ``start``'s visible, and each view's span of trace indices."""
    traces: list[dict] = []
    spans = []
    for i, fig in enumerate(views):
        first = len(traces)
        traces += [{**trace.to_plotly_json(), "visible": i == start} for trace in fig.data]
        spans.append((first, len(traces)))
    # every trace in one go: out.add_trace validates all of them again on each call (quadratic in the views)
    return go.Figure(data=traces, layout=views[start].layout), spans


def _control_layout(control: dict, names: list[str], label: str | None) -> dict:
    """The layout that holds the control: a slider for one argument, a menu of the combinations for several.
    ``control`` has the views' ``steps`` and the ``active`` one."""
    prefix = label or ", ".join(names)
    if len(names) == 1:
        return dict(
            sliders=[
                dict(
                    active=control["active"],
                    steps=control["steps"],
                    currentvalue=dict(prefix=f"{prefix}: "),
                    pad=dict(t=50),
                )
            ]
        )
    # below the plot, clear of the title; it opens upwards, over the plot, not off the page
    return dict(
        updatemenus=[
            dict(
                type="dropdown",
                active=control["active"],
                buttons=control["steps"],
                x=0,
                xanchor="left",
                y=-0.22,
                yanchor="top",
                direction="up",
                pad=dict(t=4),
            )
        ],
        margin=dict(b=110),
    )


def precomputed(
    draw: Callable[..., go.Figure],
    choices: Mapping[str, Sequence[Any]],
    *,
    initial: Mapping[str, Any] | None = None,
    label: str | None = None,
) -> go.Figure:
    """One figure holding ``draw(**values)`` for every combination of ``choices``, with a control to switch.

    With one argument the control is a slider over its values; with several, a menu of the combinations.
    Each view keeps its own title; ``initial`` picks the view shown first (default: the first values).

    Args:
        draw: returns a plotly figure for one set of keyword arguments (the function the live control calls).
        choices: argument name -> the values offered on the website.
        initial: argument name -> value of the view shown first.
        label: text before a slider (default: the argument name); a menu names each argument in its entries.
    """
    if not callable(draw):
        raise TypeError(f"draw: expected a function returning a plotly figure, got {type(draw).__name__}")
    names = list(choices)
    combos, start = _combinations(choices, initial)

    views = [_view(draw, combo) for combo in combos]
    out, spans = _stacked(views, start)
    titles = [fig.layout.title.text or "" for fig in views]
    notes = [[a.to_plotly_json() for a in fig.layout.annotations] for fig in views]  # e.g. subplot titles

    def step(i: int) -> dict:
        visible = [spans[i][0] <= j < spans[i][1] for j in range(len(out.data))]
        if len(names) == 1:
            text = str(combos[i][names[0]])
        else:
            text = ", ".join(f"{n}={v}" for n, v in combos[i].items())
        return dict(
            method="update", args=[{"visible": visible}, {"title.text": titles[i], "annotations": notes[i]}], label=text
        )

    control = dict(active=start, steps=[step(i) for i in range(len(combos))])
    out.update_layout(**_control_layout(control, names, label))
    return out

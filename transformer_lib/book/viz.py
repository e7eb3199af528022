"""Figures every chapter draws, in one colour scheme: heatmaps of attention, masks and encodings, and curves.

Each helper takes ``backend="plotly"`` (interactive: hover, zoom, sliders; the default) or ``"matplotlib"``
(a static :class:`matplotlib.figure.Figure`) and returns the figure; a notebook shows it when it is the last
expression of a cell, or with ``fig.show()``. Arrays may be torch tensors (on any device) or NumPy arrays.

Shape legend: ``Tq`` query length, ``Tk`` key length, ``L`` layers, ``H`` heads, ``T`` positions, ``C`` d_model.

The colours, the plotly template and renderer and the input checks are in :mod:`.style`; the architecture
diagrams in :mod:`.diagrams` (re-exported here).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch

from ..tokenization import SPACE_MARK
from .diagrams import Box, block_diagram  # re-exported: the chapters draw everything through viz
from .labels import alt_meta
from .style import (
    BLOCKED,
    COLORS,
    DIVERGING,
    SEQUENTIAL,
    SPACE_LEGEND,
    SPACE_SHOWN,
    as_array,
    axis_labels,
    check_backend,
    mpl_figure,
    token_label,
)

__all__ = [
    "describe",
    "COLORS",
    "SEQUENTIAL",
    "DIVERGING",
    "Box",
    "SPACE_LEGEND",
    "token_label",
    "heatmap",
    "attention_heatmap",
    "cross_attention_heatmap",
    "mask_heatmap",
    "attention_grid",
    "positional_encoding_heatmap",
    "token_strip",
    "space_legend",
    "line_plot",
    "training_curves",
    "block_diagram",
]


# --------------------------------------------------------------------------------------------------- heatmaps
def describe(fig: go.Figure, facts: dict[str, Any]) -> go.Figure:
    """Give ``fig`` its short text alternative: the website reads it aloud in place of the figure (``aria-label``,
    :func:`transformer_lib.book.site.alt_text`). ``facts`` (kept in ``layout.meta.alt_facts``) are what it says, in
    either language (:func:`.labels.alt_sentence`); ``layout.meta.alt`` holds the English sentence. Other ``meta``
    keys are kept."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    fig.update_layout(meta={**meta, **alt_meta(facts)})
    return fig


def _span(values: Any) -> list[float] | None:
    """``[low, high]`` of the finite values, or None (for :func:`.labels.alt_sentence`)."""
    array = np.asarray(values, dtype=float)
    finite = array[np.isfinite(array)]
    return [float(finite.min()), float(finite.max())] if finite.size else None


def _heatmap_trace(
    z,
    x_labels,
    y_labels,
    colorscale,
    zmin,
    zmax,
    zmid,
    *,
    text=None,
    names: tuple[str, str] = ("row", "column"),
    cells_in_figure: int = 0,
    **kw,
) -> go.Heatmap:
    # Numeric axes with tick text: a repeated token ("the ... the") must stay two columns, not merge into one.
    # Hover shows the labels through customdata, but only for token-sized figures: it costs two strings a cell.
    small = max(cells_in_figure, len(x_labels) * len(y_labels)) <= 4096
    hover = np.array([[(yl, xl) for xl in x_labels] for yl in y_labels], dtype=object) if small else None
    where = "%{customdata[0]}" if small else "%{y}", "%{customdata[1]}" if small else "%{x}"
    return go.Heatmap(
        z=np.asarray(z, dtype=np.float32),
        x=list(range(len(x_labels))),
        y=list(range(len(y_labels))),
        customdata=hover,
        colorscale=colorscale,
        zmin=zmin,
        zmax=zmax,
        zmid=zmid,
        text=text,
        texttemplate="%{text}" if text is not None else None,
        hovertemplate=f"{names[0]}: {where[0]}<br>{names[1]}: {where[1]}<br>value: %{{z:.3f}}<extra></extra>",
        **kw,
    )


def _with_space_legend(x_title: str | None, *texts: Sequence[str]) -> str | None:
    """The x-axis title, followed by the one-line legend of ``␣`` when a label or cell text shows it."""
    if not any(SPACE_SHOWN in t for labels in texts for t in labels):
        return x_title
    return f"{x_title} · {SPACE_LEGEND}" if x_title else SPACE_LEGEND


def _label_axes(
    fig: go.Figure, x_labels, y_labels, x_title, y_title, title, square: bool, cell_text: Sequence[str] = ()
) -> None:
    """Labels on top, row 0 at the top as in a matrix; square cells for token grids; room for both titles."""
    x_title = _with_space_legend(x_title, x_labels, y_labels, cell_text)
    fig.update_xaxes(
        tickmode="array",
        tickvals=list(range(len(x_labels))),
        ticktext=x_labels,
        title=x_title,
        side="top",
        constrain="domain",
    )
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(len(y_labels))),
        ticktext=y_labels,
        title=y_title,
        autorange="reversed",
        **(dict(scaleanchor="x", scaleratio=1, constrain="domain") if square else {}),
    )
    cell = 40 if square else 26
    fig.update_layout(
        title=dict(text=title, y=0.98, yanchor="top"),
        margin=dict(t=120 if title else 90, b=30),
        height=min(760, max(300, 150 + cell * len(y_labels))),
    )


def _mpl_heatmap(ax, z, x_labels, y_labels, cmap, vmin, vmax, x_title, y_title, annotate=False):
    image = ax.imshow(z, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(x_labels)), x_labels, rotation=90 if max(map(len, x_labels)) > 3 else 0)
    ax.set_yticks(range(len(y_labels)), y_labels)
    ax.set_xlabel(x_title)
    ax.set_ylabel(y_title)
    if annotate:
        for (i, j), v in np.ndenumerate(z):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8)
    return image


def heatmap(
    z: Any,
    x_labels: Sequence[Any] | None = None,
    y_labels: Sequence[Any] | None = None,
    *,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    diverging: bool = False,
    zmin: float | None = None,
    zmax: float | None = None,
    show_values: bool = False,
    hover_names: tuple[str, str] = ("row", "column"),
    square: bool = False,
    cell_text: Sequence[Sequence[Any]] | None = None,
    show_scale: bool = True,
    backend: str = "plotly",
):
    """A labelled matrix: row ``i`` is ``y_labels[i]`` (top to bottom), column ``j`` is ``x_labels[j]``.

    ``diverging=True`` uses the red-blue scale centred at 0 (for signed values); otherwise light-to-dark blue.
    ``square=True`` keeps the cells square (token-by-token grids); plotly only. ``cell_text`` writes a string
    in each cell (say, the token at that place) at a fixed, readable size; ``show_scale=False`` drops the colour bar.

    Shape:
        z: (rows, cols); cell_text: (rows, cols)
    """
    check_backend(backend)
    z = as_array("z", z, 2)
    xl, yl = axis_labels("x_labels", x_labels, z.shape[1]), axis_labels("y_labels", y_labels, z.shape[0])
    if diverging and zmin is None and zmax is None:
        zmax = float(np.abs(z).max()) or 1.0
        zmin = -zmax
    if cell_text is not None:
        cells = [[token_label(t) for t in row] for row in cell_text]
        if len(cells) != z.shape[0] or any(len(row) != z.shape[1] for row in cells):
            raise ValueError(
                f"cell_text: expected {z.shape[0]} rows of {z.shape[1]} strings to match z, got "
                f"{[len(row) for row in cells]}"
            )
        if show_values:
            raise ValueError("show_values, cell_text: expected one kind of cell text, got both")
    if backend == "matplotlib":
        fig, axes = mpl_figure(size=(1.2 + 0.45 * len(xl), 1.2 + 0.4 * len(yl)) if len(xl) <= 24 else (7, 5))
        image = _mpl_heatmap(
            axes[0, 0],
            z,
            xl,
            yl,
            DIVERGING if diverging else SEQUENTIAL,
            zmin,
            zmax,
            x_title,
            y_title,
            annotate=show_values,
        )
        fig.colorbar(image, ax=axes[0, 0])
        axes[0, 0].set_title(title or "")
        return fig
    text = np.vectorize(lambda v: f"{v:.2f}")(z) if show_values else None
    # plotly would shrink a word to its cell
    extra: dict[str, Any] = {} if cell_text is None else dict(textfont=dict(size=12))
    if cell_text is not None:
        text = np.array(cells, dtype=object)
    fig = go.Figure(
        _heatmap_trace(
            z,
            xl,
            yl,
            DIVERGING if diverging else SEQUENTIAL,
            zmin,
            zmax,
            0.0 if diverging else None,
            text=text,
            names=hover_names,
            showscale=show_scale,
            **extra,
        )
    )
    _label_axes(
        fig,
        xl,
        yl,
        x_title,
        y_title,
        title,
        square,
        cell_text=[t for row in cells for t in row] if cell_text is not None else (),
    )
    facts = dict(kind="heatmap", title=title, rows=len(yl), row_title=y_title, cols=len(xl), col_title=x_title)
    return describe(fig, {**facts, "range": _span(z)})


def attention_heatmap(
    weights: Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    title: str | None = None,
    *,
    show_values: bool = False,
    backend: str = "plotly",
):
    """Attention weights: row ``i`` says how query token ``i`` spreads its attention over the key tokens.

    Shape:
        weights: (Tq, Tk), rows sum to 1
    """
    w = as_array("weights", weights, 2)
    query_tokens, key_tokens = (
        axis_labels("query_tokens", query_tokens, w.shape[0]),
        axis_labels("key_tokens", key_tokens, w.shape[1]),
    )
    return heatmap(
        w,
        key_tokens,
        query_tokens,
        title=title,
        x_title="key (attended to)",
        y_title="query (attending)",
        zmin=0.0,
        zmax=1.0,
        show_values=show_values,
        hover_names=("query", "key"),
        square=True,
        backend=backend,
    )


def cross_attention_heatmap(
    weights: Any,
    src_tokens: Sequence[Any],
    tgt_tokens: Sequence[Any],
    title: str | None = None,
    *,
    show_values: bool = False,
    backend: str = "plotly",
):
    """Encoder-decoder attention: each target (decoder) token's weights over the source (encoder) tokens.

    Shape:
        weights: (T, S) with T = len(tgt_tokens) rows and S = len(src_tokens) columns
    """
    w = as_array("weights", weights, 2)
    if w.shape != (len(tgt_tokens), len(src_tokens)):
        hint = " (transposed? rows are target tokens)" if w.shape == (len(src_tokens), len(tgt_tokens)) else ""
        raise ValueError(
            f"weights: expected shape (len(tgt_tokens), len(src_tokens)) = "
            f"({len(tgt_tokens)}, {len(src_tokens)}), got {tuple(w.shape)}{hint}"
        )
    return heatmap(
        w,
        src_tokens,
        tgt_tokens,
        title=title,
        x_title="source token (key, value)",
        y_title="target token (query)",
        zmin=0.0,
        zmax=1.0,
        show_values=show_values,
        hover_names=("target", "source"),
        square=True,
        backend=backend,
    )


def mask_heatmap(
    mask: Any,
    query_tokens: Sequence[Any],
    key_tokens: Sequence[Any],
    title: str | None = None,
    *,
    backend: str = "plotly",
):
    """An attention mask as a grid: a tick where the query may attend to the key, grey where it may not.

    Shape:
        mask: bool, anything that broadcasts to (Tq, Tk) after dropping leading size-1 dims, e.g. the
        (1, 1, 1, S) of ``padding_mask`` for one sequence or the (T, T) of ``causal_mask``.
    """
    check_backend(backend)
    m = mask.detach().to("cpu").numpy() if isinstance(mask, torch.Tensor) else np.asarray(mask)
    while m.ndim > 2 and m.shape[0] == 1:
        m = m[0]
    shape = (len(query_tokens), len(key_tokens))
    try:
        m = np.broadcast_to(m.astype(bool), shape)
    except ValueError:
        raise ValueError(
            f"mask: expected a shape that broadcasts to (len(query_tokens), len(key_tokens)) = "
            f"{shape}, got {tuple(np.shape(mask))}"
        ) from None
    xl, yl = axis_labels("key_tokens", key_tokens, shape[1]), axis_labels("query_tokens", query_tokens, shape[0])
    if backend == "matplotlib":
        from matplotlib.colors import ListedColormap

        fig, axes = mpl_figure(size=(1.2 + 0.45 * len(xl), 1.0 + 0.4 * len(yl)))
        _mpl_heatmap(axes[0, 0], m.astype(float), xl, yl, ListedColormap([BLOCKED, COLORS[0]]), 0, 1, "key", "query")
        axes[0, 0].set_title(title or "")
        return fig
    fig = go.Figure(
        _heatmap_trace(
            m.astype(int),
            xl,
            yl,
            [[0, BLOCKED], [1, COLORS[0]]],
            0,
            1,
            None,
            text=np.where(m, "✓", ""),
            names=("query", "key"),
            showscale=False,
            xgap=2,
            ygap=2,
        )
    )
    _label_axes(fig, xl, yl, "key", "query", title, square=True)
    return fig


def attention_grid(
    weights: Any,
    query_tokens: Sequence[Any] | None = None,
    key_tokens: Sequence[Any] | None = None,
    title: str = "Attention weights",
    *,
    backend: str = "plotly",
):
    """Every head of every layer. Plotly: a layer menu and a head slider that work without a running kernel.

    Choosing a layer in the menu resets the slider to head 1. Matplotlib: an L x H grid of small heatmaps.

    Shape:
        weights: (L, H, Tq, Tk); one layer's (H, Tq, Tk) fits as ``weights[None]``
    """
    check_backend(backend)
    w = as_array("weights", weights, 4)
    n_layers, n_heads, tq, tk = w.shape
    xl, yl = axis_labels("key_tokens", key_tokens, tk), axis_labels("query_tokens", query_tokens, tq)
    if backend == "matplotlib":
        fig, axes = mpl_figure(n_layers, n_heads, size=(2.4 * n_heads + 1, 2.2 * n_layers + 0.6))
        for (layer, head), ax in np.ndenumerate(axes):
            _mpl_heatmap(ax, w[layer, head], xl, yl, SEQUENTIAL, 0, 1, None, None)
            ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=9)
        fig.suptitle(title)
        return fig

    def visible(layer: int, head: int) -> list[bool]:
        return [(lay, hd) == (layer, head) for lay in range(n_layers) for hd in range(n_heads)]

    def head_slider(layer: int) -> dict:
        steps = [
            dict(
                method="update",
                label=str(head + 1),
                args=[
                    {"visible": visible(layer, head)},
                    {"title.text": f"{title}: layer {layer + 1}, head {head + 1}"},
                ],
            )
            for head in range(n_heads)
        ]
        return dict(
            active=0, steps=steps, currentvalue=dict(prefix="head "), x=0.3, len=0.7, y=0, yanchor="top", pad=dict(t=30)
        )

    fig = go.Figure(
        [
            _heatmap_trace(
                w[lay, hd],
                xl,
                yl,
                SEQUENTIAL,
                0,
                1,
                None,
                names=("query", "key"),
                cells_in_figure=w.size,
                visible=(lay, hd) == (0, 0),
                name=f"layer {lay + 1}, head {hd + 1}",
            )
            for lay in range(n_layers)
            for hd in range(n_heads)
        ]
    )
    buttons = [
        dict(
            method="update",
            label=f"layer {layer + 1}",
            args=[
                {"visible": visible(layer, 0)},
                {"sliders": [head_slider(layer)], "title.text": f"{title}: layer {layer + 1}, head 1"},
            ],
        )
        for layer in range(n_layers)
    ]
    _label_axes(fig, xl, yl, "key", "query", f"{title}: layer 1, head 1", square=True)
    # a control bar under the grid: the layer menu on the left, the head slider beside it
    fig.update_layout(
        sliders=[head_slider(0)],
        height=fig.layout.height + 110,
        margin_b=120,
        updatemenus=[
            dict(buttons=buttons, active=0, direction="up", x=0.0, xanchor="left", y=0, yanchor="top", pad=dict(t=45))
        ],
    )  # opens upwards, into the figure
    return fig


def positional_encoding_heatmap(pe: Any, title: str | None = "Positional encoding", *, backend: str = "plotly"):
    """Positional encodings: one row per position ``pos``, one column per dimension ``i``.

    Shape:
        pe: (T, C)
    """
    pe = as_array("pe", pe, 2)
    return heatmap(
        pe, None, None, title=title, x_title="dimension i", y_title="position pos", diverging=True, backend=backend
    )


def space_legend() -> dict:
    """The one-line legend of ``␣`` as a plotly annotation over the plot's top-right corner, for a figure whose
    token labels a chapter draws itself (bar charts): ``fig.update_layout(annotations=[viz.space_legend()])``."""
    return dict(
        text=SPACE_LEGEND,
        x=1,
        xref="paper",
        xanchor="right",
        y=1,
        yref="paper",
        yanchor="bottom",
        showarrow=False,
        font=dict(size=11),
    )


def token_strip(pieces: Sequence[str], *, title: str | None = None, line_chars: int = 34):
    """A tokenized text as a row of boxes, one per token and as wide as its characters, wrapped at word starts
    into lines of at most ``line_chars`` characters, so that the labels stay readable on a phone (chapter 2).

    Single characters are grey, longer tokens alternate between two colours; ``▁`` is drawn as ``␣``, with a
    one-line legend under the boxes. Hover shows the token as the tokenizer wrote it. Plotly only.
    """
    if isinstance(pieces, str) or not pieces:
        raise ValueError(f"pieces: expected a non-empty list of token strings, got {pieces!r}")
    if not isinstance(line_chars, int) or line_chars < 1:
        raise ValueError(f"line_chars: expected a positive int, got {line_chars!r}")
    lines: list[list[str]] = [[]]
    for piece in map(str, pieces):
        used = sum(map(len, lines[-1]))
        if lines[-1] and used + len(piece) > line_chars and (piece.startswith(SPACE_MARK) or used >= line_chars):
            lines.append([])
        lines[-1].append(piece)
    fig, index = go.Figure(), 0
    for row, line in enumerate(lines):
        widths = [len(p) for p in line]
        colors = [COLORS[5] if len(p) == 1 else COLORS[(index + i) % 2] for i, p in enumerate(line)]
        fig.add_trace(
            go.Bar(
                x=widths,
                base=[sum(widths[:i]) for i in range(len(line))],
                y=[row] * len(line),
                orientation="h",
                text=[token_label(p) for p in line],
                customdata=line,
                textposition="inside",
                insidetextanchor="middle",
                textangle=0,
                textfont=dict(size=14),
                marker=dict(color=colors, line=dict(color="white", width=2)),
                hovertemplate="%{customdata}<extra></extra>",
                showlegend=False,
            )
        )
        index += len(line)
    legend = "grey: a single character" + (f" · {SPACE_LEGEND}" if any(SPACE_MARK in p for p in pieces) else "")
    fig.update_layout(
        title=title,
        height=190 + 46 * len(lines),
        bargap=0.25,
        barmode="overlay",  # room for a slider
        uniformtext=dict(minsize=10, mode="show"),
        margin=dict(l=10, r=10, t=60, b=100),
        xaxis=dict(visible=False, range=[-0.2, line_chars + 0.2]),
        yaxis=dict(visible=False, autorange="reversed"),
        annotations=[
            dict(
                text=legend,
                x=0,
                xref="paper",
                xanchor="left",
                y=0,
                yref="paper",
                yanchor="top",
                yshift=-6,
                showarrow=False,
                font=dict(size=11),
            )
        ],
    )
    return fig


# ----------------------------------------------------------------------------------------------------- curves
def line_plot(
    x: Any,
    ys: Mapping[str, Any],
    *,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    log_x: bool = False,
    log_y: bool = False,
    markers: bool = False,
    backend: str = "plotly",
):
    """One line per entry of ``ys`` (name -> values), all over the same ``x``.

    Shape:
        x: (N,); every value in ys: (N,)
    """
    check_backend(backend)
    x = as_array("x", x, 1)
    if not ys:
        raise ValueError("ys: expected at least one named series, got an empty mapping")
    series = {name: as_array(f"ys[{name!r}]", y, 1) for name, y in ys.items()}
    for name, y in series.items():
        if len(y) != len(x):
            raise ValueError(f"ys[{name!r}]: expected {len(x)} values to match x, got {len(y)}")
    if backend == "matplotlib":
        fig, axes = mpl_figure()
        ax = axes[0, 0]
        for name, y in series.items():
            ax.plot(x, y, marker="o" if markers else None, label=name)
        ax.set(
            title=title or "",
            xlabel=x_title,
            ylabel=y_title,
            xscale="log" if log_x else "linear",
            yscale="log" if log_y else "linear",
        )
        ax.legend()
        return fig
    fig = go.Figure(
        [go.Scatter(x=x, y=y, name=name, mode="lines+markers" if markers else "lines") for name, y in series.items()]
    )
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, hovermode="x unified")
    # log axes read 10^-6, not plotly's SI prefixes ("1µ"), which mix badly with powers of ten in the text
    fig.update_xaxes(type="log" if log_x else "linear", exponentformat="power")
    fig.update_yaxes(type="log" if log_y else "linear", exponentformat="power")
    lines = [[name, _span(y)] for name, y in list(series.items())[:6]]
    facts = dict(kind="lines", title=title, y_title=y_title, x_title=x_title, x_range=_span(x), log_x=bool(log_x))
    return describe(fig, {**facts, "series": lines, "more": max(0, len(series) - 6)})


def training_curves(
    history: Any,
    *,
    keys: Sequence[str] | None = None,
    title: str | None = "Training",
    x_title: str = "step",
    log_y: bool = False,
    backend: str = "plotly",
):
    """Curves from ``{"train_loss": [...], "val_loss": [...]}`` or an object with list attributes (such as
    ``tl.History``): one panel per quantity, where a quantity is the name after its last "_" (so
    ``train_loss`` and ``val_loss`` share the "loss" panel while ``lr`` gets its own). A shorter series (say,
    once per epoch) is stretched over the longest, so that its points line up with the training steps.
    """
    check_backend(backend)
    if isinstance(history, Mapping):
        source = history
    else:
        is_instance = dataclasses.is_dataclass(history) and not isinstance(history, type)
        source = dataclasses.asdict(history) if is_instance else vars(history)
    names = (
        list(keys)
        if keys is not None
        else [
            k
            for k, v in source.items()
            if not k.startswith("_")
            and isinstance(v, (list, tuple, np.ndarray))
            and len(v) > 0
            and all(isinstance(e, (int, float, np.number)) for e in v)
        ]
    )
    missing = [k for k in names if k not in source]
    if not names or missing:
        raise ValueError(f"history: expected non-empty lists of numbers (keys={keys}), got keys {list(source)}")
    panels: dict[str, list[str]] = {}
    for k in names:
        panels.setdefault(k.rsplit("_", 1)[-1], []).append(k)
    longest = max(len(source[k]) for k in names)

    def xs(k: str) -> np.ndarray:
        return np.arange(1, len(source[k]) + 1) * longest / len(source[k])

    if backend == "matplotlib":
        fig, axes = mpl_figure(len(panels), 1, size=(6.5, 2.4 * len(panels) + 0.6))
        for ax, (quantity, members) in zip(axes[:, 0], panels.items(), strict=True):
            for k in members:
                ax.plot(xs(k), source[k], label=k, color=COLORS[names.index(k) % len(COLORS)])
            ax.set(ylabel=quantity, yscale="log" if log_y else "linear")
            ax.legend()
        axes[-1, 0].set_xlabel(x_title)
        fig.suptitle(title or "")
        return fig
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.06)
    for row, (quantity, members) in enumerate(panels.items(), start=1):
        for k in members:
            fig.add_trace(
                go.Scatter(
                    x=xs(k),
                    y=source[k],
                    name=k,
                    mode="lines" if len(source[k]) > 30 else "lines+markers",
                    line=dict(color=COLORS[names.index(k) % len(COLORS)]),
                ),
                row=row,
                col=1,
            )
        fig.update_yaxes(title_text=quantity, type="log" if log_y else "linear", exponentformat="power", row=row, col=1)
    fig.update_xaxes(title_text=x_title, row=len(panels), col=1)
    fig.update_layout(title=title, height=170 + 220 * len(panels), hovermode="x unified")
    curves = [[k, _span(source[k])] for k in names]
    return describe(fig, dict(kind="training", title=title, length=longest, x_title=x_title, series=curves))

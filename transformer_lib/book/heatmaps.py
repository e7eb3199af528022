"""Heatmaps: a labelled matrix, and the chapters' kinds of it (attention weights, cross-attention, masks,
positional encodings), in the book's colours, with plotly (hover, zoom) or matplotlib.

Shape legend: ``Tq`` query length, ``Tk`` key length, ``T`` positions, ``C`` d_model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import torch

from .descriptions import describe, value_range
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
    "heatmap",
    "attention_heatmap",
    "cross_attention_heatmap",
    "mask_heatmap",
    "positional_encoding_heatmap",
]


def heatmap_trace(
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
    value_name: str = "value",
    cells_in_figure: int = 0,
    **kw,
) -> go.Heatmap:
    """One plotly heatmap trace of ``z`` on numeric axes, with hover text naming the row and column labels and the
    cell's value (``value_name``: "weight" for attention weights, so that a reader beside "query" and "key" does not
    take it for V)."""
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
        hovertemplate=f"{names[0]}: {where[0]}<br>{names[1]}: {where[1]}<br>{value_name}: %{{z:.3f}}<extra></extra>",
        **kw,
    )


def _with_space_legend(x_title: str | None, *texts: Sequence[str]) -> str | None:
    """The x-axis title, followed by the one-line legend of ``␣`` when a label or cell text shows it."""
    if not any(SPACE_SHOWN in t for labels in texts for t in labels):
        return x_title
    return f"{x_title} · {SPACE_LEGEND}" if x_title else SPACE_LEGEND


def label_axes(
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


def mpl_heatmap(ax, z, x_labels, y_labels, cmap, vmin, vmax, x_title, y_title, annotate=False):
    """``z`` drawn on the matplotlib axes ``ax`` with its tick labels (and each value, if ``annotate``)."""
    image = ax.imshow(z, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(x_labels)), x_labels, rotation=90 if max(map(len, x_labels)) > 3 else 0)
    ax.set_yticks(range(len(y_labels)), y_labels)
    ax.set_xlabel(x_title)
    ax.set_ylabel(y_title)
    if annotate:
        for (i, j), v in np.ndenumerate(z):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8)
    return image


def _cell_labels(cell_text: Sequence[Sequence[Any]], shape: tuple[int, ...], show_values: bool) -> list[list[str]]:
    """``cell_text`` as token labels, checked against ``z``'s shape and against ``show_values``."""
    cells = [[token_label(t) for t in row] for row in cell_text]
    if len(cells) != shape[0] or any(len(row) != shape[1] for row in cells):
        raise ValueError(
            f"cell_text: expected {shape[0]} rows of {shape[1]} strings to match z, got {[len(row) for row in cells]}"
        )
    if show_values:
        raise ValueError("show_values, cell_text: expected one kind of cell text, got both")
    return cells


def _mpl_heatmap_figure(z, xl, yl, cmap, zmin, zmax, x_title, y_title, title, show_values):
    """:func:`heatmap`'s matplotlib figure: the matrix, a colour bar and the title."""
    fig, axes = mpl_figure(size=(1.2 + 0.45 * len(xl), 1.2 + 0.4 * len(yl)) if len(xl) <= 24 else (7, 5))
    image = mpl_heatmap(axes[0, 0], z, xl, yl, cmap, zmin, zmax, x_title, y_title, annotate=show_values)
    fig.colorbar(image, ax=axes[0, 0])
    axes[0, 0].set_title(title or "")
    return fig


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
    hover_value: str = "value",
    square: bool = False,
    cell_text: Sequence[Sequence[Any]] | None = None,
    show_scale: bool = True,
    backend: str = "plotly",
):
    """A labelled matrix: row ``i`` is ``y_labels[i]`` (top to bottom), column ``j`` is ``x_labels[j]``.

    ``diverging=True`` uses the red-blue scale centred at 0 (for signed values); otherwise light-to-dark blue.
    ``square=True`` keeps the cells square (token-by-token grids); plotly only. ``cell_text`` writes a string
    in each cell (say, the token at that place) at a fixed, readable size; ``show_scale=False`` drops the colour bar.
    ``hover_names`` name the row and the column in the hover text, ``hover_value`` the cell ("weight" for attention).

    Shape:
        z: (rows, cols); cell_text: (rows, cols)
    """
    check_backend(backend)
    z = as_array("z", z, 2)
    xl, yl = axis_labels("x_labels", x_labels, z.shape[1]), axis_labels("y_labels", y_labels, z.shape[0])
    if diverging and zmin is None and zmax is None:
        zmax = float(np.abs(z).max()) or 1.0
        zmin = -zmax
    cells = _cell_labels(cell_text, z.shape, show_values) if cell_text is not None else None
    if backend == "matplotlib":
        cmap = DIVERGING if diverging else SEQUENTIAL
        return _mpl_heatmap_figure(z, xl, yl, cmap, zmin, zmax, x_title, y_title, title, show_values)
    text = np.vectorize(lambda v: f"{v:.2f}")(z) if show_values else None
    # plotly would shrink a word to its cell
    extra: dict[str, Any] = {} if cell_text is None else dict(textfont=dict(size=12))
    if cells is not None:
        text = np.array(cells, dtype=object)
    fig = go.Figure(
        heatmap_trace(
            z,
            xl,
            yl,
            DIVERGING if diverging else SEQUENTIAL,
            zmin,
            zmax,
            0.0 if diverging else None,
            text=text,
            names=hover_names,
            value_name=hover_value,
            showscale=show_scale,
            **extra,
        )
    )
    label_axes(
        fig,
        xl,
        yl,
        x_title,
        y_title,
        title,
        square,
        cell_text=[t for row in cells for t in row] if cells is not None else (),
    )
    facts = dict(kind="heatmap", title=title, rows=len(yl), row_title=y_title, cols=len(xl), col_title=x_title)
    return describe(fig, {**facts, "range": value_range(z)})


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
        hover_value="weight",
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
        hover_value="weight",
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
        mpl_heatmap(axes[0, 0], m.astype(float), xl, yl, ListedColormap([BLOCKED, COLORS[0]]), 0, 1, "key", "query")
        axes[0, 0].set_title(title or "")
        return fig
    fig = go.Figure(
        heatmap_trace(
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
    label_axes(fig, xl, yl, "key", "query", title, square=True)
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

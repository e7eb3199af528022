"""Every head of every layer in one figure: a layer menu and a head slider that work on the website without a
kernel (plotly), or an L x H grid of small heatmaps (matplotlib).

Shape legend: ``L`` layers, ``H`` heads, ``Tq`` query length, ``Tk`` key length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .heatmaps import heatmap_trace, label_axes, mpl_heatmap
from .style import SEQUENTIAL, as_array, axis_labels, check_backend, mpl_figure

__all__ = ["attention_grid"]


def _visible(n_layers: int, n_heads: int, layer: int, head: int) -> list[bool]:
    """Which of the figure's traces (one per layer and head, layer-major) shows: the one of ``layer``, ``head``."""
    return [(lay, hd) == (layer, head) for lay in range(n_layers) for hd in range(n_heads)]


def _head_slider(title: str, n_layers: int, n_heads: int, layer: int) -> dict:
    """The slider over the heads of one layer; the layer menu swaps it for the chosen layer's."""
    steps = [
        dict(
            method="update",
            label=str(head + 1),
            args=[
                {"visible": _visible(n_layers, n_heads, layer, head)},
                {"title.text": f"{title}: layer {layer + 1}, head {head + 1}"},
            ],
        )
        for head in range(n_heads)
    ]
    return dict(
        active=0, steps=steps, currentvalue=dict(prefix="head "), x=0.3, len=0.7, y=0, yanchor="top", pad=dict(t=30)
    )


def _layer_menu(title: str, n_layers: int, n_heads: int) -> dict:
    """The layer menu: each entry shows head 1 of its layer and puts that layer's head slider in place."""
    buttons = [
        dict(
            method="update",
            label=f"layer {layer + 1}",
            args=[
                {"visible": _visible(n_layers, n_heads, layer, 0)},
                {
                    "sliders": [_head_slider(title, n_layers, n_heads, layer)],
                    "title.text": f"{title}: layer {layer + 1}, head 1",
                },
            ],
        )
        for layer in range(n_layers)
    ]
    # opens upwards, into the figure
    return dict(buttons=buttons, active=0, direction="up", x=0.0, xanchor="left", y=0, yanchor="top", pad=dict(t=45))


def _mpl_grid(w: np.ndarray, xl: list[str], yl: list[str], title: str):
    """The matplotlib figure: an L x H grid of small heatmaps."""
    n_layers, n_heads = w.shape[:2]
    fig, axes = mpl_figure(n_layers, n_heads, size=(2.4 * n_heads + 1, 2.2 * n_layers + 0.6))
    for (layer, head), ax in np.ndenumerate(axes):
        mpl_heatmap(ax, w[layer, head], xl, yl, SEQUENTIAL, 0, 1, None, None)
        ax.set_title(f"layer {layer + 1}, head {head + 1}", fontsize=9)
    fig.suptitle(title)
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
        return _mpl_grid(w, xl, yl, title)
    fig = go.Figure(
        [
            heatmap_trace(
                w[lay, hd],
                xl,
                yl,
                SEQUENTIAL,
                0,
                1,
                None,
                names=("query", "key"),
                value_name="weight",
                cells_in_figure=w.size,
                visible=(lay, hd) == (0, 0),
                name=f"layer {lay + 1}, head {hd + 1}",
            )
            for lay in range(n_layers)
            for hd in range(n_heads)
        ]
    )
    label_axes(fig, xl, yl, "key", "query", f"{title}: layer 1, head 1", square=True)
    # a control bar under the grid: the layer menu on the left, the head slider beside it
    fig.update_layout(
        sliders=[_head_slider(title, n_layers, n_heads, 0)],
        height=fig.layout.height + 110,
        margin_b=120,
        updatemenus=[_layer_menu(title, n_layers, n_heads)],
    )
    return fig

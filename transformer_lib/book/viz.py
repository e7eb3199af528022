"""The chapters' one import for figures (``from transformer_lib.book import viz``): a thin re-export, no code.

Every figure is drawn in one colour scheme and takes ``backend="plotly"`` (interactive: hover, zoom, sliders; the
default) or ``"matplotlib"`` (a static :class:`matplotlib.figure.Figure`) and returns the figure; a notebook shows
it when it is the last expression of a cell, or with ``fig.show()``. Arrays may be torch tensors (on any device)
or NumPy arrays. Each figure lives in the module named for its kind:

- :mod:`.heatmaps`: :func:`heatmap` and its kinds (attention, cross-attention, masks, positional encodings);
- :mod:`.attention_grids`: :func:`attention_grid`, every head of every layer behind a menu and a slider;
- :mod:`.token_strips`: :func:`token_strip` and :func:`space_legend`;
- :mod:`.curves`: :func:`line_plot`, :func:`training_curves` and :func:`learning_rate_schedule`;
- :mod:`.descriptions`: :func:`describe`, a figure's text alternative;
- :mod:`.style`: the colours, the plotly template and the input checks; :mod:`.block_diagrams`: boxes and arrows.
"""

from __future__ import annotations

from .attention_grids import attention_grid
from .block_diagrams import Box, block_diagram
from .curves import learning_rate_schedule, line_plot, training_curves
from .descriptions import describe
from .heatmaps import (
    attention_heatmap,
    cross_attention_heatmap,
    heatmap,
    mask_heatmap,
    positional_encoding_heatmap,
)
from .style import COLORS, DIVERGING, SEQUENTIAL, SPACE_LEGEND, token_label
from .token_strips import space_legend, token_strip

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
    "learning_rate_schedule",
    "block_diagram",
]

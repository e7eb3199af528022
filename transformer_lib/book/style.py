"""The book's figure style, shared by the figures (:mod:`.heatmaps`, :mod:`.curves`, ..., gathered in :mod:`.viz`)
and the architecture drawings (:mod:`.block_diagrams` and the diagrams built on it): one colour scheme, the plotly
template and renderer, and the input checks every figure helper uses.

How a plotly figure reaches the reader (set up once, when this module is imported; ``import transformer_lib``
alone loads no plotly): in a live notebook the figure is sent as plotly's own MIME type, which JupyterLab,
Notebook 7 and VS Code draw with the plotly.js they bundle (Colab keeps plotly's ``"colab"`` renderer); on the
website :mod:`transformer_lib.site.figures` draws that MIME type with the site's one shared ``plotly.min.js``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import torch

from ..tokenization import SPACE_MARK
from .toolbar import PLOTLY_CONFIG

__all__ = ["COLORS", "SEQUENTIAL", "DIVERGING", "BLOCKED", "SPACE_SHOWN", "SPACE_LEGEND", "token_label"]

COLORS = ("#2f6db5", "#e07b39", "#3a9e6a", "#b5403a", "#7a5ab5", "#8c8c8c")  # lines, bars, boxes
SEQUENTIAL = "Blues"  # values in [0, 1] such as attention weights; the same name exists in matplotlib
DIVERGING = "RdBu"  # signed values centred at 0, such as positional encodings
BLOCKED = "#e6e6e6"  # mask cells that may not be attended to
_TEMPLATE = "transformer_book"
# The tokenizers' word-start mark "▁" (U+2581, "a space stood here") is a block glyph that fonts draw as a heavy
# underline, which at a figure's label size reads as "_" or as an underlined letter. Figures show it as "␣"
# (U+2423, the usual sign for a visible space) and say so in one line; printed tokens keep the real "▁".
SPACE_SHOWN = "␣"
SPACE_LEGEND = f"{SPACE_SHOWN} = {SPACE_MARK}, a space before the word"


def token_label(token: Any) -> str:
    """A token as figures show it: ``str(token)`` with the word-start mark ``▁`` drawn as ``␣`` (chapter 2).

    Every figure helper of :mod:`.viz` passes its labels through this; a chapter that draws tokens itself (a bar
    label, an HTML box) calls it too, and adds :data:`SPACE_LEGEND` where the figure has room for one line.
    """
    return str(token).replace(SPACE_MARK, SPACE_SHOWN)


def as_array(name: str, x: Any, ndim: int) -> np.ndarray:
    """A float NumPy copy of ``x`` (tensor on any device, array or nested list) with exactly ``ndim`` dims."""
    if isinstance(x, torch.Tensor):
        x = x.detach().to(device="cpu", dtype=torch.float32).numpy()
    arr = np.asarray(x, dtype=float)
    if arr.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(arr.shape)}")
    return arr


def axis_labels(name: str, labels: Sequence[Any] | None, n: int) -> list[str]:
    """Axis labels as strings (tokens as :func:`token_label` shows them); positions ``0..n-1`` when ``labels`` is
    None."""
    if labels is None:
        return [str(i) for i in range(n)]
    labels = [token_label(t) for t in labels]
    if len(labels) != n:
        raise ValueError(f"{name}: expected {n} labels to match the data, got {len(labels)}")
    return labels


def check_backend(backend: str) -> None:
    if backend not in ("plotly", "matplotlib"):
        raise ValueError(f"backend: expected 'plotly' or 'matplotlib', got {backend!r}")


def mpl_figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = (6.0, 4.5)):
    """A matplotlib Figure outside pyplot, so a notebook shows it once (as the cell's value), not twice."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax in axes.flat:
        ax.set_prop_cycle(color=list(COLORS))
    return fig, axes


def _configure_plotly() -> None:
    """Register the book's template and pick a renderer that neither inlines nor downloads plotly.js."""
    pio.templates[_TEMPLATE] = go.layout.Template(
        layout=dict(
            colorway=list(COLORS),
            font=dict(size=13),
            margin=dict(l=60, r=20, t=60, b=50),
            colorscale=dict(sequential=SEQUENTIAL, diverging=DIVERGING),
        )
    )
    pio.templates.default = f"plotly_white+{_TEMPLATE}"
    # the toolbar in Jupyter as on the website: no plotly logo, no "Share chart..." upload button
    pio.renderers["plotly_mimetype"].config = dict(PLOTLY_CONFIG)
    if os.environ.get("PLOTLY_RENDERER"):
        return  # the reader's explicit choice wins
    if "IPython" not in sys.modules:
        return  # plain Python (scripts, tests): nothing is shown, and reading the renderer costs ~1 s of imports
    # plotly picks "plotly_mimetype" inside Jupyter kernels (>= 6.1) but may add "notebook", which pastes the
    # 4.8 MB plotly.js into the first output. Platforms plotly recognises (colab, vscode, ...) keep theirs.
    if pio.renderers.default and "notebook" in pio.renderers.default.split("+"):
        pio.renderers.default = "plotly_mimetype"


_configure_plotly()

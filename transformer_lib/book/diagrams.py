"""Architecture drawn by code, no image file: labelled boxes joined by arrows (the introduction's map of the
Transformer), in the book's style, with plotly (interactive) or matplotlib (static)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from .style import COLORS, check_backend, mpl_figure

__all__ = ["Box", "block_diagram"]


@dataclass(frozen=True)
class Box:
    """One labelled box of a :func:`block_diagram`, centred at (x, y) in diagram units.

    A newline in ``label`` starts a new line of text.
    """

    name: str
    label: str
    x: float
    y: float
    width: float = 2.0
    height: float = 0.6
    color: str = COLORS[0]


def block_diagram(boxes: Sequence[Box], arrows: Sequence[tuple[str, ...]] = (), *, title: str | None = None,
                  height: int = 560, backend: str = "plotly"):
    """Boxes joined by arrows: an architecture drawn by code, no image file.

    An arrow is ``(from_name, to_name)`` or ``(from_name, to_name, label)``; it runs from the top edge of one
    box to the bottom edge of the other, or side to side when the boxes share a row.
    """
    check_backend(backend)
    by_name = {b.name: b for b in boxes}
    if len(by_name) != len(boxes):
        raise ValueError("boxes: every Box needs a unique name")
    for arrow in arrows:
        if len(arrow) not in (2, 3) or arrow[0] not in by_name or arrow[1] not in by_name:
            raise ValueError(f"arrows: expected (from_name, to_name[, label]) naming boxes in {list(by_name)}, "
                             f"got {arrow!r}")

    def ends(a: Box, b: Box) -> tuple[float, float, float, float]:
        if abs(a.y - b.y) < 1e-9:  # same row: side to side
            sign = 1 if b.x > a.x else -1
            return a.x + sign * a.width / 2, a.y, b.x - sign * b.width / 2, b.y
        sign = 1 if b.y > a.y else -1
        return a.x, a.y + sign * a.height / 2, b.x, b.y - sign * b.height / 2

    segments = [(*ends(by_name[a[0]], by_name[a[1]]), a[2] if len(a) == 3 else "") for a in arrows]
    xs = [v for b in boxes for v in (b.x - b.width / 2, b.x + b.width / 2)]
    ys = [v for b in boxes for v in (b.y - b.height / 2, b.y + b.height / 2)]
    if backend == "matplotlib":
        from matplotlib.patches import FancyBboxPatch

        fig, axes = mpl_figure(size=(7, height / 80))
        ax = axes[0, 0]
        for b in boxes:
            ax.add_patch(FancyBboxPatch((b.x - b.width / 2, b.y - b.height / 2), b.width, b.height,
                                        boxstyle="round,pad=0.02", facecolor=b.color, alpha=0.25,
                                        edgecolor=b.color))
            ax.text(b.x, b.y, b.label, ha="center", va="center", fontsize=8)
        for x0, y0, x1, y1, label in segments:
            ax.annotate("", xy=(x1, y1), xytext=(x0, y0), arrowprops=dict(arrowstyle="->", color="#555555"))
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.1, label, ha="center", va="bottom", fontsize=8)
        ax.set(xlim=(min(xs) - 0.2, max(xs) + 0.2), ylim=(min(ys) - 0.2, max(ys) + 0.2), title=title or "")
        ax.axis("off")
        return fig
    fig = go.Figure()
    for b in boxes:
        fig.add_shape(type="rect", x0=b.x - b.width / 2, x1=b.x + b.width / 2, y0=b.y - b.height / 2,
                      y1=b.y + b.height / 2, line=dict(color=b.color), fillcolor=b.color, opacity=0.25)
        fig.add_annotation(x=b.x, y=b.y, text=b.label.replace("\n", "<br>"), showarrow=False, font=dict(size=12))
    for x0, y0, x1, y1, label in segments:
        fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y", text="",
                           showarrow=True, arrowhead=2, arrowwidth=1.5, arrowcolor="#555555")
        if label:
            fig.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=label, showarrow=False, yshift=12,
                               font=dict(size=11, color="#555555"))
    fig.update_xaxes(visible=False, range=[min(xs) - 0.2, max(xs) + 0.2])
    fig.update_yaxes(visible=False, range=[min(ys) - 0.2, max(ys) + 0.2])
    fig.update_layout(title=title, height=height, plot_bgcolor="white", margin=dict(l=10, r=10, t=50, b=10))
    return fig

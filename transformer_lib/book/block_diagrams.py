"""Boxes joined by arrows: an architecture drawn by code, no image file, in the book's style, with plotly
(interactive) or matplotlib (static). :func:`block_diagram` draws any :class:`Box` es and :class:`Arrow` s;
:func:`layout_diagram` gives a hand-drawn figure (the KV cache's) the same page. The diagrams built on them:
:mod:`.transformer_diagram` (the paper's Figure 1), :mod:`.attention_diagrams`, :mod:`.flow_diagrams`.

Every box is named: its plotly shape and its label annotation carry the box's ``name``, so a test (or a reader's
code) can find a box in the figure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from .labels import alt_meta, spaces_outside_brackets
from .style import COLORS, check_backend, mpl_figure

__all__ = ["Box", "Arrow", "block_diagram", "layout_diagram", "diagram_facts", "DIM_TEXT"]

DIM_TEXT = "#a0a4a8"  # the label colour of a box outside the highlighted part
ARROW_COLOR = "#555555"


@dataclass(frozen=True)
class Box:
    """One labelled box of a :func:`block_diagram`, centred at (x, y) in diagram units.

    A newline in ``label`` starts a new line of text. ``dim`` greys the box out (it is not the part being
    explained); ``frame`` draws a dashed outline with its label in the top-left corner (a repeated block, "N×");
    ``hover`` is shown when the pointer rests on the label; ``group`` is the part of the model the box belongs to.
    """

    name: str
    label: str
    x: float
    y: float
    width: float = 2.0
    height: float = 0.6
    color: str = COLORS[0]
    group: str = ""
    dim: bool = False
    frame: bool = False
    hover: str = ""
    font_size: int = 12


@dataclass(frozen=True)
class Arrow:
    """An arrow from box ``src`` to box ``dst``. ``route``: ``"auto"`` (straight, edge to edge), ``"vh"`` (up or
    down to the target's row, then sideways into its side), ``"hv"`` (sideways to the target's column, then up or
    down into it), or ``"left"`` / ``"right"`` (out of the source's side to a vertical lane beside both boxes, along
    it, and into the target's same side: a bypass around what lies between, such as a residual connection). The
    lane lies ``lane`` diagram units outside the wider of the two boxes. ``name`` names the arrow's lines and head
    in the figure, as a box's name does."""

    src: str
    dst: str
    label: str = ""
    route: str = "auto"
    name: str = ""
    lane: float = 0.15


ROUTES = ("auto", "vh", "hv", "left", "right")


def _as_arrow(arrow: Arrow | tuple, names: dict) -> Arrow:
    if isinstance(arrow, tuple) and len(arrow) in (2, 3):
        arrow = Arrow(*arrow)
    if not isinstance(arrow, Arrow) or arrow.src not in names or arrow.dst not in names:
        raise ValueError(f"arrows: expected (from_name, to_name[, label]) naming boxes in {list(names)}, got {arrow!r}")
    if arrow.route not in ROUTES:
        raise ValueError(f"arrows: route must be one of {list(ROUTES)}, got {arrow.route!r}")
    return arrow


def _points(a: Box, b: Box, route: str, lane: float = 0.15) -> list[tuple[float, float]]:
    """The corners of an arrow's path from box a to box b; the last segment carries the arrowhead."""
    up = 1 if b.y > a.y else -1
    right = 1 if b.x > a.x else -1
    if route in ("left", "right"):  # a bypass: out of a's side, along a lane beside both boxes, into b's side
        side = -1 if route == "left" else 1
        edge_a, edge_b = a.x + side * a.width / 2, b.x + side * b.width / 2
        x = min(edge_a, edge_b) - lane if side < 0 else max(edge_a, edge_b) + lane
        return [(edge_a, a.y), (x, a.y), (x, b.y), (edge_b, b.y)]
    if route == "vh":
        return [(a.x, a.y + up * a.height / 2), (a.x, b.y), (b.x - right * b.width / 2, b.y)]
    if route == "hv":
        return [(a.x + right * a.width / 2, a.y), (b.x, a.y), (b.x, b.y - up * b.height / 2)]
    if abs(a.y - b.y) < 1e-9:  # same row: side to side
        return [(a.x + right * a.width / 2, a.y), (b.x - right * b.width / 2, b.y)]
    x0, x1 = a.x, b.x
    if abs(a.x - b.x) < b.width / 2:  # the target spans the source's column: straight up (or down)
        x1 = a.x
    elif abs(a.x - b.x) < a.width / 2:  # the source spans the target's column
        x0 = b.x
    return [(x0, a.y + up * a.height / 2), (x1, b.y - up * b.height / 2)]


def layout_diagram(
    fig: go.Figure,
    x_range: tuple[float, float],
    y_range: tuple[float, float],
    *,
    title: str | None,
    height: int,
    design_width: int,
) -> go.Figure:
    """Hidden axes over the given ranges, a white page, and the width the labels were sized for: on a narrower
    screen the site shrinks the labels with the boxes (``meta.fit_text_width``, book/_static/plotly-theme.js)."""
    lines = 0 if not title else 1
    facts = diagram_facts(fig, title)  # before the title is broken into lines
    if title and len(title) > design_width // 10:  # plotly never wraps a title: break it at the middle space
        spaces = spaces_outside_brackets(title)  # never inside a shape: "(B, H, L, D)" stays on one line
        if spaces:
            middle = len(title) / 2
            cut = min(spaces, key=lambda i: abs(i - middle))
            title, lines = title[:cut] + "<br>" + title[cut + 1 :], 2
    fig.update_xaxes(visible=False, range=list(x_range), fixedrange=True)
    fig.update_yaxes(visible=False, range=list(y_range), fixedrange=True)
    fig.update_layout(
        title=title,
        height=height,
        plot_bgcolor="white",
        showlegend=False,
        margin=dict(l=10, r=10, t=(10, 50, 75)[lines], b=10),
        meta=dict(fit_text_width=design_width, **alt_meta(facts)),
    )
    return fig


def diagram_facts(fig: go.Figure, title: str | None) -> dict[str, Any]:
    """A diagram's text alternative, as facts for :func:`.labels.alt_sentence`, read from what it draws: its title and
    each labelled part whose first line is new, in drawing order (at most 14, then how many more), so that it names
    the same parts as the picture."""
    parts: dict[str, str] = {}  # first line -> the whole label (the catalog translates whole labels)
    for note in fig.layout.annotations or ():
        text = str(note.text or "")
        first = re.sub(r"<[^>]+>", " ", text.split("<br>")[0]).strip()
        if first and first not in parts:
            parts[first] = text
    return dict(kind="diagram", title=title, parts=list(parts.values())[:14], more=max(0, len(parts) - 14))


def _box_parts(boxes: Sequence[Box]) -> tuple[list[dict], list[dict]]:
    """The shapes and annotations of the boxes: each box a named rectangle and its label; a frame (a repeated block)
    a dashed outline, underneath."""
    shapes: list[dict] = []
    notes: list[dict] = []
    for b in sorted(boxes, key=lambda b: not b.frame):  # frames first, underneath
        color = "#c8c8c8" if b.dim else b.color
        shapes.append(
            dict(
                type="rect",
                name=b.name,
                x0=b.x - b.width / 2,
                x1=b.x + b.width / 2,
                y0=b.y - b.height / 2,
                y1=b.y + b.height / 2,
                fillcolor=None if b.frame else color,
                line=dict(color=color, dash="dash" if b.frame else "solid", width=1 if b.dim else 1.5),
                opacity=1.0 if b.frame else (0.12 if b.dim else 0.3),
                layer="below",
            )
        )
    for b in boxes:
        if b.frame:
            notes.append(
                dict(
                    name=b.name,
                    x=b.x - b.width / 2,
                    y=b.y + b.height / 2,
                    text=b.label,
                    showarrow=False,
                    xanchor="left",
                    yanchor="top",
                    xshift=3,
                    yshift=-2,
                    hovertext=b.hover or None,
                    font=dict(size=b.font_size - 1, color=DIM_TEXT if b.dim else b.color),
                )
            )
        else:
            notes.append(
                dict(
                    name=b.name,
                    x=b.x,
                    y=b.y,
                    text=b.label.replace("\n", "<br>"),
                    showarrow=False,
                    hovertext=b.hover or None,
                    font=dict(size=b.font_size, color=DIM_TEXT if b.dim else None),
                )
            )
    return shapes, notes


def _arrow_parts(paths: list) -> tuple[list[dict], list[dict]]:
    """The shapes and annotations of the arrows: each arrow named line segments and an arrowhead on the last one, with
    its label beside it."""
    shapes: list[dict] = []
    notes: list[dict] = []
    for points, label, name in paths:
        # every segment but the last: a plain line
        for (x0, y0), (x1, y1) in zip(points[:-2], points[1:-1], strict=False):
            shapes.append(
                dict(
                    type="line", name=name or None, x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=ARROW_COLOR, width=1.5)
                )
            )
        (x0, y0), (x1, y1) = points[-2:]
        notes.append(
            dict(
                name=name or None,
                x=x1,
                y=y1,
                ax=x0,
                ay=y0,
                xref="x",
                yref="y",
                axref="x",
                ayref="y",
                text="",
                showarrow=True,
                arrowhead=2,
                arrowwidth=1.5,
                arrowcolor=ARROW_COLOR,
            )
        )
        if label:
            vertical = abs(x0 - x1) < 1e-9
            notes.append(
                dict(
                    x=(x0 + x1) / 2,
                    y=(y0 + y1) / 2,
                    text=label,
                    showarrow=False,
                    xanchor="left" if vertical else "center",
                    xshift=4 if vertical else 0,
                    yshift=0 if vertical else 10,
                    font=dict(size=11, color=ARROW_COLOR),
                )
            )
    return shapes, notes


def block_diagram(
    boxes: Sequence[Box],
    arrows: Sequence[tuple[str, ...] | Arrow] = (),
    *,
    title: str | None = None,
    height: int = 560,
    backend: str = "plotly",
    design_width: int = 720,
):
    """Boxes joined by arrows: an architecture drawn by code, no image file.

    An arrow is ``(from_name, to_name)``, ``(from_name, to_name, label)`` or an :class:`Arrow`; by default it runs
    from the top edge of one box to the bottom edge of the other, or side to side when the boxes share a row.
    ``design_width`` is the narrowest width (px) at which the labels fit their boxes at full size.
    """
    check_backend(backend)
    by_name = {b.name: b for b in boxes}
    if len(by_name) != len(boxes):
        raise ValueError("boxes: every Box needs a unique name")
    resolved = [_as_arrow(a, by_name) for a in arrows]
    paths = [(_points(by_name[a.src], by_name[a.dst], a.route, a.lane), a.label, a.name) for a in resolved]
    xs = [v for b in boxes for v in (b.x - b.width / 2, b.x + b.width / 2)]
    ys = [v for b in boxes for v in (b.y - b.height / 2, b.y + b.height / 2)]
    x_range, y_range = (min(xs) - 0.2, max(xs) + 0.2), (min(ys) - 0.2, max(ys) + 0.2)
    if backend == "matplotlib":
        return _matplotlib(boxes, paths, x_range, y_range, title, height)
    box_shapes, box_notes = _box_parts(boxes)
    arrow_shapes, arrow_notes = _arrow_parts(paths)
    # all the shapes and labels in one go: fig.add_shape/add_annotation validate the whole list again on every call
    # (quadratic: 1.2 s of CPU for Figure 1's ~100 parts, against 0.1 s at once)
    fig = go.Figure()
    fig.update_layout(shapes=box_shapes + arrow_shapes, annotations=box_notes + arrow_notes)
    return layout_diagram(fig, x_range, y_range, title=title, height=height, design_width=design_width)


def _plain(text: str) -> str:
    """A plotly label for matplotlib: W<sup>Q</sup> becomes W^Q."""
    return re.sub(r"<sup>(.*?)</sup>", r"^\1", text)


def _matplotlib(boxes, paths, x_range, y_range, title, height):
    from matplotlib.patches import FancyBboxPatch

    fig, axes = mpl_figure(size=(7, height / 80))
    ax = axes[0, 0]
    for b in boxes:
        color = "#c8c8c8" if b.dim else b.color
        ax.add_patch(
            FancyBboxPatch(
                (b.x - b.width / 2, b.y - b.height / 2),
                b.width,
                b.height,
                boxstyle="round,pad=0.02",
                facecolor="none" if b.frame else color,
                alpha=1.0 if b.frame else (0.12 if b.dim else 0.25),
                edgecolor=color,
                linestyle="--" if b.frame else "-",
            )
        )
        if b.frame:
            ax.text(
                b.x - b.width / 2 + 0.05,
                b.y + b.height / 2 - 0.05,
                b.label,
                ha="left",
                va="top",
                fontsize=7,
                color=color,
            )
        else:
            ax.text(
                b.x, b.y, _plain(b.label), ha="center", va="center", fontsize=8, color=DIM_TEXT if b.dim else "black"
            )
    for points, label, _name in paths:
        ax.plot([p[0] for p in points[:-1]], [p[1] for p in points[:-1]], color=ARROW_COLOR, lw=1)
        ax.annotate("", xy=points[-1], xytext=points[-2], arrowprops=dict(arrowstyle="->", color=ARROW_COLOR))
        (x0, y0), (x1, y1) = points[-2:]
        ax.text((x0 + x1) / 2, (y0 + y1) / 2 + 0.1, label, ha="center", va="bottom", fontsize=8)
    ax.set(xlim=x_range, ylim=y_range, title=title or "")
    ax.axis("off")
    return fig

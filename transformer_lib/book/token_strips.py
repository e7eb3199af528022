"""A tokenized text drawn as tokens (chapter 2): a row of boxes, one per token, and the one-line legend of ``␣``
for a chapter's own token figures."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from ..tokenization import SPACE_MARK
from .style import COLORS, SPACE_LEGEND, token_label

__all__ = ["token_strip", "space_legend"]


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

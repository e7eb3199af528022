"""Architecture drawn by code, no image file: labelled boxes joined by arrows, in the book's style, with plotly
(interactive) or matplotlib (static). :func:`transformer_diagram` draws the paper's Figure 1 from a live model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go
from torch import nn

from ..embeddings import SinusoidalPositionalEncoding
from .style import COLORS, check_backend, mpl_figure

__all__ = ["Box", "block_diagram", "transformer_diagram"]


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
    fig.update_layout(title=title, height=height, plot_bgcolor="white", margin=dict(l=10, r=10, t=50, b=10),
                      # on a narrow screen the site shrinks the labels with the boxes (book/_static/plotly-theme.js)
                      meta=dict(fit_text_width=720))
    return fig


def _embedding_label(embed: nn.Module) -> tuple[str, str]:
    vocab, width = embed.token.weight.shape
    scale = " × √d_model" if embed.token.scale else ""
    kind = "sinusoidal" if isinstance(embed.position, SinusoidalPositionalEncoding) else "learned"
    return f"embedding {vocab} × {width}{scale}", f"+ {kind} positional encoding"


def _block_label(stack: nn.Module, kind: str) -> str:
    """What every layer of an encoder or decoder stack does, read from its first layer (all are alike)."""
    layer = stack.layers[0]
    attn, ff = layer.self_attn, layer.ff
    heads = f"{attn.n_heads} heads of d_k = {attn.d_head}"
    lines = [f"{kind} stack × N = {len(stack.layers)}"]
    if kind == "decoder":
        lines.append(f"masked self-attention, {heads}")
        if layer.cross_attn is not None:
            lines.append(f"cross-attention, {layer.cross_attn.n_heads} heads")
    else:
        lines.append(f"self-attention, {heads}")
    lines.append(f"feed-forward {ff.linear1.in_features} → {ff.linear1.out_features} → {ff.linear2.out_features}"
                 f" ({ff.activation})")
    norm_first = (layer.attn_res if kind == "encoder" else layer.self_res).norm_first
    lines.append("LayerNorm before each sub-layer, + x after" if norm_first else "Add & Norm after each sub-layer")
    if stack.norm is not None:
        lines.append("then one final LayerNorm")
    return "\n".join(lines)


def transformer_diagram(model: nn.Module, *, title: str | None = None, height: int = 700,
                        backend: str = "plotly"):
    """The paper's Figure 1 drawn from a live :class:`~transformer_lib.Transformer`: every number and option on
    it (layers, heads, widths, activation, post- or pre-LN, positional encoding, tied output layer) is read
    from the model's own modules, so the picture cannot disagree with the code it shows."""
    from ..models import Transformer

    if not isinstance(model, Transformer):
        raise TypeError(f"model: expected a transformer_lib Transformer, got {type(model).__name__}")
    grey, orange, blue, green = COLORS[5], COLORS[1], COLORS[0], COLORS[2]
    s_emb, s_pe = _embedding_label(model.src_embed)
    t_emb, t_pe = _embedding_label(model.tgt_embed)
    d_model, vocab = model.lm_head.in_features, model.lm_head.out_features
    tied = " (tied to the target embedding)" if model.lm_head.weight is model.tgt_embed.token.weight else ""
    boxes = [
        Box("s_ids", "source token IDs", 0, 0, color=grey),
        Box("s_emb", s_emb, 0, 1, width=3.2, color=orange),
        Box("s_pe", s_pe, 0, 2, width=3.2, color=orange),
        Box("enc", _block_label(model.encoder, "encoder"), 0, 3.9, width=3.7, height=1.9, color=blue),
        Box("t_ids", "target token IDs (shifted right)", 4.2, 0, width=2.8, color=grey),
        Box("t_emb", t_emb, 4.2, 1, width=3.2, color=orange),
        Box("t_pe", t_pe, 4.2, 2, width=3.2, color=orange),
        Box("dec", _block_label(model.decoder, "decoder"), 4.2, 3.9, width=3.7, height=1.9, color=blue),
        Box("linear", f"linear {d_model} → {vocab}{tied}", 4.2, 5.75, width=3.7, color=green),
        Box("softmax", "softmax: next-token probabilities", 4.2, 6.65, width=3.0, color=green),
    ]
    paths = (["s_ids", "s_emb", "s_pe", "enc"], ["t_ids", "t_emb", "t_pe", "dec", "linear", "softmax"])
    arrows = [(a, b) for path in paths for a, b in zip(path, path[1:])]
    arrows.append(("enc", "dec", "keys, values"))
    return block_diagram(boxes, arrows, title=title or "The Transformer, drawn from the model object",
                         height=height, backend=backend)

"""The paper's Figure 1 drawn from a live model (:func:`transformer_diagram`): every number and option on it is
read from the model's own modules, with the part a chapter explains highlighted (:data:`FIGURE_1_PARTS`). The
boxes and arrows are :func:`.block_diagrams.block_diagram`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from ..embeddings import InputEmbedding, SinusoidalPositionalEncoding
from ..layers import Decoder, DecoderLayer, Encoder, EncoderLayer
from .block_diagrams import Arrow, Box, block_diagram
from .style import COLORS

if TYPE_CHECKING:
    from ..models import Transformer, TransformerConfig

__all__ = ["transformer_diagram", "FIGURE_1_PARTS"]

FIGURE_1_PARTS = (
    "tokens",
    "embedding",
    "positional",
    "self_attention",
    "masked_self_attention",
    "cross_attention",
    "feed_forward",
    "add_norm",
    "output",
)


def _highlight_set(highlight: str | Iterable[str] | None) -> set[str] | None:
    if highlight is None:
        return None
    parts = {highlight} if isinstance(highlight, str) else set(highlight)
    unknown = sorted(p for p in parts if p not in FIGURE_1_PARTS)
    if unknown or not parts:
        raise ValueError(
            f"highlight: expected one or more part names from {list(FIGURE_1_PARTS)}, "
            f"got {sorted(parts) if parts else 'nothing'}"
        )
    return parts


def _embedding_labels(embed: InputEmbedding) -> tuple[str, str, str]:
    vocab, width = embed.token.weight.shape
    scale = " × √d_model" if embed.token.scale else ""
    kind = "sinusoidal" if isinstance(embed.position, SinusoidalPositionalEncoding) else "learned"
    return (
        f"embedding\n{vocab} × {width}{scale}",
        f"+ positional encoding\n({kind})",
        f"embedding {vocab} × {width}{scale}<br>+ {kind} positional encoding",  # lines: the label catalog's entries
    )


def _sublayers(layer: EncoderLayer | DecoderLayer, side: str) -> list[tuple[str, str]]:
    """The sub-layers of one layer, bottom to top, as (part name, box label), with the widths read from it."""
    attn, ff = layer.self_attn, layer.ff
    heads = f"{attn.n_heads} heads of d_k = {attn.d_head}"
    subs = [
        ("self_attention", f"self-attention\n{heads}")
        if side == "enc"
        else ("masked_self_attention", f"masked self-attention\n{heads}")
    ]
    if isinstance(layer, DecoderLayer) and layer.cross_attn is not None:
        subs.append(("cross_attention", f"cross-attention\n{layer.cross_attn.n_heads} heads, K, V from encoder"))
    subs.append(
        (
            "feed_forward",
            f"feed-forward\n{ff.linear1.in_features} → {ff.linear1.out_features}"
            f" → {ff.linear2.out_features} ({ff.activation})",
        )
    )
    return subs


def _norm_box(name: str, label: str, x: float, row: float, w: float, colors: dict, hover: str) -> Box:
    """A LayerNorm or addition box: narrower than a sub-layer, in the "add_norm" part."""
    return Box(name, label, x, row, w * 0.8, 0.42, colors["norm"], "add_norm", hover=hover, font_size=11)


def _stack_boxes(
    stack: Encoder | Decoder, side: str, x: float, y: float, w: float, colors: dict
) -> tuple[list[Box], list, list[tuple[str | None, str]]]:
    """One layer of an encoder or decoder stack (all layers are alike, so the first one is read), bottom to top
    from row y, framed with "× N"; returns its boxes, the arrows between them (the stream through the layer) and
    the residual bypasses, one per sub-layer: (box whose output enters the sub-layer's block, its addition box),
    with None for the stack's input (the box below the frame)."""
    layer = stack.layers[0]
    if not isinstance(layer, (EncoderLayer, DecoderLayer)):
        raise TypeError(f"stack: expected layers of the library's encoder or decoder, got {type(layer).__name__}")
    norm_first = (layer.attn_res if isinstance(layer, EncoderLayer) else layer.self_res).norm_first
    boxes: list[Box] = []
    row, gap = y, 0.62
    skips: list[tuple[str | None, str]] = []
    for i, (group, label) in enumerate(_sublayers(layer, side)):
        stream_in = boxes[-1].name if boxes else None  # x, before the (pre-LN) norm and the sub-layer
        if norm_first:  # pre-LN: LayerNorm before the sub-layer, + x after
            boxes.append(
                _norm_box(f"{side}_norm{i}", "LayerNorm", x, row, w, colors, "pre-LN: the sub-layer reads LayerNorm(x)")
            )
            row += gap
        color = colors["attn" if "att" in group else "ff"]
        boxes.append(Box(f"{side}_{group}", label, x, row + 0.12, w, 0.66, color, group, font_size=11))
        row += gap + 0.25
        label, hover = (
            ("add: x + sub-layer", "pre-LN: x + Dropout(sub-layer(LayerNorm(x)))")
            if norm_first
            else ("Add & Norm", "post-LN (paper): LayerNorm(x + Dropout(sub-layer(x)))")
        )
        boxes.append(_norm_box(f"{side}_add{i}", label, x, row, w, colors, hover))
        skips.append((stream_in, boxes[-1].name))  # the residual: x goes around the sub-layer into the addition
        row += gap
    if stack.norm is not None:
        hover = "after the last layer: a pre-LN stack leaves its output un-normalised"
        boxes.append(_norm_box(f"{side}_final_norm", "final LayerNorm", x, row, w, colors, hover))
        row += gap
    names = [b.name for b in boxes]
    boxes.append(_frame_box(side, len(stack.layers), x, top=row - gap + 0.3, bottom=y - 0.4, w=w, colors=colors))
    return boxes, list(zip(names, names[1:], strict=False)), skips


def _frame_box(side: str, n: int, x: float, *, top: float, bottom: float, w: float, colors: dict) -> Box:
    """The dashed "N = n ×" frame around one layer of a stack: the layer is repeated n times."""
    kind = "encoder" if side == "enc" else "decoder"
    return Box(
        f"{side}_stack",
        f"N = {n} ×",
        x,
        (top + 0.3 + bottom) / 2,
        w + 0.3,
        top + 0.3 - bottom,
        colors["frame"],
        kind,
        frame=True,
        hover=f"{kind} stack × N = {n} identical layers",
        font_size=11,
    )


def _column(
    embed: InputEmbedding, stack: Encoder | Decoder, side: str, x: float, y: float, w: float, colors: dict
) -> tuple[list[Box], list]:
    """One side of Figure 1 from row y up: token IDs, embedding, positional encoding and one layer of the stack,
    with the arrows of the stream and each sub-layer's residual bypass (``enc_skip0``, ...)."""
    grey, orange = COLORS[5], COLORS[1]
    emb, pe, hover = _embedding_labels(embed)
    ids = "source token IDs" if side == "enc" else "target token IDs\n(shifted right)"
    boxes = [
        Box(f"{side}_ids", ids, x, y, w * 0.8, 0.55, grey, "tokens", font_size=11),
        Box(f"{side}_emb", emb, x, y + 0.8, w, 0.62, orange, "embedding", hover=hover, font_size=11),
        Box(f"{side}_pe", pe, x, y + 1.6, w, 0.62, orange, "positional", hover=hover, font_size=11),
    ]
    layer_boxes, arrows, skips = _stack_boxes(stack, side, x, y + 2.8, w, colors)
    names = [b.name for b in boxes] + [arrows[0][0]]
    route = "left" if side == "enc" else "right"  # outside the two columns, as in the paper's Figure 1
    width = {b.name: b.width for b in boxes + layer_boxes}
    bypasses = [  # each lane just outside the widest box of the column (w), so it clears the sub-layer
        Arrow(
            src or f"{side}_pe",
            dst,
            route=route,
            name=f"{side}_skip{i}",
            lane=w / 2 + 0.08 - max(width[src or f"{side}_pe"], width[dst]) / 2,
        )
        for i, (src, dst) in enumerate(skips)
    ]
    return boxes + layer_boxes, list(zip(names, names[1:], strict=False)) + arrows + bypasses


def _restyle(boxes: list[Box], compact: bool, parts: set[str] | None) -> list[Box]:
    """``compact``: each box's first line only, the rest in its hover text; ``parts``: grey out the others."""
    if compact:
        boxes = [
            replace(b, label=b.label.split("\n")[0], hover=b.hover or b.label.replace("\n", "<br>"))
            if not b.frame
            else b
            for b in boxes
        ]
    if parts is not None:
        boxes = [replace(b, dim=b.group not in parts) if not b.frame else b for b in boxes]
    return boxes


def transformer_diagram(
    model: Transformer | TransformerConfig,
    *,
    highlight: str | Iterable[str] | None = None,
    compact: bool = False,
    title: str | None = None,
    height: int = 700,
    backend: str = "plotly",
):
    """The paper's Figure 1 drawn from a live :class:`~transformer_lib.Transformer`: every number and option on
    it (layers, heads, widths, activation, post- or pre-LN, positional encoding, tied output layer) is read
    from the model's own modules, so the picture cannot disagree with the code it shows. Each sub-layer gets its
    residual bypass (the paper's "Add & Norm" skip connection), drawn around it on the outer side of its stack,
    from where the layer's input enters to the addition: named ``enc_skip0``, ``dec_skip1``, ... in the figure. Given a
    :class:`~transformer_lib.TransformerConfig`, the model is built from it on the meta device (modules and
    shapes only: no memory for weights, no random numbers drawn, so a chapter's seeded results do not move).

    ``highlight``: one part name or several, from :data:`FIGURE_1_PARTS` ("embedding", "self_attention",
    "add_norm", ...): the other boxes are greyed out, so a chapter can show where it sits in the architecture.
    ``compact``: one line per box (its first), the numbers moved to the hover text: a small figure (height ~440)
    that stays legible on a phone.
    """
    from ..models import Transformer, TransformerConfig

    if isinstance(model, TransformerConfig):  # built on the meta device: its modules and shapes, no weights, no RNG
        with torch.device("meta"):
            model = Transformer(model)
    if not isinstance(model, Transformer):
        raise TypeError(
            f"model: expected a transformer_lib Transformer or TransformerConfig, got {type(model).__name__}"
        )
    parts = _highlight_set(highlight)
    green = COLORS[2]
    colors = dict(attn=COLORS[0], ff=COLORS[4], norm=COLORS[3], frame=COLORS[5])
    d_model, vocab = model.lm_head.in_features, model.lm_head.out_features
    tied = "\n(tied to the target embedding)" if model.lm_head.weight is model.tgt_embed.token.weight else ""
    w, xe, xd = 3.0, 0.0, 3.6
    dec, dec_arrows = _column(model.tgt_embed, model.decoder, "dec", xd, 0.0, w, colors)
    cross = next((b for b in dec if b.name == "dec_cross_attention"), None)
    enc, enc_arrows = _column(model.src_embed, model.encoder, "enc", xe, 0.0, w, colors)
    if cross is not None:  # the encoder's output runs above its stack, then right into the cross-attention
        frame_top = enc[-1].y + enc[-1].height / 2
        shift = max(0.0, frame_top - (cross.y - 0.25))
        enc, enc_arrows = _column(model.src_embed, model.encoder, "enc", xe, -shift, w, colors)
    top = max(b.y + b.height / 2 for b in dec)
    boxes = (
        enc
        + dec
        + [
            Box("linear", f"linear {d_model} → {vocab}{tied}", xd, top + 0.55, w, 0.62, green, "output", font_size=11),
            Box("softmax", "softmax\nnext-token probabilities", xd, top + 1.35, w, 0.62, green, "output", font_size=11),
        ]
    )
    boxes = _restyle(boxes, compact, parts)
    enc_top, dec_top = enc[-2].name, dec[-2].name  # the last box inside each frame
    arrows = [*enc_arrows, *dec_arrows, (dec_top, "linear"), ("linear", "softmax")]
    if cross is not None:  # the encoder output feeds every decoder layer's cross-attention
        arrows.append(Arrow(enc_top, cross.name, "K, V", route="vh"))
    return block_diagram(
        boxes,
        arrows,
        title=title or "The Transformer, drawn from the model object",
        height=height,
        backend=backend,
        design_width=420,
    )

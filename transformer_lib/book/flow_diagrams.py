"""What flows between the blocks, drawn from live objects: the residual stream through one encoder layer (post-LN as
in the paper, or pre-LN, read from the layer) and what a KV cache keeps between decoding steps (read from real
caches after real decoding steps). Chapters 6b and 7b show them.
"""

from __future__ import annotations

import plotly.graph_objects as go
import torch
from torch import nn

from ..decoding import Decodable
from .block_diagrams import DIM_TEXT, Arrow, Box, block_diagram, layout_diagram
from .style import COLORS

__all__ = ["residual_diagram", "kv_cache_steps", "kv_cache_diagram"]

GREY, ORANGE, BLUE, GREEN, RED, PURPLE = COLORS[5], COLORS[1], COLORS[0], COLORS[2], COLORS[3], COLORS[4]


def residual_diagram(layer: nn.Module, *, title: str | None = None, height: int = 460, backend: str = "plotly"):
    """The residual stream of one encoder layer: x runs straight up (left column) and each sub-layer (right
    column) adds its output to it. Where the LayerNorms sit, the dropout rate, the heads and the feed-forward
    width are read from ``layer`` (a :class:`~transformer_lib.EncoderLayer`): post-LN (the paper) normalises
    the stream after each addition, pre-LN normalises only the sub-layer's input."""
    from ..layers import EncoderLayer

    if not isinstance(layer, EncoderLayer):
        raise TypeError(f"layer: expected a transformer_lib EncoderLayer, got {type(layer).__name__}")
    attn, ff = layer.self_attn, layer.ff
    pre = layer.attn_res.norm_first
    drop = f"dropout {layer.attn_res.dropout.p:g}"
    width = attn.d_model
    stream = lambda name, label, y, color=RED: Box(name, label, 0, y, 1.7, 0.5, color)  # noqa: E731
    branch = lambda name, label, y, color: Box(name, label, 2.3, y, 2.3, 0.62, color)  # noqa: E731
    boxes = [
        Box("x", f"x (B, T, {width})", 0, 0, 2.0, 0.5, GREY, hover="the residual stream entering the layer"),
        branch("attn", f"self-attention\n{attn.n_heads} heads", 1.15 if not pre else 1.75, BLUE),
        branch(
            "ff",
            f"feed-forward\n{ff.linear1.in_features} → {ff.linear1.out_features} → {ff.linear2.out_features}",
            3.45 if not pre else 4.15,
            PURPLE,
        ),
    ]
    if pre:
        boxes += [
            Box("ln1", "LayerNorm", 2.3, 0.9, 1.7, 0.45, RED),
            Box("ln2", "LayerNorm", 2.3, 3.3, 1.7, 0.45, RED),
            stream("add1", "+", 2.6),
            stream("add2", "+", 5.0),
            stream("out", "to the next layer", 5.85, GREY),
        ]
        arrows: list[tuple[str, ...] | Arrow] = [
            Arrow("x", "add1", "x"),
            Arrow("x", "ln1", route="hv"),
            ("ln1", "attn"),
            Arrow("attn", "add1", drop, route="vh"),
            Arrow("add1", "add2"),
            Arrow("add1", "ln2", route="vh"),
            ("ln2", "ff"),
            Arrow("ff", "add2", drop, route="vh"),
            ("add2", "out"),
        ]
        default = "Pre-LN: x + f(LayerNorm(x))"
    else:
        boxes += [
            stream("add1", "+", 2.0),
            stream("ln1", "LayerNorm", 2.7),
            stream("add2", "+", 4.3),
            stream("ln2", "LayerNorm", 5.0),
            stream("out", "to the next layer", 5.85, GREY),
        ]
        arrows = [
            Arrow("x", "add1", "x"),
            Arrow("x", "attn", route="hv"),
            Arrow("attn", "add1", drop, route="vh"),
            ("add1", "ln1"),
            Arrow("ln1", "add2"),
            Arrow("ln1", "ff", route="hv"),
            Arrow("ff", "add2", drop, route="vh"),
            ("add2", "ln2"),
            ("ln2", "out"),
        ]
        default = "Post-LN: LayerNorm(x + f(x))"
    return block_diagram(boxes, arrows, title=title or default, height=height, backend=backend, design_width=360)


def _shape(t: torch.Tensor | None) -> tuple[int, ...] | None:
    return None if t is None else tuple(t.shape)


def kv_cache_steps(model: nn.Module, prompt: torch.Tensor, steps: int = 3, bos_id: int = 1) -> list[dict]:
    """Run ``steps`` real greedy decoding steps of ``model`` (a Transformer: ``prompt`` is the source; a
    DecoderOnlyModel: the prompt) with its KV caches, and record after each step what every layer's caches hold.

    Returns one dict per step: ``new`` (positions fed at this step), ``self`` (per layer, the shape of the
    self-attention cache's K, (B, H, L, D); V has the same) and ``cross`` (per layer, the cross-attention cache's
    K shape, or None for a decoder-only model).
    """
    if not isinstance(model, Decodable):
        raise TypeError(
            f"model: expected a transformer_lib Transformer or DecoderOnlyModel, got {type(model).__name__}"
        )
    if not isinstance(steps, int) or not 1 <= steps <= 6:
        raise ValueError(f"steps: expected an int from 1 to 6 (the picture has one column per step), got {steps!r}")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            state = model.start_decoding(prompt, bos_id, steps)
            record = []
            for _ in range(steps):
                fed = state.fed
                logits = model.decode_step(state)  # (B, V)
                if state.caches is None:
                    raise RuntimeError("start_decoding(use_cache=True) kept no caches")
                record.append(
                    dict(
                        new=state.fed - fed,
                        self=[_shape(c.self_attn.k) for c in state.caches],
                        cross=[_shape(c.cross_attn.k) for c in state.caches],
                    )
                )
                state.tokens = torch.cat((state.tokens, logits.argmax(-1, keepdim=True)), dim=1)
    finally:
        model.train(was_training)
    return record


_PITCH, _CELL, _ROW_H = 2.3, 0.34, 1.55  # a step's column, a stored position's cell, a layer's block


def _step_parts(s: int, step: dict, top: float, shapes: list[dict], notes: list[dict]) -> None:
    """Column ``s``, added to ``shapes`` and ``notes``: its heading, and for each layer one cell per stored position of
    K and of V, this step's orange, the kept ones blue, with the cache's shape under them."""
    x0 = 1.2 + s * _PITCH
    notes.append(
        dict(
            name=f"step{s + 1}",
            x=x0 + 0.9,
            y=top + 0.45,
            showarrow=False,
            text=f"step {s + 1}<br>+{step['new']} position" + ("s" if step["new"] > 1 else ""),
            font=dict(size=11),
        )
    )
    for layer, shape in enumerate(step["self"]):
        length = shape[2]
        base = layer * _ROW_H
        for kind, y in (("K", base + 1.05), ("V", base + 0.65)):
            for i in range(length):
                new = i >= length - step["new"]
                shapes.append(
                    dict(
                        type="rect",
                        name=f"L{layer + 1}_{kind}_s{s + 1}_{i}",
                        x0=x0 + i * _CELL,
                        x1=x0 + (i + 0.85) * _CELL,
                        y0=y - 0.16,
                        y1=y + 0.16,
                        layer="below",
                        fillcolor=ORANGE if new else BLUE,
                        opacity=0.9 if new else 0.45,
                        line=dict(width=0),
                    )
                )
        notes.append(
            dict(
                name=f"L{layer + 1}_shape_s{s + 1}",
                x=x0 + 0.9,
                y=base + 0.28,
                showarrow=False,
                text=str(shape).replace(" ", ""),
                font=dict(size=10, color=DIM_TEXT),
            )
        )


def _layer_label_parts(n_layers: int, steps: int, shapes: list[dict], notes: list[dict]) -> None:
    """Each layer's name on the left, and a thin rule between layers across every column, added to ``shapes`` and
    ``notes``."""
    for layer in range(n_layers):
        base = layer * _ROW_H
        notes.append(
            dict(
                name=f"L{layer + 1}_label",
                x=0.0,
                y=base + 0.85,
                showarrow=False,
                xanchor="left",
                text=f"layer {layer + 1}<br>K<br>V",
                font=dict(size=11),
            )
        )
        if layer:
            shapes.append(
                dict(
                    type="line",
                    x0=0,
                    x1=1.2 + steps * _PITCH - 0.3,
                    y0=base - 0.05,
                    y1=base - 0.05,
                    line=dict(color="#e0e0e0", width=1),
                )
            )


def _cache_note(record: list[dict]) -> str:
    """The note under the columns: the colours, and what the cross-attention cache holds (or that there is none)."""
    cross = record[0]["cross"][0]
    return "orange: this step's k, v; blue: kept<br>" + (
        "cross K, V " + str(cross).replace(" ", "") + " per layer: made at step 1, reused"
        if cross is not None
        else "no cross-attention (decoder-only)"
    )


def kv_cache_diagram(
    model: nn.Module,
    prompt: torch.Tensor,
    steps: int = 3,
    *,
    bos_id: int = 1,
    title: str | None = None,
    height: int | None = None,
) -> go.Figure:
    """What the KV cache keeps between decoding steps, read from a real model's caches after each of ``steps``
    real decoding steps (:func:`kv_cache_steps`): one column per step, one block per decoder layer, one cell per
    stored position of K and of V. The cells added at that step (the new token's k and v) are orange; the others
    were kept from earlier steps and are not recomputed."""
    record = kv_cache_steps(model, prompt, steps, bos_id)
    n_layers = len(record[0]["self"])
    shapes: list[dict] = []
    notes: list[dict] = []
    top = n_layers * _ROW_H
    for s, step in enumerate(record):
        _step_parts(s, step, top, shapes, notes)
    _layer_label_parts(n_layers, len(record), shapes, notes)
    notes.append(
        dict(
            name="cross",
            x=0.0,
            y=-0.4,
            showarrow=False,
            xanchor="left",
            align="left",
            text=_cache_note(record),
            font=dict(size=10, color=DIM_TEXT),
        )
    )
    # every shape and label at once (one at a time, plotly validates the whole list again on each: quadratic)
    fig = go.Figure()
    fig.update_layout(annotations=notes, shapes=shapes)  # annotations first, as they were drawn: the same JSON
    return layout_diagram(
        fig,
        (-0.1, 1.2 + len(record) * _PITCH - 0.2),
        (-0.8, top + 0.8),
        title=title or "KV cache: K, V (B, H, L, D) per layer",
        height=height or 120 + 110 * n_layers,
        design_width=360,
    )

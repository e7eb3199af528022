"""Attention drawn from a live module: the paper's Figure 2 (scaled dot-product attention, multi-head attention),
the Q/K/V projections with the shapes a real tensor takes, and cross-attention's data flow.

Every number on these pictures is read from a :class:`~transformer_lib.MultiHeadAttention` (its ``d_head``,
``n_heads``, the shape of ``qkv_proj.weight``) or from the shapes of tensors that went through it, so a picture
changes when the module does. The boxes are :func:`.block_diagrams.block_diagram` boxes; chapters 4, 6 and 7 show them.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..attention import MultiHeadAttention
from .block_diagrams import Arrow, Box, block_diagram
from .labels import QUOTE
from .style import COLORS

__all__ = [
    "scaled_dot_product_diagram",
    "notes_flowchart",
    "multi_head_diagram",
    "projection_diagram",
    "cross_attention_diagram",
]

GREY, ORANGE, BLUE, GREEN, RED, PURPLE = COLORS[5], COLORS[1], COLORS[0], COLORS[2], COLORS[3], COLORS[4]

# The notes' own words for the steps of their flowchart (004), shown beside the paper's on request.
_NOTES_TERMS = {"matmul": "矩阵乘法", "scale": "缩放", "mask": "掩码 (可选)", "softmax": "Softmax", "out": "矩阵乘法"}


def _check_attention(name: str, module: object) -> MultiHeadAttention:
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(f"{name}: expected a transformer_lib MultiHeadAttention, got {type(module).__name__}")
    return module


def _shape(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(n) for n in t.shape) + ")"


def scaled_dot_product_diagram(
    attn: MultiHeadAttention,
    *,
    notes_terms: bool = False,
    title: str | None = None,
    height: int = 480,
    backend: str = "plotly",
):
    """Figure 2, left: Q and K → MatMul → Scale → Mask (optional) → SoftMax → MatMul with V, for one head of
    ``attn``. The scale is the module's own, 1/√d_k with d_k = ``attn.d_head``; the shapes are one head's.
    ``notes_terms`` adds the study notes' name of each step (their flowchart, 004) under the paper's."""
    attn = _check_attention("attn", attn)
    d_k = attn.d_head
    root = math.sqrt(d_k)
    root_text = f"{root:g}" if root == int(root) else f"{root:.2f}"
    terms = {k: (f"\n{v}" if notes_terms else "") for k, v in _NOTES_TERMS.items()}
    boxes = [
        Box("q", f"Q\n(T, {d_k})", -1.5, 0, 1.2, 0.62, BLUE, hover="one head's queries: T positions × d_k"),
        Box("k", f"K\n(S, {d_k})", 0.0, 0, 1.2, 0.62, BLUE, hover="one head's keys: S positions × d_k"),
        Box("v", f"V\n(S, {d_k})", 2.1, 0, 1.2, 0.62, BLUE, hover="one head's values: S positions × d_v"),
    ]
    steps = [  # bottom to top: (name, label, row, colour, hover)
        ("matmul", "MatMul: Q Kᵀ", 1.0, PURPLE, "(T, S) scores: one dot product per (query, key) pair"),
        (
            "scale",
            f"Scale: ÷ √{d_k} = ÷ {root_text}",
            1.9,
            ORANGE,
            f"d_k = {d_k} read from the module (d_head); keeps the scores' variance near 1, §3.2.1",
        ),
        ("mask", "Mask (optional)", 2.8, GREY, "blocked (query, key) pairs get -inf, so exactly zero weight"),
        (
            "softmax",
            "SoftMax (rows sum to 1)",
            3.7,
            RED,
            "(T, S) weights: row i is query i's distribution over the S keys",
        ),
        (
            "out",
            f"MatMul with V → (T, {d_k})",
            4.6,
            PURPLE,
            "each query's output: a weighted average of the value rows",
        ),
    ]
    # the notes' flowchart compares the paper's English term with the notes' Chinese one: the English line is quoted,
    # so that the Chinese site keeps it (labels.QUOTE) instead of showing the same word twice ("缩放 / 缩放")
    quote = QUOTE if notes_terms else ""
    boxes += [
        Box(name, quote + label + terms[name], -0.75, row, 2.6, 0.62, color, hover=hover)
        for name, label, row, color, hover in steps
    ]
    arrows: list[tuple[str, ...] | Arrow] = [
        ("q", "matmul"),
        ("k", "matmul"),
        ("matmul", "scale", "(T, S)"),
        ("scale", "mask"),
        ("mask", "softmax"),
        ("softmax", "out"),
        Arrow("v", "out", route="vh"),
    ]
    default = "The notes' flowchart (004)" if notes_terms else f"One head, d_k = {d_k}"
    return block_diagram(boxes, arrows, title=title or default, height=height, backend=backend, design_width=360)


def notes_flowchart(attn: MultiHeadAttention, **kwargs):
    """The study notes' flowchart (004: Q, K → MatMul → scale → mask → softmax → MatMul with V): the same picture as
    the paper's Figure 2, left, labelled in both languages (and with rows, not columns, summing to 1)."""
    return scaled_dot_product_diagram(attn, notes_terms=True, **kwargs)


def _projection_boxes(mha: MultiHeadAttention) -> list[Box]:
    """Figure 2, right, second and third rows: the linear projections W^Q, W^K, W^V (rows of the fused
    ``qkv_proj``) and the split of d_model into h heads of d_k."""
    h, d_k, C = mha.n_heads, mha.d_head, mha.d_model
    boxes: list[Box] = []
    for name, x in (("V", -2.0), ("K", 0.0), ("Q", 2.0)):
        rows = {"Q": f"0:{C}", "K": f"{C}:{2 * C}", "V": f"{2 * C}:{3 * C}"}[name]
        boxes.append(
            Box(
                f"W{name}",
                f"Linear W<sup>{name}</sup>\n{C} → {C}",
                x,
                0.95,
                1.8,
                0.62,
                ORANGE,
                hover=f"rows {rows} of the fused qkv_proj weight {tuple(mha.qkv_proj.weight.shape)}",
            )
        )
    boxes.append(
        Box(
            "split",
            f"split: d_model = {C} = h · d_k = {h} × {d_k}",
            0,
            1.85,
            6.3,
            0.5,
            ORANGE,
            hover=f"each of Q, K, V: (B, T, {C}) viewed as (B, {h}, T, {d_k}); head i takes dimensions "
            f"i·{d_k} to (i+1)·{d_k} − 1",
        )
    )
    return boxes


def _head_boxes(h: int, d_k: int) -> list[Box]:
    """Figure 2, right, the heads' row: up to 8 heads one by one (more: the first three, "…", the last two), each
    labelled with as much as its width holds, in a frame that names them all."""
    boxes: list[Box] = []
    shown = [str(i) for i in range(1, h + 1)] if h <= 8 else ["1", "2", "3", "…", str(h - 1), str(h)]
    width = 5.8 / len(shown)

    def head_label(label: str) -> str:  # as much as the box's width holds: "head 1 · d_k = 64" down to "1\n64"
        if len(shown) <= 2:
            return f"head {label} · d_k = {d_k}"
        return f"head {label}\nd_k = {d_k}" if len(shown) <= 4 else f"{label}\n{d_k}"

    for j, label in enumerate(shown):
        boxes.append(
            Box(
                f"head{label}" if label != "…" else "head_more",
                head_label(label) if label != "…" else "…",
                -2.9 + width * (j + 0.5),
                2.9,
                width * 0.8,
                0.62,
                BLUE,
                hover=f"head {label} · d_k = {d_k}: softmax(Q_i K_iᵀ / √{d_k}) V_i"
                if label != "…"
                else f"heads 4 to {h - 2}, each d_k = {d_k}",
                font_size=11,
            )
        )
    boxes.append(
        Box(
            "heads",
            f"h = {h} heads of scaled dot-product attention, d_k = {d_k}",
            0,
            3.05,
            6.3,
            1.15,
            BLUE,
            frame=True,
            font_size=11,
        )
    )
    return boxes


def multi_head_diagram(
    mha: MultiHeadAttention, *, title: str | None = None, height: int = 540, backend: str = "plotly"
):
    """Figure 2, right: V, K, Q → their linear projections → split into h heads → h heads of scaled dot-product
    attention in parallel → Concat → linear W^O. h, d_k and every width are read from ``mha``: the split row shows
    d_model = h · d_k, and each head is labelled with its d_k (up to 8 heads are drawn one by one; more are drawn as
    the first three, "…", the last two)."""
    mha = _check_attention("mha", mha)
    h, d_k, C = mha.n_heads, mha.d_head, mha.d_model
    out_features, in_features = mha.o_proj.weight.shape
    boxes = [Box(n, n, x, 0, 1.2, 0.5, GREY, hover=f"(B, ·, {C})") for n, x in (("V", -2.0), ("K", 0.0), ("Q", 2.0))]
    boxes += _projection_boxes(mha)
    boxes += _head_boxes(h, d_k)
    boxes += [
        Box(
            "concat",
            f"Concat: {h} × {d_k} = {h * d_k}",
            0,
            4.15,
            3.0,
            0.55,
            PURPLE,
            hover="the heads' outputs side by side: (B, T, h·d_k)",
        ),
        Box(
            "WO",
            f"Linear W<sup>O</sup>\n{in_features} → {out_features}",
            0,
            5.05,
            3.0,
            0.62,
            ORANGE,
            hover=f"o_proj, weight {tuple(mha.o_proj.weight.shape)}",
        ),
    ]
    arrows = (
        [(n, f"W{n}") for n in "VKQ"]
        + [Arrow(f"W{n}", "split") for n in "VKQ"]
        + [("split", "heads"), ("heads", "concat"), ("concat", "WO")]
    )
    return block_diagram(
        boxes, arrows, title=title or f"Multi-head attention, h = {h}", height=height, backend=backend, design_width=360
    )


def projection_diagram(
    mha: MultiHeadAttention,
    batch: int = 2,
    length: int = 5,
    *,
    title: str | None = None,
    height: int = 460,
    backend: str = "plotly",
):
    """Q, K and V made from x: one product with the fused weight ``qkv_proj`` ([W^Q; W^K; W^V]), then each split
    into heads. A real (batch, length, d_model) tensor goes through ``mha.qkv_proj`` and ``mha._split``; every
    shape on the picture is the shape it took."""
    mha = _check_attention("mha", mha)
    for name, value in (("batch", batch), ("length", length)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
    weight = mha.qkv_proj.weight
    x = torch.zeros(batch, length, mha.d_model, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        qkv = mha.qkv_proj(x)  # (B, T, 3C)
        parts = qkv.chunk(3, dim=-1)  # 3 x (B, T, C)
        heads = [mha._split(p) for p in parts]  # 3 x (B, H, T, D)
    C = mha.d_model
    boxes = [
        Box("x", f"x {_shape(x)}\n(B, T, d_model)", 0, 0, 3.0, 0.62, GREY),
        Box(
            "qkv",
            f"qkv_proj: one Linear\nweight {tuple(weight.shape)} = [W<sup>Q</sup>; W<sup>K</sup>; W<sup>V</sup>]",
            0,
            1.0,
            4.2,
            0.62,
            ORANGE,
            hover=f"x @ weight.T: {_shape(x)} → {_shape(qkv)}, one product for all three",
        ),
        Box("out", f"{_shape(qkv)}: chunk into three", 0, 1.95, 3.4, 0.5, ORANGE),
    ]
    arrows: list[tuple[str, ...] | Arrow] = [("x", "qkv"), ("qkv", "out")]
    for i, (name, part, head) in enumerate(zip("QKV", parts, heads, strict=True)):
        x_pos = (i - 1) * 1.7
        boxes += [
            Box(
                name,
                f"{name}\n{_shape(part)}",
                x_pos,
                2.95,
                1.5,
                0.62,
                BLUE,
                hover=f"rows {i * C}:{(i + 1) * C} of the weight (W<sup>{name}</sup>)",
            ),
            Box(
                f"{name}_heads",
                f"{mha.n_heads} heads\n{_shape(head)}",
                x_pos,
                4.15,
                1.5,
                0.62,
                BLUE,
                hover=f"view (B, T, H, D), transpose → (B, H, T, D): {mha.n_heads} heads of {mha.d_head}",
            ),
        ]
        arrows += [("out", name), (name, f"{name}_heads", "split" if i == 2 else "")]
    return block_diagram(
        boxes,
        arrows,
        height=height,
        backend=backend,
        design_width=360,
        title=title or f"Q, K, V: {mha.n_heads} heads of {mha.d_head}",
    )


def cross_attention_diagram(
    attn: nn.Module,
    tgt_len: int = 4,
    src_len: int = 6,
    *,
    title: str | None = None,
    height: int = 480,
    backend: str = "plotly",
):
    """Cross-attention's data flow: queries from the decoder (T positions), keys and values from the encoder's
    memory (S positions), weights T × S, output with the target's length. ``attn`` is a decoder layer (its
    ``cross_attn`` is used) or a MultiHeadAttention; real tensors of lengths T and S go through it, and the
    shapes drawn are those it returned."""
    from ..layers import DecoderLayer

    if isinstance(attn, DecoderLayer):
        if attn.cross_attn is None:
            raise ValueError("attn: this DecoderLayer has no cross-attention (built with cross_attention=False)")
        attn = attn.cross_attn
    attn = _check_attention("attn", attn)
    for name, value in (("tgt_len", tgt_len), ("src_len", src_len)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}: expected a positive int, got {value!r}")
    weight = attn.qkv_proj.weight
    y = torch.zeros(1, tgt_len, attn.d_model, device=weight.device, dtype=weight.dtype)
    memory = torch.zeros(1, src_len, attn.d_model, device=weight.device, dtype=weight.dtype)
    was_training = attn.training
    attn.eval()  # no dropout: the picture draws no random numbers
    try:
        with torch.no_grad():
            out, weights = attn(y, memory, memory, need_weights=True)  # (1, T, C), (1, H, T, S)
    finally:
        attn.train(was_training)
    H, D = attn.n_heads, attn.d_head
    boxes = [
        Box("y", f"decoder states Y\n{_shape(y)}: T = {tgt_len}", -1.6, 0, 2.8, 0.62, ORANGE),
        Box("memory", f"encoder memory M\n{_shape(memory)}: S = {src_len}", 1.6, 0, 2.8, 0.62, GREEN),
        Box("q", f"Q = Y W<sup>Q</sup>\n(1, {H}, {tgt_len}, {D})", -1.6, 1.1, 2.8, 0.62, ORANGE),
        Box("kv", f"K, V from M\n(1, {H}, {src_len}, {D}) each", 1.6, 1.1, 2.8, 0.62, GREEN),
        Box(
            "weights",
            f"weights softmax(Q Kᵀ / √{D})\n{_shape(weights)}: T × S",
            0,
            2.25,
            3.6,
            0.62,
            BLUE,
            hover="row i: how target position i spreads its attention over the S source positions",
        ),
        Box("out", f"output, W<sup>O</sup>\n{_shape(out)}: T rows", 0, 3.35, 3.6, 0.62, PURPLE),
    ]
    arrows = [("y", "q"), ("memory", "kv"), ("q", "weights"), ("kv", "weights"), ("weights", "out")]
    return block_diagram(
        boxes,
        arrows,
        height=height,
        backend=backend,
        design_width=360,
        title=title or f"Cross-attention: T = {tgt_len}, S = {src_len}",
    )

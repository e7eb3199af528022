"""transformer_lib.book.diagrams, attention_diagrams, flow_diagrams: architecture drawn by code from live objects."""

import pytest
import torch

import transformer_lib as tl
from transformer_lib.book import attention_diagrams as ad
from transformer_lib.book import diagrams, viz
from transformer_lib.book import flow_diagrams as fd

SMALL = dict(
    src_vocab_size=50, tgt_vocab_size=60, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=3
)


def test_block_diagram_draws_boxes_arrows_and_labels() -> None:
    boxes = [diagrams.Box("a", "input", 0, 0), diagrams.Box("b", "layer\nnorm", 0, 1), diagrams.Box("c", "side", 3, 1)]
    fig = diagrams.block_diagram(boxes, [("a", "b"), ("b", "c", "keys")])
    assert len(fig.layout.shapes) == 3
    texts = [a.text for a in fig.layout.annotations]
    assert "layer<br>norm" in texts and "keys" in texts
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert [(a.ax, a.ay, a.x, a.y) for a in arrows] == [(0, 0.3, 0, 0.7), (1.0, 1, 2.0, 1)]
    with pytest.raises(ValueError, match="arrows: expected"):
        diagrams.block_diagram(boxes, [("a", "missing")])


def test_arrows_run_straight_into_a_wide_box_and_bend_when_routed() -> None:
    boxes = [
        diagrams.Box("a", "a", -1, 0, width=0.5),
        diagrams.Box("wide", "wide", 0, 2, width=4),
        diagrams.Box("side", "side", 3, 4, width=1),
    ]
    fig = diagrams.block_diagram(boxes, [("a", "wide"), diagrams.Arrow("a", "side", route="vh")])
    heads = [(a.ax, a.ay, a.x, a.y) for a in fig.layout.annotations if a.showarrow]
    assert heads[0] == (-1, 0.3, -1, 1.7)  # straight up at the source's x, not a diagonal to the wide box's centre
    assert heads[1] == (-1, 4, 2.5, 4)  # up to the target's row, then sideways into its left edge
    bend = [s for s in fig.layout.shapes if s.type == "line"]
    assert [(s.x0, s.y0, s.x1, s.y1) for s in bend] == [(-1, 0.3, -1, 4)]
    with pytest.raises(ValueError, match="route must be"):
        diagrams.block_diagram(boxes, [diagrams.Arrow("a", "side", route="zigzag")])


def test_a_title_too_long_for_a_phone_is_broken_in_two() -> None:
    boxes = [diagrams.Box("a", "a", 0, 0)]
    long = diagrams.block_diagram(
        boxes, title="The Transformer (base model): encoder (left), decoder (right)", design_width=420
    )
    assert long.layout.title.text == "The Transformer (base model):<br>encoder (left), decoder (right)"
    assert long.layout.margin.t > diagrams.block_diagram(boxes, title="short", design_width=420).layout.margin.t


def test_viz_re_exports_the_diagrams_the_chapters_use() -> None:
    assert viz.Box is diagrams.Box and viz.block_diagram is diagrams.block_diagram


def _labels(fig) -> str:
    return " | ".join(a.text for a in fig.layout.annotations if a.text)


def _names(fig, kind: str = "rect") -> set[str]:
    return {s.name for s in fig.layout.shapes if s.type == kind and s.name}


def test_figure_1_is_read_from_the_model_so_it_follows_the_config() -> None:
    post_fig = diagrams.transformer_diagram(tl.Transformer(tl.TransformerConfig(**SMALL)))
    post = _labels(post_fig)
    assert "N = 2 ×" in post and "N = 3 ×" in post
    assert "4 heads of d_k = 8" in post and "32 → 64 → 32 (relu)" in post
    assert post.count("Add &amp; Norm") + post.count("Add & Norm") == 2 + 3  # one per sub-layer, 2 + 3
    assert "final LayerNorm" not in post and "LayerNorm" not in post
    assert "embedding<br>50 × 32 × √d_model" in post
    assert "linear 32 → 60<br>(tied to the target embedding)" in post
    hovers = {a.name: a.hovertext for a in post_fig.layout.annotations if a.name}
    assert hovers["enc_stack"] == "encoder stack × N = 2 identical layers"
    assert any(a.text == "K, V" for a in post_fig.layout.annotations)  # the encoder output into cross-attention
    pre_fig = diagrams.transformer_diagram(
        tl.Transformer(
            tl.TransformerConfig(
                **SMALL,
                norm_first=True,
                tie_embeddings=False,
                activation="gelu",
                positional="learned",
                scale_embeddings=False,
            )
        )
    )
    pre = _labels(pre_fig)
    assert pre.count("LayerNorm") == 2 + 3 + 2  # before each sub-layer, and one final norm per stack
    assert "Add & Norm" not in pre and pre.count("final LayerNorm") == 2
    assert "(gelu)" in pre and "(learned)" in pre and "tied" not in pre and "√d_model" not in pre
    with pytest.raises(TypeError, match="model: expected a transformer_lib Transformer or TransformerConfig"):
        diagrams.transformer_diagram(tl.DecoderOnlyModel(tl.TransformerConfig(**SMALL)))


def test_figure_1_from_a_config_draws_the_same_and_draws_no_random_numbers() -> None:
    config = tl.TransformerConfig(**SMALL)
    tl.seed_everything(0)
    expected = torch.rand(3)
    tl.seed_everything(0)
    from_config = diagrams.transformer_diagram(config, highlight="add_norm", compact=True)
    assert torch.equal(torch.rand(3), expected)  # a chapter's seeded numbers do not move
    from_model = diagrams.transformer_diagram(tl.Transformer(config), highlight="add_norm", compact=True)
    assert from_config.to_json() == from_model.to_json()


def test_highlight_dims_every_box_outside_the_named_parts() -> None:
    model = tl.Transformer(tl.TransformerConfig(**SMALL))
    fig = diagrams.transformer_diagram(model, highlight={"feed_forward", "cross_attention"}, compact=True)
    bright = {s.name for s in fig.layout.shapes if s.type == "rect" and s.opacity == pytest.approx(0.3)}
    dim = {s.name for s in fig.layout.shapes if s.type == "rect" and s.opacity == pytest.approx(0.12)}
    assert bright == {"enc_feed_forward", "dec_feed_forward", "dec_cross_attention"}
    assert {"enc_self_attention", "dec_masked_self_attention", "enc_add0", "enc_emb", "linear", "softmax"} <= dim
    assert _names(fig) == bright | dim | {"enc_stack", "dec_stack"}  # the frames are neither
    grey = {a.name for a in fig.layout.annotations if a.font.color == diagrams.DIM_TEXT}
    assert "enc_feed_forward" not in grey and "enc_self_attention" in grey
    # compact: one line per box, the detail moved to the hover text
    labels = {a.name: a for a in fig.layout.annotations if a.name}
    assert labels["enc_feed_forward"].text == "feed-forward"
    assert "32 → 64 → 32" in labels["enc_feed_forward"].hovertext
    assert diagrams.transformer_diagram(model, highlight="output").layout.shapes  # a single name is accepted
    for bad in ("attention", ["feed_forward", "ffn"], []):
        with pytest.raises(ValueError, match="highlight: expected one or more part names"):
            diagrams.transformer_diagram(model, highlight=bad)


def test_figure_2_left_reads_d_k_from_the_module_and_the_notes_flowchart_reuses_it() -> None:
    fig = ad.scaled_dot_product_diagram(tl.MultiHeadAttention(32, 2))  # d_k = 16
    text = _labels(fig)
    assert "Scale: ÷ √16 = ÷ 4" in text and "Q<br>(T, 16)" in text and "MatMul with V → (T, 16)" in text
    assert "÷ √8 = ÷ 2.83" in _labels(ad.scaled_dot_product_diagram(tl.MultiHeadAttention(32, 4)))
    notes = ad.notes_flowchart(tl.MultiHeadAttention(32, 2))
    assert _names(notes) == _names(fig)  # the same picture ...
    assert "缩放" in _labels(notes) and "掩码" in _labels(notes) and "缩放" not in text  # ... with the notes' terms
    assert "rows sum to 1" in _labels(notes)  # the notes' "columns" corrected
    with pytest.raises(TypeError, match="attn: expected a transformer_lib MultiHeadAttention"):
        ad.scaled_dot_product_diagram(torch.nn.MultiheadAttention(32, 2))


def test_figure_2_right_draws_the_module_heads() -> None:
    fig = ad.multi_head_diagram(tl.MultiHeadAttention(32, 4))
    assert {"head1", "head2", "head3", "head4"} <= _names(fig) and "head5" not in _names(fig)
    assert "Concat: 4 × 8 = 32" in _labels(fig) and "h = 4 heads" in _labels(fig)
    many = ad.multi_head_diagram(tl.MultiHeadAttention(48, 12))
    heads = sorted(n for n in _names(many) if n.startswith("head"))
    assert heads == ["head1", "head11", "head12", "head2", "head3", "head_more", "heads"]
    assert "Concat: 12 × 4 = 48" in _labels(many) and "Linear W<sup>O</sup><br>48 → 48" in _labels(many)


def test_projection_shapes_are_those_a_real_tensor_takes() -> None:
    text = _labels(ad.projection_diagram(tl.MultiHeadAttention(32, 4), batch=2, length=5))
    assert "x (2, 5, 32)" in text and "weight (96, 32)" in text and "(2, 5, 96): chunk into three" in text
    assert text.count("(2, 5, 32)") == 4 and text.count("4 heads<br>(2, 4, 5, 8)") == 3
    assert "2 heads<br>(1, 2, 3, 16)" in _labels(ad.projection_diagram(tl.MultiHeadAttention(32, 2), 1, 3))
    with pytest.raises(ValueError, match="length: expected a positive int, got 0"):
        ad.projection_diagram(tl.MultiHeadAttention(32, 4), length=0)


def test_cross_attention_diagram_has_target_queries_and_source_keys() -> None:
    layer = tl.DecoderLayer(32, 4, 64)
    text = _labels(ad.cross_attention_diagram(layer, tgt_len=3, src_len=7))
    assert "(1, 3, 32): T = 3" in text and "(1, 7, 32): S = 7" in text
    assert "(1, 4, 3, 7): T × S" in text and "(1, 3, 32): T rows" in text and "(1, 4, 7, 8) each" in text
    tl.seed_everything(0)
    expected = torch.rand(3)
    tl.seed_everything(0)
    ad.cross_attention_diagram(layer)  # a layer in training mode with dropout 0.1: it must not draw random numbers
    assert torch.equal(torch.rand(3), expected) and layer.training
    with pytest.raises(ValueError, match="attn: this DecoderLayer has no cross-attention"):
        ad.cross_attention_diagram(tl.DecoderLayer(32, 4, 64, cross_attention=False))


def test_residual_stream_follows_the_layer_norm_placement() -> None:
    post = fd.residual_diagram(tl.EncoderLayer(32, 4, 64, dropout=0.2))
    pre = fd.residual_diagram(tl.EncoderLayer(32, 4, 64, norm_first=True))
    x_of = lambda fig: {s.name: (s.x0 + s.x1) / 2 for s in fig.layout.shapes if s.type == "rect"}  # noqa: E731
    assert x_of(post)["ln1"] == 0 and x_of(post)["ln2"] == 0  # post-LN: the stream itself is normalised
    assert x_of(pre)["ln1"] > 0 and x_of(pre)["ln2"] > 0  # pre-LN: only the branch into each sub-layer
    assert "dropout 0.2" in _labels(post) and "dropout 0.1" in _labels(pre) and "x (B, T, 32)" in _labels(post)
    assert post.layout.title.text.startswith("Post-LN") and pre.layout.title.text.startswith("Pre-LN")
    with pytest.raises(TypeError, match="layer: expected a transformer_lib EncoderLayer"):
        fd.residual_diagram(tl.DecoderLayer(32, 4, 64))


def test_kv_cache_diagram_is_read_from_real_decoding_steps() -> None:
    tl.seed_everything(0)
    model = tl.Transformer(tl.TransformerConfig(**SMALL))
    src = torch.tensor([[1, 7, 8, 9, 2]])
    steps = fd.kv_cache_steps(model, src, steps=3)
    assert [s["new"] for s in steps] == [1, 1, 1]
    assert [s["self"] for s in steps] == [[(1, 4, t, 8)] * 3 for t in (1, 2, 3)]  # L grows by one per step
    assert all(s["cross"] == [(1, 4, 5, 8)] * 3 for s in steps)  # the source's K, V: made once
    fig = fd.kv_cache_diagram(model, src, steps=3)
    cells = [s.name for s in fig.layout.shapes if s.type == "rect"]
    for layer in (1, 2, 3):
        for t in (1, 2, 3):
            assert sum(n.startswith(f"L{layer}_K_s{t}_") for n in cells) == t
    new = {s.name for s in fig.layout.shapes if s.type == "rect" and s.fillcolor == fd.ORANGE}
    assert new == {f"L{layer}_{kv}_s{t}_{t - 1}" for layer in (1, 2, 3) for kv in "KV" for t in (1, 2, 3)}
    gpt = tl.DecoderOnlyModel(tl.TransformerConfig(**{**SMALL, "n_decoder_layers": 1}))
    steps = fd.kv_cache_steps(gpt, torch.tensor([[1, 5, 6]]), steps=2)
    assert [s["new"] for s in steps] == [3, 1] and steps[1]["self"] == [(1, 4, 4, 8)] and steps[0]["cross"] == [None]
    cells = [s.name for s in fd.kv_cache_diagram(gpt, torch.tensor([[1, 5, 6]]), steps=2).layout.shapes]
    assert sum(n.startswith("L1_K_s1_") for n in cells) == 3  # the prompt's three positions, all new at step 1
    assert model.training  # the diagram put the model back in the mode it found it in
    with pytest.raises(ValueError, match="steps: expected an int from 1 to 6"):
        fd.kv_cache_diagram(model, src, steps=0)
    with pytest.raises(TypeError, match="model: expected a transformer_lib Transformer or DecoderOnlyModel"):
        fd.kv_cache_steps(tl.EncoderLayer(32, 4, 64), src)


def test_every_diagram_also_draws_with_matplotlib() -> None:
    mha = tl.MultiHeadAttention(32, 4)
    for fig in (
        diagrams.transformer_diagram(tl.Transformer(tl.TransformerConfig(**SMALL)), backend="matplotlib"),
        ad.multi_head_diagram(mha, backend="matplotlib"),
        fd.residual_diagram(tl.EncoderLayer(32, 4, 64), backend="matplotlib"),
    ):
        ax = fig.axes[0]
        assert len(ax.patches) >= 8 and not any("<sup>" in t.get_text() for t in ax.texts)


def _bypass(fig, name: str) -> list[tuple[float, float]]:
    """The corners of a named arrow: its plain line segments, then its head."""
    lines = [s for s in fig.layout.shapes if s.type == "line" and s.name == name]
    (head,) = [a for a in fig.layout.annotations if a.showarrow and a.name == name]
    return [(s.x0, s.y0) for s in lines] + [(head.ax, head.ay), (head.x, head.y)]


def test_a_bypass_arrow_runs_around_the_boxes_between() -> None:
    boxes = [
        diagrams.Box("x", "x", 0, 0, width=1),
        diagrams.Box("f", "f", 0, 1, width=2),
        diagrams.Box("add", "+", 0, 2),
    ]
    fig = diagrams.block_diagram(boxes, [diagrams.Arrow("x", "add", route="left", name="skip", lane=0.2)])
    assert _bypass(fig, "skip") == [(-0.5, 0), (-1.2, 0), (-1.2, 2), (-1.0, 2)]  # out left, up past f, in from the left
    right = diagrams.block_diagram(boxes, [diagrams.Arrow("x", "add", route="right", name="skip")])
    assert max(x for x, _ in _bypass(right, "skip")) == pytest.approx(1.15)
    with pytest.raises(ValueError, match="route must be one of"):
        diagrams.block_diagram(boxes, [diagrams.Arrow("x", "add", route="around")])


def test_figure_1_draws_the_residual_bypass_of_every_sub_layer_from_the_model() -> None:
    model = tl.Transformer(tl.TransformerConfig(**SMALL))
    fig = diagrams.transformer_diagram(model)
    boxes = {s.name: s for s in fig.layout.shapes if s.type == "rect" and s.name}
    skips = sorted({s.name for s in fig.layout.shapes if s.type == "line" and s.name})
    assert skips == ["dec_skip0", "dec_skip1", "dec_skip2", "enc_skip0", "enc_skip1"]  # one per sub-layer
    for side, lane_side, subs in (
        ("enc", -1, ["self_attention", "feed_forward"]),
        ("dec", 1, ["masked_self_attention", "cross_attention", "feed_forward"]),
    ):
        for i, sub in enumerate(subs):
            path = _bypass(fig, f"{side}_skip{i}")
            box, add = boxes[f"{side}_{sub}"], boxes[f"{side}_add{i}"]
            lane = path[1][0]
            assert lane_side * (lane - (box.x1 if lane_side > 0 else box.x0)) > 0  # the lane clears the sub-layer
            assert path[0][1] < box.y0 and path[-1][1] == pytest.approx((add.y0 + add.y1) / 2)  # from below, into Add
    # the drawing follows the object: a decoder layer without cross-attention has two bypasses; pre-LN starts each
    # bypass below its LayerNorm, so the norm is inside the branch and the stream itself is never normalised
    model.decoder.layers[0].cross_attn = None
    assert sorted(s.name for s in diagrams.transformer_diagram(model).layout.shapes if s.type == "line" and s.name) == [
        "dec_skip0",
        "dec_skip0",
        "dec_skip1",
        "dec_skip1",
        "enc_skip0",
        "enc_skip0",
        "enc_skip1",
        "enc_skip1",
    ]
    pre = diagrams.transformer_diagram(tl.TransformerConfig(**SMALL, norm_first=True))
    pre_boxes = {s.name: s for s in pre.layout.shapes if s.type == "rect" and s.name}
    for i in range(2):
        assert _bypass(pre, f"enc_skip{i}")[0][1] < pre_boxes[f"enc_norm{i}"].y0


def test_multi_head_diagram_draws_the_split_of_d_model_into_heads_read_from_the_module() -> None:
    four = _labels(ad.multi_head_diagram(tl.MultiHeadAttention(32, 4)))
    assert "split: d_model = 32 = h · d_k = 4 × 8" in four and four.count("head 1<br>d_k = 8") == 1
    two = _labels(ad.multi_head_diagram(tl.MultiHeadAttention(32, 2)))
    assert "split: d_model = 32 = h · d_k = 2 × 16" in two and "head 2 · d_k = 16" in two
    base = ad.multi_head_diagram(tl.MultiHeadAttention(512, 8))
    assert "split: d_model = 512 = h · d_k = 8 × 64" in _labels(base)
    hovers = {a.name: a.hovertext for a in base.layout.annotations if a.name}
    assert hovers["head8"].startswith("head 8 · d_k = 64")
    arrows = [a for a in base.layout.annotations if a.showarrow]
    assert len(arrows) == 3 + 3 + 3  # V, K, Q into their projections, the projections into the split, then onwards

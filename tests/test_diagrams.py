"""transformer_lib.book.diagrams: architecture drawn by code."""

import pytest

from transformer_lib.book import diagrams, viz

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


def test_viz_re_exports_the_diagrams_the_chapters_use() -> None:
    assert viz.Box is diagrams.Box and viz.block_diagram is diagrams.block_diagram


def _labels(fig) -> str:
    return " | ".join(a.text for a in fig.layout.annotations if a.text)


def test_figure_1_is_read_from_the_model_so_it_follows_the_config() -> None:
    import transformer_lib as tl

    small = dict(src_vocab_size=50, tgt_vocab_size=60, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
                 n_decoder_layers=3)
    post = _labels(diagrams.transformer_diagram(tl.Transformer(tl.TransformerConfig(**small))))
    assert "encoder stack × N = 2" in post and "decoder stack × N = 3" in post
    assert "4 heads of d_k = 8" in post and "feed-forward 32 → 64 → 32 (relu)" in post
    assert "Add & Norm after each sub-layer" in post and "final LayerNorm" not in post
    assert "embedding 50 × 32 × √d_model" in post and "linear 32 → 60 (tied to the target embedding)" in post
    pre = _labels(diagrams.transformer_diagram(tl.Transformer(tl.TransformerConfig(
        **small, norm_first=True, tie_embeddings=False, activation="gelu", positional="learned",
        scale_embeddings=False))))
    assert "LayerNorm before each sub-layer" in pre and "then one final LayerNorm" in pre
    assert "(gelu)" in pre and "learned positional encoding" in pre and "tied" not in pre and "√d_model" not in pre
    with pytest.raises(TypeError, match="model: expected a transformer_lib Transformer"):
        diagrams.transformer_diagram(tl.DecoderOnlyModel(tl.TransformerConfig(**small)))

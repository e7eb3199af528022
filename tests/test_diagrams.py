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

"""Architecture drawn by code: a thin re-export, no code, for the chapters' ``from transformer_lib.book import
diagrams``. The boxes and arrows are in :mod:`.block_diagrams`; the paper's Figure 1 drawn from a live model in
:mod:`.transformer_diagram`; the pictures inside it in :mod:`.attention_diagrams` (Figure 2, the projections,
cross-attention) and :mod:`.flow_diagrams` (the residual stream, the KV cache).
"""

from __future__ import annotations

from .block_diagrams import DIM_TEXT, Arrow, Box, block_diagram, diagram_facts, layout_diagram
from .transformer_diagram import FIGURE_1_PARTS, transformer_diagram

__all__ = [
    "Box",
    "Arrow",
    "block_diagram",
    "transformer_diagram",
    "FIGURE_1_PARTS",
    "DIM_TEXT",
    "layout_diagram",
    "diagram_facts",
]

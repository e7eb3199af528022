"""The one tiny model the unit tests build: small enough to run in milliseconds, with two of everything (layers,
heads per pair of dimensions) so that a bug that only shows between layers or heads still shows. A test that needs
something else says so with an override: ``tiny_config(max_len=16)``."""

from __future__ import annotations

import transformer_lib as tl

TINY = dict(
    src_vocab_size=20,
    tgt_vocab_size=24,
    d_model=32,
    n_heads=4,
    n_encoder_layers=2,
    n_decoder_layers=2,
    d_ff=64,
    dropout=0.0,
    max_len=40,
)


def tiny_config(**overrides) -> tl.TransformerConfig:
    """:data:`TINY` as a config, with ``overrides`` (any :class:`transformer_lib.TransformerConfig` field)."""
    return tl.TransformerConfig(**{**TINY, **overrides})

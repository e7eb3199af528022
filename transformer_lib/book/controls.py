"""Controls that work on the website without a kernel: a thin re-export, no code, for the chapters'
``from transformer_lib.book import controls``. The code is in :mod:`.precomputed_controls`."""

from __future__ import annotations

from .precomputed_controls import MAX_VIEWS, label_html, precomputed, precomputed_html

__all__ = ["precomputed", "precomputed_html", "label_html", "MAX_VIEWS"]

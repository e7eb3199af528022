"""Controls for the chapters' experiments: a thin re-export, no code, for ``from transformer_lib.book import
controls``. Precomputed views (:mod:`.precomputed_controls`) serve the website without a kernel; :func:`live` is one
control that is live in Jupyter and precomputed on the website (:mod:`.live_controls`)."""

from __future__ import annotations

from .live_controls import WIDGET_MIME, LiveControl, live
from .precomputed_controls import MAX_VIEWS, label_html, pre_html, precomputed, precomputed_html

__all__ = [
    "precomputed",
    "precomputed_html",
    "label_html",
    "pre_html",
    "MAX_VIEWS",
    "live",
    "LiveControl",
    "WIDGET_MIME",
]

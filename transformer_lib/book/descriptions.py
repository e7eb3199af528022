"""A figure's short text alternative, which the website reads aloud in place of the figure: the facts it states
are kept in the figure (``layout.meta.alt_facts``) and said in either language by :func:`.labels.alt_sentence`."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from .labels import alt_meta

__all__ = ["describe", "value_range"]


def describe(fig: go.Figure, facts: dict[str, Any]) -> go.Figure:
    """Give ``fig`` its short text alternative: the website reads it aloud in place of the figure (``aria-label``,
    :func:`transformer_lib.site.figures.alt_text`). ``facts`` (kept in ``layout.meta.alt_facts``) are what it says, in
    either language (:func:`.labels.alt_sentence`); ``layout.meta.alt`` holds the English sentence. Other ``meta``
    keys are kept."""
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    fig.update_layout(meta={**meta, **alt_meta(facts)})
    return fig


def value_range(values: Any) -> list[float] | None:
    """``[low, high]`` of the finite values, or None (for :func:`.labels.alt_sentence`)."""
    array = np.asarray(values, dtype=float)
    finite = array[np.isfinite(array)]
    return [float(finite.min()), float(finite.max())] if finite.size else None

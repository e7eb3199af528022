"""Reading chapter 8's ablation result: values per seed at a step, a summary table, the figure, and the JSON.

A result is the JSON-ready dict that :func:`transformer_lib.book.ablation.run_ablation` returns (and
``book/checkpoints/ablation.json`` holds); the functions here only read it, so a chapter can draw the committed
numbers without training anything. :mod:`transformer_lib.book.ablation` re-exports every name of this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import numpy as np

from . import viz

__all__ = ["at_step", "summary", "ablation_figure", "dumps"]


def at_step(result: dict, variant: str, step: int, key: str = "heldout_loss") -> np.ndarray:
    """One value per seed of ``variant`` at ``step``: ``key`` is ``"heldout_loss"`` (at an evaluation step) or
    ``"loss_bins"`` / ``"grad_norm_bins"`` (the bin that holds ``step``). Shape: (seeds,)."""
    runs = result["runs"].get(variant)
    if runs is None:
        raise KeyError(f"variant: expected one of {list(result['runs'])}, got {variant!r}")
    if key == "heldout_loss":
        steps = runs[0]["heldout_steps"]
        if step not in steps:
            raise ValueError(f"step: expected an evaluation step ({steps[0]}, {steps[1]}, ...), got {step}")
        return np.array([r["heldout_loss"][steps.index(step)] for r in runs])
    if key not in ("loss_bins", "grad_norm_bins"):
        raise ValueError(f"key: expected 'heldout_loss', 'loss_bins' or 'grad_norm_bins', got {key!r}")
    index = (step - 1) // result["config"]["bin_size"]
    return np.array([r[key][index] for r in runs])


def summary(result: dict, steps: Sequence[int], baseline: str = "recipe") -> list[dict]:
    """One row per variant: the held-out loss at each of ``steps`` as mean ± standard deviation over the seeds,
    and, against ``baseline`` run from the same seeds, the smallest and largest per-seed difference at the last
    of ``steps`` ("separated" when all seeds agree on its sign)."""
    rows = []
    base = at_step(result, baseline, steps[-1])
    for name in result["runs"]:
        row: dict = {"variant": name}
        for step in steps:
            values = at_step(result, name, step)
            row[f"step {step}"] = f"{values.mean():.3f} ± {values.std(ddof=1) if len(values) > 1 else 0:.3f}"
        diff = at_step(result, name, steps[-1]) - base
        row[f"vs {baseline}, per seed"] = "" if name == baseline else f"{diff.min():+.3f} … {diff.max():+.3f}"
        row["separated"] = name != baseline and bool((diff > 0).all() or (diff < 0).all())
        rows.append(row)
    return rows


def ablation_figure(result: dict, *, height: int = 440):
    """Training loss, held-out loss and gradient norm (before clipping; a dotted line at 1) of every variant: the
    mean over seeds as a line and the range of the seeds as a band (click a legend entry to hide a variant)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=("training loss", "held-out loss", "gradient norm"),
        horizontal_spacing=0.07,
    )
    bin_size = result["config"]["bin_size"]
    for i, (name, runs) in enumerate(result["runs"].items()):
        color = viz.COLORS[i % len(viz.COLORS)]
        binned = bin_size * (np.arange(len(runs[0]["loss_bins"])) + 0.5)
        for col, key, x in (
            (1, "loss_bins", binned),
            (2, "heldout_loss", np.array(runs[0]["heldout_steps"])),
            (3, "grad_norm_bins", binned),
        ):
            values = np.array([r[key] for r in runs])  # (seeds, points)
            low, high = values.min(0).round(4), values.max(0).round(4)
            band = dict(
                legendgroup=name, showlegend=False, hoverinfo="skip", mode="lines", line=dict(width=0, color=color)
            )
            fig.add_trace(go.Scatter(x=x, y=high, **band), row=1, col=col)
            fig.add_trace(go.Scatter(x=x, y=low, fill="tonexty", opacity=0.2, **band), row=1, col=col)
            mean = go.Scatter(
                x=x,
                y=values.mean(0).round(4),
                name=name,
                legendgroup=name,
                showlegend=col == 1,
                line_color=color,
                mode="lines",
            )
            fig.add_trace(mean, row=1, col=col)
    fig.add_hline(y=1.0, line_dash="dot", line_color="grey", row=1, col=3)  # the clipping threshold
    fig.update_xaxes(title_text="step")
    for col, ticks in ((1, [1, 1.5, 2, 3, 4, 5]), (2, [0.1, 0.2, 0.5, 1, 2, 5])):  # losses on log axes
        fig.update_yaxes(type="log", tickvals=ticks, ticktext=[str(t) for t in ticks], row=1, col=col)
    n = len(result["config"]["seeds"])
    fig.update_layout(
        title=f"One choice changed at a time ({n} seeds: mean and range)",
        height=height,
        hovermode="x unified",
        legend=dict(orientation="h", y=-0.25),
        margin=dict(t=90),
    )
    return fig


def dumps(result: dict) -> str:
    """``result`` as JSON, every list of numbers on one line (small diffs, readable)."""
    text = json.dumps(result, indent=1, ensure_ascii=False)
    return re.sub(r"\[[-0-9.,eE\s]*\]", lambda m: "[" + " ".join(m.group(0)[1:-1].split()) + "]", text) + "\n"

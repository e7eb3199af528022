"""Curves: lines over a shared x (:func:`line_plot`), a training run's history, one panel per quantity
(:func:`training_curves`), and the warm-up schedule of the paper beside a recipe's (:func:`learning_rate_schedule`),
with plotly or matplotlib.

Shape legend: ``N`` points.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ..training import noam_lr
from ..validation import check_positive
from .descriptions import describe, value_range
from .style import COLORS, as_array, check_backend, mpl_figure

__all__ = ["line_plot", "training_curves", "learning_rate_schedule"]


def line_plot(
    x: Any,
    ys: Mapping[str, Any],
    *,
    title: str | None = None,
    x_title: str | None = None,
    y_title: str | None = None,
    log_x: bool = False,
    log_y: bool = False,
    markers: bool = False,
    backend: str = "plotly",
):
    """One line per entry of ``ys`` (name -> values), all over the same ``x``.

    Shape:
        x: (N,); every value in ys: (N,)
    """
    check_backend(backend)
    x = as_array("x", x, 1)
    if not ys:
        raise ValueError("ys: expected at least one named series, got an empty mapping")
    series = {name: as_array(f"ys[{name!r}]", y, 1) for name, y in ys.items()}
    for name, y in series.items():
        if len(y) != len(x):
            raise ValueError(f"ys[{name!r}]: expected {len(x)} values to match x, got {len(y)}")
    if backend == "matplotlib":
        fig, axes = mpl_figure()
        ax = axes[0, 0]
        for name, y in series.items():
            ax.plot(x, y, marker="o" if markers else None, label=name)
        ax.set(
            title=title or "",
            xlabel=x_title,
            ylabel=y_title,
            xscale="log" if log_x else "linear",
            yscale="log" if log_y else "linear",
        )
        ax.legend()
        return fig
    fig = go.Figure(
        [go.Scatter(x=x, y=y, name=name, mode="lines+markers" if markers else "lines") for name, y in series.items()]
    )
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, hovermode="x unified")
    # log axes read 10^-6, not plotly's SI prefixes ("1µ"), which mix badly with powers of ten in the text
    fig.update_xaxes(type="log" if log_x else "linear", exponentformat="power")
    fig.update_yaxes(type="log" if log_y else "linear", exponentformat="power")
    lines = [[name, value_range(y)] for name, y in list(series.items())[:6]]
    facts = dict(kind="lines", title=title, y_title=y_title, x_title=x_title, x_range=value_range(x), log_x=bool(log_x))
    return describe(fig, {**facts, "series": lines, "more": max(0, len(series) - 6)})


def training_curves(
    history: Any,
    *,
    keys: Sequence[str] | None = None,
    title: str | None = "Training",
    x_title: str = "step",
    log_y: bool = False,
    backend: str = "plotly",
):
    """Curves from ``{"train_loss": [...], "val_loss": [...]}`` or an object with list attributes (such as
    ``tl.History``): one panel per quantity, where a quantity is the name after its last "_" (so
    ``train_loss`` and ``val_loss`` share the "loss" panel while ``lr`` gets its own). A shorter series (say,
    once per epoch) is stretched over the longest, so that its points line up with the training steps.
    """
    check_backend(backend)
    if isinstance(history, Mapping):
        source = history
    else:
        is_instance = dataclasses.is_dataclass(history) and not isinstance(history, type)
        source = dataclasses.asdict(history) if is_instance else vars(history)
    names = (
        list(keys)
        if keys is not None
        else [
            k
            for k, v in source.items()
            if not k.startswith("_")
            and isinstance(v, (list, tuple, np.ndarray))
            and len(v) > 0
            and all(isinstance(e, (int, float, np.number)) for e in v)
        ]
    )
    missing = [k for k in names if k not in source]
    if not names or missing:
        raise ValueError(f"history: expected non-empty lists of numbers (keys={keys}), got keys {list(source)}")
    panels: dict[str, list[str]] = {}
    for k in names:
        panels.setdefault(k.rsplit("_", 1)[-1], []).append(k)
    longest = max(len(source[k]) for k in names)

    def xs(k: str) -> np.ndarray:
        return np.arange(1, len(source[k]) + 1) * longest / len(source[k])

    if backend == "matplotlib":
        fig, axes = mpl_figure(len(panels), 1, size=(6.5, 2.4 * len(panels) + 0.6))
        for ax, (quantity, members) in zip(axes[:, 0], panels.items(), strict=True):
            for k in members:
                ax.plot(xs(k), source[k], label=k, color=COLORS[names.index(k) % len(COLORS)])
            ax.set(ylabel=quantity, yscale="log" if log_y else "linear")
            ax.legend()
        axes[-1, 0].set_xlabel(x_title)
        fig.suptitle(title or "")
        return fig
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.06)
    for row, (quantity, members) in enumerate(panels.items(), start=1):
        for k in members:
            fig.add_trace(
                go.Scatter(
                    x=xs(k),
                    y=source[k],
                    name=k,
                    mode="lines" if len(source[k]) > 30 else "lines+markers",
                    line=dict(color=COLORS[names.index(k) % len(COLORS)]),
                ),
                row=row,
                col=1,
            )
        fig.update_yaxes(title_text=quantity, type="log" if log_y else "linear", exponentformat="power", row=row, col=1)
    fig.update_xaxes(title_text=x_title, row=len(panels), col=1)
    fig.update_layout(title=title, height=170 + 220 * len(panels), hovermode="x unified")
    curves = [[k, value_range(source[k])] for k in names]
    return describe(fig, dict(kind="training", title=title, length=longest, x_title=x_title, series=curves))


def learning_rate_schedule(
    d_model: int, warmup_steps: int, factor: float = 1.0, *, steps: int = 1_200, backend: str = "plotly"
):
    """The learning rate of :func:`~transformer_lib.noam_lr` against the training step: on the left the paper's base
    model (d_model 512, 4,000 warm-up steps, 20,000 steps), on the right chapter 7's recipe (``d_model``,
    ``warmup_steps`` and the ``factor`` that puts its peak at the recipe's ``lr``) over its first ``steps`` steps.
    Chapters 6c and 8 draw it.
    """
    check_backend(backend)
    for name, value in (("d_model", d_model), ("warmup_steps", warmup_steps), ("steps", steps)):
        check_positive(name, value)
    check_positive("factor", factor, integer=False)
    panels = [
        ("paper: d_model 512, warm-up 4000", "step (paper)", range(1, 20_001, 50), (512, 4000, 1.0)),
        (
            f"chapter 7: d_model {d_model}, warm-up {warmup_steps}",
            "step (chapter 7)",
            range(1, steps + 1, 5),
            (d_model, warmup_steps, factor),
        ),
    ]
    curves = [(name, x_title, list(xs), [noam_lr(s, *args) for s in xs]) for name, x_title, xs, args in panels]
    title = "Learning rate against training step"
    if backend == "matplotlib":
        fig, axes = mpl_figure(1, 2, size=(9.0, 3.6))
        for i, (ax, (name, x_title, xs, lrs)) in enumerate(zip(axes[0], curves, strict=True)):
            ax.plot(xs, lrs, color=COLORS[i], label=name)
            ax.set(xlabel=x_title, ylabel="learning rate" if i == 0 else None)
            ax.legend()
        fig.suptitle(title)
        return fig
    fig = go.Figure(
        [
            go.Scatter(x=xs, y=lrs, name=name, line_color=COLORS[i], xaxis=f"x{i + 1}", yaxis=f"y{i + 1}")
            for i, (name, _, xs, lrs) in enumerate(curves)
        ]
    )
    # the paper's ticks every 10,000 steps: denser, the Chinese "10,000" ticks tilt into the legend on a phone
    fig.update_layout(
        title=title,
        height=380,
        xaxis=dict(domain=[0, 0.46], title=curves[0][1], dtick=10_000),
        yaxis=dict(title="learning rate", exponentformat="power"),
        xaxis2=dict(domain=[0.54, 1], title=curves[1][1], anchor="y2"),
        yaxis2=dict(anchor="x2", exponentformat="power"),
        legend=dict(orientation="h", y=-0.25),
    )
    return fig

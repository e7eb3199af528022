"""One control for an experiment that needs free input: live in a kernel, precomputed on the website.

A sentence typed by the reader, or a slider over a wide range, cannot be computed in advance; a website has no
kernel to compute it. :func:`live` shows one object with two views of the same drawing function: in Jupyter
(JupyterLab, Colab, Binder) an ipywidgets control that calls ``draw`` with the real model each time the reader
changes it; on the website the choices :mod:`.precomputed_controls` computed when the book was built, switched in
the page. Both views sit in one output's MIME bundle: a notebook front end renders the widget's view (ranked first),
and the book's ``_config.yml`` drops that view for the site's builders (``nb_mime_priority_overrides``), which then
render the precomputed figure or HTML. The site never shows a control that needs a kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .precomputed_controls import precomputed, precomputed_html

__all__ = ["WIDGET_MIME", "LiveControl", "live"]

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"  # what a notebook front end renders as a live widget
PLOTLY_MIME = "application/vnd.plotly.v1+json"


def _site_bundle(site: Any) -> dict[str, Any]:
    """The MIME bundle of the precomputed view: a plotly figure's JSON, or an HTML object's text."""
    import plotly.graph_objects as go

    if isinstance(site, go.Figure):
        import plotly.io as pio

        return pio.renderers["plotly_mimetype"].to_mimebundle(site.to_dict())
    html = getattr(site, "_repr_html_", None)
    if html is None:
        raise TypeError(f"site: expected a plotly Figure or an object with _repr_html_, got {type(site).__name__}")
    return {"text/html": html()}


class LiveControl:
    """A widget in a kernel, its precomputed twin on the website: one displayed output (see the module's docstring).

    Attributes:
        widget: the ipywidgets control with its output; it recomputes in a kernel.
        site: the precomputed figure (or HTML) that the website shows.
    """

    def __init__(self, widget: Any, site: Any, drawn: list[Any] | None = None) -> None:
        if not hasattr(widget, "_repr_mimebundle_"):
            raise TypeError(f"widget: expected an ipywidgets widget, got {type(widget).__name__}")
        self.widget = widget
        self.site = site
        self._site = _site_bundle(site)  # checked now, not when the page is displayed
        self._drawn = drawn if drawn is not None else []

    @property
    def value(self) -> Any:
        """What the live view shows now: the figure or HTML of the widget's latest drawing (None before any)."""
        return self._drawn[-1] if self._drawn else None

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        widget = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        if WIDGET_MIME not in widget:  # no front end to show it (a plain Python shell): the site's view alone
            widget = {k: v for k, v in widget.items() if k != "text/plain"}
        return {**self._site, **widget}


def live(
    draw: Callable[..., Any],
    controls: Mapping[str, Any],
    choices: Mapping[str, Sequence[Any]],
    *,
    initial: Mapping[str, Any] | None = None,
    label: str | None = None,
) -> LiveControl:
    """One control for ``draw``: live in Jupyter through ``controls``, precomputed over ``choices`` on the website.

    ``draw(**values)`` returns a plotly figure or an HTML string; the same function makes both views, so the site
    shows what the kernel computes for those values.

    Args:
        draw: the drawing function, called with one keyword argument per control.
        controls: argument name -> the ipywidgets control that sets it in a kernel (a ``Text`` for free text, a slider
            for a range). Their values are the live view's first values.
        choices: argument name -> the values the website offers (at most ``MAX_VIEWS`` combinations); the same
            names as ``controls``. With one value each, the site shows that one view as it is (a figure with a
            slider of its own keeps it).
        initial: the website's first view (default: the first values).
        label: text before the website's slider (one argument only).

    >>> import contextlib, io, ipywidgets as widgets, plotly.graph_objects as go
    >>> def bars(n=2):
    ...     return go.Figure(go.Bar(y=list(range(n))))
    >>> with contextlib.redirect_stdout(io.StringIO()):  # outside a kernel the widget's first view is printed
    ...     control = live(bars, {"n": widgets.IntSlider(2, min=1, max=100)}, {"n": [1, 2, 3]}, initial={"n": 2})
    >>> sorted(control._repr_mimebundle_())  # the widget's view for Jupyter, plotly's for the site
    ['application/vnd.jupyter.widget-view+json', 'application/vnd.plotly.v1+json', 'text/plain']
    """
    import ipywidgets as widgets
    from IPython.display import HTML, display

    if set(controls) != set(choices):
        raise ValueError(
            f"controls, choices: expected the same argument names, got {sorted(controls)} and {sorted(choices)}"
        )
    if not callable(draw):
        raise TypeError(f"draw: expected a function returning a plotly figure or HTML, got {type(draw).__name__}")

    drawn: list[Any] = []  # what the widget's first call drew: a figure or HTML decides the site's kind of view

    def show(**values: Any) -> None:
        out = draw(**values)
        drawn[:] = [out]  # the latest only: a long session keeps no old figures
        display(HTML(out) if isinstance(out, str) else out)

    widget = widgets.interactive(show, **controls)
    first = drawn[0] if drawn else draw(**{name: control.value for name, control in controls.items()})
    if all(len(values) == 1 for values in choices.values()):  # one view: the site shows it with its own controls
        one = draw(**{name: values[0] for name, values in choices.items()})
        site: Any = HTML(one) if isinstance(one, str) else one
    else:  # an argument with one value is fixed on the site: no menu for it
        fixed = {name: values[0] for name, values in choices.items() if len(values) == 1}
        varying = {name: values for name, values in choices.items() if len(values) > 1}
        start = {name: value for name, value in (initial or {}).items() if name in varying} or None

        def view(**values: Any) -> Any:
            return draw(**values, **fixed)

        if isinstance(first, str):
            site = precomputed_html(view, varying, initial=start)
        else:
            site = precomputed(view, varying, initial=start, label=label)
    return LiveControl(widget, site, drawn)

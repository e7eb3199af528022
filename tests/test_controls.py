"""transformer_lib.book.controls: precomputed twins of live controls (the website has no kernel)."""

import plotly.graph_objects as go
import pytest

from transformer_lib.book.controls import precomputed


def _draw(scale=1, kind="bar"):
    trace = go.Bar(y=[scale, 2 * scale]) if kind == "bar" else go.Scatter(y=[scale, 3 * scale])
    return go.Figure(trace, layout=dict(title=f"{kind} x{scale}", height=300))


def test_one_argument_gives_a_slider_whose_steps_show_each_view():
    fig = precomputed(_draw, {"scale": [1, 2, 3]}, initial={"scale": 2})
    assert len(fig.data) == 3 and [t.visible for t in fig.data] == [False, True, False]
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["1", "2", "3"] and fig.layout.sliders[0].active == 1
    visible, layout = steps[2].args
    assert visible["visible"] == [False, False, True] and layout["title.text"] == "bar x3"
    assert list(fig.data[2].y) == [3, 6]  # the view really is draw(scale=3)


def test_several_arguments_give_a_menu_of_combinations():
    fig = precomputed(_draw, {"scale": [1, 2], "kind": ["bar", "line"]})
    buttons = fig.layout.updatemenus[0].buttons
    assert [b.label for b in buttons] == [
        "scale=1, kind=bar",
        "scale=1, kind=line",
        "scale=2, kind=bar",
        "scale=2, kind=line",
    ]
    assert buttons[3].args[0]["visible"] == [False, False, False, True] and fig.data[3].type == "scatter"


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="choices"):
        precomputed(_draw, {"scale": []})
    with pytest.raises(ValueError, match="initial"):
        precomputed(_draw, {"scale": [1, 2]}, initial={"scale": 5})
    with pytest.raises(TypeError, match="draw: expected a plotly Figure"):
        precomputed(lambda scale: None, {"scale": [1]})
    with pytest.raises(ValueError, match="its own slider or menu"):
        precomputed(lambda scale: go.Figure(layout=dict(sliders=[dict(steps=[])])), {"scale": [1]})
    with pytest.raises(ValueError, match="at most"):
        precomputed(_draw, {"scale": list(range(100))})


def test_html_twin_has_one_menu_per_argument_and_one_view_per_combination():
    import json

    from transformer_lib.book.controls import precomputed_html

    out = precomputed_html(
        lambda n, kind: f"<b>{kind} {n}</b>", {"n": [1, 2], "kind": ["a", "b c"]}, initial={"n": 2, "kind": "b c"}
    ).data
    assert out.count("<select>") == 2 and out.count("data-view=") == 4
    # the view key is what the page's JavaScript builds: JSON.stringify of the menus' values
    key = json.dumps(["2", "b c"], separators=(",", ":")).replace('"', "&quot;")
    assert f'data-view="{key}"><b>b c 2</b>' in out  # the initial view, not hidden
    assert out.count(" hidden>") == 3 and '<option value="2" selected>2</option>' in out
    # its words in Chinese too, from the figures' catalog, for the Chinese page's script to show
    masks = precomputed_html(lambda kind: kind, {"kind": ["padding", "causal and padding"]}).data
    assert '<span data-zh="类型">kind</span>' in masks and '<option value="padding" data-zh="填充" selected>' in masks
    assert 'data-zh="因果和填充"' in masks and "document.documentElement.lang === 'zh-CN'" in masks
    # a line that a view writes (chapter 2's "N tokens, vocabulary V, U unknown"), through label_html: its Chinese
    # from a rule of label_patterns, swapped in by the same script (the views are inside the control)
    from transformer_lib.book.controls import label_html

    views = precomputed_html(lambda n: f"<p>{label_html(f'{n} tokens, vocabulary 80, 0 unknown')}</p>", {"n": [5]})
    shown = '<span data-zh="5 个词元，词表 80，未知词元 0 个">5 tokens, vocabulary 80, 0 unknown</span>'
    assert f"<p>{shown}</p>" in views.data


def test_live_gives_the_widget_to_a_notebook_and_the_precomputed_figure_to_the_site():
    import ipywidgets as widgets

    from transformer_lib.book.controls import WIDGET_MIME, live

    calls = []

    def draw(scale=1, kind="bar"):
        calls.append((scale, kind))
        return _draw(scale, kind)

    control = live(
        draw,
        {"scale": widgets.IntSlider(7, min=1, max=100), "kind": widgets.Dropdown(options=["bar", "line"])},
        {"scale": [1, 2], "kind": ["bar", "line"]},
        initial={"scale": 2, "kind": "line"},
    )
    bundle = control._repr_mimebundle_()
    assert bundle[WIDGET_MIME]["model_id"] == control.widget.model_id  # the live view
    figure = bundle["application/vnd.plotly.v1+json"]  # the site's: every choice precomputed, the initial one shown
    assert len(figure["data"]) == 4 and [t["visible"] for t in figure["data"]] == [False, False, False, True]
    assert calls[0] == (7, "bar")  # the widget's first view is drawn from the widgets' values
    assert sorted(calls[1:]) == [(1, "bar"), (1, "line"), (2, "bar"), (2, "line")]
    assert control.value.layout.title.text == "bar x7"  # what the live view shows
    control.widget.children[0].value = 40  # moving the slider redraws with the new value, as in a kernel
    assert calls[-1] == (40, "bar") and control.value.layout.title.text == "bar x40"


def test_live_html_views_and_bad_arguments():
    import ipywidgets as widgets

    from transformer_lib.book.controls import live

    control = live(lambda text: f"<b>{text.upper()}</b>", {"text": widgets.Text("hi")}, {"text": ["a", "b"]})
    html = control._repr_mimebundle_()["text/html"]
    assert "<b>A</b>" in html and "<b>B</b>" in html and "<select>" in html
    with pytest.raises(ValueError, match="controls, choices: expected the same argument names"):
        live(_draw, {"scale": widgets.IntSlider(1)}, {"kind": ["bar"]})
    with pytest.raises(TypeError, match="draw: expected a function"):
        live(None, {"scale": widgets.IntSlider(1)}, {"scale": [1]})
    with pytest.raises(TypeError, match="site: expected a plotly Figure"):
        from transformer_lib.book.live_controls import LiveControl

        LiveControl(widgets.IntSlider(1), object())


def test_the_site_renders_a_live_controls_precomputed_view_never_its_widget():
    """_config.yml drops the widget's view for every builder (no kernel on the site): myst-nb then picks the
    precomputed figure (plotly's MIME type, drawn by transformer_lib.site.figures) or HTML from the same output."""
    from pathlib import Path

    import yaml
    from myst_nb.core.render import get_mime_priority

    from transformer_lib.book.controls import WIDGET_MIME

    config = yaml.safe_load((Path(__file__).parents[1] / "_config.yml").read_text(encoding="utf-8"))
    overrides = [tuple(o) for o in config["sphinx"]["config"]["nb_mime_priority_overrides"]]
    for builder in ("html", "dirhtml", "singlehtml"):
        order = get_mime_priority(builder, overrides)
        assert WIDGET_MIME not in order, (builder, order)
        assert order.index("application/vnd.plotly.v1+json") < order.index("text/html"), (builder, order)
    assert WIDGET_MIME in get_mime_priority("html", [])  # what myst-nb would do without the override


def test_live_with_one_choice_shows_that_view_with_its_own_slider_on_the_site():
    import ipywidgets as widgets

    from transformer_lib.book.controls import live

    def draw(n=1):
        return precomputed(_draw, {"scale": [n, n + 1]})  # a figure with a slider of its own

    control = live(draw, {"n": widgets.Dropdown(options=[1, 5, 9])}, {"n": [5]})
    figure = control._repr_mimebundle_()["application/vnd.plotly.v1+json"]
    assert [list(t["y"]) for t in figure["data"]] == [[5, 10], [6, 12]] and len(figure["layout"]["sliders"]) == 1


def test_live_fixes_an_argument_with_one_choice_on_the_site():
    import ipywidgets as widgets

    from transformer_lib.book.controls import live

    control = live(
        _draw,
        {"scale": widgets.IntSlider(2, min=1, max=9), "kind": widgets.Dropdown(options=["bar", "line"])},
        {"scale": [1, 2, 3], "kind": ["line"]},
        initial={"scale": 2, "kind": "line"},
        label="scale",
    )
    figure = control._repr_mimebundle_()["application/vnd.plotly.v1+json"]
    slider = figure["layout"]["sliders"][0]  # a slider over the one argument that varies, not a menu of pairs
    assert [s["label"] for s in slider["steps"]] == ["1", "2", "3"] and slider["active"] == 1
    assert {t["type"] for t in figure["data"]} == {"scatter"}  # kind="line" in every view

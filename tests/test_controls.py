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

"""transformer_lib.book.viz: figures carry the right traces, shapes and labels; bad input fails with a clear error;
the renderer set-up and the website plumbing (myst-nb plugin, Sphinx extension) do what they promise."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch
from matplotlib.figure import Figure

from transformer_lib.book import viz

TOKENS = ["<bos>", "the", "cat", "the", "<eos>"]  # "the" twice: repeated tokens must stay separate columns


def _weights(tq: int, tk: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(tq, tk, generator=torch.Generator().manual_seed(seed)).softmax(dim=-1)


# --------------------------------------------------------------------------------------------- heatmaps
def test_attention_heatmap_plots_the_weights_with_token_labels() -> None:
    w = _weights(5, 5)
    fig = viz.attention_heatmap(w, TOKENS, TOKENS, title="self-attention")
    (trace,) = fig.data
    assert isinstance(trace, go.Heatmap)
    np.testing.assert_allclose(np.asarray(trace.z), w.numpy(), rtol=1e-6)
    assert list(trace.x) == list(range(5)) and list(trace.y) == list(range(5))  # numeric: duplicates survive
    assert list(fig.layout.xaxis.ticktext) == TOKENS and list(fig.layout.yaxis.ticktext) == TOKENS
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert fig.layout.yaxis.autorange == "reversed"  # first query on top, as in the matrix
    assert fig.layout.yaxis.scaleanchor == "x"  # square cells
    assert fig.layout.title.text == "self-attention"
    assert trace.customdata[2][3].tolist() == ["cat", "the"]  # hover: (query, key) of row 2, column 3


def test_heatmap_accepts_a_tensor_on_any_device_and_numpy_alike() -> None:
    w = _weights(3, 4)
    from_tensor = viz.heatmap(w.requires_grad_(), list("abcd"), list("xyz"))
    from_numpy = viz.heatmap(w.detach().numpy(), list("abcd"), list("xyz"))
    np.testing.assert_array_equal(np.asarray(from_tensor.data[0].z), np.asarray(from_numpy.data[0].z))


def test_heatmap_values_and_diverging_scale() -> None:
    z = np.array([[-2.0, 1.0], [0.5, 0.0]])
    fig = viz.heatmap(z, diverging=True, show_values=True)
    trace = fig.data[0]
    assert trace.zmid == 0.0 and (trace.zmin, trace.zmax) == (-2.0, 2.0)
    assert [list(row) for row in trace.text] == [["-2.00", "1.00"], ["0.50", "0.00"]]
    assert list(fig.layout.xaxis.ticktext) == ["0", "1"]  # positions when no labels are given


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda: viz.attention_heatmap(torch.ones(2, 3, 3)), r"weights: expected 2 dimensions, got shape \(2, 3, 3\)"),
        (lambda: viz.attention_heatmap(torch.ones(3, 4), list("abc"), list("abc")), r"key_tokens: expected 4 labels"),
        (lambda: viz.heatmap(np.ones((2, 2)), backend="bokeh"), r"backend: expected 'plotly' or 'matplotlib'"),
        (lambda: viz.positional_encoding_heatmap(np.ones(8)), r"pe: expected 2 dimensions"),
    ],
)
def test_bad_input_raises_a_clear_error(bad, match) -> None:
    with pytest.raises(ValueError, match=match):
        bad()


def test_cross_attention_rows_are_target_tokens_and_transposes_are_caught() -> None:
    src, tgt = ["I", "like", "you", "<eos>"], ["<bos>", "je", "t'"]
    fig = viz.cross_attention_heatmap(_weights(3, 4), src, tgt)
    assert list(fig.layout.xaxis.ticktext) == src and list(fig.layout.yaxis.ticktext) == tgt
    assert "source" in fig.layout.xaxis.title.text and "target" in fig.layout.yaxis.title.text
    with pytest.raises(ValueError, match="transposed"):
        viz.cross_attention_heatmap(_weights(4, 3), src, tgt)


def test_mask_heatmap_broadcasts_a_padding_mask_and_ticks_allowed_cells() -> None:
    ids = torch.tensor([[1, 5, 6, 0]])
    pad = ids != 0
    fig = viz.mask_heatmap(pad[:, None, None, :], list("abcd"), list("abcd"))  # (1, 1, 1, 4)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (4, 4) and z[:, :3].all() and not z[:, 3].any()
    assert sum(cell == "✓" for row in fig.data[0].text for cell in row) == 12
    causal = viz.mask_heatmap(torch.ones(3, 3, dtype=torch.bool).tril(), list("abc"), list("abc"))
    np.testing.assert_array_equal(np.asarray(causal.data[0].z), np.tril(np.ones((3, 3))))
    with pytest.raises(ValueError, match=r"mask: expected a shape that broadcasts to .* \(3, 3\), got \(4, 4\)"):
        viz.mask_heatmap(torch.ones(4, 4, dtype=torch.bool), list("abc"), list("abc"))


def test_positional_encoding_heatmap_is_centred_on_zero() -> None:
    pe = torch.linspace(-1, 1, 8 * 6).reshape(8, 6)
    fig = viz.positional_encoding_heatmap(pe)
    trace = fig.data[0]
    assert np.asarray(trace.z).shape == (8, 6) and trace.zmid == 0.0
    assert fig.layout.xaxis.title.text == "dimension i" and fig.layout.yaxis.title.text == "position pos"
    expected = plotly.colors.get_colorscale(viz.DIVERGING)  # the named diverging scale, as plotly expands it
    assert [(round(float(p), 9), c) for p, c in trace.colorscale] == [(round(float(p), 9), c) for p, c in expected]


# ------------------------------------------------------------------------------------- tokens in figures
def test_figures_show_the_word_start_mark_as_a_visible_space_with_a_legend() -> None:
    """The tokenizers' "▁" (drawn by fonts as a heavy underline) appears as "␣" in every label, with one legend."""
    tokens = ["<bos>", "the", "▁cat", "▁sat"]
    fig = viz.attention_heatmap(_weights(4, 4), tokens, tokens)
    assert list(fig.layout.xaxis.ticktext) == ["<bos>", "the", "␣cat", "␣sat"]
    assert list(fig.layout.yaxis.ticktext) == ["<bos>", "the", "␣cat", "␣sat"]
    assert fig.layout.xaxis.title.text == "key (attended to) · ␣ = ▁, a space before the word"
    assert fig.data[0].customdata[2][3].tolist() == ["␣cat", "␣sat"]  # hover as well
    plain = viz.attention_heatmap(_weights(2, 2), ["a", "b"], ["a", "b"])
    assert plain.layout.xaxis.title.text == "key (attended to)"  # no mark, no legend
    grid = viz.attention_grid(torch.rand(1, 2, 4, 4).softmax(-1), tokens, tokens)
    assert "␣cat" in grid.layout.xaxis.ticktext and "␣" in grid.layout.xaxis.title.text
    mask = viz.mask_heatmap(torch.ones(4, 4, dtype=torch.bool), tokens, tokens)
    assert "␣sat" in mask.layout.yaxis.ticktext
    assert viz.token_label("▁cat") == "␣cat" and viz.token_label(7) == "7"
    note = go.Figure(layout=dict(annotations=[viz.space_legend()])).layout.annotations[0]  # a valid annotation
    assert note.text == viz.SPACE_LEGEND and (note.x, note.y, note.xanchor, note.yanchor) == (1, 1, "right", "bottom")


def test_heatmap_writes_tokens_in_its_cells_at_a_readable_size() -> None:
    z = np.array([[1.0, 0.0], [1.0, 1.0]])
    fig = viz.heatmap(z, ["s0", "s1"], ["t=0", "t=1"], cell_text=[["<bos>", "<pad>"], ["▁cat", "x"]], show_scale=False)
    (trace,) = fig.data
    assert [list(row) for row in trace.text] == [["<bos>", "<pad>"], ["␣cat", "x"]]
    assert trace.texttemplate == "%{text}" and trace.textfont.size == 12 and trace.showscale is False
    assert fig.layout.xaxis.title.text == viz.SPACE_LEGEND  # the legend, as there is no other x title
    with pytest.raises(ValueError, match=r"cell_text: expected 2 rows of 2 strings to match z, got \[2, 1\]"):
        viz.heatmap(z, cell_text=[["a", "b"], ["c"]])


def test_token_strip_wraps_at_word_starts_and_keeps_every_token() -> None:
    pieces = ["The", "▁token", "i", "z", "er", "▁merges", "▁common", "▁pairs", "▁of", "▁symbols", "."]
    fig = viz.token_strip(pieces, title="50 merges", line_chars=20)
    lines = [list(t.customdata) for t in fig.data]  # one bar trace per line, hover = the raw tokens
    assert [p for line in lines for p in line] == pieces
    assert [sum(map(len, line)) for line in lines] == [20, 16, 9]  # "▁symbols" would make line 2 too long
    assert all(line[0].startswith("▁") for line in lines[1:])  # a new line starts at a word, not inside one
    narrow = viz.token_strip(pieces, line_chars=12)  # "er" overflows by one: the word stays whole on its line
    assert list(narrow.data[0].customdata) == ["The", "▁token", "i", "z", "er"]
    assert list(fig.data[0].text) == ["The", "␣token", "i", "z", "er", "␣merges"]
    assert list(fig.data[0].x) == [3, 6, 1, 1, 2, 7] and list(fig.data[0].base) == [0, 3, 9, 10, 11, 13]
    assert viz.SPACE_LEGEND in fig.layout.annotations[0].text and fig.layout.title.text == "50 merges"
    assert len(viz.token_strip(list("abc")).data) == 1  # short text: one line, no space mark, no legend for it
    assert viz.SPACE_LEGEND not in viz.token_strip(list("abc")).layout.annotations[0].text
    with pytest.raises(ValueError, match=r"pieces: expected a non-empty list of token strings, got 'abc'"):
        viz.token_strip("abc")


# ------------------------------------------------------------------------------------------ attention grid
def test_attention_grid_has_a_layer_menu_and_a_head_slider() -> None:
    n_layers, n_heads = 2, 3
    w = torch.rand(n_layers, n_heads, 4, 4).softmax(-1)
    fig = viz.attention_grid(w, list("abcd"), list("abcd"))
    assert len(fig.data) == n_layers * n_heads
    assert [t.visible for t in fig.data] == [True] + [False] * 5
    (menu,) = fig.layout.updatemenus
    assert [b.label for b in menu.buttons] == ["layer 1", "layer 2"]
    (slider,) = fig.layout.sliders
    assert [s.label for s in slider.steps] == ["1", "2", "3"]
    # layer 2's button installs a slider whose head-3 step shows trace 1 * 3 + 2 = 5, with that layer's data
    layer2_slider = menu.buttons[1].args[1]["sliders"][0]
    shown = layer2_slider["steps"][2]["args"][0]["visible"]
    assert shown.index(True) == 5 and sum(shown) == 1
    np.testing.assert_allclose(np.asarray(fig.data[5].z), w[1, 2].numpy(), rtol=1e-6)
    assert menu.buttons[1].args[0]["visible"].index(True) == 3  # choosing layer 2 starts at its head 1


def test_attention_grid_rejects_a_single_layer_without_the_layer_axis() -> None:
    with pytest.raises(ValueError, match=r"weights: expected 4 dimensions, got shape \(3, 4, 4\)"):
        viz.attention_grid(torch.rand(3, 4, 4))


# ------------------------------------------------------------------------------------------------ curves
def test_line_plot_draws_one_named_line_per_series_on_log_axes() -> None:
    fig = viz.line_plot(
        [1, 10, 100], {"a": [1, 2, 3], "b": torch.tensor([3.0, 2.0, 1.0])}, log_x=True, log_y=True, x_title="d_k"
    )
    assert [t.name for t in fig.data] == ["a", "b"]
    assert list(fig.data[1].y) == [3.0, 2.0, 1.0]
    assert (fig.layout.xaxis.type, fig.layout.yaxis.type) == ("log", "log")
    with pytest.raises(ValueError, match=r"ys\['a'\]: expected 3 values to match x, got 2"):
        viz.line_plot([1, 2, 3], {"a": [1, 2]})


@dataclass
class _History:
    loss: list[float] = field(default_factory=lambda: [3.0, 2.0, 1.5, 1.0])
    accuracy: list[float] = field(default_factory=lambda: [0.1, 0.4, 0.6, 0.8])
    lr: list[float] = field(default_factory=lambda: [1e-4, 2e-4, 3e-4, 4e-4])
    seconds: float = 1.5  # not a curve


def test_training_curves_puts_each_quantity_in_its_own_panel() -> None:
    fig = viz.training_curves(_History())
    assert [t.name for t in fig.data] == ["loss", "accuracy", "lr"]
    assert [t.yaxis for t in fig.data] == ["y", "y2", "y3"]
    assert [fig.layout[f"yaxis{i}"].title.text for i in ("", "2", "3")] == ["loss", "accuracy", "lr"]


def test_training_curves_share_a_panel_and_stretch_a_per_epoch_series() -> None:
    fig = viz.training_curves({"train_loss": [4.0, 3.0, 2.0, 1.0], "val_loss": [3.5, 1.5]})
    assert [t.yaxis for t in fig.data] == ["y", "y"]  # both end in "_loss"
    assert list(fig.data[1].x) == [2.0, 4.0]  # 2 evaluations spread over 4 steps
    with pytest.raises(ValueError, match="history: expected non-empty lists of numbers"):
        viz.training_curves({"note": "no curves here"})


# -------------------------------------------------------------------------------------------- matplotlib
@pytest.mark.parametrize(
    "make, n_axes",
    [
        (lambda: viz.attention_heatmap(_weights(3, 3), list("abc"), list("abc"), backend="matplotlib"), 2),
        (lambda: viz.attention_grid(torch.rand(2, 3, 4, 4), backend="matplotlib"), 6),
        (lambda: viz.mask_heatmap(torch.ones(2, 2, dtype=torch.bool), "ab", "ab", backend="matplotlib"), 1),
        (lambda: viz.training_curves(_History(), backend="matplotlib"), 3),
        (lambda: viz.line_plot([1, 2], {"a": [1, 2]}, backend="matplotlib"), 1),
        (lambda: viz.block_diagram([viz.Box("a", "A", 0, 0)], backend="matplotlib"), 1),
    ],
)
def test_matplotlib_backend_returns_a_figure(make, n_axes: int) -> None:
    fig = make()
    assert isinstance(fig, Figure) and len(fig.axes) == n_axes  # a heatmap's colour bar is an axis too


def test_matplotlib_heatmap_labels_its_axes() -> None:
    fig = viz.attention_heatmap(_weights(2, 3), ["q1", "q2"], ["k1", "k2", "k3"], backend="matplotlib")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k1", "k2", "k3"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["q1", "q2"]
    assert ax.get_images()[0].get_array().shape == (2, 3)


# --------------------------------------------------------------------------------- showing the figures
def test_import_sets_the_book_template_and_no_inlining_renderer() -> None:
    assert "transformer_book" in pio.templates.default
    assert list(pio.templates["transformer_book"].layout.colorway) == list(viz.COLORS)
    assert "notebook" not in (pio.renderers.default or "").split("+")  # would paste 4.8 MB of plotly.js


def test_log_axes_use_powers_of_ten_not_si_prefixes() -> None:
    fig = viz.line_plot([1, 2, 3], {"a": [1e-6, 1e-3, 1.0]}, log_x=True, log_y=True)
    assert fig.layout.yaxis.exponentformat == "power" and fig.layout.xaxis.exponentformat == "power"


def test_drawing_functions_say_what_their_figure_shows():
    """Each figure's text alternative (layout.meta.alt, the website's aria-label) comes from its drawing function,
    with the facts a reader who cannot see it needs: the kind, the title, the axes and the range of the values."""
    import transformer_lib as tl
    from transformer_lib.book import diagrams
    from transformer_lib.site import figures as site

    fig = viz.heatmap(np.array([[0.0, 0.5], [0.25, 1.0]]), ["a", "b"], ["x", "y"], title="T", x_title="key")
    assert fig.layout.meta["alt"] == "Heat map: T. 2 rows by 2 columns (key), values from 0 to 1."
    line = viz.line_plot([1, 2, 4], {"rnn": [3.0, 2.0, 1.0]}, title="L", x_title="n", y_title="loss")
    assert line.layout.meta["alt"] == "Line plot: L. loss against n (from 1 to 4): rnn from 1 to 3."
    curves = viz.training_curves({"train_loss": [3.0, 1.5], "lr": [0.1, 0.2]})
    assert curves.layout.meta["alt"].startswith("Training curves: Training, over 2 steps. train_loss from 1.5 to 3")
    drawn = diagrams.transformer_diagram(tl.TransformerConfig())
    alt = drawn.layout.meta["alt"]
    assert alt.startswith("Diagram: The Transformer") and "masked self-attention" in alt and "N = 6 ×" in alt
    assert drawn.layout.meta["fit_text_width"]  # the diagram's other meta stays
    assert site.alt_text(fig.to_plotly_json()) == fig.layout.meta["alt"]  # what the website says


def test_a_figure_says_what_it_shows_in_chinese_on_the_chinese_site():
    """The Chinese site reads each figure's text alternative in Chinese: the same facts (numbers untouched), the
    connecting words and every label found in the catalog translated, the parts of a diagram included."""
    import transformer_lib as tl
    from transformer_lib.book import diagrams
    from transformer_lib.site import figures as site

    fig = viz.heatmap(np.array([[0.0, 0.5], [0.25, 1.0]]), ["a", "b"], ["x", "y"], title="T", x_title="key")
    assert site.alt_text(fig.to_plotly_json(), "zh") == "热图：T。2 行 × 2 列（键），取值从 0 到 1。"
    line = viz.line_plot([1, 2, 4], {"lstm-x": [3.0, 2.0, 1.0]}, title="L", x_title="n", y_title="loss", log_x=True)
    assert (
        site.alt_text(line.to_plotly_json(), "zh")
        == "折线图：L。损失 随 n 变化（从 1 到 4，对数刻度）：lstm-x 从 1 到 3。"
    )
    curves = viz.training_curves({"train_loss": [3.0, 1.5]})
    assert site.alt_text(curves.to_plotly_json(), "zh") == "训练曲线：训练，共 2 步。train_loss 从 1.5 到 3。"
    drawn = diagrams.transformer_diagram(tl.TransformerConfig()).to_plotly_json()
    alt = site.alt_text(drawn, "zh")
    assert alt.startswith("示意图：") and "掩蔽自注意力" in alt and "N = 6 ×" in alt, alt
    assert not re.search(r"Diagram|Parts|masked|self-attention", alt), alt
    with pytest.raises(ValueError, match="kind"):
        site.alt_text({"layout": {"meta": {"alt_facts": {"kind": "pie"}}}})
    # a figure that recorded no facts is described from its title, kinds and axes, in the same catalog's words
    bare = {"data": [{"type": "bar"}], "layout": {"xaxis": {"title": {"text": "键"}}, "sliders": [{"steps": [{}, {}]}]}}
    assert site.alt_text(bare) == "Figure; bar chart; x: 键; 2 views, chosen with a slider"
    assert site.alt_text(bare, "zh") == "图；柱状图；x：键；2 个视图，用滑块选择"
    # the page carries the sentence once, as the aria-label, not again inside the figure
    assert "alt" not in json.dumps(site.without_alt(drawn)["layout"].get("meta", {}))
    assert site.without_alt(drawn)["layout"]["meta"]["fit_text_width"]


def test_learning_rate_schedule_draws_the_paper_and_the_recipe_with_their_peaks() -> None:
    import transformer_lib as tl

    factor = 2e-3 * (64 * 200) ** 0.5  # chapter 7's recipe: its peak, at step 200, is its lr 2e-3
    fig = viz.learning_rate_schedule(64, 200, factor)
    paper, recipe = fig.data
    assert (paper.name, recipe.name) == ("paper: d_model 512, warm-up 4000", "chapter 7: d_model 64, warm-up 200")
    assert (paper.xaxis, recipe.xaxis) == ("x", "x2") and fig.layout.xaxis2.title.text == "step (chapter 7)"
    assert paper.x[np.argmax(paper.y)] == 4001 and max(paper.y) == tl.noam_lr(4001, 512, 4000)  # every 50th step
    assert recipe.x[np.argmax(recipe.y)] == 201 and abs(max(recipe.y) - 2e-3) < 1e-5 and recipe.x[-1] == 1196
    assert isinstance(viz.learning_rate_schedule(64, 200, factor, steps=400, backend="matplotlib"), Figure)
    with pytest.raises(ValueError, match="warmup_steps: expected a value > 0, got 0"):
        viz.learning_rate_schedule(64, 0)
    with pytest.raises(ValueError, match="factor: expected a value > 0, got -1"):
        viz.learning_rate_schedule(64, 200, -1.0)

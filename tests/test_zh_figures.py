"""No English word where a reader of the Chinese site looks at a figure (issue 37).

Titles, axis titles, legend entries, slider and menu labels, annotations, the diagrams' hover text and the traces'
hover templates of a figure on a Chinese page come from the figures' catalog (locale/zh_CN/LC_MESSAGES/figures.po,
read by transformer_lib/book/labels.py), applied by ``labels.translate_figure`` when the page is built. The unit
tests draw the library's figures, translate them as the site does and look for English words; the last test reads
every figure of the built Chinese site (the JSON that site.py writes into a page), so a chapter's own
title or axis is checked too.

What may stay in Latin letters: symbols and code names (d_k, qkv_proj, W<sup>Q</sup>), model and method names
(Transformer, LSTM, BPE, SDPA), and data: a token, an example sentence quoted or given after a Chinese label's colon
(“下一个词元的候选：the big mouse …”), a trace's text (the tokens a scatter plot writes), the tick labels of a
token axis, and the "name=value" entries of a menu that plotly-theme.js turns into labelled dropdowns. Tick labels
and category names that a chapter's code writes ("head 1", "layer 2", "sentence 0", "words") are labels, not data:
one is reported when it is a label the catalog knows or reads as a word and a number; a dropdown's names and its
values that the catalog knows are reported unless the figure's words (``figure["words"]``, which plotly-theme.js
shows in their place) give their Chinese.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import torch

import transformer_lib as tl
from transformer_lib.book import attention_diagrams as ad
from transformer_lib.book import diagrams, viz
from transformer_lib.book import flow_diagrams as fd
from transformer_lib.book.labels import QUOTE, catalog, translate, translate_figure
from transformer_lib.book.pretrained import attention_explorer_html

ZH_SITE = Path(__file__).resolve().parents[1] / "_build" / "html" / "zh"

# Latin words a Chinese label keeps: math and code, and the names the glossary keeps in English
ALLOWED = {
    *"softmax SoftMax Softmax MatMul Dropout ReLU GELU Adam".split(),  # LayerNorm, Linear: 层规范化, 线性层 (issue 44)
    *"Transformer RNN LSTM GRU BPE BLEU FLOPs SDPA eager sdpa KV PE LN".split(),  # base/big: 基础模型/大模型
    *"top cpu cuda ms MB MiB GiB log exp max min Var Frenchy Tensor CLS SEP bos eos pad unk sep cls".split(),
    *"pos dim inf view transpose weight".split(),  # code: "view 为 (B, T, H, D)", "x @ weight.T"
}
_CODE = re.compile(r"\w*[_\d]\w*|\w+(?=\()|\b\w\b")  # d_model, qkv_proj, W2, f(x), single letters
_QUOTED = re.compile(r"'[^']*'|“[^”]*”|\"[^\"]*\"")
_MENU_ENTRY = re.compile(r"^[A-Za-z_][\w ]*=.*")  # "kind=lstm, seq_len=16": see plotly-theme.js
_LABEL_KEYS = ("text", "label", "prefix", "title", "hovertext")


def english_words(label: str) -> list[str]:
    """The English words a label shows to a reader, beside what may stay (see the module's docstring).

    >>> english_words("查询：%{customdata[0]}<br>键：%{customdata[1]}")
    []
    >>> english_words("query: %{customdata[0]}<br>键：%{customdata[1]}")
    ['query']
    >>> english_words("第 1 层，第 2 个头：our dog eats these green apples")
    []
    """
    text = re.sub(r"%\{[^}]*\}|<extra>|</extra>|<sup>.*?</sup>|<sub>.*?</sub>", " ", label)
    words: list[str] = []
    for line in re.split(r"<br>|\n", text):
        if line.lstrip().startswith(QUOTE):  # an English term quoted on purpose (appendix D's flowchart)
            continue
        line = re.sub(r"<[^>]+>", " ", line)
        line = line.split("：", 1)[0] if re.search(r"[\u4e00-\u9fff]", line.split("：", 1)[0]) else line
        line = _CODE.sub(" ", _QUOTED.sub(" ", line))
        words += [w for w in re.findall(r"[A-Za-z][A-Za-z']*[A-Za-z]", line) if w not in ALLOWED]
    return words


_NUMBERED = re.compile(r"^[A-Za-z][A-Za-z' -]*[A-Za-z] \d+$")  # "head 1", "layer 12", "sentence 0"
_ENTRY_PART = re.compile(r", (?=[A-Za-z_][\w ]*=)")  # between a menu entry's "name=value" parts (plotly-theme.js)


def is_label(category: Any) -> bool:
    """Whether a tick label or a category name is a label rather than data: one the figures' catalog translates
    ("words", "mean of heads"), or a word and a number ("head 1"). A token ("the", "␣cat") is neither."""
    return isinstance(category, str) and (category.strip() in catalog("zh") or bool(_NUMBERED.match(category)))


def figure_problems(figure: dict[str, Any]) -> list[str]:
    """Every label of a plotly figure (its JSON) that shows an English word: where it is and what it says."""
    problems: list[str] = []

    def check(where: str, label: Any) -> None:
        if isinstance(label, str) and not _MENU_ENTRY.match(label) and english_words(label):
            problems.append(f"{where}: {label!r} ({', '.join(english_words(label))})")

    def categories(where: str, values: Any) -> None:  # tick labels, a heatmap's rows, a marker's text
        if isinstance(values, list):
            for i, value in enumerate(values):
                if is_label(value) and english_words(value):
                    problems.append(f"{where}[{i}]: {value!r} ({', '.join(english_words(value))})")

    words = figure.get("words") or {}

    def menu(where: str, entries: list) -> None:  # what plotly-theme.js shows for "name=value" entries
        for i, entry in enumerate(entries):
            label = entry.get("label") if isinstance(entry, dict) else None
            if not isinstance(label, str) or not _MENU_ENTRY.match(label):
                continue
            for part in _ENTRY_PART.split(label):
                name, value = part.split("=", 1)
                for shown, known in ((words.get(name, name), True), (words.get(value, value), is_label(value))):
                    if known and english_words(shown):
                        problems.append(
                            f"{where}[{i}].label: {shown!r} in {label!r} ({', '.join(english_words(shown))})"
                        )

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "meta":  # the text alternative, which the page carries as the figure's aria-label
                    continue
                if key.rsplit(".", 1)[-1] in _LABEL_KEYS and isinstance(value, str):
                    check(f"{where}.{key}", value)
                elif key == "ticktext":
                    categories(f"{where}.{key}", value)
                elif key == "buttons" and isinstance(value, list):
                    menu(f"{where}.{key}", value)
                    walk(value, f"{where}.{key}")
                else:
                    walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{where}[{i}]")

    layout = figure.get("layout") or {}
    walk(layout, "layout")
    frames = figure.get("frames") or []
    traces = [(f"data[{i}]", t) for i, t in enumerate(figure.get("data") or [])]
    traces += [(f"frames[{f}].data[{i}]", t) for f, fr in enumerate(frames) for i, t in enumerate(fr.get("data") or [])]
    for f, frame in enumerate(frames):
        walk(frame.get("layout") or {}, f"frames[{f}].layout")
    legend = layout.get("showlegend", True) is not False
    for where, trace in traces:
        if not isinstance(trace, dict):
            continue
        check(f"{where}.hovertemplate", trace.get("hovertemplate"))
        for key in ("x", "y", "text"):
            categories(f"{where}.{key}", trace.get(key))
        hidden = trace.get("showlegend") is False or not legend or trace.get("hoverinfo") in ("skip", "none")
        if not hidden:
            check(f"{where}.name", trace.get("name"))
    return problems


def _zh(fig: Any) -> dict[str, Any]:
    """A figure as the Chinese site draws it: its JSON, through the label catalog."""
    return translate_figure(json.loads(fig.to_json()), "zh")


def _library_figures() -> dict[str, Any]:
    tl.seed_everything(0)
    tokens = ["the", "cat", "sat"]
    weights = torch.softmax(torch.randn(3, 3), dim=-1)
    layer = tl.DecoderLayer(32, 4, 64)
    model = tl.Transformer(tl.TransformerConfig())  # the paper's base model, as the chapters' opening diagram
    small = tl.Transformer(
        tl.TransformerConfig(
            src_vocab_size=40, tgt_vocab_size=40, d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2,
            n_decoder_layers=2, norm_first=True, max_len=32, positional="learned",
        )
    )  # fmt: skip
    return {
        "architecture (compact)": diagrams.transformer_diagram(model.config, compact=True),
        "architecture": diagrams.transformer_diagram(model.config),
        "architecture, pre-LN": diagrams.transformer_diagram(small),
        "attention heatmap": viz.attention_heatmap(weights, tokens, tokens, title="self-attention"),
        "cross-attention heatmap": viz.cross_attention_heatmap(weights, tokens, tokens),
        "heatmap": viz.heatmap(weights, list("abc"), list("xyz")),
        "positional encoding": viz.positional_encoding_heatmap(tl.sinusoidal_encoding(16, 32)),
        "scaled dot-product": ad.scaled_dot_product_diagram(tl.MultiHeadAttention(32, 2)),
        "notes' flowchart": ad.notes_flowchart(tl.MultiHeadAttention(32, 2)),
        "multi-head": ad.multi_head_diagram(tl.MultiHeadAttention(32, 4)),
        "projection": ad.projection_diagram(tl.MultiHeadAttention(32, 4), batch=2, length=5),
        "cross-attention diagram": ad.cross_attention_diagram(layer, tgt_len=3, src_len=7),
        "residual, post-LN": fd.residual_diagram(tl.EncoderLayer(32, 4, 64)),
        "residual, pre-LN": fd.residual_diagram(tl.EncoderLayer(32, 4, 64, norm_first=True)),
    }


def test_the_library_figures_show_no_english_on_the_chinese_site() -> None:
    problems = [f"{name}: {p}" for name, fig in _library_figures().items() for p in figure_problems(_zh(fig))]
    assert not problems, (
        "English on the Chinese site (add the label to locale/zh_CN/LC_MESSAGES/figures.po, or a rule to "
        "label_patterns.PATTERNS):\n" + "\n".join(problems)
    )


def test_an_english_hover_title_axis_or_legend_is_found() -> None:
    """The check itself: a planted English word in each place a reader looks is reported, a Chinese one is not."""
    fig = _zh(viz.attention_heatmap(torch.full((2, 2), 0.5), ["a", "b"], ["a", "b"], title="self-attention"))
    assert figure_problems(fig) == []
    planted = json.loads(json.dumps(fig))
    planted["data"][0]["hovertemplate"] = "query: %{customdata[0]}<br>键：%{customdata[1]}"
    planted["layout"]["title"]["text"] = "Attention weights"
    planted["layout"]["xaxis"]["title"]["text"] = "key (attended to)"
    planted["layout"]["annotations"] = [{"text": "自注意力", "hovertext": "source token IDs"}]
    planted["layout"]["sliders"] = [{"steps": [{"label": "step 1", "args": [None, {"title.text": "训练 1 步"}]}]}]
    planted["data"].append({"type": "scatter", "name": "training loss", "showlegend": True})
    found = figure_problems(planted)
    assert sorted(p.split(":")[0] for p in found) == [
        "data[0].hovertemplate",
        "data[1].name",
        "layout.annotations[0].hovertext",
        "layout.sliders[0].steps[0].label",
        "layout.title.text",
        "layout.xaxis.title.text",
    ], found


def test_an_english_tick_label_category_or_menu_word_is_found() -> None:
    """The check on what a chapter's own code writes: tick labels, a heatmap's rows and columns, a marker's text and a
    dropdown's names are reported while English, and not once translated; a token axis is data and stays."""
    english = {
        "data": [
            {"type": "heatmap", "x": ["head 1", "head 2"], "y": ["layer 1", "layer 2"], "z": [[0, 1], [1, 0]]},
            {"type": "scatter", "mode": "markers+text", "x": [1], "y": [2], "text": ["words"], "showlegend": False},
        ],
        "layout": {
            "xaxis": {"tickvals": [0, 1, 2], "ticktext": ["sentence 0", "sentence 1", "sentence 2"]},
            "yaxis": {"tickvals": [0, 1, 2], "ticktext": ["the", "␣cat", "sat"]},  # tokens: data
            "updatemenus": [
                {"buttons": [{"label": f"kind={k}, seq_len=16", "method": "update"} for k in ("rnn", "padding")]}
            ],
        },
    }
    planted = sorted(p.split(":")[0] for p in figure_problems(english))
    assert planted == [
        "data[0].x[0]",
        "data[0].x[1]",
        "data[0].y[0]",
        "data[0].y[1]",
        "data[1].text[0]",
        "layout.updatemenus[0].buttons[0].label",  # kind
        "layout.updatemenus[0].buttons[0].label",  # rnn, a value the catalog knows (RNN)
        "layout.updatemenus[0].buttons[1].label",  # kind
        "layout.updatemenus[0].buttons[1].label",  # padding
        "layout.xaxis.ticktext[0]",
        "layout.xaxis.ticktext[1]",
        "layout.xaxis.ticktext[2]",
    ], planted
    zh = translate_figure(english, "zh")
    assert figure_problems(zh) == [], figure_problems(zh)
    assert zh["layout"]["xaxis"]["ticktext"] == ["句子 0", "句子 1", "句子 2"] and zh["data"][1]["text"] == ["词"]
    assert zh["layout"]["yaxis"]["ticktext"] == ["the", "␣cat", "sat"]  # a token axis is left alone
    assert zh["words"] == {"view": "视图", "kind": "类型", "rnn": "RNN", "padding": "填充", "seq_len": "序列长度"}


def explorer_words(html: str) -> dict[str, Any]:
    """The words of appendix A's attention explorer (``pretrained.attention_explorer_html``), by language."""
    match = re.search(r"const D = ", html)
    assert match, "no attention explorer in this HTML"
    data, _ = json.JSONDecoder().raw_decode(html, match.end())
    return data.get("words") or {}  # an explorer made before it had words is English only


def explorer_problems(words: dict[str, Any]) -> list[str]:
    """The explorer's Chinese words that show an English word (its menus, their names, the hint)."""
    if "zh" not in words:
        return ["no Chinese words: the explorer is English on the Chinese page"]
    labels = [(k, v) for k, v in words["zh"].items() if isinstance(v, str)]
    labels += [(f"{k}[{i}]", x) for k, v in words["zh"].items() if isinstance(v, list) for i, x in enumerate(v)]
    return [f"{where}: {label!r}" for where, label in labels if english_words(label)]


def test_the_attention_explorer_speaks_the_pages_language() -> None:
    """Appendix A's explorer: one HTML for both builds, its words from the label catalog in both languages."""
    weights = torch.softmax(torch.randn(2, 3, 4, 4), dim=-1)
    html = attention_explorer_html(weights, ["[CLS]", "hi", "there", "[SEP]"])
    assert "hover" not in html.split("<script>", 1)[0]  # no English outside the words the script picks from
    words = explorer_words(html)
    assert words["en"]["heads"] == ["head 1", "head 2", "head 3", "mean of heads"]
    assert words["zh"]["layers"] == ["第 1 层", "第 2 层"]
    assert explorer_problems(words) == []
    words["zh"]["heads"][-1] = "mean of heads"  # planted
    assert explorer_problems(words) == ["heads[3]: 'mean of heads'"]


def _site_figures() -> list[tuple[str, dict[str, Any]]]:
    figures = []
    for page in sorted(ZH_SITE.rglob("*.html")):
        html = page.read_text(encoding="utf-8")
        # each figure's data: the JSON that site.py writes beside its script (transformer_lib/site/figures.py)
        for n, match in enumerate(re.finditer(r'<script type="application/json" [^>]*class="tl-plotly-data">', html)):
            figure = json.loads(html[match.end() : html.index("</script>", match.end())])
            figures.append((f"{page.relative_to(ZH_SITE)} figure {n + 1}", figure))
    return figures


@pytest.mark.browser
def test_the_built_chinese_site_shows_no_english_in_its_figures() -> None:
    """Every figure of every Chinese page, the chapters' own titles and axes included (run after the build)."""
    if not (ZH_SITE / "index.html").exists():
        pytest.skip(f"no built Chinese site in {ZH_SITE}: run scripts/i18n.py build first")
    figures = _site_figures()
    assert figures, f"no figure found in {ZH_SITE}"
    problems = [f"{where}: {p}" for where, fig in figures for p in figure_problems(fig)]
    assert not problems, f"{len(problems)} English labels on the Chinese site:\n" + "\n".join(problems[:60])


@pytest.mark.browser
def test_the_built_chinese_explorers_have_chinese_words() -> None:
    """Every attention explorer on the built Chinese site carries Chinese words for its menus and hint."""
    page = ZH_SITE / "book" / "appendix_pretrained.html"
    if not page.exists():
        pytest.skip(f"no built Chinese site in {ZH_SITE}: run scripts/i18n.py build first")
    html = page.read_text(encoding="utf-8")
    explorers = [html[m.start() :] for m in re.finditer(r"const D = ", html)]
    assert explorers, f"no attention explorer on {page}"
    problems = [p for part in explorers for p in explorer_problems(explorer_words(part))]
    assert not problems, "English in the explorer's Chinese words:\n" + "\n".join(problems)


def test_an_attention_weights_hover_says_weight_not_value() -> None:
    """Beside 查询 and 键, a hover's 值 reads as V: an attention heatmap's cell is its 权重 (issue 44)."""
    weights = torch.softmax(torch.randn(3, 3), dim=-1)
    attention = viz.attention_heatmap(weights, list("abc"), list("abc"))
    for fig in (attention, viz.cross_attention_heatmap(weights, list("abc"), list("xyz"))):
        hover = _zh(fig)["data"][0]["hovertemplate"]
        assert "权重：%{z:.3f}" in hover and "值" not in hover, hover
    assert "值：" in _zh(viz.heatmap(weights, list("abc"), list("xyz")))["data"][0]["hovertemplate"]


def test_a_shape_in_a_diagram_title_stays_on_one_line() -> None:
    model = tl.Transformer(tl.TransformerConfig(src_vocab_size=40, tgt_vocab_size=40, d_model=32, n_heads=4, d_ff=64,
                                                n_encoder_layers=1, n_decoder_layers=1, max_len=16))  # fmt: skip
    title = _zh(fd.kv_cache_diagram(model, torch.tensor([[4, 5, 6]])))["layout"]["title"]["text"]
    assert "(B, H, L, D)" in title and "<br>" in title and title.count("<br>") == 1, title


def test_the_notes_flowchart_keeps_the_papers_english_over_the_notes_chinese() -> None:
    texts = [a.get("text", "") for a in _zh(ad.notes_flowchart(tl.MultiHeadAttention(32, 2)))["layout"]["annotations"]]
    scale = next(t for t in texts if "缩放" in t)
    assert scale.split("<br>")[0].endswith("Scale: ÷ √16 = ÷ 4") and scale.count("缩放") == 1, scale


def test_the_tables_the_prose_reads_have_chinese_headers() -> None:
    """2.2, 2.4, 7b's family table, 8.3, 8.6, 8.7 and 8.8 are pandas tables: the Chinese site renders their HTML
    through the figures' catalog (labels.translate_table_html); their data (numbers, True, β2 = 0.999) stay."""
    import pandas as pd

    from transformer_lib.book.labels import translate_table_html

    tables = [
        pd.DataFrame([{"family": "encoder-only", "parameters": 1, "held-out exact match": 0.9,
                       "training (s, from metadata)": 3.0, "decoder passes per output": 1}]).set_index("family"),
        pd.DataFrame({"this library": {"attention weights": 4}, "T2T transformer_base_v1": {"attention weights": 0}})
        .rename_axis("dropout at"),
        pd.DataFrame([{"variant": "no warm-up", "separated": True, "vs recipe, per seed": "-0.1"}])
        .set_index("variant"),
        pd.DataFrame([{"system": "chapter 7's translator (greedy)", "BLEU (ours)": 99.87, "exact match": 0.9}]),
    ]  # fmt: skip
    for table in tables:
        html = translate_table_html(table.to_html(), "zh")
        headers = re.findall(r"<th[^>]*>([^<]*)</th>", html)
        assert headers and not [h for h in headers if english_words(h) and h not in ("BLEU", "")], headers
        numbers = re.compile(r"<td>([-\d.]+)</td>")
        assert numbers.findall(html) == numbers.findall(table.to_html())  # the data stay as they are
    assert "True" in translate_table_html(tables[2].to_html(), "zh")
    planted = "<table><tr><th>held-out accuracy</th></tr></table>"
    assert translate_table_html(planted, "zh") == planted  # a header not in the catalog stays English: the test sees it


# A table header may keep in Latin letters what a figure label may (ALLOWED), except "max" and "min" as words (the
# catalog writes 最大), and: code (anything in <code>, a dotted name such as finfo.min, a class name such as
# EncoderLayer), a subword token (p(▁grande)), a name with two capitals (NaN, PCIe, RTX 4090, TFLOP/s) and these
# names. A header that is one bare word the catalog does not know is data, as a figure's tick labels are: a token of
# chapter 4's sentence ("animal"), the sentence's variant ("tired").
_HEADER_ALLOWED = (ALLOWED - {"max", "min"}) | {"Python", "sacrebleu", "torch", "var"}  # var: a column's code name
_HEADER_CODE = re.compile(r"\b\w+(?:\.\w+)+\b|\b[A-Z][a-z\d]+(?:[A-Z][a-z\d]*)+\b|\b\w*[A-Z]\w*[A-Z]\w*|▁\w+")
_TH = re.compile(r"<th\b[^>]*>(.*?)</th>", re.S)


def header_words(header: str) -> list[str]:
    """The English words that a table header (the HTML inside its <th>) shows a reader of the Chinese site.

    >>> header_words("max |finfo.min - (-inf)|"), header_words("|finfo.min - (-inf)| 的最大值")
    (['max'], [])
    >>> header_words("加上位置编码后的 EncoderLayer"), header_words("animal"), header_words("p(▁grande)")
    ([], [], [])
    """
    import html

    text = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<code\b.*?</code>", " ", header, flags=re.S))).strip()
    if re.fullmatch(r"[A-Za-z']+", text) and translate(text, "zh") == text:
        return []  # one bare word that no label of the catalog is: a token or a name
    text = _HEADER_CODE.sub(" ", text)
    return [w for w in english_words(text) if w not in _HEADER_ALLOWED] + re.findall(r"\b(?:max|min)\b(?!\()", text)


def table_header_problems(page: str) -> list[str]:
    """Each header of each table on a built page (pandas' tables and the prose's) that shows an English word."""
    headers = [th for table in re.findall(r"<table\b.*?</table>", page, flags=re.S) for th in _TH.findall(table)]
    return [f"{' '.join(h.split())[:120]!r} ({', '.join(header_words(h))})" for h in headers if header_words(h)]


def test_an_english_table_header_is_found() -> None:
    """The check itself, on chapter 5's table as pandas writes it: a header left English is reported, code is not."""
    import pandas as pd

    from transformer_lib.book.labels import translate_table_html

    rows = ["finfo.min", "max |finfo.min - (-inf)|", "finfo.min + finfo.min", "NaN rows"]
    table = pd.DataFrame({"float16": [1.0] * len(rows)}, index=rows).to_html()
    assert table_header_problems(translate_table_html(table, "zh")) == []
    assert table_header_problems(table) == ["'max |finfo.min - (-inf)|' (max)", "'NaN rows' (rows)"]
    assert header_words("BLEU（sacrebleu）") == header_words("H100 PCIe") == header_words("训练 本书/torch") == []
    planted = table.replace("float16", "held-out accuracy")
    assert table_header_problems(translate_table_html(planted, "zh")) == ["'held-out accuracy' (held, out, accuracy)"]


@pytest.mark.browser
def test_the_built_chinese_site_shows_no_english_in_its_table_headers() -> None:
    """Every header of every table on every Chinese page, pandas' and the prose's (run after the build)."""
    if not (ZH_SITE / "index.html").exists():
        pytest.skip(f"no built Chinese site in {ZH_SITE}: run scripts/i18n.py build first")
    pages = sorted(ZH_SITE.rglob("*.html"))
    problems = [f"{p.relative_to(ZH_SITE)}: {h}" for p in pages for h in table_header_problems(p.read_text("utf-8"))]
    assert not problems, f"{len(problems)} English table headers on the Chinese site:\n" + "\n".join(problems[:60])


def test_a_chinese_axis_writes_whole_numbers_not_si_suffixes() -> None:
    """Chapter 8's schedule reads 20000 on the Chinese site, not plotly's "20k"; a log axis keeps its own format."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[0, 20000], y=[1e-4, 1e-3]))
    fig.update_layout(yaxis=dict(type="log", exponentformat="power"))
    layout = _zh(fig)["layout"]
    assert layout["xaxis"]["exponentformat"] == "none" and layout["yaxis"]["exponentformat"] == "power"
    assert "exponentformat" not in json.loads(fig.to_json())["layout"].get("xaxis", {})  # the English site's as drawn


def test_a_diagrams_screen_reader_title_is_chinese_when_its_shown_title_is() -> None:
    """The intro's diagram: its title shows in two translated lines, and its text alternative says the same."""
    from transformer_lib.site.figures import alt_text

    title = "The Transformer (base model): encoder (left), decoder (right)"
    figure = _zh(diagrams.transformer_diagram(tl.Transformer(tl.TransformerConfig()), title=title))
    alt = alt_text(figure, "zh")
    assert "Transformer（基础模型）：编码器（左），解码器（右）" in alt and "encoder" not in alt, alt


# What the pages' live controls write into a view (chapter 4's figure title and axes, chapter 3's and appendix C's
# <pre> result lines, appendix A's similarity line), as the pages' draw functions format them
LIVE_VIEW_LINES = [
    "attention of 'it' (heads averaged); the model answers: street",
    "layer 2",
    "input      [3, 1, 4, 1]",
    "expected   [1, 4, 1, 3]",
    "sinusoidal [1, 4, 1, 3] correct",
    "learned    [1, 4, 1, 2] wrong",
    "learned    error: src: positions up to 19 are needed but the positional table holds max_len=16",
    "score matrix by the formula: 1 x 8 x 256² x 4 bytes = 2.000 MiB",
    "largest tensor eager attention allocated:   2.000 MiB",
    "peak memory during the call:                6.250 MiB",
    "cosine similarity: 0.991",
    "cosine similarity: -0.012",
    "seed",
    "place",
]


@pytest.mark.parametrize("line", LIVE_VIEW_LINES)
def test_a_live_controls_view_line_is_chinese_with_its_numbers(line: str) -> None:
    from transformer_lib.book.labels import translate

    zh = translate(line, "zh")
    assert english_words(line), f"the check sees no English in {line!r}: it would pass anything"
    assert not english_words(zh), f"{line!r} shows English on the Chinese site: {zh!r}"
    assert re.findall(r"\d+(?:\.\d+)?", zh) == re.findall(r"\d+(?:\.\d+)?", line), (line, zh)

"""The figures' words in the book's two languages: one gettext catalog, applied when a page is built.

The drawing functions (:mod:`.viz`, :mod:`.diagrams`, ...) write their labels in English, the language of the code,
and are the same for both editions. When the Chinese site is built (``language = zh_CN``, see :mod:`.i18n`), the
site's figure renderer (:mod:`.site`) passes each figure through :func:`translate_figure`, which replaces every
label found in the figures' catalog, ``locale/zh_CN/LC_MESSAGES/figures.po`` (whole strings: msgid the English,
msgstr the Chinese, read by :func:`catalog`), or matched by a rule of :data:`.label_patterns.PATTERNS` (labels with a
number or a name in them) by its Chinese. Math, code names, numbers and token strings are left as they are; a label
that is not in the catalog stays English (``scripts/i18n.py labels`` lists them). Tick labels and category names
(a heatmap's rows, a marker's text) are translated only when every one of a list is a label ("head 1", "layer 2"),
so that a sentence's tokens stay data; a dropdown's "name=value" words travel beside the figure
(``figure["words"]``, :func:`menu_words`) for plotly-theme.js to show. Printed output is never touched: it is what
the code prints.

A figure's text alternative (what a screen reader says in its place) is kept as facts, not as a sentence
(``layout.meta.alt_facts``, written by :func:`.viz.describe`); :func:`alt_sentence` says them in either language,
with sentence templates that are entries of the same catalog (:func:`say`).

The Chinese terms are the glossary's (book/glossary.md, aligned with zh.d2l.ai).
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .label_patterns import PATTERNS

__all__ = [
    "QUOTE",
    "CATALOGS",
    "catalog",
    "PATTERNS",
    "translate",
    "translate_hover",
    "translate_figure",
    "translate_table_html",
    "figure_texts",
    "menu_words",
    "say",
    "alt_sentence",
    "alt_meta",
    "spaces_outside_brackets",
]

# The figures' catalog of each language but English, in the repository's locale folder beside the pages' catalogs
CATALOGS = {"zh": Path(__file__).resolve().parents[2] / "locale" / "zh_CN" / "LC_MESSAGES" / "figures.po"}


@functools.cache
def catalog(lang: str) -> Mapping[str, str]:
    """The figures' catalog of ``lang``: English label -> its translation, as :data:`CATALOGS` gives it (an empty or
    fuzzy entry is left out, so its label stays English). Read once with babel, the .po as it is (no .mo to compile).

    >>> catalog("zh")["self-attention"]
    '自注意力'
    """
    if lang not in CATALOGS:
        raise ValueError(f"lang: expected 'en' or one of {sorted(CATALOGS)}, got {lang!r}")
    from babel.messages.pofile import read_po  # the book's tool chain has it; English figures never need it

    with open(CATALOGS[lang], "rb") as f:
        messages = read_po(f)
    # the header (msgid "") and a plural entry (a tuple) are no labels
    return MappingProxyType(
        {
            m.id: m.string
            for m in messages
            if m.id and isinstance(m.id, str) and isinstance(m.string, str) and m.string and not m.fuzzy
        }
    )


# A label (or a line of one) that starts with this invisible character quotes an English term on purpose and stays
# English in every language: appendix D's flowchart shows the paper's term over the notes' Chinese one (a word joiner,
# U+2060, which a browser draws as nothing)
QUOTE = "\u2060"

# Where a plotly figure keeps words a reader sees (the keys whose string values are labels)
_TEXT_KEYS = ("text", "name", "label", "prefix", "title", "hovertext")  # not under meta: see alt_sentence
# A space-legend that the token figures append to an axis title (viz._with_space_legend)
_SPACE_LEGEND = " · ␣ = ▁, a space before the word"
# A hover template's pieces: a plotly placeholder (%{z:.3f}) or a tag (<br>, <extra>) stays as it is
_HOVER_LINE = re.compile(r"^(?P<label>[^%<>:]+?): (?P<rest>.*)$", re.S)
_EXTRA = re.compile(r"<extra>(.*?)</extra>")


def _is_label(key: str, value: Any) -> bool:
    """A string under a text key, also in the dotted form that a slider's step or a menu's entry uses to change the
    figure (``{"title.text": ...}``, ``{"xaxis.title": ...}``)."""
    return isinstance(value, str) and key.rsplit(".", 1)[-1] in _TEXT_KEYS


def translate(label: str, lang: str) -> str:
    """``label`` in ``lang`` ("en" or "zh"): the catalog's entry, a pattern's rewrite, or ``label`` unchanged.

    A label with ``<br>`` in it that is not in the catalog as a whole is translated line by line.

    >>> translate("self-attention", "zh"), translate("layer 2, head 1", "zh"), translate("N = 6 ×", "zh")
    ('自注意力', '第 2 层，第 1 个头', 'N = 6 ×')
    >>> translate("embedding<br>37000 × 512", "zh")
    '嵌入<br>37000 × 512'
    >>> translate("self-attention<br>8 heads of d_k = 64", "zh")
    '自注意力<br>8 个头，d_k = 64'
    >>> translate(QUOTE + "Scale: ÷ 8<br>缩放", "zh") == QUOTE + "Scale: ÷ 8<br>缩放"
    True
    """
    if lang == "en" or label.lstrip().startswith(QUOTE):
        return label
    labels = catalog(lang)
    if "<br>" in label and label.strip() not in labels:  # several lines: each on its own
        return "<br>".join(translate(line, lang) for line in label.split("<br>"))
    stripped = label.strip()
    if stripped.endswith(_SPACE_LEGEND) and stripped not in labels:  # "key (attended to) · ␣ = ▁, a space..."
        legend = " · " + translate(_SPACE_LEGEND.removeprefix(" · "), lang)
        return label.replace(stripped, translate(stripped[: -len(_SPACE_LEGEND)], lang) + legend)
    if stripped in labels:
        return label.replace(stripped, labels[stripped])
    for pattern, template in PATTERNS[lang]:
        if pattern.match(stripped):
            return label.replace(stripped, pattern.sub(template, stripped))
    return label


def translate_hover(template: str, lang: str) -> str:
    """A plotly hover template in ``lang``: each line (``<br>``) as a whole label, else its ``name: %{...}`` name;
    the trace name in ``<extra>...</extra>`` as a label; placeholders (``%{z:.3f}``) as they are.

    >>> translate_hover("query: %{customdata[0]}<br>key: %{customdata[1]}<br>value: %{z:.3f}<extra></extra>", "zh")
    '查询：%{customdata[0]}<br>键：%{customdata[1]}<br>值：%{z:.3f}<extra></extra>'
    >>> translate_hover("%{text}<extra>noun</extra>", "zh")
    '%{text}<extra>名词</extra>'
    """
    if lang == "en":
        return template
    template = _EXTRA.sub(lambda m: f"<extra>{translate(m.group(1), lang)}</extra>", template)

    def line(text: str) -> str:
        body, extra = (text.split("<extra>", 1) + [""])[:2]
        extra = "<extra>" + extra if extra else ""
        whole = translate(body, lang)
        if whole != body:
            return whole + extra
        named = _HOVER_LINE.match(body)
        if named and translate(named["label"], lang) != named["label"]:
            return f"{translate(named['label'], lang)}：{named['rest']}{extra}"
        return body + extra

    return "<br>".join(line(part) for part in template.split("<br>"))


def _categories(values: Any, lang: str) -> Any:
    """A list of category names (a heatmap's rows, a marker's text) in ``lang`` when every one of them is a label that
    the catalog or a rule translates ("layer 1", "head 2", "words"); otherwise as it is, since then they are data:
    the tokens of a sentence stay as the model saw them even if one of them happens to be a label ("key")."""
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        return values
    translated = [translate(v, lang) for v in values]
    return translated if all(t != v for t, v in zip(translated, values, strict=True)) else values


def _leaves(node: Any) -> set[str]:
    if isinstance(node, str):
        return {node}
    return set().union(*(_leaves(n) for n in node)) if isinstance(node, list) else set()


def _customdata(values: Any, lang: str) -> Any:
    """A heatmap's hover labels (``customdata``: each cell's row and column names) in ``lang``, by the rule of
    :func:`_categories`: only when every name in them translates, so that tokens stay as the model saw them.

    >>> _customdata([[["layer 1", "head 2"]]], "zh")
    [[['第 1 层', '头 2']]]
    >>> _customdata([[["it", "animal"]]], "zh")
    [[['it', 'animal']]]
    """
    names = _leaves(values)
    shown = {n: translate(n, lang) for n in names}
    if not names or any(shown[n] == n for n in names):
        return values

    def swap(node: Any) -> Any:
        return shown[node] if isinstance(node, str) else [swap(n) for n in node] if isinstance(node, list) else node

    return swap(values)


def _trace(trace: Any, lang: str) -> Any:
    """A trace with its name, hover template and category names in ``lang`` (its numbers and tokens as they are)."""
    if not isinstance(trace, dict):
        return trace
    out = dict(trace)
    if isinstance(trace.get("name"), str):
        out["name"] = translate(trace["name"], lang)
    if isinstance(trace.get("hovertemplate"), str):
        out["hovertemplate"] = translate_hover(trace["hovertemplate"], lang)
    for key in ("x", "y", "text"):
        if key in trace:
            out[key] = _categories(trace[key], lang)
    if "customdata" in trace:
        out["customdata"] = _customdata(trace["customdata"], lang)
    return out


def _walk_entry(key: str, value: Any, lang: str) -> Any:
    """One entry of a layout in ``lang``: a label translated, tick labels as categories, ``meta`` (the text
    alternative's facts, said by :func:`alt_sentence`) as it is, anything else walked into."""
    if _is_label(key, value):
        return translate(value, lang)
    if key == "meta":
        return value
    if key.rsplit(".", 1)[-1] == "ticktext":
        return _categories(value, lang)
    return _walk(value, lang)


def _walk(node: Any, lang: str) -> Any:
    if isinstance(node, dict):
        return {key: _walk_entry(key, value, lang) for key, value in node.items()}
    if isinstance(node, list):
        return [_walk(item, lang) for item in node]
    return node


_AXIS = re.compile(r"^[xy]axis\d*$")


def _without_si_suffixes(layout: Any) -> Any:
    """A layout whose axes write whole numbers (20000, not plotly's default "20k"): an SI suffix is an English
    abbreviation to a Chinese reader. An axis that chose its own format (``exponentformat="power"`` on a log axis)
    keeps it.

    >>> _without_si_suffixes({"xaxis": {"title": "步"}, "yaxis2": {"exponentformat": "power"}})["yaxis2"]
    {'exponentformat': 'power'}
    >>> _without_si_suffixes({"xaxis": {"title": "步"}})
    {'xaxis': {'exponentformat': 'none', 'title': '步'}, 'yaxis': {'exponentformat': 'none'}}
    """
    if not isinstance(layout, dict):
        return layout
    axes: dict[str, Any] = {"xaxis": {}, "yaxis": {}}  # the first axes may be left to plotly's defaults
    axes.update({key: value for key, value in layout.items() if _AXIS.match(key) and isinstance(value, dict)})
    return {**layout, **{key: {"exponentformat": "none", **axis} for key, axis in axes.items()}}


def translate_figure(figure: dict[str, Any], lang: str) -> dict[str, Any]:
    """A copy of a plotly figure (its JSON as a dict) with its layout's labels and its traces' names in ``lang``.

    Data (numbers, tick values, token strings in ``x``/``y``) are left alone; so is ``figure`` itself. A list of
    category names or tick labels is translated when every one of them is a label (``_categories``)."""
    if lang == "en":
        return figure
    translate("", lang)  # a clear error for an unknown language
    out = copy.copy(figure)
    if "layout" in figure:
        out["layout"] = _without_si_suffixes(_walk(figure["layout"], lang))
    if "data" in figure:
        out["data"] = [_trace(trace, lang) for trace in figure["data"]]
    words = menu_words(figure, lang)
    if words:  # the words plotly-theme.js shows for a dropdown's "name=value" entries (the entries stay as they are)
        out["words"] = words
    if figure.get("frames"):  # an animation's frames carry their own traces and titles
        out["frames"] = [
            {
                **frame,
                **({"data": [_trace(t, lang) for t in frame["data"]]} if isinstance(frame.get("data"), list) else {}),
                **({"layout": _walk(frame["layout"], lang)} if isinstance(frame.get("layout"), dict) else {}),
            }
            if isinstance(frame, dict)
            else frame
            for frame in figure["frames"]
        ]
    return out


# A table cell of pandas' HTML (a DataFrame's or a Styler's): its tag, attributes and text
_TABLE_CELL = re.compile(r"(<t[hd]\b[^>]*>)([^<]*)(</t[hd]>)")


def translate_table_html(page: str, lang: str) -> str:
    """A pandas table's HTML (``DataFrame._repr_html_``, a Styler's) with every header, index entry and value cell that
    is a label of the figures' catalog (or matched by a rule) in ``lang``; numbers, tokens and other data stay. The
    site renders a notebook's table output through it, as it renders figures through :func:`translate_figure`.

    >>> translate_table_html('<table><tr><th>family</th><td>encoder-only</td><td>0.93</td></tr></table>', "zh")
    '<table><tr><th>家族</th><td>纯编码器</td><td>0.93</td></tr></table>'
    """
    if lang == "en" or "<table" not in page:
        return page
    import html as html_module

    def cell(m: re.Match) -> str:
        text = html_module.unescape(m.group(2)).strip()
        if not text or not re.search(r"[A-Za-z]{2}", text):
            return m.group(0)
        chinese = translate(text, lang)
        return m.group(0) if chinese == text else m.group(1) + html_module.escape(chinese, quote=False) + m.group(3)

    return _TABLE_CELL.sub(cell, page)


# A dropdown entry "kind=lstm, seq_len=16": its names and values (plotly-theme.js reads entries the same way)
_ENTRY_SPLIT = re.compile(r", (?=[A-Za-z_][\w ]*=)")


def menu_words(figure: dict[str, Any], lang: str) -> dict[str, str]:
    """The words a figure's dropdown menus show, in ``lang``: each name and value of their "name=value" entries, and
    "view" (the name of a menu whose entries are plain labels), that the catalog translates.

    plotly-theme.js turns a dropdown into HTML ``<select>`` menus; an entry's label is how a choice finds its plotly
    button, so it stays as the code wrote it, and the site shows these words in its place (``figure["words"]``).

    >>> menu_words({"layout": {"updatemenus": [{"buttons": [{"label": "layer=1, head=2"}]}]}}, "zh")
    {'view': '视图', 'layer': '层', 'head': '头'}
    """
    menus = (figure.get("layout") or {}).get("updatemenus") or []
    if lang == "en" or not menus:
        return {}
    found = ["view"]
    for menu in menus:
        for button in menu.get("buttons") or [] if isinstance(menu, dict) else []:
            label = button.get("label") if isinstance(button, dict) else None
            if isinstance(label, str) and "=" in label:
                for part in _ENTRY_SPLIT.split(label):
                    found += part.split("=", 1)
    return {w: translate(w, lang) for w in dict.fromkeys(w.strip() for w in found) if translate(w, lang) != w}


def figure_texts(figure: dict[str, Any]) -> list[str]:
    """The labels of a figure that :func:`translate_figure` looks at (for tests and for finding missing entries)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if _is_label(key, value):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(figure.get("layout", {}))
    traces = list(figure.get("data", []))
    for frame in figure.get("frames") or []:
        walk(frame.get("layout", {}))
        traces += frame.get("data") or []
    found += [t["name"] for t in traces if isinstance(t.get("name"), str)]
    found += [t["hovertemplate"] for t in traces if isinstance(t.get("hovertemplate"), str)]
    return found


def _plain(text: Any) -> str:
    """A label as words: its line breaks as spaces, no tags."""
    return " ".join(re.sub(r"<[^>]+>", " ", str(text)).split())


def spaces_outside_brackets(text: str) -> list[int]:
    """The indices of the spaces of ``text`` that no bracket encloses: where a long title may break (a diagram's
    title is broken at the one nearest its middle, and its text alternative is translated the same way).

    >>> spaces_outside_brackets("KV cache: K, V (B, H, L, D) per layer")
    [2, 9, 12, 14, 27, 31]
    """
    depth, spaces = 0, []
    for i, c in enumerate(text):
        depth += (c in "([{") - (c in ")]}")
        if c == " " and depth == 0:
            spaces.append(i)
    return spaces


def say(template: str, lang: str, **values: Any) -> str:
    """A sentence of the site's own (a text alternative, a message in a figure's place) in ``lang``: ``template``, an
    English sentence with ``{named}`` places, is a msgid of the figures' catalog, whose msgstr puts the same places in
    the Chinese order; the values fill them. A template the catalog lacks is said in English.

    >>> say("{rows} rows", "zh", rows=3), say("{rows} rows", "en", rows=3)
    ('3 行', '3 rows')
    """
    if lang != "en":
        template = catalog(lang).get(template, template)
    return template.format(**values)


def alt_sentence(facts: dict[str, Any], lang: str) -> str:
    """A figure's text alternative in ``lang``, from the facts its drawing function recorded (``kind`` is "heatmap",
    "lines", "training" or "diagram"; titles, axis titles, names and parts are labels, translated like the figure's
    own; a range is ``[low, high]`` or None when there is no finite value). Its sentences are templates of the
    figures' catalog (:func:`say`), so the Chinese one is a translator's, not the code's.

    >>> facts = {"kind": "heatmap", "title": "self-attention", "rows": 2, "row_title": "query", "cols": 3,
    ...          "col_title": "key", "range": [0.0, 1.0]}
    >>> alt_sentence(facts, "en")
    'Heat map: self-attention. 2 rows (query) by 3 columns (key), values from 0 to 1.'
    >>> alt_sentence(facts, "zh")
    '热图：自注意力。2 行（查询） × 3 列（键），取值从 0 到 1。'
    """
    kind = facts.get("kind")
    translate("", lang)  # a clear error for an unknown language

    def word(label: Any) -> str:
        return _plain(translate(str(label), lang)) if label else ""

    def span(values: Any) -> str:
        if values is None:
            return say("with no finite value", lang)
        low, high = (f"{float(v):.3g}" for v in values)
        return say("from {low} to {high}", lang, low=low, high=high)

    def listed(items: list[str], more: int, parts: bool) -> str:  # a line plot's "a; b and 2 more", a diagram's "a, b"
        text = say(", " if parts else "; ", lang).join(items)
        if not more:
            return text
        return say("{items}, and {more} more" if parts else "{items} and {more} more", lang, items=text, more=more)

    head = {"heatmap": "Heat map", "lines": "Line plot", "training": "Training curves", "diagram": "Diagram"}
    if kind not in head:
        raise ValueError(f"facts: expected a kind among {sorted(head)}, got {kind!r}")
    title = word(facts.get("title"))
    if facts.get("title") and lang != "en" and title == _plain(str(facts["title"])):  # a title the figure shows broken
        text = str(facts["title"])
        spaces = spaces_outside_brackets(text)
        if spaces:
            cut = min(spaces, key=lambda i: abs(i - len(text) / 2))
            title = re.sub(
                r"(?<=[\u4e00-\u9fff\uff00-\uffef]) (?=[\u4e00-\u9fff\uff00-\uffef])",
                "",
                word(text[:cut] + "<br>" + text[cut + 1 :]),
            )
    named = say(head[kind], lang)
    named = say("{kind}: {title}", lang, kind=named, title=title) if title else named
    more = int(facts.get("more") or 0)
    if kind == "heatmap":
        rows, cols = word(facts.get("row_title")), word(facts.get("col_title"))
        r, c = say("{rows} rows", lang, rows=facts["rows"]), say("{cols} columns", lang, cols=facts["cols"])
        r = say("{count} ({title})", lang, count=r, title=rows) if rows else r
        c = say("{count} ({title})", lang, count=c, title=cols) if cols else c
        return say("{named}. {rows} by {cols}, values {span}.", lang, named=named, rows=r, cols=c,
                   span=span(facts.get("range")))  # fmt: skip
    series = [
        say("{name} {span}", lang, name=word(name), span=span(values)) for name, values in facts.get("series") or []
    ]
    if kind == "lines":
        axes = say(
            "{y} against {x} ({span}, log scale)" if facts.get("log_x") else "{y} against {x} ({span})",
            lang,
            y=word(facts.get("y_title")) or say("value", lang),
            x=word(facts.get("x_title")) or "x",
            span=span(facts.get("x_range")),
        )
        return say("{named}. {axes}: {lines}.", lang, named=named, axes=axes, lines=listed(series, more, False))
    if kind == "training":
        unit = word(facts.get("x_title"))
        return say("{named}, over {length} {unit}s. {curves}.", lang, named=named, length=facts["length"], unit=unit,
                   curves=listed(series, 0, False))  # fmt: skip
    # a part is named by the first line of its label, translated as a whole (the catalog holds whole labels)
    # (a quoted label keeps the paper's English on its first line, over the page language's term on its last: a
    # reader of that language hears the last)
    parts = list(dict.fromkeys(_plain(_part_name(translate(str(p), lang), lang)) for p in facts.get("parts") or []))
    parts = [p for p in parts if p]
    if not parts:
        return say("{named}.", lang, named=named)
    return say("{named}. Parts: {parts}.", lang, named=named, parts=listed(parts, more, True))


def alt_meta(facts: dict[str, Any]) -> dict[str, Any]:
    """The ``layout.meta`` entries that give a figure its text alternative: the facts, and their English sentence."""
    return {"alt": alt_sentence(facts, "en"), "alt_facts": facts}


def _part_name(label: str, lang: str) -> str:
    """The line of a diagram part's label that names it in ``lang``: the first, or for a quoted label
    (:data:`QUOTE`, the paper's English over this language's term) on a page not in English, the last.

    >>> _part_name(QUOTE + "Scale: ÷ 8<br>缩放", "zh"), _part_name("embedding<br>37000 × 512", "zh")
    ('缩放', 'embedding')
    """
    lines = label.replace(QUOTE, "").split("<br>")  # the mark is for the catalog, not for a listener
    return lines[-1] if lang != "en" and label.lstrip().startswith(QUOTE) else lines[0]

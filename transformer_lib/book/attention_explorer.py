"""Appendix A's attention explorer: a self-contained HTML view of every head of a model's attention (choose a
layer and a head, hover a token to see where it looks), which works on the website with no kernel and no network.
Its words come from the label catalog in the page's language. (Split from :mod:`transformer_lib.book.pretrained`,
which re-exports :func:`attention_explorer_html`.)

Shape legend: ``L`` layers, ``H`` heads, ``T`` tokens.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import torch
from torch import Tensor

from ..validation import check_tensor
from .labels import translate

_EXPLORER_JS = """
(function () {
  const root = document.getElementById("%(id)s");
  const D = %(data)s;  // D.w[layer][head][query][key] in thousandths
  const W = D.words[document.documentElement.lang === "zh-CN" ? "zh" : "en"];  // the page's language
  const nLayers = D.w.length, nHeads = D.w[0].length, T = D.tokens.length;
  function menu(slot, n, label, name) {
    const s = document.createElement("select");
    s.setAttribute("aria-label", name);  // what the menu picks, for a screen reader
    for (let i = 0; i < n; i++) s.add(new Option(label(i), i));
    root.querySelector(slot).appendChild(s);
    return s;
  }
  const layerMenu = menu(".layer", nLayers, i => W.layers[i], W.layer);
  const headMenu = menu(".head", nHeads + 1, i => W.heads[i], W.head);  // the last: the mean of the heads
  root.querySelector(".hint").textContent = W.hint;
  function column(slot) {
    return D.tokens.map(t => {
      const d = document.createElement("div");
      d.textContent = t;  // text, never HTML
      root.querySelector(slot).appendChild(d);
      return d;
    });
  }
  const queries = column(".q"), keys = column(".k"), svg = root.querySelector("svg");
  function weights() {  // the (T, T) map of the chosen head, or the mean of the layer's heads
    const layer = D.w[+layerMenu.value], h = +headMenu.value;
    if (h < nHeads) return layer[h].map(row => row.map(v => v / 1000));
    return D.tokens.map((_, i) => D.tokens.map((_, j) => layer.reduce((s, m) => s + m[i][j], 0) / nHeads / 1000));
  }
  let focus = null;  // the hovered query, or null for all of them
  function draw() {
    const w = weights(), y = i => 11 + 22 * i;
    let lines = "";
    for (let i = 0; i < T; i++) {
      if (focus !== null && i !== focus) continue;
      for (let j = 0; j < T; j++) {
        const a = w[i][j];
        if (a >= 0.01) lines += `<line x1="0" y1="${y(i)}" x2="120" y2="${y(j)}" stroke="#2f6db5" ` +
                                `stroke-width="${1 + 3 * a}" opacity="${a}"/>`;
      }
    }
    svg.innerHTML = lines;
    queries.forEach((d, i) => { d.style.background = focus === i ? "#ffd27f" : ""; });
    keys.forEach((d, j) => {
      d.style.background = focus === null ? "" : `rgba(47,109,181,${w[focus][j]})`;
      d.title = focus === null ? "" : `${D.tokens[focus]} -> ${D.tokens[j]}: ${w[focus][j].toFixed(3)}`;
    });
  }
  queries.forEach((d, i) => {
    d.onmouseenter = () => { focus = i; draw(); };
    d.onmouseleave = () => { focus = null; draw(); };
  });
  layerMenu.onchange = headMenu.onchange = draw;
  layerMenu.value = D.layer;
  headMenu.value = D.head;
  draw();
})();
"""


def _explorer_words(n_layers: int, n_heads: int) -> dict[str, dict[str, str | list[str]]]:
    """The explorer's words in both languages, from the label catalog; its script shows those of the page's
    language (the Chinese site's ``<html lang="zh-CN">``), since a notebook's output is the same in both builds."""
    english: dict[str, str | list[str]] = {
        "layer": "layer",
        "head": "head",
        "hint": "hover a token on the left",
        "layers": [f"layer {i + 1}" for i in range(n_layers)],
        "heads": [f"head {h + 1}" for h in range(n_heads)] + ["mean of heads"],
    }
    return {
        lang: {
            k: translate(v, lang) if isinstance(v, str) else [translate(x, lang) for x in v] for k, v in english.items()
        }
        for lang in ("en", "zh")
    }


def attention_explorer_html(weights: Tensor, tokens: Sequence[str], layer: int = 0, head: int = 0) -> str:
    """A self-contained HTML view of every head (no external script): choose a layer and a head, hover a token
    on the left (the query) to see where it attends on the right (the keys); thicker, darker = more weight.

    Weights are stored as integers in thousandths to keep the page small. Works in Jupyter and on a static page.

    Shape:
        weights: (L, H, T, T), tokens: T strings
    """
    check_tensor("weights", weights, ndim=4, dtype="float")
    n_layers, n_heads, T, T2 = weights.shape
    if T != T2 or len(tokens) != T:
        raise ValueError(
            f"weights, tokens: expected (L, H, T, T) weights and T tokens, got "
            f"{tuple(weights.shape)} and {len(tokens)} tokens"
        )
    if not (0 <= layer < n_layers and 0 <= head <= n_heads):
        raise ValueError(
            f"layer, head: expected 0 <= layer < {n_layers} and 0 <= head <= {n_heads} "
            f"(head {n_heads} = mean of heads), got {layer}, {head}"
        )
    data = json.dumps(
        {
            "w": (weights.detach().float() * 1000).round().to("cpu", torch.int32).tolist(),
            "tokens": list(tokens),
            "layer": layer,
            "head": head,
            "words": _explorer_words(n_layers, n_heads),
        },
        separators=(",", ":"),
    )
    data = data.replace("<", "\\u003c")  # a token can never close the <script> it travels in
    uid = "attn-" + hashlib.sha1(data.encode()).hexdigest()[:10]  # deterministic, so re-runs give the same page
    height = 22 * T + 8
    style = "font:13px/22px monospace;display:flex;gap:0;align-items:flex-start;user-select:none"
    col = "display:flex;flex-direction:column;min-width:90px;padding:0 6px;"
    return (
        f'<div id="{uid}"><div style="margin-bottom:6px"><span class="layer"></span> <span class="head"></span>'
        f' <small class="hint"></small></div><div style="{style}">'
        f'<div class="q" style="{col}text-align:right;cursor:pointer"></div>'
        f'<svg width="120" height="{height}" style="flex:none"></svg>'
        f'<div class="k" style="{col}"></div></div>'
        f"<script>{_EXPLORER_JS % {'id': uid, 'data': data}}</script></div>"
    )

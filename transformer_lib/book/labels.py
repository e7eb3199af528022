"""The figures' words in the book's two languages: one label catalog, applied when a page is built.

The drawing functions (:mod:`.viz`, :mod:`.diagrams`, ...) write their labels in English, the language of the code,
and are the same for both editions. When the Chinese site is built (``language = zh_CN``, see :mod:`.i18n`), the
site's figure renderer (:mod:`.site`) passes each figure through :func:`translate_figure`, which replaces every
label found in :data:`LABELS` (whole strings) or :data:`PATTERNS` (labels with a number or a name in them) by its
Chinese. Math, code names, numbers and token strings are left as they are; a label that is not in the catalog
stays English. Printed output is never touched: it is what the code prints.

The Chinese terms are the glossary's (book/glossary.md, aligned with zh.d2l.ai).
"""

from __future__ import annotations

import copy
import re
from typing import Any

__all__ = ["LABELS", "PATTERNS", "translate", "translate_figure", "figure_texts"]

# English label -> Chinese label (whole strings, as the drawing functions write them)
LABELS: dict[str, dict[str, str]] = {
    "zh": {
        "Add & Norm": "相加 & 归一化",
        "embedding": "嵌入",
        "+ positional encoding": "+ 位置编码",
        "positional encoding": "位置编码",
        "feed-forward": "前馈层",
        "feed forward": "前馈层",
        "self-attention": "自注意力",
        "masked self-attention": "掩码自注意力",
        "cross-attention": "交叉注意力",
        "attention": "注意力",
        "source token IDs": "源词元索引",
        "target token IDs": "目标词元索引",
        "linear": "线性层",
        "output layer": "输出层",
        "unscaled": "未缩放",
        "query": "查询",
        "key": "键",
        "value": "值",
        "query (attending)": "查询（施加注意力的一方）",
        "key (attended to)": "键（被注意的一方）",
        "step": "步",
        "dimension": "维度",
        "position": "位置",
        "padding": "填充",
        "causal": "因果",
        "combined": "组合",
        "mask": "掩码",
        "scale": "缩放",
        "split": "拆分",
        "concat": "拼接",
        "heads": "头",
        "projections": "投影",
        "cross-entropy": "交叉熵",
        "determiner": "限定词",
        "adjective": "形容词",
        "noun": "名词",
        "verb": "动词",
        "other": "其他",
        "dropout 0.1": "暂退 0.1",
        "grey: a single character · ␣ = ▁, a space before the word": "灰色：单个字符 · ␣ = ▁，词前的空格",
        "␣ = ▁, a space before the word": "␣ = ▁，词前的空格",
        "loss": "损失",
        "training loss": "训练损失",
        "validation loss": "验证损失",
        "encoder": "编码器",
        "decoder": "解码器",
        "input": "输入",
        "output": "输出",
        "weight": "权重",
        "attention weight": "注意力权重",
        "sequence length": "序列长度",
        "layer": "层",
        # the diagrams' lines (a label with <br> is translated line by line, see translate)
        "(sinusoidal)": "（正弦）",
        "(shifted right)": "（右移一位）",
        "(tied to the target embedding)": "（与目标嵌入共享权重）",
        "next-token probabilities": "下一个词元的概率",
        "+1 position": "+1 个位置",
        "K, V from M": "K、V 来自 M",
        "KV cache: K, V (B,": "KV 缓存：K、V (B,",
        "H, L, D) per layer": "H, L, D)，每层一份",
        "Mask (optional)": "掩码（可选）",
        "MatMul: Q Kᵀ": "矩阵乘法：Q Kᵀ",
        "SoftMax (rows sum to 1)": "SoftMax（每行之和为 1）",
        "The Transformer, drawn": "Transformer，",
        "from the model object": "由模型对象绘制",
        "decoder states Y": "解码器状态 Y",
        "encoder memory M": "编码器记忆 M",
        "orange: this step's k, v; blue: kept": "橙色：本步的 k、v；蓝色：保留的",
        "qkv_proj: one Linear": "qkv_proj：一个 Linear",
        "to the next layer": "到下一层",
    }
}

# Labels with a number or a name in them: (English pattern, Chinese template with the same groups)
PATTERNS: dict[str, list[tuple[re.Pattern[str], str]]] = {
    "zh": [
        (re.compile(r"^layer (\d+), head (\d+)$"), r"第 \1 层，第 \2 个头"),
        (re.compile(r"^layer (\d+)$"), r"第 \1 层"),
        (re.compile(r"^head (\d+)$"), r"头 \1"),
        (re.compile(r"^(\d+) heads<br>(.*)$"), r"\1 个头<br>\2"),
        (re.compile(r"^linear (\d+) → (\d+)$"), r"线性层 \1 → \2"),
        (re.compile(r"^unscaled: max ([\d.]+), entropy ([\d.]+)$"), r"未缩放：最大值 \1，熵 \2"),
        (re.compile(r"^(.*) · ␣ = ▁, a space before the word$"), r"\1 · ␣ = ▁，词前的空格"),
        (re.compile(r"^(\d+) heads$"), r"\1 个头"),
        (re.compile(r"^(\d+) heads of d_k = (\d+)$"), r"\1 个头，d_k = \2"),
        (re.compile(r"^(\d+) heads, K, V from encoder$"), r"\1 个头，K、V 来自编码器"),
        (re.compile(r"^step (\d+)$"), r"第 \1 步"),
        (re.compile(r"^Linear (W<sup>[QKVO]</sup>)$"), r"线性层 \1"),
        (re.compile(r"^\((.*)\) each$"), r"各为 (\1)"),
        (re.compile(r"^Concat: (.*)$"), r"拼接：\1"),
        (re.compile(r"^Cross-attention: (.*)$"), r"交叉注意力：\1"),
        (re.compile(r"^MatMul with V → (.*)$"), r"与 V 做矩阵乘法 → \1"),
        (re.compile(r"^Multi-head attention, h = (\d+)$"), r"多头注意力，h = \1"),
        (re.compile(r"^One head, d_k = (\d+)$"), r"单个头，d_k = \1"),
        (re.compile(r"^Post-LN: (.*)$"), r"Post-LN（后置归一化）：\1"),
        (re.compile(r"^Pre-LN: (.*)$"), r"Pre-LN（前置归一化）：\1"),
        (re.compile(r"^Q, K, V: (\d+) heads of (\d+)$"), r"Q、K、V：\1 个头，每个 \2 维"),
        (re.compile(r"^Scale: (.*)$"), r"缩放：\1"),
        (re.compile(r"^The notes' flowchart \((\d+)\)$"), r"笔记中的流程图（\1）"),
        (
            re.compile(r"^h = (\d+) heads of scaled dot-product attention, d_k = (\d+)$"),
            r"h = \1 个缩放点积注意力头，d_k = \2",
        ),
        (
            re.compile(r"^cross K, V \((.*)\) per layer: made at step (\d+), reused$"),
            r"交叉注意力的 K、V (\1)，每层一份：第 \2 步生成，之后复用",
        ),
        (re.compile(r"^output, (W<sup>O</sup>)$"), r"输出，\1"),
        (re.compile(r"^(\(.*\)): T rows$"), r"\1：T 行"),
        (re.compile(r"^weight (\(.*)$"), r"权重 \1"),
        (re.compile(r"^weights (softmax.*)$"), r"权重 \1"),
        (re.compile(r"^split: (.*)$"), r"拆分：\1"),
        (re.compile(r"^(\(.*\)): chunk into three$"), r"\1：切成三份"),
    ]
}

# Where a plotly figure keeps words a reader sees (the keys whose string values are labels)
_TEXT_KEYS = ("text", "name", "label", "prefix")  # not meta.alt: a generated sentence, English for now


def translate(label: str, lang: str) -> str:
    """``label`` in ``lang`` ("en" or "zh"): the catalog's entry, a pattern's rewrite, or ``label`` unchanged.

    A label with ``<br>`` in it that is not in the catalog as a whole is translated line by line.

    >>> translate("self-attention", "zh"), translate("layer 2, head 1", "zh"), translate("N = 6 ×", "zh")
    ('自注意力', '第 2 层，第 1 个头', 'N = 6 ×')
    >>> translate("embedding<br>37000 × 512", "zh")
    '嵌入<br>37000 × 512'
    >>> translate("self-attention<br>8 heads of d_k = 64", "zh")
    '自注意力<br>8 个头，d_k = 64'
    """
    if lang == "en":
        return label
    if lang not in LABELS:
        raise ValueError(f"lang: expected 'en' or one of {sorted(LABELS)}, got {lang!r}")
    if "<br>" in label and label.strip() not in LABELS[lang]:  # several lines: each on its own
        return "<br>".join(translate(line, lang) for line in label.split("<br>"))
    stripped = label.strip()
    if stripped in LABELS[lang]:
        return label.replace(stripped, LABELS[lang][stripped])
    for pattern, template in PATTERNS[lang]:
        if pattern.match(stripped):
            return label.replace(stripped, pattern.sub(template, stripped))
    return label


def _walk(node: Any, lang: str) -> Any:
    if isinstance(node, dict):
        return {
            key: translate(value, lang) if key in _TEXT_KEYS and isinstance(value, str) else _walk(value, lang)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_walk(item, lang) for item in node]
    return node


def translate_figure(figure: dict[str, Any], lang: str) -> dict[str, Any]:
    """A copy of a plotly figure (its JSON as a dict) with its layout's labels and its traces' names in ``lang``.

    Data (coordinates, tick values, token strings in ``x``/``y``) are left alone; so is ``figure`` itself."""
    if lang == "en":
        return figure
    translate("", lang)  # a clear error for an unknown language
    out = copy.copy(figure)
    if "layout" in figure:
        out["layout"] = _walk(figure["layout"], lang)
    if "data" in figure:
        out["data"] = [
            {**trace, "name": translate(trace["name"], lang)} if isinstance(trace.get("name"), str) else trace
            for trace in figure["data"]
        ]
    return out


def figure_texts(figure: dict[str, Any]) -> list[str]:
    """The labels of a figure that :func:`translate_figure` looks at (for tests and for finding missing entries)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in _TEXT_KEYS and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(figure.get("layout", {}))
    found += [t["name"] for t in figure.get("data", []) if isinstance(t.get("name"), str)]
    return found

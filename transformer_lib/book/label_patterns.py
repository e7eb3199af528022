r"""The Chinese of the figures' labels that carry a number or a name: rules, kept in code beside the catalog.

A label such as "layer 2, head 1" or "T = 0.7, top-k = 40, top-p = 0.9: 12 of 300 tokens can be drawn" is written
with values that change from figure to figure, so it cannot be a plain entry of the figures' gettext catalog
(``locale/zh_CN/LC_MESSAGES/figures.po``, where a msgid is a whole, literal string matched exactly; gettext has no
lookup by pattern). Each rule here is a regular expression over the English whose groups have types (``\d+`` for a
count, ``\S+`` for a value, ``.*`` for a shape or a quoted token) and a Chinese template that puts the same groups
back, often in another order; the rules are tried in order, a specific one before the general one it would also
match. :func:`.labels.translate` uses them for a label that the catalog does not hold as a whole.
"""

from __future__ import annotations

import re

__all__ = ["PATTERNS"]

# Labels with a number or a name in them: (English pattern, Chinese template with the same groups)
PATTERNS: dict[str, list[tuple[re.Pattern[str], str]]] = {
    "zh": [
        # the chapters' figures (before the general patterns below: some are more specific cases of them)
        (
            re.compile(r"^Gradient against distance, untrained layers, T = (\d+)$"),
            r"梯度随距离的变化，未训练的层，T = \1",
        ),
        (re.compile(r"^Plain RNN with spectral radius ρ = (\S+)$"), r"谱半径 ρ = \1 的普通 RNN"),
        (re.compile(r"^RNN, ρ = (\S+)$"), r"RNN，ρ = \1"),
        (re.compile(r"^self-attention, T = (\d+): far/near ratio (\S+)$"), r"自注意力，T = \1：远/近梯度比 \2"),
        (re.compile(r"^(\w+), T = (\d+): far/near ratio (\S+)$"), r"\1，T = \2：远/近梯度比 \3"),
        (re.compile(r"^Recall after (\d+) training steps$"), r"训练 \1 步后的回忆准确率"),
        (re.compile(r"^Forward pass, batch (\d+), d_model (\d+), on (.+)$"), r"前向计算，批量 \1，d_model \2，设备 \3"),
        (
            re.compile(r"^(\d+) merges: vocabulary (\d+), (\d+) tokens for (\d+) characters$"),
            r"\1 次合并：词表 \2，\4 个字符切成 \3 个词元",
        ),
        (re.compile(r"^(\d+) tokens, vocabulary (\d+), (\d+) unknown$"), r"\1 个词元，词表 \2，未知词元 \3 个"),
        (re.compile(r"^(\d+) positions$"), r"\1 个位置"),
        (re.compile(r"^position (\w+)$"), r"位置 \1"),
        (re.compile(r"^distance (\w+)$"), r"距离 \1"),
        (re.compile(r"^dimension (\d+) \(i=(\d+)\)$"), r"维度 \1（i=\2）"),
        (re.compile(r"^M_k for k=(\d+), d_model=(\d+): block-diagonal$"), r"M_k（k=\1，d_model=\2）：分块对角"),
        (re.compile(r"^PE\(p\) · PE\(q\) for d_model=(\d+)$"), r"PE(p) · PE(q)，d_model=\1"),
        (
            re.compile(r"^Learned source position table \(rows (\d+)-(\d+) never trained\)$"),
            r"学习得到的源端位置表（第 \1-\2 行从未训练）",
        ),
        (re.compile(r"^softmax weights of one query over (\d+) keys$"), r"一个查询在 \1 个键上的 softmax 权重"),
        (
            re.compile(r"^attention of 'it' \(heads averaged\); the model answers: (.*)$"),
            r"“it”的注意力（各头平均）；模型的回答：\1",
        ),
        (re.compile(r"^÷√d_k: max ([\d.]+), entropy ([\d.]+)$"), r"÷√d_k：最大值 \1，熵 \2"),
        (re.compile(r"^('.*'): layer (\d+), head (\d+)$"), r"\1：第 \2 层，第 \3 个头"),
        (re.compile(r"^padding mask: (.*)$"), r"填充掩码：\1"),
        (re.compile(r"^causal mask: (.*)$"), r"因果掩码：\1"),
        (re.compile(r"^combined mask: (.*)$"), r"组合掩码：\1"),
        (
            re.compile(r"^head (\d+), padding mask: largest weight on a blocked key (\S+), row sums (.*)$"),
            r"头 \1，填充掩码：被掩蔽的键上的最大权重 \2，各行之和 \3",
        ),
        (
            re.compile(r"^head (\d+), causal mask: largest weight on a blocked key (\S+), row sums (.*)$"),
            r"头 \1，因果掩码：被掩蔽的键上的最大权重 \2，各行之和 \3",
        ),
        (
            re.compile(r"^head (\d+), combined mask: largest weight on a blocked key (\S+), row sums (.*)$"),
            r"头 \1，组合掩码：被掩蔽的键上的最大权重 \2，各行之和 \3",
        ),
        (re.compile(r"^Encoder self-attention: layer (\d+), head (\d+)$"), r"编码器自注意力：第 \1 层，第 \2 个头"),
        (re.compile(r"^layer (\d+), head (\d+): (.*)$"), r"第 \1 层，第 \2 个头：\3"),
        (
            re.compile(r"^post-LN, (\d+) layers: top 3 / bottom 3 = (\S+)$"),
            r"后置规范化，\1 层：顶部 3 层 / 底部 3 层 = \2",
        ),
        (
            re.compile(r"^pre-LN, (\d+) layers: top 3 / bottom 3 = (\S+)$"),
            r"前置规范化，\1 层：顶部 3 层 / 底部 3 层 = \2",
        ),
        (re.compile(r"^Cross-attention: layer (\d+), head (\d+)$"), r"交叉注意力：第 \1 层，第 \2 个头"),
        (re.compile(r"^Next-token candidates for: (.*)$"), r"下一个词元的候选：\1"),
        (re.compile(r"^step (\d+), read so far: (.*)$"), r"第 \1 步，已读入：\2"),
        (
            re.compile(r"^Next token after '(.*)': the (\d+) most likely tokens$"),
            r"“\1”之后的下一个词元：概率最高的 \2 个词元",
        ),
        (
            re.compile(r"^T = (\S+), top-k = off, top-p = (\S+): (\d+) of (\d+) tokens can be drawn$"),
            r"T = \1，top-k = 关闭，top-p = \2：\4 个词元中有 \3 个可以被抽到",
        ),
        (
            re.compile(r"^T = (\S+), top-k = (\d+), top-p = (\S+): (\d+) of (\d+) tokens can be drawn$"),
            r"T = \1，top-k = \2，top-p = \3：\5 个词元中有 \4 个可以被抽到",
        ),
        (
            re.compile(
                r"^Target distribution for '(.*)' \((\d+) of the (\d+) tokens shown; each other token gets ε / V\)$"
            ),
            r"“\1”的目标分布（显示 \3 个词元中的 \2 个；其余每个词元得到 ε / V）",
        ),
        (re.compile(r"^ε = (\S+)$"), r"ε = \1"),
        # the result lines of chapter 3's reversal runs and appendix C's memory measurement (controls.live views)
        (re.compile(r"^input\s+(\[.*\])$"), r"输入：\1"),
        (re.compile(r"^expected\s+(\[.*\])$"), r"期望输出：\1"),
        (re.compile(r"^sinusoidal\s+(\[.*\]) correct$"), r"正弦模型：\1 正确"),
        (re.compile(r"^sinusoidal\s+(\[.*\]) wrong$"), r"正弦模型：\1 错误"),
        (re.compile(r"^learned\s+(\[.*\]) correct$"), r"学习得到的模型：\1 正确"),
        (re.compile(r"^learned\s+(\[.*\]) wrong$"), r"学习得到的模型：\1 错误"),
        (re.compile(r"^sinusoidal\s+error: (.*)$"), r"正弦模型出错：\1"),
        (re.compile(r"^learned\s+error: (.*)$"), r"学习得到的模型出错：\1"),
        (
            re.compile(r"^score matrix by the formula: 1 x (\d+) x (\d+)² x 4 bytes = (\S+) MiB$"),
            r"按公式算出的分数矩阵：1 x \1 x \2² x 4 字节 = \3 MiB",
        ),
        (
            re.compile(r"^largest tensor eager attention allocated:\s+(\S+) MiB$"),
            r"逐步计算的注意力分配的最大张量：\1 MiB",
        ),
        (re.compile(r"^peak memory during the call:\s+(\S+) MiB$"), r"调用期间的内存峰值：\1 MiB"),
        (re.compile(r"^cosine similarity: (-?[\d.]+)$"), r"余弦相似度：\1"),
        (re.compile(r"^Sine dimensions of PE, d_model=(\d+)$"), r"PE 的正弦维度，d_model=\1"),
        (re.compile(r"^softmax of (\d+) scores, d_k = (\d+)$"), r"\1 个分数的 softmax，d_k = \2"),
        (re.compile(r"^Reversal, one head with d_k = (\d+)$"), r"反转任务，单个头，d_k = \1"),
        # the diagrams' hover text
        (re.compile(r"^encoder stack × N = (\d+) identical layers$"), r"编码器栈：N = \1 个相同的层"),
        (re.compile(r"^decoder stack × N = (\d+) identical layers$"), r"解码器栈：N = \1 个相同的层"),
        (re.compile(r"^embedding (\d+ × \d+.*)$"), r"嵌入 \1"),
        (
            re.compile(r"^d_k = (\d+) read from the module \(d_head\); keeps the scores' variance near 1, (§[\d.]+)$"),
            r"d_k = \1，从模块读出（d_head）；使分数的方差保持在 1 附近，\2",
        ),
        (re.compile(r"^rows (\d+:\d+) of the fused qkv_proj weight (\(.*\))$"), r"融合的 qkv_proj 权重 \2 的第 \1 行"),
        (re.compile(r"^rows (\d+:\d+) of the weight \((W<sup>\w</sup>)\)$"), r"权重的第 \1 行（\2）"),
        (
            re.compile(
                r"^each of Q, K, V: (\(B, T, \d+\)) viewed as (\(B, \d+, T, \d+\)); "
                r"head i takes dimensions (i·\d+) to (\(i\+1\)·\d+) − 1$"
            ),
            r"Q、K、V 各自：\1 看作 \2；头 i 取第 \3 到 \4 − 1 维",
        ),
        (re.compile(r"^head (\S+) · d_k = (\d+): (.*)$"), r"头 \1 · d_k = \2：\3"),
        (re.compile(r"^head (\S+) · d_k = (\d+)$"), r"头 \1 · d_k = \2"),
        (re.compile(r"^o_proj, weight (\(.*\))$"), r"o_proj，权重 \1"),
        (
            re.compile(r"^x @ weight\.T: (.*) → (.*), one product for all three$"),
            r"x @ weight.T：\1 → \2，一次乘法得到全部三个",
        ),
        (
            re.compile(r"^view \(B, T, H, D\), transpose → \(B, H, T, D\): (\d+) heads of (\d+)$"),
            r"view 为 (B, T, H, D)，transpose → (B, H, T, D)：\1 个头，每个 \2 维",
        ),
        (
            re.compile(r"^One choice changed at a time \((\d+) seeds: mean and range\)$"),
            r"每次只改变一个选择（\1 个随机种子：均值与范围）",
        ),
        (re.compile(r"^chapter 7: d_model (\d+), warm-up (\d+)$"), r"第 7 章：d_model \1，预热 \2 步"),
        (re.compile(r"^paper: d_model (\d+), warm-up (\d+)$"), r"论文：d_model \1，预热 \2 步"),
        (re.compile(r"^\+(\d+) positions$"), r"+\1 个位置"),
        (re.compile(r"^Layer (\d+), head (\d+)$"), r"第 \1 层，第 \2 个头"),
        (re.compile(r"^base \(d_model (\d+), (\d+)\+(\d+) layers\)$"), r"基础模型（d_model \1，\2+\3 层）"),
        (re.compile(r"^big \(d_model (\d+), (\d+) heads, d_ff (\d+)\)$"), r"大模型（d_model \1，\2 个头，d_ff \3）"),
        (re.compile(r"^this book's toy size \(d_model (\d+)\)$"), r"本书的玩具规模（d_model \1）"),
        (
            re.compile(r"^Eager attention against the fused kernel \(SDPA\), one batch of (\d+) heads$"),
            r"逐步计算的注意力（eager）与融合内核（SDPA）的比较：一个批量，\1 个头",
        ),
        (re.compile(r"^layer (\d+), head (\d+)$"), r"第 \1 层，第 \2 个头"),
        (re.compile(r"^layer (\d+)$"), r"第 \1 层"),
        (re.compile(r"^sentence (\d+)$"), r"句子 \1"),
        (re.compile(r"^head (\d+)$"), r"头 \1"),
        (re.compile(r"^(\d+) heads<br>(.*)$"), r"\1 个头<br>\2"),
        (re.compile(r"^linear (\d+) → (\d+)$"), r"线性层 \1 → \2"),
        (re.compile(r"^(\d+) → (\d+) → (\d+) \(relu\)$"), r"\1 → \2 → \3（激活函数 ReLU）"),
        (re.compile(r"^(\d+) → (\d+) → (\d+) \(gelu\)$"), r"\1 → \2 → \3（激活函数 GELU）"),
        (re.compile(r"^unscaled: max ([\d.]+), entropy ([\d.]+)$"), r"未缩放：最大值 \1，熵 \2"),
        (re.compile(r"^(\d+) heads$"), r"\1 个头"),
        (re.compile(r"^(\d+) heads of d_k = (\d+)$"), r"\1 个头，d_k = \2"),
        (re.compile(r"^(\d+) heads, K, V from encoder$"), r"\1 个头，K、V 来自编码器"),
        (re.compile(r"^step (\d+)$"), r"第 \1 步"),
        (re.compile(r"^mean of the last (\d+) snapshots$"), r"最后 \1 个快照的均值"),
        (re.compile(r"^recipe, seed (\d+)$"), r"配方，种子 \1"),
        (re.compile(r"^Linear (W<sup>[QKVO]</sup>)$"), r"线性层 \1"),
        (re.compile(r"^\((.*)\) each$"), r"各为 (\1)"),
        (re.compile(r"^Concat: (.*)$"), r"拼接：\1"),
        (re.compile(r"^Cross-attention: (.*)$"), r"交叉注意力：\1"),
        (re.compile(r"^MatMul with V → (.*)$"), r"与 V 做矩阵乘法 → \1"),
        (re.compile(r"^Multi-head attention, h = (\d+)$"), r"多头注意力，h = \1"),
        (re.compile(r"^One head, d_k = (\d+)$"), r"单个头，d_k = \1"),
        (re.compile(r"^Post-LN: (.*)$"), r"后置规范化：\1"),
        (re.compile(r"^Pre-LN: (.*)$"), r"前置规范化：\1"),
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

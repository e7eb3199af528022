"""The figures' words in the book's two languages: one label catalog, applied when a page is built.

The drawing functions (:mod:`.viz`, :mod:`.diagrams`, ...) write their labels in English, the language of the code,
and are the same for both editions. When the Chinese site is built (``language = zh_CN``, see :mod:`.i18n`), the
site's figure renderer (:mod:`.site`) passes each figure through :func:`translate_figure`, which replaces every
label found in :data:`LABELS` (whole strings) or :data:`PATTERNS` (labels with a number or a name in them) by its
Chinese. Math, code names, numbers and token strings are left as they are; a label that is not in the catalog
stays English. Printed output is never touched: it is what the code prints.

A figure's text alternative (what a screen reader says in its place) is kept as facts, not as a sentence
(``layout.meta.alt_facts``, written by :func:`.viz.describe`); :func:`alt_sentence` says them in either language.

The Chinese terms are the glossary's (book/glossary.md, aligned with zh.d2l.ai).
"""

from __future__ import annotations

import copy
import re
from typing import Any

__all__ = [
    "LABELS",
    "PATTERNS",
    "translate",
    "translate_hover",
    "translate_figure",
    "figure_texts",
    "alt_sentence",
    "alt_meta",
]

# English label -> Chinese label (whole strings, as the drawing functions write them)
LABELS: dict[str, dict[str, str]] = {
    "zh": {
        "Add & Norm": "相加 & 规范化",
        "embedding": "嵌入",
        "+ positional encoding": "+ 位置编码",
        "positional encoding": "位置编码",
        "feed-forward": "前馈层",
        "feed forward": "前馈层",
        "self-attention": "自注意力",
        "masked self-attention": "掩蔽自注意力",
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
        "mean of heads": "各头平均",  # appendix A's attention explorer, as the live translator's menu says
        "hover a token on the left": "把指针移到左边的词元上",
        # the live translator's placeholder (live_translator.page_html), shown until translator.js starts
        "The live translator runs on the book's website, in the browser, with no kernel: "
        "open this chapter there to translate your own sentences.": "这个翻译器在本书的网站上运行，就在浏览器里，"
        "不需要内核：到网站上打开本章，就能翻译你自己写的句子。",
        "(It could not start here: {error})": "（它无法在这里启动：{error}）",
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
        "Training": "训练",
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
        "KV cache: K, V (B, H, L, D) per layer": "KV 缓存：K、V (B, H, L, D)，每层一份",  # whole: the text alternative
        "The Transformer, drawn from the model object": "Transformer，由模型对象绘制",
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
        # the chapters' and appendices' figures (their titles, axes, legends and controls)
        "The Transformer (base model):": "Transformer（基础模型）：",
        "encoder (left), decoder (right)": "编码器（左），解码器（右）",
        "Encoder-only: padding mask": "纯编码器：填充掩码",
        "Decoder-only: causal mask": "纯解码器：因果掩码",
        "Encoder-decoder, decoder self-attention: causal and padding": "编码器-解码器，解码器自注意力：因果与填充",
        "Encoder-decoder, cross-attention: source padding": "编码器-解码器，交叉注意力：源端填充",
        "Chapter 1: self-attention": "第 1 章：自注意力",
        "measured forward time (ms)": "实测前向计算时间（ms）",
        "sequential steps": "串行步数",
        "sequence length T": "序列长度 T",
        "RNN arithmetic, no recurrence": "RNN 的运算，去掉循环依赖",
        "distance T - t (tokens back)": "距离 T - t（往回数的词元数）",
        "distance T - t": "距离 T - t",
        "LSTM, forget biases at 0": "LSTM，遗忘门偏置为 0",
        "LSTM, forget biases at 1": "LSTM，遗忘门偏置为 1",
        "chance (1/8)": "随机猜测（1/8）",
        "distance k (distractors between key and answer)": "距离 k（键与答案之间的干扰符号数）",
        "test accuracy": "测试准确率",
        "Chapter 2: tokens and embeddings": "第 2 章：词元与嵌入",
        "merges:": "合并次数：",
        "Vocabulary size against sequence length": "词表大小与序列长度",
        "vocabulary size": "词表大小",
        "tokens per sentence (corpus average)": "每句的词元数（语料库平均）",
        "character tokenizer": "字符分词器",
        "word tokenizer": "词级分词器",
        "padding mask: 1 = real token": "填充掩码：1 = 真实词元",
        "Frenchy embeddings after training (2-D projection)": "训练后的 Frenchy 嵌入（2-D 投影）",
        "Frenchy embeddings before training (2-D projection)": "训练前的 Frenchy 嵌入（2-D 投影）",
        "English embeddings after training (2-D projection)": "训练后的英语嵌入（2-D 投影）",
        "English embeddings before training (2-D projection)": "训练前的英语嵌入（2-D 投影）",
        "Frenchy embeddings, after training": "Frenchy 嵌入，训练后",
        "Frenchy embeddings, before training": "Frenchy 嵌入，训练前",
        "English embeddings, after training": "英语嵌入，训练后",
        "English embeddings, before training": "英语嵌入，训练前",
        "first principal component": "第一主成分",
        "second principal component": "第二主成分",
        "Chapter 3: positional encoding": "第 3 章：位置编码",
        "PE(pos, dimension)": "PE(pos, 维度)",
        "input dimension": "输入维度",
        "output dimension": "输出维度",
        "interleaved (paper)": "交错（论文）",
        "concatenated (Tensor2Tensor)": "拼接（Tensor2Tensor）",
        "Training loss on reversal": "反转任务上的训练损失",
        "sinusoidal": "正弦",
        "learned": "学习得到的",
        "normalised dot product": "规范化的点积",
        "Chapter 4: attention": "第 4 章：注意力",
        "matmul": "矩阵乘法",
        "out": "输出",
        "Variance of a dot product of random vectors": "随机向量点积的方差",
        "variance": "方差",
        "log2 d_k:": "log2 d_k：",
        "head": "头",
        "Chapter 5: the masked attention": "第 5 章：掩蔽注意力",
        "Training loss on the copy task": "复制任务上的训练损失",
        "with causal mask": "有因果掩码",
        "without (peeking)": "无因果掩码（偷看）",
        "lowest honest loss": "诚实模型的最低损失",
        "Chapter 6: multi-head attention": "第 6 章：多头注意力",
        "Chapter 6b: the rest of the encoder block": "第 6b 章：编码器层的其余部分",
        "Chapter 6c: the whole model": "第 6c 章：整个模型",
        "Gradient norm of each layer's W₂ at initialisation (12 layers)": "初始化时各层 W₂ 的梯度范数（12 层）",
        "both": "两者",
        "layer (1 = next to the embeddings)": "层（1 = 紧挨嵌入的一层）",
        "‖∂loss/∂W₂‖": "‖∂损失/∂W₂‖",
        "Chapter 7: cross-attention and decoding": "第 7 章：交叉注意力与解码",
        "Training loss (cross-entropy with label smoothing 0.1)": "训练损失（带 0.1 标签平滑的交叉熵）",
        "recipe (checkpoint)": "配方（检查点）",
        "live run above": "上面的现场运行",
        "Last layer, mean of heads; circles: gold alignment": "最后一层，各头平均；圆圈：标准对齐",
        "target token (query)": "目标词元（查询）",
        "source token (key)": "源词元（键）",
        "gold": "标准对齐",
        "temperature T =": "温度系数 T =",
        "probability": "概率",
        "probability · ␣ = ▁, a space before the word": "概率 · ␣ = ▁，词前的空格",
        "Chapter 7b: decoding fast, and the output": "第 7b 章：快速解码与输出",
        "Greedy decoding time": "贪心搜索用时",
        "tokens generated": "生成的词元数",
        "seconds": "秒",
        "with KV cache": "使用 KV 缓存",
        "without cache": "不使用缓存",
        "label smoothing ε =": "标签平滑 ε =",
        "target probability": "目标概率",
        "One attention head, d_k = 64 (log-log: slope 2 = quadratic)": (
            "单个注意力头，d_k = 64（双对数坐标：斜率 2 = 二次方）"
        ),
        "sequence length n": "序列长度 n",
        "weights memory (MB)": "权重内存 (MB)",
        "time (ms)": "时间 (ms)",
        "encoder-only: self": "纯编码器：自注意力",
        "decoder-only: self": "纯解码器：自注意力",
        "enc-dec: decoder self": "编码器-解码器：解码器自注意力",
        "enc-dec: cross": "编码器-解码器：交叉注意力",
        "Masks of the three families (rows: queries, columns: keys)": "三个家族的掩码（行：查询，列：键）",
        "Chapter 8: the paper's dropout sites<br>(embedding sums, sub-layer outputs)": (
            "第 8 章：论文中使用暂退法的位置<br>（嵌入之和、子层输出）"
        ),
        "Chapter 8: the paper's dropout sites": "第 8 章：论文中使用暂退法的位置",
        "(embedding sums, sub-layer outputs)": "（嵌入之和、子层输出）",
        "Chapter 8: the paper's dropout sites (embedding sums, sub-layer outputs)": (
            "第 8 章：论文中使用暂退法的位置（嵌入之和、子层输出）"
        ),
        "Learning rate against training step": "学习率随训练步数的变化",
        "step (paper)": "步（论文）",
        "step (chapter 7)": "步（第 7 章）",
        "learning rate": "学习率",
        "paper: d_model 512, warm-up 4000": "论文：d_model 512，预热 4000 步",
        "chapter 7: d_model 64, warm-up 200": "第 7 章：d_model 64，预热 200 步",
        "held-out loss": "留出集损失",
        "gradient norm": "梯度范数",
        "recipe": "配方",
        "no warm-up": "不预热",
        "no clipping": "不裁剪",
        "no warm-up, no clipping": "不预热，不裁剪",
        "key · ␣ = ▁, a space before the word": "键 · ␣ = ▁，词前的空格",
        "source token (key, value) · ␣ = ▁, a space before the word": "源词元（键、值） · ␣ = ▁，词前的空格",
        'Weight from "it" to "animal", every head': "“it” 放在 “animal” 上的权重，每个头",
        "Average weight on: previous": "平均权重：前一个词元",
        "Average weight on: next": "平均权重：后一个词元",
        "Average weight on: self": "平均权重：自身",
        "Average weight on: [CLS]": "平均权重：[CLS]",
        "Average weight on: [SEP]": "平均权重：[SEP]",
        "previous": "前一个",
        "next": "后一个",
        "self": "自身",
        "Cosine similarity of sentence vectors": "句向量的余弦相似度",
        "sentence": "句子",
        "Influence of an input d steps back on the last output": "d 步之前的输入对最后一个输出的影响",
        "distance d": "距离 d",
        "rnn": "RNN",
        "Share of forward FLOPs by kind": "前向 FLOPs 按计算类别的占比",
        "base (d_model 512, 6+6 layers)": "base（d_model 512，6+6 层）",
        "big (d_model 1024, 16 heads, d_ff 4096)": "big（d_model 1024，16 个头，d_ff 4096）",
        "this book's toy size (d_model 32)": "本书的玩具规模（d_model 32）",
        "sequence length n (source = target)": "序列长度 n（源 = 目标）",
        "share of FLOPs": "FLOPs 占比",
        "peak memory (MiB)": "峰值内存（MiB）",
        "time per call (ms)": "每次调用的时间（ms）",
        "Eager attention against the fused kernel (SDPA), one batch of 4 heads": (
            "eager 注意力与融合内核（SDPA）的比较：一个批量，4 个头"
        ),
        "length n": "长度 n",
        "B·H·n²·4 bytes": "B·H·n²·4 字节",
        "Greedy decoding: time per generated token": "贪心搜索：每生成一个词元的时间",
        "ms per token": "每个词元的毫秒数",
        "(learned)": "（学习得到）",
        "final LayerNorm": "最终的 LayerNorm",
        "source token (key, value)": "源词元（键、值）",
        "dimension i": "维度 i",
        "position pos": "位置 pos",
        "Positional encoding": "位置编码",
        # hover text: the heatmaps' row and column names (viz.heatmap's hover_names) and their lines
        "row": "行",
        "column": "列",
        "target": "目标",
        "source": "源",
        "pos %{y}, dim %{x}: %{z:.2f}": "位置 %{y}，维度 %{x}：%{z:.2f}",
        "position %{y}, dim %{x}: %{z:.2f}": "位置 %{y}，维度 %{x}：%{z:.2f}",
        "%{customdata} merges": "%{customdata} 次合并",
        "vocabulary %{x}": "词表大小 %{x}",
        "%{y} tokens per sentence": "每句 %{y} 个词元",
        # hover text: the architecture diagram's boxes (diagrams.py)
        "+ sinusoidal positional encoding": "+ 正弦位置编码",
        "+ learned positional encoding": "+ 学习得到的位置编码",
        "add: x + sub-layer": "相加：x + 子层",
        "pre-LN: the sub-layer reads LayerNorm(x)": "pre-LN：子层读入 LayerNorm(x)",
        "pre-LN: x + Dropout(sub-layer(LayerNorm(x)))": "pre-LN：x + Dropout(子层(LayerNorm(x)))",
        "post-LN (paper): LayerNorm(x + Dropout(sub-layer(x)))": "post-LN（论文）：LayerNorm(x + Dropout(子层(x)))",
        "after the last layer: a pre-LN stack leaves its output un-normalised": (
            "最后一层之后：pre-LN 的层堆叠输出尚未规范化，在此补上"
        ),
        # hover text: the attention diagrams (attention_diagrams.py, flow_diagrams.py)
        "one head's queries: T positions × d_k": "单个头的查询：T 个位置 × d_k",
        "one head's keys: S positions × d_k": "单个头的键：S 个位置 × d_k",
        "one head's values: S positions × d_v": "单个头的值：S 个位置 × d_v",
        "(T, S) scores: one dot product per (query, key) pair": "(T, S) 的分数：每个（查询，键）对一个点积",
        "blocked (query, key) pairs get -inf, so exactly zero weight": (
            "被掩蔽的（查询，键）对得到 -inf，权重因而恰好为零"
        ),
        "(T, S) weights: row i is query i's distribution over the S keys": (
            "(T, S) 的权重：第 i 行是查询 i 在 S 个键上的分布"
        ),
        "each query's output: a weighted average of the value rows": "每个查询的输出：值矩阵各行的加权平均",
        "the heads' outputs side by side: (B, T, h·d_k)": "各头的输出并排拼接：(B, T, h·d_k)",
        "row i: how target position i spreads its attention over the S source positions": (
            "第 i 行：目标位置 i 如何把注意力分配到 S 个源位置上"
        ),
        "the residual stream entering the layer": "进入该层的残差流",
    }
}

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
            re.compile(r"^(post|pre)-LN, (\d+) layers: top 3 / bottom 3 = (\S+)$"),
            r"\1-LN，\2 层：顶部 3 层 / 底部 3 层 = \3",
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
        (re.compile(r"^Sine dimensions of PE, d_model=(\d+)$"), r"PE 的正弦维度，d_model=\1"),
        (re.compile(r"^softmax of (\d+) scores, d_k = (\d+)$"), r"\1 个分数的 softmax，d_k = \2"),
        (re.compile(r"^Reversal, one head with d_k = (\d+)$"), r"反转任务，单个头，d_k = \1"),
        # the diagrams' hover text
        (re.compile(r"^encoder stack × N = (\d+) identical layers$"), r"编码器：N = \1 个相同的层堆叠而成"),
        (re.compile(r"^decoder stack × N = (\d+) identical layers$"), r"解码器：N = \1 个相同的层堆叠而成"),
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
        (re.compile(r"^base \(d_model (\d+), (\d+)\+(\d+) layers\)$"), r"base（d_model \1，\2+\3 层）"),
        (re.compile(r"^big \(d_model (\d+), (\d+) heads, d_ff (\d+)\)$"), r"big（d_model \1，\2 个头，d_ff \3）"),
        (re.compile(r"^this book's toy size \(d_model (\d+)\)$"), r"本书的玩具规模（d_model \1）"),
        (
            re.compile(r"^Eager attention against the fused kernel \(SDPA\), one batch of (\d+) heads$"),
            r"eager 注意力与融合内核（SDPA）的比较：一个批量，\1 个头",
        ),
        (re.compile(r"^layer (\d+), head (\d+)$"), r"第 \1 层，第 \2 个头"),
        (re.compile(r"^layer (\d+)$"), r"第 \1 层"),
        (re.compile(r"^head (\d+)$"), r"头 \1"),
        (re.compile(r"^(\d+) heads<br>(.*)$"), r"\1 个头<br>\2"),
        (re.compile(r"^linear (\d+) → (\d+)$"), r"线性层 \1 → \2"),
        (re.compile(r"^unscaled: max ([\d.]+), entropy ([\d.]+)$"), r"未缩放：最大值 \1，熵 \2"),
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
        (re.compile(r"^Post-LN: (.*)$"), r"Post-LN（后置规范化）：\1"),
        (re.compile(r"^Pre-LN: (.*)$"), r"Pre-LN（前置规范化）：\1"),
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
_TEXT_KEYS = ("text", "name", "label", "prefix", "title", "hovertext")  # not under meta: see alt_sentence
# A space-legend that the token figures append to an axis title (viz._with_space_legend)
_SPACE_LEGEND = " · ␣ = ▁, a space before the word"
_SPACE_LEGEND_ZH = " · ␣ = ▁，词前的空格"
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
    """
    if lang == "en":
        return label
    if lang not in LABELS:
        raise ValueError(f"lang: expected 'en' or one of {sorted(LABELS)}, got {lang!r}")
    if "<br>" in label and label.strip() not in LABELS[lang]:  # several lines: each on its own
        return "<br>".join(translate(line, lang) for line in label.split("<br>"))
    stripped = label.strip()
    if stripped.endswith(_SPACE_LEGEND) and stripped not in LABELS[lang]:  # "key (attended to) · ␣ = ▁, a space..."
        return label.replace(stripped, translate(stripped[: -len(_SPACE_LEGEND)], lang) + _SPACE_LEGEND_ZH)
    if stripped in LABELS[lang]:
        return label.replace(stripped, LABELS[lang][stripped])
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


def _trace(trace: Any, lang: str) -> Any:
    """A trace with its name and hover template in ``lang`` (its data, text included, as they are)."""
    if not isinstance(trace, dict):
        return trace
    out = dict(trace)
    if isinstance(trace.get("name"), str):
        out["name"] = translate(trace["name"], lang)
    if isinstance(trace.get("hovertemplate"), str):
        out["hovertemplate"] = translate_hover(trace["hovertemplate"], lang)
    return out


def _walk(node: Any, lang: str) -> Any:
    if isinstance(node, dict):
        return {
            key: translate(value, lang) if _is_label(key, value) else value if key == "meta" else _walk(value, lang)
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
        out["data"] = [_trace(trace, lang) for trace in figure["data"]]
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


def alt_sentence(facts: dict[str, Any], lang: str) -> str:
    """A figure's text alternative in ``lang``, from the facts its drawing function recorded (``kind`` is "heatmap",
    "lines", "training" or "diagram"; titles, axis titles, names and parts are labels, translated like the figure's
    own; a range is ``[low, high]`` or None when there is no finite value).

    >>> facts = {"kind": "heatmap", "title": "self-attention", "rows": 2, "row_title": "query", "cols": 3,
    ...          "col_title": "key", "range": [0.0, 1.0]}
    >>> alt_sentence(facts, "en")
    'Heat map: self-attention. 2 rows (query) by 3 columns (key), values from 0 to 1.'
    >>> alt_sentence(facts, "zh")
    '热图：自注意力。2 行（查询） × 3 列（键），取值从 0 到 1。'
    """
    kind = facts.get("kind")
    zh = lang == "zh"
    translate("", lang)  # a clear error for an unknown language

    def word(label: Any) -> str:
        return _plain(translate(str(label), lang)) if label else ""

    def span(values: Any) -> str:
        if values is None:
            return "没有有限值" if zh else "with no finite value"
        low, high = (f"{float(v):.3g}" for v in values)
        return f"从 {low} 到 {high}" if zh else f"from {low} to {high}"

    title = word(facts.get("title"))
    head = {
        "heatmap": ("Heat map", "热图"),
        "lines": ("Line plot", "折线图"),
        "training": ("Training curves", "训练曲线"),
        "diagram": ("Diagram", "示意图"),
    }
    if kind not in head:
        raise ValueError(f"facts: expected a kind among {sorted(head)}, got {kind!r}")
    named = head[kind][zh] + (("：" if zh else ": ") + title if title else "")
    more = int(facts.get("more") or 0)
    if kind == "heatmap":
        rows, cols = word(facts.get("row_title")), word(facts.get("col_title"))
        if zh:
            r = f"{facts['rows']} 行" + (f"（{rows}）" if rows else "")
            c = f"{facts['cols']} 列" + (f"（{cols}）" if cols else "")
            return f"{named}。{r} × {c}，取值{span(facts.get('range'))}。"
        r = f"{facts['rows']} rows" + (f" ({rows})" if rows else "")
        c = f"{facts['cols']} columns" + (f" ({cols})" if cols else "")
        return f"{named}. {r} by {c}, values {span(facts.get('range'))}."
    series = [(word(name), span(values)) for name, values in facts.get("series") or []]
    if kind == "lines":
        y_title, x_title, x_span = word(facts.get("y_title")), word(facts.get("x_title")), span(facts.get("x_range"))
        log = facts.get("log_x")
        if zh:
            lines = "；".join(f"{name} {values}" for name, values in series) + (f"，另有 {more} 条" if more else "")
            axes = f"{y_title or '数值'} 随 {x_title or 'x'} 变化（{x_span}{'，对数刻度' if log else ''}）"
            return f"{named}。{axes}：{lines}。"
        lines = "; ".join(f"{name} {values}" for name, values in series) + (f" and {more} more" if more else "")
        axes = f"{y_title or 'value'} against {x_title or 'x'} ({x_span}{', log scale' if log else ''})"
        return f"{named}. {axes}: {lines}."
    if kind == "training":
        unit = word(facts.get("x_title"))
        if zh:
            curves = "；".join(f"{name} {values}" for name, values in series)
            return f"{named}，共 {facts['length']} {unit}。{curves}。"
        return f"{named}, over {facts['length']} {unit}s. {'; '.join(f'{n} {v}' for n, v in series)}."
    # a part is named by the first line of its label, translated as a whole (the catalog holds whole labels)
    parts = list(dict.fromkeys(_plain(translate(str(p), lang).split("<br>")[0]) for p in facts.get("parts") or []))
    parts = [p for p in parts if p]
    if not parts:
        return named + ("。" if zh else ".")
    if zh:
        return f"{named}。组成部分：{'、'.join(parts)}" + (f"，另有 {more} 个" if more else "") + "。"
    return f"{named}. Parts: {', '.join(parts)}" + (f", and {more} more" if more else "") + "."


def alt_meta(facts: dict[str, Any]) -> dict[str, Any]:
    """The ``layout.meta`` entries that give a figure its text alternative: the facts, and their English sentence."""
    return {"alt": alt_sentence(facts, "en"), "alt_facts": facts}

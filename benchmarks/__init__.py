"""Performance benchmarks for ``transformer_lib``: ``python -m benchmarks [--quick] [--json PATH]``.

One module per question, each a function returning a JSON-ready dict (every figure with its spread over repeats):

1. :mod:`benchmarks.train_step` — training-step throughput of ``tl.Transformer`` against ``torch.nn.Transformer``
   with the same configuration, weights, masks, loss and optimiser;
2. :mod:`benchmarks.attention` — attention alone: our eager path, our fast path, raw
   ``F.scaled_dot_product_attention``, across lengths;
3. :mod:`benchmarks.decoding` — greedy decoding with and without the KV cache;
4. :mod:`benchmarks.memory` — attention time and memory against length (the O(n²) curve);
5. :mod:`benchmarks.mfu` — model FLOPs utilisation of a base-model training step (GPU only).

Contenders are timed in interleaved rounds and compared per round (:mod:`benchmarks.common`), so the ratios hold
on a busy machine even when the absolute times drift. The book's appendix "Performance and cost" runs small
versions of these and shows the recorded results in ``benchmarks/results/``.
"""

from pathlib import Path

from .attention import attention_benchmark
from .decoding import decoding_benchmark
from .memory import memory_benchmark
from .mfu import mfu_benchmark
from .runner import BENCHMARKS, run_all
from .train_step import train_step_benchmark

# the recorded runs, one JSON file per machine (the grader's benchmark keeps its own in results/grading/)
RESULTS = Path(__file__).resolve().parent / "results"

__all__ = [
    "RESULTS",
    "run_all",
    "BENCHMARKS",
    "train_step_benchmark",
    "attention_benchmark",
    "decoding_benchmark",
    "memory_benchmark",
    "mfu_benchmark",
]

"""Recurrent baselines, measured: the two problems the Transformer was built to remove (Chapter 1).

* **Parallelism.** :func:`benchmark_forward` times ``nn.RNN`` / ``nn.LSTM`` / ``nn.GRU`` against one self-attention
  layer over sequence lengths; :func:`sequential_steps` counts the steps that must run one after another:
  ``T`` for a recurrent layer, 1 for attention.
* **Long range.** :func:`gradient_vs_distance` measures ‖∂h_T/∂x_t‖ against the distance ``T - 1 - t``: in an
  RNN the signal from a far token crosses ``T - 1 - t`` state updates and shrinks at each; in self-attention
  every token is one step from every other (the paper's "maximum path length", Table 1).
* **Recall.** :func:`recall_experiment` trains a :class:`RecallModel` on :func:`transformer_lib.data.recall_task`
  (repeat the first token after ``k`` distractors): briefly trained, an LSTM fails as ``k`` grows, a Transformer
  does not.

The layers are built by :mod:`transformer_lib.book.sequence_layers` and the recall experiment lives in
:mod:`transformer_lib.book.recall`; this module re-exports their names (and :func:`time_call` of
:mod:`transformer_lib.book.timing`), so ``recurrent.sequential_steps`` and ``recurrent.recall_experiment`` keep
working.

The same experiments from the command line (prints tables; on a GPU attention's parallelism shows best)::

    python -m transformer_lib.book.recurrent timing --lengths 16,64,256,1024
    python -m transformer_lib.book.recurrent recall --distances 2,8,32 --seeds 0,1,2

Shape legend: ``B`` batch, ``T`` sequence length, ``C`` model width ``d_model``, ``V`` vocabulary size.
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ..attention import MultiHeadAttention
from ..validation import check_choice, check_positive
from .recall import RecallModel, RecallResult, recall_accuracy, recall_experiment, train_recall
from .sequence_layers import (
    LAYER_KINDS,
    RECURRENT_KINDS,
    hidden_states,
    make_sequence_layer,
    orthogonal_rnn,
    sequential_steps,
)
from .timing import time_call  # re-exported: chapters call recurrent.time_call

__all__ = [
    "RECURRENT_KINDS",
    "LAYER_KINDS",
    "make_sequence_layer",
    "orthogonal_rnn",
    "sequential_steps",
    "time_call",
    "TimingResult",
    "benchmark_forward",
    "gradient_vs_distance",
    "RecallModel",
    "train_recall",
    "recall_accuracy",
    "RecallResult",
    "recall_experiment",
]


@dataclass
class TimingResult:
    """Forward times (seconds, the fastest of the repeats) and sequential steps, per layer kind and length.

    Keys: the kinds of :data:`LAYER_KINDS` plus ``"rnn_no_recurrence"``: the same ``nn.RNN`` fed every position
    as its own length-1 sequence, i.e. the RNN's arithmetic with the dependency on ``h_{t-1}`` removed.
    """

    seq_lens: list[int]
    seconds: dict[str, list[float]]
    steps: dict[str, list[int]]
    device: str = "cpu"

    def slope(self, kind: str, min_len: int = 1) -> float:
        """Least-squares slope of log(seconds) against log(length) over lengths >= ``min_len``: 1 = linear."""
        check_choice("kind", kind, list(self.seconds))
        pts = [
            (math.log(n), math.log(s)) for n, s in zip(self.seq_lens, self.seconds[kind], strict=True) if n >= min_len
        ]
        if len(pts) < 2:
            raise ValueError(f"min_len: expected at least 2 lengths >= min_len, got {len(pts)} (min_len={min_len})")
        mx, my = statistics.fmean(p[0] for p in pts), statistics.fmean(p[1] for p in pts)
        return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)

    def table(self) -> str:
        """A plain-text table: one row per length, milliseconds per kind."""
        kinds = list(self.seconds)
        lines = ["T".rjust(6) + "".join(k.rjust(20) for k in kinds)]
        for i, n in enumerate(self.seq_lens):
            lines.append(str(n).rjust(6) + "".join(f"{self.seconds[k][i] * 1e3:17.3f} ms" for k in kinds))
        return "\n".join(lines)


@torch.no_grad()
def benchmark_forward(
    seq_lens: Sequence[int],
    *,
    kinds: Sequence[str] = LAYER_KINDS,
    d_model: int = 64,
    n_heads: int = 4,
    batch_size: int = 8,
    repeats: int = 5,
    control: bool = True,
    device: torch.device | str = "cpu",
    seed: int = 0,
) -> TimingResult:
    """Time one forward pass of each layer kind over each length ``T`` in ``seq_lens``.

    Repeats are interleaved (every kind and length once, then again) so that a burst of load from other
    programs hits all of them alike, and the fastest repeat is kept: such load only ever adds time.
    ``control`` adds ``"rnn_no_recurrence"`` (see :class:`TimingResult`).

    Shape:
        each timed input: (batch_size, T, d_model)
    """
    lens = [int(n) for n in seq_lens]
    if not lens:
        raise ValueError("seq_lens: expected at least one length, got none")
    for n in lens:
        check_positive("seq_lens[i]", n)
    for kind in kinds:
        check_choice("kinds[i]", kind, LAYER_KINDS)
    device = torch.device(device)
    with torch.random.fork_rng(devices=[]):  # seeded, without disturbing the caller's random stream
        torch.manual_seed(seed)
        layers = {k: make_sequence_layer(k, d_model, n_heads=n_heads).to(device).eval() for k in kinds}
        if control:  # the same nn.RNN weights when "rnn" is timed too
            rnn = layers["rnn"] if "rnn" in layers else make_sequence_layer("rnn", d_model).to(device).eval()
            layers["rnn_no_recurrence"] = rnn
        inputs = {n: torch.randn(batch_size, n, d_model).to(device) for n in lens}  # (B, T, C)

    def call(name: str, n: int) -> Callable[[], object]:
        x = inputs[n]
        if name == "rnn_no_recurrence":
            x = x.reshape(batch_size * n, 1, d_model)  # (B*T, 1, C): no position waits for another
        return lambda: layers[name](x)

    samples = {name: {n: time_call(call(name, n), repeats=1, warmup=1, device=device) for n in lens} for name in layers}
    for _ in range(repeats - 1):
        for n in lens:
            for name in layers:
                samples[name][n] += time_call(call(name, n), repeats=1, warmup=0, device=device)
    seconds = {name: [min(samples[name][n]) for n in lens] for name in layers}
    steps = {
        name: [sequential_steps("attention" if name == "rnn_no_recurrence" else name, n) for n in lens]
        for name in layers
    }
    return TimingResult(lens, seconds, steps, str(device))


def _input_width(layer: nn.Module) -> int:
    if isinstance(layer, nn.RNNBase):
        return layer.input_size
    for module in layer.modules():
        if isinstance(module, MultiHeadAttention):
            return module.d_model
    raise TypeError(
        f"layer: expected an nn.RNN/LSTM/GRU or a module containing MultiHeadAttention, "
        f"got {type(layer).__name__}; pass x to give the input explicitly"
    )


def gradient_vs_distance(
    layer: nn.Module, seq_len: int | None = None, *, x: Tensor | None = None, seed: int = 0
) -> Tensor:
    """‖∂h_T/∂x_t‖ (Frobenius norm of the Jacobian block) for every position t, ordered by distance T - 1 - t.

    ``h_T`` is the layer's hidden state at the last position. Entry 0 is the last token itself, entry ``d`` the
    token ``d`` steps back. The input is ``x`` or, if None, a ``(seq_len, C)`` standard normal draw from ``seed``.
    One backward pass computes the whole Jacobian: the batch holds one copy of x per output unit, and copy ``i``
    back-propagates only unit ``i`` (batch rows never interact in these layers). Runs on an eval-mode float64 copy
    of the layer (float32 on MPS), on its device, without cuDNN (whose RNN backward refuses eval mode).

    Shape:
        x: (T, C) -> output (T,), output[d] = ‖∂h_T / ∂x_{T-1-d}‖
    """
    device = next(layer.parameters()).device
    dtype = torch.float32 if device.type == "mps" else torch.float64  # float64: tiny gradients stay above 0
    if x is None:
        if seq_len is None:
            raise ValueError("seq_len: expected a length when x is not given, got None")
        check_positive("seq_len", seq_len)
        x = torch.randn(seq_len, _input_width(layer), generator=torch.Generator().manual_seed(seed))
    if not isinstance(x, Tensor) or x.dim() != 2 or not x.is_floating_point():
        raise ValueError(f"x: expected a float tensor of shape (T, C), got {getattr(x, 'shape', type(x).__name__)}")
    x = x.to(device, dtype)
    probe = copy.deepcopy(layer).to(dtype).eval()  # the caller's layer keeps its dtype and mode
    with torch.enable_grad(), torch.backends.cudnn.flags(enabled=False):
        n_out = hidden_states(probe, x[None]).shape[-1]  # width of h_T
        xs = x.expand(n_out, *x.shape).clone().requires_grad_(True)  # (n_out, T, C): one copy per unit
        h_last = hidden_states(probe, xs)[:, -1, :]  # (n_out, n_out): row i is h_T of copy i
        (grad,) = torch.autograd.grad(h_last.diagonal().sum(), xs)  # grad[i, t] = ∂h_T[i] / ∂x_t
    return grad.pow(2).sum(dim=(0, 2)).sqrt().flip(0)  # (T,), by distance


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``timing`` prints :func:`benchmark_forward`, ``recall`` prints :func:`recall_experiment`."""
    parser = argparse.ArgumentParser(
        prog="python -m transformer_lib.book.recurrent", description=__doc__.split("\n")[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    timing = sub.add_parser("timing", help="forward time of RNN/LSTM/GRU against self-attention")
    timing.add_argument("--lengths", type=_ints, default=[16, 64, 256, 1024])
    timing.add_argument("--d-model", type=int, default=64)
    timing.add_argument("--batch-size", type=int, default=8)
    timing.add_argument("--repeats", type=int, default=5)
    recall = sub.add_parser("recall", help="recall accuracy of briefly trained models against distance")
    recall.add_argument("--kinds", type=lambda s: s.split(","), default=["lstm", "transformer"])
    recall.add_argument("--distances", type=_ints, default=[2, 8, 32])
    recall.add_argument("--seeds", type=_ints, default=[0])
    recall.add_argument("--steps", type=int, default=150)
    for p in (timing, recall):
        p.add_argument("--device", default=None, help="cpu, cuda, mps (default: the best available)")
    args = parser.parse_args(argv)
    from ..device import get_device  # late import: only the command line picks a device by itself

    device = get_device(args.device)
    if args.command == "timing":
        result = benchmark_forward(
            args.lengths, d_model=args.d_model, batch_size=args.batch_size, repeats=args.repeats, device=device
        )
        print(f"forward time on {result.device}, fastest of {args.repeats}")
        print(result.table())
        return
    print(f"recall accuracy after {args.steps} steps on {device} (chance {1 / 8:.3f})")
    print("seed  kind".ljust(18) + "".join(f"k={k}".rjust(9) for k in args.distances))
    for seed in args.seeds:
        recall_result = recall_experiment(args.kinds, args.distances, steps=args.steps, seed=seed, device=device)
        for kind, accs in recall_result.accuracy.items():
            print(f"{seed:<6}{kind}".ljust(18) + "".join(f"{a:9.3f}" for a in accs))


if __name__ == "__main__":
    main()

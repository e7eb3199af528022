"""Training: teacher-forcing loss, label smoothing, the paper's learning-rate schedule, a compact loop, evaluation.

Shape legend: ``B`` batch, ``T`` target length, ``V`` vocabulary size.

Teacher forcing: the decoder reads the whole reference prefix (``<bos>`` + target) at once and, thanks to the
causal mask, every position predicts its next token in parallel; the loss ignores padding positions.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from tqdm.auto import tqdm

from .decoding import greedy_decode
from .tokenization.vocab import BOS_ID, EOS_ID, PAD_ID
from .validation import check_positive, check_tensor

__all__ = [
    "sequence_loss",
    "pad_id_of",
    "paper_adam",
    "noam_lr",
    "noam_schedule",
    "History",
    "train",
    "train_step",
    "evaluate",
    "token_accuracy",
    "exact_matches",
]

# The paper trains with Adam, β1 = 0.9, β2 = 0.98, ε = 1e-9 (§5.3). The small β2 forgets old squared
# gradients faster than the default 0.999, which keeps steps stable while the learning rate warms up.
PAPER_ADAM: dict[str, Any] = dict(betas=(0.9, 0.98), eps=1e-9)


def paper_adam(parameters: Iterable[torch.nn.Parameter], lr: float) -> torch.optim.Adam:
    """Adam with the paper's settings (§5.3); ``lr`` is usually rescaled every step by :func:`noam_schedule`."""
    return torch.optim.Adam(parameters, lr=lr, **PAPER_ADAM)


def pad_id_of(model: nn.Module) -> int:
    """The padding id of a model of this library (``model.config.pad_id``), with a clear error for any other."""
    pad_id = getattr(getattr(model, "config", None), "pad_id", None)
    if not isinstance(pad_id, int):
        raise TypeError(f"model: expected a model of this library with config.pad_id, got {type(model).__name__}")
    return pad_id


def sequence_loss(logits: Tensor, targets: Tensor, pad_id: int = PAD_ID, label_smoothing: float = 0.0) -> Tensor:
    """Mean cross-entropy over the non-padding target positions.

    With ``label_smoothing = ε`` the target distribution keeps 1 - ε on the right token and spreads ε uniformly over
    the whole vocabulary, the right token included: 1 - ε + ε/V for it, ε/V for every other token (§5.4 uses
    ε = 0.1), as :func:`torch.nn.functional.cross_entropy` does.

    Shape:
        logits: (B, T, V), targets: (B, T) int64 -> scalar
    """
    check_tensor("logits", logits, ndim=3, dtype="float")
    check_tensor("targets", targets, ndim=2, dtype="int")
    if logits.shape[:2] != targets.shape:
        raise ValueError(
            f"targets: expected shape {tuple(logits.shape[:2])} to match logits, got {tuple(targets.shape)}"
        )
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing: expected a value in [0, 1), got {label_smoothing}")
    return F.cross_entropy(
        logits.flatten(0, 1).float(), targets.flatten(), ignore_index=pad_id, label_smoothing=label_smoothing
    )


def token_accuracy(logits: Tensor, targets: Tensor, pad_id: int = PAD_ID) -> tuple[int, int]:
    """(correct, counted) arg-max predictions over the non-padding positions."""
    keep = targets != pad_id
    return int(((logits.argmax(-1) == targets) & keep).sum()), int(keep.sum())


def noam_lr(step: int, d_model: int, warmup_steps: int = 4000, factor: float = 1.0) -> float:
    """The paper's schedule (§5.3): ``d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)``, linear warm-up then
    decay as 1/√step, peaking at step = warmup_steps. Steps count from 1.

    Example (the paper's base model: the rate peaks at the end of warm-up, step 4000):

    >>> round(noam_lr(4000, d_model=512), 6)
    0.000699
    >>> noam_lr(2000, 512) < noam_lr(4000, 512) > noam_lr(8000, 512)
    True
    """
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup_steps**-1.5)


def noam_schedule(
    optimizer: torch.optim.Optimizer, d_model: int, warmup_steps: int = 4000, factor: float = 1.0
) -> torch.optim.lr_scheduler.LambdaLR:
    """A scheduler setting the learning rate to :func:`noam_lr` (create the optimizer with ``lr=1.0``)."""
    check_positive("warmup_steps", warmup_steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: noam_lr(i + 1, d_model, warmup_steps, factor))


@dataclass
class History:
    """Per-step training record: loss, token accuracy, learning rate and the gradient's norm; plus wall time.

    ``grad_norm`` is the global L2 norm of all gradients *before* clipping: a step is clipped when it exceeds
    ``clip_norm`` (chapter 8 counts how often that happens)."""

    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    lr: list[float] = field(default_factory=list)
    grad_norm: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    def record(
        self, loss: Tensor, correct_counted: tuple[int, int], optimizer: torch.optim.Optimizer, norm: Tensor
    ) -> None:
        """Append one step: its loss, its token accuracy (from ``(correct, counted)``), learning rate and norm."""
        correct, counted = correct_counted
        self.loss.append(float(loss.detach()))
        self.accuracy.append(correct / max(counted, 1))
        self.lr.append(optimizer.param_groups[0]["lr"])
        self.grad_norm.append(float(norm))


def _unpack(batch) -> tuple[Tensor, Tensor, Tensor]:
    if hasattr(batch, "tgt_in"):
        return batch.src, batch.tgt_in, batch.tgt_out
    if isinstance(batch, (tuple, list)) and len(batch) == 3:
        return tuple(batch)
    raise TypeError(f"batch: expected a data.Batch or a (src, tgt_in, tgt_out) tuple, got {type(batch).__name__}")


def seq2seq_loss(model: nn.Module, batch, label_smoothing: float = 0.0) -> tuple[Tensor, Tensor, Tensor]:
    """Loss, logits and targets of one encoder-decoder batch (the default ``step_fn`` of :func:`train`)."""
    src, tgt_in, tgt_out = _unpack(batch)
    logits = model(src, tgt_in)  # (B, T, V): every position predicted in parallel
    return sequence_loss(logits, tgt_out, pad_id_of(model), label_smoothing), logits, tgt_out


def train_step(
    model: nn.Module,
    batch,
    optimizer: torch.optim.Optimizer,
    *,
    label_smoothing: float = 0.0,
    clip_norm: float | None = 1.0,
    step_fn: Callable | None = None,
    amp: bool = False,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One optimizer step on one batch: the loss, its gradients, clipped to a global norm of ``clip_norm``, one step.

    Returns ``(loss, logits, targets, grad_norm)``, ``grad_norm`` measured before clipping. ``step_fn`` is as in
    :func:`train` (default :func:`seq2seq_loss`); ``amp`` runs the forward pass under bfloat16 autocast on CUDA.
    """
    with _autocast(model, amp):
        loss, logits, targets = (step_fn or seq2seq_loss)(model, batch, label_smoothing)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    # the norm before clipping; with no limit (inf), clip_grad_norm_ only measures it
    norm = nn.utils.clip_grad_norm_(model.parameters(), math.inf if clip_norm is None else clip_norm)
    optimizer.step()
    return loss, logits, targets, norm


def train(
    model: nn.Module,
    loader: Iterable,
    *,
    epochs: int = 1,
    max_steps: int | None = None,
    lr: float = 1e-3,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    label_smoothing: float = 0.0,
    clip_norm: float | None = 1.0,
    step_fn: Callable | None = None,
    on_step: Callable[[int, nn.Module], None] | None = None,
    device: torch.device | str | None = None,
    amp: bool = True,
    progress: bool = True,
    desc: str = "training",
) -> History:
    """Train ``model`` on the batches of ``loader``; return the :class:`History`.

    Each batch makes one :func:`train_step`. ``step_fn(model, batch, label_smoothing) -> (loss, logits, targets)``
    defaults to the encoder-decoder loss (:func:`seq2seq_loss`); pass your own for other families. Batches are moved
    to ``device`` (default: where the model is). Uses Adam with the paper's betas (0.9, 0.98) unless an optimizer is
    given, and runs under bfloat16 autocast on CUDA when ``amp``.

    ``clip_norm``: the gradients are rescaled so that their global norm is at most this (``None``: never). The
    paper mentions no clipping; the book clips at 1 as a safety net for its short runs without warm-up, and
    chapter 8 measures what it changes. ``on_step(step, model)`` is called after every optimizer step (``step``
    counts from 1), e.g. to evaluate or keep a snapshot; the model is put back in training mode after it. A
    callback that draws random numbers changes the rest of the run.
    """
    device = _check_train_args(model, epochs, max_steps, clip_norm, device)
    optimizer = optimizer or paper_adam(model.parameters(), lr)
    history, start, bar = History(), time.perf_counter(), _progress_bar(loader, epochs, max_steps, progress, desc)
    model.train()
    try:
        for step, batch in enumerate(_batches(loader, epochs, max_steps, device), start=1):
            loss, logits, targets, norm = train_step(
                model, batch, optimizer, label_smoothing=label_smoothing, clip_norm=clip_norm, step_fn=step_fn, amp=amp
            )
            if scheduler is not None:
                scheduler.step()  # the learning rate of the next step (the warm-up of chapter 8)
            history.record(loss, token_accuracy(logits.detach(), targets, pad_id_of(model)), optimizer, norm)
            if on_step is not None:
                on_step(step, model)
                model.train()
            bar.update(1)
            bar.set_postfix(loss=f"{history.loss[-1]:.3f}", acc=f"{history.accuracy[-1]:.2f}")
    finally:
        bar.close()
        history.seconds = time.perf_counter() - start
        model.eval()
    return history


def _check_train_args(
    model: nn.Module, epochs: int, max_steps: int | None, clip_norm: float | None, device: torch.device | str | None
) -> torch.device:
    """Check :func:`train`'s numbers; return the device the batches go to (by default, the model's)."""
    check_positive("epochs", epochs)
    if max_steps is not None:
        check_positive("max_steps", max_steps)
    if clip_norm is not None:
        check_positive("clip_norm", clip_norm, integer=False)
    return torch.device(device) if device is not None else next(model.parameters()).device


def _batches(loader: Iterable, epochs: int, max_steps: int | None, device: torch.device) -> Iterator:
    """The batches of ``epochs`` passes over ``loader``, moved to ``device``, stopping after ``max_steps``."""
    steps = 0
    for _ in range(epochs):
        for batch in loader:
            yield batch.to(device) if hasattr(batch, "to") else [t.to(device) for t in batch]
            steps += 1
            if max_steps is not None and steps >= max_steps:
                return


def _progress_bar(loader: Iterable, epochs: int, max_steps: int | None, progress: bool, desc: str) -> tqdm:
    total = max_steps or (epochs * len(loader) if isinstance(loader, Sized) else None)
    return tqdm(total=total, desc=desc, disable=not progress, leave=True)  # a finished bar stays: the site shows it


def _autocast(model: nn.Module, amp: bool) -> torch.autocast:
    """bfloat16 autocast where the model is, when ``amp`` and the model is on CUDA (a no-op context otherwise)."""
    device_type = next(model.parameters()).device.type
    return torch.autocast(device_type, dtype=torch.bfloat16, enabled=amp and device_type == "cuda")


def exact_matches(outputs: list[list[int]], references: list[list[int]], eos_id: int) -> int:
    """How many generated ``outputs`` (without ``<bos>``), cut after their first ``<eos>``, equal their reference
    (target + ``<eos>``). Whatever follows ``<eos>`` (padding) does not count."""
    if len(outputs) != len(references):
        raise ValueError(
            f"outputs, references: expected as many outputs as references, got {len(outputs)} and {len(references)}"
        )
    return sum(
        (out[: out.index(eos_id) + 1] if eos_id in out else out) == list(ref)
        for out, ref in zip(outputs, references, strict=True)
    )


@torch.no_grad()
def evaluate(
    model: nn.Module,
    loader: Iterable,
    *,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    max_new_tokens: int | None = None,
    decode: Callable | None = None,
) -> dict[str, float]:
    """Token accuracy under teacher forcing and exact match of generated outputs (greedy by default).

    Exact match: the generated ids, up to and including ``<eos>``, equal the target + ``<eos>``.
    ``decode(model, src, max_new_tokens, bos_id, eos_id) -> ids`` replaces greedy decoding.
    """
    device = next(model.parameters()).device
    decode = decode or greedy_decode
    pad = pad_id_of(model)
    model.eval()
    correct = counted = exact = n = 0
    for batch in loader:
        src, tgt_in, tgt_out = (t.to(device) for t in _unpack(batch))
        c, k = token_accuracy(model(src, tgt_in), tgt_out, pad)
        correct, counted = correct + c, counted + k
        out = decode(model, src, max_new_tokens or tgt_out.shape[1] + 2, bos_id, eos_id)[:, 1:]  # drop <bos>
        exact += exact_matches(out.tolist(), [[t for t in ref if t != pad] for ref in tgt_out.tolist()], eos_id)
        n += len(out)
    return {"token_accuracy": correct / max(counted, 1), "exact_match": exact / max(n, 1)}

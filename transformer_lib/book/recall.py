"""Chapter 1's recall experiment: repeat the first token after ``k`` distractors, LSTM against Transformer.

:func:`recall_experiment` trains a :class:`RecallModel` per kind and distance on
:func:`transformer_lib.data.recall_task` with the same budget (:func:`train_recall`) and scores it on a fixed test
set (:func:`recall_accuracy`): briefly trained, an LSTM fails as ``k`` grows, a Transformer does not. The command
line is :mod:`transformer_lib.book.recurrent`'s ``recall``, which also re-exports every name of this module.

Shape legend: ``B`` batch, ``T`` sequence length, ``C`` model width ``d_model``, ``V`` vocabulary size.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..data import N_SPECIAL, recall_task
from ..models import EncoderOnlyModel, TransformerConfig
from ..validation import check_choice, check_positive
from .sequence_layers import RECURRENT_KINDS, hidden_states, make_sequence_layer

__all__ = [
    "RecallModel",
    "train_recall",
    "recall_accuracy",
    "RecallResult",
    "recall_experiment",
]

_TEST_SEED = 987_654_321  # recall test sets are drawn from seeds no training batch uses


class RecallModel(nn.Module):
    """Reads a sequence of ids and predicts one token from its **last** position (for the recall task).

    ``kind`` ``"rnn"``/``"lstm"``/``"gru"``: embedding, a recurrent layer, a linear layer on the final state.
    ``"transformer"``: a :class:`~transformer_lib.models.EncoderOnlyModel` (sinusoidal positions, ``d_ff = 2 ·
    d_model``, no dropout) whose per-position logits are read at the last position.

    Shape:
        ids: (B, T) int64 -> logits (B, V)
    """

    KINDS = (*RECURRENT_KINDS, "transformer")

    def __init__(
        self, kind: str, vocab_size: int, d_model: int = 32, *, n_heads: int = 4, n_layers: int = 1, max_len: int = 512
    ) -> None:
        super().__init__()
        check_choice("kind", kind, self.KINDS)
        check_positive("vocab_size", vocab_size)
        self.kind = kind
        if kind == "transformer":
            config = TransformerConfig(
                src_vocab_size=vocab_size,
                tgt_vocab_size=vocab_size,
                d_model=d_model,
                n_heads=n_heads,
                n_encoder_layers=n_layers,
                n_decoder_layers=0,
                d_ff=2 * d_model,
                dropout=0.0,
                max_len=max_len,
            )
            self.encoder = EncoderOnlyModel(config, n_outputs=vocab_size)
        else:
            self.embed = nn.Embedding(vocab_size, d_model)
            self.rnn = make_sequence_layer(kind, d_model, n_layers=n_layers)
            self.head = nn.Linear(d_model, vocab_size)

    def forward(self, ids: Tensor) -> Tensor:
        if self.kind == "transformer":
            return self.encoder(ids)[:, -1]  # (B, T, V) -> (B, V)
        return self.head(hidden_states(self.rnn, self.embed(ids))[:, -1])  # (B, T, C) -> (B, C) -> (B, V)


def train_recall(
    model: nn.Module,
    distance: int,
    *,
    n_symbols: int = 8,
    steps: int = 150,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` (ids (B, T) -> logits (B, V)) on fresh recall batches; return the loss of every step.

    Batch ``s`` is ``recall_task(batch_size, distance, seed=seed * 1_000_003 + s)``: never the test set of
    :func:`recall_accuracy`. Adam with gradient clipping at norm 1.
    """
    check_positive("steps", steps)
    check_positive("batch_size", batch_size)
    device = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for step in range(steps):
        ids, targets = recall_task(batch_size, distance, n_symbols=n_symbols, seed=seed * 1_000_003 + step)
        loss = F.cross_entropy(model(ids.to(device)), targets.to(device))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def recall_accuracy(model: nn.Module, distance: int, *, n_symbols: int = 8, n_examples: int = 500) -> float:
    """Fraction of a fixed test set (seeded apart from every training batch) whose first token is recalled."""
    device = next(model.parameters()).device
    model.eval()
    ids, targets = recall_task(n_examples, distance, n_symbols=n_symbols, seed=_TEST_SEED + distance)
    return (model(ids.to(device)).argmax(-1) == targets.to(device)).float().mean().item()


@dataclass
class RecallResult:
    """Test accuracy and training seconds per model kind, one entry per distance; ``chance = 1 / n_symbols``."""

    distances: list[int]
    accuracy: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, list[float]] = field(default_factory=dict)
    chance: float = 0.125


def recall_experiment(
    kinds: Sequence[str] = ("lstm", "transformer"),
    distances: Sequence[int] = (2, 8, 32),
    *,
    d_model: int = 32,
    n_symbols: int = 8,
    steps: int = 150,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> RecallResult:
    """Train a fresh :class:`RecallModel` per (kind, distance) with the same budget; return test accuracies.

    Each model starts from ``torch.manual_seed(seed)`` and sees the same batches, so the kinds differ only in
    architecture.
    """
    for kind in kinds:
        check_choice("kinds[i]", kind, RecallModel.KINDS)
    result = RecallResult([int(k) for k in distances], chance=1 / n_symbols)
    vocab_size = N_SPECIAL + n_symbols
    for kind in kinds:
        result.accuracy[kind], result.seconds[kind] = [], []
        for distance in result.distances:
            torch.manual_seed(seed)
            model = RecallModel(kind, vocab_size, d_model, max_len=distance + 1).to(device)
            start = time.perf_counter()
            train_recall(model, distance, n_symbols=n_symbols, steps=steps, batch_size=batch_size, lr=lr, seed=seed)
            result.seconds[kind].append(time.perf_counter() - start)
            result.accuracy[kind].append(recall_accuracy(model, distance, n_symbols=n_symbols))
    return result

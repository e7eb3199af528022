"""Offline, seeded data sets and the batching that feeds them to a model.

Nothing here downloads anything: every data set is generated from a seed, so the same seed always gives the
same data and a chapter runs identically on every machine.

* Algorithmic tasks (``copy``, ``reverse``, ``sort``) map a sequence of symbols to another; the symbols are the
  ids ``N_SPECIAL .. N_SPECIAL + n_symbols - 1``, right after the special tokens of
  :mod:`transformer_lib.tokenization`, so no tokenizer is needed.
* ``recall_task`` asks a model to recall the first symbol after ``distance`` distractors: the long-range
  dependency that an LSTM forgets and self-attention reaches in one step (Chapter 1).
* ``train_test_split`` splits pairs so that no source sentence is in both parts.
* ``collate_pairs`` / ``make_loader`` pad source and target ids into a :class:`Batch` for teacher forcing.

The rule-based toy translation corpus, English -> "Frenchy", is :mod:`transformer_lib.toy_translation`; this
module re-exports its names (``data.translate``, ``data.toy_translation_corpus``, ``data.NOUNS``, ...).

Shape legend: ``B`` batch, ``S`` source length, ``T`` target length (+1 for BOS or EOS), ``N`` examples.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import torch

from .tokenization import BOS_ID, EOS_ID, PAD_ID, pad_batch
from .toy_translation import (  # re-exported: chapters call data.translate, data.NOUNS, ...
    _ADJ as _ADJ,
)
from .toy_translation import (
    ADJECTIVES as ADJECTIVES,
)
from .toy_translation import (
    DETERMINERS as DETERMINERS,
)
from .toy_translation import (
    NOUNS as NOUNS,
)
from .toy_translation import (
    VERBS as VERBS,
)
from .toy_translation import (
    alignment as alignment,
)
from .toy_translation import (
    normalize_sentence as normalize_sentence,
)
from .toy_translation import (
    toy_translation_corpus as toy_translation_corpus,
)
from .toy_translation import (
    translate as translate,
)
from .validation import check_choice, check_positive

__all__ = [
    "N_SPECIAL",
    "TASKS",
    "TaskName",
    "make_task",
    "task_vocab_size",
    "recall_task",
    "train_test_split",
    "PairDataset",
    "Batch",
    "collate_pairs",
    "make_loader",
    "encode_pairs",
]

N_SPECIAL = 4  # ids 0..3 are PAD, BOS, EOS, UNK; task symbols start after them

TaskName = Literal["copy", "reverse", "sort"]
TASKS: tuple[TaskName, ...] = get_args(TaskName)


# ----------------------------------------------------------------------------------------------------------
# Algorithmic tasks
# ----------------------------------------------------------------------------------------------------------
def task_vocab_size(n_symbols: int) -> int:
    """Vocabulary size of an algorithmic task: the 4 special tokens plus ``n_symbols`` symbols."""
    check_positive("n_symbols", n_symbols)
    return N_SPECIAL + n_symbols


def make_task(
    name: TaskName,
    n_examples: int,
    *,
    min_len: int = 2,
    max_len: int = 10,
    n_symbols: int = 10,
    seed: int = 0,
) -> list[tuple[list[int], list[int]]]:
    """Generate ``n_examples`` (source ids, target ids) pairs of an algorithmic sequence task.

    ``copy`` returns the source unchanged, ``reverse`` reverses it, ``sort`` sorts it ascending (symbols may
    repeat). Lengths are uniform in ``[min_len, max_len]``; symbols are ids ``N_SPECIAL .. N_SPECIAL +
    n_symbols - 1``. Pairs carry no BOS/EOS: :func:`collate_pairs` adds them. Used from Chapter 5 on.
    """
    check_choice("name", name, TASKS)
    check_positive("n_examples", n_examples)
    check_positive("min_len", min_len)
    check_positive("max_len", max_len)
    check_positive("n_symbols", n_symbols)
    if min_len > max_len:
        raise ValueError(f"min_len: expected a value <= max_len ({max_len}), got {min_len}")
    rng = random.Random(seed)
    rules: dict[str, Callable[[list[int]], list[int]]] = {"copy": list, "reverse": lambda s: s[::-1], "sort": sorted}
    rule = rules[name]
    pairs = []
    for _ in range(n_examples):
        src = [N_SPECIAL + rng.randrange(n_symbols) for _ in range(rng.randint(min_len, max_len))]
        pairs.append((src, list(rule(src))))
    return pairs


def recall_task(
    n_examples: int, distance: int, *, n_symbols: int = 8, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Recall the first symbol of a sequence after ``distance`` random distractor symbols (Chapter 1).

    A recurrent model must carry the key through ``distance`` state updates, so its accuracy falls as the
    distance grows; self-attention connects the last position to the first in one step (§4 of the paper).

    Shape:
        inputs: ``(N, distance + 1)`` int64, ids in ``[N_SPECIAL, N_SPECIAL + n_symbols)``; the key comes first.
        targets: ``(N,)`` int64, equal to ``inputs[:, 0]``.
    """
    check_positive("n_examples", n_examples)
    check_positive("distance", distance)
    check_positive("n_symbols", n_symbols)
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randint(N_SPECIAL, N_SPECIAL + n_symbols, (n_examples, distance + 1), generator=generator)
    return inputs, inputs[:, 0].clone()  # (N, distance + 1), (N,)


# ----------------------------------------------------------------------------------------------------------
# Splitting
# ----------------------------------------------------------------------------------------------------------
def train_test_split(pairs: Sequence[tuple], test_fraction: float = 0.1, seed: int = 0) -> tuple[list, list]:
    """Split pairs so that no source sentence appears in both parts; each part keeps the input order.

    Distinct sources are shuffled with ``seed`` and the first ``round(test_fraction * n_sources)`` (at least
    one) go to the test part, with every pair that shares their source.
    """
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction: expected a value in (0, 1), got {test_fraction!r}")

    def key(pair):
        return tuple(pair[0]) if isinstance(pair[0], list) else pair[0]  # lists are unhashable

    sources = list(dict.fromkeys(key(p) for p in pairs))
    if len(sources) < 2:
        raise ValueError(f"pairs: expected at least 2 distinct sources to split, got {len(sources)}")
    random.Random(seed).shuffle(sources)
    n_test = min(max(1, round(test_fraction * len(sources))), len(sources) - 1)
    test_sources = set(sources[:n_test])
    train = [p for p in pairs if key(p) not in test_sources]
    test = [p for p in pairs if key(p) in test_sources]
    return train, test


# ----------------------------------------------------------------------------------------------------------
# Batching
# ----------------------------------------------------------------------------------------------------------
class PairDataset(torch.utils.data.Dataset):
    """A map-style dataset of (source ids, target ids) pairs of int lists."""

    def __init__(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> None:
        self.pairs = [(list(src), list(tgt)) for src, tgt in pairs]

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> tuple[list[int], list[int]]:
        return self.pairs[index]


@dataclass(frozen=True)
class Batch:
    """A padded batch for teacher forcing: the decoder reads ``tgt_in`` and is trained to predict ``tgt_out``.

    Shape:
        src: ``(B, S)`` int64, padded with ``pad_id``.
        tgt_in: ``(B, T)`` int64, BOS followed by the target, padded.
        tgt_out: ``(B, T)`` int64, the target followed by EOS, padded (``tgt_in`` shifted left by one).
    """

    src: torch.Tensor
    tgt_in: torch.Tensor
    tgt_out: torch.Tensor
    pad_id: int = PAD_ID

    @property
    def n_tokens(self) -> int:
        """The number of non-pad target tokens, the denominator of the per-token loss."""
        return int((self.tgt_out != self.pad_id).sum())

    def to(self, device: torch.device | str) -> Batch:
        """Return a copy with every tensor moved to ``device``."""
        return dataclasses.replace(
            self, src=self.src.to(device), tgt_in=self.tgt_in.to(device), tgt_out=self.tgt_out.to(device)
        )


def collate_pairs(
    batch: Sequence[tuple[Sequence[int], Sequence[int]]],
    pad_id: int = PAD_ID,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> Batch:
    """Pad a list of (source ids, target ids) pairs into a :class:`Batch`, adding BOS/EOS to the target."""
    if len(batch) == 0:
        raise ValueError("batch: expected at least one (src, tgt) pair, got an empty batch")
    src = pad_batch([list(s) for s, _ in batch], pad_id)  # (B, S)
    tgt_in = pad_batch([[bos_id, *t] for _, t in batch], pad_id)  # (B, T)
    tgt_out = pad_batch([[*t, eos_id] for _, t in batch], pad_id)  # (B, T)
    return Batch(src=src, tgt_in=tgt_in, tgt_out=tgt_out, pad_id=pad_id)


def make_loader(
    pairs: Sequence[tuple[Sequence[int], Sequence[int]]] | PairDataset,
    batch_size: int,
    *,
    shuffle: bool = True,
    seed: int = 0,
    pad_id: int = PAD_ID,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
) -> torch.utils.data.DataLoader:
    """A DataLoader of :class:`Batch` es; with a seeded generator the shuffle order is the same on every run."""
    check_positive("batch_size", batch_size)
    dataset = pairs if isinstance(pairs, PairDataset) else PairDataset(pairs)
    collate = functools.partial(collate_pairs, pad_id=pad_id, bos_id=bos_id, eos_id=eos_id)
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        collate_fn=collate,
        generator=torch.Generator().manual_seed(seed),
    )


def encode_pairs(pairs: Sequence[tuple[str, str]], src_tokenizer, tgt_tokenizer) -> list[tuple[list[int], list[int]]]:
    """Turn (source text, target text) pairs into id pairs with each side's tokenizer (``encode(text)``)."""
    return [(list(src_tokenizer.encode(src)), list(tgt_tokenizer.encode(tgt))) for src, tgt in pairs]

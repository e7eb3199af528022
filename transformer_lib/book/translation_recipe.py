"""Chapter 7's translation recipe: the toy English -> Frenchy model, its data, training, loading and decoding.

A recipe is a frozen dataclass of every hyper-parameter plus a seed; the same recipe gives the same model. The
checkpoint ``book/checkpoints/translation.safetensors`` was written by the command line of
:mod:`transformer_lib.book.recipes` (``python -m transformer_lib.book.recipes translation``), which also
re-exports every name of this module.

* :class:`TranslationRecipe` — an encoder-decoder trained on the toy English -> Frenchy corpus, word tokens;
  :func:`translation_data` builds its data, :func:`train_translation` trains it, :func:`load_translation` loads
  the committed checkpoint (its command, scores and training time kept as ``corpus.metadata``).
* :func:`source_ids` reads a reader's sentence as the live translator does; :func:`compare_decoding` scores the
  decoding methods of :data:`DECODING_METHODS` on the held-out pairs.
* :func:`check_recipe_fields` validates a recipe's fields (shared with :mod:`transformer_lib.book.model_families`).

Shape legend: ``B`` batch, ``S`` source length.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from .. import data
from ..checkpoints import load_checkpoint
from ..decoding import beam_search, greedy_decode, sample
from ..device import get_device, seed_everything
from ..models import Transformer, TransformerConfig
from ..tokenization import BOS_ID, EOS_ID, PAD_ID, Tokenizer, WordTokenizer
from ..training import History, evaluate, exact_matches, noam_schedule, paper_adam, train
from ..validation import check_choice, check_positive

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "check_recipe_fields",
    "TranslationRecipe",
    "TranslationData",
    "translation_data",
    "train_translation",
    "load_translation",
    "source_ids",
    "DECODING_METHODS",
    "compare_decoding",
]


def check_recipe_fields(recipe: DataclassInstance, probabilities: tuple[str, ...] = ()) -> None:
    """Numeric fields must be > 0 (``seed`` >= 0) and of their default's type; ``probabilities`` in [0, 1)."""
    for f in fields(recipe):
        value = getattr(recipe, f.name)
        if f.name in probabilities:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"{f.name}: expected a number in [0, 1), got {value!r}")
        elif isinstance(f.default, (int, float)):
            check_positive(f.name, value, integer=isinstance(f.default, int), allow_zero=f.name == "seed")


@dataclass(frozen=True)
class TranslationRecipe:
    """The toy translation model of chapter 7: a small post-LN Transformer (the paper's layout, scaled down),
    Adam with the paper's warm-up schedule (peaking at ``lr``) and label smoothing 0.1 (§5.3-5.4)."""

    # Every hyper-parameter is a field of this recipe alone, though other configs share some names: a checkpoint
    # stores the whole record, and changing one recipe must never change another run's model.
    n_pairs: int = 6000
    test_fraction: float = 0.1
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.1
    max_len: int = 32
    batch_size: int = 64
    epochs: int = 12
    lr: float = 2e-3
    warmup_steps: int = 200
    label_smoothing: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        check_recipe_fields(self, probabilities=("test_fraction", "dropout", "label_smoothing"))
        if self.test_fraction == 0.0:
            raise ValueError("test_fraction: expected a value > 0 so that a held-out set exists, got 0.0")

    def config(self, src_vocab_size: int, tgt_vocab_size: int) -> TransformerConfig:
        """The model's config for the tokenizers' vocabulary sizes."""
        return TransformerConfig(
            src_vocab_size,
            tgt_vocab_size,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_encoder_layers=self.n_layers,
            n_decoder_layers=self.n_layers,
            d_ff=self.d_ff,
            dropout=self.dropout,
            max_len=self.max_len,
            pad_id=PAD_ID,
        )


@dataclass
class TranslationData:
    """The corpus of a recipe split into sentence pairs, and the word tokenizers of each side."""

    train: list[tuple[str, str]]
    test: list[tuple[str, str]]
    src_tokenizer: Tokenizer
    tgt_tokenizer: Tokenizer
    metadata: dict = field(default_factory=dict)  # a loaded checkpoint's command, scores and training time

    def loader(
        self, split: str = "train", batch_size: int = 64, shuffle: bool | None = None, seed: int = 0
    ) -> torch.utils.data.DataLoader:
        """Batches (:class:`~transformer_lib.data.Batch`) of the ``"train"`` or ``"test"`` pairs as ids."""
        check_choice("split", split, ("train", "test"))
        ids = data.encode_pairs(getattr(self, split), self.src_tokenizer, self.tgt_tokenizer)
        return data.make_loader(ids, batch_size, shuffle=split == "train" if shuffle is None else shuffle, seed=seed)


def translation_data(recipe: TranslationRecipe = TranslationRecipe()) -> TranslationData:
    """Generate the recipe's corpus, split it (no source sentence in both parts) and train the tokenizers on the
    training part only."""
    pairs = data.toy_translation_corpus(recipe.n_pairs, seed=recipe.seed)
    train_pairs, test_pairs = data.train_test_split(pairs, recipe.test_fraction, seed=recipe.seed)
    return TranslationData(
        train_pairs,
        test_pairs,
        WordTokenizer.train([s for s, _ in train_pairs]),
        WordTokenizer.train([t for _, t in train_pairs]),
    )


def train_translation(
    recipe: TranslationRecipe = TranslationRecipe(), *, device: torch.device | str | None = None, progress: bool = True
) -> tuple[Transformer, TranslationData, History, dict[str, float]]:
    """Train the recipe's model; return it (eval mode), its data, the training history and held-out greedy scores
    (``token_accuracy``, ``exact_match``)."""
    seed_everything(recipe.seed)
    device = device or get_device()
    corpus = translation_data(recipe)
    model = Transformer(recipe.config(corpus.src_tokenizer.vocab_size, corpus.tgt_tokenizer.vocab_size)).to(device)
    optimizer = paper_adam(model.parameters(), lr=1.0)
    # the paper's schedule (§5.3) times a factor that makes its peak, at step warmup_steps, equal to recipe.lr
    factor = recipe.lr * (recipe.d_model * recipe.warmup_steps) ** 0.5
    scheduler = noam_schedule(optimizer, recipe.d_model, recipe.warmup_steps, factor)
    history = train(
        model,
        corpus.loader("train", recipe.batch_size, seed=recipe.seed),
        epochs=recipe.epochs,
        optimizer=optimizer,
        scheduler=scheduler,
        label_smoothing=recipe.label_smoothing,
        progress=progress,
        desc="translation",
    )
    scores = evaluate(model, corpus.loader("test", 256), bos_id=BOS_ID, eos_id=EOS_ID)
    return model, corpus, history, scores


def load_translation(path: str | Path, device: torch.device | str | None = None) -> tuple[Transformer, TranslationData]:
    """Load a checkpoint written by the ``translation`` command, with its tokenizers and held-out pairs.

    The tokenizers come from the checkpoint; the sentence pairs are regenerated from the stored recipe.
    """
    model, extra = load_checkpoint(path, device, with_extra=True)
    if not isinstance(model, Transformer) or "recipe" not in extra:
        raise ValueError(f"path: {path} is not a translation checkpoint written by transformer_lib.book.recipes")
    corpus = translation_data(TranslationRecipe(**extra["recipe"]))
    corpus.src_tokenizer = Tokenizer.from_dict(extra["src_tokenizer"])
    corpus.tgt_tokenizer = Tokenizer.from_dict(extra["tgt_tokenizer"])
    corpus.metadata = extra
    return model, corpus


def source_ids(corpus: TranslationData, text: str, device: torch.device | str | None = None) -> Tensor:
    """A reader's English ``text`` as the translator's input ids, shape (1, S), read as the live translator reads it.

    The text is first put in the task's form by :func:`~transformer_lib.data.normalize_sentence` (lower case,
    punctuation dropped, single spaces), the rule the browser page applies too, so both feed the model the same ids.
    Words outside the vocabulary become ``<unk>``.
    """
    ids = corpus.src_tokenizer.encode(data.normalize_sentence(text))
    if not ids:
        raise ValueError(f"text: expected at least one word after normalize_sentence, got {text!r}")
    return torch.tensor([ids], device=device)  # (1, S)


# Decoding methods compared in chapter 7: name -> (function, options).
DECODING_METHODS: dict[str, tuple[str, dict]] = {
    "greedy": ("greedy", {}),
    "beam (k=2, α=0.6)": ("beam", dict(beam_size=2, length_penalty=0.6)),
    "beam (k=4, α=0.6)": ("beam", dict(beam_size=4, length_penalty=0.6)),
    "beam (k=4, α=0)": ("beam", dict(beam_size=4, length_penalty=0.0)),
    "sampling (T=0.5)": ("sample", dict(temperature=0.5)),
    "sampling (T=1)": ("sample", dict(temperature=1.0)),
    "sampling (T=1.5)": ("sample", dict(temperature=1.5)),
    "top-k (k=3)": ("sample", dict(top_k=3)),
    "top-p (p=0.9)": ("sample", dict(top_p=0.9)),
}


@torch.no_grad()
def compare_decoding(
    model: Transformer,
    corpus: TranslationData,
    methods: dict[str, tuple[str, dict]] | None = None,
    *,
    limit: int | None = None,
    max_new_tokens: int = 20,
    seed: int = 0,
) -> dict[str, float]:
    """Held-out exact match of each decoding method on the first ``limit`` test pairs (all when None).

    ``methods`` maps a display name to ``("greedy" | "beam" | "sample", options)`` where the options go to
    :func:`~transformer_lib.decoding.beam_search` or :func:`~transformer_lib.decoding.sample`
    (default :data:`DECODING_METHODS`). Sampling uses a generator seeded with ``seed`` for each method.
    """
    methods = DECODING_METHODS if methods is None else methods
    if limit is not None:
        check_positive("limit", limit)
    pairs = corpus.test[:limit]
    device = next(model.parameters()).device
    src = corpus.src_tokenizer.encode_batch([s for s, _ in pairs], add_special_tokens=False, device=device)  # (B, S)
    refs = [corpus.tgt_tokenizer.encode(t) + [EOS_ID] for _, t in pairs]
    scores = {}
    for name, (kind, options) in methods.items():
        check_choice(f"methods[{name!r}][0]", kind, ("greedy", "beam", "sample"))
        if kind == "beam":
            beams = beam_search(model, src, max_new_tokens, BOS_ID, EOS_ID, **options)
            rows = [hyps[0].tokens.tolist() for hyps in beams]  # the best hypothesis of each source
        elif kind == "sample":
            generator = torch.Generator(device).manual_seed(seed)
            rows = sample(model, src, max_new_tokens, BOS_ID, EOS_ID, generator=generator, **options).tolist()
        else:
            rows = greedy_decode(model, src, max_new_tokens, BOS_ID, EOS_ID).tolist()
        scores[name] = exact_matches([row[1:] for row in rows], refs, EOS_ID) / len(refs)  # row[1:]: no <bos>
    return scores

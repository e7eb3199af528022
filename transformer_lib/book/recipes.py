"""Named training recipes that produce the book's trained models (chapter 7), runnable from the command line.

A recipe is a frozen dataclass of every hyper-parameter plus a seed; the same recipe gives the same model. The
checkpoints under ``book/checkpoints/`` were written by::

    python -m transformer_lib.book.recipes translation --out book/checkpoints/translation.safetensors
    python -m transformer_lib.book.recipes families --out-dir book/checkpoints

and each records that command, its held-out scores and its training time in its metadata
(``load_checkpoint(path, with_extra=True)`` returns it; :func:`load_translation` keeps it as
``corpus.metadata``).

* :class:`TranslationRecipe` — an encoder-decoder trained on the toy English -> Frenchy corpus, word tokens.
* :class:`FamiliesRecipe` — the three families (encoder-only, decoder-only, encoder-decoder) trained on one
  fixed-length sequence task; the decoder-only model reads ``source <bos> target`` as one sequence.

Shape legend: ``B`` batch, ``L`` task length, ``S`` source length, ``T`` target length.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from .. import data
from ..checkpoints import load_checkpoint, save_checkpoint
from ..decoding import beam_search, greedy_decode, sample
from ..device import get_device, seed_everything
from ..models import DecoderOnlyModel, EncoderOnlyModel, Transformer, TransformerConfig
from ..tokenization import BOS_ID, EOS_ID, PAD_ID, Tokenizer, WordTokenizer
from ..training import History, evaluate, exact_matches, noam_schedule, pad_id_of, paper_adam, sequence_loss, train
from ..validation import check_choice, check_positive

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "TranslationRecipe",
    "TranslationData",
    "translation_data",
    "train_translation",
    "load_translation",
    "source_ids",
    "DECODING_METHODS",
    "compare_decoding",
    "FamiliesRecipe",
    "FAMILIES",
    "family_model",
    "family_step",
    "family_predict",
    "family_exact_match",
    "train_families",
    "main",
]


def _validate(recipe: DataclassInstance, probabilities: tuple[str, ...] = ()) -> None:
    """Numeric fields must be > 0 (``seed`` >= 0) and of their default's type; ``probabilities`` in [0, 1)."""
    for f in fields(recipe):
        value = getattr(recipe, f.name)
        if f.name in probabilities:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ValueError(f"{f.name}: expected a number in [0, 1), got {value!r}")
        elif isinstance(f.default, (int, float)):
            check_positive(f.name, value, integer=isinstance(f.default, int), allow_zero=f.name == "seed")


# ----------------------------------------------------------------------------------------------------------
# Translation: English -> Frenchy
# ----------------------------------------------------------------------------------------------------------
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
        _validate(self, probabilities=("test_fraction", "dropout", "label_smoothing"))
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


# ----------------------------------------------------------------------------------------------------------
# The three families on one task
# ----------------------------------------------------------------------------------------------------------
FAMILIES = ("encoder-only", "decoder-only", "encoder-decoder")
SEP_ID = BOS_ID  # the decoder-only model reads: source <bos> target


@dataclass(frozen=True)
class FamiliesRecipe:
    """One fixed-length task (every source has ``length`` symbols) that all three families can learn, and one
    small model size for all of them. Pre-LN blocks (``norm_first``) train reliably at a constant ``lr``."""

    # Fields of this recipe alone (see TranslationRecipe): the checkpoint stores the whole record.
    task: data.TaskName = "reverse"
    length: int = 8
    n_symbols: int = 10
    n_train: int = 6000
    n_test: int = 500
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    batch_size: int = 64
    steps: int = 600
    lr: float = 3e-3
    seed: int = 0

    def __post_init__(self) -> None:
        check_choice("task", self.task, data.TASKS)
        _validate(self)

    def config(self) -> TransformerConfig:
        """The config every family uses (each reads the parts it needs); pre-LN, no dropout."""
        vocab = data.task_vocab_size(self.n_symbols)
        return TransformerConfig(
            vocab,
            vocab,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_encoder_layers=self.n_layers,
            n_decoder_layers=self.n_layers,
            d_ff=self.d_ff,
            dropout=0.0,
            max_len=2 * self.length + 2,
            norm_first=True,
        )

    def pairs(self, split: str) -> tuple[Tensor, Tensor]:
        """Sources and targets of the ``"train"`` or ``"test"`` split (different seeds). Shape: (N, L), (N, L)."""
        check_choice("split", split, ("train", "test"))
        n, seed = (self.n_train, self.seed) if split == "train" else (self.n_test, self.seed + 1)
        pairs = data.make_task(
            self.task, n, min_len=self.length, max_len=self.length, n_symbols=self.n_symbols, seed=seed
        )
        return torch.tensor([s for s, _ in pairs]), torch.tensor([t for _, t in pairs])  # (N, L), (N, L)


def family_model(family: str, recipe: FamiliesRecipe = FamiliesRecipe()) -> nn.Module:
    """A fresh model of ``family`` (one of :data:`FAMILIES`) at the recipe's size."""
    check_choice("family", family, FAMILIES)
    cfg = recipe.config()
    if family == "encoder-only":
        return EncoderOnlyModel(cfg, n_outputs=cfg.tgt_vocab_size)  # one output token per input position
    return DecoderOnlyModel(cfg) if family == "decoder-only" else Transformer(cfg)


StepFn = Callable[[nn.Module, tuple[Tensor, Tensor], float], tuple[Tensor, Tensor, Tensor]]


def family_step(family: str) -> StepFn:
    """The ``step_fn(model, batch, label_smoothing) -> (loss, logits, targets)`` that trains ``family`` on
    ``(src, tgt)`` batches of equal lengths with :func:`~transformer_lib.training.train`."""
    check_choice("family", family, FAMILIES)

    def step(model: nn.Module, batch, label_smoothing: float = 0.0) -> tuple[Tensor, Tensor, Tensor]:
        src, tgt = batch  # (B, L), (B, L)
        bos = torch.full_like(src[:, :1], BOS_ID)  # (B, 1)
        if family == "encoder-only":  # position i outputs target token i, reading the whole source
            logits, targets = model(src), tgt
        elif family == "decoder-only":  # next-token prediction over "source <bos> target"; loss on the target
            seq = torch.cat((src, bos, tgt), dim=1)  # (B, 2L + 1)
            logits = model(seq[:, :-1])[:, src.shape[1] :]  # (B, L, V): the predictions made from <bos> onwards
            targets = tgt
        else:  # teacher forcing: <bos> + target in, target + <eos> out
            eos = torch.full_like(src[:, :1], EOS_ID)
            logits, targets = model(src, torch.cat((bos, tgt), 1)), torch.cat((tgt, eos), 1)
        return sequence_loss(logits, targets, pad_id_of(model), label_smoothing), logits, targets

    return step


@torch.no_grad()
def family_predict(family: str, model: nn.Module, src: Tensor) -> Tensor:
    """The model's (greedy) output for each source. Shape: src (B, L) -> (B, L)."""
    check_choice("family", family, FAMILIES)
    model.eval()
    L = src.shape[1]
    if family == "encoder-only":
        return model(src).argmax(-1)  # every output position in one parallel pass
    if family == "decoder-only":
        prompt = torch.cat((src, torch.full_like(src[:, :1], SEP_ID)), dim=1)  # (B, L + 1)
        return greedy_decode(model, prompt, L, BOS_ID, EOS_ID)[:, L + 1 :]
    out = greedy_decode(model, src, L + 1, BOS_ID, EOS_ID)[:, 1 : L + 1]  # drop <bos>
    return torch.nn.functional.pad(out, (0, L - out.shape[1]), value=PAD_ID)  # stopped early: pad to L


def family_exact_match(family: str, model: nn.Module, src: Tensor, tgt: Tensor) -> float:
    """Fraction of sources whose whole output equals the target."""
    device = next(model.parameters()).device
    pred = family_predict(family, model, src.to(device))
    return float((pred == tgt.to(device)).all(-1).float().mean())


def train_families(
    recipe: FamiliesRecipe = FamiliesRecipe(),
    families: tuple[str, ...] = FAMILIES,
    *,
    device: torch.device | str | None = None,
    progress: bool = True,
) -> dict[str, dict]:
    """Train one model per family on the recipe's task; return ``{family: {"model", "history", "exact_match",
    "seconds"}}`` with exact match on the held-out sources."""
    device = device or get_device()
    src, tgt = recipe.pairs("train")
    test_src, test_tgt = recipe.pairs("test")
    results = {}
    for family in families:
        seed_everything(recipe.seed)
        model = family_model(family, recipe).to(device)
        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(src, tgt),
            batch_size=recipe.batch_size,
            shuffle=True,
            generator=torch.Generator().manual_seed(recipe.seed),
        )
        epochs = -(-recipe.steps // len(loader))  # enough epochs to reach ``steps``
        history = train(
            model,
            loader,
            epochs=epochs,
            max_steps=recipe.steps,
            lr=recipe.lr,
            step_fn=family_step(family),
            progress=progress,
            desc=family,
        )
        results[family] = {
            "model": model,
            "history": history,
            "seconds": history.seconds,
            "exact_match": family_exact_match(family, model, test_src, test_tgt),
        }
    return results


# ----------------------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> None:
    """``python -m transformer_lib.book.recipes {translation,families} ...``: train and save checkpoints."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m transformer_lib.book.recipes", description=main.__doc__)
    sub = parser.add_subparsers(dest="recipe", required=True)
    p = sub.add_parser("translation", help="the toy English -> Frenchy model of chapter 7")
    p.add_argument("--out", type=Path, default=Path("book/checkpoints/translation.safetensors"))
    p.add_argument("--epochs", type=int, default=TranslationRecipe.epochs)
    p.add_argument("--n-pairs", type=int, default=TranslationRecipe.n_pairs)
    p.add_argument("--seed", type=int, default=TranslationRecipe.seed)
    p = sub.add_parser("families", help="encoder-only, decoder-only and encoder-decoder models on one task")
    p.add_argument("--out-dir", type=Path, default=Path("book/checkpoints"))
    p.add_argument("--steps", type=int, default=FamiliesRecipe.steps)
    p.add_argument("--seed", type=int, default=FamiliesRecipe.seed)
    args = parser.parse_args(argv)
    command = shlex.join(["python", "-m", "transformer_lib.book.recipes", *argv])
    if args.recipe == "translation":
        recipe = TranslationRecipe(n_pairs=args.n_pairs, epochs=args.epochs, seed=args.seed)
        model, corpus, history, scores = train_translation(recipe, device="cpu")
        extra = {
            "command": command,
            "recipe": asdict(recipe),
            "scores": scores,
            "seconds": round(history.seconds, 1),
            "decoding": compare_decoding(model, corpus),  # held-out exact match per decoding method
            "loss_every_10_steps": [round(x, 4) for x in history.loss[::10]],
            "src_tokenizer": corpus.src_tokenizer.to_dict(),
            "tgt_tokenizer": corpus.tgt_tokenizer.to_dict(),
        }
        print(f"{args.out}: held-out {scores}, {history.seconds:.0f} s")
        save_checkpoint(model, args.out, extra=extra)
        return
    families = FamiliesRecipe(steps=args.steps, seed=args.seed)
    for family, run in train_families(families, device="cpu").items():
        path = args.out_dir / f"family_{family.replace('-', '_')}.safetensors"
        extra = {
            "command": command,
            "family": family,
            "recipe": asdict(families),
            "scores": {"exact_match": run["exact_match"]},
            "seconds": round(run["seconds"], 1),
        }
        print(f"{path}: held-out exact match {run['exact_match']:.3f}, {run['seconds']:.0f} s")
        save_checkpoint(run["model"], path, extra=extra)


if __name__ == "__main__":
    torch.set_num_threads(1)  # small models: one thread is as fast, and leaves the other core free
    main()

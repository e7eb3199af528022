"""The three Transformer families of chapter 7 trained on one task: encoder-only, decoder-only, encoder-decoder.

:class:`FamiliesRecipe` fixes one fixed-length sequence task that all three can learn and one small model size
for all of them; :func:`train_families` trains one model per family. The decoder-only model reads
``source <bos> target`` as one sequence. The checkpoints ``book/checkpoints/family_*.safetensors`` were written by
the command line of :mod:`transformer_lib.book.recipes` (``python -m transformer_lib.book.recipes families``),
which also re-exports every name of this module.

Shape legend: ``B`` batch, ``L`` task length, ``N`` examples, ``V`` vocabulary size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from .. import data
from ..decoding import greedy_decode
from ..device import get_device, seed_everything
from ..models import DecoderOnlyModel, EncoderOnlyModel, Transformer, TransformerConfig
from ..tokenization import BOS_ID, EOS_ID, PAD_ID
from ..training import pad_id_of, sequence_loss, train
from ..validation import check_choice
from .translation_recipe import check_recipe_fields

__all__ = [
    "FamiliesRecipe",
    "FAMILIES",
    "family_model",
    "family_step",
    "family_predict",
    "family_exact_match",
    "train_families",
]

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
        check_recipe_fields(self)

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

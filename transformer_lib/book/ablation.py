"""Chapter 8's ablation: chapter 7's recipe with one training choice changed at a time, over several seeds, and
the paper's checkpoint averaging (§6.1) on snapshots of each run.

The numbers chapter 8 shows were written by::

    nice python -m transformer_lib.book.ablation --out book/checkpoints/ablation.json

(about 8 minutes on one CPU core: the JSON records the command, the total and each run's time). Every run trains
chapter 7's model on chapter 7's data (the corpus of ``TranslationRecipe().seed``): the ablation's runs for the first
``max_steps`` steps of the recipe's schedule, the averaging runs for all of it. A run's ``seed`` sets the initial
weights, the dropout masks and the order of the batches, so the recipe's run with seed 0 begins exactly as the run
that wrote ``book/checkpoints/translation.safetensors`` (an earlier version of the library wrote it, and the two
do not end on identical weights).

* :class:`Variant` — what one run changes: warm-up on or off, Adam's β2, gradient clipping on or off, or dropout
  where Tensor2Tensor's paper-era ``transformer_base_v1`` puts it (:func:`v1_dropout`; not in the default set).
* :func:`train_variant` — one run: training loss, gradient norms before clipping, held-out loss every
  ``eval_every`` steps, and what averaging the last snapshots gives.
* :func:`run_ablation` — every variant and seed, then the averaging runs, as one JSON-ready dict.

What reads that dict (:func:`at_step`, :func:`summary`, :func:`ablation_figure`, :func:`dumps`) lives in
:mod:`transformer_lib.book.ablation_results`; this module re-exports those names, so ``ablation.summary`` keeps
working.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from ..attention import MultiHeadAttention
from ..checkpoints import average_state_dicts
from ..device import seed_everything
from ..layers import FeedForward
from ..models import Transformer
from ..tokenization import BOS_ID, EOS_ID
from ..training import evaluate, noam_lr, noam_schedule, pad_id_of, paper_adam, sequence_loss, train
from ..validation import check_positive
from .ablation_results import ablation_figure, at_step, dumps, summary
from .translation_recipe import TranslationData, TranslationRecipe, translation_data

__all__ = [
    "Variant",
    "VARIANTS",
    "AblationConfig",
    "v1_dropout",
    "make_optimizer",
    "heldout_loss",
    "train_variant",
    "run_ablation",
    "at_step",
    "summary",
    "ablation_figure",
    "dumps",
    "main",
]


@dataclass(frozen=True)
class Variant:
    """One way to train chapter 7's recipe. The defaults are the recipe itself: the paper's warm-up schedule and
    Adam (β2 = 0.98), gradients clipped at norm 1 (ours, not the paper's), dropout at all four sites."""

    name: str
    warmup: bool = True  # False: the rate starts at its peak and decays from warmup_steps on as the recipe's does
    beta2: float = 0.98
    clip_norm: float | None = 1.0
    paper_v1_dropout: bool = False  # True: no dropout on the attention weights and the FFN hidden layer

    def __post_init__(self) -> None:
        if not 0.0 < self.beta2 < 1.0:
            raise ValueError(f"beta2: expected a value in (0, 1), got {self.beta2!r}")
        if self.clip_norm is not None:
            check_positive("clip_norm", self.clip_norm, integer=False)


VARIANTS: tuple[Variant, ...] = (
    Variant("recipe"),
    Variant("no warm-up", warmup=False),
    Variant("β2 = 0.999", beta2=0.999),
    Variant("no clipping", clip_norm=None),
    Variant("no warm-up, no clipping", warmup=False, clip_norm=None),
)


@dataclass(frozen=True)
class AblationConfig:
    """What :func:`run_ablation` runs: chapter 7's recipe, the variants, the seeds, how many steps and how often to
    evaluate; then the recipe's full schedule from each of ``averaging_seeds``, averaging its last snapshots (the
    last ``max(average_k)``, taken every ``average_every`` steps)."""

    recipe: TranslationRecipe = TranslationRecipe()
    variants: tuple[Variant, ...] = VARIANTS
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    max_steps: int | None = 300  # None: the recipe's epochs (1,020 steps)
    eval_every: int = 25
    bin_size: int = 10  # training losses and gradient norms are stored as means of this many steps
    n_first: int = 10  # the first losses of every run, stored exactly (a test re-runs them)
    averaging_seeds: tuple[int, ...] = (0, 1, 2, 3)
    average_every: int = 20
    average_k: tuple[int, ...] = (1, 5, 10)

    def __post_init__(self) -> None:
        for name in ("eval_every", "bin_size", "n_first", "average_every"):
            check_positive(name, getattr(self, name))
        if self.max_steps is not None:
            check_positive("max_steps", self.max_steps)
        if not self.seeds or not self.variants:
            raise ValueError(f"seeds, variants: expected at least one of each, got {self.seeds}, {self.variants}")
        if self.average_k and min(self.average_k) < 1:
            raise ValueError(f"average_k: expected counts >= 1, got {self.average_k}")
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"variants: expected distinct names, got {names}")


def v1_dropout(model: nn.Module) -> nn.Module:
    """Switch off dropout on the attention weights and the feed-forward hidden layer, in place, keeping it on the
    embedding sum and each sub-layer's output: the placement of Tensor2Tensor's ``transformer_base_v1``, the
    configuration of the paper's time (its ``_v2`` turns both back on at 0.1)."""
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.dropout = 0.0
        elif isinstance(module, FeedForward):
            module.dropout.p = 0.0
    return model


def make_optimizer(
    model: nn.Module, recipe: TranslationRecipe, variant: Variant
) -> tuple[torch.optim.Adam, torch.optim.lr_scheduler.LambdaLR]:
    """Adam and its learning-rate schedule for ``variant``; for the recipe itself exactly those of
    :func:`~transformer_lib.book.recipes.train_translation` (the paper's schedule rescaled to peak at ``lr``)."""
    factor = recipe.lr * (recipe.d_model * recipe.warmup_steps) ** 0.5
    if variant.beta2 == 0.98:
        optimizer = paper_adam(model.parameters(), lr=1.0)
    else:  # only β2 changes: ε stays the paper's 1e-9
        optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, variant.beta2), eps=1e-9)
    if variant.warmup:
        return optimizer, noam_schedule(optimizer, recipe.d_model, recipe.warmup_steps, factor)
    d, w = recipe.d_model, recipe.warmup_steps
    # no ramp: the peak rate from step 1, then the same 1/√step decay
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda i: noam_lr(max(i + 1, w), d, w, factor))


@torch.no_grad()
def heldout_loss(model: nn.Module, loader: Iterable) -> float:
    """Cross-entropy per target token (no label smoothing) over the batches of ``loader``, under teacher forcing."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    device, pad = next(model.parameters()).device, pad_id_of(model)
    for batch in loader:
        src, tgt_in, tgt_out = batch.src.to(device), batch.tgt_in.to(device), batch.tgt_out.to(device)
        n = int((tgt_out != pad).sum())
        total += float(sequence_loss(model(src, tgt_in), tgt_out, pad)) * n
        tokens += n
    model.train(was_training)
    return total / max(tokens, 1)


def _bins(values: Sequence[float], size: int) -> list[float]:
    return [round(float(np.mean(values[i : i + size])), 4) for i in range(0, len(values), size)]


def _average_snapshots(
    model: nn.Module, snapshots: dict[int, dict[str, Tensor]], average_k: Sequence[int], test: list
) -> dict[str, dict[str, float]]:
    """For each k of ``average_k`` (at most the number of snapshots), the held-out loss and greedy scores of the
    average of the last k snapshots (k = 1: the final weights alone); ``model`` ends on the final weights."""
    steps = sorted(snapshots)
    averaged: dict[str, dict[str, float]] = {}
    for k in average_k:
        if k <= len(steps):
            model.load_state_dict(average_state_dicts([snapshots[s] for s in steps[-k:]]))
            scores = evaluate(model, test, bos_id=BOS_ID, eos_id=EOS_ID)
            averaged[str(k)] = {"heldout_loss": round(heldout_loss(model, test), 5)} | {
                name: round(value, 5) for name, value in scores.items()
            }
    if steps:
        model.load_state_dict(snapshots[steps[-1]])  # the final weights again
    return averaged


def train_variant(
    variant: Variant,
    seed: int,
    config: AblationConfig = AblationConfig(),
    corpus: TranslationData | None = None,
    *,
    keep_snapshots: bool = False,
    progress: bool = False,
) -> dict:
    """Train the recipe's model as ``variant`` says, from ``seed``, on the CPU; return a JSON-ready record.

    The record holds the first ``n_first`` training losses, the training loss and the gradient norm (before
    clipping) in bins of ``bin_size`` steps, the held-out loss every ``eval_every`` steps, and, for each k of
    ``average_k``, the held-out loss and greedy exact match of the average of the last k snapshots (k = 1: the
    final weights alone). With ``keep_snapshots`` the snapshots themselves (step -> state dict) and the trained
    model come back under ``"_snapshots"`` and ``"_model"``.
    """
    recipe = config.recipe
    corpus = corpus or translation_data(recipe)
    seed_everything(seed)
    model = Transformer(recipe.config(corpus.src_tokenizer.vocab_size, corpus.tgt_tokenizer.vocab_size))
    if variant.paper_v1_dropout:
        v1_dropout(model)
    optimizer, scheduler = make_optimizer(model, recipe, variant)
    loader = corpus.loader("train", recipe.batch_size, seed=seed)
    total = config.max_steps or recipe.epochs * len(loader)
    test = list(corpus.loader("test", 256))
    span = config.average_every * max(config.average_k, default=0)  # the steps whose snapshots may be averaged
    heldout: dict[int, float] = {}
    snapshots: dict[int, dict[str, Tensor]] = {}

    def on_step(step: int, m: nn.Module) -> None:
        if step % config.eval_every == 0 or step == total:
            heldout[step] = round(heldout_loss(m, test), 5)
        if (total - step) % config.average_every == 0 and total - step < span:
            snapshots[step] = {k: v.detach().clone() for k, v in m.state_dict().items()}

    history = train(
        model,
        loader,
        epochs=-(-total // len(loader)),
        max_steps=total,
        optimizer=optimizer,
        scheduler=scheduler,
        label_smoothing=recipe.label_smoothing,
        clip_norm=variant.clip_norm,
        on_step=on_step,
        device="cpu",
        progress=progress,
        desc=f"{variant.name}, seed {seed}",
    )
    steps = sorted(snapshots)
    averaged = _average_snapshots(model, snapshots, config.average_k, test)
    norms = history.grad_norm
    record: dict = {
        "seed": seed,
        "steps": len(history.loss),
        "seconds": round(history.seconds, 1),
        "first_losses": [round(x, 5) for x in history.loss[: config.n_first]],
        "loss_bins": _bins(history.loss, config.bin_size),
        "grad_norm_bins": _bins(norms, config.bin_size),
        "clipped_share": round(sum(n > 1.0 for n in norms) / len(norms), 4),  # steps whose norm exceeds 1
        "max_grad_norm": round(max(norms), 3),
        "heldout_steps": sorted(heldout),
        "heldout_loss": [heldout[s] for s in sorted(heldout)],
        "averaged": averaged,
        "snapshot_steps": steps,
    }
    if keep_snapshots:
        record["_snapshots"], record["_model"] = snapshots, model
    return record


def run_ablation(config: AblationConfig = AblationConfig(), *, progress: bool = True) -> dict:
    """Every variant of ``config`` from every seed, ``max_steps`` each, then the recipe's full schedule from each
    of ``averaging_seeds``: ``{"config", "variants", "runs": {name: [record per seed]}, "averaging": [record per
    seed]}`` (records of :func:`train_variant`)."""
    corpus = translation_data(config.recipe)
    result: dict = {
        "config": {
            "recipe": asdict(config.recipe),
            "seeds": list(config.seeds),
            "max_steps": config.max_steps,
            "averaging_seeds": list(config.averaging_seeds),
            "eval_every": config.eval_every,
            "bin_size": config.bin_size,
            "average_every": config.average_every,
            "average_k": list(config.average_k),
        },
        "variants": {v.name: asdict(v) for v in config.variants},
        "runs": {},
    }
    short = replace(config, average_k=())  # averaging the snapshots of a run still far from its end tells nothing
    full = replace(config, max_steps=None, eval_every=100)
    jobs = [(v, s, short, result["runs"].setdefault(v.name, [])) for v in config.variants for s in config.seeds]
    jobs += [(config.variants[0], s, full, result.setdefault("averaging", [])) for s in config.averaging_seeds]
    for variant, seed, run_config, records in jobs:
        record = train_variant(variant, seed, run_config, corpus)
        records.append(record)
        if progress:
            print(
                f"{variant.name:>24}, seed {seed}, {record['steps']} steps: held-out loss "
                f"{record['heldout_loss'][-1]:.4f}, {record['seconds']:.0f} s",
                flush=True,
            )
    return result


def main(argv: list[str] | None = None, *, config: AblationConfig | None = None) -> None:
    """``python -m transformer_lib.book.ablation --out FILE.json [--seeds N] [--max-steps N]``: run the ablation
    of chapter 8 and write its JSON. ``config`` (tests) replaces the default :class:`AblationConfig`; the
    command line's seeds and steps still apply."""
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m transformer_lib.book.ablation", description=main.__doc__)
    parser.add_argument("--out", type=Path, default=Path("book/checkpoints/ablation.json"))
    parser.add_argument("--seeds", type=int, default=len(AblationConfig.seeds), help="seeds 0, 1, ..., N - 1")
    parser.add_argument("--max-steps", type=int, default=AblationConfig.max_steps, help="steps of every run")
    args = parser.parse_args(argv)
    check_positive("--seeds", args.seeds)
    config = replace(config or AblationConfig(), seeds=tuple(range(args.seeds)), max_steps=args.max_steps)
    start = time.perf_counter()
    result = run_ablation(config)
    result["command"] = shlex.join(["python", "-m", "transformer_lib.book.ablation", *argv])
    result["seconds"] = round(time.perf_counter() - start, 1)
    result["threads"] = torch.get_num_threads()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(result))
    n_runs = sum(len(r) for r in result["runs"].values()) + len(result["averaging"])
    print(f"{args.out}: {n_runs} runs in {result['seconds']:.0f} s")


if __name__ == "__main__":
    torch.set_num_threads(1)  # small models: one thread is as fast, and leaves the other core free
    main()

"""The command line that trains the book's checkpoints from named recipes (chapter 7), and the recipes' names.

A recipe is a frozen dataclass of every hyper-parameter plus a seed; the same recipe gives the same model. The
checkpoints under ``book/checkpoints/`` were written by::

    python -m transformer_lib.book.recipes translation --out book/checkpoints/translation.safetensors
    python -m transformer_lib.book.recipes families --out-dir book/checkpoints

and each records that command, its held-out scores and its training time in its metadata
(``load_checkpoint(path, with_extra=True)`` returns it; :func:`load_translation` keeps it as
``corpus.metadata``).

The recipes live in their own modules; this one re-exports their names, so ``recipes.load_translation`` and
``recipes.FamiliesRecipe`` keep working:

* :mod:`transformer_lib.book.translation_recipe` — :class:`TranslationRecipe`, an encoder-decoder trained on the
  toy English -> Frenchy corpus, word tokens, and the comparison of decoding methods on it.
* :mod:`transformer_lib.book.model_families` — :class:`FamiliesRecipe`, the three families (encoder-only,
  decoder-only, encoder-decoder) trained on one fixed-length sequence task.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import asdict
from pathlib import Path

import torch

from ..checkpoints import save_checkpoint
from .model_families import (
    FAMILIES,
    FamiliesRecipe,
    family_exact_match,
    family_model,
    family_predict,
    family_step,
    train_families,
)
from .translation_recipe import (
    DECODING_METHODS,
    TranslationData,
    TranslationRecipe,
    compare_decoding,
    load_translation,
    source_ids,
    train_translation,
    translation_data,
)

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

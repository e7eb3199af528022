"""Tests of transformer_lib.book.recipes: the recipes run, validate their arguments, and the shipped checkpoints are the
models the book says they are (they load and score on held-out data)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import transformer_lib as tl
from transformer_lib import data
from transformer_lib.book import recipes
from transformer_lib.tokenization import BOS_ID, EOS_ID

CHECKPOINTS = Path(__file__).resolve().parents[1] / "book" / "checkpoints"
TINY_TRANSLATION = recipes.TranslationRecipe(
    n_pairs=120, d_model=16, n_heads=2, n_layers=1, d_ff=32, batch_size=32, epochs=1, warmup_steps=2
)
TINY_FAMILIES = recipes.FamiliesRecipe(
    length=4, n_symbols=5, n_train=64, n_test=16, d_model=16, n_heads=2, n_layers=1, d_ff=32, batch_size=16, steps=3
)


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


# --------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(d_model=0), "d_model"),
        (dict(epochs=1.5), "epochs"),
        (dict(dropout=1.0), "dropout"),
        (dict(test_fraction=0.0), "test_fraction"),
        (dict(lr=-1.0), "lr"),
        (dict(seed=-1), "seed"),
    ],
)
def test_translation_recipe_rejects_bad_values(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        recipes.TranslationRecipe(**kwargs)


@pytest.mark.parametrize(
    "kwargs, message", [(dict(task="shuffle"), "task"), (dict(length=0), "length"), (dict(steps=2.0), "steps")]
)
def test_families_recipe_rejects_bad_values(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        recipes.FamiliesRecipe(**kwargs)


def test_family_functions_reject_unknown_family():
    for fn in (recipes.family_model, recipes.family_step):
        with pytest.raises(ValueError, match="family"):
            fn("rnn")


# --------------------------------------------------------------------------------------------- translation
def test_translation_data_is_seeded_and_split_by_source():
    a, b = recipes.translation_data(TINY_TRANSLATION), recipes.translation_data(TINY_TRANSLATION)
    assert a.train == b.train and a.test == b.test
    assert len(a.train) + len(a.test) == 120 and len(a.test) == 12
    assert not {s for s, _ in a.train} & {s for s, _ in a.test}
    batch = next(iter(a.loader("test", 4)))
    assert batch.tgt_in[:, 0].tolist() == [BOS_ID] * 4  # teacher forcing input starts with <bos>


def test_tiny_translation_recipe_trains_and_round_trips(tmp_path):
    model, corpus, history, scores = recipes.train_translation(TINY_TRANSLATION, device="cpu", progress=False)
    assert len(history.loss) == 4  # ceil(108 / 32) steps in one epoch
    assert set(scores) == {"token_accuracy", "exact_match"} and 0.0 <= scores["exact_match"] <= 1.0
    extra = {
        "recipe": TINY_TRANSLATION.__dict__,
        "src_tokenizer": corpus.src_tokenizer.to_dict(),
        "tgt_tokenizer": corpus.tgt_tokenizer.to_dict(),
    }
    path = tl.save_checkpoint(model, tmp_path / "tiny.safetensors", extra=extra)
    loaded, corpus2 = recipes.load_translation(path)
    assert corpus2.test == corpus.test
    src = corpus.src_tokenizer.encode_batch([s for s, _ in corpus.test], add_special_tokens=False)
    tgt = torch.full((len(src), 1), BOS_ID)
    assert torch.allclose(loaded(src, tgt), model(src, tgt), atol=1e-6)


def test_load_translation_rejects_other_checkpoints(tmp_path):
    path = tl.save_checkpoint(recipes.family_model("encoder-decoder", TINY_FAMILIES), tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="not a translation checkpoint"):
        recipes.load_translation(path)


# --------------------------------------------------------------------------------------------- families
def test_family_step_targets_and_shapes():
    src, tgt = TINY_FAMILIES.pairs("train")
    assert src.shape == tgt.shape == (64, 4)
    assert torch.equal(tgt, src.flip(1))  # the task: reverse
    for family in recipes.FAMILIES:
        model = recipes.family_model(family, TINY_FAMILIES)
        loss, logits, targets = recipes.family_step(family)(model, (src[:8], tgt[:8]))
        extra = 1 if family == "encoder-decoder" else 0  # + <eos>
        assert logits.shape == (8, 4 + extra, TINY_FAMILIES.config().tgt_vocab_size)
        assert torch.equal(targets[:, :4], tgt[:8])
        assert loss.ndim == 0 and loss > 0


def test_decoder_only_step_never_sees_the_target_it_predicts():
    """Changing target token j must not change the logits that predict tokens 0..j (the causal mask)."""
    src, tgt = TINY_FAMILIES.pairs("train")
    model = recipes.family_model("decoder-only", TINY_FAMILIES).eval()
    step = recipes.family_step("decoder-only")
    _, logits, _ = step(model, (src[:2], tgt[:2]))
    changed = tgt[:2].clone()
    changed[:, 2] = data.N_SPECIAL + (changed[:, 2] - data.N_SPECIAL + 1) % TINY_FAMILIES.n_symbols
    _, logits2, _ = step(model, (src[:2], changed))
    assert torch.allclose(logits[:, :3], logits2[:, :3], atol=1e-6)
    assert not torch.allclose(logits[:, 3], logits2[:, 3])


def test_family_predict_shapes_and_exact_match_of_an_oracle():
    src, tgt = TINY_FAMILIES.pairs("test")
    results = recipes.train_families(TINY_FAMILIES, device="cpu", progress=False)
    assert set(results) == set(recipes.FAMILIES)
    for family, run in results.items():
        assert len(run["history"].loss) == 3
        assert recipes.family_predict(family, run["model"], src).shape == src.shape
        assert 0.0 <= run["exact_match"] <= 1.0

    class Oracle(torch.nn.Module):  # an "encoder-only model" that reverses perfectly
        config = TINY_FAMILIES.config()

        def forward(self, ids):
            return torch.nn.functional.one_hot(ids.flip(1), self.config.tgt_vocab_size).float()

    oracle = Oracle()
    oracle.dummy = torch.nn.Parameter(torch.zeros(1))
    assert recipes.family_exact_match("encoder-only", oracle, src, tgt) == 1.0
    assert recipes.family_exact_match("encoder-only", oracle, src, src) < 1.0


def test_cli_writes_a_checkpoint_with_its_command_and_scores(tmp_path):
    out = tmp_path / "t.safetensors"
    recipes.main(["translation", "--out", str(out), "--n-pairs", "120", "--epochs", "1"])
    model, corpus = recipes.load_translation(out)
    extra = corpus.metadata
    assert (
        extra["command"] == f"python -m transformer_lib.book.recipes translation --out {out} --n-pairs 120 --epochs 1"
    )
    assert extra["recipe"]["n_pairs"] == 120 and len(corpus.test) == 12
    assert set(extra["scores"]) == {"token_accuracy", "exact_match"} and extra["seconds"] >= 0


# --------------------------------------------------------------------------------------------- shipped models
def test_shipped_translation_checkpoint_scores_on_held_out_pairs():
    model, corpus = recipes.load_translation(CHECKPOINTS / "translation.safetensors")
    extra = corpus.metadata
    assert extra["command"].startswith("python -m transformer_lib.book.recipes translation")
    assert extra["seconds"] < 300  # the recipe trains in under 5 minutes on a 2-core CPU
    scores = tl.evaluate(model, corpus.loader("test", 256), bos_id=BOS_ID, eos_id=EOS_ID)
    assert scores["exact_match"] >= 0.95
    assert scores["exact_match"] == pytest.approx(extra["scores"]["exact_match"], abs=1e-9)
    regenerated = recipes.translation_data(recipes.TranslationRecipe(**extra["recipe"]))  # data.py unchanged?
    assert regenerated.tgt_tokenizer.to_dict() == corpus.tgt_tokenizer.to_dict()
    assert regenerated.src_tokenizer.to_dict() == corpus.src_tokenizer.to_dict()


def test_compare_decoding_on_the_shipped_model():
    model, corpus = recipes.load_translation(CHECKPOINTS / "translation.safetensors")
    scores = recipes.compare_decoding(model, corpus, limit=30)
    assert list(scores) == list(recipes.DECODING_METHODS)
    assert scores["greedy"] >= 0.9 and scores["beam (k=4, α=0.6)"] >= 0.9
    assert scores["sampling (T=1.5)"] < scores["greedy"]  # hot sampling spoils sentences
    again = recipes.compare_decoding(model, corpus, {"hot": ("sample", dict(temperature=1.5))}, limit=30)
    assert again == {"hot": scores["sampling (T=1.5)"]}  # seeded: the same draws every time
    with pytest.raises(ValueError, match="methods"):
        recipes.compare_decoding(model, corpus, {"x": ("magic", {})}, limit=2)


@pytest.mark.parametrize("family", recipes.FAMILIES)
def test_shipped_family_checkpoints_solve_the_task(family):
    model, extra = tl.load_checkpoint(CHECKPOINTS / f"family_{family.replace('-', '_')}.safetensors", with_extra=True)
    recipe = recipes.FamiliesRecipe(**extra["recipe"])
    src, tgt = recipe.pairs("test")
    assert recipes.family_exact_match(family, model, src, tgt) >= 0.95


def test_shipped_checkpoints_are_small():
    sizes = {p.name: p.stat().st_size for p in CHECKPOINTS.glob("*.safetensors")}
    assert "translation.safetensors" in sizes and sum(sizes.values()) < 2_000_000

"""Tests of transformer_lib.book.ablation: each variant changes only what its name says, the recipe variant is
chapter 7's training exactly, averaging is measured on the run's own snapshots, the command writes what chapter 8
reads, and the committed JSON is what the code computes today."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import transformer_lib as tl
from transformer_lib.book import ablation, recipes

ROOT = Path(__file__).resolve().parents[1]
TINY = recipes.TranslationRecipe(
    n_pairs=200, d_model=16, n_heads=2, n_layers=1, d_ff=32, batch_size=32, epochs=2, warmup_steps=4
)
TINY_CONFIG = ablation.AblationConfig(
    recipe=TINY, seeds=(0, 1), max_steps=None, eval_every=3, average_every=2, average_k=(1, 2, 3), n_first=4
)
COMMITTED = ROOT / "book" / "checkpoints" / "ablation.json"


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def corpus():
    return recipes.translation_data(TINY)


def _model(corpus) -> tl.Transformer:
    return tl.Transformer(TINY.config(corpus.src_tokenizer.vocab_size, corpus.tgt_tokenizer.vocab_size))


# --------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: ablation.Variant("x", beta2=1.0), "beta2"),
        (lambda: ablation.Variant("x", clip_norm=0.0), "clip_norm"),
        (lambda: ablation.AblationConfig(seeds=()), "seeds"),
        (lambda: ablation.AblationConfig(eval_every=0), "eval_every"),
        (lambda: ablation.AblationConfig(average_k=(0,)), "average_k"),
        (lambda: ablation.AblationConfig(max_steps=0), "max_steps"),
        (lambda: ablation.AblationConfig(variants=(ablation.Variant("a"), ablation.Variant("a"))), "distinct"),
    ],
)
def test_bad_settings_are_named(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ------------------------------------------------------------------------------------------------ variants
def test_recipe_variant_trains_exactly_like_chapter_7(corpus):
    """Same seed, same data: the recipe variant's losses are those of recipes.train_translation."""
    _, _, history, _ = recipes.train_translation(TINY, device="cpu", progress=False)
    record = ablation.train_variant(ablation.VARIANTS[0], TINY.seed, TINY_CONFIG, corpus)
    assert record["steps"] == len(history.loss)
    assert record["first_losses"] == [round(x, 5) for x in history.loss[:4]]
    assert record["loss_bins"] == ablation._bins(history.loss, TINY_CONFIG.bin_size)


def test_schedules_and_optimizers_change_only_what_the_variant_names(corpus):
    model = _model(corpus)
    runs = {}
    for variant in (
        ablation.Variant("recipe"),
        ablation.Variant("flat", warmup=False),
        ablation.Variant("b", beta2=0.999),
    ):
        optimizer, scheduler = ablation.make_optimizer(model, TINY, variant)
        lrs = []
        for _ in range(3 * TINY.warmup_steps):
            lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        runs[variant.name] = (optimizer.param_groups[0]["betas"], optimizer.param_groups[0]["eps"], lrs)
    w = TINY.warmup_steps
    assert runs["recipe"][:2] == runs["flat"][:2] == ((0.9, 0.98), 1e-9) and runs["b"][:2] == ((0.9, 0.999), 1e-9)
    recipe, flat = runs["recipe"][2], runs["flat"][2]
    assert max(recipe) == pytest.approx(TINY.lr) and recipe[0] < TINY.lr / 2  # warm-up: a ramp up to lr
    assert flat[:w] == pytest.approx([TINY.lr] * w)  # no warm-up: the peak from the first step
    assert flat[w - 1 :] == pytest.approx(recipe[w - 1 :])  # then the same decay
    assert runs["b"][2] == recipe


def test_v1_dropout_keeps_only_the_papers_two_sites(corpus):
    model = ablation.v1_dropout(_model(corpus))
    attn = [m.dropout for m in model.modules() if isinstance(m, tl.MultiHeadAttention)]
    ff = [m.dropout.p for m in model.modules() if isinstance(m, tl.FeedForward)]
    kept = [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout) and m.p > 0]
    assert attn and set(attn) == {0.0} and ff and set(ff) == {0.0}
    # embeddings (2) and the residual of every sub-layer (2 in the encoder layer, 3 in the decoder layer)
    assert kept == [TINY.dropout] * 7


def test_train_variant_records_evaluations_snapshots_and_averages(corpus):
    record = ablation.train_variant(
        ablation.Variant("free", clip_norm=None), 1, TINY_CONFIG, corpus, keep_snapshots=True
    )
    steps = record["steps"]
    assert record["heldout_steps"] == [*range(3, steps + 1, 3)] + ([steps] if steps % 3 else [])
    assert record["snapshot_steps"] == [steps - 4, steps - 2, steps] == sorted(record["_snapshots"])
    assert record["averaged"]["1"]["heldout_loss"] == record["heldout_loss"][-1]  # the last snapshot alone
    assert set(record["averaged"]) == {"1", "2", "3"}
    assert 0.0 <= record["clipped_share"] <= 1.0 and len(record["grad_norm_bins"]) == len(record["loss_bins"])
    model = _model(corpus)
    model.load_state_dict(tl.average_state_dicts(list(record["_snapshots"].values())))
    assert ablation.heldout_loss(model, corpus.loader("test", 64)) == pytest.approx(
        record["averaged"]["3"]["heldout_loss"], abs=1e-5
    )
    short = ablation.train_variant(ablation.VARIANTS[0], 1, replace(TINY_CONFIG, average_k=(), max_steps=5), corpus)
    assert short["averaged"] == {} and short["snapshot_steps"] == [] and short["steps"] == 5


def test_heldout_loss_is_the_token_weighted_cross_entropy(corpus):
    model = _model(corpus).eval()
    batches = list(corpus.loader("test", 7))
    with torch.no_grad():
        logits = torch.cat([model(b.src, b.tgt_in).flatten(0, 1) for b in batches])
    targets = torch.cat([b.tgt_out.flatten() for b in batches])
    want = torch.nn.functional.cross_entropy(logits, targets, ignore_index=model.config.pad_id)
    assert ablation.heldout_loss(model.train(), batches) == pytest.approx(float(want), rel=1e-5)
    assert model.training  # the mode it was called in comes back


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory):
    """The command, run on the tiny recipe: 2 variants x 2 seeds of 6 steps, and one full run to average."""
    out = tmp_path_factory.mktemp("ablation") / "a.json"
    argv = ["--out", str(out), "--seeds", "2", "--max-steps", "6"]
    config = ablation.AblationConfig(
        recipe=TINY,
        variants=ablation.VARIANTS[:2],
        eval_every=3,
        averaging_seeds=(0,),
        average_every=2,
        average_k=(1, 2, 5),
    )
    ablation.main(argv, config=config)
    return argv, out


def test_main_writes_what_chapter_8_reads(tiny_result):
    argv, out = tiny_result
    result = json.loads(out.read_text())
    assert result["command"] == "python -m transformer_lib.book.ablation " + " ".join(argv)
    assert list(result["runs"]) == ["recipe", "no warm-up"] and all(len(r) == 2 for r in result["runs"].values())
    assert all(r["steps"] == 6 and r["averaged"] == {} for runs in result["runs"].values() for r in runs)
    (full,) = result["averaging"]  # the whole schedule (2 epochs of 6 batches), its last snapshots averaged
    assert (
        full["steps"] == 12 and set(full["averaged"]) == {"1", "2", "5"} and full["snapshot_steps"] == [4, 6, 8, 10, 12]
    )
    # the full run starts as the short run of the same seed
    assert full["first_losses"][:6] == result["runs"]["recipe"][0]["first_losses"][:6]
    assert all(len(line) < 2000 for line in out.read_text().splitlines())  # one line per list of numbers


def test_at_step_and_summary_read_the_seeds(tiny_result):
    result = json.loads(tiny_result[1].read_text())
    values = ablation.at_step(result, "no warm-up", 6)
    assert values.tolist() == [r["heldout_loss"][-1] for r in result["runs"]["no warm-up"]]
    assert ablation.at_step(result, "recipe", 6, "loss_bins").tolist() == [
        r["loss_bins"][0] for r in result["runs"]["recipe"]
    ]
    rows = ablation.summary(result, [3, 6])
    assert [r["variant"] for r in rows] == ["recipe", "no warm-up"] and rows[0]["separated"] is False
    diff = values - ablation.at_step(result, "recipe", 6)
    assert rows[1]["separated"] == bool((diff > 0).all() or (diff < 0).all())
    assert rows[1]["step 6"] == f"{values.mean():.3f} ± {values.std(ddof=1):.3f}"
    with pytest.raises(ValueError, match="step: expected an evaluation step"):
        ablation.at_step(result, "recipe", 4)
    with pytest.raises(KeyError, match="variant"):
        ablation.at_step(result, "magic", 6)
    with pytest.raises(ValueError, match="key"):
        ablation.at_step(result, "recipe", 6, "accuracy")


def test_summary_separates_only_when_every_seed_agrees():
    """Three seeds: "better" is lower than the recipe in every seed, "mixed" in two of three (not separated)."""

    def runs(*losses):
        return [{"heldout_steps": [10], "heldout_loss": [x]} for x in losses]

    result = {"runs": {"recipe": runs(1.0, 2.0, 3.0), "better": runs(0.9, 1.8, 2.9), "mixed": runs(0.9, 2.1, 2.5)}}
    rows = {row["variant"]: row for row in ablation.summary(result, [10])}
    assert [rows[n]["separated"] for n in ("recipe", "better", "mixed")] == [False, True, False]
    assert rows["mixed"]["vs recipe, per seed"] == "-0.500 … +0.100" and rows["recipe"]["vs recipe, per seed"] == ""
    assert rows["better"]["step 10"] == "1.867 ± 1.002"


def test_figure_draws_every_variant_in_three_panels(tiny_result):
    fig = ablation.ablation_figure(json.loads(tiny_result[1].read_text()))
    assert len(fig.data) == 2 * 3 * 3  # variants x panels x (upper band, lower band, mean)
    assert [t.name for t in fig.data if t.showlegend] == ["recipe", "no warm-up"]


# ----------------------------------------------------------------------------------- the committed numbers
def test_committed_ablation_matches_the_code():
    """The committed JSON is what the code gives today: the first losses of two variants' seed-1 runs, re-run
    here; and its full-length runs follow the schedule of chapter 7's checkpoint from the same first step."""
    result = json.loads(COMMITTED.read_text())
    assert result["command"].startswith("python -m transformer_lib.book.ablation")
    config = ablation.AblationConfig(max_steps=5, average_k=())
    corpus = recipes.translation_data(config.recipe)
    for variant in (ablation.VARIANTS[1], ablation.VARIANTS[3]):
        record = ablation.train_variant(variant, 1, config, corpus)
        assert record["first_losses"] == pytest.approx(result["runs"][variant.name][1]["first_losses"][:5], abs=2e-4)
    _, extra = tl.load_checkpoint(ROOT / "book" / "checkpoints" / "translation.safetensors", with_extra=True)
    final = result["averaging"][0]
    assert final["seed"] == extra["recipe"]["seed"] and len(extra["loss_every_10_steps"]) == -(-final["steps"] // 10)
    assert final["first_losses"][0] == pytest.approx(extra["loss_every_10_steps"][0], abs=1e-3)

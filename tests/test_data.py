"""Tests for transformer_lib.data: seeded tasks, the toy translation grammar, splitting and batching."""

from __future__ import annotations

import pytest
import torch

from transformer_lib.data import (
    N_SPECIAL,
    Batch,
    PairDataset,
    alignment,
    collate_pairs,
    encode_pairs,
    make_loader,
    make_task,
    normalize_sentence,
    recall_task,
    task_vocab_size,
    toy_translation_corpus,
    train_test_split,
    translate,
)
from transformer_lib.tokenization import BOS_ID, EOS_ID, PAD_ID, UNK_ID, WordTokenizer


# ---------------------------------------------------------------------------------------------- algorithmic tasks
@pytest.mark.parametrize("name, rule", [("copy", list), ("reverse", lambda s: s[::-1]), ("sort", sorted)])
def test_task_targets_follow_the_rule_and_stay_in_range(name, rule):
    pairs = make_task(name, 200, min_len=3, max_len=7, n_symbols=5, seed=1)
    assert len(pairs) == 200
    for src, tgt in pairs:
        assert tgt == list(rule(src))
        assert 3 <= len(src) <= 7
        assert all(N_SPECIAL <= i < task_vocab_size(5) for i in src)
    assert {len(s) for s, _ in pairs} == set(range(3, 8))  # every length is drawn
    assert {i for s, _ in pairs for i in s} == set(range(N_SPECIAL, N_SPECIAL + 5))  # every symbol is drawn


def test_task_vocab_size_adds_the_specials():
    assert task_vocab_size(10) == 14


def test_tasks_are_deterministic_in_the_seed():
    assert make_task("reverse", 50, seed=3) == make_task("reverse", 50, seed=3)
    assert make_task("reverse", 50, seed=3) != make_task("reverse", 50, seed=4)
    x, _ = recall_task(20, 5, seed=3)
    assert torch.equal(x, recall_task(20, 5, seed=3)[0])
    assert not torch.equal(x, recall_task(20, 5, seed=4)[0])
    assert toy_translation_corpus(30, seed=3) == toy_translation_corpus(30, seed=3)
    assert toy_translation_corpus(30, seed=3) != toy_translation_corpus(30, seed=4)


def test_recall_target_is_the_first_symbol():
    x, y = recall_task(64, 9, n_symbols=6, seed=0)
    assert x.shape == (64, 10) and y.shape == (64,)
    assert x.dtype == y.dtype == torch.int64
    assert torch.equal(y, x[:, 0])
    assert int(x.min()) >= N_SPECIAL and int(x.max()) < N_SPECIAL + 6


# ---------------------------------------------------------------------------------------------- toy translation
@pytest.mark.parametrize(
    "english, frenchy",
    [
        ("the cat sleeps", "le chat dort"),
        ("the red cat sees a small house", "le chat rouge voit une maison petite"),  # adjective after the noun
        ("the big house", None),
        ("a green car runs", "une voiture verte court"),  # feminine agreement of the adjective
        ("the black cats eat some white apples", "les chats noirs mangent des pommes blanches"),  # plural -s
        ("my old girl does not like your young horses", "ma fille vieille ne aime pas tes chevaux jeunes"),
        ("these happy mice do not wait", "ces souris heureuses ne attendent pas"),
    ],
)
def test_translate_applies_the_rules(english, frenchy):
    if frenchy is None:  # a noun phrase alone is not a sentence
        with pytest.raises(ValueError, match="sentence: expected a verb at word 3, got '<end>'"):
            translate(english)
    else:
        assert translate(english) == frenchy


@pytest.mark.parametrize(
    "bad, message",
    [
        ("cat sleeps", r"expected a determiner .* at word 0, got 'cat'"),
        ("a cats sleep", r"expected a sg noun after 'a', got 'cats'"),
        ("the cats sleeps", r"expected the base form of the verb at word 2, got 'sleeps'"),
        ("the cat does not sleeps", r"expected the base form of the verb at word 4, got 'sleeps'"),
        ("the cats does not sleep", r"expected 'do' after a pl subject, got 'does'"),
        ("the cat sleeps the dog", r"expected the end after word 2, got 'the dog'"),
    ],
)
def test_translate_rejects_sentences_outside_the_grammar(bad, message):
    with pytest.raises(ValueError, match=message):
        translate(bad)


def test_alignment_is_a_valid_non_monotonic_mapping():
    src, tgt = "the big red dog does not see my small house", "le chien grand rouge ne voit pas ma maison petite"
    links = alignment(src, tgt)
    assert links == [(0, 0), (1, 2), (2, 3), (3, 1), (4, 5), (5, 4), (5, 6), (6, 5), (7, 7), (8, 9), (9, 8)]
    assert {s for s, _ in links} == set(range(len(src.split())))  # every source word is aligned ...
    assert {t for _, t in links} == set(range(len(tgt.split())))  # ... and every target word
    targets = [t for _, t in links]
    assert targets != sorted(targets)  # the adjectives cross the noun: not monotonic
    with pytest.raises(ValueError, match="tgt: expected translate"):
        alignment(src, "le chien")


def test_corpus_pairs_are_distinct_translations_of_bounded_length():
    pairs = toy_translation_corpus(300, seed=0)
    assert len({s for s, _ in pairs}) == 300
    assert all(translate(s) == t for s, t in pairs)
    lengths = [len(s.split()) for s, _ in pairs]
    assert min(lengths) == 3 and max(lengths) <= 11
    vocab = {w for s, _ in pairs for w in s.split()}
    assert 40 <= len(vocab) <= 300  # a small, closed vocabulary
    assert any("ne" in t.split() for _, t in pairs) and any(" les " in f" {t} " for _, t in pairs)


def test_train_test_split_keeps_sources_apart():
    pairs = toy_translation_corpus(200, seed=0)
    pairs = pairs + [(pairs[0][0], "a second reference")]  # a source with two targets stays in one part
    train, test = train_test_split(pairs, test_fraction=0.2, seed=1)
    assert len(train) + len(test) == len(pairs)
    assert not {s for s, _ in train} & {s for s, _ in test}
    assert len({s for s, _ in test}) == 40
    assert train_test_split(pairs, 0.2, seed=1) == (train, test)
    assert train_test_split(pairs, 0.2, seed=2) != (train, test)
    ids = make_task("copy", 50, seed=0)  # id lists work too
    train_ids, test_ids = train_test_split(ids, 0.5)
    assert not {tuple(s) for s, _ in train_ids} & {tuple(s) for s, _ in test_ids}


# ---------------------------------------------------------------------------------------------- batching
def test_collate_adds_bos_eos_and_pads():
    batch = collate_pairs([([5, 6, 7], [8, 9]), ([5], [8, 9, 10, 11])])
    assert isinstance(batch, Batch)
    assert batch.src.tolist() == [[5, 6, 7], [5, PAD_ID, PAD_ID]]
    assert batch.tgt_in.tolist() == [[BOS_ID, 8, 9, PAD_ID, PAD_ID], [BOS_ID, 8, 9, 10, 11]]
    assert batch.tgt_out.tolist() == [[8, 9, EOS_ID, PAD_ID, PAD_ID], [8, 9, 10, 11, EOS_ID]]
    assert batch.src.dtype == batch.tgt_in.dtype == torch.int64
    assert batch.n_tokens == 3 + 5
    moved = batch.to("cpu")
    assert moved is not batch and torch.equal(moved.tgt_out, batch.tgt_out)


def test_loader_yields_seeded_batches_covering_the_data():
    pairs = make_task("reverse", 10, seed=0)
    loader = make_loader(pairs, batch_size=4, seed=5)
    batches = list(loader)
    assert [b.src.shape[0] for b in batches] == [4, 4, 2]
    order = [b.src.tolist() for b in batches]
    assert order == [b.src.tolist() for b in make_loader(pairs, batch_size=4, seed=5)]
    assert order != [b.src.tolist() for b in make_loader(pairs, batch_size=4, seed=6)]
    first = next(iter(make_loader(PairDataset(pairs), batch_size=10, shuffle=False)))
    assert first.tgt_out[0, : len(pairs[0][1])].tolist() == pairs[0][1]


def test_encode_pairs_uses_each_sides_tokenizer():
    pairs = toy_translation_corpus(50, seed=0)
    src_tok = WordTokenizer.train([s for s, _ in pairs])
    tgt_tok = WordTokenizer.train([t for _, t in pairs])
    encoded = encode_pairs(pairs, src_tok, tgt_tok)
    assert len(encoded) == 50
    for (src, tgt), (src_ids, tgt_ids) in zip(pairs, encoded, strict=True):
        assert src_tok.decode(src_ids) == src and tgt_tok.decode(tgt_ids) == tgt
        assert UNK_ID not in src_ids + tgt_ids


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: make_task("shuffle", 5), ValueError, r"name: expected one of .*'copy'.*got 'shuffle'"),
        (lambda: make_task("copy", 0), ValueError, r"n_examples: expected a value > 0, got 0"),
        (lambda: make_task("copy", 5, min_len=6, max_len=4), ValueError, r"min_len: expected a value <= max_len \(4\)"),
        (lambda: make_task("copy", 5, n_symbols=0), ValueError, r"n_symbols: expected a value > 0, got 0"),
        (lambda: make_task("copy", 2.5), TypeError, r"n_examples: expected an int, got 2.5"),
        (lambda: recall_task(5, 0), ValueError, r"distance: expected a value > 0, got 0"),
        (lambda: train_test_split([("a", "b"), ("c", "d")], 1.0), ValueError, r"test_fraction: expected .*\(0, 1\)"),
        (lambda: collate_pairs([]), ValueError, r"batch: expected at least one"),
        (lambda: make_loader([([4], [5])], batch_size=0), ValueError, r"batch_size: expected a value > 0"),
    ],
)
def test_errors_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_normalize_sentence_leaves_the_corpus_alone_and_mends_what_readers_type() -> None:
    for src, _ in toy_translation_corpus(300, seed=3):
        assert normalize_sentence(src) == src
    assert normalize_sentence("The big mouse likes this black table.") == "the big mouse likes this black table"
    assert normalize_sentence("  the\tcat,  sees...the DOG!\n") == "the cat sees the dog"
    assert normalize_sentence("?!") == ""
    with pytest.raises(TypeError, match="text"):
        normalize_sentence(None)  # type: ignore[arg-type]  # the error names the argument

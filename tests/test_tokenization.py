"""Tests for transformer_lib.tokenization: vocabularies, the three tokenizers, BPE training, batching."""

from __future__ import annotations

import json

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transformer_lib.tokenization import (
    BOS,
    BOS_ID,
    EOS,
    EOS_ID,
    PAD,
    PAD_ID,
    SPACE_MARK,
    SPECIAL_TOKENS,
    UNK,
    UNK_ID,
    BPETokenizer,
    CharTokenizer,
    Tokenizer,
    Vocab,
    WordTokenizer,
    pad_batch,
    pre_tokenize,
)

# Double spaces, a tab, newlines and punctuation, so that whitespace handling is exercised.
CORPUS = [
    "The encoder maps a sequence to vectors.\nThe decoder writes one token at a time.",
    "Attention weighs every position;  the weights sum to one!",
    "\tTokens, tokens, tokens: the model sees only ids.\n\n",
]
KINDS = {
    "char": lambda texts: CharTokenizer.train(texts),
    "word": lambda texts: WordTokenizer.train(texts),
    "bpe": lambda texts: BPETokenizer.train(texts, vocab_size=80),
}
_TRAINED = {kind: make(CORPUS) for kind, make in KINDS.items()}
# Seeded and without an example database, so every run draws the same examples.
SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@pytest.fixture(scope="module", params=sorted(KINDS))
def tokenizer(request) -> Tokenizer:
    return _TRAINED[request.param]


# ---------------------------------------------------------------------------------------------- Vocab
def test_special_tokens_have_fixed_ids(tokenizer):
    assert SPECIAL_TOKENS == ("<pad>", "<bos>", "<eos>", "<unk>")
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert tokenizer.vocab.tokens[:4] == list(SPECIAL_TOKENS)
    assert [tokenizer.vocab[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id) == (0, 1, 2, 3)
    assert (tokenizer.vocab.pad_id, tokenizer.vocab.unk_id) == (0, 3)
    assert tokenizer.vocab_size == len(tokenizer.vocab) > 4


def test_vocab_lookup_both_ways():
    vocab = Vocab(["b", "a"])
    assert len(vocab) == 6 and vocab.tokens == [PAD, BOS, EOS, UNK, "b", "a"]
    assert vocab["b"] == 4 and vocab["a"] == 5 and vocab["zebra"] == UNK_ID
    assert "a" in vocab and "zebra" not in vocab and PAD in vocab
    assert vocab.token(5) == "a"
    assert vocab.to_ids(["a", "?", "b"]) == [5, UNK_ID, 4]
    assert vocab.to_tokens(torch.tensor([4, 5, 0])) == ["b", "a", PAD]
    assert Vocab.from_dict(json.loads(json.dumps(vocab.to_dict()))) == vocab


def test_vocab_build_orders_by_frequency_then_token():
    token_lists = [["c", "a", "b", "a"], ["b", "d", BOS]]  # a 2, b 2, c 1, d 1; a special is not counted
    assert Vocab.build(token_lists).tokens[4:] == ["a", "b", "c", "d"]
    assert Vocab.build(token_lists, min_freq=2).tokens[4:] == ["a", "b"]
    assert Vocab.build(token_lists, max_size=7).tokens[4:] == ["a", "b", "c"]  # 4 specials + 3
    assert len(Vocab.build(token_lists, max_size=4)) == 4


def test_word_vocab_is_most_frequent_first():
    tok = WordTokenizer.train(["b a b", "a b"])  # pieces: b ▁a ▁b | a ▁b  ->  ▁b 2, a 1, b 1, ▁a 1
    assert tok.vocab.tokens[4:] == ["▁b", "a", "b", "▁a"]
    assert WordTokenizer.train(["b a b", "a b"], min_freq=2).vocab.tokens[4:] == ["▁b"]


# ---------------------------------------------------------------------------------------------- round trips
def test_decode_inverts_encode_on_the_corpus(tokenizer):
    for text in CORPUS:
        ids = tokenizer.encode(text)
        assert UNK_ID not in ids
        assert tokenizer.decode(ids) == text
        assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=True)) == text


def test_pre_tokenize_keeps_every_character():
    assert pre_tokenize("Hi,  you!\n") == ["Hi", ",", "▁", "▁you", "!", "\n"]
    assert pre_tokenize(" a.b ") == ["▁a", ".", "b", "▁"]
    assert pre_tokenize("") == []


@SETTINGS
@given(st.text(st.characters(exclude_characters=SPACE_MARK), max_size=40))
def test_pre_tokenize_pieces_join_back_to_the_text(text):
    assert "".join(pre_tokenize(text)).replace(SPACE_MARK, " ") == text


ALPHABET = sorted(set("".join(CORPUS)))


@SETTINGS
@given(st.text(st.sampled_from(ALPHABET), max_size=60))
def test_char_and_bpe_round_trip_any_text_over_the_training_alphabet(text):
    for kind in ("char", "bpe"):
        tok = _TRAINED[kind]
        ids = tok.encode(text)
        assert UNK_ID not in ids
        assert tok.decode(ids) == text


# Pieces that start with a space (or are one whitespace character) re-split the same way however they are
# concatenated, so any sequence of them is in-vocabulary text for the word tokenizer.
SPACE_LED = sorted(t for t in WordTokenizer.train(CORPUS).vocab.tokens[4:] if t[0] in (SPACE_MARK, "\n", "\t"))


@SETTINGS
@given(st.lists(st.sampled_from(SPACE_LED), max_size=12))
def test_word_round_trips_any_sequence_of_known_words(pieces):
    tok = _TRAINED["word"]
    text = "".join(pieces).replace(SPACE_MARK, " ")
    assert tok.tokenize(text) == pieces
    assert tok.decode(tok.encode(text)) == text


# ---------------------------------------------------------------------------------------------- unknowns, specials
@pytest.mark.parametrize(
    "kind, text, decoded",
    [
        ("char", "Zoo", "<unk>oo"),
        ("word", "The giraffe", "The<unk>"),  # the unknown word "▁giraffe" takes its space with it
        ("bpe", "The Zoo", "The <unk>oo"),
    ],
)
def test_unknown_symbols_become_unk(kind, text, decoded):
    tok = _TRAINED[kind]
    ids = tok.encode(text)
    assert ids.count(UNK_ID) == 1
    assert tok.decode(ids) == decoded
    assert tok.decode(ids, skip_special_tokens=False) == decoded  # <unk> shows either way


def test_decode_skips_pad_bos_eos_only(tokenizer):
    ids = [BOS_ID, *tokenizer.encode("The model"), EOS_ID, PAD_ID, PAD_ID]
    assert tokenizer.encode("The model", add_special_tokens=True) == ids[:-2]
    assert tokenizer.decode(ids) == "The model"
    assert tokenizer.decode(torch.tensor(ids)) == "The model"
    assert tokenizer.decode(ids, skip_special_tokens=False) == f"{BOS}The model{EOS}{PAD}{PAD}"


def test_char_tokenizer_vocabulary_is_the_sorted_alphabet():
    assert _TRAINED["char"].vocab.tokens[4:] == ALPHABET
    assert _TRAINED["char"].tokenize("to a") == ["t", "o", " ", "a"]


# ---------------------------------------------------------------------------------------------- BPE
def test_bpe_merges_of_a_hand_computed_example():
    # Words: "aaab", "▁aab", "▁ab"; ids: a 4, b 5, ▁ 6 (Unicode order after the specials).
    # 1. (a,a) 3 and (a,b) 3 tie; (4,4) < (4,5) so (a,a) wins.   words: aa a b | ▁ aa b | ▁ a b
    # 2. (a,b) 2 is the only pair seen twice.                     words: aa ab | ▁ aa b | ▁ ab
    # 3.-6. every pair is seen once: the smallest ids go first: (▁,aa)=(6,7), (▁,ab)=(6,8),
    #    (aa,ab)=(7,8), then (▁aa,b)=(9,5). ("▁aa" is id 9 because it is created at step 3.)
    tok = BPETokenizer.train(["aaab aab ab"])
    assert tok.merges == [("a", "a"), ("a", "b"), ("▁", "aa"), ("▁", "ab"), ("aa", "ab"), ("▁aa", "b")]
    assert tok.vocab.tokens[4:] == ["a", "b", "▁", "aa", "ab", "▁aa", "▁ab", "aaab", "▁aab"]
    assert tok.tokenize("aaab aab ab", max_merges=2) == ["aa", "ab", "▁", "aa", "b", "▁", "ab"]
    assert tok.tokenize("aaab aab ab") == ["aaab", "▁aab", "▁ab"]  # all merges: one token per word
    assert tok.tokenize("aaaa") == ["aa", "aa"]  # merges apply left to right


def test_bpe_training_is_deterministic():
    first = BPETokenizer.train(CORPUS, vocab_size=90)
    assert first.merges == BPETokenizer.train(CORPUS, vocab_size=90).merges
    assert first.merges == BPETokenizer.train(CORPUS[::-1], vocab_size=90).merges  # order of texts is irrelevant
    assert BPETokenizer.train(CORPUS, num_merges=10).merges == first.merges[:10]  # fewer merges = a prefix


def test_bpe_vocab_size_and_num_merges_stop_training():
    alphabet = len(ALPHABET)
    assert len(BPETokenizer.train(CORPUS, vocab_size=4 + alphabet).merges) == 0
    assert len(BPETokenizer.train(CORPUS, vocab_size=70).vocab) == 70
    assert len(BPETokenizer.train(CORPUS, num_merges=7).merges) == 7
    assert len(BPETokenizer.train(CORPUS, vocab_size=70, num_merges=7).merges) == 7  # whichever comes first


def test_bpe_with_all_merges_is_a_word_tokenizer_and_with_none_a_char_one():
    tok = BPETokenizer.train(CORPUS)
    for text in CORPUS:
        assert tok.tokenize(text) == pre_tokenize(text)
        assert tok.tokenize(text, max_merges=0) == list(text.replace(" ", SPACE_MARK))


def test_bpe_max_merges_shortens_the_sequence_step_by_step():
    tok = _TRAINED["bpe"]
    lengths = [len(tok.tokenize(CORPUS[0], max_merges=k)) for k in range(len(tok.merges) + 1)]
    assert lengths[0] == len(CORPUS[0]) and lengths[-1] == len(tok.tokenize(CORPUS[0]))
    assert all(a >= b for a, b in zip(lengths, lengths[1:], strict=False))
    assert lengths[-1] < lengths[0] / 2


# ---------------------------------------------------------------------------------------------- save / load
def test_save_load_round_trip(tokenizer, tmp_path):
    path = tmp_path / "tok.json"
    tokenizer.save(path)
    assert json.loads(path.read_text(encoding="utf-8"))["kind"] == tokenizer.kind
    for loader in (Tokenizer, type(tokenizer)):
        loaded = loader.load(path)
        assert type(loaded) is type(tokenizer)
        assert loaded.vocab == tokenizer.vocab
        assert getattr(loaded, "merges", None) == getattr(tokenizer, "merges", None)
        assert [loaded.encode(t) for t in CORPUS] == [tokenizer.encode(t) for t in CORPUS]


def test_load_refuses_another_kind(tmp_path):
    _TRAINED["bpe"].save(tmp_path / "bpe.json")
    with pytest.raises(ValueError, match=r"d\['kind'\]: expected 'char' for CharTokenizer, got 'bpe'"):
        CharTokenizer.load(tmp_path / "bpe.json")


# ---------------------------------------------------------------------------------------------- batching
def test_pad_batch_pads_right_and_truncates():
    batch = pad_batch([[5, 6, 7], [8], []])
    assert batch.dtype == torch.int64 and batch.shape == (3, 3)
    assert batch.tolist() == [[5, 6, 7], [8, 0, 0], [0, 0, 0]]
    assert pad_batch([[5, 6, 7], [8]], pad_id=-1, max_len=2).tolist() == [[5, 6], [8, -1]]
    assert pad_batch([[5], [8]], max_len=4).shape == (2, 1)  # max_len caps, never stretches
    assert pad_batch([torch.tensor([1, 2]), (3,)], device="cpu").tolist() == [[1, 2], [3, 0]]


def test_encode_batch_wraps_and_pads(tokenizer):
    texts = ["The model", "a"]
    batch = tokenizer.encode_batch(texts)
    long = tokenizer.encode(texts[0], add_special_tokens=True)
    assert batch.shape == (2, len(long)) and batch.dtype == torch.int64
    assert batch[0].tolist() == long
    assert batch[1, :3].tolist() == tokenizer.encode("a", add_special_tokens=True)
    assert (batch[1, 3:] == PAD_ID).all()
    assert tokenizer.encode_batch(texts, add_special_tokens=False, max_len=2).shape == (2, 2)


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: CharTokenizer.train([]), ValueError, r"texts: expected at least one string, got an empty list"),
        (lambda: WordTokenizer.train("abc"), TypeError, r"texts: expected a list of str, got a single str 'abc'"),
        (lambda: BPETokenizer.train(["", ""]), ValueError, r"texts: expected at least one character, got 2 empty"),
        (lambda: CharTokenizer.train(["ok", 3]), TypeError, r"texts\[1\]: expected a str, got int"),
        (
            lambda: BPETokenizer.train(["ab"], vocab_size=5),
            ValueError,
            r"vocab_size: expected an int >= 6 \(4 special tokens \+ 2 characters in texts\), got 5",
        ),
        (lambda: BPETokenizer.train(["ab"], num_merges=-1), ValueError, r"num_merges: expected a value >= 0, got -1"),
        (lambda: BPETokenizer.train(["ab"], num_merges=1.5), TypeError, r"num_merges: expected an int, got 1.5"),
        (lambda: _TRAINED["bpe"].tokenize("a", max_merges=10**6), ValueError, r"max_merges: expected at most \d+"),
        (
            lambda: _TRAINED["char"].decode([5, 10**6]),
            ValueError,
            r"ids\[1\]: expected a token id in \[0, \d+\), got 1000000",
        ),
        (lambda: _TRAINED["char"].decode([5, -1]), ValueError, r"ids\[1\]: expected a token id in \[0, \d+\), got -1"),
        (
            lambda: _TRAINED["char"].decode(torch.zeros(2, 2, dtype=torch.long)),
            ValueError,
            r"ids: expected a 1-D tensor",
        ),
        (lambda: _TRAINED["char"].decode([4.0]), TypeError, r"ids\[0\]: expected an int, got float 4.0"),
        (lambda: _TRAINED["word"].encode(5), TypeError, r"text: expected a str, got int"),
        (lambda: _TRAINED["word"].encode("a▁b"), ValueError, r"text: expected no '▁' \(U\+2581.*got one at index 1"),
        (
            lambda: Vocab(["a", "b", "a"]),
            ValueError,
            r"tokens: expected unique, non-special tokens, got 'a', which appears twice",
        ),
        (lambda: Vocab(["a", UNK]), ValueError, r"got '<unk>', which is a special token"),
        (lambda: Vocab(["a"]).token(5), ValueError, r"idx: expected a token id in \[0, 5\), got 5"),
        (lambda: Vocab.build([["a"]], min_freq=0), ValueError, r"min_freq: expected a value > 0, got 0"),
        (
            lambda: Vocab.build([["a"]], max_size=3),
            ValueError,
            r"max_size: expected an int >= 4 \(room for the special",
        ),
        (lambda: Vocab.build(["ab"]), TypeError, r"token_lists\[0\]: expected a list of str tokens, got 'ab'"),
        (lambda: Vocab.from_dict({"tokens": ["a"]}), ValueError, r"d\['tokens'\]: expected to start with"),
        (
            lambda: Tokenizer.from_dict({"kind": "bytes"}),
            ValueError,
            r"d\['kind'\]: expected one of \['char', 'word', 'bpe'\], got 'bytes'",
        ),
        (
            lambda: BPETokenizer(Vocab(["a"]), [("a", "a")]),
            ValueError,
            r"merges\[0\]: expected a pair of tokens that are in vocab",
        ),
        (lambda: pad_batch([]), ValueError, r"sequences: expected at least one sequence, got an empty batch"),
        (lambda: pad_batch([[1, 2.5]]), TypeError, r"sequences\[0\]\[1\]: expected an int, got float 2.5"),
        (lambda: pad_batch([[1], 7]), TypeError, r"sequences\[1\]: expected a list of int ids, got int"),
        (lambda: pad_batch([[1]], max_len=0), ValueError, r"max_len: expected a value > 0, got 0"),
    ],
)
def test_errors_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------------------------------------- vs. Hugging Face
def _hf_bpe(texts: list[str], vocab_size: int):
    """Hugging Face ``tokenizers`` BPE with our pre-tokenisation: spaces become ▁, then our split pattern."""
    hf = pytest.importorskip("tokenizers")
    tok = hf.Tokenizer(hf.models.BPE(unk_token=UNK))
    tok.normalizer = hf.normalizers.Replace(" ", SPACE_MARK)
    # pre_tokenize's pattern, written for text whose spaces are already ▁ (U+2581 is neither \w nor \s).
    pattern = hf.Regex(rf"{SPACE_MARK}?\w+|{SPACE_MARK}?[^\w\s{SPACE_MARK}]+|\s|{SPACE_MARK}")
    tok.pre_tokenizer = hf.pre_tokenizers.Split(pattern, behavior="isolated")
    # min_frequency=0 (the default) merges pairs seen once, as we do; we have no such option.
    trainer = hf.trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=0, special_tokens=list(SPECIAL_TOKENS), show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer)
    model = json.loads(tok.to_str())["model"]
    return tok, [tuple(pair) for pair in model["merges"]], model["vocab"]


# The two trainers agree merge for merge: both pick the most frequent pair and break ties by the smaller
# (left id, right id), where ids follow the vocabulary (specials, characters in Unicode order, merges in
# order). Intended differences, not exercised here: `tokenizers` also offers min_frequency, limit_alphabet
# and subword prefixes/suffixes, and has no num_merges; we never merge across pre-tokenised words (nor does it).
@pytest.mark.parametrize("vocab_size", [60, 100, 200])
def test_bpe_matches_hugging_face_tokenizers(vocab_size):
    texts = CORPUS * 3 + ["The decoder attends to the encoder; the encoder attends to itself."]
    hf_tok, hf_merges, hf_vocab = _hf_bpe(texts, vocab_size)
    ours = BPETokenizer.train(texts, vocab_size=vocab_size)
    for text in texts:
        normalized = hf_tok.normalizer.normalize_str(text)
        assert [w for w, _ in hf_tok.pre_tokenizer.pre_tokenize_str(normalized)] == pre_tokenize(text)
    assert ours.merges == hf_merges
    assert {t: i for i, t in enumerate(ours.vocab.tokens)} == hf_vocab
    for text in [*texts, "Zebras encode täglich"]:  # unseen characters: one <unk> each in both
        assert ours.encode(text) == hf_tok.encode(text).ids


@SETTINGS
@given(
    texts=st.lists(st.text(st.sampled_from("ab c\n,"), min_size=1, max_size=40), min_size=1, max_size=4),
    extra=st.integers(0, 12),
)
def test_bpe_matches_hugging_face_on_random_corpora(texts, extra):
    # Tiny alphabets make ties frequent, so this checks the tie-breaking rule as much as the counting.
    if not "".join(texts):
        return
    smallest = 4 + len(set("".join(texts).replace(" ", SPACE_MARK)))
    ours = BPETokenizer.train(texts, vocab_size=smallest + extra)
    _, hf_merges, hf_vocab = _hf_bpe(texts, smallest + extra)
    assert ours.merges == hf_merges
    assert ours.vocab.tokens == sorted(hf_vocab, key=hf_vocab.get)

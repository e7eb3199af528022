"""Checks of assignment 1, the tokenizer: the vocabulary with its special tokens, encoding, padding."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch
from torch import Tensor

from ...tokenization import BOS_ID, EOS_ID, SPECIAL_TOKENS, UNK_ID, Vocab
from .compare import _expect_shape, _row_diff, _tensor
from .core import _call, _check, _Fail
from .hidden import _and_random, _random_cases, _size, drawn

_CORPUS = ["the cat sat on the mat", "the dog sat"]


# The vocabulary of _CORPUS, the input check_encode hands to encode: a constant, so that the check's inputs need no
# reference (the kernel's library copy has none while assignment 1 is graded); tests/test_checks.py compares it
# with _reference_vocab(_CORPUS).
_CORPUS_VOCAB = {
    "<pad>": 0,
    "<bos>": 1,
    "<eos>": 2,
    "<unk>": 3,
    "the": 4,
    "sat": 5,
    "cat": 6,
    "dog": 7,
    "mat": 8,
    "on": 9,
}


_WORDS = "the a cat dog sat ran on under mat rug big red old new sun and".split()


def _random_text(g: torch.Generator, words: list[str], low: int, high: int) -> str:
    return " ".join(words[int(i)] for i in torch.randint(0, len(words), (_size(g, low, high),), generator=g))


@_random_cases("check_build_vocab")
def _random_corpora(g: torch.Generator) -> list[tuple[str, tuple[list[str], int]]]:
    """Two corpora of 1-5 random sentences of random words, min_freq 1-3."""
    return [
        (f"random case {i + 1}", ([_random_text(g, _WORDS, 1, 8) for _ in range(_size(g, 1, 5))], _size(g, 1, 3)))
        for i in range(2)
    ]


@_random_cases("check_encode")
def _random_encodings(g: torch.Generator) -> list[tuple[str, tuple[str, dict[str, int], bool]]]:
    """Three texts, each with a vocabulary of random words in random order (the specials first), some words of the
    text left out of it (they become <unk>)."""
    cases = []
    for i in range(3):
        order = torch.randperm(len(_WORDS), generator=g).tolist()
        known = [_WORDS[j] for j in order[: _size(g, 3, len(_WORDS))]]
        vocab = {t: j for j, t in enumerate([*SPECIAL_TOKENS, *known])}
        cases.append((f"random case {i + 1}", (_random_text(g, _WORDS, 0, 8), vocab, bool(i % 2 == 0))))
    return cases


@_random_cases("check_pad_sequences")
def _random_batches(g: torch.Generator) -> list[tuple[str, tuple[list[list[int]], int]]]:
    """Two batches of 1-4 sequences of random ids and lengths 0-7 (one at least 1), a random pad id."""
    cases = []
    for i in range(2):
        seqs = [torch.randint(4, 50, (_size(g, 0, 7),), generator=g).tolist() for _ in range(_size(g, 1, 4))]
        seqs[0] = seqs[0] or [4]
        cases.append((f"random case {i + 1}", (seqs, _size(g, 0, 3))))
    return cases


def _reference_vocab(texts: list[str], min_freq: int = 1) -> dict[str, int]:
    tokens = Vocab.build([t.split() for t in texts], min_freq=min_freq).tokens
    return {t: i for i, t in enumerate(tokens)}


def _reference_ids(text: str, vocab: dict[str, int], add_special_tokens: bool) -> list[int]:
    ids = Vocab(list(vocab)[len(SPECIAL_TOKENS) :]).to_ids(text.split())
    return [BOS_ID, *ids, EOS_ID] if add_special_tokens else ids


@_check("build_vocab")
def check_build_vocab(build_vocab: Callable) -> str:
    """Check ``build_vocab(texts, min_freq=1) -> dict[str, int]``: the special tokens at ids 0-3, then the
    whitespace-separated words seen at least ``min_freq`` times, most frequent first, ties alphabetical."""
    named, random = [(_CORPUS, 1), (_CORPUS, 2), (["hello"], 1)], drawn("check_build_vocab")
    for label, (texts, min_freq) in [("", c) for c in named] + random:
        inputs = (f"{label}: " if label else "") + f"texts = {texts!r}, min_freq = {min_freq}"
        got = _call(build_vocab, list(texts), min_freq=min_freq, inputs=inputs)
        want = _reference_vocab(texts, min_freq)
        if isinstance(got, (list, tuple)):
            raise _Fail(
                "build_vocab returned a list; expected a dict that maps each token to its id.",
                f"Input: {inputs}\nExpected {want}\nGot      {got!r}",
                ("Build the dict with {token: i for i, token in enumerate(tokens)}.",),
            )
        if not isinstance(got, dict):
            raise _Fail(
                f"build_vocab returned a {type(got).__name__}; expected a dict token -> id.", f"Input: {inputs}"
            )
        if got == want:
            continue
        details = f"Input: {inputs}\nExpected {want}\nGot      {got}"
        specials = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
        counts = Counter(w for t in texts for w in t.split())
        words = [t for t in got if t not in specials]
        hints: tuple[str, ...]
        if any(got.get(t) != i for t, i in specials.items()):
            hints = (
                "The four special tokens come first, with fixed ids: <pad> 0, <bos> 1, <eos> 2, <unk> 3.",
                "Start the vocabulary from the list ['<pad>', '<bos>', '<eos>', '<unk>'] and give the words "
                "the ids 4, 5, 6, ... after them.",
            )
        elif sorted(got.values()) != list(range(len(got))):
            hints = ("The ids must be 0, 1, 2, ... with no gaps and no repeats.",)
        elif set(words) - set(want):
            extra = sorted(set(words) - set(want))
            rare = all(counts[w] < min_freq for w in extra if w in counts)
            hints = (
                (f"The words {extra} are seen fewer than min_freq={min_freq} times: leave them out.",)
                if rare and all(w in counts for w in extra)
                else (f"The words {extra} are not words of the texts: split each text with text.split().",)
            )
        elif set(want) - set(got):
            hints = (
                f"The words {sorted(set(want) - set(got))} are missing: keep every word seen at least "
                f"min_freq times (count with collections.Counter).",
            )
        elif words == sorted(words):
            hints = (
                "The words are in alphabetical order: order them by count, most frequent first, and only "
                "break ties alphabetically.",
                "sorted(counts, key=lambda w: (-counts[w], w))",
            )
        else:
            hints = (
                "Order the words by count, most frequent first, and break ties alphabetically.",
                "Counter.most_common() breaks ties by first appearance, not alphabetically: sort with "
                "key=lambda w: (-counts[w], w).",
            )
        raise _Fail("The vocabulary differs from the reference.", details, hints)
    return _and_random(f"All {len(named)} cases match the reference (min_freq 1 and 2, a one-word corpus).", random)


@_check("encode")
def check_encode(encode: Callable) -> str:
    """Check ``encode(text, vocab, add_special_tokens=True) -> list[int]`` against the library's Vocab."""
    named = [("the cat sat", _CORPUS_VOCAB, True), ("the dog sat on a mat", _CORPUS_VOCAB, True)]
    named += [("the cat", _CORPUS_VOCAB, False), ("", _CORPUS_VOCAB, True)]
    random = drawn("check_encode")
    unk_hints = {
        KeyError: (
            "A word that is not in the vocabulary must become <unk> (id 3), not a KeyError.",
            "Look words up with vocab.get(word, vocab['<unk>']).",
        )
    }
    for label, (text, vocab, special) in [("", c) for c in named] + random:
        inputs = (f"{label}: " if label else "") + f"text = {text!r}, add_special_tokens = {special}, vocab = {vocab}"
        got = _call(encode, text, dict(vocab), add_special_tokens=special, inputs=inputs, on_error=unk_hints)
        if isinstance(got, Tensor):
            got = got.tolist()
        want = _reference_ids(text, vocab, special)
        if not isinstance(got, (list, tuple)) or list(got) != want:
            got_list = list(got) if isinstance(got, (list, tuple)) else got
            details = f"Input: {inputs}\nExpected {want}\nGot      {got_list!r}"
            if special and got_list == want[1:-1]:
                hints = (
                    "<bos> (id 1) and <eos> (id 2) are missing: wrap the ids as [bos, ..., eos] when "
                    "add_special_tokens is True.",
                )
            elif not special and got_list == [BOS_ID, *want, EOS_ID]:
                hints = ("With add_special_tokens=False, return the word ids only, without <bos> and <eos>.",)
            elif isinstance(got_list, list) and len(got_list) == len(want) and UNK_ID in want:
                hints = ("Unknown words must map to <unk> (id 3).",)
            else:
                hints = ("Split the text with text.split() and look up each word in vocab.",)
            raise _Fail("The ids differ from the reference.", details, hints)
    return _and_random(
        f"All {len(named)} cases match the reference (special tokens on/off, an unknown word, empty text).", random
    )


@_check("pad_sequences")
def check_pad_sequences(pad_sequences: Callable) -> str:
    """Check ``pad_sequences(seqs, pad_id=0) -> (B, T) int64 tensor``, right-padded to the longest sequence."""
    named = [([[5, 6, 7, 8], [8], [9, 10]], 0), ([[4, 5], [6]], 9), ([[4]], 0), ([[4, 5], []], 0)]
    random = drawn("check_pad_sequences")
    for label, (seqs, pad_id) in [("", c) for c in named] + random:
        inputs = (f"{label}: " if label else "") + f"seqs = {seqs}, pad_id = {pad_id}"
        got = _tensor(_call(pad_sequences, [list(s) for s in seqs], pad_id=pad_id, inputs=inputs), "The result", inputs)
        T = max(len(s) for s in seqs)
        want = torch.tensor([s + [pad_id] * (T - len(s)) for s in seqs], dtype=torch.long)
        if got.dtype != torch.long:
            raise _Fail(
                f"The result has dtype {got.dtype}; token ids must be torch.long (int64).",
                f"Input: {inputs}",
                ("Create the tensor with dtype=torch.long: embedding layers look ids up by integer.",),
            )
        _expect_shape(
            "The padded batch",
            got,
            tuple(want.shape),
            inputs,
            (
                "The result is (batch, longest length): one row per sequence."
                + (" Your shape is transposed." if tuple(got.shape) == tuple(want.shape)[::-1] else ""),
            ),
        )
        if not torch.equal(got, want):
            left = torch.tensor([[pad_id] * (T - len(s)) + s for s in seqs], dtype=torch.long)
            zero = torch.tensor([s + [0] * (T - len(s)) for s in seqs], dtype=torch.long)
            hints = (
                ("Pad on the right: the real tokens come first, then pad_id.",)
                if torch.equal(got, left)
                else ("Fill with the pad_id argument, not a fixed 0.",)
                if torch.equal(got, zero)
                else ("Each row is the sequence followed by pad_id until the longest length.",)
            )
            raise _Fail(
                "The padded batch differs from the reference.",
                f"Input: {inputs}\n{_row_diff('batch', got, want)}",
                hints,
            )
    return _and_random(
        f"All {len(named)} cases match the reference (another pad_id, a batch of one, an empty sequence).", random
    )

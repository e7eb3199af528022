"""Tokenization: turning text into integer ids and back (chapter 2).

A Transformer never reads characters; it reads ids from a fixed vocabulary. The three tokenizers
here trade **vocabulary size** against **sequence length**:

* :class:`CharTokenizer` -- one token per character. A tiny vocabulary (a few dozen ids) and almost
  nothing is unknown, but sequences are long, and self-attention costs O(T²) in the length T.
* :class:`WordTokenizer` -- one token per word. Short sequences, but the vocabulary grows with the
  corpus and every word never seen in training becomes ``<unk>``.
* :class:`BPETokenizer` -- byte-pair encoding (Sennrich et al., 2016), the middle road the paper takes
  (§5.1: "a shared source-target vocabulary of about 37000 tokens"). It starts from characters and
  learns to merge frequent neighbours; ``vocab_size`` (or ``num_merges``) is the dial between the
  two extremes: zero merges is a character tokenizer, all merges a word tokenizer.

Design choices, so that ``decode(encode(text)) == text`` for any text made of known tokens:

* **Whitespace round-trips exactly.** The word and BPE tokenizers share one pre-tokenizer,
  :func:`pre_tokenize`: the text is cut into words, runs of punctuation and single whitespace
  characters. One space in front of a word or punctuation run stays attached to it and is written
  ``▁`` (U+2581, as in SentencePiece), so ``"the cat"`` becomes ``["the", "▁cat"]``. Decoding joins
  the tokens and turns ``▁`` back into a space. Text that itself contains ``▁`` is rejected.
* **Special tokens come first** with fixed ids: ``<pad>`` 0, ``<bos>`` 1, ``<eos>`` 2, ``<unk>`` 3
  (the notes call them <PAD>, <START>, <END>, <UNK>).
* **Unknown symbols become** ``<unk>`` (id 3). ``tokenize`` keeps them as written; ``encode`` maps
  them to ``UNK_ID``; ``decode`` always shows ``<unk>``, even with ``skip_special_tokens=True``,
  which drops only ``<pad>``, ``<bos>`` and ``<eos>``: an ``<unk>`` stands for text that was there,
  and silently deleting it would hide the loss.

Shape legend: ``B`` batch size, ``T`` sequence length (tokens).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from numbers import Integral
from pathlib import Path
from typing import Any, ClassVar

import torch

from ..validation import check_choice, check_positive

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
SPACE_MARK = "▁"  # U+2581: "a space stood here", inside word and BPE tokens

# A word, a run of punctuation, or one whitespace character; a single space in front of a word or a
# punctuation run belongs to it (as in GPT-2). Every character falls in one branch, so nothing is lost.
_PRE_TOKEN = re.compile(r" ?\w+| ?[^\w\s]+|\s")


# --------------------------------------------------------------------------- argument checks used below
def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    return int(value)


def _check_min(name: str, value: Any, lowest: int, why: str = "") -> None:
    """Raise unless ``value`` is an int >= ``lowest``; ``why`` explains the bound."""
    check_positive(name, value, allow_zero=True)
    if value < lowest:
        raise ValueError(f"{name}: expected an int >= {lowest}{why}, got {value!r}")


def _check_text(text: Any, name: str = "text") -> None:
    if not isinstance(text, str):
        raise TypeError(f"{name}: expected a str, got {type(text).__name__}")


def _check_texts(texts: Any, name: str = "texts") -> list[str]:
    """Turn ``texts`` into a list of str, refusing a bare str and a corpus with no characters."""
    if isinstance(texts, str):
        raise TypeError(f"{name}: expected a list of str, got a single str {texts[:20]!r}; wrap it in a list")
    kind = type(texts).__name__
    texts = list(texts)
    if not texts:
        raise ValueError(f"{name}: expected at least one string, got an empty {kind}")
    for i, text in enumerate(texts):
        _check_text(text, f"{name}[{i}]")
    if not any(texts):
        raise ValueError(f"{name}: expected at least one character, got {len(texts)} empty string(s)")
    return texts


def _check_id(name: str, value: Any, size: int) -> int:
    if not 0 <= _check_int(name, value) < size:
        raise ValueError(f"{name}: expected a token id in [0, {size}), got {value}")
    return int(value)


def pre_tokenize(text: str) -> list[str]:
    """Split ``text`` into the words that :class:`WordTokenizer` and :class:`BPETokenizer` work on.

    Concatenating the pieces, with ``▁`` turned back into a space, gives ``text`` again.

    >>> pre_tokenize("Hi,  you!\\n")
    ['Hi', ',', '▁', '▁you', '!', '\\n']
    """
    _check_text(text)
    if SPACE_MARK in text:
        raise ValueError(f"text: expected no {SPACE_MARK!r} (U+2581, the word-boundary mark of the word and BPE "
                         f"tokenizers), got one at index {text.index(SPACE_MARK)}")
    return [piece.replace(" ", SPACE_MARK) for piece in _PRE_TOKEN.findall(text)]


# --------------------------------------------------------------------------- vocabulary
class Vocab:
    """The lookup table between tokens and ids; the four special tokens always take ids 0-3.

    Args:
        tokens: the non-special tokens in id order (they get ids 4, 5, ...). Duplicates, or a
            token equal to a special token, raise ``ValueError``.

    Introduced in chapter 2.
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        if isinstance(tokens, str):
            raise TypeError(f"tokens: expected a list of str, got a single str {tokens[:20]!r}")
        self._tokens: list[str] = list(SPECIAL_TOKENS)
        self._ids: dict[str, int] = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
        for token in tokens:
            if not isinstance(token, str):
                raise TypeError(f"tokens: expected str items, got {type(token).__name__} {token!r}")
            if token in self._ids:
                what = "is a special token" if token in SPECIAL_TOKENS else "appears twice"
                raise ValueError(f"tokens: expected unique, non-special tokens, got {token!r}, which {what}")
            self._ids[token] = len(self._tokens)
            self._tokens.append(token)

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_freq: int = 1, max_size: int | None = None) -> Vocab:
        """Count tokens and keep the frequent ones, ordered by frequency (desc), then token (asc).

        Args:
            token_lists: one list of tokens per text.
            min_freq: keep tokens seen at least this often.
            max_size: cap on ``len(vocab)``, the four special tokens included.
        """
        check_positive("min_freq", min_freq)
        if max_size is not None:
            _check_min("max_size", max_size, len(SPECIAL_TOKENS), " (room for the special tokens)")
        if isinstance(token_lists, str):
            raise TypeError("token_lists: expected a list of token lists, got a single str")
        counts: Counter[str] = Counter()
        for i, tokens in enumerate(token_lists):
            if isinstance(tokens, str) or not all(isinstance(token, str) for token in tokens):
                raise TypeError(f"token_lists[{i}]: expected a list of str tokens, got {tokens!r:.40}")
            counts.update(tokens)
        for special in SPECIAL_TOKENS:
            counts.pop(special, None)
        kept = sorted((t for t, n in counts.items() if n >= min_freq), key=lambda t: (-counts[t], t))
        if max_size is not None:
            kept = kept[: max_size - len(SPECIAL_TOKENS)]
        return cls(kept)

    @property
    def tokens(self) -> list[str]:
        """All tokens, specials included, in id order (a copy)."""
        return list(self._tokens)

    pad_id = property(lambda self: PAD_ID, doc="Id of ``<pad>`` (0).")
    bos_id = property(lambda self: BOS_ID, doc="Id of ``<bos>`` (1).")
    eos_id = property(lambda self: EOS_ID, doc="Id of ``<eos>`` (2).")
    unk_id = property(lambda self: UNK_ID, doc="Id of ``<unk>`` (3).")

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._ids

    def __getitem__(self, token: str) -> int:
        """The id of ``token``; ``UNK_ID`` if it is not in the vocabulary."""
        _check_text(token, "token")
        return self._ids.get(token, UNK_ID)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self._tokens == other._tokens

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, tokens={self._tokens[:8]}{'...' if len(self) > 8 else ''})"

    def token(self, idx: int) -> str:
        """The token with id ``idx``; ``ValueError`` if ``idx`` is outside ``[0, len(self))``."""
        return self._tokens[_check_id("idx", idx, len(self))]

    def to_ids(self, tokens: Sequence[str]) -> list[int]:
        """Map tokens to ids, unknown ones to ``UNK_ID``."""
        if isinstance(tokens, str):
            raise TypeError(f"tokens: expected a list of tokens, got a str {tokens[:20]!r}; "
                            "use a tokenizer's encode() for raw text")
        return [self[token] for token in tokens]

    def to_tokens(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        """Map ids back to tokens; an id outside ``[0, len(self))`` raises ``ValueError``."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return [self._tokens[_check_id(f"ids[{i}]", idx, len(self))] for i, idx in enumerate(ids)]

    def to_dict(self) -> dict:
        """A JSON-ready description: ``{"tokens": [...]}`` with all tokens in id order."""
        return {"tokens": self.tokens}

    @classmethod
    def from_dict(cls, d: dict) -> Vocab:
        """Inverse of :meth:`to_dict`; checks that the special tokens sit at their fixed ids."""
        if not isinstance(d, dict) or not isinstance(d.get("tokens"), list):
            raise ValueError(f"d: expected a dict with a 'tokens' list, got {type(d).__name__}")
        head = tuple(d["tokens"][: len(SPECIAL_TOKENS)])
        if head != SPECIAL_TOKENS:
            raise ValueError(f"d['tokens']: expected to start with {SPECIAL_TOKENS}, got {head}")
        return cls(d["tokens"][len(SPECIAL_TOKENS):])


# --------------------------------------------------------------------------- tokenizers
class Tokenizer:
    """Common base: text -> tokens (:meth:`tokenize`, per subclass) -> ids (:class:`Vocab`), and back.

    Subclasses set ``kind`` (saved in the JSON file) and implement :meth:`tokenize`; those whose
    tokens carry ``▁`` undo it in :meth:`_detokenize`. Introduced in chapter 2.
    """

    kind: ClassVar[str] = ""

    def __init__(self, vocab: Vocab) -> None:
        if not isinstance(vocab, Vocab):
            raise TypeError(f"vocab: expected a Vocab, got {type(vocab).__name__}")
        self.vocab = vocab

    vocab_size = property(lambda self: len(self.vocab), doc="Number of ids, special tokens included.")
    pad_id = property(lambda self: PAD_ID, doc="Id of ``<pad>`` (0).")
    bos_id = property(lambda self: BOS_ID, doc="Id of ``<bos>`` (1).")
    eos_id = property(lambda self: EOS_ID, doc="Id of ``<eos>`` (2).")
    unk_id = property(lambda self: UNK_ID, doc="Id of ``<unk>`` (3).")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(vocab_size={self.vocab_size})"

    def tokenize(self, text: str) -> list[str]:
        """Split ``text`` into tokens; unknown ones are kept as written."""
        raise NotImplementedError(f"{type(self).__name__} must implement tokenize()")

    def _detokenize(self, tokens: list[str]) -> str:
        return "".join(tokens)

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text``; with ``add_special_tokens`` wrapped as ``<bos> ... <eos>``."""
        ids = self.vocab.to_ids(self.tokenize(text))
        return [BOS_ID, *ids, EOS_ID] if add_special_tokens else ids

    def decode(self, ids: Sequence[int] | torch.Tensor, skip_special_tokens: bool = True) -> str:
        """Text of ``ids``. ``skip_special_tokens`` drops ``<pad>``/``<bos>``/``<eos>``; ``<unk>`` always shows.

        Shape:
            ids: ``(T,)``
        """
        if isinstance(ids, torch.Tensor) and ids.dim() != 1:
            raise ValueError(f"ids: expected a 1-D tensor (T,), got shape {tuple(ids.shape)}; decode rows one by one")
        tokens = self.vocab.to_tokens(ids)
        if skip_special_tokens:
            tokens = [t for t in tokens if t not in (PAD, BOS, EOS)]
        return self._detokenize(tokens)

    def encode_batch(self, texts: Sequence[str], add_special_tokens: bool = True, max_len: int | None = None,
                     device: torch.device | str | None = None) -> torch.Tensor:
        """Encode several texts into one right-padded tensor (see :func:`pad_batch`).

        Shape:
            output: ``(B, T)`` int64, ``T`` = the longest encoding, at most ``max_len``.
        """
        texts = _check_texts(texts)
        return pad_batch([self.encode(t, add_special_tokens) for t in texts], PAD_ID, max_len, device)

    def to_dict(self) -> dict:
        """A JSON-ready description, with ``"kind"`` so that :meth:`from_dict` can pick the class."""
        return {"kind": self.kind, "vocab": self.vocab.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> Tokenizer:
        """Rebuild a tokenizer from :meth:`to_dict`. ``Tokenizer.from_dict`` dispatches on ``d["kind"]``."""
        kind = d.get("kind") if isinstance(d, dict) else None
        check_choice("d['kind']", kind, list(_TOKENIZER_KINDS))
        target = _TOKENIZER_KINDS[kind]
        if cls is not Tokenizer and cls is not target:
            raise ValueError(f"d['kind']: expected {cls.kind!r} for {cls.__name__}, got {kind!r}; "
                             f"load it with {target.__name__} or Tokenizer")
        return target._from_dict(d)

    @classmethod
    def _from_dict(cls, d: dict) -> Tokenizer:
        return cls(Vocab.from_dict(d["vocab"]))

    def save(self, path: str | Path) -> None:
        """Write the tokenizer to ``path`` as UTF-8 JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        """Read a tokenizer written by :meth:`save`; ``Tokenizer.load`` returns the right subclass."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))


class CharTokenizer(Tokenizer):
    """One token per character (space included, as itself). Smallest vocabulary, longest sequences."""

    kind = "char"

    @classmethod
    def train(cls, texts: Iterable[str]) -> CharTokenizer:
        """The vocabulary is every character of ``texts``, in Unicode order."""
        return cls(Vocab(sorted(set("".join(_check_texts(texts))))))

    def tokenize(self, text: str) -> list[str]:
        _check_text(text)
        return list(text)


class WordTokenizer(Tokenizer):
    """One token per :func:`pre_tokenize` piece: ``"the cat sat."`` -> ``the ▁cat ▁sat .``.

    A space belongs to the word after it, so "cat" and "▁cat" are two tokens. Short sequences,
    large vocabulary, and unseen words become ``<unk>``.
    """

    kind = "word"

    @classmethod
    def train(cls, texts: Iterable[str], min_freq: int = 1, max_size: int | None = None) -> WordTokenizer:
        """Keep words seen at least ``min_freq`` times, the most frequent first, ``len(vocab) <= max_size``."""
        return cls(Vocab.build([pre_tokenize(t) for t in _check_texts(texts)], min_freq, max_size))

    def tokenize(self, text: str) -> list[str]:
        return pre_tokenize(text)

    def _detokenize(self, tokens: list[str]) -> str:
        return "".join(tokens).replace(SPACE_MARK, " ")


def _count_pairs(words: list[tuple[list[str], int]]) -> Counter[tuple[str, str]]:
    """How often each adjacent symbol pair occurs, each word weighted by its count in the corpus."""
    counts: Counter[tuple[str, str]] = Counter()
    for symbols, freq in words:
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += freq
    return counts


def _merge_pair(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    """Replace each occurrence of ``pair`` by one symbol, scanning left to right ("aaa" -> "aa a")."""
    merged, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


class BPETokenizer(Tokenizer):
    """Byte-pair encoding over characters (Sennrich et al., 2016), within :func:`pre_tokenize` words.

    Training starts with each word split into characters and repeats: count adjacent pairs
    (weighted by word frequency), merge the most frequent pair everywhere, record the merge.
    **Ties** go to the pair whose symbols entered the vocabulary first (smallest ids; for single
    characters that is Unicode order) -- the rule of Hugging Face ``tokenizers``' ``BpeTrainer``,
    so both learn the same merges. Same input, same merges, always.

    Encoding splits each word into characters and applies merges by rank: always the adjacent pair
    learned earliest, until none applies, which reproduces the training segmentation.

    Args:
        vocab: specials, the characters, then one token per new merge result.
        merges: the learned pairs, in the order learned.
    """

    kind = "bpe"

    def __init__(self, vocab: Vocab, merges: Sequence[tuple[str, str]]) -> None:
        super().__init__(vocab)
        self.merges: list[tuple[str, str]] = [tuple(pair) for pair in merges]
        for i, pair in enumerate(self.merges):
            if len(pair) != 2 or not all(isinstance(s, str) for s in pair) \
                    or not all(t in vocab for t in (*pair, "".join(pair))):
                raise ValueError(f"merges[{i}]: expected a pair of tokens that are in vocab, joined too, "
                                 f"got {pair!r}")
        self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}  # pair -> when it was learned
        if len(self._ranks) != len(self.merges):
            raise ValueError(f"merges: expected each pair once, got {len(self.merges) - len(self._ranks)} repeats")

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int | None = None,
              num_merges: int | None = None) -> BPETokenizer:
        """Learn merges until ``len(vocab) == vocab_size``, ``num_merges`` merges, or no pair is left.

        With neither limit given, merging goes on until every word is a single token. Like
        ``tokenizers``, a merge whose result is already a token adds a merge but no vocabulary entry.
        """
        texts = _check_texts(texts)
        if num_merges is not None:
            check_positive("num_merges", num_merges, allow_zero=True)
        word_counts = Counter(word for text in texts for word in pre_tokenize(text))
        alphabet = sorted({ch for word in word_counts for ch in word})
        smallest = len(SPECIAL_TOKENS) + len(alphabet)
        if vocab_size is not None:
            _check_min("vocab_size", vocab_size, smallest,
                       f" ({len(SPECIAL_TOKENS)} special tokens + {len(alphabet)} characters in texts)")

        ids = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *alphabet])}
        words = [(list(word), count) for word, count in word_counts.items()]
        merges: list[tuple[str, str]] = []
        while num_merges is None or len(merges) < num_merges:
            if vocab_size is not None and len(ids) >= vocab_size:
                break
            pair_counts = _count_pairs(words)
            if not pair_counts:  # every word is a single symbol
                break
            best = min(pair_counts, key=lambda p: (-pair_counts[p], ids[p[0]], ids[p[1]]))
            merges.append(best)
            ids.setdefault(best[0] + best[1], len(ids))
            words = [(_merge_pair(symbols, best), count) for symbols, count in words]
        return cls(Vocab(list(ids)[len(SPECIAL_TOKENS):]), merges)

    def tokenize(self, text: str, max_merges: int | None = None) -> list[str]:
        """Split ``text`` into BPE tokens, using only the first ``max_merges`` merges (all if None)."""
        if max_merges is None:
            max_merges = len(self.merges)
        else:
            check_positive("max_merges", max_merges, allow_zero=True)
            if max_merges > len(self.merges):
                raise ValueError(f"max_merges: expected at most {len(self.merges)} (the merges learned), "
                                 f"got {max_merges}")
        return [token for word in pre_tokenize(text) for token in self._split_word(word, max_merges)]

    def _split_word(self, word: str, max_merges: int) -> list[str]:
        symbols = list(word)
        while len(symbols) > 1:
            # A merge result only joins merges learned later, so ranks are applied in learned order.
            rank = min(self._ranks.get(pair, max_merges) for pair in zip(symbols, symbols[1:]))
            if rank >= max_merges:
                break
            symbols = _merge_pair(symbols, self.merges[rank])
        return symbols

    def _detokenize(self, tokens: list[str]) -> str:
        return "".join(tokens).replace(SPACE_MARK, " ")

    def to_dict(self) -> dict:
        return {**super().to_dict(), "merges": [list(pair) for pair in self.merges]}

    @classmethod
    def _from_dict(cls, d: dict) -> BPETokenizer:
        return cls(Vocab.from_dict(d["vocab"]), [tuple(pair) for pair in d.get("merges", [])])


_TOKENIZER_KINDS: dict[str, type[Tokenizer]] = {c.kind: c for c in (CharTokenizer, WordTokenizer, BPETokenizer)}


# --------------------------------------------------------------------------- batching
def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int = PAD_ID, max_len: int | None = None,
              device: torch.device | str | None = None) -> torch.Tensor:
    """Stack id sequences of different lengths into one tensor, padding on the right with ``pad_id``.

    Sequences longer than ``max_len`` are cut to ``max_len`` (an ``<eos>`` at the end is lost).

    Shape:
        output: ``(B, T)`` int64, ``B = len(sequences)``, ``T = min(longest sequence, max_len)``.
    """
    if isinstance(sequences, (str, bytes)):
        raise TypeError(f"sequences: expected a list of id lists, got {type(sequences).__name__}")
    _check_int("pad_id", pad_id)
    if max_len is not None:
        check_positive("max_len", max_len)
    rows: list[list[int]] = []
    for i, seq in enumerate(sequences):
        seq = seq.tolist() if isinstance(seq, torch.Tensor) else seq
        if isinstance(seq, (str, bytes)) or not isinstance(seq, Iterable):
            raise TypeError(f"sequences[{i}]: expected a list of int ids, got {type(seq).__name__}")
        rows.append([_check_int(f"sequences[{i}][{j}]", value) for j, value in enumerate(seq)])
    if not rows:
        raise ValueError("sequences: expected at least one sequence, got an empty batch")
    T = max(len(row) for row in rows)
    if max_len is not None:
        T = min(T, max_len)
    padded = [row[:T] + [pad_id] * (T - len(row[:T])) for row in rows]
    return torch.tensor(padded, dtype=torch.long, device=device).reshape(len(rows), T)  # (B, T)

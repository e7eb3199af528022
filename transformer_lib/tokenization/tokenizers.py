"""The three tokenizers of chapter 2: characters, words and byte-pair encoding, on one base class that maps tokens
to ids through a :class:`~transformer_lib.tokenization.vocab.Vocab` and saves itself as JSON."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import ClassVar

import torch

from ..validation import check_at_least, check_choice, check_positive, check_str, check_texts
from .padding import pad_batch
from .vocab import BOS, BOS_ID, EOS, EOS_ID, PAD, PAD_ID, SPACE_MARK, SPECIAL_TOKENS, UNK_ID, Vocab, pre_tokenize

__all__ = ["Tokenizer", "CharTokenizer", "WordTokenizer", "BPETokenizer"]


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

    def encode_batch(
        self,
        texts: Sequence[str],
        add_special_tokens: bool = True,
        max_len: int | None = None,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """Encode several texts into one right-padded tensor (see :func:`pad_batch`).

        Shape:
            output: ``(B, T)`` int64, ``T`` = the longest encoding, at most ``max_len``.
        """
        texts = check_texts(texts)
        return pad_batch([self.encode(t, add_special_tokens) for t in texts], PAD_ID, max_len, device)

    def to_dict(self) -> dict:
        """A JSON-ready description, with ``"kind"`` so that :meth:`from_dict` can pick the class."""
        return {"kind": self.kind, "vocab": self.vocab.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> Tokenizer:
        """Rebuild a tokenizer from :meth:`to_dict`. ``Tokenizer.from_dict`` dispatches on ``d["kind"]``."""
        kind = d.get("kind") if isinstance(d, dict) else None
        check_choice("d['kind']", kind, list(_TOKENIZER_KINDS))
        target = _TOKENIZER_KINDS[str(kind)]  # check_choice refused anything but a known kind
        if cls is not Tokenizer and cls is not target:
            raise ValueError(
                f"d['kind']: expected {cls.kind!r} for {cls.__name__}, got {kind!r}; "
                f"load it with {target.__name__} or Tokenizer"
            )
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
        return cls(Vocab(sorted(set("".join(check_texts(texts))))))

    def tokenize(self, text: str) -> list[str]:
        check_str(text)
        return list(text)


class WordTokenizer(Tokenizer):
    """One token per :func:`pre_tokenize` piece: ``"the cat sat."`` -> ``the ▁cat ▁sat .``.

    A space belongs to the word after it, so "cat" and "▁cat" are two tokens. Short sequences,
    large vocabulary, and unseen words become ``<unk>``.

    Example:

    >>> tok = WordTokenizer.train(["the cat sat", "the dog sat"])
    >>> tok.tokenize("the cat ran")  # "▁" marks a word that follows a space
    ['the', '▁cat', '▁ran']
    >>> tok.encode("the cat ran")  # "▁ran" was never seen: <unk> = 3
    [4, 6, 3]
    """

    kind = "word"

    @classmethod
    def train(cls, texts: Iterable[str], min_freq: int = 1, max_size: int | None = None) -> WordTokenizer:
        """Keep words seen at least ``min_freq`` times, the most frequent first, ``len(vocab) <= max_size``."""
        return cls(Vocab.build([pre_tokenize(t) for t in check_texts(texts)], min_freq, max_size))

    def tokenize(self, text: str) -> list[str]:
        return pre_tokenize(text)

    def _detokenize(self, tokens: list[str]) -> str:
        return "".join(tokens).replace(SPACE_MARK, " ")


def _count_pairs(words: list[tuple[list[str], int]]) -> Counter[tuple[str, str]]:
    """How often each adjacent symbol pair occurs, each word weighted by its count in the corpus."""
    counts: Counter[tuple[str, str]] = Counter()
    for symbols, freq in words:
        for pair in zip(symbols, symbols[1:], strict=False):
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
        self.merges: list[tuple[str, str]] = []
        for i, given in enumerate(merges):
            got = tuple(given)
            if (
                len(got) != 2
                or not all(isinstance(s, str) for s in got)
                or not all(t in vocab for t in (*got, "".join(got)))
            ):
                raise ValueError(f"merges[{i}]: expected a pair of tokens that are in vocab, joined too, got {got!r}")
            self.merges.append((got[0], got[1]))
        self._ranks = {pair: rank for rank, pair in enumerate(self.merges)}  # pair -> when it was learned
        if len(self._ranks) != len(self.merges):
            raise ValueError(f"merges: expected each pair once, got {len(self.merges) - len(self._ranks)} repeats")

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int | None = None, num_merges: int | None = None) -> BPETokenizer:
        """Learn merges until ``len(vocab) == vocab_size``, ``num_merges`` merges, or no pair is left.

        With neither limit given, merging goes on until every word is a single token. Like
        ``tokenizers``, a merge whose result is already a token adds a merge but no vocabulary entry.
        """
        texts = check_texts(texts)
        if num_merges is not None:
            check_positive("num_merges", num_merges, allow_zero=True)
        word_counts = Counter(word for text in texts for word in pre_tokenize(text))
        alphabet = sorted({ch for word in word_counts for ch in word})
        smallest = len(SPECIAL_TOKENS) + len(alphabet)
        if vocab_size is not None:
            check_at_least(
                "vocab_size",
                vocab_size,
                smallest,
                f" ({len(SPECIAL_TOKENS)} special tokens + {len(alphabet)} characters in texts)",
            )

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
        return cls(Vocab(list(ids)[len(SPECIAL_TOKENS) :]), merges)

    def tokenize(self, text: str, max_merges: int | None = None) -> list[str]:
        """Split ``text`` into BPE tokens, using only the first ``max_merges`` merges (all if None)."""
        if max_merges is None:
            max_merges = len(self.merges)
        else:
            check_positive("max_merges", max_merges, allow_zero=True)
            if max_merges > len(self.merges):
                raise ValueError(
                    f"max_merges: expected at most {len(self.merges)} (the merges learned), got {max_merges}"
                )
        return [token for word in pre_tokenize(text) for token in self._split_word(word, max_merges)]

    def _split_word(self, word: str, max_merges: int) -> list[str]:
        symbols = list(word)
        while len(symbols) > 1:
            # A merge result only joins merges learned later, so ranks are applied in learned order.
            rank = min(self._ranks.get(pair, max_merges) for pair in zip(symbols, symbols[1:], strict=False))
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

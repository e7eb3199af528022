"""The vocabulary: the special tokens and their fixed ids, the pre-tokenizer shared by the word and BPE tokenizers,
and :class:`Vocab`, the table between tokens and ids (chapter 2; the design is explained in
:mod:`transformer_lib.tokenization`)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

import torch

from ..validation import check_at_least, check_index, check_positive, check_str

__all__ = [
    "PAD",
    "BOS",
    "EOS",
    "UNK",
    "PAD_ID",
    "BOS_ID",
    "EOS_ID",
    "UNK_ID",
    "SPECIAL_TOKENS",
    "SPACE_MARK",
    "pre_tokenize",
    "Vocab",
]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)
SPACE_MARK = "▁"  # U+2581: "a space stood here", inside word and BPE tokens

# A word, a run of punctuation, or one whitespace character; a single space in front of a word or a
# punctuation run belongs to it (as in GPT-2). Every character falls in one branch, so nothing is lost.
_PRE_TOKEN = re.compile(r" ?\w+| ?[^\w\s]+|\s")


def pre_tokenize(text: str) -> list[str]:
    """Split ``text`` into the words that :class:`WordTokenizer` and :class:`BPETokenizer` work on.

    Concatenating the pieces, with ``▁`` turned back into a space, gives ``text`` again.

    >>> pre_tokenize("Hi,  you!\\n")
    ['Hi', ',', '▁', '▁you', '!', '\\n']
    """
    check_str(text)
    if SPACE_MARK in text:
        raise ValueError(
            f"text: expected no {SPACE_MARK!r} (U+2581, the word-boundary mark of the word and BPE "
            f"tokenizers), got one at index {text.index(SPACE_MARK)}"
        )
    return [piece.replace(" ", SPACE_MARK) for piece in _PRE_TOKEN.findall(text)]


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
            check_at_least("max_size", max_size, len(SPECIAL_TOKENS), " (room for the special tokens)")
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
        check_str(token, "token")
        return self._ids.get(token, UNK_ID)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self._tokens == other._tokens

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, tokens={self._tokens[:8]}{'...' if len(self) > 8 else ''})"

    def token(self, idx: int) -> str:
        """The token with id ``idx``; ``ValueError`` if ``idx`` is outside ``[0, len(self))``."""
        return self._tokens[check_index("idx", idx, len(self))]

    def to_ids(self, tokens: Sequence[str]) -> list[int]:
        """Map tokens to ids, unknown ones to ``UNK_ID``."""
        if isinstance(tokens, str):
            raise TypeError(
                f"tokens: expected a list of tokens, got a str {tokens[:20]!r}; use a tokenizer's encode() for raw text"
            )
        return [self[token] for token in tokens]

    def to_tokens(self, ids: Sequence[int] | torch.Tensor) -> list[str]:
        """Map ids back to tokens; an id outside ``[0, len(self))`` raises ``ValueError``."""
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return [self._tokens[check_index(f"ids[{i}]", idx, len(self))] for i, idx in enumerate(ids)]

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
        return cls(d["tokens"][len(SPECIAL_TOKENS) :])


# --------------------------------------------------------------------------- tokenizers

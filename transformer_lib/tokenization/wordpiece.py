"""WordPiece: the subword tokenizer of BERT and its descendants (Wu et al., 2016; Devlin et al., 2019).

Chapter 2 (``02_tokens_and_embeddings.ipynb``) turned text into ids with characters, words and BPE merges learned
from a toy corpus. A pretrained model comes with its tokenizer fixed: the model only understands the ids of *its*
vocabulary, split *its* way. This module reads such a vocabulary (a ``vocab.txt``, one token per line, the line
number is the id) and reproduces BERT's two steps:

1. **Basic tokenization** (:func:`basic_tokenize`): drop control characters and map every whitespace to a space;
   put spaces around CJK ideographs (Chinese characters are their own words); lowercase and strip accents
   (``"Café" -> "cafe"``); split on whitespace, and cut every punctuation mark into a word of its own.
2. **WordPiece** (:meth:`WordPieceTokenizer.wordpiece`): cut each word greedily, longest match first, into pieces
   of the vocabulary. A piece that continues a word carries the prefix ``##`` (``"tokenization" -> "token",
   "##ization"``). A word that cannot be cut at all becomes ``[UNK]``.

Why our own implementation rather than the ``tokenizers`` library: this is a teaching book, and the whole
algorithm fits in a page that can be read and stepped through. ``tests/test_pretrained.py`` proves that it gives
exactly the ids of the ``tokenizers`` library reading the same model's ``tokenizer.json`` on text with accents,
punctuation, unknown words, CJK characters, emoji and control characters, so nothing is lost by reading ours.
The same test feeds both every character of the Basic Multilingual Plane: they disagree on about a hundred
characters that recent Unicode versions added or reclassified (rare scripts' punctuation and combining marks),
because Python's Unicode tables (version 14 in Python 3.11) are newer than the library's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from .padding import pad_batch

__all__ = ["basic_tokenize", "WordPieceTokenizer"]

# Blocks of the "CJK Unified Ideographs" (and their compatibility forms) that BERT treats as one-character words.
# Japanese kana and Korean hangul are not in them: they are split on whitespace like Latin text.
# BERT's original code has 0x2B820 where we write 0x2B920; we follow the ``tokenizers`` library, which the
# pretrained models are used with, so 256 rare ideographs (0x2B820-0x2B91F) are not split off there either.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_control(ch: str) -> bool:
    # tab, newline and carriage return are control characters to Unicode but whitespace to BERT
    return ch not in "\t\n\r" and unicodedata.category(ch) in ("Cc", "Cf", "Co")


def _is_punctuation(ch: str) -> bool:
    # every printable ASCII symbol counts, even "$", "+", "^" that Unicode files as symbols (S*), not punctuation (P*)
    return ("!" <= ch <= "~" and not ch.isalnum()) or unicodedata.category(ch).startswith("P")


def basic_tokenize(text: str, lowercase: bool = True) -> list[str]:
    """Split ``text`` into words as BERT does before WordPiece: clean, isolate CJK characters, lowercase and
    strip accents (when ``lowercase``), split on whitespace and around every punctuation mark.

    >>> basic_tokenize("Héllo, World! 你好")
    ['hello', ',', 'world', '!', '你', '好']
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    chars = []
    for ch in text:
        if ch in ("\0", "\ufffd") or _is_control(ch):
            continue  # invisible characters carry no meaning for the model
        if ch.isspace():
            chars.append(" ")
        elif _is_cjk(ch):
            chars.append(f" {ch} ")
        else:
            chars.append(ch)
    text = "".join(chars)
    if lowercase:
        # NFD splits "é" into "e" + a combining accent (category Mn), which we then drop. Lowercase one character
        # at a time: str.lower() on the whole text would turn a word-final "Σ" into "ς", which the reference does not
        text = "".join(c.lower() for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    words = []
    for chunk in text.split():
        word = ""
        for ch in chunk:
            if _is_punctuation(ch):
                words += [word, ch] if word else [ch]
                word = ""
            else:
                word += ch
        if word:
            words.append(word)
    return words


class WordPieceTokenizer:
    """BERT's tokenizer: :func:`basic_tokenize`, then greedy longest-match-first WordPiece over ``vocab``.

    Args:
        vocab: the tokens in id order (line ``i`` of ``vocab.txt`` has id ``i``).
        lowercase: lowercase and strip accents (the "uncased" models).
        max_chars_per_word: longer words become ``[UNK]`` without being searched.

    ``encode`` adds ``[CLS]`` at the start and ``[SEP]`` at the end, the frame every BERT input has.
    Special tokens written in the text itself (``"[MASK]"``) are kept whole.
    """

    specials = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

    def __init__(self, vocab: Sequence[str], lowercase: bool = True, max_chars_per_word: int = 100) -> None:
        self.vocab = list(vocab)
        self.token_to_id = {tok: i for i, tok in enumerate(self.vocab)}
        if len(self.token_to_id) != len(self.vocab):
            raise ValueError("vocab: expected distinct tokens, got duplicates")
        missing = [s for s in self.specials if s not in self.token_to_id]
        if missing:
            raise ValueError(f"vocab: expected the special tokens {list(self.specials)}, missing {missing}")
        self.pad_id, self.unk_id, self.cls_id, self.sep_id, self.mask_id = (self.token_to_id[s] for s in self.specials)
        self.lowercase = lowercase
        self.max_chars_per_word = max_chars_per_word
        self._special_re = re.compile("(" + "|".join(re.escape(s) for s in self.specials) + ")")

    @classmethod
    def from_file(cls, path: str | Path, lowercase: bool = True) -> WordPieceTokenizer:
        """Read a ``vocab.txt`` (one token per line, in id order)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"path: expected a vocab.txt file, got {str(path)!r}, which does not exist")
        return cls(path.read_text(encoding="utf-8").splitlines(), lowercase=lowercase)

    def __len__(self) -> int:
        return len(self.vocab)

    def wordpiece(self, word: str) -> list[str]:
        """Cut one word into vocabulary pieces, longest first: ``"unaffable" -> ["una", "##ffa", "##ble"]``.

        At each start, try the whole rest of the word, then one character shorter, and so on, until a piece is
        in the vocabulary; continue after it. If some start has no piece at all, the whole word is ``[UNK]``.
        """
        if len(word) > self.max_chars_per_word:
            return ["[UNK]"]
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.token_to_id:
                    break
                end -= 1
            else:  # no piece fits at this start
                return ["[UNK]"]
            pieces.append(piece)
            start = end
        return pieces

    def tokenize(self, text: str) -> list[str]:
        """Text -> WordPiece tokens, without ``[CLS]``/``[SEP]``."""
        tokens = []
        for part in self._special_re.split(text):
            if part in self.specials:
                tokens.append(part)
            else:
                for word in basic_tokenize(part, self.lowercase):
                    tokens += self.wordpiece(word)
        return tokens

    def encode(self, text: str, add_special_tokens: bool = True, max_length: int | None = None) -> list[int]:
        """Text -> ids, framed as ``[CLS] ... [SEP]``; with ``max_length`` the middle is cut so the total fits."""
        ids = [self.token_to_id[t] for t in self.tokenize(text)]
        if not add_special_tokens:
            return ids if max_length is None else ids[:max_length]
        if max_length is not None:
            if max_length < 2:
                raise ValueError(f"max_length: expected at least 2 (room for [CLS] and [SEP]), got {max_length}")
            ids = ids[: max_length - 2]
        return [self.cls_id, *ids, self.sep_id]

    def decode(self, ids: Sequence[int]) -> str:
        """Ids -> text: glue ``##`` pieces to the piece before, drop ``[CLS]``/``[SEP]``/``[PAD]``."""
        words: list[str] = []
        for i in ids:
            tok = self.vocab[int(i)]
            if tok in ("[CLS]", "[SEP]", "[PAD]"):
                continue
            if tok.startswith("##") and words:
                words[-1] += tok[2:]
            else:
                words.append(tok)
        return " ".join(words)

    def batch(
        self, texts: Sequence[str], max_length: int | None = None, device: torch.device | str | None = None
    ) -> tuple[Tensor, Tensor]:
        """Encode and right-pad ``texts`` with ``[PAD]``; return ``ids`` and ``attention_mask`` (1 = real token).

        Shape:
            -> ids: (B, T) int64, attention_mask: (B, T) int64, T = the longest encoded text
        """
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts) or len(texts) == 0:
            raise TypeError("texts: expected a non-empty list of str")
        seqs = [self.encode(t, max_length=max_length) for t in texts]
        ids = pad_batch(seqs, self.pad_id, device=device)  # (B, T)
        lengths = torch.tensor([len(s) for s in seqs], device=ids.device)
        mask = (torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]).long()  # (B, T)
        return ids, mask

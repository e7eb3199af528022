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

Modules: ``vocab`` (special tokens, :func:`pre_tokenize`, :class:`Vocab`), ``tokenizers`` (the three tokenizers),
``padding`` (:func:`pad_batch`, the one right-padding helper), ``wordpiece`` (BERT's tokenizer, for the pretrained
appendix).

Shape legend: ``B`` batch size, ``T`` sequence length (tokens).
"""

from .padding import pad_batch
from .tokenizers import BPETokenizer, CharTokenizer, Tokenizer, WordTokenizer
from .vocab import (
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
    Vocab,
    pre_tokenize,
)

__all__ = [
    "Vocab",
    "Tokenizer",
    "CharTokenizer",
    "WordTokenizer",
    "BPETokenizer",
    "pad_batch",
    "pre_tokenize",
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
]

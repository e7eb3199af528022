"""BLEU, the score the paper reports (Table 2), in a few lines: clipped n-gram precisions and a brevity penalty.

Papineni et al. (2002). For a corpus of hypotheses (the model's translations) and one reference each:

* for n = 1..4, the **clipped n-gram precision** p_n: every n-gram of a hypothesis counts as matched at most as often
  as it occurs in its reference (so "the the the" cannot score by repeating a right word), summed over the corpus,
  divided by the number of n-grams in the hypotheses;
* the **brevity penalty** BP = min(1, exp(1 - r / c)), with c the hypotheses' total length and r the references':
  precision alone would reward dropping every uncertain word;
* BLEU = BP · exp(mean of log p_n), reported ×100. Counts are summed over the whole corpus before dividing, so BLEU
  is a corpus score, not a mean of sentence scores.

The field reports BLEU with ``sacrebleu`` (Post, 2018), which also fixes the tokenization; on text that its default
tokenizer leaves as whitespace-separated words (the book's toy corpus), :func:`corpus_bleu` gives its number (the
chapter and a test compare them). Introduced in chapter 8.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BleuScore", "ngram_matches", "corpus_bleu"]


@dataclass(frozen=True)
class BleuScore:
    """A corpus BLEU: ``score`` (0-100), the n-gram ``precisions`` (0-1), the ``brevity_penalty``, the two lengths."""

    score: float
    precisions: tuple[float, ...]
    brevity_penalty: float
    hyp_len: int
    ref_len: int


def ngram_matches(hypothesis: Sequence[str], reference: Sequence[str], n: int) -> tuple[int, int]:
    """(clipped matches, n-grams in the hypothesis) for one sentence and one n.

    >>> ngram_matches("the the the cat".split(), "the cat".split(), 1)  # 'the' counts once: the reference has one
    (2, 4)
    """
    if n < 1:
        raise ValueError(f"n: expected an n-gram order >= 1, got {n}")
    grams = lambda words: Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))  # noqa: E731
    hyp = grams(hypothesis)
    return sum((hyp & grams(reference)).values()), sum(hyp.values())


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str], max_n: int = 4) -> BleuScore:
    """Corpus BLEU of whitespace-tokenized ``hypotheses`` against one reference each.

    No smoothing: an order with no match at all gives BLEU 0, where ``sacrebleu``'s default smooths it (the two agree
    whenever every order has a match, as on any real test set).

    >>> round(corpus_bleu(["the cat sat on the mat"], ["the cat sat on the mat"]).score, 1)
    100.0
    >>> s = corpus_bleu(["the cat sat on the"], ["the cat sat on the mat"])
    >>> [round(p, 2) for p in s.precisions], round(s.brevity_penalty, 3)  # every n-gram right, one word short
    ([1.0, 1.0, 1.0, 1.0], 0.819)
    """
    if len(hypotheses) != len(references):
        raise ValueError(f"references: expected one per hypothesis ({len(hypotheses)}), got {len(references)}")
    matched, total = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for hyp_text, ref_text in zip(hypotheses, references, strict=True):
        hyp, ref = hyp_text.split(), ref_text.split()
        hyp_len, ref_len = hyp_len + len(hyp), ref_len + len(ref)
        for n in range(1, max_n + 1):
            m, t = ngram_matches(hyp, ref, n)
            matched[n - 1] += m
            total[n - 1] += t
    precisions = tuple(m / t if t else 0.0 for m, t in zip(matched, total, strict=True))
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len) if hyp_len else 0.0
    if min(precisions) == 0.0:
        return BleuScore(0.0, precisions, brevity, hyp_len, ref_len)  # log 0: one empty order zeroes the score
    score = 100 * brevity * math.exp(sum(math.log(p) for p in precisions) / max_n)
    return BleuScore(score, precisions, brevity, hyp_len, ref_len)

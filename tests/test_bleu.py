"""transformer_lib.bleu against sacrebleu, the implementation the field reports with."""

from __future__ import annotations

import math
import random

import pytest

from transformer_lib.bleu import corpus_bleu, ngram_matches

sacrebleu = pytest.importorskip("sacrebleu")
WORDS = "le la les chat chats chien voit aime mange ne pas grande petit noire".split()


def _corpus(seed: int, n: int = 50) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    refs = [" ".join(rng.choices(WORDS, k=rng.randint(4, 12))) for _ in range(n)]
    hyps = []
    for ref in refs:  # a noisy copy: dropped, replaced and swapped words
        words = [w for w in ref.split() if rng.random() > 0.15]
        words = [rng.choice(WORDS) if rng.random() < 0.2 else w for w in words]
        if len(words) > 2 and rng.random() < 0.5:
            i = rng.randrange(len(words) - 1)
            words[i], words[i + 1] = words[i + 1], words[i]
        hyps.append(" ".join(words) or WORDS[0])
    return hyps, refs


@pytest.mark.parametrize("seed", range(5))
def test_corpus_bleu_is_sacrebleus(seed: int) -> None:
    hyps, refs = _corpus(seed)
    ours, theirs = corpus_bleu(hyps, refs), sacrebleu.corpus_bleu(hyps, [refs])
    assert 0 < ours.score < 100
    assert ours.score == pytest.approx(theirs.score, abs=1e-9)
    assert [100 * p for p in ours.precisions] == pytest.approx(theirs.precisions, abs=1e-9)
    assert (ours.hyp_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)
    assert ours.brevity_penalty == pytest.approx(theirs.bp)


def test_clipping_and_the_brevity_penalty() -> None:
    assert ngram_matches("the the the".split(), "the cat".split(), 1) == (1, 3)  # clipped at the reference's count
    short = corpus_bleu(["a b c d"], ["a b c d e f"])
    assert short.precisions == (1.0, 1.0, 1.0, 1.0) and short.brevity_penalty == pytest.approx(math.exp(1 - 6 / 4))
    assert corpus_bleu(["d c b a"], ["a b c d"]).score == 0.0  # no 2-gram in common: no smoothing
    with pytest.raises(ValueError, match="references"):
        corpus_bleu(["a"], [])

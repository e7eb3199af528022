"""Checks of assignment 6, decoding: greedy decoding and beam search, on :func:`tiny_translator`.

Each check runs the learner's function on the grader's own model (never on one the learner built), and compares
with :func:`~transformer_lib.decoding.greedy_decode` or :func:`~transformer_lib.decoding.beam_search`; a wrong
result is matched against a catalogue of decoding mistakes, each a variant of the reference loop.
Shape legend: ``B`` batch, ``T`` target length, ``S`` source length.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from ...decoding import beam_search, greedy_decode
from ...models import Transformer, TransformerConfig
from ...tokenization import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from .compare import _close, _describe, _match, _row_diff, _tensor
from .core import _call, _check, _Fail, _fixed_seed
from .hidden import _and_random, _random_cases, _size, drawn


def tiny_translator(seed: int = 5, eos_bias: float = 2.0) -> Transformer:
    """A small random encoder-decoder model (vocabulary 10, d_model 16) for decoding exercises and their checks.

    Its output layer has a bias that forbids ``<pad>``, ``<bos>`` and ``<unk>`` and makes ``<eos>`` likely, so
    that some sequences end early and others run to the length limit.
    """
    cfg = TransformerConfig(
        src_vocab_size=10,
        tgt_vocab_size=10,
        d_model=16,
        n_heads=2,
        n_encoder_layers=1,
        n_decoder_layers=1,
        d_ff=32,
        dropout=0.0,
        max_len=32,
        tie_embeddings=False,
    )
    with _fixed_seed(seed):
        model = Transformer(cfg).eval()
        head = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
    with torch.no_grad():
        head.weight.copy_(model.lm_head.weight)
        head.bias.zero_()
        head.bias[[PAD_ID, BOS_ID, UNK_ID]] = -1e4
        head.bias[EOS_ID] = eos_bias
    model.lm_head = head
    return model


_SRC = torch.tensor([[4, 5, 6, 7, 8], [8, 9, 4, 0, 0], [5, 5, 6, 0, 0], [7, 6, 5, 4, 9], [9, 8, 7, 6, 0]])


def _random_sources(g: torch.Generator, rows: int) -> Tensor:
    """``rows`` random sources of length 2-7 (ids 4-9) that end in padding (at least one id each)."""
    S = _size(g, 2, 7)
    src = torch.randint(4, 10, (rows, S), generator=g)
    lengths = torch.randint(1, S + 1, (rows,), generator=g)
    return src.masked_fill(torch.arange(S)[None, :] >= lengths[:, None], PAD_ID)


@_random_cases("check_greedy_decode")
def _random_greedy(g: torch.Generator) -> list[tuple[str, tuple[Tensor, int]]]:
    """Two batches of 1-4 random sources, 1-9 new tokens each."""
    return [(f"random case {i + 1}", (_random_sources(g, _size(g, 1, 4)), _size(g, 1, 9))) for i in range(2)]


@_random_cases("check_beam_search")
def _random_beams(g: torch.Generator) -> list[tuple[str, tuple[Tensor, int, int, float]]]:
    """Two random sources, 3-8 new tokens, beams of 2-4, length penalty 0, 0.6 or 1."""
    return [
        (
            f"random case {i + 1}",
            (_random_sources(g, 1), _size(g, 3, 8), _size(g, 2, 4), (0.0, 0.6, 1.0)[_size(g, 0, 2)]),
        )
        for i in range(2)
    ]


@torch.no_grad()
def _greedy_variant(
    model: Transformer,
    src: Tensor,
    n: int,
    *,
    position: int = -1,
    stop: bool = True,
    pad_after: bool = True,
    keep_bos: bool = True,
    steps: int | None = None,
) -> dict[str, Tensor]:
    """Greedy decoding without a cache, with one deliberate mistake."""
    memory = model.encode(src)
    tokens = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(n if steps is None else steps):
        nxt = model.lm_head(model.decode(tokens, memory, src=src)[:, position]).argmax(-1)
        if pad_after:
            nxt = nxt.masked_fill(finished, model.config.pad_id)
        tokens = torch.cat((tokens, nxt[:, None]), dim=1)
        finished |= nxt == EOS_ID
        if stop and finished.all():
            break
    return {"tokens": tokens if keep_bos else tokens[:, 1:]}


def _greedy_mistakes(model: Transformer, src: Tensor, n: int) -> list[tuple[Callable[[], dict], tuple[str, ...]]]:
    """The catalogue of greedy decoding: each plausible mistake as a variant of the loop, with its hints."""
    return [
        (
            lambda: _greedy_variant(model, src, n, keep_bos=False),
            ("Keep <bos> as the first column of the result.",),
        ),
        (
            lambda: _greedy_variant(model, src, n, position=0),
            ("You read the logits at the first position; the next token comes from the last one, h[:, -1].",),
        ),
        (lambda: _greedy_variant(model, src, n, stop=False), ("Stop as soon as every row has produced <eos>.",)),
        (
            lambda: _greedy_variant(model, src, n, pad_after=False),
            (
                "After a row has produced <eos> it must only get <pad> (model.config.pad_id).",
                "Keep a boolean `finished` per row and replace the next token of finished rows by the pad id.",
            ),
        ),
        (
            lambda: _greedy_variant(model, src, n, pad_after=False, stop=False),
            ("After a row has produced <eos> it must only get <pad>, and the loop stops once every row has ended.",),
        ),
        (
            lambda: _greedy_variant(model, src, n, steps=n - 1),
            ("One token short: generate up to max_new_tokens new tokens (off by one).",),
        ),
        (
            lambda: _greedy_variant(model, src, n, steps=n + 1),
            ("One token too many: generate at most max_new_tokens new tokens (off by one).",),
        ),
    ]


@_check("greedy_decode")
def check_greedy_decode(decode_greedy: Callable) -> str:
    """Check ``decode_greedy(model, src, max_new_tokens, bos_id, eos_id) -> (B, 1 + n)`` ids against
    :func:`~transformer_lib.decoding.greedy_decode` on :func:`tiny_translator`."""
    model = tiny_translator()
    named = [
        ("rows that end at different steps, one that never ends", _SRC, 8),
        ("every row ends early", _SRC[[0, 2]], 6),
        ("batch of one", _SRC[1:2], 3),
        ("max_new_tokens = 1", _SRC[:2], 1),
    ]
    random = drawn("check_greedy_decode")
    for label, src, n in named + [(label, src, n) for label, (src, n) in random]:
        inputs = f"{label}: {_describe(src=src)}, max_new_tokens = {n}, bos_id = {BOS_ID}, eos_id = {EOS_ID}"
        with torch.no_grad():
            got = _tensor(
                _call(decode_greedy, model, src.clone(), n, BOS_ID, EOS_ID, inputs=inputs), "The result", inputs
            )
        want = greedy_decode(model, src, n, BOS_ID, EOS_ID, use_cache=False)
        if _close(got, want):
            continue
        variants = _greedy_mistakes(model, src, n)
        hints = _match({"tokens": got}, variants, torch.float64) or (
            "Each step: run the decoder on the tokens so far, take the logits of the last position, append their "
            "argmax over the vocabulary.",
        )
        if got.shape != want.shape:
            details = (
                f"Expected shape {tuple(want.shape)}: {want.tolist()}\n"
                f"Got      shape {tuple(got.shape)}: {got.tolist()}"
            )
        else:
            details = _row_diff("tokens", got, want)
        raise _Fail("The generated ids differ from the reference.", f"Input: {inputs}\n{details}", hints)
    return _and_random(
        f"All {len(named)} cases match tl.greedy_decode (early <eos>, padding after it, a batch of one).", random
    )


@torch.no_grad()
def _log_prob(model: Transformer, src: Tensor, tokens: list[int]) -> float:
    """log P(tokens[1:] | src, tokens[0]) under the model, by teacher forcing."""
    tgt = torch.tensor([tokens])
    logp = model(src, tgt[:, :-1]).double().log_softmax(-1)  # (1, L-1, V)
    return float(logp[0].gather(-1, tgt[0, 1:, None]).sum())


@torch.no_grad()
def _beam_variant(
    model: Transformer,
    src: Tensor,
    n: int,
    k: int,
    length_penalty: float = 0.0,
    *,
    score: str = "log",
    penalty: bool = True,
    finished: str = "set aside",
    start: str = "one beam",
    stop: str = "rule",
    answer: str = "finished",
) -> list[int]:
    """Beam search for one source (the notebook's algorithm, without a cache), with one deliberate mistake.

    ``score="prob"`` adds probabilities instead of log-probabilities; ``penalty=False`` ranks finished hypotheses
    by raw log-probability; ``finished="dropped"`` throws candidates that end with <eos> away, ``"extended"`` keeps
    them as live beams; ``start="copies"`` starts from ``k`` identical beams (ties); ``stop="first"`` stops at the
    first finished hypothesis; ``answer="beams"`` returns the best live beam even when hypotheses have finished.
    """
    memory = model.encode(src)  # (1, S, C)
    beams = [([BOS_ID], 0.0)] * (k if start == "copies" else 1)
    done: list[tuple[list[int], float]] = []
    alpha = length_penalty if penalty else 0.0
    for _ in range(n):
        tokens = torch.tensor([seq for seq, _ in beams])  # (K, L)
        h = model.decode(tokens, memory.expand(len(beams), -1, -1), src=src.expand(len(beams), -1))  # (K, L, C)
        logp = model.lm_head(h[:, -1]).log_softmax(-1)  # (K, V)
        step = logp.exp() if score == "prob" else logp
        cands = sorted(
            ((s + x, seq + [t]) for (seq, s), row in zip(beams, step.tolist(), strict=True) for t, x in enumerate(row)),
            key=lambda c: -c[0],
        )
        beams = []
        for s, seq in cands:
            if seq[-1] == EOS_ID and finished != "extended":
                if finished == "set aside":
                    done.append((seq, s / ((5 + len(seq) - 1) / 6) ** alpha))
            else:
                beams.append((seq, s))
                if len(beams) == k:
                    break
        if len(done) >= (1 if stop == "first" else k) or not beams:
            break
    return max(done if done and answer == "finished" else beams or done, key=lambda b: b[1])[0]


_BEAM_FINISHED_HINTS = (
    "A candidate that ends with <eos> is a finished hypothesis: set it aside in a list (do not "
    "drop it, do not extend it) and return the best finished one; the best live beam only if "
    "none has finished.",
)
_BEAM_MISTAKES: list[tuple[dict[str, Any], tuple[str, ...]]] = [  # (keyword arguments of _beam_variant, hints)
    (
        dict(score="prob"),
        (
            "You add probabilities; beam search adds log-probabilities: a candidate's score is its beam's score plus "
            "the log_softmax of the next-token logits.",
            "P(sequence) is the product of its tokens' probabilities, so log P is the sum of their log-probabilities. "
            "A sum of probabilities is not a probability: it ranks the candidates in another order.",
        ),
    ),
    (
        dict(start="copies"),  # identical beams tie at every step: the search is greedy decoding
        (
            "Your search returns what greedy decoding returns: it keeps fewer than beam_size different beams.",
            "Start from a single beam [bos_id]: beam_size identical beams tie, so each candidate comes beam_size times "
            "and takes every slot. Then keep the beam_size best candidates of each step.",
        ),
    ),
    (dict(finished="dropped"), ("Candidates that end with <eos> are thrown away. " + _BEAM_FINISHED_HINTS[0],)),
    (
        dict(answer="beams"),
        ("You return the best live beam although hypotheses have finished. " + _BEAM_FINISHED_HINTS[0],),
    ),
    (dict(finished="extended"), _BEAM_FINISHED_HINTS),
    (
        dict(penalty=False),
        (
            "The length penalty is missing: rank finished hypotheses by log P / ((5 + n) / 6) ** length_penalty, with "
            "n the number of generated tokens (<eos> included).",
            "Without it, raw log-probability favours short outputs, since every token adds a negative term (the paper "
            "uses length_penalty = 0.6, Wu et al. 2016).",
        ),
    ),
    (
        dict(stop="first"),
        (
            "You stop at the first finished hypothesis; keep searching until beam_size hypotheses have finished (or "
            "max_new_tokens steps): a longer sentence can still be more probable.",
        ),
    ),
]


def _penalised(log_prob: float, tokens: list[int], length_penalty: float) -> float:
    """The score tl.beam_search ranks a hypothesis by: log P / ((5 + n) / 6) ** length_penalty, n tokens after <bos>."""
    return log_prob / ((5 + len(tokens) - 1) / 6) ** length_penalty


@_check("beam_search")
def check_beam_search(decode_beam: Callable) -> str:
    """Check ``decode_beam(model, src, max_new_tokens, bos_id, eos_id, beam_size, length_penalty=0.0) -> list[int]``
    (the best hypothesis of one source) against :func:`~transformer_lib.decoding.beam_search`: beam_size=1 must
    give greedy decoding, and wider beams, with and without a length penalty, the same score as the reference.

    Each case separates the reference from a classic mistake (see ``_BEAM_MISTAKES``); ``length_penalty`` is passed
    only where it is not 0, so that the cases before it run on a signature without it.
    """
    greedy_model, model = tiny_translator(), tiny_translator(seed=0, eos_bias=1.5)
    cases = [
        ("beam_size = 1 is greedy", greedy_model, _SRC[3:4], 8, 1, 0.0),
        ("beam_size = 3", model, _SRC[0:1], 8, 3, 0.0),
        ("no hypothesis ends", tiny_translator(seed=0, eos_bias=0.0), _SRC[2:3], 5, 3, 0.0),
        ("beam_size = 4", tiny_translator(seed=0, eos_bias=1.0), _SRC[0:1], 8, 4, 0.0),
        ("the first hypothesis to end is not the best", tiny_translator(seed=1, eos_bias=2.0), _SRC[1:2], 8, 4, 0.0),
        ("length_penalty = 0.6", tiny_translator(seed=1, eos_bias=1.0), _SRC[4:5], 8, 3, 0.6),
    ]
    random = drawn("check_beam_search")
    named = cases
    cases = named + [(label, model, src, n, k, alpha) for label, (src, n, k, alpha) in random]
    for label, mdl, src, n, k, alpha in cases:
        inputs = f"{label}: {_describe(src=src)}, max_new_tokens = {n}, beam_size = {k}"
        penalty: dict[str, Any] = {"length_penalty": alpha} if alpha else {}
        if alpha:
            inputs += f", length_penalty = {alpha}"
        with torch.no_grad():
            got = _call(decode_beam, mdl, src.clone(), n, BOS_ID, EOS_ID, k, inputs=inputs, **penalty)
        if isinstance(got, Tensor):
            got = got.reshape(-1).tolist()
        if not isinstance(got, (list, tuple)) or not all(isinstance(t, int) for t in got):
            raise _Fail(
                "decode_beam must return the best hypothesis as a list of ids.",
                f"Input: {inputs}",
                ("Return best.tokens, e.g. [1, 7, 4, 2]: <bos>, the generated ids, <eos> if it ended.",),
            )
        best = beam_search(mdl, src, n, BOS_ID, EOS_ID, beam_size=k, length_penalty=alpha)[0][0]
        want = best.tokens.tolist()
        got = list(got)
        if got == want:
            continue
        details = f"Input: {inputs}\nExpected {want}\nGot      {got}"
        if not got or got[0] != BOS_ID:
            raise _Fail("The hypothesis must start with <bos>.", details, ("Start every beam from [bos_id].",))
        if len(got) > n + 1 or any(t >= mdl.config.tgt_vocab_size for t in got):
            raise _Fail(
                "The hypothesis is too long or holds ids outside the vocabulary.",
                details,
                (
                    "Generate at most max_new_tokens tokens after <bos>; token ids are indices of the "
                    "vocabulary axis of the logits.",
                ),
            )
        if EOS_ID in got[:-1]:
            raise _Fail("The hypothesis goes on after <eos>.", details, _BEAM_FINISHED_HINTS)
        score = _penalised(_log_prob(mdl, src, got), got, alpha)
        ref_score = _penalised(_log_prob(mdl, src, want), want, alpha)
        details += f"\n{'score' if alpha else 'log-probability'}: expected {ref_score:.6f}, got {score:.6f}"
        if abs(score - ref_score) < 1e-4:
            continue  # a tie: another hypothesis with the same score, within float32 rounding
        hints = next((h for kw, h in _BEAM_MISTAKES if _beam_variant(mdl, src, n, k, alpha, **kw) == got), None)
        if hints is None and k == 1:
            hints = (
                "With beam_size=1, beam search is greedy decoding: keep the single best candidate at every "
                "step and stop when it emits <eos>.",
            )
        elif hints is None and score < ref_score:
            hints = (
                "Your search missed a more probable sequence: at each step rank all beam_size x vocabulary "
                "candidates together, by the sum of log-probabilities (log_softmax), not probabilities.",
                "A candidate that ends with <eos> is finished: set it aside instead of extending it; keep "
                "going down the ranked list until you have beam_size live beams.",
            )
        elif hints is None:
            hints = (
                "Your search found a sequence the reference does not return: follow the stopping rule of "
                "the docstring (stop once beam_size hypotheses have ended; return the best ended one).",
            )
        raise _Fail("The best hypothesis differs from the reference.", details, hints)
    return _and_random(
        f"All {len(named)} cases match tl.beam_search (beam sizes 1, 3 and 4; hypotheses that end, and that do "
        "not; with and without a length penalty).",
        random,
    )

"""Generating a sequence one token at a time (the loop from <START> to <END>).

Generation cannot be parallel over time: token t+1 depends on the choice of token t. Each function below runs
the model's ``start_decoding`` once (encoding the source) and then one ``decode_step`` per new token. With
``use_cache=True`` a step feeds only the newest token and reuses the keys/values of the earlier ones (KV cache);
with ``use_cache=False`` it re-runs the decoder over the whole prefix. Both give the same tokens (tested).

Works with :class:`~transformer_lib.models.Transformer` (``src`` = source ids, output starts with ``<bos>``) and
:class:`~transformer_lib.models.DecoderOnlyModel` (``src`` = the prompt, output starts with the prompt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from .kv_cache import DecodingState
from .validation import check_positive, check_tensor

if TYPE_CHECKING:  # models imports this module's neighbours; the type is only needed for the checker
    from .models import TransformerConfig

__all__ = ["greedy_decode", "beam_search", "sample", "sampling_distribution", "Hypothesis", "Decodable"]


@runtime_checkable
class Decodable(Protocol):
    """What a model must offer to be decoded by this module (``Transformer`` and ``DecoderOnlyModel`` do).

    ``start_decoding`` runs once (encoding the source, or reading the prompt) and returns the state whose
    ``tokens`` are the first input; ``decode_step`` returns the next-token logits (B, V) after ``state.tokens``.
    The functions below also use ``model.config.pad_id`` and ``model.eval()``/``model.train()``.
    """

    config: TransformerConfig

    def start_decoding(
        self, src: Tensor, bos_id: int, max_new_tokens: int, use_cache: bool = True
    ) -> DecodingState: ...

    def decode_step(self, state: DecodingState) -> Tensor: ...


class _eval_mode:
    """Run generation in eval mode (no dropout) and without gradients, then restore the model's mode."""

    def __init__(self, model: nn.Module) -> None:
        self.model, self.was_training = model, model.training
        self.no_grad = torch.no_grad()

    def __enter__(self) -> None:
        self.model.eval()
        self.no_grad.__enter__()

    def __exit__(self, *exc) -> None:
        self.no_grad.__exit__(*exc)
        self.model.train(self.was_training)


def _check_common(model: nn.Module, src: Tensor, max_new_tokens: int) -> Decodable:
    """Check the arguments every decoding function takes; return ``model`` as the :class:`Decodable` it is."""
    if not isinstance(model, Decodable):
        raise TypeError(
            f"model: expected a model with start_decoding and decode_step (a Transformer or "
            f"DecoderOnlyModel), got {type(model).__name__}"
        )
    check_tensor("src", src, ndim=2, dtype="int")
    check_positive("max_new_tokens", max_new_tokens)
    return model


def _append(state: DecodingState, next_tokens: Tensor, finished: Tensor, pad_id: int, eos_id: int) -> Tensor:
    next_tokens = next_tokens.masked_fill(finished, pad_id)  # finished rows only add padding
    state.tokens = torch.cat((state.tokens, next_tokens[:, None]), dim=1)  # (B, L + 1)
    return finished | (next_tokens == eos_id)


def greedy_decode(
    model: nn.Module, src: Tensor, max_new_tokens: int, bos_id: int, eos_id: int, use_cache: bool = True
) -> Tensor:
    """Pick the most probable token at every step until ``<eos>`` or ``max_new_tokens``.

    Positions after a row's ``<eos>`` are filled with the model's ``pad_id``.

    Shape:
        src: (B, S) -> (B, 1 + n) ids starting with ``<bos>`` (or (B, P + n) starting with the prompt)
        n: at most max_new_tokens

    Example (an untrained model: the ids are arbitrary, the layout is not):

    >>> from transformer_lib import Transformer, TransformerConfig
    >>> config = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2,
    ...                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=16)
    >>> out = greedy_decode(Transformer(config), torch.tensor([[4, 5, 6]]), 5, bos_id=1, eos_id=2)
    >>> out[0, 0].item(), out.shape[1] <= 1 + 5  # starts with <bos>, at most max_new_tokens more
    (1, True)
    """
    decodable = _check_common(model, src, max_new_tokens)
    with _eval_mode(model):
        state = decodable.start_decoding(src, bos_id, max_new_tokens, use_cache)
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_new_tokens):
            finished = _append(
                state, decodable.decode_step(state).argmax(-1), finished, decodable.config.pad_id, eos_id
            )
            if finished.all():
                break
    return state.tokens


def sampling_distribution(
    logits: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Tensor:
    """The distribution :func:`sample` draws from: softmax(logits / temperature), then keep only the ``top_k``
    most probable tokens and/or the smallest set whose probability reaches ``top_p`` (nucleus), renormalised.

    Shape:
        logits: (..., V) -> probabilities (..., V)
    """
    check_tensor("logits", logits, dtype="float")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or temperature <= 0:
        raise ValueError(f"temperature: expected a number > 0, got {temperature!r}")
    if top_k is not None:
        check_positive("top_k", top_k)
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p: expected a probability in (0, 1], got {top_p!r}")
    logits = logits.float() / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]  # (..., 1): the k-th largest logit
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(-1)
    if top_p is not None and top_p < 1.0:
        sorted_p, order = probs.sort(dim=-1, descending=True)
        before = sorted_p.cumsum(-1) - sorted_p  # probability mass strictly before each token
        drop_sorted = before >= top_p  # the first token is always kept
        probs = probs.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), 0.0)
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def sample(
    model: nn.Module,
    src: Tensor,
    max_new_tokens: int,
    bos_id: int,
    eos_id: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> Tensor:
    """Draw each next token from :func:`sampling_distribution`; same output layout as :func:`greedy_decode`.

    Pass a seeded ``generator`` (on the model's device) for repeatable samples.
    """
    decodable = _check_common(model, src, max_new_tokens)
    sampling_distribution(torch.zeros(1, 2), temperature, top_k, top_p)  # validate the options up front
    with _eval_mode(model):
        state = decodable.start_decoding(src, bos_id, max_new_tokens, use_cache)
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(max_new_tokens):
            probs = sampling_distribution(decodable.decode_step(state), temperature, top_k, top_p)
            next_tokens = torch.multinomial(probs, 1, generator=generator).squeeze(1)
            finished = _append(state, next_tokens, finished, decodable.config.pad_id, eos_id)
            if finished.all():
                break
    return state.tokens


@dataclass
class Hypothesis:
    """One finished beam: its ids (starting with ``<bos>``/the prompt) and its length-normalised log-probability."""

    tokens: Tensor
    score: float
    log_prob: float


def _length_penalty(length: int, alpha: float) -> float:
    return ((5 + length) / 6) ** alpha  # Wu et al. (2016), used by the paper with alpha = 0.6 (§6.1)


def beam_search(
    model: nn.Module,
    src: Tensor,
    max_new_tokens: int,
    bos_id: int,
    eos_id: int,
    *,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    n_best: int = 1,
    use_cache: bool = True,
) -> list[list[Hypothesis]]:
    """Keep the ``beam_size`` best partial sequences at every step (the paper: beam 4, length penalty 0.6).

    A hypothesis ends when it emits ``<eos>``; its score is log P(sequence) / ((5 + n) / 6) ** length_penalty with
    n generated tokens, so ``length_penalty=0`` ranks by raw log-probability (favouring short outputs). The
    search stops once ``beam_size`` hypotheses have ended or after ``max_new_tokens``; unfinished beams are
    then ranked with the finished ones. Each source is searched separately.

    Returns, for each row of ``src``, the ``n_best`` hypotheses, best first. With ``beam_size=1`` this is greedy
    decoding.

    Example:

    >>> from transformer_lib import Transformer, TransformerConfig
    >>> config = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2,
    ...                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=16)
    >>> beams = beam_search(Transformer(config), torch.tensor([[4, 5, 6]]), 5, 1, 2, beam_size=3, n_best=2)
    >>> len(beams), len(beams[0]), beams[0][0].score >= beams[0][1].score  # per source, best first
    (1, 2, True)
    """
    decodable = _check_common(model, src, max_new_tokens)
    check_positive("beam_size", beam_size)
    check_positive("n_best", n_best)
    if n_best > beam_size:
        raise ValueError(f"n_best: cannot exceed beam_size={beam_size}, got {n_best}")
    if length_penalty < 0:
        raise ValueError(f"length_penalty: expected a value >= 0, got {length_penalty}")
    results = []
    with _eval_mode(model):
        for row in src.split(1):
            results.append(
                _beam_one(
                    decodable,
                    row.expand(beam_size, -1),
                    max_new_tokens,
                    bos_id,
                    eos_id,
                    beam_size,
                    length_penalty,
                    n_best,
                    use_cache,
                )
            )
    return results


def _beam_one(
    model: Decodable,
    src: Tensor,
    max_new_tokens: int,
    bos_id: int,
    eos_id: int,
    k: int,
    alpha: float,
    n_best: int,
    use_cache: bool,
) -> list[Hypothesis]:
    state = model.start_decoding(src, bos_id, max_new_tokens, use_cache)
    scores = torch.full((k,), float("-inf"), device=src.device)
    scores[0] = 0.0  # all beams start identical: expand only the first one
    finished: list[Hypothesis] = []
    for step in range(1, max_new_tokens + 1):
        logp = model.decode_step(state).float().log_softmax(-1)  # (k, V)
        vocab = logp.shape[-1]
        cand = (scores[:, None] + logp).view(-1)  # (k * V,)
        top_scores, top_idx = cand.topk(min(2 * k, cand.numel()))
        keep_beam, keep_tok, keep_score = [], [], []
        for s, i in zip(top_scores.tolist(), top_idx.tolist(), strict=True):
            if s == float("-inf"):
                break
            beam, tok = divmod(i, vocab)
            if tok == eos_id:
                seq = torch.cat((state.tokens[beam], state.tokens.new_tensor([eos_id])))
                finished.append(Hypothesis(seq, s / _length_penalty(step, alpha), s))
            else:
                keep_beam.append(beam)
                keep_tok.append(tok)
                keep_score.append(s)
            if len(keep_beam) == k:
                break
        if len(finished) >= k or not keep_beam:
            break
        index = torch.tensor(keep_beam, device=src.device)
        state.reorder(index)
        state.tokens = torch.cat((state.tokens, torch.tensor(keep_tok, device=src.device)[:, None]), dim=1)
        scores = torch.tensor(keep_score, device=src.device)
        if len(keep_beam) < k:  # fewer live beams than slots: pad with dead copies
            pad = k - len(keep_beam)
            state.reorder(
                torch.cat(
                    (
                        torch.arange(len(keep_beam), device=src.device),
                        torch.zeros(pad, dtype=torch.long, device=src.device),
                    )
                )
            )
            scores = torch.cat((scores, torch.full((pad,), float("-inf"), device=src.device)))
    alive = [
        Hypothesis(state.tokens[i].clone(), s / _length_penalty(step, alpha), s)
        for i, s in enumerate(scores.tolist())
        if s != float("-inf")
    ]
    ranked = sorted(finished, key=lambda h: -h.score)
    if len(ranked) < n_best:  # not enough finished hypotheses: rank the live beams with them
        ranked = sorted(finished + alive, key=lambda h: -h.score)
    return ranked[:n_best]

"""Measurements the book makes on the library's models (chapters 5 and 6).

Nothing here is needed to train or run a Transformer; each function answers one question a chapter asks about
the library's built layers and models (the measurements of the mechanisms on their own, mostly on random vectors,
are in :mod:`transformer_lib.book.probes`, chapters 3 and 4):

* masks (ch. 5): what goes wrong with the naive ways of masking (:func:`naive_masked_softmax`), whether the
  decoder's parallel pass equals running each prefix on its own (:func:`prefix_by_prefix_logits`), and what a
  decoder learns when it is trained *without* the causal mask (:class:`PeekingDecoderOnlyModel`, trained on
  :func:`copy_sequences` with :func:`causal_lm_step`);
* multi-head attention (ch. 6): the heads run one by one (:func:`heads_one_by_one`);
* parameter counts (ch. 6b): a model's parameters by component against the closed-form arithmetic
  (:func:`count_parameters`, :func:`transformer_parameter_formula`);
* normalisation (ch. 6b): LayerNorm against BatchNorm (:func:`normalize`, :func:`padding_sensitivity`), and the
  per-layer gradient norms at initialisation of post-LN and pre-LN stacks (:func:`init_gradient_norms`).

Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key length, ``D`` head width, ``C`` d_model,
``V`` vocabulary size, ``L`` layers.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention import MultiHeadAttention, scaled_dot_product_attention
from ..kv_cache import DecodingState
from ..masks import padding_mask
from ..models import DecoderOnlyModel, TransformerConfig
from ..tokenization import BOS_ID, EOS_ID
from ..training import pad_id_of, sequence_loss
from ..validation import check_choice, check_positive, check_tensor

__all__ = [
    "naive_masked_softmax",
    "prefix_by_prefix_logits",
    "PeekingDecoderOnlyModel",
    "copy_sequences",
    "copy_loss_floor",
    "causal_lm_step",
    "heads_one_by_one",
    "count_parameters",
    "transformer_parameter_formula",
    "normalize",
    "padding_sensitivity",
    "layer_gradient_norms",
    "init_gradient_norms",
]

MaskMethod = Literal["multiply_after", "multiply_before", "add_neg_inf", "add_finfo_min"]


# --- Chapter 5: masks ------------------------------------------------------------------------------------------


def naive_masked_softmax(scores: Tensor, mask: Tensor, method: MaskMethod) -> Tensor:
    """Four ways of masking a softmax that a from-scratch implementation might use, without any safeguard.

    * ``"multiply_after"``: ``softmax(scores) * mask``. Blocked keys get 0, but the row no longer sums to 1
      (the blocked keys' share of the probability is thrown away, not redistributed).
    * ``"multiply_before"``: ``softmax(scores * M)`` with ``M = 1`` (allowed) or ``-inf`` (blocked), a literal
      reading of "multiply by a 1/-inf mask". It works only where every blocked score is positive: a negative
      score times -inf is +inf, a zero score gives NaN, and either turns the whole row into NaN.
    * ``"add_neg_inf"``: ``softmax(scores + M)`` with ``M = 0`` (allowed) or ``-inf`` (blocked). Exact zeros and
      rows that sum to 1; a row whose keys are *all* blocked is ``exp(-inf) / 0`` = NaN.
    * ``"add_finfo_min"``: ``M = torch.finfo(dtype).min`` instead of ``-inf`` (what fp16 code often does). An
      all-blocked row becomes uniform (every logit equally tiny), not zeros; and ``finfo.min`` is at the edge of
      the range: adding it twice (two additive masks) overflows to ``-inf``, in float16 even ``min - 16`` does.

    The library's :func:`~transformer_lib.attention.scaled_dot_product_attention` has none of these problems.

    Shape:
        scores: (..., T, S) float, mask: broadcastable to (..., T, S) bool (True = may attend) -> (..., T, S)
    """
    check_tensor("scores", scores, dtype="float")
    check_tensor("mask", mask, dtype="bool")
    try:
        torch.broadcast_shapes(mask.shape, scores.shape)
    except RuntimeError:
        raise ValueError(
            f"mask: shape {tuple(mask.shape)} does not broadcast to the scores' shape {tuple(scores.shape)}"
        ) from None
    check_choice("method", method, ("multiply_after", "multiply_before", "add_neg_inf", "add_finfo_min"))
    if method == "multiply_after":
        return scores.softmax(dim=-1) * mask.to(scores.dtype)
    if method == "multiply_before":
        ones = torch.ones(mask.shape, dtype=scores.dtype, device=scores.device)
        return (scores * ones.masked_fill(~mask, float("-inf"))).softmax(dim=-1)
    fill = float("-inf") if method == "add_neg_inf" else torch.finfo(scores.dtype).min
    additive = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device).masked_fill(~mask, fill)
    return (scores + additive).softmax(dim=-1)  # (..., T, S)


@torch.no_grad()
def prefix_by_prefix_logits(model: nn.Module, ids: Tensor) -> Tensor:
    """The decoder run the slow, sequential way: for each t, feed ``ids[:, :t+1]`` alone and keep the last logits.

    ``model`` maps ids (B, T) to logits (B, T, V), like :class:`~transformer_lib.models.DecoderOnlyModel`. With
    the causal mask this equals ``model(ids)`` (one parallel pass); without it, it does not.

    Shape:
        ids: (B, T) int64 without padding -> logits (B, T, V)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected an nn.Module mapping ids to logits, got {type(model).__name__}")
    check_tensor("ids", ids, ndim=2, dtype="int")
    rows = [model(ids[:, : t + 1])[:, -1] for t in range(ids.shape[1])]  # T x (B, V)
    return torch.stack(rows, dim=1)  # (B, T, V)


class PeekingDecoderOnlyModel(DecoderOnlyModel):
    """A :class:`~transformer_lib.models.DecoderOnlyModel` trained *without* the causal mask (only padding).

    Every position can read the token it is asked to predict, so its training loss collapses while it learns
    little that helps generation: the "cheating" decoder of chapter 5. Generation always re-runs the whole
    prefix: a KV cache assumes that earlier positions never change when a token is appended, which holds only
    under the causal mask.

    Shape:
        ids: (B, T) int64 -> logits (B, T, V)
    """

    def mask(self, ids: Tensor) -> Tensor:
        """Padding mask only. Shape: (B, T) -> (B, 1, 1, T)."""
        return padding_mask(ids, self.config.pad_id)

    def start_decoding(self, prompt: Tensor, bos_id: int, max_new_tokens: int, use_cache: bool = True) -> DecodingState:
        return super().start_decoding(prompt, bos_id, max_new_tokens, use_cache=False)


def copy_sequences(
    n: int,
    length: int,
    n_symbols: int = 10,
    *,
    bos_id: int = BOS_ID,
    eos_id: int = EOS_ID,
    first_symbol: int = 4,
    seed: int = 0,
) -> Tensor:
    """Sequences ``<bos> x_1 .. x_length x_1 .. x_length <eos>`` with random symbols: a language-model copy task.

    The first half cannot be predicted (uniform random); the second half and ``<eos>`` are fully determined by
    what came before.

    Shape:
        output: (n, 2 + 2 * length) int64, symbols in [first_symbol, first_symbol + n_symbols)
    """
    for name, value in (("n", n), ("length", length), ("n_symbols", n_symbols)):
        check_positive(name, value)
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(first_symbol, first_symbol + n_symbols, (n, length), generator=g)  # (n, length)
    bos, eos = torch.full((n, 1), bos_id), torch.full((n, 1), eos_id)
    return torch.cat((bos, x, x, eos), dim=1)


def copy_loss_floor(length: int, n_symbols: int) -> float:
    """The lowest expected loss an honest model can reach on :func:`copy_sequences`: of the 2·length + 1
    targets, ``length`` are uniform over ``n_symbols`` (cross-entropy ln n_symbols each) and the rest can be
    predicted exactly (0). A training loss far below it means the model reads what it should predict."""
    check_positive("length", length)
    check_positive("n_symbols", n_symbols)
    return length * math.log(n_symbols) / (2 * length + 1)


def causal_lm_step(
    model: nn.Module, batch: Tensor | tuple | list, label_smoothing: float = 0.0
) -> tuple[Tensor, Tensor, Tensor]:
    """A ``step_fn`` for :func:`~transformer_lib.training.train` with decoder-only models: predict token t+1
    from tokens <= t. ``batch`` is a (B, T+1) id tensor (or a 1-element tuple/list holding one).

    Shape:
        batch: (B, T+1) -> loss scalar, logits (B, T, V), targets (B, T)
    """
    ids = batch[0] if isinstance(batch, (tuple, list)) else batch
    check_tensor("batch", ids, ndim=2, dtype="int")
    inputs, targets = ids[:, :-1], ids[:, 1:]  # (B, T), (B, T): targets are the inputs shifted left by one
    logits = model(inputs)
    return sequence_loss(logits, targets, pad_id_of(model), label_smoothing), logits, targets


# --- Chapter 6: multi-head attention and parameter counts ------------------------------------------------------


def heads_one_by_one(
    mha: MultiHeadAttention, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
) -> Tensor:
    """Multi-head attention with an explicit loop over heads, using ``mha``'s weights: for head i, project with
    the rows i·D:(i+1)·D of W^Q, W^K, W^V, attend, then concatenate the H outputs and apply W^O.

    Equal to ``mha(query, key, value, mask)[0]`` (the one-matrix-product version) up to rounding.

    Shape:
        query: (B, T, C), key, value: (B, S, C), mask: broadcastable to (B, 1, T, S) -> (B, T, C)
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha: expected a tl.MultiHeadAttention, got {type(mha).__name__}")
    C, D = mha.d_model, mha.d_head
    W, b = mha.qkv_proj.weight, mha.qkv_proj.bias  # (3C, C): [W^Q; W^K; W^V]
    heads = []
    for i in range(mha.n_heads):
        rows = [slice(part * C + i * D, part * C + (i + 1) * D) for part in range(3)]  # head i's rows of Q, K, V
        q, k, v = (
            F.linear(x, W[r], None if b is None else b[r])[:, None]  # (B, 1, T or S, D)
            for x, r in zip((query, key, value), rows, strict=True)
        )
        m = mask[:, i : i + 1] if mask is not None and mask.dim() == 4 and mask.shape[1] > 1 else mask
        out, _ = scaled_dot_product_attention(q, k, v, m, impl="eager")  # (B, 1, T, D)
        heads.append(out[:, 0])  # (B, T, D)
    return mha.o_proj(torch.cat(heads, dim=-1))  # concat -> (B, T, C), then W^O


_COMPONENTS = [
    "embeddings",
    "encoder self-attention",
    "encoder feed-forward",
    "encoder layer norms",
    "decoder self-attention",
    "decoder cross-attention",
    "decoder feed-forward",
    "decoder layer norms",
    "output layer",
]


def count_parameters(model: nn.Module) -> dict[str, int]:
    """Trainable parameters grouped by component; shared (tied) tensors are counted once.

    Keys: ``"embeddings"`` (token and learned position tables), ``"<stack> self-attention"``,
    ``"decoder cross-attention"``, ``"<stack> feed-forward"``, ``"<stack> layer norms"`` (stack = encoder or
    decoder) and ``"output layer"`` (only when it is not tied to an embedding). The values sum to the total.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model: expected an nn.Module, got {type(model).__name__}")
    counts: dict[str, int] = {}
    for name, p in model.named_parameters():  # yields each shared tensor once, under its first name
        parts = name.split(".")
        stack = "encoder" if "encoder" in parts else "decoder" if "decoder" in parts else None
        if stack is None:
            group = "output layer" if parts[0] in ("lm_head", "head") else "embeddings"
        elif "self_attn" in parts or "cross_attn" in parts:
            group = f"{stack} {'self' if 'self_attn' in parts else 'cross'}-attention"
        elif "ff" in parts:
            group = f"{stack} feed-forward"
        else:
            group = f"{stack} layer norms"
        counts[group] = counts.get(group, 0) + p.numel()
    return {group: counts[group] for group in sorted(counts, key=_COMPONENTS.index)}


def transformer_parameter_formula(config: TransformerConfig) -> dict[str, int]:
    """The same grouping as :func:`count_parameters` for ``tl.Transformer(config)``, from the closed forms:
    attention 4·C² (+ 4·C biases), feed-forward 2·C·d_ff (+ d_ff + C), LayerNorm 2·C, embedding V·C."""
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config: expected a TransformerConfig, got {type(config).__name__}")
    C, d_ff, bias = config.d_model, config.d_ff, int(config.bias)
    attn = 4 * C * C + 4 * C * bias
    ff = 2 * C * d_ff + (d_ff + C) * bias
    norm = C * (1 + bias)
    tables = [config.src_vocab_size] + ([] if config.share_src_embedding else [config.tgt_vocab_size])
    emb = sum(v * C for v in tables)
    if config.positional == "learned":
        emb += len(tables) * config.max_len * C
    final = norm if config.norm_first else 0
    out = {
        "embeddings": emb,
        "encoder self-attention": config.n_encoder_layers * attn,
        "encoder feed-forward": config.n_encoder_layers * ff,
        "encoder layer norms": config.n_encoder_layers * 2 * norm + final,
        "decoder self-attention": config.n_decoder_layers * attn,
        "decoder cross-attention": config.n_decoder_layers * attn,
        "decoder feed-forward": config.n_decoder_layers * ff,
        "decoder layer norms": config.n_decoder_layers * 3 * norm + final,
    }
    if not config.tie_embeddings:
        out["output layer"] = config.tgt_vocab_size * C
    return out


# --- Chapter 6b: LayerNorm against BatchNorm; post-LN against pre-LN ---------------------------------------------


def normalize(x: Tensor, kind: Literal["layer", "batch"], eps: float = 1e-5) -> Tensor:
    """Training-mode normalisation without learned scale/shift, to compare the axes.

    ``"layer"``: each token's C features get mean 0, variance 1 (statistics over the last axis, per (b, t)).
    ``"batch"``: each feature gets mean 0, variance 1 over every token of every sequence in the batch
    (statistics over the B and T axes, per channel) -- what ``nn.BatchNorm1d`` does in training.

    Shape:
        x: (B, T, C) -> (B, T, C)
    """
    check_tensor("x", x, ndim=3, dtype="float")
    check_choice("kind", kind, ("layer", "batch"))
    dims = (-1,) if kind == "layer" else (0, 1)
    mean = x.mean(dim=dims, keepdim=True)  # (B, T, 1) or (1, 1, C)
    var = x.var(dim=dims, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps)


def padding_sensitivity(x: Tensor, n_pad: int, kind: Literal["layer", "batch"], pad_value: float = 0.0) -> float:
    """How much appending ``n_pad`` padding positions (vectors of ``pad_value``) to every sequence changes the
    normalised real tokens: the largest absolute difference. 0 for LayerNorm; > 0 for BatchNorm, whose
    statistics include the padding.

    Shape:
        x: (B, T, C) real tokens only
    """
    check_tensor("x", x, ndim=3, dtype="float")
    check_positive("n_pad", n_pad)
    padded = torch.cat((x, x.new_full((x.shape[0], n_pad, x.shape[2]), pad_value)), dim=1)  # (B, T + n_pad, C)
    return float((normalize(padded, kind)[:, : x.shape[1]] - normalize(x, kind)).abs().max())


def layer_gradient_norms(model: DecoderOnlyModel, ids: Tensor, param: str = "ff.linear2.weight") -> Tensor:
    """One language-model backward pass (:func:`causal_lm_step`) and the gradient norm of ``param`` in each
    decoder layer, bottom (layer 1) to top. The model's gradients are cleared before and after.

    Shape:
        ids: (B, T+1) int64 -> (L,)
    """
    if not isinstance(model, DecoderOnlyModel):
        raise TypeError(f"model: expected a tl.DecoderOnlyModel, got {type(model).__name__}")
    names = dict(model.decoder.layers[0].named_parameters())
    if param not in names:
        raise ValueError(
            f"param: expected a parameter name of a decoder layer, e.g. {sorted(names)[:3]}, got {param!r}"
        )
    model.zero_grad(set_to_none=True)
    loss, _, _ = causal_lm_step(model, ids)
    loss.backward()
    grads = [layer.get_parameter(param).grad for layer in model.decoder.layers]
    if any(g is None for g in grads):
        raise ValueError(f"param: {param!r} received no gradient in some layer (is it used by the forward pass?)")
    norms = torch.stack([g.norm() for g in grads if g is not None])  # (L,)
    model.zero_grad(set_to_none=True)
    return norms.detach()


def init_gradient_norms(
    config: TransformerConfig,
    *,
    n_seeds: int = 8,
    batch_size: int = 16,
    seq_len: int = 32,
    param: str = "ff.linear2.weight",
    device: torch.device | str | None = None,
) -> Tensor:
    """Per-layer gradient norms of ``param`` at initialisation, averaged over ``n_seeds`` freshly initialised
    :class:`~transformer_lib.models.DecoderOnlyModel` s fed uniformly random tokens (as in Xiong et al., 2020).
    Compare ``config`` with ``norm_first=False`` (post-LN) and ``True`` (pre-LN). Dropout is switched off.

    Shape:
        -> (L,) with L = config.n_decoder_layers, layer 1 first
    """
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"config: expected a TransformerConfig, got {type(config).__name__}")
    for name, value in (("n_seeds", n_seeds), ("batch_size", batch_size), ("seq_len", seq_len)):
        check_positive(name, value)
    total = torch.zeros(config.n_decoder_layers)
    for seed in range(n_seeds):
        with torch.random.fork_rng(devices=[]):  # seeded, without disturbing the caller's random state
            torch.manual_seed(seed)
            model = DecoderOnlyModel(config).to(device).eval()  # eval: no dropout noise in the measurement
            ids = torch.randint(4, config.tgt_vocab_size, (batch_size, seq_len + 1)).to(device)
        total += layer_gradient_norms(model, ids, param).to(total.device)
    return total / n_seeds

"""Benchmark 1: training-step throughput of ``tl.Transformer`` against ``torch.nn.Transformer``.

Both sides get the same architecture and the same weights: ``torch.nn.Transformer`` is wrapped with the embeddings
and output layer our model has (a token table ×√d_model plus the fixed sinusoids, dropout, a bias-free linear
output layer), and its weights are copied into ours, so before timing we check that the two compute the same
logits. Both are trained with the same loss (:func:`tl.sequence_loss`), the same masks (causal + padding, with
real padding in the batch), the same Adam optimiser, on the same device and dtype.

One difference is built into ``nn.Transformer``: it always ends each stack with a LayerNorm. The paper's post-LN
stack has none (each sub-layer already ends in a LayerNorm), so for ``norm_first=False`` we remove torch's two
final norms to compare the same computation; for ``norm_first=True`` both models have them.
"""

from __future__ import annotations

import math
import warnings

import torch
from torch import Tensor, nn

import transformer_lib as tl

from .common import environment, format_table, interleaved_times, ratio_summary, summarize

__all__ = ["TorchTransformerLM", "matched_pair", "random_batch", "train_step_benchmark", "QUICK", "FULL"]

FULL = dict(
    d_model=256, n_heads=8, n_layers=2, d_ff=1024, vocab_size=2000, batch_size=8, seq_len=48, repeats=9, inner=2
)
QUICK = dict(
    d_model=128, n_heads=4, n_layers=2, d_ff=512, vocab_size=1000, batch_size=8, seq_len=32, repeats=5, inner=2
)


class TorchTransformerLM(nn.Module):
    """``torch.nn.Transformer`` with the embeddings and output layer of :class:`tl.Transformer`.

    Masks are given the way torch's documentation asks: a causal mask with ``tgt_is_causal=True`` and
    key-padding masks for the source, the target and the memory (all boolean, in torch's sense: True = blocked).

    Shape:
        src: (B, S) int64, tgt: (B, T) int64 -> logits (B, T, V)
    """

    def __init__(self, cfg: tl.TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model)
        self.register_buffer("pe", tl.sinusoidal_encoding(cfg.max_len, cfg.d_model), persistent=False)
        self.dropout = nn.Dropout(cfg.dropout)
        with warnings.catch_warnings():  # torch warns that norm_first disables its nested-tensor inference path
            warnings.simplefilter("ignore")
            self.transformer = nn.Transformer(
                cfg.d_model,
                cfg.n_heads,
                cfg.n_encoder_layers,
                cfg.n_decoder_layers,
                cfg.d_ff,
                cfg.dropout,
                cfg.activation,
                batch_first=True,
                norm_first=cfg.norm_first,
                layer_norm_eps=cfg.layer_norm_eps,
                bias=cfg.bias,
            )
        if not cfg.norm_first:  # the paper's post-LN stacks have no final LayerNorm (see the module docstring)
            self.transformer.encoder.norm = None
            self.transformer.decoder.norm = None
        self.lm_head = nn.Linear(cfg.d_model, cfg.tgt_vocab_size, bias=False)

    def _embed(self, table: nn.Embedding, ids: Tensor) -> Tensor:
        return self.dropout(table(ids) * math.sqrt(self.cfg.d_model) + self.pe[: ids.shape[1]])  # (B, T, C)

    def forward(self, src: Tensor, tgt: Tensor) -> Tensor:
        pad = self.cfg.pad_id
        T = tgt.shape[1]
        causal = torch.ones(T, T, dtype=torch.bool, device=tgt.device).triu(1)  # (T, T), True above the diagonal
        h = self.transformer(
            self._embed(self.src_embed, src),
            self._embed(self.tgt_embed, tgt),
            tgt_mask=causal,
            tgt_is_causal=True,
            src_key_padding_mask=src == pad,
            tgt_key_padding_mask=tgt == pad,
            memory_key_padding_mask=src == pad,
        )
        return self.lm_head(h)  # (B, T, V)


def matched_pair(
    cfg: tl.TransformerConfig, device: torch.device | str = "cpu"
) -> tuple[tl.Transformer, TorchTransformerLM]:
    """Our model and torch's, holding the same weights (theirs are initialised, then copied into ours)."""
    if cfg.tie_embeddings or cfg.share_src_embedding or cfg.positional != "sinusoidal" or not cfg.scale_embeddings:
        raise ValueError("cfg: the matched pair needs untied embeddings, sinusoidal positions and √d_model scaling")
    theirs = TorchTransformerLM(cfg)
    ours = tl.Transformer(cfg)
    with torch.no_grad():
        ours.src_embed.token.weight.copy_(theirs.src_embed.weight)
        ours.tgt_embed.token.weight.copy_(theirs.tgt_embed.weight)
        ours.encoder.load_state_dict(tl.from_torch(theirs.transformer.encoder).state_dict())
        ours.decoder.load_state_dict(tl.from_torch(theirs.transformer.decoder).state_dict())
        ours.lm_head.weight.copy_(theirs.lm_head.weight)
    return ours.to(device), theirs.to(device)


def random_batch(
    batch_size: int,
    seq_len: int,
    vocab_size: int,
    *,
    pad_id: int = 0,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> tuple[Tensor, Tensor, Tensor]:
    """Random (src, tgt_in, tgt_out) ids with real padding: row lengths spread between seq_len / 2 and seq_len.

    Shape:
        -> three (batch_size, seq_len) int64 tensors
    """
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(pad_id + 1, vocab_size, (3, batch_size, seq_len), generator=g)
    lengths = torch.randint(max(1, seq_len // 2), seq_len + 1, (2, batch_size), generator=g)
    lengths[:, 0] = seq_len  # one full row, so the padded length is exactly seq_len
    pos = torch.arange(seq_len)
    src = ids[0].masked_fill(pos >= lengths[0, :, None], pad_id)
    tgt_in = ids[1].masked_fill(pos >= lengths[1, :, None], pad_id)
    tgt_out = ids[2].masked_fill(pos >= lengths[1, :, None], pad_id)
    return src.to(device), tgt_in.to(device), tgt_out.to(device)


def _step_fn(model: nn.Module, batch: tuple[Tensor, Tensor, Tensor], pad_id: int, amp_dtype: torch.dtype | None):
    src, tgt_in, tgt_out = batch
    device = src.device
    optimizer = tl.training.paper_adam(model.parameters(), lr=1e-4)

    def step() -> None:
        with torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = tl.sequence_loss(model(src, tgt_in), tgt_out, pad_id)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return step


def train_step_benchmark(
    *,
    d_model: int = FULL["d_model"],
    n_heads: int = FULL["n_heads"],
    n_layers: int = FULL["n_layers"],
    d_ff: int = FULL["d_ff"],
    vocab_size: int = FULL["vocab_size"],
    batch_size: int = FULL["batch_size"],
    seq_len: int = FULL["seq_len"],
    dropout: float = 0.1,
    activation: str = "relu",
    norm_first: bool = False,
    repeats: int = FULL["repeats"],
    inner: int = FULL["inner"],
    device: torch.device | str | None = None,
    seed: int = 0,
) -> dict:
    """Tokens per second of one training step (forward + backward + Adam step), ours against torch's.

    On CUDA both run under bfloat16 autocast; on the CPU in float32. The ratio ``ours / theirs`` is taken per
    interleaved round and summarised over rounds (median, IQR, min, max); > 1 means ours is faster.
    ``max_abs_logit_diff`` is the largest difference between the two models' logits (eval mode, same weights):
    the proof that both sides compute the same function.
    """
    device = torch.device(device) if device is not None else tl.get_device()
    amp_dtype = torch.bfloat16 if device.type == "cuda" else None
    cfg = tl.TransformerConfig(
        src_vocab_size=vocab_size,
        tgt_vocab_size=vocab_size,
        d_model=d_model,
        n_heads=n_heads,
        n_encoder_layers=n_layers,
        n_decoder_layers=n_layers,
        d_ff=d_ff,
        dropout=dropout,
        max_len=max(seq_len, 8),
        norm_first=norm_first,
        activation=activation,
        tie_embeddings=False,
    )
    torch.manual_seed(seed)
    ours, theirs = matched_pair(cfg, device)
    batch = random_batch(batch_size, seq_len, vocab_size, pad_id=cfg.pad_id, seed=seed, device=device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's eval path announces its prototype nested tensors
        diff = (ours.eval()(*batch[:2]) - theirs.eval()(*batch[:2])).abs().max().item()
    ours.train(), theirs.train()
    times = interleaved_times(
        {"ours": _step_fn(ours, batch, cfg.pad_id, amp_dtype), "torch": _step_fn(theirs, batch, cfg.pad_id, amp_dtype)},
        repeats=repeats,
        inner=inner,
        warmup=1,
        device=device,
    )
    tokens = batch_size * 2 * seq_len  # source + target positions per step (padding included, the same for both)
    return {
        "name": "train_step",
        "env": environment(device, amp_dtype or torch.float32),
        "config": dict(
            d_model=d_model,
            n_heads=n_heads,
            n_layers=n_layers,
            d_ff=d_ff,
            vocab_size=vocab_size,
            batch_size=batch_size,
            seq_len=seq_len,
            dropout=dropout,
            activation=activation,
            norm_first=norm_first,
            repeats=repeats,
            inner=inner,
        ),
        "tokens_per_step": tokens,
        "max_abs_logit_diff": diff,
        "step_seconds": {name: summarize(t) for name, t in times.items()},
        "tokens_per_second": {name: summarize([tokens / s for s in t]) for name, t in times.items()},
        "ratio_ours_vs_torch": ratio_summary(times["torch"], times["ours"]),
    }


def table(results: list[dict]) -> str:
    """Plain-text table of one or more :func:`train_step_benchmark` results."""
    rows = [
        {
            "norm": "pre-LN" if r["config"]["norm_first"] else "post-LN",
            "ours": r["tokens_per_second"]["ours"]["median"],
            "torch": r["tokens_per_second"]["torch"]["median"],
            "ratio": r["ratio_ours_vs_torch"]["median"],
            "range": f"{r['ratio_ours_vs_torch']['min']:.3f}-{r['ratio_ours_vs_torch']['max']:.3f}",
            "diff": r["max_abs_logit_diff"],
        }
        for r in results
    ]
    return format_table(
        rows,
        [
            ("stack", "norm"),
            ("ours tok/s", "ours"),
            ("torch tok/s", "torch"),
            ("ours/torch", "ratio"),
            ("min-max", "range"),
            ("max |Δlogit|", "diff"),
        ],
        "Training step (forward + backward + Adam), median over interleaved rounds",
    )

"""Benchmark 3: greedy decoding with and without the KV cache.

Without the cache, step ``t`` re-runs the decoder over all ``t`` tokens generated so far, so generating ``n`` tokens
costs on the order of n² token-passes (and n³ attention work); with the cache each step feeds only the newest token
and reuses the keys and values of the earlier ones, so it costs on the order of n token-passes. Both produce the same
tokens (checked here and in ``tests/test_models.py``).

To force exactly ``n`` steps we decode from an untrained model with ``eos_id=-1``, an id the arg-max can never
return, so no row ever finishes early.
"""

from __future__ import annotations

import torch

import transformer_lib as tl
from transformer_lib.tokenization import BOS_ID

from .common import environment, format_table, interleaved_times, ratio_summary, summarize

__all__ = ["decoding_benchmark", "positions_fed", "FULL", "QUICK"]

FULL = dict(
    d_model=256,
    n_heads=4,
    n_layers=3,
    d_ff=1024,
    vocab_size=1000,
    batch_size=8,
    src_len=32,
    new_tokens=(32, 64, 128, 256),
    repeats=3,
)
QUICK = dict(
    d_model=192,
    n_heads=4,
    n_layers=2,
    d_ff=768,
    vocab_size=1000,
    batch_size=4,
    src_len=16,
    new_tokens=(32, 64, 128),
    repeats=2,
)


def positions_fed(model: torch.nn.Module, src: torch.Tensor, n: int, *, use_cache: bool) -> int:
    """How many target positions the decoder embeds while greedily generating ``n`` tokens for one row.

    This is the work the KV cache saves, counted rather than timed, so it does not depend on how busy the machine
    is: with the cache each step embeds only its newest token (``n`` in all); without it step ``t`` embeds all
    ``t`` tokens so far (``n (n + 1) / 2`` in all).
    """
    embed = getattr(model, "tgt_embed", None) or model.embed  # encoder-decoder, or decoder-only
    counted = []
    hook = embed.register_forward_hook(lambda _module, args, _out: counted.append(args[0].shape[-1]))
    try:
        tl.greedy_decode(model, src[:1], n, bos_id=BOS_ID, eos_id=-1, use_cache=use_cache)
    finally:
        hook.remove()
    return sum(counted)


def decoding_benchmark(
    *,
    d_model: int = FULL["d_model"],
    n_heads: int = FULL["n_heads"],
    n_layers: int = FULL["n_layers"],
    d_ff: int = FULL["d_ff"],
    vocab_size: int = FULL["vocab_size"],
    batch_size: int = FULL["batch_size"],
    src_len: int = FULL["src_len"],
    new_tokens: tuple[int, ...] = FULL["new_tokens"],
    repeats: int = FULL["repeats"],
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
    seed: int = 0,
) -> dict:
    """Seconds to greedily generate each of ``new_tokens`` tokens per row, cached against uncached.

    ``dtype`` defaults to float32 on the CPU and bfloat16 on CUDA. ``speedup`` is uncached time / cached time
    per interleaved round, summarised over rounds, for each length.
    """
    device = torch.device(device) if device is not None else tl.get_device()
    dtype = dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    lengths = sorted(int(n) for n in new_tokens)
    if not lengths or lengths[0] < 1:
        raise ValueError(f"new_tokens: expected positive lengths, got {new_tokens}")
    torch.manual_seed(seed)
    cfg = tl.TransformerConfig(
        src_vocab_size=vocab_size,
        tgt_vocab_size=vocab_size,
        d_model=d_model,
        n_heads=n_heads,
        n_encoder_layers=n_layers,
        n_decoder_layers=n_layers,
        d_ff=d_ff,
        dropout=0.0,
        max_len=max(src_len, lengths[-1] + 1),
    )
    model = tl.Transformer(cfg).to(device=device, dtype=dtype).eval()
    src = torch.randint(4, vocab_size, (batch_size, src_len), generator=torch.Generator().manual_seed(seed))
    src = src.to(device)

    def run(n: int, use_cache: bool):
        return lambda: tl.greedy_decode(model, src, n, bos_id=BOS_ID, eos_id=-1, use_cache=use_cache)

    rows = []
    for n in lengths:
        cached, uncached = run(n, True)(), run(n, False)()
        if cached.shape != (batch_size, n + 1):
            raise RuntimeError(f"decoding stopped early: expected {n + 1} tokens per row, got {cached.shape[1]}")
        times = interleaved_times(
            {"cached": run(n, True), "uncached": run(n, False)}, repeats=repeats, warmup=0, device=device
        )
        rows.append(
            {
                "new_tokens": n,
                "same_tokens": bool(torch.equal(cached, uncached)),
                "cached_positions": positions_fed(model, src, n, use_cache=True),
                "uncached_positions": positions_fed(model, src, n, use_cache=False),
                "cached_seconds": summarize(times["cached"]),
                "uncached_seconds": summarize(times["uncached"]),
                "cached_ms_per_token": summarize([1e3 * t / n for t in times["cached"]]),
                "uncached_ms_per_token": summarize([1e3 * t / n for t in times["uncached"]]),
                "speedup": ratio_summary(times["uncached"], times["cached"]),
            }
        )
    return {
        "name": "decoding",
        "env": environment(device, dtype),
        "config": dict(
            d_model=d_model,
            n_heads=n_heads,
            n_layers=n_layers,
            d_ff=d_ff,
            vocab_size=vocab_size,
            batch_size=batch_size,
            src_len=src_len,
            new_tokens=lengths,
            repeats=repeats,
        ),
        "rows": rows,
    }


def speedup_at(result: dict, n: int) -> float | None:
    """The median speedup at ``n`` new tokens, or None when ``n`` was not measured."""
    for row in result["rows"]:
        if row["new_tokens"] == n:
            return row["speedup"]["median"]
    return None


def table(result: dict) -> str:
    """Plain-text table of a :func:`decoding_benchmark` result."""
    rows = [
        {
            "n": r["new_tokens"],
            "cached": r["cached_ms_per_token"]["median"],
            "uncached": r["uncached_ms_per_token"]["median"],
            "speedup": r["speedup"]["median"],
            "range": f"{r['speedup']['min']:.2f}-{r['speedup']['max']:.2f}",
            "same": r["same_tokens"],
        }
        for r in result["rows"]
    ]
    return format_table(
        rows,
        [
            ("new tokens", "n"),
            ("cached ms/token", "cached"),
            ("uncached ms/token", "uncached"),
            ("speedup", "speedup"),
            ("min-max", "range"),
            ("same tokens", "same"),
        ],
        "Greedy decoding, KV cache against recomputing the prefix (median over rounds)",
    )

"""Data-parallel training on several processes (``torch.nn.parallel.DistributedDataParallel``).

Run it with ``torchrun`` (one process per GPU, or several on a CPU)::

    torchrun --nproc_per_node 2 -m transformer_lib.distributed --task copy --steps 20 --out runs/ddp

or without ``torchrun`` for the single-process run it must agree with::

    python -m transformer_lib.distributed --task copy --steps 20 --out runs/single

Data parallelism in four lines: every process holds a full copy of the model; at each step every process builds
the same *global* batch from the same seed and keeps its own shard of rows; after ``backward`` DDP averages the
gradients over the processes (an all-reduce: gloo on the CPU, NCCL on GPUs); every process then takes the same
optimiser step, so the copies stay identical.

One detail makes the result equal to one process training on the whole global batch: the loss. The per-token
mean over a *shard* would weight a short shard's tokens more than the global mean does, so each process divides
its summed token loss by the number of target tokens in the *global* batch and multiplies by the number of
processes (undoing DDP's averaging). ``tests/test_distributed.py`` checks the weights agree to 1e-6, except the bias of
W^K: softmax ignores it, so its true gradient is zero and Adam amplifies the rounding noise it gets instead.

Shape legend: ``B`` global batch, ``W`` world size (number of processes), ``B / W`` rows per process.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from .checkpoints import save_checkpoint
from .data import TASKS, TaskName, collate_pairs, make_task, task_vocab_size
from .device import seed_everything
from .models import Transformer, TransformerConfig
from .training import paper_adam
from .validation import check_choice, check_positive

__all__ = ["DataParallelRun", "train_data_parallel", "main"]


def _world() -> tuple[int, int, int]:
    """(rank, world size, local rank) from the variables torchrun sets; (0, 1, 0) without torchrun."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))


@dataclass(frozen=True)
class DataParallelRun:
    """Everything one data-parallel run depends on: the task, the model and the optimisation (the defaults are the
    small copy-task run that ``tests/test_distributed.py`` and the performance appendix use).

    ``global_batch`` counts the rows of one step over all processes together; each of the W processes takes
    rows ``[rank·B/W, (rank+1)·B/W)``, so B must be divisible by W.
    """

    # A complete record of one run (its history.json stores it), like the book's recipes; config() maps the model
    # fields onto a TransformerConfig.
    task: TaskName = "copy"
    steps: int = 20
    global_batch: int = 16
    lr: float = 1e-3
    seed: int = 0
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    dropout: float = 0.0
    bias: bool = True
    n_symbols: int = 10
    min_len: int = 2
    max_len: int = 10
    clip_norm: float | None = 1.0

    def __post_init__(self) -> None:
        check_choice("task", self.task, TASKS)
        for name in (
            "steps",
            "global_batch",
            "d_model",
            "n_heads",
            "n_layers",
            "d_ff",
            "n_symbols",
            "min_len",
            "max_len",
        ):
            check_positive(name, getattr(self, name))
        if self.min_len > self.max_len:
            raise ValueError(f"min_len, max_len: expected min_len <= max_len, got {self.min_len} and {self.max_len}")

    def config(self) -> TransformerConfig:
        """The model: an encoder-decoder with ``n_layers`` layers on each side, sized for the task."""
        vocab = task_vocab_size(self.n_symbols)
        return TransformerConfig(
            src_vocab_size=vocab,
            tgt_vocab_size=vocab,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_encoder_layers=self.n_layers,
            n_decoder_layers=self.n_layers,
            d_ff=self.d_ff,
            dropout=self.dropout,
            bias=self.bias,
            max_len=self.max_len + 2,
        )


def train_data_parallel(run: DataParallelRun | None = None, *, out: str | Path | None = None, **overrides) -> dict:
    """Train a :class:`Transformer` on ``run``'s algorithmic task with every process torchrun started (or alone).

    ``overrides`` replace fields of ``run`` (default :class:`DataParallelRun`), e.g.
    ``train_data_parallel(steps=12, lr=3e-3)``. With ``out``, each process writes its weights to
    ``out/rank{r}.safetensors`` (a :func:`save_checkpoint` file) and process 0 writes ``out/history.json``. With
    ``dropout > 0`` each process draws its own dropout masks, so runs agree in distribution but not to the last bit.

    Returns ``{"rank", "world_size", "backend", "losses" (global mean loss per step), "seconds", "run"}`` (the run's
    fields, as a dict).
    """
    if run is not None and not isinstance(run, DataParallelRun):
        raise TypeError(f"run: expected a DataParallelRun, got {type(run).__name__}")
    unknown = sorted(set(overrides) - {f.name for f in fields(DataParallelRun)})
    if unknown:
        raise TypeError(f"overrides: {unknown} are not fields of DataParallelRun")
    run = replace(run or DataParallelRun(), **overrides)
    rank, world, local_rank = _world()
    if run.global_batch % world:
        raise ValueError(f"global_batch: must be divisible by the number of processes {world}, got {run.global_batch}")
    cuda = torch.cuda.is_available()
    backend = "nccl" if cuda else "gloo"
    device = torch.device(f"cuda:{local_rank}") if cuda else torch.device("cpu")
    if world > 1 and not dist.is_initialized():
        if cuda:
            torch.cuda.set_device(device)
        dist.init_process_group(backend)
    try:
        return _train(run, out, rank, world, device, backend if world > 1 else None)
    finally:
        if world > 1 and dist.is_initialized():
            dist.destroy_process_group()


def _train(
    run: DataParallelRun, out: str | Path | None, rank: int, world: int, device: torch.device, backend: str | None
) -> dict:
    cfg = run.config()
    seed_everything(run.seed)  # the same initial weights on every process (DDP also broadcasts rank 0's at start)
    model = Transformer(cfg).to(device)
    torch.manual_seed(run.seed + 1 + rank)  # but each process its own dropout masks
    ddp: nn.Module = (
        DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
        if backend
        else model
    )
    optimizer = paper_adam(ddp.parameters(), run.lr)
    global_batch = run.global_batch
    pairs = make_task(
        run.task,
        run.steps * global_batch,
        min_len=run.min_len,
        max_len=run.max_len,
        n_symbols=run.n_symbols,
        seed=run.seed,
    )
    rows = slice(rank * global_batch // world, (rank + 1) * global_batch // world)  # this process's shard
    losses, start = [], time.perf_counter()
    ddp.train()
    for step in range(run.steps):
        batch = collate_pairs(pairs[step * global_batch : (step + 1) * global_batch])  # the global batch, padded once
        n_tokens = batch.n_tokens  # target tokens in the whole global batch
        src, tgt_in, tgt_out = (t[rows].to(device) for t in (batch.src, batch.tgt_in, batch.tgt_out))  # (B/W, ·)
        logits = ddp(src, tgt_in)  # (B/W, T, V)
        summed = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=cfg.pad_id, reduction="sum")
        loss = summed * world / n_tokens  # DDP averages over processes; × W makes it the global per-token mean
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # DDP all-reduces the gradients here, overlapping with the backward pass
        if run.clip_norm is not None:
            nn.utils.clip_grad_norm_(ddp.parameters(), run.clip_norm)  # after the all-reduce: the same on every process
        optimizer.step()
        total = summed.detach().clone()
        if backend:
            dist.all_reduce(total)  # for the log only: the summed loss of the whole global batch
        losses.append(total.item() / n_tokens)
    result = {
        "rank": rank,
        "world_size": world,
        "backend": backend,
        "losses": losses,
        "seconds": time.perf_counter() - start,
        "run": asdict(run),
    }
    if out is not None:
        out = Path(out)
        save_checkpoint(model, out / f"rank{rank}.safetensors", extra=result)
        if rank == 0:
            (out / "history.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def main(argv: list[str] | None = None) -> dict:
    """Command-line entry point (``python -m transformer_lib.distributed --help``)."""
    p = argparse.ArgumentParser(
        prog="python -m transformer_lib.distributed",
        description="Data-parallel training of a small Transformer on an algorithmic task; "
        "start it with torchrun --nproc_per_node N for N processes.",
    )
    d = DataParallelRun()  # the defaults
    p.add_argument("--task", default=d.task, choices=TASKS)
    p.add_argument("--steps", type=int, default=d.steps)
    p.add_argument("--global-batch", type=int, default=d.global_batch, help="rows per step over all processes together")
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--d-model", type=int, default=d.d_model)
    p.add_argument("--heads", type=int, default=d.n_heads)
    p.add_argument("--layers", type=int, default=d.n_layers)
    p.add_argument("--d-ff", type=int, default=d.d_ff)
    p.add_argument("--dropout", type=float, default=d.dropout)
    p.add_argument("--no-bias", action="store_true", help="projections and LayerNorms without biases")
    p.add_argument("--n-symbols", type=int, default=d.n_symbols)
    p.add_argument("--max-len", type=int, default=d.max_len)
    p.add_argument("--out", type=Path, help="folder for rank{r}.safetensors and history.json")
    a = p.parse_args(argv)
    run = DataParallelRun(
        task=a.task,
        steps=a.steps,
        global_batch=a.global_batch,
        lr=a.lr,
        seed=a.seed,
        d_model=a.d_model,
        n_heads=a.heads,
        n_layers=a.layers,
        d_ff=a.d_ff,
        dropout=a.dropout,
        bias=not a.no_bias,
        n_symbols=a.n_symbols,
        max_len=a.max_len,
    )
    result = train_data_parallel(run, out=a.out)
    if result["rank"] == 0:
        print(
            f"{result['world_size']} process(es), {len(result['losses'])} steps: loss {result['losses'][0]:.4f} -> "
            f"{result['losses'][-1]:.4f} in {result['seconds']:.1f} s"
        )
    return result


if __name__ == "__main__":
    main()

"""Data-parallel training (transformer_lib.distributed): two CPU processes under torchrun (gloo, loopback only)
end with identical weights, equal to what one process gets by training on the whole global batch."""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import transformer_lib as tl
from transformer_lib.distributed import train_data_parallel

ROOT = Path(__file__).resolve().parents[1]
ARGS = dict(task="copy", steps=12, global_batch=8, lr=3e-3, seed=0)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(out: Path, nproc: int = 2) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    }
    env.update(OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(ROOT))
    if Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"  # keep gloo's traffic on the loopback interface
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        f"--nproc_per_node={nproc}",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(_free_port()),
        "-m",
        "transformer_lib.distributed",
        "--task",
        ARGS["task"],
        "--steps",
        str(ARGS["steps"]),
        "--global-batch",
        str(ARGS["global_batch"]),
        "--lr",
        str(ARGS["lr"]),
        "--seed",
        str(ARGS["seed"]),
        "--out",
        str(out),
    ]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_two_processes_match_one_process_on_the_combined_batch(tmp_path, monkeypatch):
    run = _torchrun(tmp_path / "ddp")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    rank0, rank1 = (load_file(str(tmp_path / "ddp" / f"rank{r}.safetensors")) for r in (0, 1))
    history = json.loads((tmp_path / "ddp" / "history.json").read_text())
    assert history["world_size"] == 2 and history["backend"] == "gloo" and len(history["losses"]) == ARGS["steps"]
    assert history["run"]["global_batch"] == ARGS["global_batch"] and history["run"]["task"] == ARGS["task"]

    # the two processes hold bit-identical weights: same start, same all-reduced gradients, same steps
    assert rank0.keys() == rank1.keys()
    assert all(torch.equal(rank0[k], rank1[k]) for k in rank0)

    # one process, no torchrun, the same global batches
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    single = train_data_parallel(**ARGS, out=tmp_path / "single")
    assert single["world_size"] == 1
    assert max(abs(a - b) for a, b in zip(single["losses"], history["losses"], strict=True)) < 1e-6
    assert single["losses"][-1] < single["losses"][0]  # it did learn something
    alone = load_file(str(tmp_path / "single" / "rank0.safetensors"))
    for key, want in alone.items():
        got, C = rank0[key], rank0[key].shape[0] // 3
        if key.endswith("qkv_proj.bias"):
            # The key bias adds the same q·b to every score of a row, which softmax ignores: its true gradient is
            # zero, the computed one is rounding noise, and Adam (which divides by the gradient's size) turns
            # that noise into full-size steps. Those rows alone may differ; the function below does not.
            got, want = torch.cat((got[:C], got[2 * C :])), torch.cat((want[:C], want[2 * C :]))
        assert (got - want).abs().max().item() < 1e-6, key

    # both models compute the same function
    models = [tl.load_checkpoint(tmp_path / d / "rank0.safetensors") for d in ("ddp", "single")]
    src = torch.randint(4, 14, (3, 7))
    tgt = torch.cat((torch.ones(3, 1, dtype=torch.long), src[:, :5]), dim=1)
    with torch.no_grad():
        assert (models[0](src, tgt) - models[1](src, tgt)).abs().max().item() < 1e-5


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="task"):
        train_data_parallel(task="translate", steps=1)
    with pytest.raises(ValueError, match="steps"):
        train_data_parallel(steps=0)


def test_a_run_is_one_small_validated_config():
    from transformer_lib.distributed import DataParallelRun

    run = DataParallelRun(steps=3, n_layers=1)
    cfg = run.config()
    assert (cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.max_len) == (1, 1, run.max_len + 2)
    with pytest.raises(ValueError, match="min_len, max_len"):
        DataParallelRun(min_len=5, max_len=3)
    with pytest.raises(TypeError, match=r"\['stpes'\] are not fields"):
        train_data_parallel(stpes=3)

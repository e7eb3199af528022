"""Saving and loading models without pickle: weights in safetensors, the config as JSON metadata; and averaging
the weights of several snapshots of one run (the paper's checkpoint averaging, §6.1).

``load_checkpoint`` never unpickles anything, so a checkpoint from a stranger cannot run code. It raises
:class:`CheckpointError` with a readable message for a missing file, a corrupted file, or weights that do not
match the config.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, overload

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from .models import DecoderOnlyModel, EncoderOnlyModel, Transformer, TransformerConfig

__all__ = ["save_checkpoint", "load_checkpoint", "CheckpointError", "average_state_dicts"]

_MODEL_CLASSES = {cls.__name__: cls for cls in (Transformer, EncoderOnlyModel, DecoderOnlyModel)}
_FORMAT = "transformer_lib/1"


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: missing, corrupted, or not matching its config."""


def _config_of(model: nn.Module) -> TransformerConfig:
    config = getattr(model, "config", None)
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"model: expected a model with a TransformerConfig as .config, got {type(model).__name__}")
    return config


def save_checkpoint(model: nn.Module, path: str | Path, *, extra: dict | None = None) -> Path:
    """Write ``model``'s weights and config to ``path`` (a .safetensors file). ``extra`` is stored as JSON
    metadata (e.g. the training command, scores). Tied weights are stored once.

    Example (a round trip):

    >>> import tempfile
    >>> from transformer_lib import Transformer, TransformerConfig
    >>> config = TransformerConfig(src_vocab_size=20, tgt_vocab_size=20, d_model=16, n_heads=2,
    ...                            n_encoder_layers=1, n_decoder_layers=1, d_ff=32, max_len=16)
    >>> model = Transformer(config)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     loaded = load_checkpoint(save_checkpoint(model, Path(folder) / "tiny.safetensors"))
    >>> all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), loaded.state_dict().values(), strict=True))
    True
    """
    name = type(model).__name__
    if name not in _MODEL_CLASSES:
        raise TypeError(f"model: expected one of {sorted(_MODEL_CLASSES)}, got {name}")
    state, seen = {}, {}
    for key, tensor in model.state_dict().items():
        ptr = (tensor.data_ptr(), tensor.shape)
        if ptr in seen:  # tied weight: the loader re-ties it by building the same model
            continue
        seen[ptr] = key
        state[key] = tensor.detach().cpu().contiguous()
    meta = {
        "format": _FORMAT,
        "model": name,
        "config": json.dumps(_config_of(model).to_dict()),
        "extra": json.dumps(extra or {}),
    }
    if isinstance(model, EncoderOnlyModel):
        meta["n_outputs"] = json.dumps(model.n_outputs)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(path), metadata=meta)
    return path


@overload
def load_checkpoint(
    path: str | Path, device: torch.device | str | None = None, *, with_extra: Literal[False] = False
) -> nn.Module: ...
@overload
def load_checkpoint(
    path: str | Path, device: torch.device | str | None = None, *, with_extra: Literal[True]
) -> tuple[nn.Module, dict]: ...
def load_checkpoint(
    path: str | Path, device: torch.device | str | None = None, *, with_extra: bool = False
) -> nn.Module | tuple[nn.Module, dict]:
    """Rebuild the model saved by :func:`save_checkpoint`, in eval mode, on ``device`` (default CPU).

    With ``with_extra=True`` returns ``(model, extra)``, the ``extra`` dict given to :func:`save_checkpoint`
    (the recipes store their command, held-out scores and training time there).
    """
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"path: no checkpoint file at {path}")
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        state = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as err:
        raise CheckpointError(f"path: {path} is not a readable safetensors checkpoint ({err})") from err
    if meta.get("format") != _FORMAT or meta.get("model") not in _MODEL_CLASSES:
        raise CheckpointError(f"path: {path} was not written by transformer_lib.save_checkpoint (metadata {meta})")
    try:
        config = TransformerConfig(**json.loads(meta["config"]))
    except (TypeError, ValueError, KeyError) as err:
        raise CheckpointError(f"path: the config stored in {path} is invalid ({err})") from err
    cls = _MODEL_CLASSES[meta["model"]]
    model = cls(config, json.loads(meta["n_outputs"])) if cls is EncoderOnlyModel else cls(config)
    expected = model.state_dict()
    missing = [k for k in expected if k not in state and not _is_tied(model, k, state)]
    unexpected = [k for k in state if k not in expected]
    wrong = [
        f"{k}: file {tuple(v.shape)} vs config {tuple(expected[k].shape)}"
        for k, v in state.items()
        if k in expected and v.shape != expected[k].shape
    ]
    if missing or unexpected or wrong:
        raise CheckpointError(
            f"path: the weights in {path} do not match its config: missing {missing[:5]}, unexpected "
            f"{unexpected[:5]}, wrong shapes {wrong[:5]}"
        )
    model.load_state_dict(state, strict=False)
    model = model.to(device or "cpu").eval()
    return (model, json.loads(meta.get("extra", "{}"))) if with_extra else model


def _is_tied(model: nn.Module, key: str, state: dict) -> bool:
    """True when parameter ``key`` shares its storage with a parameter that is in ``state``."""
    params = dict(model.named_parameters(remove_duplicate=False))
    target = params.get(key)
    return target is not None and any(p is target and k in state for k, p in params.items())


def average_state_dicts(states: Sequence[Mapping[str, Tensor]]) -> dict[str, Tensor]:
    """The element-wise mean of several state dicts of one model, in float32 (cast back to each tensor's dtype).

    The paper averages the last 5 checkpoints of the base model, written at 10-minute intervals, and the last 20
    of the big one (§6.1). Averaging only makes sense for snapshots of *one* run: two independently trained models
    put their features in different units, and their mean is no model at all. Non-float tensors (step counters)
    are taken from the last state.
    """
    if isinstance(states, Mapping) or len(states) == 0:
        raise ValueError(f"states: expected a non-empty sequence of state dicts, got {type(states).__name__}")
    keys = list(states[-1])
    for i, state in enumerate(states):
        if list(state) != keys:
            raise ValueError(f"states[{i}]: expected the keys of states[-1] ({len(keys)} keys), got other keys")
        wrong = [k for k in keys if state[k].shape != states[-1][k].shape]
        if wrong:
            raise ValueError(
                f"states[{i}]: expected the shapes of states[-1], got {tuple(state[wrong[0]].shape)} for {wrong[0]!r}"
            )
    average = {}
    for key in keys:
        last = states[-1][key]
        if not last.is_floating_point():
            average[key] = last.clone()
            continue
        total = torch.zeros_like(last, dtype=torch.float32)
        for state in states:
            total += state[key].to(torch.float32)
        average[key] = (total / len(states)).to(last.dtype)
    return average

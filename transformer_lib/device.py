"""Pick the device once, and make runs repeatable.

Every chapter starts with ``device = tl.get_device()`` and ``tl.seed_everything(0)``; everything else takes the
device as an argument or follows the tensors it is given.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

__all__ = ["get_device", "seed_everything"]


def get_device(prefer: str | None = None) -> torch.device:
    """Return the best available device: CUDA, then Apple's MPS, then the CPU.

    ``prefer`` (or the environment variable ``TRANSFORMER_DEVICE``) forces one, e.g. ``"cpu"``.
    """
    choice = prefer or os.environ.get("TRANSFORMER_DEVICE")
    if choice:
        return torch.device(choice)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and torch (all devices); return a CPU ``torch.Generator`` seeded the same way."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed: expected an int, got {seed!r}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)

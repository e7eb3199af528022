"""Argument checks shared by the library, with messages a learner can act on.

Every public function validates its inputs through these helpers, so an error always names the argument, what was
expected and what was given, e.g. ``mask: expected a boolean tensor (True = may attend), got dtype torch.float32``.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "check_tensor",
    "check_positive",
    "check_choice",
    "check_token_ids",
    "check_mask",
    "is_compiling",
    "check_int",
    "check_at_least",
    "check_str",
    "check_texts",
    "check_index",
]


def is_compiling() -> bool:
    """True while ``torch.compile`` traces the code: checks that read values back must step aside then."""
    probe = getattr(torch.compiler, "is_compiling", None)  # torch >= 2.3; older versions never report tracing
    return bool(probe is not None and probe())


def check_tensor(
    name: str,
    x: object,
    *,
    ndim: int | Sequence[int] | None = None,
    dtype: str | torch.dtype | None = None,
) -> Tensor:
    """Raise unless ``x`` is a tensor with ``ndim`` dimensions and a dtype of kind ``dtype``.

    ``dtype`` is a torch dtype or one of ``"float"``, ``"int"``, ``"bool"``.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.dim() not in allowed:
            want = " or ".join(str(n) for n in allowed)
            raise ValueError(f"{name}: expected {want} dimensions, got shape {tuple(x.shape)}")
    if dtype is not None:
        ok = (
            {
                "float": x.is_floating_point(),
                "int": not x.is_floating_point() and not x.is_complex() and x.dtype != torch.bool,
                "bool": x.dtype == torch.bool,
            }.get(dtype, x.dtype == dtype)
            if isinstance(dtype, str)
            else x.dtype == dtype
        )
        if not ok:
            kind = {"float": "a floating-point", "int": "an integer", "bool": "a boolean"}.get(str(dtype), f"a {dtype}")
            raise TypeError(f"{name}: expected {kind} tensor, got dtype {x.dtype}")
    return x


def check_positive(name: str, value: object, *, integer: bool = True, allow_zero: bool = False) -> None:
    """Raise unless ``value`` is a positive (or non-negative) int/float."""
    kind = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind):
        want = "an int" if integer else "a number"
        raise TypeError(f"{name}: expected {want}, got {value!r} ({type(value).__name__})")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}: expected a value {bound}, got {value!r}")


def check_choice(name: str, value: object, choices: Sequence[object]) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name}: expected one of {list(choices)}, got {value!r}")


def check_token_ids(name: str, ids: object, vocab_size: int, max_len: int | None = None) -> Tensor:
    """Raise unless ``ids`` is a non-empty (B, T) integer tensor with values in [0, vocab_size) and T <= max_len."""
    ids = check_tensor(name, ids, ndim=2, dtype="int")
    if ids.shape[0] == 0 or ids.shape[1] == 0:
        raise ValueError(f"{name}: expected a non-empty (batch, length) tensor, got shape {tuple(ids.shape)}")
    if max_len is not None and ids.shape[1] > max_len:
        raise ValueError(
            f"{name}: sequence length {ids.shape[1]} exceeds max_len={max_len}; "
            "shorten the input or build the model with a larger max_len"
        )
    if is_compiling():
        return ids  # reading values back would break the compiled graph (and sync a GPU) on every call
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
        bad = lo if lo < 0 else hi
        raise ValueError(f"{name}: token ids must lie in [0, {vocab_size}), got id {bad}")
    return ids


def check_mask(name: str, mask: object, shape: Sequence[int]) -> Tensor:
    """Raise unless ``mask`` is boolean and broadcastable to ``shape`` = (B, H, Tq, Tk) without growing it.

    Masks follow one convention everywhere: ``True`` = may attend (the same as a boolean mask for
    :func:`torch.nn.functional.scaled_dot_product_attention`). A mask may have 2, 3 or 4 dimensions; each of its
    trailing dimensions must be 1 or equal to the matching dimension of ``shape``.
    """
    mask = check_tensor(name, mask, ndim=(2, 3, 4))
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name}: expected a boolean tensor (True = may attend), got dtype {mask.dtype}; "
            "convert with `mask.bool()` or build it with tl.padding_mask / tl.causal_mask"
        )
    target = tuple(shape)[-mask.dim() :]
    for got, want in zip(mask.shape, target, strict=False):
        if got not in (1, want):
            raise ValueError(
                f"{name}: shape {tuple(mask.shape)} does not broadcast to (batch, heads, q_len, k_len) = {tuple(shape)}"
            )
    return mask


def check_int(name: str, value: Any) -> int:
    """``value`` as an int; a bool or a float raises ``TypeError``."""
    if type(value) is int:  # the common case first: isinstance(..., Integral) is an ABC check, 10x slower
        return value
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    return int(value)


def check_at_least(name: str, value: Any, lowest: int, why: str = "") -> None:
    """Raise unless ``value`` is an int >= ``lowest``; ``why`` explains the bound."""
    check_positive(name, value, allow_zero=True)
    if value < lowest:
        raise ValueError(f"{name}: expected an int >= {lowest}{why}, got {value!r}")


def check_str(text: Any, name: str = "text") -> None:
    """Raise unless ``text`` is a str."""
    if not isinstance(text, str):
        raise TypeError(f"{name}: expected a str, got {type(text).__name__}")


def check_texts(texts: Any, name: str = "texts") -> list[str]:
    """Turn ``texts`` into a list of str, refusing a bare str and a corpus with no characters."""
    if isinstance(texts, str):
        raise TypeError(f"{name}: expected a list of str, got a single str {texts[:20]!r}; wrap it in a list")
    kind = type(texts).__name__
    texts = list(texts)
    if not texts:
        raise ValueError(f"{name}: expected at least one string, got an empty {kind}")
    for i, text in enumerate(texts):
        check_str(text, f"{name}[{i}]")
    if not any(texts):
        raise ValueError(f"{name}: expected at least one character, got {len(texts)} empty string(s)")
    return texts


def check_index(name: str, value: Any, size: int) -> int:
    """``value`` as an int in ``[0, size)`` (a token id)."""
    if not 0 <= check_int(name, value) < size:
        raise ValueError(f"{name}: expected a token id in [0, {size}), got {value}")
    return int(value)

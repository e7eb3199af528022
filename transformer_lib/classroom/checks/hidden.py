"""The checks' random cases: in the grader, drawn from a seed the student's kernel never sees.

Every check runs its *named* cases first (fixed and public: a padding mask, a batch of one, bfloat16; what its
feedback names), then a few *random* cases drawn by the check's draw function, registered with
:func:`_random_cases`. Where they come from:

- **In a learner's notebook** (``checks.check_attention(attention)``): drawn from :data:`PUBLIC_SEED`. These are
  the same on every run and in every copy of the library, so they are a practice aid, not a test.
- **In the grader**: the grading process draws a seed per notebook with :mod:`secrets`
  (:func:`~transformer_lib.classroom.notebook.grade_notebook`), draws each check's random cases from it *in its
  own process* (:func:`hand_in`) and hands the kernel only the inputs, as plain data in the injected check cell
  (tensors as exact bytes, :mod:`.snapshot`). The seed is never written to the kernel's environment, files, argv or
  cells, so nothing in the sandbox can read it, and the inputs cannot be known before the check runs: a notebook
  that answers from a table of outputs computed at home misses every random case. The grader replays the check
  on the same data (:func:`~.record.replay_exercise`).

A per-check generator is derived from the seed and the check's name (BLAKE2b keyed by the seed), so one check's
inputs say nothing about another's.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .snapshot import RecordingError, _Decoder, _encode, _need

__all__ = ["PUBLIC_SEED", "hand_in", "read_handed", "handing", "drawn"]

PUBLIC_SEED = 0  # the learner's own checks; the grader draws its seeds with secrets
_MAX_CASES_CHARS = 2_000_000  # the random cases of one check, as handed in (a few kB each)

Cases = list[tuple[str, Any]]  # (label, the case's inputs): what a draw function returns
_DRAWS: dict[str, Callable[[torch.Generator], Cases]] = {}
_handed: contextvars.ContextVar[dict[str, Cases] | None] = contextvars.ContextVar("handed", default=None)


def _random_cases(
    check_name: str,
) -> Callable[[Callable[[torch.Generator], Cases]], Callable[[torch.Generator], Cases]]:
    """Decorator: register ``draw(generator) -> [(label, inputs), ...]`` as the random cases of ``check_name``."""

    def register(draw: Callable[[torch.Generator], Cases]) -> Callable[[torch.Generator], Cases]:
        _DRAWS[check_name] = draw
        return draw

    return register


def _generator(seed: int, check_name: str) -> torch.Generator:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 1 << 512:
        raise ValueError(f"seed: expected an int in [0, 2**512), got {seed!r}")
    key = seed.to_bytes(64, "big")
    digest = hashlib.blake2b(check_name.encode(), key=key, digest_size=8).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest, "big") >> 1)


def draw(check_name: str, seed: int) -> Cases:
    """The random cases of ``check_name`` drawn from ``seed`` (none for a check without a draw function)."""
    fn = _DRAWS.get(check_name)
    return [] if fn is None else fn(_generator(seed, check_name))


def hand_in(check_name: str, seed: int) -> str:
    """In the grader: the random cases of ``check_name`` drawn from ``seed``, as the text the kernel is handed (the
    inputs only, never the seed)."""
    return json.dumps(_encode(draw(check_name, seed)), ensure_ascii=True, separators=(",", ":"))


def read_handed(text: str) -> Cases:
    """The cases of :func:`hand_in`'s ``text``, read strictly (:class:`~.snapshot.RecordingError` if malformed)."""
    _need(isinstance(text, str) and len(text) <= _MAX_CASES_CHARS, "random cases that are too long")
    try:
        cases = _Decoder().value(json.loads(text))
    except (ValueError, RecursionError) as e:
        if isinstance(e, RecordingError):
            raise
        raise RecordingError(f"the random cases are not valid JSON ({type(e).__name__})") from None
    _need(
        type(cases) is list and all(type(c) is tuple and len(c) == 2 and type(c[0]) is str for c in cases),
        "random cases that are not (label, inputs) pairs",
    )
    return cases


@contextlib.contextmanager
def handing(check_name: str, cases: Cases | None) -> Iterator[None]:
    """While the block runs, ``check_name`` takes ``cases`` as its random cases (None: the public ones)."""
    token = _handed.set(None if cases is None else {check_name: cases})
    try:
        yield
    finally:
        _handed.reset(token)


def drawn(check_name: str) -> Cases:
    """In a check's body: its random cases, those handed in by the grader, else drawn from :data:`PUBLIC_SEED`."""
    handed = _handed.get()
    if handed is not None and check_name in handed:
        return handed[check_name]
    return draw(check_name, PUBLIC_SEED)


def _size(g: torch.Generator, low: int, high: int) -> int:
    """A random int in ``[low, high]``."""
    return int(torch.randint(low, high + 1, (), generator=g))


def _normal(g: torch.Generator, *shape: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def _keys_mask(g: torch.Generator, B: int, S: int) -> torch.Tensor:
    """A padding mask (B, S), True = may attend: each row keeps its first key and a random number after it, and the
    first row blocks at least one key when there are two or more (a case where the mask makes no difference would
    pass an answer that ignores it)."""
    lengths = torch.randint(1, S + 1, (B,), generator=g)
    lengths[0] = min(int(lengths[0]), max(S - 1, 1))
    return torch.arange(S)[None, :] < lengths[:, None]


def _and_random(summary: str, random: Cases) -> str:
    """A check's summary of its named cases, followed by how many random cases passed too."""
    if not random:
        return summary
    return f"{summary.removesuffix('.')}; so do {len(random)} random case{'s' if len(random) > 1 else ''}."

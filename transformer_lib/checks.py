"""Checks for the assignments: run a learner's function next to the library's reference and explain mistakes.

Each ``check_*`` function takes the learner's function (or class) and runs it on random and edge-case inputs (a
mask, a batch of one, a length of one; float64, float32 and bfloat16), comparing it with the library's reference
within a tolerance fitted to the dtype. It never raises on a wrong answer: it returns a :class:`CheckResult`
whose text is a PASS/FAIL block that names the input that failed, shows expected against actual, and gives a first
hint; ``result.more()`` gives the next, more detailed hint. A stub that still raises ``NotImplementedError`` gets
a friendly "not implemented yet", and a call that runs longer than ``time_limit`` seconds is stopped.

When a result is wrong, the check compares it with a catalogue of *plausible mistakes* (no ÷√d_k, softmax over
the wrong axis, an inverted mask, heads not merged back, ...), each written as a small variant of the reference;
the first variant that reproduces the learner's numbers names the mistake. Where none does, general symptoms
(rows that do not sum to 1, blocked keys with weight) give the hint.

Used by the notebooks of ``book/assignments/`` and by the grader, ``python -m transformer_lib.grade``.
Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key length, ``D`` head width, ``C`` d_model.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
import json
import math
import signal
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .attention import MultiHeadAttention, scaled_dot_product_attention
from .decoding import beam_search, greedy_decode
from .embeddings import sinusoidal_encoding
from .layers import DecoderLayer
from .masks import causal_mask, padding_mask
from .models import Transformer, TransformerConfig
from .tokenization import BOS_ID, EOS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID, Vocab

__all__ = [
    "CheckResult", "DEFAULT_TIME_LIMIT", "RESULT_MARKER",
    "check_build_vocab", "check_encode", "check_pad_sequences", "check_positional_encoding", "check_attention",
    "check_padding_mask", "check_causal_mask", "check_decoder_mask", "check_split_heads", "check_merge_heads",
    "check_multi_head_attention", "check_decoder_layer", "check_greedy_decode", "check_beam_search",
    "check_assignment", "grade_exercise", "tiny_translator",
]

DEFAULT_TIME_LIMIT = 10.0  # seconds per call of the learner's code; the inputs are tiny, a correct answer takes ms
RESULT_MARKER = "TL-CHECK-RESULT "  # the grader reads the JSON that follows this prefix on a printed line

# (rtol, atol) per dtype: float64 is exact up to the order of operations; bfloat16 keeps 8 bits of mantissa.
_TOLERANCES = {torch.float64: (1e-7, 1e-9), torch.float32: (1e-4, 1e-5), torch.float16: (1e-2, 1e-2),
               torch.bfloat16: (5e-2, 5e-2)}
_time_limit: contextvars.ContextVar[float] = contextvars.ContextVar("time_limit", default=DEFAULT_TIME_LIMIT)
_NOT_LEARNER = tuple({str(p) for d in (Path(__file__).parent, Path(torch.__file__).parent)
                      for p in (d, d.resolve())})  # frames of the library and of torch, not the learner's


# --------------------------------------------------------------------------------------------------------------
# The result a learner sees
# --------------------------------------------------------------------------------------------------------------
class _Text(str):
    """A string that a notebook displays as plain text (no quotes, real line breaks)."""

    def __repr__(self) -> str:
        return str(self)


@dataclass(repr=False)
class CheckResult:
    """The outcome of one check: PASS/FAIL, what failed and tiered hints.

    ``str(result)`` (and the notebook display) shows the first hint; ``result.more()`` the next one, and
    ``result.hint(level)`` any level. ``bool(result)`` is ``result.passed``. ``error`` names the exception the
    learner's code raised, if any (``"NotImplementedError"`` for an untouched stub).
    """

    exercise: str
    passed: bool
    summary: str
    details: str = ""
    hints: tuple[str, ...] = ()
    error: str | None = None
    _shown: int = field(default=1, compare=False)

    @property
    def not_implemented(self) -> bool:
        return self.error == "NotImplementedError"

    @property
    def message(self) -> str:
        """One line for a grade sheet: the summary and the first hint."""
        if self.passed or not self.hints:
            return self.summary
        return f"{self.summary}{'' if self.summary.endswith(('.', '!', '?')) else '.'} Hint: {self.hints[0]}"

    def hint(self, level: int = 1) -> _Text:
        """Hint number ``level`` (1 = first nudge, higher = more detail); the last one if ``level`` is larger."""
        if not self.hints:
            return _Text("No hint: this check passed." if self.passed else "No hint for this failure.")
        if isinstance(level, bool) or not isinstance(level, int) or level < 1:
            raise ValueError(f"level: expected an int >= 1, got {level!r}")
        level = min(level, len(self.hints))
        return _Text(f"Hint {level}/{len(self.hints)}: {self.hints[level - 1]}")

    def more(self) -> _Text:
        """The next hint after those already shown (stays on the last one)."""
        self._shown = min(self._shown + 1, max(len(self.hints), 1))
        return self.hint(self._shown)

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = f" {'PASS' if self.passed else 'FAIL'}: {self.exercise} "
        lines = [head.center(72, "="), self.summary]
        if self.details:
            lines.append(self.details)
        if not self.passed and self.hints:
            lines.append(str(self.hint(1)))
            if len(self.hints) > 1:
                lines.append("  -> call .more() on this result for a more detailed hint")
        return "\n".join(lines)

    __repr__ = __str__

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (what the grader collects)."""
        return {"exercise": self.exercise, "passed": self.passed, "summary": self.summary, "details": self.details,
                "hints": list(self.hints), "error": self.error}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CheckResult:
        return cls(str(d["exercise"]), bool(d["passed"]), str(d["summary"]), str(d.get("details", "")),
                   tuple(str(h) for h in d.get("hints", ())), d.get("error"))


class _Fail(Exception):
    """Raised inside a check to stop at the first failing case; turned into a failed CheckResult."""

    def __init__(self, summary: str, details: str = "", hints: tuple[str, ...] = (), error: str | None = None):
        super().__init__(summary)
        self.summary, self.details, self.hints, self.error = summary, details, tuple(hints), error


class _TimeUp(BaseException):
    """Raised by the alarm; a BaseException so that a learner's ``except Exception`` cannot swallow it."""


def _check(exercise: str) -> Callable:
    """Decorator: run a check body, turning ``_Fail`` into a failed result and a normal return into a pass."""

    def decorate(body: Callable[..., str]) -> Callable[..., CheckResult]:
        @functools.wraps(body)
        def run(*learner: Any, time_limit: float = DEFAULT_TIME_LIMIT) -> CheckResult:
            token = _time_limit.set(time_limit)
            try:
                return CheckResult(exercise, True, body(*learner))
            except _Fail as f:
                return CheckResult(exercise, False, f.summary, f.details, f.hints, f.error)
            finally:
                _time_limit.reset(token)

        return run

    return decorate


# --------------------------------------------------------------------------------------------------------------
# Calling the learner's code safely
# --------------------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    """Raise _TimeUp after ``seconds`` (Unix main thread only; elsewhere no limit)."""
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _TimeUp

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _learner_line(exc: BaseException) -> str:
    """The innermost line of the traceback outside the library and torch: where the learner's code failed."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(_NOT_LEARNER)]
    if not frames:
        return ""
    f = frames[-1]
    return f"It happened in {f.name}(), line {f.lineno}: {f.line.strip()}" if f.line else f"in {f.name}()"


def _exception_hints(exc: Exception) -> tuple[str, ...]:
    text = str(exc)
    if isinstance(exc, RuntimeError) and any(w in text for w in ("size", "shape", "dimension", "mat1")):
        return ("Two shapes do not fit together inside your function: print the shape of each intermediate "
                "tensor and compare it with the shapes in the docstring.",
                "Common causes: k not transposed (use k.transpose(-2, -1); k.T reverses every axis), a view or "
                "reshape with the wrong sizes, or a mask whose axes do not line up with the scores.")
    if isinstance(exc, NameError):
        return ("Your code uses a name that is not defined here: a typo, or a variable from another cell?",)
    if isinstance(exc, TypeError) and ("argument" in text or "positional" in text):
        return ("The check calls your code with the signature of the starter code: keep the argument names "
                "and order as they were given.",)
    return ("Your code raised an exception on this input: read the message and the line it points to.",
            "Run the 'Try it' cell above the check to see the full traceback.")


def _call(fn: Callable, *args: Any, inputs: str, on_error: dict | None = None, **kwargs: Any) -> Any:
    """Call the learner's ``fn``; a stub, a time-out or an exception becomes a _Fail that says which input."""
    name = getattr(fn, "__name__", type(fn).__name__)
    limit = _time_limit.get()
    try:
        with _alarm(limit):
            return fn(*args, **kwargs)
    except NotImplementedError:
        raise _Fail(f"{name} is not implemented yet.",
                    f"Calling {name} raised NotImplementedError: the starter stub is still in place.",
                    (f"Replace the line `raise NotImplementedError(...)` in {name} with your code, run that cell, "
                     "then run this check again.",), "NotImplementedError") from None
    except _TimeUp:
        raise _Fail(f"{name} did not finish within {limit:g} s.", f"Input: {inputs}",
                    ("Is there a loop that never ends? Check the condition of every `while` loop.",
                     "A correct answer takes milliseconds on these tiny inputs. A `while` loop needs a step that "
                     "makes its condition false; a decoding loop must stop after max_new_tokens steps."),
                    "TimeoutError") from None
    except Exception as e:  # the learner's code raised: report it as feedback, not as a crash
        hints = (on_error or {}).get(type(e)) or _exception_hints(e)
        details = "\n".join(x for x in (f"Input: {inputs}", _learner_line(e)) if x)
        raise _Fail(f"{name} raised {type(e).__name__}: {e}", details, hints, type(e).__name__) from None


# --------------------------------------------------------------------------------------------------------------
# Comparing and describing tensors
# --------------------------------------------------------------------------------------------------------------
def _tol(dtype: torch.dtype) -> tuple[float, float]:
    return _TOLERANCES.get(dtype, _TOLERANCES[torch.float32])


def _close(actual: Tensor, expected: Tensor, dtype: torch.dtype = torch.float64) -> bool:
    """Same shape and values within the tolerance of ``dtype``; NaN matches NaN (a mistake may produce NaN)."""
    if not isinstance(actual, Tensor) or actual.shape != expected.shape:
        return False
    if expected.dtype == torch.bool or not expected.is_floating_point():
        return bool(torch.equal(actual.cpu().long(), expected.cpu().long()))
    rtol, atol = _tol(dtype)
    return bool(torch.allclose(actual.detach().cpu().double(), expected.detach().cpu().double(), rtol, atol,
                               equal_nan=True))


def _fmt(x: Tensor) -> str:
    if x.dtype == torch.bool:
        return "[" + ", ".join("T" if v else "F" for v in x.tolist()) + "]"
    if not x.is_floating_point():
        return str(x.tolist())
    return "[" + ", ".join(f"{v:.4f}" for v in x.double().tolist()) + "]"


def _row_diff(name: str, actual: Tensor, expected: Tensor, dtype: torch.dtype = torch.float64) -> str:
    """'Expected name[i, j, :] = [...] / Got ...' at the first row (last axis) that differs."""
    a, e = actual.detach().cpu(), expected.detach().cpu()
    if e.dim() == 0:
        return f"Expected {name} = {e.item()}\nGot      {name} = {a.item()}"
    if e.is_floating_point():
        rtol, atol = _tol(dtype)
        a64, e64 = a.double(), e.double()
        bad = ~((a64 - e64).abs() <= atol + rtol * e64.abs()) & ~(a64.isnan() & e64.isnan())
    else:
        bad = a.long() != e.long()
    idx = bad.reshape(-1, e.shape[-1]).any(-1).nonzero()
    row = int(idx[0]) if len(idx) else 0
    index = [int(i) for i in torch.unravel_index(torch.tensor(row), e.shape[:-1])] if e.dim() > 1 else []
    where = f"{name}[{', '.join(map(str, index + [':']))}]" if e.dim() > 1 else name
    cut = slice(0, 8)
    return (f"Expected {where} = {_fmt(e.reshape(-1, e.shape[-1])[row][cut])}\n"
            f"Got      {where} = {_fmt(a.reshape(-1, e.shape[-1])[row][cut])}")


def _describe(**tensors: Any) -> str:
    """'q (2, 3, 8) float64, mask (3, 3) = [[T, F, F], ...]': shapes, dtypes and small masks spelled out."""
    parts = []
    for name, x in tensors.items():
        if isinstance(x, Tensor):
            text = f"{name} {tuple(x.shape)} {str(x.dtype).replace('torch.', '')}"
            if (x.dtype == torch.bool or not x.is_floating_point()) and x.numel() <= 40:
                text += f" = {x.tolist()}".replace("True", "T").replace("False", "F")
            parts.append(text)
        elif x is not None:
            parts.append(f"{name} = {x!r}")
    return ", ".join(parts)


def _tensor(x: Any, what: str, inputs: str) -> Tensor:
    if isinstance(x, Tensor):
        return x.detach()
    hint = ("Return a torch.Tensor: build it with torch functions (torch.arange, torch.sin, ...), or convert at "
            "the end with torch.as_tensor(...).",)
    raise _Fail(f"{what}: expected a torch.Tensor, got a {type(x).__name__}.", f"Input: {inputs}", hint)


def _expect_shape(what: str, x: Tensor, shape: tuple[int, ...], inputs: str, hints: tuple[str, ...] = ()) -> None:
    if tuple(x.shape) != tuple(shape):
        raise _Fail(f"{what} has the wrong shape.",
                    f"Input: {inputs}\nExpected shape {tuple(shape)}\nGot      shape {tuple(x.shape)}",
                    hints or ("Compare each axis with the Shape: section of the docstring.",))


def _expect_dtype(what: str, x: Tensor, dtype: torch.dtype, inputs: str) -> None:
    if x.dtype != dtype:
        raise _Fail(f"{what} has dtype {x.dtype}, expected {dtype} (the dtype of the inputs).", f"Input: {inputs}",
                    ("Do not fix a dtype inside your function: a tensor made with torch.tensor(...) or "
                     "torch.ones(...) is float32 by default. Use plain Python numbers, or dtype=x.dtype.",))


def _match(actual: dict[str, Tensor], variants: list[tuple[Callable[[], dict], tuple[str, ...]]],
           dtype: torch.dtype) -> tuple[str, ...] | None:
    """The hints of the first plausible mistake whose output reproduces ``actual``, or None."""
    for make, hints in variants:
        try:
            expected = make()
        except Exception:
            continue  # a variant that cannot run on this input cannot be the explanation
        keys = [k for k in actual if k in expected]
        if keys and all(_close(actual[k], expected[k], dtype) for k in keys):
            return hints
    return None


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@contextlib.contextmanager
def _fixed_seed(seed: int) -> Iterator[None]:
    """Seed the global RNG for building modules, without changing the learner's random state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


# --------------------------------------------------------------------------------------------------------------
# Assignment 1: tokenizer (special tokens, encoding, padding)
# --------------------------------------------------------------------------------------------------------------
_CORPUS = ["the cat sat on the mat", "the dog sat"]


def _reference_vocab(texts: list[str], min_freq: int = 1) -> dict[str, int]:
    tokens = Vocab.build([t.split() for t in texts], min_freq=min_freq).tokens
    return {t: i for i, t in enumerate(tokens)}


@_check("build_vocab")
def check_build_vocab(build_vocab: Callable) -> str:
    """Check ``build_vocab(texts, min_freq=1) -> dict[str, int]``: the special tokens at ids 0-3, then the
    whitespace-separated words seen at least ``min_freq`` times, most frequent first, ties alphabetical."""
    cases = [(_CORPUS, 1), (_CORPUS, 2), (["hello"], 1)]
    for texts, min_freq in cases:
        inputs = f"texts = {texts!r}, min_freq = {min_freq}"
        got = _call(build_vocab, list(texts), min_freq=min_freq, inputs=inputs)
        want = _reference_vocab(texts, min_freq)
        if isinstance(got, (list, tuple)):
            raise _Fail("build_vocab returned a list; expected a dict that maps each token to its id.",
                        f"Input: {inputs}\nExpected {want}\nGot      {got!r}",
                        ("Build the dict with {token: i for i, token in enumerate(tokens)}.",))
        if not isinstance(got, dict):
            raise _Fail(f"build_vocab returned a {type(got).__name__}; expected a dict token -> id.",
                        f"Input: {inputs}")
        if got == want:
            continue
        details = f"Input: {inputs}\nExpected {want}\nGot      {got}"
        specials = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
        counts = Counter(w for t in texts for w in t.split())
        words = [t for t in got if t not in specials]
        if any(got.get(t) != i for t, i in specials.items()):
            hints = ("The four special tokens come first, with fixed ids: <pad> 0, <bos> 1, <eos> 2, <unk> 3.",
                     "Start the vocabulary from the list ['<pad>', '<bos>', '<eos>', '<unk>'] and give the words "
                     "the ids 4, 5, 6, ... after them.")
        elif sorted(got.values()) != list(range(len(got))):
            hints = ("The ids must be 0, 1, 2, ... with no gaps and no repeats.",)
        elif set(words) - set(want):
            extra = sorted(set(words) - set(want))
            rare = all(counts[w] < min_freq for w in extra if w in counts)
            hints = ((f"The words {extra} are seen fewer than min_freq={min_freq} times: leave them out.",)
                     if rare and all(w in counts for w in extra) else
                     (f"The words {extra} are not words of the texts: split each text with text.split().",))
        elif set(want) - set(got):
            hints = (f"The words {sorted(set(want) - set(got))} are missing: keep every word seen at least "
                     f"min_freq times (count with collections.Counter).",)
        elif words == sorted(words):
            hints = ("The words are in alphabetical order: order them by count, most frequent first, and only "
                     "break ties alphabetically.", "sorted(counts, key=lambda w: (-counts[w], w))")
        else:
            hints = ("Order the words by count, most frequent first, and break ties alphabetically.",
                     "Counter.most_common() breaks ties by first appearance, not alphabetically: sort with "
                     "key=lambda w: (-counts[w], w).")
        raise _Fail("The vocabulary differs from the reference.", details, hints)
    return f"All {len(cases)} cases match the reference (min_freq 1 and 2, a one-word corpus)."


@_check("encode")
def check_encode(encode: Callable) -> str:
    """Check ``encode(text, vocab, add_special_tokens=True) -> list[int]`` against the library's Vocab."""
    vocab = _reference_vocab(_CORPUS)
    cases = [("the cat sat", True), ("the dog sat on a mat", True), ("the cat", False), ("", True)]
    unk_hints = {KeyError: ("A word that is not in the vocabulary must become <unk> (id 3), not a KeyError.",
                            "Look words up with vocab.get(word, vocab['<unk>']).")}
    for text, special in cases:
        inputs = f"text = {text!r}, add_special_tokens = {special}, vocab = {vocab}"
        got = _call(encode, text, dict(vocab), add_special_tokens=special, inputs=inputs, on_error=unk_hints)
        if isinstance(got, Tensor):
            got = got.tolist()
        want = Vocab(list(vocab)[len(SPECIAL_TOKENS):]).to_ids(text.split())
        want = [BOS_ID, *want, EOS_ID] if special else want
        if not isinstance(got, (list, tuple)) or list(got) != want:
            got_list = list(got) if isinstance(got, (list, tuple)) else got
            details = f"Input: {inputs}\nExpected {want}\nGot      {got_list!r}"
            if special and got_list == want[1:-1]:
                hints = ("<bos> (id 1) and <eos> (id 2) are missing: wrap the ids as [bos, ..., eos] when "
                         "add_special_tokens is True.",)
            elif not special and got_list == [BOS_ID, *want, EOS_ID]:
                hints = ("With add_special_tokens=False, return the word ids only, without <bos> and <eos>.",)
            elif isinstance(got_list, list) and len(got_list) == len(want) and UNK_ID in want:
                hints = ("Unknown words must map to <unk> (id 3).",)
            else:
                hints = ("Split the text with text.split() and look up each word in vocab.",)
            raise _Fail("The ids differ from the reference.", details, hints)
    return f"All {len(cases)} cases match the reference (special tokens on/off, an unknown word, empty text)."


@_check("pad_sequences")
def check_pad_sequences(pad_sequences: Callable) -> str:
    """Check ``pad_sequences(seqs, pad_id=0) -> (B, T) int64 tensor``, right-padded to the longest sequence."""
    cases = [([[5, 6, 7, 8], [8], [9, 10]], 0), ([[4, 5], [6]], 9), ([[4]], 0), ([[4, 5], []], 0)]
    for seqs, pad_id in cases:
        inputs = f"seqs = {seqs}, pad_id = {pad_id}"
        got = _tensor(_call(pad_sequences, [list(s) for s in seqs], pad_id=pad_id, inputs=inputs), "The result",
                      inputs)
        T = max(len(s) for s in seqs)
        want = torch.tensor([s + [pad_id] * (T - len(s)) for s in seqs], dtype=torch.long)
        if got.dtype != torch.long:
            raise _Fail(f"The result has dtype {got.dtype}; token ids must be torch.long (int64).", f"Input: {inputs}",
                        ("Create the tensor with dtype=torch.long: embedding layers look ids up by integer.",))
        _expect_shape("The padded batch", got, tuple(want.shape), inputs,
                      ("The result is (batch, longest length): one row per sequence."
                       + (" Your shape is transposed." if tuple(got.shape) == tuple(want.shape)[::-1] else ""),))
        if not torch.equal(got, want):
            left = torch.tensor([[pad_id] * (T - len(s)) + s for s in seqs], dtype=torch.long)
            zero = torch.tensor([s + [0] * (T - len(s)) for s in seqs], dtype=torch.long)
            hints = (("Pad on the right: the real tokens come first, then pad_id.",) if torch.equal(got, left) else
                     ("Fill with the pad_id argument, not a fixed 0.",) if torch.equal(got, zero) else
                     ("Each row is the sequence followed by pad_id until the longest length.",))
            raise _Fail("The padded batch differs from the reference.",
                        f"Input: {inputs}\n{_row_diff('batch', got, want)}", hints)
    return f"All {len(cases)} cases match the reference (another pad_id, a batch of one, an empty sequence)."


# --------------------------------------------------------------------------------------------------------------
# Assignment 2: sinusoidal positional encoding
# --------------------------------------------------------------------------------------------------------------
def _pe_variant(max_len: int, d_model: int, *, swap: bool = False, start: int = 0, exponent: str = "pair") -> Tensor:
    """The encoding with one deliberate mistake (see check_positional_encoding)."""
    pos = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]  # (T, 1)
    col = torch.arange(d_model, dtype=torch.float64)  # (C,)
    two_i = {"pair": col - col % 2, "column": col, "double": 2 * col, "half": (col - col % 2) / 2}[exponent]
    angle = pos / 10000 ** (two_i / d_model)  # (T, C)
    even = (col % 2 == 0)
    if swap:
        even = ~even
    return torch.where(even, angle.sin(), angle.cos())


@_check("positional_encoding")
def check_positional_encoding(positional_encoding: Callable) -> str:
    """Check ``positional_encoding(max_len, d_model) -> (max_len, d_model)`` against
    :func:`~transformer_lib.embeddings.sinusoidal_encoding` (sin in even columns, cos in odd ones)."""
    cases = [(6, 8), (1, 2), (50, 16)]
    for max_len, d_model in cases:
        inputs = f"max_len = {max_len}, d_model = {d_model}"
        got = _tensor(_call(positional_encoding, max_len, d_model, inputs=inputs), "The encoding", inputs)
        want = sinusoidal_encoding(max_len, d_model, dtype=torch.float64)
        if not got.is_floating_point():
            raise _Fail(f"The encoding has dtype {got.dtype}; expected floating point numbers.", f"Input: {inputs}",
                        ("Build positions with torch.arange(max_len, dtype=torch.float32) so the division is "
                         "not integer.",))
        _expect_shape("The encoding", got, (max_len, d_model), inputs,
                      ("One row per position, one column per dimension: (max_len, d_model)."
                       + (" Your result is transposed." if tuple(got.shape) == (d_model, max_len) else ""),))
        tolerance = got.dtype if got.dtype in _TOLERANCES else torch.float32  # float32 or float64 are both fine
        if _close(got, want, tolerance):
            continue
        variants = [
            (lambda: {"pe": _pe_variant(max_len, d_model, swap=True)},
             ("sin and cos are swapped: even columns (2i) hold sin, odd columns (2i+1) hold cos.",)),
            (lambda: {"pe": sinusoidal_encoding(max_len, d_model, interleaved=False, dtype=torch.float64)},
             ("You put all the sines first and all the cosines after; the paper interleaves them: column 2i is "
              "sin, column 2i+1 is cos, with the same frequency.",
              "Fill pe[:, 0::2] with the sines and pe[:, 1::2] with the cosines.")),
            (lambda: {"pe": _pe_variant(max_len, d_model, exponent="column")},
             ("Columns 2i and 2i+1 share one frequency, 1 / 10000^(2i/d_model): the cos column uses the exponent "
              "of the sin column before it, not its own index.",)),
            (lambda: {"pe": _pe_variant(max_len, d_model, exponent="double")},
             ("The exponent is doubled: for columns 2i and 2i+1 it is 2i/d_model, where 2i is the even column "
              "index itself (torch.arange(0, d_model, 2)), so do not multiply it by 2 again.",)),
            (lambda: {"pe": _pe_variant(max_len, d_model, exponent="half")},
             ("The exponent is halved: the pair of columns (2i, 2i+1) uses 10000^(2i/d_model), with 2i (not i) "
              "on top.",)),
            (lambda: {"pe": _pe_variant(max_len, d_model, start=1)},
             ("Positions start at 0: row 0 must be sin(0) = 0 in even columns and cos(0) = 1 in odd ones.",)),
        ]
        hints = _match({"pe": got}, variants, tolerance) or (
            "PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) and PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)).",
            "Check row 0 first (it must be 0, 1, 0, 1, ...), then one row by hand with a calculator.")
        raise _Fail("The encoding differs from the paper's formula.",
                    f"Input: {inputs}\n{_row_diff('pe', got, want, tolerance)}", hints)
    return f"All {len(cases)} cases match the reference (including max_len = 1 and a longer table)."


# --------------------------------------------------------------------------------------------------------------
# Assignment 3: scaled dot-product attention
# --------------------------------------------------------------------------------------------------------------
def _attention_variant(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, *, scale: float | None = None,
                       dim: int = -1, mask_mode: str = "keep") -> dict[str, Tensor]:
    """Eager attention in float64 with one deliberate mistake; the defaults give the right answer."""
    q, k, v = q.double(), k.double(), v.double()
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale  # (..., T, S)
    if mask is not None and mask_mode == "keep":
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None and mask_mode == "invert":
        scores = scores.masked_fill(mask, float("-inf"))
    elif mask is not None and mask_mode == "zero":
        scores = scores.masked_fill(~mask, 0.0)
    weights = scores.softmax(dim)
    return {"output": weights @ v, "weights": weights}


def _attention_cases() -> list[tuple[str, dict[str, Tensor | None]]]:
    g = _seeded(0)

    def r(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    pad = torch.tensor([[True, True, True, True], [True, True, True, False]])[:, None, :]  # (B, 1, S)
    return [
        ("no mask", dict(q=r(2, 3, 8), k=r(2, 4, 8), v=r(2, 4, 5), mask=None)),
        ("padding mask", dict(q=r(2, 3, 8), k=r(2, 4, 8), v=r(2, 4, 5), mask=pad)),
        ("causal mask", dict(q=r(2, 4, 8), k=r(2, 4, 8), v=r(2, 4, 5), mask=causal_mask(4))),
        ("heads axis", dict(q=r(2, 2, 3, 8), k=r(2, 2, 4, 8), v=r(2, 2, 4, 5), mask=pad[:, None])),
        ("batch of one, length one", dict(q=r(1, 1, 8), k=r(1, 1, 8), v=r(1, 1, 5), mask=None)),
        ("float32", {n: x.float() for n, x in dict(q=r(2, 3, 8), k=r(2, 3, 8), v=r(2, 3, 4)).items()}
         | {"mask": causal_mask(3)}),
        ("bfloat16", {n: x.bfloat16() for n, x in dict(q=r(2, 3, 8), k=r(2, 4, 8), v=r(2, 4, 4)).items()}
         | {"mask": pad}),
    ]


_SQRT_DK_HINTS = ("The scores are √d_k too large: did you divide q·kᵀ by √d_k?",
                  "Divide by math.sqrt(d_k) with d_k = q.shape[-1] before the softmax (§3.2.1). Without it the "
                  "dot products of random vectors have variance d_k, the softmax saturates and its gradients vanish.")
_SOFTMAX_HINTS = ("Rows do not sum to 1: did you take the softmax over the last axis?",
                  "weights[..., t, :] is a distribution over the keys for query t, so the softmax runs over the "
                  "keys: scores.softmax(dim=-1).")
_MASK_INVERTED_HINTS = ("The mask looks inverted: True means may attend.",
                        "Put -inf where the mask is False: scores.masked_fill(~mask, float('-inf')), or "
                        "masked_fill(mask == False, ...).")
_MASK_IGNORED_HINTS = ("The mask has no effect: keys where the mask is False still get weight.",
                       "Before the softmax, set the scores of blocked keys to -inf: "
                       "scores.masked_fill(~mask, float('-inf')).")


@_check("attention")
def check_attention(attention: Callable) -> str:
    """Check ``attention(q, k, v, mask=None) -> (output, weights)``, softmax(q kᵀ / √d_k) v with a boolean
    mask (True = may attend), against :func:`~transformer_lib.attention.scaled_dot_product_attention`.

    Shape:
        q: (..., T, D), k: (..., S, D), v: (..., S, Dv), mask: broadcastable to (..., T, S)
        -> output (..., T, Dv), weights (..., T, S)
    """
    cases = _attention_cases()
    for label, c in cases:
        q, k, v, mask = c["q"], c["k"], c["v"], c["mask"]
        inputs = f"{label}: {_describe(q=q, k=k, v=v, mask=mask)}"
        result = _call(attention, q.clone(), k.clone(), v.clone(), None if mask is None else mask.clone(),
                       inputs=inputs)
        if isinstance(result, Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
            raise _Fail("attention must return a pair (output, weights).", f"Input: {inputs}",
                        ("End with `return output, weights`: the weights are needed to draw attention maps.",))
        out, w = (_tensor(x, what, inputs) for x, what in zip(result, ("The output", "The weights")))
        ref_out, ref_w = scaled_dot_product_attention(q.double(), k.double(), v.double(), mask, need_weights=True,
                                                      impl="eager")
        T, S = q.shape[-2], k.shape[-2]
        _expect_shape("The weight tensor", w, tuple(ref_w.shape), inputs,
                      ("There is one row of weights per query and one column per key: (..., T, S)."
                       + (" Yours is (..., S, T): compute q @ kᵀ, not k @ qᵀ." if w.shape[-2:] == (S, T) else ""),))
        _expect_shape("The output", out, tuple(ref_out.shape), inputs,
                      ("The output is weights @ v: one row per query, the width of v: (..., T, Dv).",))
        _expect_dtype("The output", out, q.dtype, inputs)
        if _close(out, ref_out, q.dtype) and _close(w, ref_w, q.dtype):
            continue
        d = q.shape[-1]
        variants = [
            (lambda: _attention_variant(q, k, v, mask, scale=1.0), _SQRT_DK_HINTS),
            (lambda: _attention_variant(q, k, v, mask, scale=1 / d),
             ("You divided by d_k; divide by √d_k (math.sqrt(d_k)).",)),
            (lambda: _attention_variant(q, k, v, mask, scale=math.sqrt(d)),
             ("You multiplied by √d_k; divide the scores by √d_k instead.",)),
            (lambda: _attention_variant(q, k, v, mask, scale=1 / math.sqrt(S)),
             ("d_k is the width of the queries and keys, q.shape[-1], not the number of keys.",)),
            (lambda: _attention_variant(q, k, v, mask, dim=-2), _SOFTMAX_HINTS),
            (lambda: _attention_variant(q, k, v, mask, mask_mode="invert"), _MASK_INVERTED_HINTS),
            (lambda: _attention_variant(q, k, v, mask, mask_mode="zero"),
             ("Masked scores were set to 0, which still gets weight exp(0) = 1: use float('-inf').",)),
            (lambda: _attention_variant(q, k, v, mask, mask_mode="ignore"), _MASK_IGNORED_HINTS),
        ]
        hints = _match({"output": out, "weights": w}, variants, q.dtype)
        if hints is None:
            sums = w.double().sum(-1)
            if not torch.allclose(sums, torch.ones_like(sums), atol=_tol(q.dtype)[1] * 100 + 1e-6):
                hints = _SOFTMAX_HINTS
            elif mask is not None and (w.double() * ~mask).abs().max() > 1e-6:
                hints = _MASK_IGNORED_HINTS
            elif _close(w, ref_w, q.dtype):
                hints = ("The weights are right but the output is not: the output is weights @ v.",)
            else:
                hints = ("The weights differ from softmax(q kᵀ / √d_k): compute the scores, scale, mask, then "
                         "softmax over the last axis.",
                         "Work through one query by hand: its scores are q[t] · k[s] for every key s.")
        name, a, e = ("weights", w, ref_w) if not _close(w, ref_w, q.dtype) else ("output", out, ref_out)
        raise _Fail(f"The {name} differ from the reference.", f"Input: {inputs}\n{_row_diff(name, a, e, q.dtype)}",
                    hints)
    return (f"All {len(cases)} cases match the reference (float64, float32, bfloat16; padding and causal masks, "
            "a heads axis, a batch of one with length one).")


# --------------------------------------------------------------------------------------------------------------
# Assignment 4: masks
# --------------------------------------------------------------------------------------------------------------
def _bool_result(x: Any, what: str, inputs: str) -> Tensor:
    x = _tensor(x, what, inputs)
    if x.dtype != torch.bool:
        raise _Fail(f"{what} has dtype {x.dtype}; expected a boolean tensor (True = may attend).", f"Input: {inputs}",
                    ("A comparison such as ids != pad_id is already boolean; for a triangle use "
                     "torch.ones(size, size, dtype=torch.bool).tril().",))
    return x


_IDS = torch.tensor([[5, 6, 7, 0, 0], [8, 9, 4, 5, 6], [4, 0, 0, 0, 0]])


@_check("padding_mask")
def check_padding_mask(make_padding_mask: Callable) -> str:
    """Check ``make_padding_mask(ids, pad_id) -> (B, 1, 1, S)`` bool against
    :func:`~transformer_lib.masks.padding_mask` (True where the key is a real token)."""
    cases = [(_IDS, 0), (torch.tensor([[5, 9, 9], [9, 4, 5]]), 9), (torch.tensor([[4]]), 0)]
    for ids, pad_id in cases:
        inputs = _describe(ids=ids, pad_id=pad_id)
        got = _bool_result(_call(make_padding_mask, ids.clone(), pad_id, inputs=inputs), "The mask", inputs)
        want = padding_mask(ids, pad_id)
        B, S = ids.shape
        _expect_shape("The mask", got, (B, 1, 1, S), inputs,
                      ("Give the mask the shape (B, 1, 1, S): the axes of size 1 broadcast over the heads and the "
                       "queries of the (B, H, T, S) scores. mask[:, None, None, :] adds them."
                       + (" Yours is (B, S)." if tuple(got.shape) == (B, S) else ""),))
        if torch.equal(got, want):
            continue
        hints = (_MASK_INVERTED_HINTS[:1] + ("Real tokens get True and <pad> gets False: ids != pad_id.",)
                 if torch.equal(got, ~want) else
                 ("Use the pad_id argument, not a fixed 0.",) if torch.equal(got, padding_mask(ids, 0)) else
                 ("The mask is True exactly where ids != pad_id.",))
        raise _Fail("The mask differs from the reference.", f"Input: {inputs}\n{_row_diff('mask', got, want)}",
                    hints)
    return f"All {len(cases)} cases match the reference (another pad_id, a batch of one with length one)."


@_check("causal_mask")
def check_causal_mask(make_causal_mask: Callable) -> str:
    """Check ``make_causal_mask(size) -> (size, size)`` bool against :func:`~transformer_lib.masks.causal_mask`
    (position t may attend to positions 0..t)."""
    cases = [4, 1, 6]
    for size in cases:
        inputs = f"size = {size}"
        got = _bool_result(_call(make_causal_mask, size, inputs=inputs), "The mask", inputs)
        want = causal_mask(size)
        _expect_shape("The mask", got, (size, size), inputs, ("The causal mask is (size, size): queries x keys.",))
        if torch.equal(got, want):
            continue
        ones = torch.ones(size, size, dtype=torch.bool)
        hints = (
            ("The mask looks inverted: True means may attend, so position t sees positions 0..t (the lower "
             "triangle, diagonal included).", "torch.ones(size, size, dtype=torch.bool).tril()")
            if torch.equal(got, ~want) or torch.equal(got, ones.triu()) else
            ("The causal mask is off by one: a position may attend to itself, so keep the diagonal.",
             "tril() with the default diagonal=0 keeps it; tril(-1) drops it, and then the first position sees "
             "nothing at all.") if torch.equal(got, ones.tril(-1)) else
            ("The causal mask is off by one: each position sees one future token.",
             "Use tril() with diagonal=0: position t may see 0..t and nothing after.")
            if torch.equal(got, ones.tril(1)) else
            ("Position t may attend to positions 0..t only: a lower-triangular boolean matrix.",))
        raise _Fail("The mask differs from the reference.", f"Input: {inputs}\n{_row_diff('mask', got, want)}",
                    hints)
    return f"All {len(cases)} cases match the reference (including size 1)."


@_check("decoder_mask")
def check_decoder_mask(make_decoder_mask: Callable) -> str:
    """Check ``make_decoder_mask(tgt_ids, pad_id) -> (B, 1, T, T)`` bool: causal AND padding of the keys."""
    cases = [(_IDS[:, :4], 0), (torch.tensor([[4, 5, 9]]), 9), (torch.tensor([[1]]), 0)]
    for ids, pad_id in cases:
        inputs = _describe(tgt_ids=ids, pad_id=pad_id)
        got = _bool_result(_call(make_decoder_mask, ids.clone(), pad_id, inputs=inputs), "The mask", inputs)
        causal, pad = causal_mask(ids.shape[1]), padding_mask(ids, pad_id)
        want = causal & pad  # (B, 1, T, T)
        B, T = ids.shape
        _expect_shape("The mask", got, (B, 1, T, T), inputs,
                      ("The decoder mask is (B, 1, T, T): one (T, T) causal pattern per sequence, with an axis of "
                       "size 1 that broadcasts over the heads.",))
        if torch.equal(got, want):
            continue
        on_queries = causal & padding_mask(ids, pad_id).transpose(-1, -2)
        hints = (
            ("Combine the masks with AND (&): a key is visible only if both masks allow it.",)
            if torch.equal(got, causal | pad) else
            ("The padding part is missing: pad keys must be blocked too.",) if torch.equal(got, causal.expand_as(want))
            else ("The causal part is missing: a position must not see the positions after it.",)
            if torch.equal(got, pad.expand_as(want)) else
            ("The padding mask must block pad *keys* (the last axis), not pad queries.",)
            if torch.equal(got, on_queries) else
            ("mask = causal_mask(T) & padding_mask(ids, pad_id); check each part with the two checks above.",))
        raise _Fail("The mask differs from the reference.", f"Input: {inputs}\n{_row_diff('mask', got, want)}",
                    hints)
    return f"All {len(cases)} cases match the reference (another pad_id, a batch of one with length one)."


# --------------------------------------------------------------------------------------------------------------
# Assignment 5: multi-head attention
# --------------------------------------------------------------------------------------------------------------
_SPLIT_HINTS = ("Heads were split wrongly: view the last axis as (H, D) first, giving (B, T, H, D), then "
                "transpose(1, 2) to (B, H, T, D).",
                "x.view(B, H, T, D) reads the numbers in the wrong order: each head would get pieces of several "
                "positions instead of D features of every position.")
_MERGE_HINTS = ("Heads were merged in the wrong order: transpose (B, H, T, D) back to (B, T, H, D) before the "
                "reshape to (B, T, C).",
                "x.transpose(1, 2).reshape(B, T, C): reshape alone mixes the positions of different heads.")


@_check("split_heads")
def check_split_heads(split_heads: Callable) -> str:
    """Check ``split_heads(x, n_heads)``: (B, T, C) -> (B, H, T, D) with D = C / H."""
    g = _seeded(1)
    cases = [(torch.randn(2, 3, 8, generator=g, dtype=torch.float64), 2), (torch.randn(1, 1, 6, generator=g), 3)]
    for x, H in cases:
        inputs = _describe(x=x, n_heads=H)
        got = _tensor(_call(split_heads, x.clone(), H, inputs=inputs), "The result", inputs)
        B, T, C = x.shape
        want = x.view(B, T, H, C // H).transpose(1, 2)  # (B, H, T, D)
        hint = " Yours is (B, T, H, D): transpose(1, 2)." if tuple(got.shape) == (B, T, H, C // H) else ""
        _expect_shape("The result", got, tuple(want.shape), inputs,
                      ("Split the last axis into heads: (B, T, C) -> (B, T, H, D) -> (B, H, T, D)." + hint,))
        if not _close(got, want, x.dtype):
            hints = _SPLIT_HINTS if _close(got, x.view(B, H, T, C // H), x.dtype) else (
                "Head h must hold features h*D .. (h+1)*D - 1 of every position.",)
            raise _Fail("The heads differ from the reference.", f"Input: {inputs}\n{_row_diff('result', got, want)}",
                        hints)
    return f"All {len(cases)} cases match the reference (including a batch of one with length one)."


@_check("merge_heads")
def check_merge_heads(merge_heads: Callable) -> str:
    """Check ``merge_heads(x)``: (B, H, T, D) -> (B, T, H*D), the inverse of split_heads."""
    g = _seeded(2)
    cases = [torch.randn(2, 2, 3, 4, generator=g, dtype=torch.float64), torch.randn(1, 3, 1, 2, generator=g)]
    for x in cases:
        inputs = _describe(x=x)
        got = _tensor(_call(merge_heads, x.clone(), inputs=inputs), "The result", inputs)
        B, H, T, D = x.shape
        want = x.transpose(1, 2).reshape(B, T, H * D)
        _expect_shape("The result", got, (B, T, H * D), inputs,
                      ("Heads were not merged back: the result is (B, T, H*D), one vector per position.",))
        if not _close(got, want, x.dtype):
            hints = _MERGE_HINTS if _close(got, x.reshape(B, T, H * D), x.dtype) else (
                "Position t of the result is the concatenation of head 0, head 1, ... at position t.",)
            raise _Fail("The merged tensor differs from the reference.",
                        f"Input: {inputs}\n{_row_diff('result', got, want)}", hints)
    return f"All {len(cases)} cases match the reference (including a batch of one with length one)."


_MHA_ATTRS = ("w_q", "w_k", "w_v", "w_o")


def _mha_variant(m: nn.Module, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, n_heads: int, *,
                 split: str = "ok", merge: str = "ok", w_o: bool = True, scale: str = "head", use_mask: bool = True,
                 kv_from_query: bool = False) -> dict[str, Tensor]:
    """Multi-head attention in float64 from the learner's weights, with one deliberate mistake."""
    def lin(x: Tensor, name: str) -> Tensor:
        layer = getattr(m, name)
        bias = None if layer.bias is None else layer.bias.detach().double()
        return F.linear(x.double(), layer.weight.detach().double(), bias)

    B, T, C = query.shape
    H, D = n_heads, C // n_heads
    if kv_from_query:
        key = value = query

    def heads(x: Tensor) -> Tensor:
        L = x.shape[1]
        return x.view(B, H, L, D) if split == "no_transpose" else x.view(B, L, H, D).transpose(1, 2)

    q, k, v = heads(lin(query, "w_q")), heads(lin(key, "w_k")), heads(lin(value, "w_v"))  # (B, H, *, D)
    s = {"head": None, "model": 1 / math.sqrt(C), "none": 1.0}[scale]
    r = _attention_variant(q, k, v, mask if use_mask else None, scale=s)
    o = r["output"]  # (B, H, T, D)
    merged = o.reshape(B, T, C) if merge == "no_transpose" else o.transpose(1, 2).reshape(B, T, C)
    return {"output": lin(merged, "w_o") if w_o else merged, "weights": r["weights"]}


def _mha_cases() -> list[tuple[str, dict[str, Any]]]:
    g = _seeded(3)

    def r(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    x = r(2, 3, 16)
    pad = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, None, :]  # (B, 1, 1, S)
    y = r(2, 4, 16)
    return [
        ("self-attention, no mask", dict(query=x, key=x, value=x, mask=None)),
        ("self-attention, causal mask", dict(query=y, key=y, value=y, mask=causal_mask(4))),
        ("cross-attention, no mask", dict(query=r(2, 3, 16), key=(m := r(2, 5, 16)), value=m, mask=None)),
        ("cross-attention, padding mask", dict(query=r(2, 3, 16), key=(m := r(2, 5, 16)), value=m, mask=pad)),
        ("batch of one, length one", dict(query=(z := r(1, 1, 16)), key=z, value=z, mask=None)),
        ("float32", dict(query=(f := r(2, 3, 16).float()), key=f, value=f, mask=causal_mask(3))),
        ("bfloat16", dict(query=(b := r(2, 3, 16).bfloat16()), key=b, value=b, mask=None)),
    ]


@_check("multi_head_attention")
def check_multi_head_attention(cls: Callable) -> str:
    """Check a multi-head attention class built as ``cls(d_model, n_heads)`` with ``nn.Linear`` layers
    ``w_q, w_k, w_v, w_o`` and ``forward(query, key, value, mask=None) -> (output, weights)``: the same numbers as
    :class:`~transformer_lib.attention.MultiHeadAttention` holding its weights.

    Shape:
        query: (B, T, C), key and value: (B, S, C) -> output (B, T, C), weights (B, H, T, S)
    """
    C, H = 16, 4
    with _fixed_seed(0):
        module = _call(cls, C, H, inputs=f"d_model = {C}, n_heads = {H}")
    missing = [a for a in _MHA_ATTRS if not isinstance(getattr(module, a, None), nn.Linear)]
    if missing:
        raise _Fail(f"The module has no nn.Linear attribute(s) {missing}.", "",
                    ("Keep the __init__ of the starter code: the check reads the weights W^Q, W^K, W^V, W^O from "
                     "self.w_q, self.w_k, self.w_v and self.w_o.",))
    with torch.no_grad():  # non-zero biases, so that a forgotten bias shows
        for a in _MHA_ATTRS:
            if getattr(module, a).bias is not None:
                getattr(module, a).bias.normal_(0.0, 0.1, generator=_seeded(4))
    module.eval()
    cases = _mha_cases()
    for label, c in cases:
        query, key, value, mask = c["query"], c["key"], c["value"], c["mask"]
        dtype = query.dtype
        inputs = f"{label}: d_model = {C}, n_heads = {H}, {_describe(query=query, key=key, mask=mask)}"
        m = copy.deepcopy(module).to(dtype)
        with torch.no_grad():
            result = _call(m, query, key, value, mask, inputs=inputs)
        if isinstance(result, Tensor) or not isinstance(result, (tuple, list)) or len(result) != 2:
            raise _Fail("forward must return a pair (output, weights).", f"Input: {inputs}",
                        ("End forward with `return self.w_o(merged), weights`.",))
        out, w = (_tensor(x, what, inputs) for x, what in zip(result, ("The output", "The weights")))
        with _fixed_seed(0):
            ref = MultiHeadAttention(C, H, bias=m.w_q.bias is not None, attn_impl="eager").double().eval()
        with torch.no_grad():
            ref.qkv_proj.weight.copy_(torch.cat([getattr(m, a).weight for a in _MHA_ATTRS[:3]]))
            ref.o_proj.weight.copy_(m.w_o.weight)
            if m.w_q.bias is not None:
                ref.qkv_proj.bias.copy_(torch.cat([getattr(m, a).bias for a in _MHA_ATTRS[:3]]))
                ref.o_proj.bias.copy_(m.w_o.bias)
            ref_out, ref_w = ref(query.double(), key.double(), value.double(), mask, need_weights=True)
        B, T, S = query.shape[0], query.shape[1], key.shape[1]
        if out.dim() == 4:
            raise _Fail("Heads were not merged back.",
                        f"Input: {inputs}\nExpected output shape {tuple(ref_out.shape)}\nGot      {tuple(out.shape)}",
                        ("Heads were not merged back: (B, H, T, D) must become (B, T, C) before W^O.",
                         "merged = out.transpose(1, 2).reshape(B, T, C), then self.w_o(merged)."))
        _expect_shape("The output", out, (B, T, C), inputs, ("The output has the shape of the query: (B, T, C).",))
        _expect_shape("The weight tensor", w, (B, H, T, S), inputs,
                      ("Keys and values must come from the key and value arguments (the encoder output in "
                       "cross-attention), not from the query: there is one weight per key.",)
                      if w.dim() == 4 and w.shape[-1] == T != S else
                      ("Return the weights of every head, (B, H, T, S), not an average over heads.",))
        _expect_dtype("The output", out, dtype, inputs)
        if _close(out, ref_out, dtype) and _close(w, ref_w, dtype):
            continue
        args = (m, query, key, value, mask, H)
        variants = [
            (lambda: _mha_variant(*args, w_o=False),
             ("Missing W^O: the merged heads must go through the output projection self.w_o.",
              "MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O (§3.2.2): W^O mixes what the heads found.")),
            (lambda: _mha_variant(*args, merge="no_transpose"), _MERGE_HINTS),
            (lambda: _mha_variant(*args, split="no_transpose"), _SPLIT_HINTS),
            (lambda: _mha_variant(*args, scale="none"), _SQRT_DK_HINTS),
            (lambda: _mha_variant(*args, scale="model"),
             ("Scale by √d_k with d_k = d_model / n_heads, the width of one head, not √d_model.",)),
            (lambda: _mha_variant(*args, use_mask=False), _MASK_IGNORED_HINTS[:1]
             + ("Pass the mask on to the attention of every head; (B, 1, 1, S) and (T, S) masks broadcast.",)),
            (lambda: _mha_variant(*args, kv_from_query=True),
             ("Keys and values must come from the key and value arguments (the encoder output in "
              "cross-attention), not from the query.",)),
        ]
        hints = _match({"output": out, "weights": w}, variants, dtype) or (
            "Project with W^Q, W^K, W^V, split into heads, attend, merge the heads, project with W^O.",
            "Test split_heads and merge_heads with their own checks first, then compare each step with the "
            "shapes in the docstring.")
        name, a, e = ("weights", w, ref_w) if not _close(w, ref_w, dtype) else ("output", out, ref_out)
        raise _Fail(f"The {name} differ from the reference.", f"Input: {inputs}\n{_row_diff(name, a, e, dtype)}",
                    hints)
    return (f"All {len(cases)} cases match tl.MultiHeadAttention with your weights (self- and cross-attention, "
            "masks, a batch of one with length one, float64/float32/bfloat16).")


# --------------------------------------------------------------------------------------------------------------
# Assignment 6: decoder layer, greedy decoding, beam search
# --------------------------------------------------------------------------------------------------------------
_DECODER_ATTRS = ("self_attn", "cross_attn", "ff", "norm1", "norm2", "norm3")


def _decoder_variant(m: nn.Module, y: Tensor, memory: Tensor, self_mask: Tensor | None, cross_mask: Tensor | None,
                     *, pre_ln: bool = False, residual: bool = True, use_self_mask: bool = True,
                     cross_kv: str = "memory", use_cross_mask: bool = True, norms: tuple[int, ...] = (1, 2, 3)
                     ) -> dict[str, Tensor]:
    """The decoder layer in float64 from the learner's sub-modules, with one deliberate mistake."""
    m = copy.deepcopy(m).double()
    norm = [getattr(m, f"norm{i}") for i in norms]

    def sub(x: Tensor, f: Callable[[Tensor], Tensor], n: nn.Module) -> Tensor:
        if pre_ln:
            return x + f(n(x)) if residual else f(n(x))
        return n(x + f(x)) if residual else n(f(x))

    y, memory = y.double(), memory.double()
    y = sub(y, lambda x: m.self_attn(x, x, x, self_mask if use_self_mask else None)[0], norm[0])
    y = sub(y, lambda x: m.cross_attn(x, memory if cross_kv == "memory" else x, memory if cross_kv == "memory"
                                      else x, cross_mask if use_cross_mask else None)[0], norm[1])
    return {"output": sub(y, m.ff, norm[2])}


@_check("decoder_layer")
def check_decoder_layer(cls: Callable) -> str:
    """Check a decoder layer built as ``cls(d_model, n_heads, d_ff, dropout=0.0)`` with the sub-modules of the
    starter code (``self_attn``, ``cross_attn``, ``ff``, ``norm1..3``) and ``forward(y, memory, self_mask=None,
    cross_mask=None) -> (B, T, C)``: the same numbers as :class:`~transformer_lib.layers.DecoderLayer` (post-LN).
    """
    C, H, d_ff = 16, 4, 32
    with _fixed_seed(0):
        module = _call(cls, C, H, d_ff, dropout=0.0, inputs=f"d_model = {C}, n_heads = {H}, d_ff = {d_ff}")
    missing = [a for a in _DECODER_ATTRS if not isinstance(getattr(module, a, None), nn.Module)]
    if missing:
        raise _Fail(f"The layer has no sub-module(s) {missing}.", "",
                    ("Keep the __init__ of the starter code: the check reads self.self_attn, self.cross_attn, "
                     "self.ff and self.norm1, self.norm2, self.norm3.",))
    with torch.no_grad():  # three different LayerNorms, so that using the wrong one shows
        g = _seeded(5)
        for i in (1, 2, 3):
            n = getattr(module, f"norm{i}")
            n.weight.copy_(1 + 0.3 * torch.randn(n.weight.shape, generator=g))
            n.bias.copy_(0.2 * torch.randn(n.bias.shape, generator=g))
    module.eval()
    g = _seeded(6)
    src_pad = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, None, :]  # (B, 1, 1, S)
    cases = [
        ("no masks", torch.randn(2, 3, C, generator=g, dtype=torch.float64),
         torch.randn(2, 2, C, generator=g, dtype=torch.float64), None, None),
        ("causal self mask, source padding mask", torch.randn(2, 4, C, generator=g, dtype=torch.float64),
         torch.randn(2, 5, C, generator=g, dtype=torch.float64), causal_mask(4), src_pad),
        ("batch of one, length one", torch.randn(1, 1, C, generator=g, dtype=torch.float64),
         torch.randn(1, 1, C, generator=g, dtype=torch.float64), causal_mask(1), None),
        ("float32", torch.randn(2, 3, C, generator=g), torch.randn(2, 5, C, generator=g), causal_mask(3), src_pad),
    ]
    for label, y, memory, self_mask, cross_mask in cases:
        inputs = f"{label}: {_describe(y=y, memory=memory, self_mask=self_mask, cross_mask=cross_mask)}"
        m = copy.deepcopy(module).to(y.dtype)
        with torch.no_grad():
            out = _call(m, y, memory, self_mask, cross_mask, inputs=inputs)
        if isinstance(out, (tuple, list)):
            raise _Fail("forward returned a tuple; expected the output tensor (B, T, C) only.", f"Input: {inputs}",
                        ("Remember that self.self_attn(...) returns (output, weights): take [0].",))
        out = _tensor(out, "The output", inputs)
        _expect_shape("The output", out, tuple(y.shape), inputs, ("The output has the shape of y: (B, T, C).",))
        _expect_dtype("The output", out, y.dtype, inputs)
        with _fixed_seed(0):
            ref = DecoderLayer(C, H, d_ff, dropout=0.0, attn_impl="eager").double().eval()
        try:
            with torch.no_grad():
                ref.self_attn.load_state_dict(m.self_attn.state_dict())
                ref.cross_attn.load_state_dict(m.cross_attn.state_dict())
                ref.ff.load_state_dict(m.ff.state_dict())
                for res, i in (("self_res", 1), ("cross_res", 2), ("ff_res", 3)):
                    getattr(ref, res).norm.load_state_dict(getattr(m, f"norm{i}").state_dict())
        except (RuntimeError, AttributeError) as e:
            raise _Fail("The sub-modules differ from the starter code.", str(e),
                        ("Keep the __init__ of the starter code unchanged.",)) from None
        with torch.no_grad():
            want = ref(y.double(), memory.double(), self_mask, cross_mask)[0]
        if _close(out, want, y.dtype):
            continue
        args = (m, y, memory, self_mask, cross_mask)
        variants = [
            (lambda: _decoder_variant(*args, pre_ln=True),
             ("You normalise before each sub-layer (pre-LN); the paper's decoder is post-LN: "
              "y = LayerNorm(y + Sublayer(y)).",)),
            (lambda: _decoder_variant(*args, residual=False),
             ("A residual connection is missing: add the sub-layer's input back before the LayerNorm, "
              "norm(y + sublayer(y)).",)),
            (lambda: _decoder_variant(*args, use_self_mask=False),
             ("Future tokens leak: pass self_mask to the masked self-attention.",
              "Without the causal mask, position t reads positions after t, which do not exist yet when the "
              "model generates one token at a time.")),
            (lambda: _decoder_variant(*args, cross_kv="y"),
             ("Cross-attention must take its keys and values from memory (the encoder output) and its queries "
              "from y.",)),
            (lambda: _decoder_variant(*args, use_cross_mask=False),
             ("Pass cross_mask to the cross-attention, so that padded source positions get no weight.",)),
            (lambda: _decoder_variant(*args, norms=(1, 1, 1)),
             ("Each sub-layer has its own LayerNorm: norm1 after self-attention, norm2 after cross-attention, "
              "norm3 after the feed-forward.",)),
        ]
        hints = _match({"output": out}, variants, y.dtype) or (
            "Three sub-layers in order, each as y = norm(y + sublayer(y)): masked self-attention (self_mask), "
            "cross-attention to memory (cross_mask), feed-forward.",
            "Compare with Figure 1 of the paper, the right-hand stack.")
        diff = _row_diff("output", out, want, y.dtype)
        raise _Fail("The output differs from the reference.", f"Input: {inputs}\n{diff}", hints)
    return (f"All {len(cases)} cases match tl.DecoderLayer with your weights (masks, no masks, a batch of one with "
            "length one, float32).")


def tiny_translator(seed: int = 5, eos_bias: float = 2.0) -> Transformer:
    """A small random encoder-decoder model (vocabulary 10, d_model 16) for decoding exercises and their checks.

    Its output layer has a bias that forbids ``<pad>``, ``<bos>`` and ``<unk>`` and makes ``<eos>`` likely, so
    that some sequences end early and others run to the length limit.
    """
    cfg = TransformerConfig(src_vocab_size=10, tgt_vocab_size=10, d_model=16, n_heads=2, n_encoder_layers=1,
                            n_decoder_layers=1, d_ff=32, dropout=0.0, max_len=32, tie_embeddings=False)
    with _fixed_seed(seed):
        model = Transformer(cfg).eval()
        head = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)
    with torch.no_grad():
        head.weight.copy_(model.lm_head.weight)
        head.bias.zero_()
        head.bias[[PAD_ID, BOS_ID, UNK_ID]] = -1e4
        head.bias[EOS_ID] = eos_bias
    model.lm_head = head
    return model


_SRC = torch.tensor([[4, 5, 6, 7, 8], [8, 9, 4, 0, 0], [5, 5, 6, 0, 0], [7, 6, 5, 4, 9], [9, 8, 7, 6, 0]])


@torch.no_grad()
def _greedy_variant(model: Transformer, src: Tensor, n: int, *, position: int = -1, stop: bool = True,
                    pad_after: bool = True, keep_bos: bool = True, steps: int | None = None) -> dict[str, Tensor]:
    """Greedy decoding without a cache, with one deliberate mistake."""
    memory = model.encode(src)
    tokens = torch.full((src.shape[0], 1), BOS_ID, dtype=torch.long)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(n if steps is None else steps):
        nxt = model.lm_head(model.decode(tokens, memory, src=src)[:, position]).argmax(-1)
        if pad_after:
            nxt = nxt.masked_fill(finished, model.config.pad_id)
        tokens = torch.cat((tokens, nxt[:, None]), dim=1)
        finished |= nxt == EOS_ID
        if stop and finished.all():
            break
    return {"tokens": tokens if keep_bos else tokens[:, 1:]}


@_check("greedy_decode")
def check_greedy_decode(decode_greedy: Callable) -> str:
    """Check ``decode_greedy(model, src, max_new_tokens, bos_id, eos_id) -> (B, 1 + n)`` ids against
    :func:`~transformer_lib.decoding.greedy_decode` on :func:`tiny_translator`."""
    model = tiny_translator()
    cases = [("rows that end at different steps, one that never ends", _SRC, 8),
             ("every row ends early", _SRC[[0, 2]], 6), ("batch of one", _SRC[1:2], 3),
             ("max_new_tokens = 1", _SRC[:2], 1)]
    for label, src, n in cases:
        inputs = f"{label}: {_describe(src=src)}, max_new_tokens = {n}, bos_id = {BOS_ID}, eos_id = {EOS_ID}"
        with torch.no_grad():
            got = _tensor(_call(decode_greedy, model, src.clone(), n, BOS_ID, EOS_ID, inputs=inputs), "The result",
                          inputs)
        want = greedy_decode(model, src, n, BOS_ID, EOS_ID, use_cache=False)
        if _close(got, want):
            continue
        variants = [
            (lambda: _greedy_variant(model, src, n, keep_bos=False),
             ("Keep <bos> as the first column of the result.",)),
            (lambda: _greedy_variant(model, src, n, position=0),
             ("You read the logits at the first position; the next token comes from the last one, h[:, -1].",)),
            (lambda: _greedy_variant(model, src, n, stop=False),
             ("Stop as soon as every row has produced <eos>.",)),
            (lambda: _greedy_variant(model, src, n, pad_after=False),
             ("After a row has produced <eos> it must only get <pad> (model.config.pad_id).",
              "Keep a boolean `finished` per row and replace the next token of finished rows by the pad id.")),
            (lambda: _greedy_variant(model, src, n, pad_after=False, stop=False),
             ("After a row has produced <eos> it must only get <pad>, and the loop stops once every row has "
              "ended.",)),
            (lambda: _greedy_variant(model, src, n, steps=n - 1),
             ("One token short: generate up to max_new_tokens new tokens (off by one).",)),
            (lambda: _greedy_variant(model, src, n, steps=n + 1),
             ("One token too many: generate at most max_new_tokens new tokens (off by one).",)),
        ]
        hints = _match({"tokens": got}, variants, torch.float64) or (
            "Each step: run the decoder on the tokens so far, take the logits of the last position, append their "
            "argmax over the vocabulary.",)
        if got.shape != want.shape:
            details = (f"Expected shape {tuple(want.shape)}: {want.tolist()}\n"
                       f"Got      shape {tuple(got.shape)}: {got.tolist()}")
        else:
            details = _row_diff("tokens", got, want)
        raise _Fail("The generated ids differ from the reference.", f"Input: {inputs}\n{details}", hints)
    return f"All {len(cases)} cases match tl.greedy_decode (early <eos>, padding after it, a batch of one)."


@torch.no_grad()
def _log_prob(model: Transformer, src: Tensor, tokens: list[int]) -> float:
    """log P(tokens[1:] | src, tokens[0]) under the model, by teacher forcing."""
    tgt = torch.tensor([tokens])
    logp = model(src, tgt[:, :-1]).double().log_softmax(-1)  # (1, L-1, V)
    return float(logp[0].gather(-1, tgt[0, 1:, None]).sum())


@_check("beam_search")
def check_beam_search(decode_beam: Callable) -> str:
    """Check ``decode_beam(model, src, max_new_tokens, bos_id, eos_id, beam_size) -> list[int]`` (the best
    hypothesis of one source, ranked by total log-probability) against :func:`~transformer_lib.decoding.
    beam_search` with ``length_penalty=0``: beam_size=1 must give greedy decoding, and wider beams the same
    log-probability as the reference."""
    greedy_model, model = tiny_translator(), tiny_translator(seed=0, eos_bias=1.5)
    cases = [("beam_size = 1 is greedy", greedy_model, _SRC[3:4], 8, 1),
             ("beam_size = 3", model, _SRC[0:1], 8, 3),
             ("no hypothesis ends", tiny_translator(seed=0, eos_bias=0.0), _SRC[2:3], 5, 3)]
    for label, mdl, src, n, k in cases:
        inputs = f"{label}: {_describe(src=src)}, max_new_tokens = {n}, beam_size = {k}"
        with torch.no_grad():
            got = _call(decode_beam, mdl, src.clone(), n, BOS_ID, EOS_ID, k, inputs=inputs)
        if isinstance(got, Tensor):
            got = got.reshape(-1).tolist()
        if not isinstance(got, (list, tuple)) or not all(isinstance(t, int) for t in got):
            raise _Fail("decode_beam must return the best hypothesis as a list of ids.", f"Input: {inputs}",
                        ("Return best.tokens, e.g. [1, 7, 4, 2]: <bos>, the generated ids, <eos> if it ended.",))
        best = beam_search(mdl, src, n, BOS_ID, EOS_ID, beam_size=k, length_penalty=0.0)[0][0]
        want = best.tokens.tolist()
        got = list(got)
        if got == want:
            continue
        details = f"Input: {inputs}\nExpected {want}\nGot      {got}"
        if not got or got[0] != BOS_ID:
            raise _Fail("The hypothesis must start with <bos>.", details, ("Start every beam from [bos_id].",))
        if len(got) > n + 1 or any(t >= mdl.config.tgt_vocab_size for t in got):
            raise _Fail("The hypothesis is too long or holds ids outside the vocabulary.", details,
                        ("Generate at most max_new_tokens tokens after <bos>; token ids are indices of the "
                         "vocabulary axis of the logits.",))
        score, ref_score = _log_prob(mdl, src, got), _log_prob(mdl, src, want)
        details += f"\nlog-probability: expected {ref_score:.4f}, got {score:.4f}"
        if abs(score - ref_score) < 1e-4:
            continue  # a tie: another hypothesis with the same log-probability
        if k == 1:
            hints = ("With beam_size=1, beam search is greedy decoding: keep the single best candidate at every "
                     "step and stop when it emits <eos>.",)
        elif score < ref_score:
            hints = ("Your search missed a more probable sequence: at each step rank all beam_size x vocabulary "
                     "candidates together, by the sum of log-probabilities (log_softmax), not probabilities.",
                     "A candidate that ends with <eos> is finished: set it aside instead of extending it; keep "
                     "going down the ranked list until you have beam_size live beams.")
        else:
            hints = ("Your search found a sequence the reference does not return: follow the stopping rule of "
                     "the docstring (stop once beam_size hypotheses have ended; return the best ended one).",)
        raise _Fail("The best hypothesis differs from the reference.", details, hints)
    return f"All {len(cases)} cases match tl.beam_search (beam sizes 1 and 3; hypotheses that end, and that do not)."


# --------------------------------------------------------------------------------------------------------------
# Running all exercises of an assignment (notebooks and the grader)
# --------------------------------------------------------------------------------------------------------------
def grade_exercise(check_name: str, namespace: dict[str, Any], names: list[str] | tuple[str, ...],
                   time_limit: float = DEFAULT_TIME_LIMIT) -> CheckResult:
    """Run ``check_name`` on the objects ``names`` looked up in ``namespace`` (a notebook's ``globals()``).

    A missing name (deleted cell, syntax error, renamed function) and a crash of the check itself become
    failed results too, so one exercise can never stop the others from being graded.
    """
    check = globals().get(check_name)
    exercise = check_name.removeprefix("check_")
    if not callable(check) or not check_name.startswith("check_"):
        return CheckResult(exercise, False, f"Unknown check {check_name!r}.", error="LookupError")
    missing = [n for n in names if n not in namespace]
    if missing:
        return CheckResult(
            exercise, False, f"{', '.join(missing)} is not defined.", "",
            ("Run the cell that defines it. If that cell shows an error (a SyntaxError, say), fix it first.",
             f"If you deleted or renamed it, restore the name and signature from the starter notebook: the check "
             f"looks for {', '.join(missing)}."), "NameError")
    try:
        return check(*(namespace[n] for n in names), time_limit=time_limit)
    except Exception as e:  # a bug in the check, or an object so odd that the check trips over it
        return CheckResult(exercise, False, f"The check could not run: {type(e).__name__}: {e}", "",
                           ("Make sure the object has the signature of the starter code; if it does, tell your "
                            "teacher: this may be a bug in the check.",), "CheckError")


def check_assignment(assignment: str, namespace: dict[str, Any], *, emit_json: bool = False,
                     time_limit: float = DEFAULT_TIME_LIMIT) -> list[CheckResult]:
    """Run every check of ``assignment`` (e.g. ``"03_attention"``) on ``namespace``; print a summary.

    With ``emit_json`` each result is also printed as one line ``RESULT_MARKER + json`` for the grader.
    """
    from .assignments import get_assignment  # the registry of assignments and their exercises

    results = []
    for ex in get_assignment(assignment).exercises:
        r = grade_exercise(ex.check, namespace, ex.names, time_limit)
        results.append(r)
        if emit_json:
            print(RESULT_MARKER + json.dumps(r.to_dict(), ensure_ascii=False))
    if not emit_json:
        width = max(len(r.exercise) for r in results)
        print(f"{assignment}: {sum(r.passed for r in results)}/{len(results)} exercises pass")
        for r in results:
            print(f"  {'PASS' if r.passed else 'FAIL'}  {r.exercise:<{width}}  {r.summary}")
    return results

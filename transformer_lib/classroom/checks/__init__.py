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

Used by the notebooks of ``book/assignments/`` and by the grader, ``python -m transformer_lib.classroom.grade``.
Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key length, ``D`` head width, ``C`` d_model.

The package, one concept per module:

- :mod:`.core`: :class:`CheckResult`, the time limit, calling the learner's code safely, :func:`grade_exercise`
  and :func:`check_assignment`;
- :mod:`.compare`: dtype-aware tolerances, describing tensors and matching the catalogue of mistakes;
- :mod:`.record`: a check recorded in the learner's kernel (what the learner's code returned, as data) and replayed
  in the grader, which computes the verdict; :mod:`.snapshot`: those values as plain data, and back, rebuilding
  only the module classes a check names;
- one module per assignment: :mod:`.tokenizer` (1), :mod:`.positions` (2), :mod:`.attention` (3),
  :mod:`.masks` (4), :mod:`.multi_head` (5), :mod:`.decoder` and :mod:`.decoding` (6, with
  :func:`tiny_translator`).
"""

from __future__ import annotations

from .attention import check_attention
from .core import DEFAULT_TIME_LIMIT, RESULT_MARKER, CheckResult, check_assignment, grade_exercise
from .decoder import check_decoder_layer
from .decoding import check_beam_search, check_greedy_decode, tiny_translator
from .masks import check_causal_mask, check_decoder_mask, check_padding_mask
from .multi_head import check_merge_heads, check_multi_head_attention, check_split_heads
from .positions import check_positional_encoding
from .tokenizer import check_build_vocab, check_encode, check_pad_sequences

__all__ = [
    "CheckResult",
    "DEFAULT_TIME_LIMIT",
    "RESULT_MARKER",
    "check_build_vocab",
    "check_encode",
    "check_pad_sequences",
    "check_positional_encoding",
    "check_attention",
    "check_padding_mask",
    "check_causal_mask",
    "check_decoder_mask",
    "check_split_heads",
    "check_merge_heads",
    "check_multi_head_attention",
    "check_decoder_layer",
    "check_greedy_decode",
    "check_beam_search",
    "check_assignment",
    "grade_exercise",
    "tiny_translator",
]

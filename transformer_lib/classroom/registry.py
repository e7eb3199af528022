"""The assignments' registry: which exercises each assignment has, the check that grades each, and its points.

Points are set here and nowhere else. The generator of student notebooks (:mod:`.assignments`), the nbgrader
export (:mod:`.nbgrader_export`), the grader and its gradebook, and ``checks.check_assignment`` all read it, and
none of them imports another for it: this module imports nothing of the classroom.

An exercise whose check has several *parts* (:attr:`Exercise.parts`, e.g. the scaling, the softmax rows, the
masking and the returned weights of assignment 3) earns the points of each part its check reports as passed, so a
learner who gets the scaling right and the mask wrong gets partial credit; every other exercise is all or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["BEGIN", "END", "ANSWER_HERE", "Exercise", "Assignment", "ASSIGNMENTS", "get_assignment"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
ANSWER_HERE = "*Write your answer here.*"  # what a written answer becomes in the student notebook


@dataclass(frozen=True)
class Exercise:
    """One graded piece: ``check`` (a function name in transformer_lib.classroom.checks) is called on ``names``.

    ``points`` is what a pass earns. An ``extension`` is optional extra work: graded and listed like the others,
    its points count as extra credit, never in the assignment's maximum.
    """

    names: tuple[str, ...]
    check: str
    extension: bool = False
    points: float = 1
    parts: tuple[tuple[str, float], ...] = ()  # (part, points) for partial credit; the points add up to ``points``

    def __post_init__(self) -> None:
        if isinstance(self.points, bool) or not isinstance(self.points, (int, float)) or not self.points > 0:
            raise ValueError(f"points: expected a number > 0 for {self.check}, got {self.points!r}")
        if self.parts and (
            any(isinstance(p, bool) or not isinstance(p, (int, float)) or not p > 0 for _, p in self.parts)
            or abs(sum(p for _, p in self.parts) - self.points) > 1e-9
        ):
            raise ValueError(
                f"parts: expected (name, points > 0) pairs whose points add up to {self.points} for {self.check}, "
                f"got {self.parts!r}"
            )

    def earned(self, result: Any) -> float:
        """The points ``result`` (a check's :class:`~.checks.CheckResult`) earns: all of them for a pass; for a
        fail, the points of the parts the check reports as passed (``result.parts``) when it reports a part failed,
        else 0: a fail whose every part passed failed on something no part covers (a float64 result, a wrong shape),
        and must not earn all the points of a pass."""
        if result.passed:
            return self.points
        passed = getattr(result, "parts", None) or {}
        if not any(passed.get(part) is False for part, _ in self.parts):
            return 0
        return sum(points for part, points in self.parts if passed.get(part) is True)

    @property
    def name(self) -> str:
        return self.check.removeprefix("check_")


@dataclass(frozen=True)
class Assignment:
    """An assignment notebook: ``id`` is its file name without ``.ipynb``, e.g. ``"03_attention"``."""

    id: str
    title: str
    chapter: str
    exercises: tuple[Exercise, ...]

    @property
    def max_points(self) -> float:
        """The points of the required exercises (extensions are extra credit)."""
        return sum(ex.points for ex in self.exercises if not ex.extension)

    def exercise(self, name: str) -> Exercise | None:
        """The exercise whose check result is called ``name`` (e.g. ``"attention"``), or None."""
        return next((ex for ex in self.exercises if ex.name == name), None)


# Points are set here and nowhere else: the grader's sheets and the nbgrader export read them.
ASSIGNMENTS: dict[str, Assignment] = {
    a.id: a
    for a in (
        Assignment(
            "01_tokenizer",
            "A word tokenizer with special tokens and padding",
            "tokenization",
            (
                Exercise(("build_vocab",), "check_build_vocab", points=4),
                Exercise(("encode",), "check_encode", points=3),
                Exercise(("pad_sequences",), "check_pad_sequences", points=3),
            ),
        ),
        Assignment(
            "02_positional_encoding",
            "The sinusoidal positional encoding",
            "positional encoding",
            (Exercise(("positional_encoding",), "check_positional_encoding", points=10),),
        ),
        Assignment(
            "03_attention",
            "Scaled dot-product attention",
            "attention",
            (
                Exercise(
                    ("attention",),
                    "check_attention",
                    points=10,
                    parts=(("scaling", 3), ("softmax rows", 2), ("masking", 3), ("returned weights", 2)),
                ),
            ),
        ),
        Assignment(
            "04_masks",
            "Padding and causal masks",
            "masks",
            (
                Exercise(("make_padding_mask",), "check_padding_mask", points=3),
                Exercise(("make_causal_mask",), "check_causal_mask", points=3),
                Exercise(("make_decoder_mask",), "check_decoder_mask", points=4),
            ),
        ),
        Assignment(
            "05_multi_head_attention",
            "Multi-head attention",
            "multi-head attention",
            (
                Exercise(("split_heads",), "check_split_heads", points=3),
                Exercise(("merge_heads",), "check_merge_heads", points=2),
                Exercise(("MultiHead",), "check_multi_head_attention", points=5),
            ),
        ),
        Assignment(
            "06_decoder",
            "A decoder layer, greedy decoding and beam search",
            "decoder and decoding",
            (
                Exercise(("DecoderBlock",), "check_decoder_layer", points=5),
                Exercise(("decode_greedy",), "check_greedy_decode", points=5),
                Exercise(("decode_beam",), "check_beam_search", extension=True, points=5),
            ),
        ),
    )
}


def get_assignment(assignment_id: str) -> Assignment:
    """The assignment called ``assignment_id`` (e.g. ``"03_attention"``); ``KeyError`` lists the known ones."""
    try:
        return ASSIGNMENTS[assignment_id]
    except KeyError:
        raise KeyError(f"assignment_id: expected one of {sorted(ASSIGNMENTS)}, got {assignment_id!r}") from None

"""Points and exercise lists as the classroom's registry sets them (transformer_lib/classroom/registry.py: "Points are
set here and nowhere else"), for the tests of the grader and its sheets to read instead of retyping them: adding an
exercise or changing its points changes no test. Numbers come back as the sheets write them (``"10"``, ``"2.5"``)."""

from __future__ import annotations

from transformer_lib.classroom.registry import ASSIGNMENTS

__all__ = ["exercises", "maximum", "points", "shown"]


def shown(value: float) -> str:
    """A number of points as a sheet writes it: 10 -> "10", 2.5 -> "2.5" (gradebook's ``_number``)."""
    return str(int(value)) if float(value).is_integer() else str(round(value, 4))


def maximum(*assignments: str) -> float:
    """The points of the required exercises of ``assignments`` (extensions are extra credit)."""
    return sum(ASSIGNMENTS[a].max_points for a in assignments)


def points(assignment: str, exercise: str, *, failed_parts: tuple[str, ...] | set[str] = ()) -> float:
    """What exercise ``exercise`` (its result name, "attention") of ``assignment`` earns: all its points, or with
    ``failed_parts`` the points of its other parts (partial credit)."""
    found = ASSIGNMENTS[assignment].exercise(exercise)
    assert found is not None, f"{assignment} has no exercise {exercise!r}: {exercises(assignment)}"
    if not failed_parts:
        return found.points
    return sum(p for part, p in found.parts if part not in failed_parts)


def exercises(assignment: str, *, required: bool = False) -> list[str]:
    """The result names of ``assignment``'s exercises, in order (``required``: without the extensions)."""
    return [ex.name for ex in ASSIGNMENTS[assignment].exercises if not (required and ex.extension)]

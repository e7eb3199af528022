"""What grading one notebook found (:class:`GradedNotebook`): written by :mod:`.notebook`, read by :mod:`.gradebook`.

It lives in a module of its own so that the grader and the gradebook both import it and neither imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .checks import CheckResult

__all__ = ["GradedNotebook"]


@dataclass
class GradedNotebook:
    """What grading one notebook found: a result per exercise, and the problems met while running it."""

    student: str
    assignment: str
    path: Path
    results: list[CheckResult] = field(default_factory=list)  # each with its flags (CheckResult.flags)
    problems: list[str] = field(default_factory=list)
    file_name: str = ""  # as found in the submissions folder, e.g. "alice/03_attention (1).ipynb"
    sha256: str = ""  # of the file's bytes before grading
    notes: list[str] = field(default_factory=list)  # for the teacher: duplicates not graded, roster, late
    seconds: float = 0.0  # how long grading it took, kernels and replays included
    flags: list[str] = field(default_factory=list)  # for the teacher, about the whole notebook (e.g. similarity)
    code: list[str] = field(default_factory=list)  # its code cells as the kernel ran them (IPython syntax turned)
    unsandboxed: bool = False  # graded without the sandbox (--no-sandbox)

    def rows(self) -> list[dict[str, Any]]:
        if not self.results:  # unknown assignment: one row that says so
            return [
                {
                    "student": self.student,
                    "assignment": self.assignment,
                    "exercise": "-",
                    "passed": 0,
                    "message": "; ".join(self.problems),
                }
            ]
        return [
            {
                "student": self.student,
                "assignment": self.assignment,
                "exercise": r.exercise,
                "passed": int(r.passed),
                "message": r.message,
            }
            for r in self.results
        ]

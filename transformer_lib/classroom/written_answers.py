"""The written answers: each student's text from the markdown cell tagged ``answer``, one row per question.

``grades_answers.csv`` (:data:`ANSWER_COLUMNS`) has the question, the student's answer, an empty ``points`` column
that the teacher fills in by hand, and ``max_points``; ``tl-grade totals --answers`` then merges the points into
the totals (:func:`~.sheet_rows.written_points`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .graded import GradedNotebook
from .registry import ANSWER_HERE, ASSIGNMENTS
from .sheet_rows import ROSTER_COLUMNS, _ids

__all__ = ["ANSWER_COLUMNS", "answer_rows"]

ANSWER_COLUMNS = (
    "student",
    *ROSTER_COLUMNS,
    "assignment",
    "question",
    "question_text",
    "answer",
    "points",
    "max_points",
    "file_name",
    "sha256",
)
_QUESTION = re.compile(r"\s*(\d+)[.)]\s+(.*)")


def _markdown_cells(path: Path) -> list[tuple[str | None, str]]:
    """``(id, source)`` of each markdown cell of a submitted notebook; none if it cannot be read."""
    import nbformat

    try:
        cells = nbformat.read(path, as_version=4).get("cells", [])
    except Exception:  # not JSON, not a notebook: its exercise rows say why
        return []
    found = []
    for c in cells if isinstance(cells, list) else []:
        if isinstance(c, dict) and c.get("cell_type") == "markdown":
            source = c.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            found.append((c.get("id"), source if isinstance(source, str) else ""))
    return found


def _questions(template: str) -> list[str]:
    """The numbered questions of a template answer cell (continuation lines joined)."""
    questions: list[str] = []
    for line in template.splitlines():
        if line.strip() == ANSWER_HERE:
            break
        m = _QUESTION.fullmatch(line)
        if m:
            questions.append(m[2].strip())
        elif questions and line.startswith(" ") and line.strip():
            questions[-1] += " " + line.strip()
    return questions


def _answer(template: str, submitted: str) -> str:
    """What the student added to the template cell: its lines that the template does not have."""
    given = {line.strip() for line in template.splitlines()}
    return "\n".join(line for line in submitted.splitlines() if line.strip() not in given).strip()


def _split_answer(answer: str, n: int) -> list[str] | None:
    """The answer cut at its numbered items ``1.`` .. ``n.``, when it is numbered exactly so."""
    parts: list[list[str]] = []
    for line in answer.splitlines():
        m = _QUESTION.fullmatch(line)
        if m and int(m[1]) == len(parts) + 1:
            parts.append([m[2]])
        elif parts:
            parts[-1].append(line.strip())
        elif line.strip():
            return None  # text before the first number
    if len(parts) != n:
        return None
    return [" ".join(p).strip() for p in parts]


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def answer_rows(
    graded: list[GradedNotebook], templates: str | Path, roster: list[dict[str, str]] | None = None
) -> list[dict[str, Any]]:
    """One row per student per written question (:data:`ANSWER_COLUMNS`).

    ``templates`` is the folder of student notebooks handed out (``book/assignments``): its cells tagged
    ``answer`` give the questions, and a submission's markdown cell with the same id (else, for a pasted copy
    with a new id, the one that starts with the same heading) gives the answer: its lines that the template does
    not have. An answer numbered ``1.``, ``2.``, ... like the questions is cut into one row
    per question; otherwise the whole answer goes on one row whose ``question`` is e.g. ``1-2``.
    """
    import nbformat

    rows = []
    for g in graded:
        template_path = Path(templates) / f"{g.assignment}.ipynb"
        if g.assignment not in ASSIGNMENTS or not template_path.exists():
            continue
        asked = [c for c in nbformat.read(template_path, as_version=4).cells if "answer" in c.metadata.get("tags", [])]
        cells = _markdown_cells(Path(g.path))
        by_id = dict(cells)
        common = {
            "student": g.student,
            **_ids(g.student, roster),
            "assignment": g.assignment,
            "points": "",
            "file_name": g.file_name,
            "sha256": g.sha256,
        }
        for k, question_cell in enumerate(asked):
            source = by_id.get(question_cell.get("id"))
            if source is None:  # a copy of the cell (new id): the k-th markdown cell that starts like the question
                heading = question_cell.source.splitlines()[0]
                same = [text for _, text in cells if text.splitlines()[:1] == [heading]]
                source = same[k] if k < len(same) else None
            answer = _answer(question_cell.source, source) if source is not None else ""
            questions = _questions(question_cell.source) or [question_cell.source.splitlines()[0].lstrip("# ")]
            parts = _split_answer(answer, len(questions))
            if parts is None:
                label = "1" if len(questions) == 1 else f"1-{len(questions)}"
                rows.append(
                    {
                        **common,
                        "question": label,
                        "question_text": _short(" ".join(questions)),
                        "answer": answer,
                        "max_points": len(questions),
                    }
                )
            else:
                rows += [
                    {**common, "question": str(i), "question_text": _short(q), "answer": a, "max_points": 1}
                    for i, (q, a) in enumerate(zip(questions, parts, strict=True), start=1)
                ]
    return rows

"""One markdown feedback file per student: each exercise's result and points, and for each failure what failed,
the parts passed of a partly right answer, the hints, and the problems met while running the notebook; no control
character or escape sequence of a student's message reaches it, and no markdown or HTML either: every text that
can carry what a student's code printed or raised (summaries, details, hints, notes, problems, file names) is
escaped (:func:`markdown_text`), so that it shows as the text it is, never as a table row, an image or a comment."""

from __future__ import annotations

import hashlib
import html
import os
import re

from .graded import GradedNotebook
from .registry import ASSIGNMENTS
from .sheet_rows import _number, clean_text, exercise_rows

__all__ = ["feedback_markdown", "feedback_file_name", "markdown_text"]

# what markdown (GitHub's too) reads as markup anywhere in a line (an underscore inside a word is no emphasis)
_MARKUP = re.compile(r"([\\`*\[\]|~#!{}]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")
_LINE_START = re.compile(r"^(\s*(?:\d+(?=[.)])|))([-+=.)])")  # a list item, a rule, a setext heading: "- ", "1."


def markdown_text(text: str) -> str:
    """``text`` (one line, cleaned) as markdown that shows it as it is: HTML's ``& < >`` as entities (no tag, no
    comment), markdown's punctuation escaped, and a line start that would begin a list or a rule escaped."""
    text = _MARKUP.sub(r"\\\1", html.escape(clean_text(str(text)), quote=False))
    return _LINE_START.sub(r"\1\\\2", text)


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text`` (CommonMark: only such a fence closes it)."""
    return "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))


_NAME_BYTES = 160  # of a feedback file's name, before ".md": far below the 255 a file system allows


def feedback_file_name(student: str) -> str:
    """A student's name as a file name in the feedback folder: no separators, no leading dot, valid UTF-8, and at
    most 160 bytes (a longer name is cut and ends with a hash of the whole, so that two stay apart)."""
    name = re.sub(r'[\\/:*?"<>|\x00-\x1f]', "_", clean_text(student)).lstrip(". ") or "_"
    if len(name.encode()) <= _NAME_BYTES:
        return name
    digest = hashlib.sha256(os.fsencode(student)).hexdigest()[:12]
    return name.encode()[: _NAME_BYTES - 13].decode(errors="ignore") + "-" + digest


def feedback_markdown(student: str, graded: list[GradedNotebook]) -> str:
    """One student's feedback: a table of results and points, then for each failure what failed, the hints, and
    the problems met while running each notebook (and any files that were not graded)."""
    rows = exercise_rows(graded)
    lines = [
        f"# Feedback for {markdown_text(student)}",
        "",
        "| Assignment | Exercise | Result | Points |",
        "|---|---|---|---|",
    ]
    for r in rows:
        optional = " (optional)" if r["optional"] else ""
        verdict = "PASS" if r["passed"] else "FAIL"
        exercise = markdown_text(r["exercise"]) + optional
        lines.append(f"| {markdown_text(r['assignment'])} | {exercise} | {verdict} | {r['points']}/{r['max_points']} |")
    for g in graded:
        passed = sum(r.passed for r in g.results)
        mine = [r for r in rows if r["assignment"] == g.assignment and r["student"] == g.student]
        required = _number(sum(r["points"] for r in mine if not r["optional"]))
        extra = _number(sum(r["points"] for r in mine if r["optional"]))
        maximum = ASSIGNMENTS[g.assignment].max_points if g.assignment in ASSIGNMENTS else 0
        bonus = f", plus {extra} extra for the optional extension" if extra else ""
        lines += [
            "",
            f"## {g.assignment}: {passed} of {len(g.results)} exercises pass "
            f"({required} of {_number(maximum)} points{bonus})",
            "",
        ]
        if getattr(g, "file_name", ""):
            lines += [f"Graded file: {markdown_text(g.file_name)}", ""]
        for note in getattr(g, "notes", []):
            lines += [f"*{markdown_text(note)}*", ""]
        for result in g.results:
            lines += [f"### {markdown_text(result.exercise)}: {'PASS' if result.passed else 'FAIL'}", ""]
            lines += [markdown_text(result.summary), ""]
            if not result.passed:
                if result.parts:
                    passed_parts = ", ".join(
                        f"{markdown_text(p)} {'PASS' if ok else 'FAIL'}" for p, ok in result.parts.items()
                    )
                    lines += [f"Parts (partial credit): {passed_parts}.", ""]
                if result.details:
                    details = clean_text(result.details, lines=True)
                    lines += [_fence(details) + "text", details, _fence(details), ""]
                if result.hints:
                    lines += [f"**Hint:** {markdown_text(result.hints[0])}", ""]
                for level, hint in enumerate(result.hints[1:], start=2):
                    lines += [
                        f"<details><summary>Hint {level}</summary>",
                        "",
                        markdown_text(hint),
                        "",
                        "</details>",
                        "",
                    ]
        if g.problems:
            lines += [
                "### Problems with your notebook",
                "",
                "Cells are numbered from the top, markdown cells included.",
                "",
            ]
            lines += [f"- {markdown_text(p)}" for p in g.problems] + [""]
    return clean_text("\n".join(lines), lines=True).rstrip() + "\n"  # nothing a terminal would act on

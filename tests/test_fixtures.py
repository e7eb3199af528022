"""The committed fixture submissions (tests/fixtures/submissions/, which tests/test_grade.py and tests/test_gradebook.py
grade) are exactly what their generator writes: a change to a solution notebook in assignments/ is followed by
``.venv/bin/python tests/fixtures/submissions/make_submissions.py`` (CONTRIBUTING, "Add an exercise and its grader
check"), or this fails and names the files that drifted."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "tests" / "fixtures" / "submissions"


def _generator():
    spec = importlib.util.spec_from_file_location("make_submissions", SUBMISSIONS / "make_submissions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.ipynb"))}


def drifted(committed: Path, written: Path) -> list[str]:
    """The notebooks that differ between two folders of submissions, or that only one of them has."""
    a, b = _files(committed), _files(written)
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def test_the_committed_submissions_are_what_make_submissions_writes(tmp_path):
    _generator().main(tmp_path)
    assert len(_files(tmp_path)) >= 8
    assert drifted(SUBMISSIONS, tmp_path) == [], "run .venv/bin/python tests/fixtures/submissions/make_submissions.py"
    # planted: one changed byte, and a fixture the generator no longer writes
    alice = tmp_path / "alice" / "03_attention.ipynb"
    alice.write_bytes(alice.read_bytes().replace(b"hide-cell", b"hide-input", 1))
    (tmp_path / "zed").mkdir()
    (tmp_path / "zed" / "01_tokenizer.ipynb").write_text("{}")
    assert drifted(SUBMISSIONS, tmp_path) == ["alice/03_attention.ipynb", "zed/01_tokenizer.ipynb"]

"""The committed fixture classes that the grader's tests grade are exactly what their generators write:
tests/fixtures/submissions/ (tests/test_grade.py, tests/test_gradebook.py), tests/fixtures/hostile/ (test_grade's
cheating class) and tests/fixtures/attacks/ (tests/test_attacks.py), each derived from the solution and student
notebooks. A change to a notebook in assignments/ is followed by their three generators (CONTRIBUTING, "Add an
exercise and its grader check", step 5), or this fails and names the generator and the files that drifted."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
GENERATORS = ["submissions/make_submissions.py", "hostile/make_hostile.py", "attacks/make_attacks.py"]


def _generator(script: str):
    path = FIXTURES / script
    sys.path.insert(0, str(FIXTURES / "submissions"))  # the hostile and attack classes build on make_submissions
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(FIXTURES / "submissions"))
    return module


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.ipynb"))}


def drifted(committed: Path, written: Path) -> list[str]:
    """The notebooks that differ between two folders of submissions, or that only one of them has."""
    a, b = _files(committed), _files(written)
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


@pytest.mark.parametrize("script", GENERATORS)
def test_the_committed_fixtures_are_what_their_generator_writes(script, tmp_path):
    _generator(script).main(tmp_path)
    assert len(_files(tmp_path)) >= 8, f"{script} wrote {len(_files(tmp_path))} notebooks"
    committed = FIXTURES / Path(script).parent
    assert drifted(committed, tmp_path) == [], f"run .venv/bin/python tests/fixtures/{script}"


def test_a_drifted_fixture_is_named(tmp_path):
    _generator(GENERATORS[0]).main(tmp_path)
    # planted: one changed byte, and a fixture the generator no longer writes
    alice = tmp_path / "alice" / "03_attention.ipynb"
    alice.write_bytes(alice.read_bytes().replace(b"hide-cell", b"hide-input", 1))
    (tmp_path / "zed").mkdir()
    (tmp_path / "zed" / "01_tokenizer.ipynb").write_text("{}")
    assert drifted(FIXTURES / "submissions", tmp_path) == ["alice/03_attention.ipynb", "zed/01_tokenizer.ipynb"]

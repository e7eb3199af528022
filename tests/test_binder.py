"""binder/: what a Binder image would install, checked by reading the files (no network, no repo2docker).

repo2docker ignores every configuration file outside binder/ once that folder exists, so binder/ alone must
bring in the CPU torch and the reader's install (the package with its [book] extra) with its pinned versions.
"""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"


def _lines(path: Path) -> list[str]:
    return [line.split("#")[0].strip() for line in path.read_text().splitlines() if line.split("#")[0].strip()]


def test_binder_installs_the_cpu_torch_the_requirements_and_their_pins():
    lines = _lines(BINDER / "requirements.txt")
    assert "torch==2.13.0" in lines and "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    included = {
        line.split()[0]: (BINDER / line.split()[1]).resolve() for line in lines if line.startswith(("-r", "-c"))
    }
    assert included == {"-r": ROOT / "requirements.txt", "-c": ROOT / "constraints.txt"}
    assert all(path.is_file() for path in included.values())


def test_binder_installs_the_package_with_the_book_extra_and_pins_python():
    # requirements.txt is the reader's install: the package, editable, with what the book needs and nothing more
    assert _lines(ROOT / "requirements.txt") == ["-e .[book]"]
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    # the pages run the exported translator (onnxruntime) but do not export it (onnx, onnxscript)
    book = {re.match(r"[A-Za-z0-9._-]+", requirement)[0].lower() for requirement in extras["book"]}
    assert "onnxruntime" in book and not book & {"nbgrader", "onnx", "onnxscript", "playwright"}, book
    assert not (BINDER / "postBuild").exists(), "requirements.txt installs the package; a postBuild would do it twice"
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    assert not (ROOT / "environment.yml").exists() or (BINDER / "environment.yml").exists()

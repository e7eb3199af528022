"""binder/: what a Binder image would install, checked by reading the files (no network, no repo2docker).

repo2docker ignores every configuration file outside binder/ once that folder exists, so binder/ alone must
bring in the CPU torch, the book's requirements with their pinned versions, and the package itself.
"""

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


def test_binder_installs_the_package_and_pins_python():
    post = BINDER / "postBuild"
    assert post.stat().st_mode & 0o111, "postBuild must be executable"
    assert "pip install --no-deps -e ." in _lines(post)
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    assert not (ROOT / "environment.yml").exists() or (BINDER / "environment.yml").exists()

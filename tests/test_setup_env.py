"""scripts/setup_env.sh hands TORCH_INDEX_URL to pip as the index torch comes from (README: "ask for the CPU build
instead"), and nothing else changes: run as written, without network, on an environment whose ``python`` and ``uv``
are stubs that write down their arguments (``VENV`` names it) and answer as a fresh environment without torch does."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "setup_env.sh"

# python: "no torch installed" until pip installed it, then its version; every call is written down, one a line
_PYTHON = """#!/usr/bin/env bash
printf '%q ' python "$@" >> "$CALLS"; echo >> "$CALLS"
if [ "${1:-}" = -c ]; then
    case "$2" in
        *"print('torch=='"*) echo "torch==${TORCH_VERSION:-2.13.0}" ;;
        *"m.version('torch')"*) [ -f "$(dirname "$0")/torch-installed" ] || exit 1 ;;
    esac
elif [ "${1:-} ${2:-} ${3:-}" = "-m pip install" ] && [[ " $* " = *" torch=="* ]]; then
    touch "$(dirname "$0")/torch-installed"
fi
exit 0
"""
_UV = """#!/usr/bin/env bash
printf '%q ' uv "$@" >> "$CALLS"; echo >> "$CALLS"
"""


def _set_up(tmp_path: Path, **env: str) -> list[list[str]]:
    """Run the set-up script on a stub environment with ``env`` added; the calls of python and uv it made."""
    venv, calls = tmp_path / "venv", tmp_path / "calls.txt"
    (venv / "bin").mkdir(parents=True)
    for name, text in (("python", _PYTHON), ("uv", _UV)):
        (venv / "bin" / name).write_text(text)
        (venv / "bin" / name).chmod(0o755)
    environ = {k: v for k, v in os.environ.items() if k not in ("TORCH_INDEX_URL", "TORCH_VERSION")}
    environ |= {"VENV": str(venv), "CALLS": str(calls), **env}
    run = subprocess.run(["bash", str(SCRIPT), "book"], env=environ, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "setup: done" in run.stdout, run.stdout
    return [shlex.split(line) for line in calls.read_text().splitlines()]


def _torch_install(calls: list[list[str]]) -> list[str]:
    (install,) = [c for c in calls if c[1:4] == ["-m", "pip", "install"] and any(a.startswith("torch==") for a in c)]
    return install


@pytest.mark.parametrize("url", ["https://download.pytorch.org/whl/cpu", "file:///srv/wheels/torch cpu"])
def test_torch_index_url_is_the_index_pip_installs_torch_from(tmp_path, url):
    calls = _set_up(tmp_path, TORCH_INDEX_URL=url)
    install = _torch_install(calls)
    assert install[install.index("--index-url") + 1] == url, install  # one argument, spaces and all
    assert install[-1] == "torch==2.13.0" and "--no-deps" in install
    (uv,) = [c for c in calls if c[:3] == ["uv", "pip", "install"]]
    assert not [a for a in uv if a.startswith("--") and "index" in a], (
        uv
    )  # the rest comes from the usual index, torch held by its pin
    assert uv[-2:] == ["-e", ".[book]"], uv


def test_without_torch_index_url_pip_uses_its_own_configuration(tmp_path):
    install = _torch_install(_set_up(tmp_path, TORCH_VERSION="2.9.1"))
    assert install == ["python", "-m", "pip", "install", "--no-deps", "torch==2.9.1"]

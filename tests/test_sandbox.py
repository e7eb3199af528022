"""The kernels' sandbox (transformer_lib.classroom.sandbox) without a kernel: the library copy is read-only and
restored when changed, leftover processes are found by their token, and folders a kernel needs are never hidden."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from transformer_lib.classroom import sandbox


def test_the_library_copy_is_read_only_and_restored_when_changed():
    lib = sandbox.LibraryCopy()
    try:
        target = lib.path / "classroom" / "checks" / "__init__.py"
        assert (lib.path / "__init__.py").exists() and target.stat().st_mode & 0o222 == 0  # no write bit for anyone
        assert lib.verify() and lib.copies == 1
        original = target.read_bytes()
        target.chmod(0o644)  # root ignores file modes: a kernel without namespaces could do this
        target.write_bytes(original + b"\nraise SystemExit\n")
        assert not lib.verify() and lib.copies == 2
        assert target.read_bytes() == original and target.stat().st_mode & 0o222 == 0
        assert lib.verify()
    finally:
        lib.cleanup()
    assert not lib.parent.exists()


def test_leftover_processes_are_found_by_their_token():
    token = os.urandom(8).hex()
    env = {**os.environ, sandbox.TOKEN_VARIABLE: token}
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True)
    try:
        time.sleep(0.2)
        assert sandbox.kill_by_token(token) == 1
        assert child.wait(timeout=10) == -9
        assert sandbox.kill_by_token(token) == 0
    finally:
        if child.poll() is None:
            child.kill()


def test_folders_a_kernel_needs_are_never_hidden(tmp_path):
    lib = sandbox.LibraryCopy()
    try:
        python_home = Path(sandbox._python()).parent.parent
        box = sandbox.Sandbox(lib, [tmp_path, python_home.parent, "/"], isolate=False)
        assert str(tmp_path.resolve()) in box.hide
        assert not any(python_home.resolve().is_relative_to(h) for h in box.hide)  # its parent and / are kept
        assert str(sandbox._LIBRARY) in box.hide  # the original library: the kernel imports the copy
        assert box.env()["PYTHONPATH"] == str(lib.parent) and box.env()["HOME"] == box.workdir
        assert box.wrap(["python", "-f", box.connection_file]) == ["python", "-f", box.connection_file]
        assert box.close() == 0 and not Path(box.workdir).exists()
    finally:
        lib.cleanup()


@pytest.mark.skipif(not sandbox.namespaces_available(), reason="no mount and PID namespaces here")
def test_in_namespaces_the_kernel_command_goes_through_the_init():
    lib = sandbox.LibraryCopy()
    try:
        box = sandbox.Sandbox(lib, [])
        command = box.wrap(["python", "-f", box.connection_file])
        assert command[:4] == ["setpriv", "--pdeathsig", "KILL", "--"]  # dies with the grader
        assert command[4:10] == ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child"]
        assert command[-3:] == ["python", "-f", box.connection_file] and str(sandbox._INIT) in command
        box.close()
    finally:
        lib.cleanup()


def _holding(token: str) -> int:
    """How many processes have ``TL_GRADER_TOKEN=token`` in their environment."""
    needle = f"{sandbox.TOKEN_VARIABLE}={token}".encode()
    count = 0
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            count += needle in (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
    return count


def test_nothing_in_the_sandbox_outlives_a_killed_grader(tmp_path):
    """A grader killed with SIGKILL runs no clean-up code; the sandbox's processes must die with it all the same."""
    if not sandbox.namespaces_available():
        pytest.skip("mount and PID namespaces are not available on this machine")
    token_file = tmp_path / "token"
    grader = "\n".join(
        [
            "import subprocess, sys, time",
            "from pathlib import Path",
            "from transformer_lib.classroom import sandbox",
            "box = sandbox.Sandbox(sandbox.LibraryCopy(), [])",
            "Path(box.connection_file).write_text('{}')",
            "child = \"import time; print('ready', flush=True); time.sleep(120)\"",
            "p = subprocess.Popen(box.wrap([sys.executable, '-c', child, '-f', box.connection_file]), env=box.env(),",
            "                     stdout=subprocess.PIPE)",
            "assert p.stdout.readline().strip() == b'ready'",
            f"Path({str(token_file)!r}).write_text(box.token)",
            "time.sleep(120)",
        ]
    )
    proc = subprocess.Popen([sys.executable, "-c", grader])
    try:
        for _ in range(600):
            if token_file.exists() and token_file.read_text() or proc.poll() is not None:
                break
            time.sleep(0.1)
        assert proc.poll() is None, "the grader stand-in did not start its sandboxed process"
        token = token_file.read_text()
        assert _holding(token) >= 1  # the sandboxed process is running
    finally:
        proc.kill()
        proc.wait()
    for _ in range(100):
        if _holding(token) == 0:
            break
        time.sleep(0.1)
    left = _holding(token)
    sandbox.kill_by_token(token)  # leave nothing behind, even when the check fails
    assert left == 0, "a sandboxed process outlived the grader"

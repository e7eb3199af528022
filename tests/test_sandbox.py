"""The kernels' sandbox (transformer_lib.classroom.sandbox) without a kernel: the library copy is read-only and
restored when changed, the bwrap command is an allow-list, the grader refuses without bwrap unless told, and
nothing outlives a killed grader. tests/test_attacks.py tries the sandbox from inside a kernel."""

import contextlib
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


needs_bwrap = pytest.mark.skipif(bool(sandbox.bwrap_problem()), reason=sandbox.bwrap_problem() or "bwrap works")


@needs_bwrap
def test_the_kernel_command_is_an_allow_list():
    """bwrap with every namespace, a cleared environment, and binds of the Python, the library copy and its own
    connection file only (its sockets folder is a tmpfs of its own): nothing of the repository, the working folder or
    the grader's environment, and nothing of the grader's it can write."""
    lib = sandbox.LibraryCopy()
    try:
        box = sandbox.Sandbox(lib)
        command = box.wrap([sys.executable, "-m", "ipykernel_launcher", "-f", box.connection_file])
        assert command[:4] == ["bwrap", "--die-with-parent", "--new-session", "--clearenv"]
        for flag in ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--proc"):
            assert flag in command
        sources = [command[i + 1] for i, arg in enumerate(command) if arg in ("--ro-bind", "--bind")]
        repository = Path(__file__).resolve().parents[1]
        assert not any(Path(s).resolve().is_relative_to(Path.cwd()) for s in sources), sources
        assert [s for s in sources if Path(s).resolve().is_relative_to(repository)] in ([], [sys.prefix]), sources
        assert str(lib.parent) in sources and "--bind" not in command  # read-only, every one
        assert command[command.index(box.sockets) - 1] == "--tmpfs" and box.sockets not in sources
        assert command[command.index(box.sockets) - 3 : command.index(box.sockets) - 1] == ["--size", "1048576"]
        names = {command[i + 1] for i, arg in enumerate(command) if arg == "--setenv"}
        assert names == {*sandbox.ENVIRONMENT, "PATH", "PYTHONPATH"}  # not one of the grader's variables
        assert command[command.index("--") + 1] == "prlimit"
        assert command[-3:] == ["ipykernel_launcher", "-f", box.connection_file]
        assert box.close() == 0 and not Path(box.sockets).exists()
    finally:
        lib.cleanup()


def test_without_bwrap_the_grader_refuses_and_says_why(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap is not installed (apt-get install bubblewrap)")
    lib = sandbox.LibraryCopy()
    try:
        with pytest.raises(sandbox.SandboxUnavailable, match="not installed.*--no-sandbox"):
            sandbox.Sandbox(lib)
        box = sandbox.Sandbox(lib, unsandboxed=True)  # the teacher's explicit opt-out
        assert box.wrap(["python", "-f", "k.json"])[0] == "prlimit" and box.env()[sandbox.TOKEN_VARIABLE] == box.token
        assert "LMS_API_TOKEN" not in box.env() and "PATH" in box.env()
        box.close()
    finally:
        lib.cleanup()


@pytest.mark.parametrize(
    "kw, message",
    [(dict(memory_mb=0), "memory_mb: expected an int >= 1, got 0"), (dict(processes=2.5), "processes: expected")],
)
def test_bad_limits_name_themselves(kw, message):
    with pytest.raises(ValueError, match=message):
        sandbox.Limits(**kw)


def _holding(token: str) -> int:
    """How many processes have ``token`` on their command line."""
    count = 0
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            count += token.encode() in (entry / "cmdline").read_bytes()
        except OSError:
            continue
    return count


@pytest.mark.slow
def test_nothing_in_the_sandbox_outlives_a_killed_grader(tmp_path):
    """A grader killed with SIGKILL runs no clean-up code; the sandbox's processes must die with it all the same."""
    if sandbox.bwrap_problem():
        pytest.skip(sandbox.bwrap_problem())
    token_file = tmp_path / "token"
    grader = "\n".join(
        [
            "import subprocess, sys, time",
            "from pathlib import Path",
            "from transformer_lib.classroom import sandbox",
            "box = sandbox.Sandbox(sandbox.LibraryCopy())",
            "child = \"import os, time; print('ready', flush=True); os.fork(); time.sleep(120)  # \" + box.token",
            "p = subprocess.Popen(box.wrap([sys.executable, '-c', child, '-f', box.connection_file]), env=box.env(),",
            "                     stdout=subprocess.PIPE, pass_fds=box.pass_fds)",
            "assert p.stdout.readline().strip() == b'ready'",
            f"Path({str(token_file)!r}).write_text(box.token)",
            "time.sleep(120)",
        ]
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # what a killed grader leaves behind stays in tmp_path
    proc = subprocess.Popen([sys.executable, "-c", grader], env=env)
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
    for entry in Path("/proc").glob("[0-9]*"):  # leave nothing behind, even when the check fails
        with contextlib.suppress(OSError, ValueError):
            if token.encode() in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), 9)
    assert left == 0, "a sandboxed process outlived the grader"


def test_the_cli_refuses_without_bwrap(tmp_path, monkeypatch, capsys):
    import shutil

    from transformer_lib.classroom import grade

    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap is not installed (apt-get install bubblewrap)")
    (tmp_path / "in" / "alice").mkdir(parents=True)
    alice = Path(__file__).resolve().parent / "fixtures" / "submissions" / "alice" / "03_attention.ipynb"
    shutil.copy(alice, tmp_path / "in" / "alice")
    out = tmp_path / "out" / "grades.csv"
    assert grade.main([str(tmp_path / "in"), "--out", str(out), "--no-progress"]) == 2
    assert "Cannot grade in a sandbox: bubblewrap is not installed" in capsys.readouterr().err and not out.exists()
    # what --no-sandbox records (the row's note and sandbox column, the banner) is tested once, with its kernel, by
    # tests/test_attacks.py's test_no_sandbox_says_so_at_the_start_the_end_and_in_a_column: a run without the sandbox
    # never asks bwrap_problem (folder.py and cluster.grade_task ask only before a sandboxed run)


def test_the_limit_a_cell_met_is_read_from_its_error():
    from transformer_lib.classroom.kernels import limit_of

    assert limit_of("RuntimeError: DefaultCPUAllocator: can't allocate memory: you tried to allocate 3221225472") == (
        "memory"
    )
    assert limit_of("BlockingIOError: [Errno 11] Resource temporarily unavailable") == "processes"
    assert limit_of("OSError: [Errno 27] File too large") == "file size"
    assert limit_of("OSError: [Errno 28] No space left on device") == "file size"
    assert limit_of("ValueError: bad shape") is None and limit_of(None) is None

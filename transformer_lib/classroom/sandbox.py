"""Where a submission's kernel runs: a read-only library, a private folder, and nothing left behind.

Two levels, picked by :func:`namespaces_available` (probed once per process):

- **Namespaces** (Linux, run as root, ``unshare`` and ``setpriv`` from util-linux; a container needs
  ``--cap-add SYS_ADMIN`` or ``--privileged``): the kernel starts in its own mount and PID namespaces through
  :mod:`.sandbox_init`. It sees only its own processes (``/proc/<ppid>`` is not the grader), every folder is
  read-only except its private tmpfs working folder, the submissions, the grader's output, the original library,
  the solution sources and Jupyter's runtime folder are empty, and it holds no capability, so it cannot undo any
  of it. When the kernel ends, the kernel of Linux kills every process left in its PID namespace, daemons that
  called ``setsid`` included.
- **Fallback** (anything else): the kernel runs in an empty temporary folder as its own session, with the
  read-only library copy first on its path, and it can read and write what the grader's user can. Leftover
  processes are found by a per-notebook token in their environment (``/proc/*/environ``) and killed; a process
  that clears its environment escapes this. Run the grader in a throw-away container or account.

In both, the kernel imports :class:`LibraryCopy`: ``transformer_lib`` copied once per grading run into a temporary
folder, made read-only, and checked by hash after each notebook (and copied again if anything changed).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager

__all__ = [
    "LibraryCopy",
    "Sandbox",
    "SandboxedKernelManager",
    "namespaces_available",
    "kill_by_token",
    "TOKEN_VARIABLE",
]

TOKEN_VARIABLE = "TL_GRADER_TOKEN"
_INIT = Path(__file__).resolve().with_name("sandbox_init.py")
_LIBRARY = Path(__file__).resolve().parents[1]  # the transformer_lib package folder


def _python() -> str:
    """This interpreter by a path through its environment's real folder (a venv may sit under a hidden folder)."""
    prefix = Path(sys.prefix).resolve()
    candidate = prefix / "bin" / Path(sys.executable).name
    return str(candidate) if candidate.exists() else sys.executable


def _namespace_command(workdir: str, hide: list[str], connection_file: str, kernel: list[str]) -> list[str]:
    config = json.dumps({"workdir": workdir, "hide": hide, "connection_file": connection_file})
    # --pdeathsig: if the grader itself dies (killed, out of memory), unshare gets SIGKILL, and --kill-child then
    # takes the namespace's first process and with it every process of the sandbox; nothing outlives the grader.
    return [
        "setpriv",
        "--pdeathsig",
        "KILL",
        "--",
        "unshare",
        "--mount",
        "--pid",
        "--fork",
        "--mount-proc",
        "--kill-child",
        "--",
        _python(),
        "-I",
        "-S",
        str(_INIT),
        config,
        "--",
        *kernel,
    ]


@functools.cache
def namespaces_available() -> bool:
    """Whether kernels can run in mount and PID namespaces here: the whole chain is tried once, on a probe that
    must find itself as process 1 and the folder above its working folder read-only."""
    if sys.platform != "linux" or os.geteuid() != 0 or not (shutil.which("unshare") and shutil.which("setpriv")):
        return False
    with tempfile.TemporaryDirectory(prefix="tl-probe-") as tmp:
        work, conn = Path(tmp, "work"), Path(tmp, "conn.json")
        work.mkdir()
        conn.write_text("{}")
        probe = (
            "import os, sys\ntry:\n    open(os.path.join(os.path.dirname(os.getcwd()), 'w'), 'w')\n"
            "    print('writable')\nexcept OSError:\n    print(os.getpid())"
        )
        command = _namespace_command(str(work), [], str(conn), [_python(), "-I", "-S", "-c", probe])
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=work).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return False
    return out == "1"


class LibraryCopy:
    """``transformer_lib`` copied into a temporary folder (``parent`` goes first on a kernel's ``PYTHONPATH``),
    read-only for everyone but root, and checked by hash: :meth:`verify` copies it again if a kernel changed it."""

    def __init__(self, source: Path = _LIBRARY) -> None:
        self.source = Path(source)
        self.parent = Path(tempfile.mkdtemp(prefix="tl-lib-"))
        self.copies = 0
        self._lock = threading.Lock()  # notebooks graded in parallel threads verify the same copy
        self._copy()

    @property
    def path(self) -> Path:
        """The copied package folder (``parent / "transformer_lib"``)."""
        return self.parent / self.source.name

    def _copy(self) -> None:
        if self.path.exists():
            for p in [self.path, *self.path.rglob("*")]:
                if not p.is_symlink():
                    p.chmod(p.stat().st_mode | stat.S_IWUSR)
            shutil.rmtree(self.path)
        shutil.copytree(self.source, self.path, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        for p in sorted(self.path.rglob("*"), reverse=True) + [self.path]:
            p.chmod(0o555 if p.is_dir() else 0o444)
        self.digest = self._digest()
        self.copies += 1

    def _digest(self) -> str:
        h = hashlib.sha256()
        for p in sorted(self.path.rglob("*")):
            h.update(str(p.relative_to(self.path)).encode() + b"\0")
            if p.is_file() and not p.is_symlink():
                h.update(hashlib.sha256(p.read_bytes()).digest())
            h.update(oct(p.lstat().st_mode).encode())
        return h.hexdigest()

    def verify(self) -> bool:
        """True if the copy is unchanged; otherwise it is copied afresh and False is returned."""
        with self._lock:
            if self._digest() == self.digest:
                return True
            self._copy()
            return False

    def close(self) -> None:
        """Remove the copy (``contextlib.closing`` calls this)."""
        self.cleanup()

    def cleanup(self) -> None:
        for p in [self.parent, *self.parent.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
        shutil.rmtree(self.parent, ignore_errors=True)


@functools.cache
def _connections() -> Path:
    """One folder for the connection files (the keys) of all kernels of this process; every kernel in
    namespaces gets its own copy and sees this folder empty."""
    folder = Path(tempfile.mkdtemp(prefix="tl-keys-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def kill_by_token(token: str) -> int:
    """SIGKILL every process whose environment holds ``TOKEN_VARIABLE=token``; returns how many were found."""
    needle = f"{TOKEN_VARIABLE}={token}".encode()
    found = 0
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                os.kill(int(entry.name), signal.SIGKILL)
                found += 1
        except (OSError, ValueError):
            continue  # gone already, or not ours to read
    return found


class Sandbox:
    """One notebook's kernel settings: its private folder, what it must not see, its token and its environment."""

    def __init__(self, library: LibraryCopy, hide: list[str | Path], *, isolate: bool | None = None) -> None:
        self.library = library
        self.isolate = namespaces_available() if isolate is None else isolate
        self._tmp = tempfile.TemporaryDirectory(prefix="tl-grade-")
        self.workdir = str(Path(self._tmp.name, "work"))
        os.mkdir(self.workdir, 0o700)
        self.log = str(Path(self._tmp.name, "kernel.log"))
        self._keys = tempfile.TemporaryDirectory(dir=_connections())
        self.connection_file = str(Path(self._keys.name, "kernel.json"))
        self.token = os.urandom(12).hex()
        keep = [Path(_python()).parent.parent, Path(self.workdir), library.parent]
        hide = [*hide, _LIBRARY, _LIBRARY.parent / "assignments"]  # the original library, the solution sources
        # never hide a folder that holds what the kernel needs (its Python, its working folder, the library copy)
        self.hide = sorted(
            {
                str(Path(h).resolve())
                for h in hide
                if Path(h).exists() and not any(Path(k).resolve().is_relative_to(Path(h).resolve()) for k in keep)
            }
        )

    def env(self) -> dict[str, str]:
        """The kernel's environment: the library copy first on its path, its token, its folder as home and temp."""
        return {
            **os.environ,
            "PYTHONPATH": str(self.library.parent),
            TOKEN_VARIABLE: self.token,
            "OMP_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
            "HOME": self.workdir,
            "TMPDIR": self.workdir,
            "IPYTHONDIR": os.path.join(self.workdir, ".ipython"),
            "MPLCONFIGDIR": self.workdir,
            "PYTHONDONTWRITEBYTECODE": "1",
            "JUPYTER_RUNTIME_DIR": self.workdir,
        }

    def wrap(self, kernel: list[str]) -> list[str]:
        """The command that starts ``kernel`` (its argv, with ``-f CONNECTION_FILE``) in this sandbox."""
        if not self.isolate:
            return kernel
        connection = kernel[kernel.index("-f") + 1] if "-f" in kernel else ""
        return _namespace_command(self.workdir, sorted({*self.hide, str(_connections())}), connection, kernel)

    def close(self) -> int:
        """Kill what the kernel left behind; remove the folder. Returns how many processes had to be killed."""
        killed = 0
        for _ in range(3):  # a process may fork while we look: look again until none is left
            n = kill_by_token(self.token)
            killed += n
            if not n:
                break
            time.sleep(0.05)
        self._tmp.cleanup()
        self._keys.cleanup()
        return killed


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command goes through :meth:`Sandbox.wrap`, with its connection file (the
    kernel's key) where no other kernel can read it."""

    sandbox: Any = None

    @classmethod
    def for_sandbox(cls, sandbox: Sandbox, kernel_name: str) -> SandboxedKernelManager:
        """A manager for one kernel of ``kernel_name`` that will start in ``sandbox``."""
        km = cls(kernel_name=kernel_name)
        km.sandbox = sandbox
        km.connection_file = sandbox.connection_file
        return km

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = super().format_kernel_cmd(extra_arguments)
        return self.sandbox.wrap(command) if self.sandbox is not None else command

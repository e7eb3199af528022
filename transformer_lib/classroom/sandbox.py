"""Where a submission's kernel runs: a world built by bubblewrap from what the kernel needs, and nothing else.

Each kernel starts through ``bwrap`` (Debian's ``bubblewrap``, the sandbox of Flatpak) in new PID, mount, IPC, UTS
and network namespaces (and a user namespace when the grader is not root). Its world is an allow-list:

- read-only: ``/usr`` (and the ``/bin``, ``/lib`` links), ``/etc/ld.so.cache``, the kernel's Python (a venv is
  mounted as ``/opt/python``, from a hard-linked copy in a temporary folder where the file system allows, so that
  not even ``/proc/self/mountinfo`` names the folder it lives in) and :class:`LibraryCopy` as ``/opt/library``;
- its own ``/proc`` and a minimal ``/dev``; no ``/sys``;
- writable: a private tmpfs as its home and working folder (``/home/student``), another on ``/tmp``, and the
  folder of its own connection file and sockets (Jupyter's ``ipc`` transport: the network namespace has no
  route to the grader).

Nothing else exists in it: not the teacher's folders, the submissions, the roster, the solutions or other
kernels. Its environment is cleared down to :data:`ENVIRONMENT`'s names; it inherits no descriptor of the
grader's but a pipe for its own stdout and stderr (of which the first 64 kB are kept); ``--die-with-parent`` ends it
with the grader. Run as root, the grader gives each kernel a user id of its own with no capability (``setpriv``),
so the process limit counts that kernel's processes only. :class:`Limits` (``prlimit``) bound its memory, processes,
file size and CPU time; the grader bounds what it prints.

Without a working ``bwrap`` the grader refuses (:class:`SandboxUnavailable`); ``unsandboxed=True`` (``tl-grade
--no-sandbox``) runs the kernel directly, with the same cleared environment and limits, in an empty temporary
folder, where it can read and write what the grader's user can; leftover processes are then found by a token in
their environment, and every row graded so says so in its ``note``.
"""

from __future__ import annotations

import atexit
import functools
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager

from .stubs import LibraryCopy  # what a kernel imports (re-exported: it is part of a sandbox)

__all__ = [
    "ENVIRONMENT",
    "Limits",
    "LibraryCopy",
    "Sandbox",
    "SandboxUnavailable",
    "SandboxedKernelManager",
    "bwrap_problem",
    "require_bwrap",
    "kill_by_token",
    "TOKEN_VARIABLE",
    "UNSANDBOXED_NOTE",
]

TOKEN_VARIABLE = "TL_GRADER_TOKEN"
_LIBRARY = Path(__file__).resolve().parents[1]  # the transformer_lib package folder
HOME, PYTHON, LIBRARY = "/home/student", "/opt/python", "/opt/library"  # inside the sandbox
ENVIRONMENT = {  # every variable a kernel gets (besides PYTHONPATH and PATH); nothing of the grader's
    "HOME": HOME,
    "TMPDIR": "/tmp",
    "USER": "student",
    "LOGNAME": "student",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": f"{HOME}/.matplotlib",
    "IPYTHONDIR": f"{HOME}/.ipython",
    "JUPYTER_RUNTIME_DIR": f"{HOME}/.jupyter",
    "PYTHONDONTWRITEBYTECODE": "1",
}
UNSANDBOXED_NOTE = (
    "graded without the sandbox (--no-sandbox): its kernel could read and write what the grader's user can"
)
_LOG_BYTES = 64 * 1024  # of a kernel's own stdout and stderr, kept for the grader's messages


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot build a sandbox here."""


@dataclass(frozen=True)
class Limits:
    """What one kernel may use (``prlimit``; the grader counts the output). The defaults are far above what a correct
    notebook of the assignments uses (measured on their solutions: at most 1.25 GB of address space of which 0.3 GB
    resident and 0.25 GB data, 11 threads, 1.7 s of CPU, 5 kB of output); see
    :func:`~transformer_lib.classroom.grade.grade_notebook` for what happens at a limit."""

    memory_mb: int = 2048  # heap and anonymous memory (RLIMIT_DATA): a 3 GB tensor is refused
    processes: int = 32  # processes and threads of the kernel's own user (RLIMIT_NPROC)
    file_mb: int = 256  # the largest file it may write (RLIMIT_FSIZE); each of its tmpfs folders is as large
    cpu_seconds: int = 600  # CPU time of each of its processes (RLIMIT_CPU); the kernel is killed past it
    output_mb: int = 32  # what the notebook's cells print, all together, as the grader receives it

    def __post_init__(self) -> None:
        for name in ("memory_mb", "processes", "file_mb", "cpu_seconds", "output_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected an int >= 1, got {value!r}")

    def prlimit(self) -> list[str]:
        """The ``prlimit`` command line that sets the limits for the command that follows it."""
        mb = 1024 * 1024
        return [
            "prlimit",
            f"--data={self.memory_mb * mb}",
            f"--nproc={self.processes}",
            f"--fsize={self.file_mb * mb}",
            f"--cpu={self.cpu_seconds}:{self.cpu_seconds + 5}",  # SIGXCPU at the first, SIGKILL 5 s later
            "--",
        ]

    def describe(self, which: str) -> str:
        """``which`` limit in words, e.g. ``"processes (32 processes and threads)"``."""
        return {
            "memory": f"memory ({self.memory_mb} MB of heap and anonymous memory)",
            "processes": f"processes ({self.processes} processes and threads)",
            "file size": f"file size ({self.file_mb} MB per file)",
            "cpu": f"CPU time ({self.cpu_seconds} s)",
            "output": f"output ({self.output_mb} MB printed)",
        }[which]


# --------------------------------------------------------------------------------------------------------------
# What the world is made of
# --------------------------------------------------------------------------------------------------------------
def _python_prefix(executable: str) -> Path:
    """The environment an interpreter belongs to: its venv folder, or its installation prefix."""
    path = Path(executable)
    if not path.is_absolute():
        path = Path(shutil.which(executable) or executable)
    return path.parent.parent


@functools.cache
def _neutral_view(prefix: Path) -> Path:
    """A hard-linked copy of ``prefix`` in a temporary folder, so that the mount that shows it in a sandbox does not
    name the folder it lives in (a repository, the teacher's working folder); ``prefix`` itself where the file
    system does not allow it (another device, links refused)."""
    tmp = Path(tempfile.gettempdir())
    if os.stat(prefix).st_dev != os.stat(tmp).st_dev:  # a venv under /tmp too: its folder names the repository
        return prefix
    view = Path(tempfile.mkdtemp(prefix="tl-python-"))
    view.chmod(0o755)
    done = subprocess.run(["cp", "-al", f"{prefix}/.", str(view)], capture_output=True)
    if done.returncode != 0:
        shutil.rmtree(view, ignore_errors=True)
        return prefix
    atexit.register(shutil.rmtree, view, True)
    return view


def _python_binds(executable: str) -> tuple[list[tuple[str, ...]], str]:
    """bwrap arguments that show the interpreter ``executable`` and its environment, and its path inside."""
    prefix = _python_prefix(executable)
    config = prefix / "pyvenv.cfg"
    if not config.is_file():  # an installation: where it is
        return [("--ro-bind", str(prefix), str(prefix))], executable
    home = next(
        (
            line.split("=", 1)[1].strip()
            for line in config.read_text().splitlines()
            if line.split("=")[0].strip() == "home"
        ),
        "",
    )
    binds: list[tuple[str, ...]] = [("--ro-bind", str(_neutral_view(prefix)), PYTHON)]
    base = Path(home).resolve().parent if home else None
    if base is not None and base.is_dir() and not base.is_relative_to("/usr"):
        binds += [("--ro-bind", str(base), str(base))]  # the base interpreter a venv's links point to
    return binds, f"{PYTHON}/bin/{Path(executable).name}"


_SYSTEM = ("/usr", "/etc/ld.so.cache", "/etc/localtime", "/etc/ssl/certs")


def _system_binds() -> list[tuple[str, ...]]:
    binds: list[tuple[str, ...]] = []
    for name in ("bin", "lib", "lib64", "sbin"):
        path = Path("/", name)
        if path.is_symlink():
            binds.append(("--symlink", os.readlink(path), str(path)))
        elif path.is_dir():
            binds.append(("--ro-bind", str(path), str(path)))
    return binds + [("--ro-bind", path, path) for path in _SYSTEM if os.path.exists(path)]


# --------------------------------------------------------------------------------------------------------------
# Is bubblewrap here, and does it work?
# --------------------------------------------------------------------------------------------------------------
def _root() -> bool:
    return sys.platform == "linux" and os.geteuid() == 0


@functools.cache
def bwrap_problem() -> str:
    """Why kernels cannot run in bubblewrap here ("" when they can): tried once, on a probe that must find itself
    process 1's child with no ``/sys`` and no network but loopback."""
    if sys.platform != "linux":
        return f"bubblewrap needs Linux (this is {sys.platform})"
    if not shutil.which("bwrap"):
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if not shutil.which("prlimit") or _root() and not shutil.which("setpriv"):
        return "prlimit and setpriv (util-linux) are needed"
    probe = "import os, socket; print(os.getpid(), os.path.exists('/sys'), len(socket.if_nameindex()))"
    with tempfile.TemporaryDirectory(prefix="tl-probe-") as tmp:
        command = _bwrap_command(Limits(), tmp, Path(tmp), _fresh_uid(), [sys.executable, "-I", "-S", "-c", probe])
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.SubprocessError) as e:
            return f"bwrap could not run ({type(e).__name__}: {e})"
    if done.stdout.split() != ["2", "False", "1"]:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"bwrap cannot build a sandbox here ({said})"
    return ""


def require_bwrap() -> None:
    """Raise :class:`SandboxUnavailable`, saying why and what to do, if kernels cannot run in bubblewrap here."""
    if bwrap_problem():
        raise SandboxUnavailable(
            f"Cannot grade in a sandbox: {bwrap_problem()}. Install bubblewrap, or grade without a sandbox "
            "(--no-sandbox; only on a machine and account that hold nothing a student must not read)."
        )


def _fresh_uid() -> int:
    """A user id of its own for one kernel (only used when the grader is root)."""
    return 200_000 + secrets.randbelow(1_000_000_000)


def _bwrap_command(limits: Limits, sockets: str, library: Path, uid: int, kernel: list[str]) -> list[str]:
    """bwrap's command line for ``kernel`` (an argv whose interpreter is a Python): see the module's docstring."""
    binds, python = _python_binds(kernel[0])
    kernel = [python, *kernel[1:]]
    environment = {**ENVIRONMENT, "PATH": f"{PYTHON}/bin:/usr/bin:/bin", "PYTHONPATH": LIBRARY}
    command = ["bwrap", "--die-with-parent", "--new-session", "--clearenv"]
    for name, value in sorted(environment.items()):
        command += ["--setenv", name, value]
    command += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]
    command += ["--hostname", "sandbox"]
    command += ["--unshare-user"] if not _root() else ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    size = str(limits.file_mb * 1024 * 1024)
    mounts = [*_system_binds(), *binds, ("--ro-bind", str(library), LIBRARY), ("--proc", "/proc"), ("--dev", "/dev")]
    mounts += [
        ("--perms", "1777", "--size", size, "--tmpfs", "/tmp"),
        ("--perms", "1777", "--size", size, "--tmpfs", HOME),
    ]
    mounts += [("--bind", sockets, sockets)]
    made = {"/", "/tmp", HOME}
    for mount in mounts:
        if mount[0] in ("--ro-bind", "--bind"):  # bwrap would make their parents 0700, closed to the kernel's user
            for folder in reversed([str(p) for p in Path(mount[-1]).parents if str(p) not in made]):
                command += ["--perms", "0755", "--dir", folder]
                made.add(folder)
        command += mount
    command += ["--chdir", HOME, "--"]
    command += limits.prlimit()
    if _root():  # a user of its own and no capability: the process limit counts this kernel only
        command += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--bounding-set=-all"]
        command += ["--inh-caps=-all", "--no-new-privs", "--"]
    return command + kernel


# --------------------------------------------------------------------------------------------------------------
# One kernel's sandbox
# --------------------------------------------------------------------------------------------------------------
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
    """One kernel's sandbox: its sockets folder (with its connection file), its limits, and the pipe its own output
    goes to. ``unsandboxed`` runs the kernel without bubblewrap (see the module's docstring)."""

    def __init__(self, library: LibraryCopy, limits: Limits | None = None, *, unsandboxed: bool = False) -> None:
        if not unsandboxed:
            require_bwrap()
        self.library = library
        self.limits = limits or Limits()
        self.unsandboxed = unsandboxed
        self.uid = _fresh_uid()
        self._tmp = tempfile.TemporaryDirectory(prefix="tl-kernel-")
        self.sockets = str(Path(self._tmp.name, "sockets"))  # the only grader folder a kernel sees
        os.mkdir(self.sockets, 0o700)
        if not unsandboxed and _root():
            os.chown(self.sockets, self.uid, self.uid)
        self.workdir = self.sockets if not unsandboxed else str(Path(self._tmp.name, "work"))
        if unsandboxed:
            os.mkdir(self.workdir, 0o700)
        self.connection_file = str(Path(self.sockets, "kernel.json"))
        self.token = os.urandom(12).hex()
        self._read, self._write = os.pipe()
        self._kept = bytearray()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    @property
    def output_fd(self) -> int:
        """The descriptor a kernel's stdout and stderr go to (a pipe; the grader keeps the first 64 kB)."""
        return self._write

    def _drain(self) -> None:
        while chunk := os.read(self._read, 65536):
            if len(self._kept) < _LOG_BYTES:
                self._kept += chunk[: _LOG_BYTES - len(self._kept)]

    def said(self) -> str:
        """What the kernel (or bubblewrap) wrote to its stdout and stderr, the first 64 kB."""
        return self._kept.decode(errors="replace")

    def env(self) -> dict[str, str]:
        """The environment the kernel's command starts with (bubblewrap clears it again inside)."""
        if not self.unsandboxed:
            return {"PATH": "/usr/bin:/bin"}
        return {
            **ENVIRONMENT,
            "HOME": self.workdir,
            "TMPDIR": self.workdir,
            "MPLCONFIGDIR": self.workdir,
            "IPYTHONDIR": os.path.join(self.workdir, ".ipython"),
            "JUPYTER_RUNTIME_DIR": self.workdir,
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "PYTHONPATH": str(self.library.parent),
            TOKEN_VARIABLE: self.token,
        }

    def wrap(self, kernel: list[str]) -> list[str]:
        """The command that starts ``kernel`` (its argv) in this sandbox."""
        if self.unsandboxed:
            return self.limits.prlimit() + kernel
        if _root() and os.path.exists(self.connection_file):
            os.chown(self.connection_file, self.uid, self.uid)
        return _bwrap_command(self.limits, self.sockets, self.library.parent, self.uid, kernel)

    def close(self) -> int:
        """Kill what an unsandboxed kernel left behind (bubblewrap's PID namespace ends with its kernel); remove the
        folders. Returns how many processes had to be killed."""
        killed = 0
        for _ in range(3 if self.unsandboxed else 0):  # a process may fork while we look: look again
            n = kill_by_token(self.token)
            killed += n
            if not n:
                break
            time.sleep(0.05)
        os.close(self._write)
        self._reader.join(timeout=5)
        os.close(self._read)
        self._tmp.cleanup()
        return killed


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command goes through :meth:`Sandbox.wrap`, talking to its kernel through
    Unix sockets in the sandbox's sockets folder (the kernel has no network)."""

    sandbox: Any = None

    @classmethod
    def for_sandbox(cls, sandbox: Sandbox, kernel_name: str) -> SandboxedKernelManager:
        """A manager for one kernel of ``kernel_name`` that will start in ``sandbox``."""
        km = cls(kernel_name=kernel_name, transport="ipc", ip=str(Path(sandbox.sockets, "kernel")))
        km.sandbox = sandbox
        km.connection_file = sandbox.connection_file
        if km.kernel_spec is not None and not sandbox.unsandboxed:  # a signal would reach bwrap, not the kernel:
            km.kernel_spec.interrupt_mode = "message"  # the kernel interrupts itself when asked on its control socket
        return km

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = super().format_kernel_cmd(extra_arguments)
        return self.sandbox.wrap(command) if self.sandbox is not None else command

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
import json
import os
import secrets
import select
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
    "NO_SANDBOX_BANNER",
    "ADDRESS_SLACK_MB",
    "memory_accounting",
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
NO_SANDBOX_BANNER = "\n".join(
    [
        "=" * 100,
        "GRADED WITHOUT THE SANDBOX (--no-sandbox): every kernel could read and write what this user can (other",
        "submissions, the solutions, your files) and leave processes running. Grade in bubblewrap for real use.",
        "=" * 100,
    ]
)
ADDRESS_SLACK_MB = 2048  # address space a kernel may map on top of Limits.memory_mb
SOCKETS_BYTES = 1024 * 1024  # the kernel's sockets folder: a tmpfs of its own (the sockets themselves take no room)


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot build a sandbox here."""


@dataclass(frozen=True)
class Limits:
    """What one kernel may use (``prlimit``; the grader counts the output). The defaults are far above what a correct
    notebook of the assignments uses (measured on their solutions: at most 1.25 GB of address space of which 0.3 GB
    resident and 0.25 GB data, 11 threads, 1.7 s of CPU, 5 kB of output); see
    :func:`~transformer_lib.classroom.grade.grade_notebook` for what happens at a limit."""

    memory_mb: int = 2048  # heap and private memory (RLIMIT_DATA): a 3 GB tensor is refused; see address_mb
    processes: int = 32  # processes and threads of the kernel's own user (RLIMIT_NPROC)
    file_mb: int = 256  # the largest file it may write (RLIMIT_FSIZE); each of its tmpfs folders is as large
    cpu_seconds: int = 600  # CPU time of each of its processes (RLIMIT_CPU); the kernel is killed past it
    output_mb: int = 32  # what the notebook's cells print, all together, as the grader receives it

    def __post_init__(self) -> None:
        for name in ("memory_mb", "processes", "file_mb", "cpu_seconds", "output_mb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}: expected an int >= 1, got {value!r}")

    @property
    def address_mb(self) -> int:
        """The address space a kernel's process may map (RLIMIT_AS): ``memory_mb`` plus 2 GB for the libraries'
        own mappings (PyTorch maps 1.25 GB). It is what bounds shared memory (``mmap(-1, n)``, which RLIMIT_DATA
        does not count) where the machine gives the grader no cgroup of its own (:func:`memory_accounting`)."""
        return self.memory_mb + ADDRESS_SLACK_MB

    def prlimit(self) -> list[str]:
        """The ``prlimit`` command line that sets the limits for the command that follows it."""
        mb = 1024 * 1024
        return [
            "prlimit",
            f"--data={self.memory_mb * mb}",
            f"--as={self.address_mb * mb}",
            f"--nproc={self.processes}",
            f"--fsize={self.file_mb * mb}",
            f"--cpu={self.cpu_seconds}:{self.cpu_seconds + 5}",  # SIGXCPU at the first, SIGKILL 5 s later
            "--",
        ]

    def describe(self, which: str) -> str:
        """``which`` limit in words, e.g. ``"processes (32 processes and threads)"``."""
        return {
            "memory": f"memory ({self.memory_mb} MB of heap and private memory, {self.address_mb} MB mapped)",
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
        os.chmod(tmp, 0o755)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
        except (OSError, subprocess.SubprocessError) as e:
            return f"bwrap could not run ({type(e).__name__}: {e})"
    if done.stdout.split() != ["2", "False", "1"]:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return f"bwrap cannot build a sandbox here ({said})"
    return ""


def memory_accounting() -> str:
    """What bounds a kernel's memory here, in a sentence for the start of a run. The grader takes no cgroup (a
    cgroup v2 ``memory.max`` would count every page, shared memory and tmpfs included, but needs a delegated
    subtree: ``systemd-run --user --scope``): its limits are per process."""
    limits = Limits()
    return (
        "Memory: no cgroup is used, so each kernel is bounded per process: heap and private memory (--memory-mb, "
        f"default {limits.memory_mb} MB), address space, which counts shared memory (--memory-mb + "
        f"{ADDRESS_SLACK_MB} MB), and each of its tmpfs folders (/tmp, home, /dev/shm: --file-mb, default "
        f"{limits.file_mb} MB; its sockets folder: {SOCKETS_BYTES // 1024 // 1024} MB)."
    )


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


def _bwrap_command(
    limits: Limits, folder: str, library: Path, uid: int, kernel: list[str], info_fd: int | None = None
) -> list[str]:
    """bwrap's command line for ``kernel`` (an argv whose interpreter is a Python): see the module's docstring.
    ``folder`` is the kernel's own: its ``kernel.json`` (the connection file, read-only) and ``sockets`` (a tmpfs of
    the sandbox's) show at the same paths inside; ``info_fd`` receives bwrap's JSON (``child-pid``)."""
    binds, python = _python_binds(kernel[0])
    kernel = [python, *kernel[1:]]
    environment = {**ENVIRONMENT, "PATH": f"{PYTHON}/bin:/usr/bin:/bin", "PYTHONPATH": LIBRARY}
    command = ["bwrap", "--die-with-parent", "--new-session", "--clearenv"]
    command += ["--info-fd", str(info_fd)] if info_fd is not None else []
    for name, value in sorted(environment.items()):
        command += ["--setenv", name, value]
    command += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]
    command += ["--hostname", "sandbox"]
    command += ["--unshare-user"] if not _root() else ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    size = str(limits.file_mb * 1024 * 1024)
    mounts = [*_system_binds(), *binds, ("--ro-bind", str(library), LIBRARY), ("--proc", "/proc"), ("--dev", "/dev")]
    mounts += [
        ("--perms", "1777", "--size", size, "--tmpfs", "/dev/shm"),
        ("--perms", "1777", "--size", size, "--tmpfs", "/tmp"),
        ("--perms", "1777", "--size", size, "--tmpfs", HOME),
    ]
    connection = Path(folder, "kernel.json")
    mounts += [("--ro-bind", str(connection), str(connection))] if connection.exists() else []
    mounts += [("--perms", "1777", "--size", str(SOCKETS_BYTES), "--tmpfs", str(Path(folder, "sockets")))]
    made = {"/", "/tmp", HOME, "/dev"}
    for mount in mounts:
        if mount[0] in ("--ro-bind", "--bind") or mount[-2] == "--tmpfs":  # bwrap would make their parents 0700
            for folder in reversed([str(p) for p in Path(mount[-1]).parents if str(p) not in made]):
                command += ["--perms", "0755", "--dir", folder]
                made.add(folder)
        command += mount
    command += ["--remount-ro", "/dev", "--remount-ro", "/"]  # writable: its tmpfs folders only, each of a size
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
    """One kernel's sandbox: its folder (its connection file, and the link to its sockets), its limits, and the pipe
    its own output goes to. ``unsandboxed`` runs the kernel without bubblewrap (see the module's docstring)."""

    def __init__(self, library: LibraryCopy, limits: Limits | None = None, *, unsandboxed: bool = False) -> None:
        if not unsandboxed:
            require_bwrap()
        self.library = library
        self.limits = limits or Limits()
        self.unsandboxed = unsandboxed
        self.uid = _fresh_uid()
        self._tmp = tempfile.TemporaryDirectory(prefix="tl-kernel-")
        self.folder = self._tmp.name
        # the kernel's sockets: a tmpfs of its own sandbox, which the grader reaches through a link made once the
        # sandbox exists (link_sockets); unsandboxed, a folder of the grader's
        self.sockets = str(Path(self.folder, "sockets"))
        self.workdir = self.folder if not unsandboxed else str(Path(self.folder, "work"))
        if unsandboxed:
            os.mkdir(self.sockets, 0o700)
            os.mkdir(self.workdir, 0o700)
        self.connection_file = str(Path(self.folder, "kernel.json"))
        self.token = os.urandom(12).hex()
        self._info_read, self.info_fd = os.pipe()  # bwrap writes its child's pid here (passed to bwrap alone)
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
        return _bwrap_command(self.limits, self.folder, self.library.parent, self.uid, kernel, self.info_fd)

    def link_sockets(self, timeout: float = 60) -> None:
        """Once bubblewrap has started: link ``sockets`` to the sandbox's own sockets folder (through its first
        process's ``/proc/<pid>/root``), so that the grader connects to the sockets the kernel binds there."""
        if self.unsandboxed or self.info_fd < 0:
            return
        os.close(self.info_fd)  # bwrap has its own copy: the pipe ends when bwrap writes, or fails
        self.info_fd = -1
        said, end = b"", time.monotonic() + timeout
        while b"}" not in said and (left := end - time.monotonic()) > 0:
            if not select.select([self._info_read], [], [], left)[0] or not (chunk := os.read(self._info_read, 4096)):
                break
            said += chunk
        try:
            pid = int(json.loads(said)["child-pid"])
        except (ValueError, KeyError, TypeError):
            return  # bwrap failed: the kernel never answers, and the run says what bwrap said
        os.symlink(f"/proc/{pid}/root{self.sockets}", self.sockets)

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
        for fd in (self._write, self._info_read, self.info_fd):
            if fd >= 0:
                os.close(fd)
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

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        if self.sandbox is not None and not self.sandbox.unsandboxed:
            kw["pass_fds"] = (self.sandbox.info_fd,)  # to bwrap alone (it makes Popen close every other descriptor)
        await super()._async_launch_kernel(kernel_cmd, **kw)
        if self.sandbox is not None:
            self.sandbox.link_sockets()

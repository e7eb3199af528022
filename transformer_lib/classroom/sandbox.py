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

import functools
import json
import os
import select
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

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager

from .bwrap import ENVIRONMENT, bwrap_command, fresh_uid, is_root
from .limits import ADDRESS_SLACK_MB, Limits, memory_accounting, seccomp_filter, seccomp_pipe
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
UNSANDBOXED_NOTE = (
    "graded without the sandbox (--no-sandbox): its kernel could read and write what the grader's user can"
)
_LOG_BYTES = 64 * 1024  # of a kernel's own stdout and stderr, kept for the grader's messages
# the longest path of a Unix socket (sun_path: 108 bytes with its NUL); a kernel binds
# <folder>/sockets/kernel-<port>, and ZeroMQ refuses a longer one ("File name too long")
_SOCKET_PATH_BYTES = 107
_SOCKET_TAIL = "/tl-kernel-xxxxxxxx/sockets/kernel-65535"  # what a kernel's folder adds to its temporary folder
NO_SANDBOX_BANNER = "\n".join(
    [
        "=" * 100,
        "GRADED WITHOUT THE SANDBOX (--no-sandbox): every kernel could read and write what this user can (other",
        "submissions, the solutions, your files) and leave processes running. Grade in bubblewrap for real use.",
        "=" * 100,
    ]
)


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot build a sandbox here."""


# --------------------------------------------------------------------------------------------------------------
# Is bubblewrap here, and does it work?
# --------------------------------------------------------------------------------------------------------------
@functools.cache
def bwrap_problem() -> str:
    """Why kernels cannot run in bubblewrap here ("" when they can): tried once, on a probe that must find itself
    process 1's child with no ``/sys`` and no network but loopback."""
    if sys.platform != "linux":
        return f"bubblewrap needs Linux (this is {sys.platform})"
    if not shutil.which("bwrap"):
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    if not shutil.which("prlimit") or is_root() and not shutil.which("setpriv"):
        return "prlimit and setpriv (util-linux) are needed"
    probe = "import os, socket; print(os.getpid(), os.path.exists('/sys'), len(socket.if_nameindex()))"
    with tempfile.TemporaryDirectory(prefix="tl-probe-") as tmp:
        command = bwrap_command(Limits(), tmp, Path(tmp), fresh_uid(), [sys.executable, "-I", "-S", "-c", probe])
        os.chmod(tmp, 0o755)
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


# --------------------------------------------------------------------------------------------------------------
# One kernel's sandbox
# --------------------------------------------------------------------------------------------------------------
def _open_no_links(root: str, names: list[str]) -> int:
    """An ``O_PATH`` descriptor of ``root/names[0]/...``, each name opened without following a link (a link
    anywhere on the way raises OSError: ELOOP or ENOTDIR)."""
    fd = os.open(root, os.O_PATH | os.O_DIRECTORY)
    for i, name in enumerate(names):
        try:
            flags = os.O_PATH | os.O_NOFOLLOW | (os.O_DIRECTORY if i < len(names) - 1 else 0)
            inner = os.open(name, flags, dir_fd=fd)
        finally:
            os.close(fd)
        fd = inner
    return fd


def kernel_root() -> str:
    """Where a kernel's folder goes: the temporary folder, or ``/tmp`` where that is too long a path for the
    kernel's Unix sockets (a deep ``TMPDIR``: pytest's under pytest-xdist reaches 112 bytes). ValueError if neither
    fits."""
    for root in (tempfile.gettempdir(), "/tmp"):
        if len(os.fsencode(root + _SOCKET_TAIL)) <= _SOCKET_PATH_BYTES and os.access(root, os.W_OK | os.X_OK):
            return root
    raise ValueError(
        f"TMPDIR: expected a writable folder whose path leaves room for a kernel's Unix sockets (at most "
        f"{_SOCKET_PATH_BYTES - len(_SOCKET_TAIL)} bytes), got {tempfile.gettempdir()!r}, and /tmp is not writable"
    )


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
        self.uid = fresh_uid()
        self._tmp = tempfile.TemporaryDirectory(prefix="tl-kernel-", dir=kernel_root())
        self.folder = self._tmp.name
        # the kernel's sockets: a tmpfs of its own sandbox, which the grader reaches through /proc/<pid>/root
        # (socket_url); unsandboxed, a folder of the grader's
        self.sockets = str(Path(self.folder, "sockets"))
        self.workdir = self.folder if not unsandboxed else str(Path(self.folder, "work"))
        if unsandboxed:
            os.mkdir(self.sockets, 0o700)
            os.mkdir(self.workdir, 0o700)
        self.connection_file = str(Path(self.folder, "kernel.json"))
        self.token = os.urandom(12).hex()
        self._info_read, self.info_fd = os.pipe()  # bwrap writes its child's pid here (passed to bwrap alone)
        self._pid: int | None = None  # the sandbox's first process (link_sockets)
        self.seccomp_fd = seccomp_pipe() if not unsandboxed and seccomp_filter() else -1  # read by bwrap alone
        self._socket_fds: dict[str, int] = {}  # the kernel's sockets, opened without following a link (socket_url)
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
        if is_root() and os.path.exists(self.connection_file):
            os.chown(self.connection_file, self.uid, self.uid)
        seccomp = self.seccomp_fd if self.seccomp_fd >= 0 else None
        return bwrap_command(self.limits, self.folder, self.library.parent, self.uid, kernel, self.info_fd, seccomp)

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors bubblewrap must get (``Popen(pass_fds=...)``): its info pipe and its seccomp filter."""
        return tuple(fd for fd in (self.info_fd, self.seccomp_fd) if fd >= 0)

    def link_sockets(self, timeout: float = 60) -> None:
        """Once bubblewrap has started: learn the pid of the sandbox's first process, through whose
        ``/proc/<pid>/root`` the grader reaches the sockets the kernel binds (:meth:`socket_url`)."""
        if self.unsandboxed or self.info_fd < 0:
            return
        for fd in (self.info_fd, self.seccomp_fd):  # bwrap has its own copies: the info pipe ends when bwrap writes
            if fd >= 0:
                os.close(fd)
        self.info_fd = self.seccomp_fd = -1
        said, end = b"", time.monotonic() + timeout
        while b"}" not in said and (left := end - time.monotonic()) > 0:
            if not select.select([self._info_read], [], [], left)[0] or not (chunk := os.read(self._info_read, 4096)):
                break
            said += chunk
        try:
            self._pid = int(json.loads(said)["child-pid"])
        except (ValueError, KeyError, TypeError):
            return  # bwrap failed: the kernel never answers, and the run says what bwrap said

    def socket_url(self, name: str, timeout: float = 120) -> str:
        """The ZeroMQ address of the kernel's socket ``name`` (``kernel-<port>`` in its sockets folder) for the
        grader. The kernel can rename, replace or link anything in its folders, so the grader never follows a path
        there: it walks ``/proc/<pid>/root`` one name at a time without following a link (``O_PATH | O_NOFOLLOW``),
        keeps the socket's descriptor open and connects through ``/proc/self/fd/N``, which names that very socket
        whatever the kernel does to its path later (ZeroMQ reconnects to it, never to a link the kernel made).
        Waits up to ``timeout`` seconds for the kernel to bind it; OSError if it is anything but a socket."""
        if self.unsandboxed or self._pid is None:
            return f"ipc://{Path(self.sockets, name)}"
        if name in self._socket_fds:
            return f"ipc:///proc/self/fd/{self._socket_fds[name]}"
        end = time.monotonic() + timeout
        while True:
            try:
                fd = _open_no_links(f"/proc/{self._pid}/root", [*Path(self.sockets).parts[1:], name])
                break
            except FileNotFoundError:
                if time.monotonic() > end or not os.path.exists(f"/proc/{self._pid}"):
                    raise
                time.sleep(0.02)
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"the kernel's socket {name} is not a socket (a link?): the grader does not follow it")
        self._socket_fds[name] = fd
        return f"ipc:///proc/self/fd/{fd}"

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
        for fd in (self._write, self._info_read, self.info_fd, self.seccomp_fd, *self._socket_fds.values()):
            if fd >= 0:
                os.close(fd)
        self._reader.join(timeout=5)
        os.close(self._read)
        self._tmp.cleanup()
        return killed


class SandboxedKernelClient(AsyncKernelClient):
    """A kernel client that connects to its kernel's sockets through :meth:`Sandbox.socket_url`."""

    sandbox: Any = None

    def _make_url(self, channel: str) -> str:
        if self.sandbox is None or self.transport != "ipc":
            return super()._make_url(channel)
        return str(self.sandbox.socket_url(f"kernel-{getattr(self, f'{channel}_port')}"))


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command goes through :meth:`Sandbox.wrap`, talking to its kernel through
    Unix sockets in the sandbox's sockets folder (the kernel has no network), reached without following a link
    (:meth:`Sandbox.socket_url`)."""

    sandbox: Any = None

    @classmethod
    def for_sandbox(cls, sandbox: Sandbox, kernel_name: str) -> SandboxedKernelManager:
        """A manager for one kernel of ``kernel_name`` that will start in ``sandbox``."""
        context = zmq.asyncio.Context()  # every socket of the grader's refuses a part past the limit, unread
        context.setsockopt(zmq.MAXMSGSIZE, sandbox.limits.message_mb * 1024 * 1024)
        km = cls(kernel_name=kernel_name, transport="ipc", ip=str(Path(sandbox.sockets, "kernel")), context=context)
        km.sandbox = sandbox
        km.client_factory = SandboxedKernelClient
        km.connection_file = sandbox.connection_file
        if km.kernel_spec is not None and not sandbox.unsandboxed:  # a signal would reach bwrap, not the kernel:
            km.kernel_spec.interrupt_mode = "message"  # the kernel interrupts itself when asked on its control socket
        return km

    def _make_url(self, channel: str) -> str:
        if self.sandbox is None or self.transport != "ipc":
            return super()._make_url(channel)
        return self.sandbox.socket_url(f"kernel-{getattr(self, f'{channel}_port')}")

    def client(self, **kwargs: Any) -> Any:
        client = super().client(context=self.context, **kwargs)
        client.sandbox = self.sandbox  # type: ignore[attr-defined]  # (SandboxedKernelClient: reaches the sockets the same way)
        return client

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        command = super().format_kernel_cmd(extra_arguments)
        return self.sandbox.wrap(command) if self.sandbox is not None else command

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
        if self.sandbox is not None and not self.sandbox.unsandboxed:
            kw["pass_fds"] = self.sandbox.pass_fds  # to bwrap alone (Popen closes every other descriptor)
        await super()._async_launch_kernel(kernel_cmd, **kw)
        if self.sandbox is not None:
            self.sandbox.link_sockets()

"""What one kernel may use, and what bounds its memory here (:class:`Limits`, :func:`memory_accounting`).

The limits are set with ``prlimit`` on the kernel's processes (heap, address space, processes, file size, CPU time)
and by the size of each tmpfs folder its sandbox mounts (:mod:`.bwrap`); the grader counts what it prints
(:mod:`.kernels`). Shared memory that no per-process limit counts (a ``memfd_create`` file or a SysV segment, filled
and never mapped, or mapped and let go) cannot be made at all: a seccomp filter (:func:`seccomp_filter`, compiled
by libseccomp, loaded by bubblewrap) refuses the system calls that create it. A cell that meets a limit fails as if
it raised, and the row's note names the limit.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import tempfile
from dataclasses import dataclass

__all__ = ["ADDRESS_SLACK_MB", "SOCKETS_BYTES", "DENIED_CALLS", "Limits", "memory_accounting", "seccomp_filter"]

ADDRESS_SLACK_MB = 2048  # address space a kernel may map on top of Limits.memory_mb
SOCKETS_BYTES = 1024 * 1024  # the kernel's sockets folder: a tmpfs of its own (the sockets themselves take no room)


@dataclass(frozen=True)
class Limits:
    """What one kernel may use (``prlimit``; the grader counts the output). The defaults are far above what a correct
    notebook of the assignments uses (measured on their solutions: at most 1.25 GB of address space of which 0.3 GB
    resident and 0.25 GB data, 11 threads, 1.7 s of CPU, 5 kB of output); see
    :func:`~transformer_lib.classroom.notebook.grade_notebook` for what happens at a limit."""

    memory_mb: int = 2048  # heap and private memory (RLIMIT_DATA): a 3 GB tensor is refused; see address_mb
    processes: int = 32  # processes and threads of the kernel's own user (RLIMIT_NPROC)
    file_mb: int = 256  # the largest file it may write (RLIMIT_FSIZE); each of its tmpfs folders is as large
    cpu_seconds: int = 600  # CPU time of each of its processes (RLIMIT_CPU); the kernel is killed past it
    output_mb: int = 32  # what the notebook's cells print, all together, as the grader receives it
    message_mb: int = 64  # the largest part of a message the grader accepts from a kernel (ZMQ_MAXMSGSIZE)
    client_mb: int = 512  # memory the grader's kernel client may take on top of its start (a child of its own)

    def __post_init__(self) -> None:
        for name in ("memory_mb", "processes", "file_mb", "cpu_seconds", "output_mb", "message_mb", "client_mb"):
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
            "message": f"messages ({self.message_mb} MB per part of a message it sends, {self.client_mb} MB held by "
            "the grader at once; the kernel was stopped)",
        }[which]


# the system calls that make memory no per-process limit counts: an anonymous file in memory (memfd_create, and
# memfd_secret) and SysV shared memory, whose segments outlive their mapping; refused with EPERM
DENIED_CALLS = ("memfd_create", "memfd_secret", "shmget")
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000  # libseccomp's SCMP_ACT_ALLOW and SCMP_ACT_ERRNO(0)


@functools.cache
def seccomp_filter() -> bytes:
    """The compiled (classic BPF) seccomp filter that refuses :data:`DENIED_CALLS` with EPERM and allows the rest,
    as ``bwrap --seccomp`` loads it; libseccomp writes it for this machine's architecture (and refuses the calls of
    any other, x32 and 32-bit ones included). Empty when libseccomp cannot be loaded."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2", use_errno=True)
    except OSError:
        return b""
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    context = lib.seccomp_init(_ALLOW)
    try:
        for name in DENIED_CALLS:
            number = lib.seccomp_syscall_resolve_name(name.encode())
            if number >= 0 and lib.seccomp_rule_add(context, _ERRNO | errno.EPERM, number, 0) != 0:
                return b""
        with tempfile.TemporaryFile() as f:
            if lib.seccomp_export_bpf(context, f.fileno()) != 0:
                return b""
            f.seek(0)
            return f.read()
    finally:
        lib.seccomp_release(context)


def seccomp_pipe() -> int:
    """A descriptor from which bubblewrap reads :func:`seccomp_filter` (the read end of a pipe that holds it all);
    the caller closes it once bwrap has started."""
    read, write = os.pipe()
    with os.fdopen(write, "wb") as f:
        f.write(seccomp_filter())  # a few hundred bytes: far below a pipe's buffer
    return read


def memory_accounting() -> str:
    """What bounds a kernel's memory here, in a sentence for the start of a run. The grader takes no cgroup (a
    cgroup v2 ``memory.max`` would count every page, shared memory and tmpfs included, but needs a delegated
    subtree: ``systemd-run --user --scope``): its limits are per process, and the shared memory they cannot count is
    refused by a seccomp filter."""
    limits = Limits()
    shared = (
        f"memfd and SysV shared memory cannot be made (seccomp refuses {', '.join(DENIED_CALLS)})"
        if seccomp_filter()
        else "memfd and SysV shared memory are NOT bounded (libseccomp could not be loaded: install libseccomp2)"
    )
    return (
        "Memory: no cgroup is used, so each kernel is bounded per process: heap and private memory (--memory-mb, "
        f"default {limits.memory_mb} MB), address space, which counts shared memory mapped (--memory-mb + "
        f"{ADDRESS_SLACK_MB} MB), and each of its tmpfs folders (/tmp, home, /dev/shm: --file-mb, default "
        f"{limits.file_mb} MB; its sockets folder: {SOCKETS_BYTES // 1024 // 1024} MB); {shared}."
    )

"""What one kernel may use, and what bounds its memory here (:class:`Limits`, :func:`memory_accounting`).

The limits are set with ``prlimit`` on the kernel's processes (heap, address space, processes, file size, CPU time)
and by the size of each tmpfs folder its sandbox mounts (:mod:`.bwrap`); the grader counts what it prints
(:mod:`.kernels`). A cell that meets one fails as if it raised, and the row's note names the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ADDRESS_SLACK_MB", "SOCKETS_BYTES", "Limits", "memory_accounting"]

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

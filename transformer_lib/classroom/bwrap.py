"""bubblewrap's command line for one kernel: the world it sees, built from what it needs and nothing else.

See :mod:`.sandbox` for what that world holds and why; :func:`bwrap_command` writes it as ``bwrap`` arguments:
the system's read-only folders, the kernel's Python (through a hard-linked copy that names no folder of the
teacher's: :mod:`.venv_view`), the library copy, tmpfs folders of a size, the kernel's own connection file and
sockets folder, then ``prlimit`` and, as root, ``setpriv`` for a user of its own.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

from .limits import SOCKETS_BYTES, Limits
from .venv_view import adopt_view, venv_view

__all__ = [
    "ENVIRONMENT",
    "HOME",
    "LIBRARY",
    "PYTHON",
    "adopt_view",
    "bwrap_command",
    "fresh_uid",
    "is_root",
    "python_view",
]

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


# --------------------------------------------------------------------------------------------------------------
# What the world is made of
# --------------------------------------------------------------------------------------------------------------
def _python_prefix(executable: str) -> Path:
    """The environment an interpreter belongs to: its venv folder, or its installation prefix."""
    path = Path(executable)
    if not path.is_absolute():
        path = Path(shutil.which(executable) or executable)
    return path.parent.parent


def python_view(executable: str = sys.executable, *, make: bool = True) -> tuple[str, str] | None:
    """``(prefix, view)``: the venv of ``executable`` and the view of it this process's kernels mount
    (:func:`~.venv_view.venv_view`: found, or made if ``make``), for :func:`~.venv_view.adopt_view` in another
    process; None for an interpreter outside a venv (mounted as it is), or no view and not ``make``."""
    prefix = _python_prefix(executable)
    if not (prefix / "pyvenv.cfg").is_file() or (view := venv_view(prefix, make=make)) is None:
        return None
    return str(prefix), str(view)


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
    binds: list[tuple[str, ...]] = [("--ro-bind", str(venv_view(prefix) or prefix), PYTHON)]
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


def is_root() -> bool:
    """Whether the grader runs as root (then each kernel gets a user id of its own, :func:`fresh_uid`)."""
    return sys.platform == "linux" and os.geteuid() == 0


def fresh_uid() -> int:
    """A user id of its own for one kernel (only used when the grader is root)."""
    return 200_000 + secrets.randbelow(1_000_000_000)


def bwrap_command(
    limits: Limits,
    folder: str,
    library: Path,
    uid: int,
    kernel: list[str],
    info_fd: int | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    """bwrap's command line for ``kernel`` (an argv whose interpreter is a Python): see :mod:`.sandbox`'s docstring.
    ``folder`` is the kernel's own: its ``kernel.json`` (the connection file, read-only) and ``sockets`` (a tmpfs of
    the sandbox's) show at the same paths inside; ``info_fd`` receives bwrap's JSON (``child-pid``); ``seccomp_fd``
    holds the seccomp filter bwrap loads (:func:`~.limits.seccomp_filter`)."""
    binds, python = _python_binds(kernel[0])
    kernel = [python, *kernel[1:]]
    environment = {**ENVIRONMENT, "PATH": f"{PYTHON}/bin:/usr/bin:/bin", "PYTHONPATH": LIBRARY}
    command = ["bwrap", "--die-with-parent", "--new-session", "--clearenv"]
    command += ["--info-fd", str(info_fd)] if info_fd is not None else []
    command += ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    for name, value in sorted(environment.items()):
        command += ["--setenv", name, value]
    command += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]
    command += ["--hostname", "sandbox"]
    command += ["--unshare-user"] if not is_root() else ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
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
    if is_root():  # a user of its own and no capability: the process limit counts this kernel only
        command += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--bounding-set=-all"]
        command += ["--inh-caps=-all", "--no-new-privs", "--"]
    return command + kernel

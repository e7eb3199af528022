"""The kernel's Python as a sandbox sees it: a hard-linked copy of the grader's venv that names no folder of the
teacher's, made once per machine and state of the venv, and shared by every grading process there.

bubblewrap mounts the venv at ``/opt/python`` (:mod:`.bwrap`), and the kernel can read ``/proc/self/mountinfo``,
which names the folder a mount comes from: the venv itself would show where the teacher keeps the course (a
repository, a home folder). A hard-linked copy in a temporary folder shows only its own name, and costs no disk: its
files are the venv's. But it holds 80,000 links, about 2 CPU-seconds and, on a busy disk, a minute to make and as long
to remove; made and removed by every grading process (each Dask worker, each test process, each run of
``run_autograder``), it cost more than grading a notebook.

So the view is kept: ``/var/tmp/tl-python-<uid>-<venv>-<state>`` (``/tmp`` where ``/var/tmp`` is on another device
than the venv), named after a hash of the venv's path (``<venv>``) and of its state (``<state>``, :func:`state`). A
link follows every change made to a file in place; what it cannot follow is a file added, removed or replaced, and
each of those changes the modification time of the folder it is in. The state is those times, of every folder of the
venv (``__pycache__`` left out: a compiled file missing from the view costs the kernel time, not correctness), so an
installation, an upgrade or an edited file gives a new name and a new view. Each process that finds or makes its view
(the teacher's at the start of a grading run, each ``run_autograder``) then removes, under the lock below, the venv's
older views and this user's views of venvs that no longer exist (:func:`orphans`) that no process holds (each process
that mounts a view holds a shared lock on its folder while it lives). One
process makes a view while the others wait on a lock (``tl-python-<uid>-<venv>.lock``); a view is used only if it is
a real folder, owned by this user, writable by no one else, and its ``pyvenv.cfg`` is the venv's own file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

__all__ = ["VIEW_ROOTS", "adopt_view", "orphans", "state", "venv_view", "views_of"]

VIEW_ROOTS = ("/var/tmp", "/tmp")  # where a view is kept (the first on the venv's device), before the TMPDIR
_VIEWS: dict[Path, Path] = {}  # this process's view of each venv (found, made, or adopted)
_HELD: dict[Path, int] = {}  # a descriptor of each view this process uses, with a shared lock on it


def state(prefix: Path) -> str:
    """A hash of what a hard-linked copy of the venv ``prefix`` cannot follow: each folder's path, inode and
    modification time (a file added, removed or replaced there changes it), ``__pycache__`` folders left out."""
    digest = hashlib.sha256()
    for folder, folders, _ in os.walk(prefix):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        info = os.stat(folder)
        digest.update(b"%s\0%d\0%d\0" % (os.fsencode(folder), info.st_ino, info.st_mtime_ns))
    return digest.hexdigest()[:16]


def _root(prefix: Path) -> Path | None:
    """Where the views of ``prefix`` are kept: the first of :data:`VIEW_ROOTS` and the temporary folder that is on
    the venv's device (hard links cannot cross devices) and writable; None if none is."""
    device = os.stat(prefix).st_dev
    for root in (*VIEW_ROOTS, tempfile.gettempdir()):
        with contextlib.suppress(OSError):
            if os.stat(root).st_dev == device and os.access(root, os.W_OK | os.X_OK):
                return Path(root)
    return None


def _stem(prefix: Path) -> str:
    """``tl-python-<uid>-<venv>``: the start of every name this user's views of ``prefix`` take."""
    return f"tl-python-{os.geteuid()}-{hashlib.sha256(os.fsencode(prefix)).hexdigest()[:12]}"


def _hold(view: Path, prefix: Path) -> bool:
    """Take a shared lock on ``view`` for this process's life (the maker of a newer view removes only views no one
    holds) if it is a view of ``prefix`` that can be trusted: a real folder (not a link) of this user that no one else
    can write, whose ``pyvenv.cfg`` is the venv's own file. Returns whether it is held."""
    if view in _HELD:
        return True
    try:
        fd = os.open(view, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        info = os.fstat(fd)
        mine = info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        one = os.stat("pyvenv.cfg", dir_fd=fd, follow_symlinks=False)
        two = os.stat(prefix / "pyvenv.cfg")
        if mine and (one.st_dev, one.st_ino) == (two.st_dev, two.st_ino):
            _HELD[view] = fd
            return True
    except OSError:
        pass
    os.close(fd)
    return False


def views_of(prefix: Path) -> list[Path]:
    """This user's views of the venv ``prefix`` on this machine, finished ones only (none is being made)."""
    root = _root(prefix)
    if root is None:
        return []
    return sorted(p for p in root.glob(f"{_stem(prefix)}-*") if p.is_dir() and ".partial-" not in p.name)


def _remove(view: Path) -> bool:
    """Remove ``view`` unless a process holds it (a shared lock: a grader mounts it). Returns whether it went."""
    try:
        fd = os.open(view, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held
        os.close(fd)
        return False
    shutil.rmtree(view, ignore_errors=True)
    os.close(fd)
    return not view.exists()


def _remove_unused(prefix: Path, keep: Path) -> None:
    """Remove the views of ``prefix`` other than ``keep`` that no process holds, and the half-made ones (their maker
    died: a view is made only under the lock that the caller holds)."""
    root = _root(prefix)
    for old in root.glob(f"{_stem(prefix)}-*") if root is not None else ():
        if old == keep or not old.is_dir() or old.is_symlink():
            continue
        if ".partial-" not in old.name:
            _remove(old)
        else:
            shutil.rmtree(old, ignore_errors=True)


def orphans() -> list[Path]:
    """This user's finished views, in every folder a view is kept in, whose venv is gone (deleted, or made again in
    its place): no file outside the views links their ``pyvenv.cfg`` any more (its link count is the number of views
    that hold it), so no process will find them again. A view without a ``pyvenv.cfg`` is one too."""
    roots = {os.path.realpath(r) for r in (*VIEW_ROOTS, tempfile.gettempdir()) if os.path.isdir(r)}
    mine = f"tl-python-{os.geteuid()}-"
    by_file: dict[tuple[int, int], list[Path]] = {}
    links: dict[tuple[int, int], int] = {}
    found = []
    for root in sorted(roots):
        for view in Path(root).glob(f"{mine}*"):
            if ".partial-" in view.name or view.name.endswith(".lock") or view.is_symlink() or not view.is_dir():
                continue
            try:
                info = os.stat(view / "pyvenv.cfg", follow_symlinks=False)
            except OSError:
                found.append(view)
                continue
            key = (info.st_dev, info.st_ino)
            by_file.setdefault(key, []).append(view)
            links[key] = info.st_nlink
    for key, views in by_file.items():
        if links[key] <= len(views):
            found += views
    return sorted(found)


def _tidy(prefix: Path, keep: Path) -> list[Path]:
    """Under the lock of ``prefix``'s views: remove its views other than ``keep`` that no process holds, and this
    user's views of venvs that are gone (:func:`orphans`) that no process holds. Returns the views removed."""
    before = set(views_of(prefix))
    _remove_unused(prefix, keep)
    removed = [v for v in before if not v.exists()]
    removed += [v for v in orphans() if v != keep and _remove(v)]
    return sorted(removed)


def _make(prefix: Path, make: bool = True) -> Path | None:
    """Find or make the view of ``prefix`` in its current state (see the module's docstring); ``prefix`` itself where
    no folder on its device can hold one, or the links are refused; None if there is none and not ``make``."""
    root = _root(prefix)
    if root is None:  # a venv on a device of its own: mounted where it is
        return prefix
    view = root / f"{_stem(prefix)}-{state(prefix)}"
    found = _hold(view, prefix)
    if not make:
        return view if found else None
    try:
        lock = os.open(root / f"{_stem(prefix)}.lock", os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        return view if found else prefix
    try:
        if os.fstat(lock).st_uid != os.geteuid():  # another user's file in a shared folder: not to be waited on
            return view if found else prefix
        if found:  # tidy up unless another process is making a view right now (it tidies)
            with contextlib.suppress(OSError):
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                _tidy(prefix, keep=view)
            return view
        fcntl.flock(lock, fcntl.LOCK_EX)  # one maker at a time; the others find its view when they get the lock
        if _hold(view, prefix):
            return view
        _tidy(prefix, keep=view)
        partial = Path(tempfile.mkdtemp(prefix=f"{view.name}.partial-", dir=root))
        done = subprocess.run(["cp", "-al", f"{prefix}/.", str(partial)], capture_output=True)
        if done.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            return prefix
        os.chown(partial, os.geteuid(), os.getegid())  # (cp -a gave it the venv folder's owner and mode)
        partial.chmod(0o755)
        partial.rename(view)
        return view if _hold(view, prefix) else prefix
    finally:
        os.close(lock)


def venv_view(prefix: Path, *, make: bool = True) -> Path | None:
    """The view of the venv ``prefix`` that this process's kernels mount (found, or made if ``make``, once per
    process; or adopted): see the module's docstring. None if there is none and not ``make``."""
    if prefix not in _VIEWS and (view := _make(prefix, make)) is not None:
        _VIEWS[prefix] = view
    return _VIEWS.get(prefix)


def adopt_view(prefix: str, view: str) -> bool:
    """Mount ``view`` for the venv ``prefix`` (the teacher's process's :func:`venv_view`, handed to the workers of
    its cluster) instead of finding one, if it is a view of that very venv that this process can trust (on another
    machine it is not: its ``pyvenv.cfg`` is another file). Returns whether it was adopted."""
    if not _hold(Path(view), Path(prefix)):
        return False
    _VIEWS[Path(prefix)] = Path(view)
    return True

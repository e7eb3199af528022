"""What a Dask worker keeps between the notebooks it grades (:mod:`.cluster`), and how nothing of it outlives it.

Each worker process prepares once (:func:`prepare_worker`, run by the :class:`Prepare` plugin as it joins the
cluster, a replacement for a dead worker included): it makes a temporary folder of its own, ``tl-worker-<pid>-*``,
in which everything it makes goes (its library copy per assignment, each notebook's and kernel's folder, a view of
its Python), copies the library for the class's assignments and probes bubblewrap. When it closes, the folder goes
with it. A worker killed with SIGKILL (or by the out-of-memory killer) cannot clean up: its folder is removed
(:func:`remove_stale`: a folder whose process is gone) by the next worker that starts on the machine, and when the
cluster closes: by the teacher's process after an embedded cluster, by each nanny (:class:`RemoveDead`) on a cluster
of ``dask worker`` processes.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from distributed.diagnostics.plugin import NannyPlugin, WorkerPlugin

from .bwrap import adopt_view
from .sandbox import LibraryCopy, bwrap_problem
from .stubs import stubs_for

__all__ = ["Prepare", "RemoveDead", "library_for", "prepare_worker", "remove_stale", "worker_gone"]

_LIBRARIES: dict[str, LibraryCopy] = {}  # this worker's read-only library copy per assignment, made once
_LOCK = threading.Lock()
_ROOT_PREFIX = "tl-worker-"  # a worker's temporary folder: tl-worker-<pid>-<random>, everything it makes inside
_ROOT: list[str] = []  # this worker process's folder, once made (and the temporary folder it replaced)


def library_for(assignment: str) -> LibraryCopy:
    """This worker process's library copy for ``assignment`` (checked after every notebook by the run itself)."""
    with _LOCK:
        if assignment not in _LIBRARIES:
            if not _LIBRARIES:
                atexit.register(_remove_libraries)
            _LIBRARIES[assignment] = LibraryCopy(stubs=stubs_for(assignment))
        return _LIBRARIES[assignment]


def _remove_libraries() -> None:
    with _LOCK:
        for library in _LIBRARIES.values():
            library.cleanup()
        _LIBRARIES.clear()


def _remove_tree(folder: str | Path) -> None:
    """Remove ``folder``, read-only parts (a library copy) included. Only folders inside it are made writable: the
    folder that holds it (``/tmp``) is never touched, and a path already gone (another process removing the same dead
    worker's folder) is no error. (The handler made the parent of whatever failed writable: when ``folder`` itself
    was gone, that was ``/tmp``, left at mode 0700, which no kernel run as ``nobody`` can cross.)"""
    top = os.path.realpath(folder)

    def writable_then_retry(function: Any, path: str, excinfo: Any) -> None:
        if isinstance(excinfo[1], FileNotFoundError):
            return
        with contextlib.suppress(OSError):
            parent = os.path.realpath(os.path.dirname(path))
            inside = parent == top or parent.startswith(top + os.sep)
            if inside:
                os.chmod(parent, 0o700)
            if (inside or os.path.realpath(path) == top) and not os.path.islink(path):  # (a link: its target's mode)
                os.chmod(path, 0o700)
            function(path)

    shutil.rmtree(folder, onerror=writable_then_retry)


def remove_stale(temporary: str | None = None) -> list[str]:
    """Remove the folders of workers whose process is gone (``tl-worker-<pid>-*`` in ``temporary``, by default the
    temporary folder): what a worker killed with SIGKILL, or by the out-of-memory killer, left (its library copies,
    its notebook's kernel folder). Returns the folders removed."""
    removed = []
    for folder in Path(temporary or tempfile.gettempdir()).glob(f"{_ROOT_PREFIX}*-*"):
        if worker_gone(folder):
            _remove_tree(folder)
            removed.append(str(folder))
    return removed


def worker_gone(folder: Path) -> bool:
    """Whether ``folder`` (``tl-worker-<pid>-*``) is a worker's whose process is gone; False for a folder not named
    so, or a process of another user (alive)."""
    try:
        os.kill(int(folder.name[len(_ROOT_PREFIX) :].split("-")[0]), 0)
    except ProcessLookupError:
        return True
    except (ValueError, OSError):
        return False
    return False


def prepare_worker(
    assignments: tuple[str, ...] = (), unsandboxed: bool = False, view: tuple[str, str] | None = None
) -> str:
    """Make this worker process ready before its first notebook, once: remove the folders of dead workers
    (:func:`remove_stale`), make a temporary folder of its own named after its process id, in which everything it
    makes goes (``tempfile.tempdir``: library copies, the notebooks' and kernels' folders, a Python view), copy the
    library for each of ``assignments``, and probe bubblewrap. ``view``: the teacher's process's view of this
    Python (:func:`~.bwrap.python_view`), which the embedded cluster's workers share rather than hard-link one each.
    Returns its folder."""
    if view is not None:
        adopt_view(*view)
    with _LOCK:
        if not _ROOT:
            temporary = tempfile.gettempdir()
            remove_stale(temporary)
            root = tempfile.mkdtemp(prefix=f"{_ROOT_PREFIX}{os.getpid()}-", dir=temporary)
            _ROOT.extend([root, temporary])
            tempfile.tempdir = root
            atexit.register(_remove_root)
    for assignment in assignments:
        library_for(assignment)
    if not unsandboxed:
        bwrap_problem()
    _warm_up()
    return _ROOT[0]


def _warm_up() -> None:
    """Import what grading a notebook imports on its way (reading it, running its kernel, replaying its checks), so
    that a worker's first notebook costs what the others do and the worker's start says what it costs (1.8 CPU-s
    measured, most of it below; constraints.txt holds jsonschema below the release whose import builds an IRI grammar,
    1.5 CPU-s more in each process: scripts/freeze_constraints.sh)."""
    import jupyter_client.asynchronous  # noqa: F401
    import nbclient  # noqa: F401
    import nbformat  # noqa: F401

    from . import checks, notebook  # noqa: F401


def _remove_root() -> None:
    """Remove this worker's library copies and its folder (at its end: :class:`Prepare`'s teardown, or atexit)."""
    _remove_libraries()
    with _LOCK:
        if _ROOT:
            root, temporary = _ROOT
            tempfile.tempdir = temporary
            _remove_tree(root)
            _ROOT.clear()


class Prepare(WorkerPlugin):
    """The Dask worker plugin that runs :func:`prepare_worker` on each worker as it joins (one that replaces a dead
    one included), and removes its folder when it closes."""

    name = "tl-grade-prepare"

    def __init__(self, assignments: tuple[str, ...], unsandboxed: bool, view: tuple[str, str] | None = None) -> None:
        self.assignments, self.unsandboxed, self.view = assignments, unsandboxed, view

    def setup(self, worker: Any) -> None:
        prepare_worker(self.assignments, self.unsandboxed, self.view)

    def teardown(self, worker: Any) -> None:
        _remove_root()


class RemoveDead(NannyPlugin):
    """The Dask nanny plugin that leaves no folder of a dead worker when the nanny closes: its own worker is ended
    first (as the nanny's close is about to; one that does not close within the nanny's time is killed, and cannot
    remove its own folder), then the folders of every worker on the machine whose process is gone
    (:func:`remove_stale`: one killed mid-run whose replacement had not started yet, that one)."""

    name = "tl-grade-remove-dead"

    async def teardown(self, nanny: Any) -> None:
        from distributed.core import Status

        if nanny.status == Status.closing and nanny.process is not None:  # (not when the plugin alone is removed)
            await nanny.kill(reason="nanny-close")
        remove_stale()

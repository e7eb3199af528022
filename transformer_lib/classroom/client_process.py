"""The grader's side of a kernel in a child process of its own, whose memory is bounded (:func:`run_bounded`).

ZeroMQ refuses a part of a message past :attr:`~.limits.Limits.message_mb` before anyone holds it, but a message of
many parts, each under that cap, is held whole before the first part is read: a kernel could still grow the
grader's process by hundreds of MB. So the kernel client (:func:`~.kernels.run_cells`: it starts the kernel,
receives its messages and keeps what it printed) runs in a child forked from the grader, with
:attr:`~.limits.Limits.client_mb` MB of heap and private memory (``RLIMIT_DATA``) on top of what it started with.
A kernel that makes it hold more is cut off (ZeroMQ drops a connection whose message it cannot allocate) or kills
that child, not the grader: the run stops at that cell as if the kernel had died there, the row's note names the
limit, and the notebook's other exercises are graded in a fresh kernel, as for any kernel that dies. The child
reports to the grader in JSON lines (the cell it starts, then its :class:`~.kernels.CellRun` and the cells'
outputs); nothing is unpickled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import select
import signal
import time
from typing import Any

from .kernels import GRACE, CellRun, run_cells
from .sandbox import Sandbox

__all__ = ["run_bounded"]

_MARGIN = 60.0  # seconds past the notebook's deadline after which a child that has not ended is killed


def _data_bytes() -> int:
    """This process's heap and private memory now, as ``RLIMIT_DATA`` counts it (``VmData``)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def _key(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


def _child(
    write: int, cells: list[tuple[Any, Any]], sandbox: Sandbox, arguments: tuple[str, float, float, float, float | None]
) -> None:
    """In the child: bound its memory, run the cells, report; never returns (``os._exit``: the grader's exit
    handlers, which remove its library copies, are not the child's to run)."""
    code = 1
    try:
        limit = _data_bytes() + sandbox.limits.client_mb * 1024 * 1024
        # the soft limit alone: the kernel's own command (prlimit) sets the kernel's, which this one must not bound
        resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.getrlimit(resource.RLIMIT_DATA)[1]))
        with os.fdopen(write, "w", encoding="utf-8") as out:

            def started(key: Any) -> None:
                out.write(json.dumps(["start", key]) + "\n")
                out.flush()

            kernel_name, cell_timeout, deadline, grace, check_timeout = arguments
            run = asyncio.run(
                run_cells(cells, sandbox, kernel_name, cell_timeout, deadline, grace, started, check_timeout)
            )
            done = {
                "state": [[k, v] for k, v in run.state.items()],
                "limits": [[k, v] for k, v in run.limits.items()],
                "stopped": run.stopped,
                "failure": run.failure,
                "leftovers": run.leftovers,
                "outputs": [cell.get("outputs", []) for _, cell in cells],
            }
            out.write(json.dumps(["done", done]) + "\n")
        code = 0
    finally:
        os._exit(code)


def _read(read: int, pid: int, until: float) -> list[Any]:
    """The child's reports, until it closes its end or ``until`` (``time.monotonic()``) passes (then it is killed)."""
    reports, buffer = [], b""
    while True:
        left = until - time.monotonic()
        if left <= 0 or not select.select([read], [], [], left)[0]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            break
        chunk = os.read(read, 1 << 20)
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        reports += [json.loads(line) for line in lines if line]
    return reports


def run_bounded(
    cells: list[tuple[Any, Any]],
    sandbox: Sandbox,
    kernel_name: str,
    cell_timeout: float,
    deadline: float,
    grace: float = GRACE,
    check_timeout: float | None = None,
) -> CellRun:
    """:func:`~.kernels.run_cells` in a child process of bounded memory (see the module's docstring); the cells'
    outputs come back into ``cells``. A child that dies while a cell runs (the kernel made it hold more than
    ``client_mb``) gives a run stopped at that cell, its limit ``"message"``. ``sandbox`` is closed when this
    returns."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child: its coverage is not collected)
        os.close(read)
        _child(write, cells, sandbox, (kernel_name, cell_timeout, deadline, grace, check_timeout))
    os.close(write)
    try:
        reports = _read(read, pid, deadline + _MARGIN)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    run = CellRun()
    if reports and reports[-1][0] == "done":
        done = reports[-1][1]
        run.state = {_key(k): v for k, v in done["state"]}
        run.limits = {_key(k): v for k, v in done["limits"]}
        run.stopped = (done["stopped"][0], _key(done["stopped"][1])) if done["stopped"] else None
        run.failure, run.leftovers = done["failure"], done["leftovers"]
        for (_, cell), outputs in zip(cells, done["outputs"], strict=True):
            cell["outputs"] = outputs
    else:  # the child died: at the last cell it started (or while the kernel started)
        key = _key(reports[-1][1]) if reports else None
        run.stopped = ("died", key)
        if key is not None:
            run.limits[key] = "message"
    run.leftovers += sandbox.close()  # what an unsandboxed kernel left, the folders, the grader's descriptors
    if run.failure and (said := [line for line in sandbox.said().splitlines() if line.startswith("bwrap:")]):
        run.failure += f" ({said[-1]})"
    return run

"""Running a notebook's cells in a sandboxed kernel, one at a time, each within its time limit.

:func:`run_cells` starts a fresh kernel in a :class:`~transformer_lib.classroom.sandbox.Sandbox` and runs the cells
it is given in order. A cell that runs past its limit is interrupted; a kernel that does not answer the interrupt
within a grace period (a loop that catches ``BaseException``) is killed, and so is one past the notebook's deadline.
A kernel that dies (``os._exit``, a crash) ends the run too. The caller learns which cell it was, and decides what
to run next (:func:`transformer_lib.classroom.notebook.grade_notebook` re-runs the cells that define what is left to
grade, in a fresh kernel). When :func:`run_cells` returns, the kernel and every process it started are gone.

It also says which of the sandbox's :class:`~transformer_lib.classroom.sandbox.Limits` a cell met: memory, processes
or file size (from the exception the cell raised), CPU time (the kernel was killed by SIGXCPU), or output (counted
here: what a cell prints past the kernel's allowance is dropped, never held in the grader's memory), or messages
(a part of a message larger than :attr:`~.limits.Limits.message_mb` is refused by ZeroMQ, ``ZMQ_MAXMSGSIZE``, before
the grader holds it; ZeroMQ then drops that connection for good, so the run stops there as if the kernel had died).
The grader runs this in a child process of bounded memory (:mod:`.client_process`): a message of many parts, each
under that cap, is held whole before it is read, and only that child's memory can run out.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import math
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zmq

from .sandbox import Sandbox, SandboxedKernelManager

__all__ = ["CellRun", "run_cells", "error_of", "limit_of", "GRACE", "SETUP_TIMEOUT", "SETUP_KEY", "CHECK_OUTPUT"]
GRACE = 5.0  # seconds a kernel gets to answer an interrupt before it is killed
SETUP_TIMEOUT = 120  # importing torch on a busy machine may take long: not the student's fault
SETUP_KEY = ("setup",)
CHECK_OUTPUT = 20_000_000  # characters an injected check cell may print (a recording is at most 8 MB)
_QUIET = logging.getLogger("transformer_lib.classroom.kernels")  # nbclient's time-out messages: the
_QUIET.setLevel(logging.CRITICAL)  # problems list says what happened, per cell


def error_of(cell: Any) -> str | None:
    """``"Name: message"`` of the exception a cell's outputs show, or None."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            name, value = str(out.get("ename", "Error")), str(out.get("evalue", ""))
            return f"{name}: {value}".rstrip(": ")
    return None


_LIMIT_ERRORS = (  # what Python says when a cell meets one of the sandbox's limits
    ("memory", re.compile(r"^MemoryError|can't allocate memory|Cannot allocate memory|std::bad_alloc")),
    ("processes", re.compile(r"^BlockingIOError|Resource temporarily unavailable|can't start new thread")),
    ("file size", re.compile(r"File too large|No space left on device")),
)
_LIMIT_SIGNALS = {int(signal.SIGXCPU): "cpu", int(signal.SIGXFSZ): "file size"}


def limit_of(error: str | None) -> str | None:
    """Which limit (``"memory"``, ``"processes"``, ``"file size"``) a cell's error (``"Name: message"``) says it
    met, or None."""
    return next((which for which, pattern in _LIMIT_ERRORS if error and pattern.search(error)), None)


@dataclass
class CellRun:
    """What one kernel did: each cell's state ("ok", "error", "timeout": stopped by an interrupt), and why it stopped
    early, if it did: ("hung" | "died" | "deadline", the cell's key) or a failure to start. ``limits``: the limit
    each cell met (see :func:`limit_of`; ``"cpu"``, ``"output"``)."""

    state: dict[Any, str] = field(default_factory=dict)
    stopped: tuple[str, Any] | None = None
    failure: str = ""
    leftovers: int = 0
    limits: dict[Any, str] = field(default_factory=dict)


def _size(content: dict[str, Any]) -> int:
    try:
        return len(json.dumps(content))
    except (TypeError, ValueError):
        return 0


def _capped_client(nb: Any, **kwargs: Any) -> Any:
    """An nbclient client that keeps a cell's outputs only while they fit its allowance (``client.allowance``,
    characters, set before each cell; ``client.exceeded`` says whether the cell printed more)."""
    from nbclient import NotebookClient

    class _Capped(NotebookClient):
        allowance = 0
        exceeded = False

        def output(self, outs: Any, msg: dict[str, Any], display_id: Any, cell_index: int) -> Any:
            size = _size(msg.get("content", {}))
            if self.exceeded or size > self.allowance:
                self.exceeded = True
                return None
            self.allowance -= size
            return super().output(outs, msg, display_id, cell_index)

    return _Capped(nb, **kwargs)


def _monitor(socket: Any) -> Any:
    """A socket that hears when ``socket`` loses its connection: ZeroMQ drops the connection of a kernel that sends
    a part of a message past ``ZMQ_MAXMSGSIZE`` (:attr:`~.limits.Limits.message_mb`), before anything of it is
    held."""
    return socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)


async def _refused(monitors: list[Any]) -> bool:
    """Whether a connection was dropped since the last look (a message past the limit; ZeroMQ does not reconnect
    after such a protocol error)."""
    dropped = False
    for monitor in monitors:
        while await monitor.poll(0):
            await monitor.recv_multipart()
            dropped = True
    return dropped


async def _exit_signal(km: Any, wait: float = 3.0) -> int | None:
    """The signal that ended the sandbox's kernel (bubblewrap exits with 128 + its number), if any; waits up to
    ``wait`` seconds for the process to be gone (a dead kernel is noticed on its sockets first)."""
    process = getattr(getattr(km, "provisioner", None), "process", None)
    end = time.monotonic() + wait
    while process is not None and process.poll() is None and time.monotonic() < end:
        await asyncio.sleep(0.05)
    code = process.poll() if process is not None else None
    if code is None:
        return None
    return -code if code < 0 else code - 128 if code > 128 else None


async def _answers_interrupt(client: Any, grace: float) -> bool:
    """Interrupt the kernel, then ask it to run ``None``: True if it answers within ``grace`` seconds."""
    from queue import Empty

    try:
        await client.km.interrupt_kernel()
        probe = client.kc.execute("None", silent=True, store_history=False)
        end = time.monotonic() + grace
        while (left := end - time.monotonic()) > 0:
            msg = await client.kc.shell_channel.get_msg(timeout=left)
            if msg.get("parent_header", {}).get("msg_id") == probe:
                return True
    except (Empty, RuntimeError, OSError):
        pass
    return False


async def run_cells(
    cells: list[tuple[Any, Any]],
    sandbox: Sandbox,
    kernel_name: str,
    cell_timeout: float,
    deadline: float,
    grace: float = GRACE,
    started: Callable[[Any], None] | None = None,
    check_timeout: float | None = None,
) -> CellRun:
    """Run ``cells`` (key, cell) in one fresh sandboxed kernel, in order, each within its time limit and the
    notebook's ``deadline``; stop at a cell that ignores the interrupt or kills the kernel. A check cell (key
    ``("check", name)``) gets ``check_timeout`` (default ``cell_timeout``): the check limits the learner's calls
    by CPU time, and the cell must not be stopped by the wall clock before that limit can fire on a busy machine.
    ``started``, if given, is told each cell's key as it starts. The kernel and every process it started are gone
    when this returns."""
    import nbformat
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    run = CellRun()
    km = SandboxedKernelManager.for_sandbox(sandbox, kernel_name)
    client = _capped_client(
        nbformat.v4.new_notebook(cells=[c for _, c in cells]),
        km=km,
        allow_errors=True,
        interrupt_on_timeout=False,
        startup_timeout=SETUP_TIMEOUT,
        iopub_timeout=grace,
        log=_QUIET,
        resources={"metadata": {"path": sandbox.workdir}},
    )
    printed = 0  # what the notebook's own cells printed, in characters
    output = sandbox.limits.output_mb * 1_000_000
    fd = sandbox.output_fd  # the kernel's own stdout and stderr (and the sandbox's complaints): a pipe
    monitors: list[Any] = []
    try:
        async with client.async_setup_kernel(env=sandbox.env(), cwd=sandbox.workdir, stdout=fd, stderr=fd):
            monitors = [_monitor(channel.socket) for channel in (client.kc.iopub_channel, client.kc.shell_channel)]
            for index, (key, cell) in enumerate(cells):
                left = deadline - time.monotonic()
                limit = (
                    SETUP_TIMEOUT
                    if key == SETUP_KEY
                    else (check_timeout or cell_timeout)
                    if key[0] == "check"
                    else cell_timeout
                )
                if left < 1:
                    run.stopped = ("deadline", key)
                    break
                client.timeout = max(1, math.ceil(min(limit, left)))
                client.allowance = CHECK_OUTPUT if key[0] == "check" else max(0, output - printed)
                client.exceeded = False
                if started is not None:
                    started(key)
                try:
                    await client.async_execute_cell(cell, index)
                    if await _refused(monitors):  # the grader no longer hears this kernel: as if it had died
                        run.limits[key] = "message"
                        run.stopped = ("died", key)
                        break
                    run.state[key] = "error" if error_of(cell) else "ok"
                    if which := limit_of(error_of(cell)):
                        run.limits[key] = which
                except CellTimeoutError:
                    if not await _answers_interrupt(client, grace):
                        run.stopped = ("hung", key)
                        break
                    run.state[key] = "timeout"
                except DeadKernelError:
                    run.stopped = ("died", key)
                    if which := _LIMIT_SIGNALS.get(await _exit_signal(km) or 0):
                        run.limits[key] = which
                    break
                finally:
                    if key[0] != "check":
                        printed = output - client.allowance
                    if client.exceeded:
                        run.limits.setdefault(key, "output")
    except DeadKernelError:
        run.stopped = ("died", cells[0][0]) if not run.state else run.stopped or ("died", None)
    except Exception as e:  # a kernel that cannot start, a sandbox that cannot be set up, ...
        run.failure = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}".rstrip(": ")
    finally:
        for monitor in monitors:
            monitor.close(linger=0)
        atexit.unregister(client._cleanup_kernel)  # registered by nbclient; this function cleans up itself
        with contextlib.suppress(Exception):
            if client.kc is not None:
                client.kc.stop_channels()
        with contextlib.suppress(Exception):
            await km.shutdown_kernel(now=True)
        km.context.destroy(linger=0)  # the manager's own (SandboxedKernelManager.for_sandbox): its sockets too
        run.leftovers = sandbox.close()
        if run.failure:
            said = [line for line in sandbox.said().splitlines() if line.startswith("bwrap:")]
            run.failure += f" ({said[-1]})" if said else ""
    return run

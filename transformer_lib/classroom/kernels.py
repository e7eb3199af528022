"""Running a notebook's cells in a sandboxed kernel, one at a time, each within its time limit.

:func:`run_cells` starts a fresh kernel in a :class:`~transformer_lib.classroom.sandbox.Sandbox` and runs the cells
it is given in order. A cell that runs past its limit is interrupted; a kernel that does not answer the interrupt
within a grace period (a loop that catches ``BaseException``) is killed, and so is one past the notebook's deadline.
A kernel that dies (``os._exit``, a crash) ends the run too. The caller learns which cell it was, and decides what
to run next (:func:`transformer_lib.classroom.grade.grade_notebook` re-runs the cells that define what is left to
grade, in a fresh kernel). When :func:`run_cells` returns, the kernel and every process it started are gone.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .sandbox import Sandbox, SandboxedKernelManager

__all__ = ["CellRun", "run_cells", "error_of", "GRACE", "SETUP_TIMEOUT", "SETUP_KEY"]
GRACE = 5.0  # seconds a kernel gets to answer an interrupt before it is killed
SETUP_TIMEOUT = 120  # importing torch on a busy machine may take long: not the student's fault
SETUP_KEY = ("setup",)
_QUIET = logging.getLogger("transformer_lib.classroom.kernels")  # nbclient's time-out messages: the
_QUIET.setLevel(logging.CRITICAL)  # problems list says what happened, per cell


def error_of(cell: Any) -> str | None:
    """``"Name: message"`` of the exception a cell's outputs show, or None."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            name, value = str(out.get("ename", "Error")), str(out.get("evalue", ""))
            return f"{name}: {value}".rstrip(": ")
    return None


@dataclass
class CellRun:
    """What one kernel did: each cell's state ("ok", "error", "timeout": stopped by an interrupt), and why it stopped
    early, if it did: ("hung" | "died" | "deadline", the cell's key) or a failure to start."""

    state: dict[Any, str] = field(default_factory=dict)
    stopped: tuple[str, Any] | None = None
    failure: str = ""
    leftovers: int = 0


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
) -> CellRun:
    """Run ``cells`` (key, cell) in one fresh sandboxed kernel, in order, each within its time limit and the
    notebook's ``deadline``; stop at a cell that ignores the interrupt or kills the kernel. The kernel and every
    process it started are gone when this returns."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    run = CellRun()
    km = SandboxedKernelManager.for_sandbox(sandbox, kernel_name)
    client = NotebookClient(
        nbformat.v4.new_notebook(cells=[c for _, c in cells]),
        km=km,
        allow_errors=True,
        interrupt_on_timeout=False,
        startup_timeout=SETUP_TIMEOUT,
        iopub_timeout=grace,
        log=_QUIET,
        resources={"metadata": {"path": sandbox.workdir}},
    )
    log = open(sandbox.log, "wb")  # the kernel's own output (and the sandbox's complaints), not the grader's
    try:
        async with client.async_setup_kernel(env=sandbox.env(), cwd=sandbox.workdir, stdout=log, stderr=log):
            for index, (key, cell) in enumerate(cells):
                left = deadline - time.monotonic()
                limit = SETUP_TIMEOUT if key == SETUP_KEY else cell_timeout
                if left < 1:
                    run.stopped = ("deadline", key)
                    break
                client.timeout = max(1, math.ceil(min(limit, left)))
                try:
                    await client.async_execute_cell(cell, index)
                    run.state[key] = "error" if error_of(cell) else "ok"
                except CellTimeoutError:
                    if not await _answers_interrupt(client, grace):
                        run.stopped = ("hung", key)
                        break
                    run.state[key] = "timeout"
                except DeadKernelError:
                    run.stopped = ("died", key)
                    break
    except DeadKernelError:
        run.stopped = ("died", cells[0][0]) if not run.state else run.stopped or ("died", None)
    except Exception as e:  # a kernel that cannot start, a sandbox that cannot be set up, ...
        run.failure = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}".rstrip(": ")
    finally:
        atexit.unregister(client._cleanup_kernel)  # registered by nbclient; this function cleans up itself
        with contextlib.suppress(Exception):
            if client.kc is not None:
                client.kc.stop_channels()
        with contextlib.suppress(Exception):
            await km.shutdown_kernel(now=True)
        log.close()
        if run.failure:
            said = [
                line
                for line in Path(sandbox.log).read_text(errors="replace").splitlines()
                if line.startswith("sandbox:")
            ]
            run.failure += f" ({said[-1]})" if said else ""
        run.leftovers = sandbox.close()
    return run

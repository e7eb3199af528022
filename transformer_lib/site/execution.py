"""Executing notebooks without the build's stall: a kernel client whose waits cannot miss a message.

**The stall.** nbclient (inside Jupyter Book, myst-nb and jupyter-cache) waits for a kernel's reply with
pyzmq's asyncio ``poll(timeout)``. That poll is woken by ZeroMQ's *edge-triggered* file descriptor; when the edge
is missed (seen after ``ipywidgets.interact`` cells, more often on a loaded machine), the reply sits unread in
the socket until the poll's timeout fires, and only then does pyzmq's final non-blocking check find it. The cell
therefore "takes" exactly the per-cell timeout and the run carries on without an error. It is not the kernel:
ipykernel 6.31 and 7.4 stall alike, and nbval, whose client blocks in ``zmq_poll`` (level-triggered), never
does.

**The fix.** :class:`SlicedPollChannel` waits in slices of at most :data:`POLL_SLICE_S` seconds; each slice ends
with that non-blocking check, so a reply whose wake-up was missed is read within one slice instead of one cell
timeout. Pass :class:`SlicedPollKernelManager` to nbclient as ``kernel_manager_class`` (``scripts/
execute_notebooks.py`` does, for the build).
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from jupyter_client import AsyncKernelManager
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import Type

POLL_SLICE_S = 0.5  # the longest a reply can wait unread after a missed wake-up


class SlicedPollChannel(AsyncZMQSocketChannel):
    """A kernel channel whose ``get_msg(timeout)`` polls in short slices, so no ready message waits long."""

    # jupyter_client's own AsyncZMQSocketChannel overrides the synchronous get_msg with a coroutine the same way
    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = POLL_SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            if await self.socket.poll(int(1000 * min(POLL_SLICE_S, remaining))):
                return await self._recv()
            if deadline is not None and time.monotonic() >= deadline:
                raise Empty


class SlicedPollKernelClient(AsyncKernelClient):
    """nbclient's asynchronous kernel client, with :class:`SlicedPollChannel` on every ZeroMQ channel."""

    shell_channel_class = Type(SlicedPollChannel)
    iopub_channel_class = Type(SlicedPollChannel)
    stdin_channel_class = Type(SlicedPollChannel)
    control_channel_class = Type(SlicedPollChannel)


class SlicedPollKernelManager(AsyncKernelManager):
    """A kernel manager whose clients are :class:`SlicedPollKernelClient` (pass it to nbclient)."""

    client_class = "transformer_lib.site.execution.SlicedPollKernelClient"
    client_factory = Type(SlicedPollKernelClient)


# ---------------------------------------------------------------------------------------------------------------------
# Executing once per run: the notebook test (nbval) keeps what it executed, and the build reuses it (under the page's
# fingerprint, transformer_lib.site.page_dependencies)


def replay(notebook: Any, messages: dict[int, list[dict[str, Any]]], language_info: dict[str, Any]) -> Any:
    """Fill ``notebook`` (nbformat) with the outputs that the kernel messages of each code cell (``{cell index: its
    iopub messages}``) make, exactly as nbclient makes them when it executes the notebook: streams, displays,
    cleared outputs, display updates, widget views and the widget state. Returns the notebook."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionComplete

    client = NotebookClient(notebook, record_timing=False)
    client.reset_execution_trackers()
    client.kc = _NoKernel()  # type: ignore[assignment]
    count = 0
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        cell.execution_count = None
        client.clear_before_next_output = False  # what nbclient's execute_cell sets before each cell
        for message in messages.get(index, []):
            try:
                client.process_message(message, cell, index)
            except CellExecutionComplete:
                break
        count += 1  # numbered as nbclient numbers them (nbval runs cells without keeping a history)
        cell.execution_count = count
        if _quiet(cell.source):  # IPython hides the value of a cell that ends with ";" only when it keeps history
            cell.outputs = [o for o in cell.outputs if o.output_type != "execute_result"]
        for output in cell.outputs:
            if output.output_type == "execute_result":
                output.execution_count = count
    client.set_widgets_metadata()
    notebook.metadata["language_info"] = language_info
    return notebook


class _NoKernel:
    """Where nbclient's stand-in for an Output widget sends the widget's new state (to the kernel, as a front end
    would): a replay has no kernel to tell, and the state it keeps is what the page needs."""

    def __init__(self) -> None:
        from jupyter_client.session import Session

        self.session = Session()
        self.shell_channel = self

    def send(self, message: Any) -> None:
        pass


def _quiet(source: str) -> bool:
    """Whether IPython's display hook keeps a cell's value to itself: its last token (comments aside) is ";"."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT}
    meaningful = [t for t in tokens if t.type not in skip]
    return bool(meaningful) and meaningful[-1].string == ";"

"""The build's notebook execution (transformer_lib.book.execution): a kernel client that cannot miss a ready reply."""

from __future__ import annotations

import asyncio
from pathlib import Path
from queue import Empty

import pytest

from transformer_lib.book import execution

ROOT = Path(__file__).resolve().parents[1]


class _MissedWakeUpSocket:
    """A socket whose first poll misses the wake-up of a message that is already there (the build's stall)."""

    def __init__(self, ready_from_call: int) -> None:
        self.timeouts_ms: list[int] = []
        self.ready_from_call = ready_from_call

    async def poll(self, timeout_ms: int) -> int:
        self.timeouts_ms.append(timeout_ms)
        return int(len(self.timeouts_ms) >= self.ready_from_call)


def _channel(socket: _MissedWakeUpSocket) -> execution.SlicedPollChannel:
    channel = execution.SlicedPollChannel.__new__(execution.SlicedPollChannel)  # no real ZeroMQ socket needed
    channel.socket = socket

    async def recv() -> dict:
        return {"msg_type": "execute_reply"}

    channel._recv = recv
    return channel


def test_a_reply_whose_wake_up_was_missed_is_read_in_the_next_slice_not_at_the_cell_timeout() -> None:
    socket = _MissedWakeUpSocket(ready_from_call=2)
    msg = asyncio.run(_channel(socket).get_msg(timeout=600))
    assert msg == {"msg_type": "execute_reply"}
    # the stock channel asks for one poll of the whole 600 s; each of ours is one slice long at most
    assert len(socket.timeouts_ms) == 2 and max(socket.timeouts_ms) <= 1000 * execution.POLL_SLICE_S


def test_no_reply_still_ends_in_empty_at_the_deadline() -> None:
    socket = _MissedWakeUpSocket(ready_from_call=10**9)
    with pytest.raises(Empty):
        asyncio.run(_channel(socket).get_msg(timeout=0.05))
    assert 1 <= len(socket.timeouts_ms) and max(socket.timeouts_ms) <= 50


def test_the_kernel_manager_hands_out_sliced_channels() -> None:
    client = execution.SlicedPollKernelManager().client()
    assert client.shell_channel_class is execution.SlicedPollChannel
    assert client.iopub_channel_class is execution.SlicedPollChannel


def test_widget_state_is_dropped_only_when_no_shown_output_holds_a_widget():
    import importlib.util

    import nbformat

    spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    view = {"output_type": "display_data", "metadata": {}, "data": {module.WIDGET_VIEW: {"model_id": "m"}}}

    def notebook(tags):
        nb = nbformat.v4.new_notebook(metadata={"widgets": {"state": {"m": {}}}})
        nb.cells.append(nbformat.v4.new_code_cell("interact(...)", outputs=[view], metadata={"tags": tags}))
        return nb

    removed, shown = notebook(["remove-output"]), notebook([])
    assert module.drop_unused_widget_state(removed) and "widgets" not in removed.metadata
    assert not module.drop_unused_widget_state(shown) and "widgets" in shown.metadata

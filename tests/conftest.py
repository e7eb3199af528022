"""Shared pytest set-up for the unit tests: tests marked ``gpu`` are skipped where CUDA is absent."""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    import torch  # only when a gpu test is collected: importing torch costs seconds

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="marked gpu: needs a CUDA device, and none is available here")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="module")
def sol():
    """Every object the solution notebooks define (their exercise and setup cells): test_checks and test_record."""
    from transformer_lib.classroom.assignments import ASSIGNMENTS, notebook_namespace

    root = Path(__file__).resolve().parents[1]
    ns = {}
    for aid in ASSIGNMENTS:
        ns.update(notebook_namespace(root / "assignments" / f"{aid}.ipynb", skip_tags=("check", "demo")))
    return ns


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models train fastest on one CPU thread (several threads spin against each other on a busy machine);
    a module that trains asks for it with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

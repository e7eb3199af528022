"""The kernel's Python as the sandbox mounts it (transformer_lib.classroom.venv_view): one hard-linked view per machine
and state of the venv, shared by every grading process, remade when the venv changes, never trusted when another
user could have made it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from transformer_lib.classroom import venv_view


@pytest.fixture
def venv(tmp_path, monkeypatch):
    """A small venv (pyvenv.cfg, a package, a compiled file) and a folder of its own for the views; each test starts
    as a fresh process would (no view found, made or held yet)."""
    prefix = tmp_path / "course" / ".venv"
    (prefix / "lib" / "pkg" / "__pycache__").mkdir(parents=True)
    (prefix / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (prefix / "lib" / "pkg" / "mod.py").write_text("x = 1\n")
    (prefix / "lib" / "pkg" / "__pycache__" / "mod.pyc").write_bytes(b"\0")
    (tmp_path / "views").mkdir()
    monkeypatch.setattr(venv_view, "VIEW_ROOTS", (str(tmp_path / "views"),))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # (views are looked for there too)
    monkeypatch.setattr(venv_view, "_VIEWS", {})
    monkeypatch.setattr(venv_view, "_HELD", {})
    yield prefix
    for fd in venv_view._HELD.values():
        os.close(fd)


def _new_process(monkeypatch) -> dict[Path, int]:
    """Forget this process's views as a new process would; returns the locks it held (still held until closed)."""
    held = dict(venv_view._HELD)
    monkeypatch.setattr(venv_view, "_VIEWS", {})
    monkeypatch.setattr(venv_view, "_HELD", {})
    return held


def test_one_view_per_state_shared_by_every_process_and_naming_no_folder(venv, tmp_path, monkeypatch):
    view = venv_view.venv_view(venv)
    assert view.parent == tmp_path / "views" and "course" not in view.name and ".venv" not in view.name
    assert os.stat(view / "lib" / "pkg" / "mod.py").st_ino == os.stat(venv / "lib" / "pkg" / "mod.py").st_ino
    assert (view.stat().st_mode & 0o777) == 0o755
    made = view.stat().st_ctime_ns
    _new_process(monkeypatch)
    assert venv_view.venv_view(venv) == view and view.stat().st_ctime_ns == made  # found, not made again
    assert venv_view.views_of(venv) == [view]


def test_a_changed_venv_gets_a_new_view_and_the_old_one_goes_once_no_process_holds_it(venv, monkeypatch):
    first = venv_view.venv_view(venv)
    (venv / "lib" / "pkg" / "__pycache__" / "other.pyc").write_bytes(b"\0")  # compiled files: the same state
    held = list(_new_process(monkeypatch).values())
    assert venv_view.venv_view(venv) == first
    held += _new_process(monkeypatch).values()
    (venv / "lib" / "pkg" / "new.py").write_text("y = 2\n")  # a file added (an installation, an upgrade)
    second = venv_view.venv_view(venv)
    assert second != first and (second / "lib" / "pkg" / "new.py").exists()
    assert first.exists()  # the processes that found it still mount it
    for fd in held:
        os.close(fd)  # they end
    (venv / "lib" / "pkg" / "mod.py").unlink()  # a file removed: a third state, and the unheld first view goes
    _new_process(monkeypatch)
    third = venv_view.venv_view(venv)
    assert not (third / "lib" / "pkg" / "mod.py").exists()
    assert not first.exists() and second.exists() and venv_view.views_of(venv) == sorted([second, third])


def test_a_view_that_is_a_link_or_writable_by_others_is_not_used(venv, tmp_path, monkeypatch):
    view = venv_view.venv_view(venv)
    _new_process(monkeypatch)
    view.chmod(0o777)  # another user could have put anything in it
    assert not venv_view.adopt_view(str(venv), str(view))
    view.chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.symlink_to(view)
    assert not venv_view.adopt_view(str(venv), str(elsewhere))
    other = tmp_path / "other"  # a folder with a pyvenv.cfg of the same text is not a view of this venv
    other.mkdir()
    (other / "pyvenv.cfg").write_text((venv / "pyvenv.cfg").read_text())
    assert not venv_view.adopt_view(str(venv), str(other))
    assert venv_view.adopt_view(str(venv), str(view)) and venv_view.venv_view(venv, make=False) == view


def test_without_make_a_missing_view_is_none_and_a_half_made_one_is_removed(venv, tmp_path):
    assert venv_view.venv_view(venv, make=False) is None and venv_view.views_of(venv) == []
    stem = venv_view._stem(venv)
    half = tmp_path / "views" / f"{stem}-0123456789abcdef.partial-x1"  # its maker was killed
    (half / "lib").mkdir(parents=True)
    view = venv_view.venv_view(venv)
    assert not half.exists() and venv_view.views_of(venv) == [view]


def test_a_run_removes_the_views_of_deleted_venvs_and_unused_old_views_once_no_process_holds_them(venv, monkeypatch):
    """/var/tmp held 12 GB of views of venvs long deleted: each process that finds its view (a grading run's start)
    removes, under the lock, this user's views whose venv is gone and its venv's older views, unless a process holds
    them."""
    gone = venv.parent / "gone" / ".venv"  # another venv, graded with once, then deleted
    shutil.copytree(venv, gone)
    current = venv_view.venv_view(venv)
    orphan = venv_view.venv_view(gone)
    held = _new_process(monkeypatch)
    (venv / "lib" / "pkg" / "new.py").write_text("y = 2\n")
    newer = venv_view.venv_view(venv)  # made: the first view is older and held
    _new_process(monkeypatch)
    shutil.rmtree(gone)
    assert venv_view.orphans() == [orphan] and current.exists()
    assert venv_view.venv_view(venv) == newer and orphan.exists() and current.exists()  # both still held
    for fd in held.values():
        os.close(fd)  # the processes that mounted them end
    _new_process(monkeypatch)
    assert venv_view.venv_view(venv) == newer  # found, not made: the run's start tidies all the same
    assert not orphan.exists() and not current.exists() and venv_view.orphans() == []
    assert venv_view.views_of(venv) == [newer]

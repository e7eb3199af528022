"""pytest plugin for the solutions' run (``pytest --nbval-lax assignments``): book/conftest.py's hooks that keep what
nbval executed, so that each solution, as it ran, is kept in ``_build/.executed/assignments/``. A teacher's copy of
the book (``python -m transformer_lib.classroom.assignments --teacher-book DIR --build``) takes it from there instead
of running the solution again, when the solution and the modules it imports are unchanged."""

from book.conftest import pytest_runtest_call, pytest_runtest_teardown

__all__ = ["pytest_runtest_call", "pytest_runtest_teardown"]

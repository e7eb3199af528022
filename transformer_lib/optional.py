"""Optional packages: import one where it is needed, or say which of the project's extras installs it.

``pip install -e .[book]`` installs what a reader needs to run and build the book; the other extras of
``pyproject.toml`` (``[export]``, ``[classroom]``, ``[pretrained]``, ``[test]``, ``[dev]``, ``[all]``) add what one
use needs. The modules that use such a package import it inside the function that needs it, through
:func:`require`, so that ``import transformer_lib`` never fails for want of one, and a missing package is reported
with the command that installs it:

>>> require("json", extra="export", purpose="an example").__name__
'json'
>>> require("no_such_module", extra="export", purpose="exporting the translator to ONNX")
Traceback (most recent call last):
  ...
ModuleNotFoundError: exporting the translator to ONNX needs the package 'no_such_module', which is not installed; \
install the project's [export] extra: `pip install -e .[export]` (from the repository's root)
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "require"]

# The extras of pyproject.toml that library code names in its errors, and what each is for.
EXTRAS = {
    "book": "what a reader needs to run and build the book",
    "pretrained": "the pretrained appendix's weights and the reference implementations its tests compare with",
    "export": "chapter 7's live translator exported to ONNX and checked with onnxruntime",
    "classroom": "grading a class: notebooks run in kernels, nbgrader, copydetect",
}


def require(module: str, *, extra: str, purpose: str, package: str | None = None) -> ModuleType:
    """Import ``module``, or raise a :class:`ModuleNotFoundError` that names ``purpose``, the missing package
    (``package``, by default the module's top-level name) and the extra of this project that installs it."""
    if extra not in EXTRAS:
        raise ValueError(f"extra: expected one of {sorted(EXTRAS)}, got {extra!r}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None:
            raise
        # the module itself, or a package it imports, is absent: either way the extra is not (fully) installed
        top = error.name.split(".")[0]
        name = package if package is not None and top == module.split(".")[0] else top
        raise ModuleNotFoundError(
            f"{purpose} needs the package {name!r}, which is not installed; install the project's [{extra}] extra: "
            f"`pip install -e .[{extra}]` (from the repository's root)",
            name=error.name,
        ) from None

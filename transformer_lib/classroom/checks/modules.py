"""The learner's modules in a check: which classes the grader accepts, and the weights the check gives them.

A check that builds the learner's module never trusts its initial weights: an answer whose ``__init__`` zeroes a
projection would make a sub-layer it leaves out invisible (zero in the answer, zero in a reference built from the
same weights). :func:`_set_weights` gives every parameter values of the check's own, from a seeded generator.

A check whose catalogue of mistakes runs the learner's sub-modules (``m.ff(x)``) runs them in the grader, rebuilt
from the kernel's recording as the classes the check names (:mod:`.snapshot`). :func:`_expect_modules` fails a
sub-module of any other class, or with other children, with a note that says which, before anything runs it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from torch import nn

from .core import _Fail
from .snapshot import _Shadow, _trusted_class, class_path, rebuilt_as


def class_name(m: object) -> str:
    """How a note names ``m``'s class: 'torch.nn.Upsample', 'tl.FeedForward', or the learner's own class name;
    the same for the learner's object in the kernel and for what the grader rebuilt from its recording."""
    if isinstance(m, _Shadow):
        path, name = getattr(m, "_recorded_cls", None), getattr(m, "_recorded_name", "?")
    else:
        trusted = _trusted_class(type(m)) if isinstance(m, nn.Module) else None
        path, name = (None if trusted is None else class_path(trusted)), type(m).__name__
    module, _, qualname = (path or "").partition(":")
    if not qualname:
        return name
    for prefix, shown in (("torch.nn.", "torch.nn."), ("transformer_lib.", "tl.")):
        if module.startswith(prefix):
            return shown + qualname
    return f"{module}.{qualname}"


def _children(m: nn.Module) -> dict[str, nn.Module | None]:
    return dict(getattr(m, "_modules", {}))


def _tree(ref: nn.Module, path: str) -> Iterator[tuple[str, nn.Module]]:
    """``(path, module)`` of ``ref`` and everything under it, read from nn.Module's own tables."""
    yield path, ref
    for name, child in _children(ref).items():
        if child is not None:
            yield from _tree(child, f"{path}.{name}")


def _expect_modules(module: nn.Module, expected: dict[str, nn.Module], allowed: tuple[type, ...], hint: str) -> None:
    """Each ``module.<name>`` has the classes and children of ``expected[name]`` (a reference), all of them
    classes of ``allowed``: anything else fails with a note, so that the grader never runs it."""
    for name, ref in expected.items():
        for path, want in _tree(ref, name):
            got: object = module
            for part in path.split("."):
                got = _children(got).get(part) if isinstance(got, nn.Module) else None
            if rebuilt_as(got, allowed) is not type(want):
                raise _Fail(
                    f"self.{path} is a {class_name(got)}; the check accepts a {class_name(want)} there.",
                    "The grader runs only the classes of the starter code on your weights, never a class of your own.",
                    (f"self.{path} must be a {class_name(want)}, as in the starter code. {hint}",),
                )
            assert isinstance(got, nn.Module)  # rebuilt_as said so
            if sorted(_children(got)) != sorted(_children(want)):
                raise _Fail(
                    f"self.{path} has the sub-modules {sorted(_children(got))}, expected {sorted(_children(want))}.",
                    "",
                    (f"Build self.{path} as in the starter code, without adding or replacing its parts. {hint}",),
                )


@torch.no_grad()
def _set_weights(m: nn.Module, g: torch.Generator) -> None:
    """Give every floating-point parameter of ``m`` and its children values of the check's own: matrices
    N(0, 1/fan_in), so that activations stay near 1; a norm's ``weight`` near 1; biases N(0, 0.2²)."""
    for name, p in sorted(m._parameters.items()):
        if p is None or not p.is_floating_point():
            continue
        z = torch.randn(p.shape, generator=g, dtype=torch.float64)
        if p.dim() >= 2:
            p.copy_(z / math.sqrt(max(p.shape[-1], 1)))
        else:
            p.copy_(1 + 0.3 * z if name == "weight" else 0.2 * z)
    for _, child in sorted(m._modules.items()):
        if child is not None:
            _set_weights(child, g)

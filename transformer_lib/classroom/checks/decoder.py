"""Checks of assignment 6, the decoder layer: the learner's layer against :class:`~transformer_lib.layers.DecoderLayer`.

The check gives the layer's sub-modules weights of its own (:func:`~.modules._set_weights`), so that a sub-layer an
answer zeroes and leaves out shows, and accepts only the sub-module classes of the starter code
(``_DECODER_MODULES``): the grader rebuilds exactly those from the kernel's recording to run the catalogue of
mistakes (``_decoder_variant``), and fails any other class with a note instead of running it.
The decoding checks of the same assignment live in :mod:`.decoding`.
Shape legend: ``B`` batch, ``T`` target length, ``S`` source length, ``C`` d_model.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from ...attention import MultiHeadAttention
from ...layers import DecoderLayer, FeedForward
from ...masks import causal_mask
from .compare import _close, _describe, _expect_dtype, _expect_shape, _match, _row_diff, _tensor
from .core import _call, _check, _Fail, _fixed_seed, _seeded
from .hidden import _and_random, _keys_mask, _normal, _random_cases, _size, drawn
from .modules import _expect_modules, _set_weights

_DECODER_ATTRS = ("self_attn", "cross_attn", "ff", "norm1", "norm2", "norm3")
# what the starter code's sub-modules are made of: the only classes the grader rebuilds and runs
_DECODER_MODULES: tuple[type, ...] = (MultiHeadAttention, FeedForward, nn.LayerNorm, nn.Linear, nn.Dropout)
_SKIPPED = {  # sub-layer -> the line of forward that is missing
    "self_attn": "y = self.norm1(y + self.self_attn(y, y, y, self_mask)[0])",
    "cross_attn": "y = self.norm2(y + self.cross_attn(y, memory, memory, cross_mask)[0])",
    "ff": "y = self.norm3(y + self.ff(y))",
}


def _decoder_variant(
    m: Any,  # the learner's DecoderLayer: any nn.Module with the sub-modules of _DECODER_ATTRS
    y: Tensor,
    memory: Tensor,
    self_mask: Tensor | None,
    cross_mask: Tensor | None,
    *,
    pre_ln: bool = False,
    residual: bool = True,
    use_self_mask: bool = True,
    cross_kv: str = "memory",
    use_cross_mask: bool = True,
    norms: tuple[int, ...] = (1, 2, 3),
    skip: str = "",
) -> dict[str, Tensor]:
    """The decoder layer in float64 from the learner's sub-modules, with one deliberate mistake; ``skip`` names a
    sub-layer that adds nothing (its norm still applies)."""
    m = copy.deepcopy(m).double()
    norm = [getattr(m, f"norm{i}") for i in norms]

    def sub(x: Tensor, f: Callable[[Tensor], Tensor], n: nn.Module, name: str) -> Tensor:
        if name == skip:
            return n(x)
        if pre_ln:
            return x + f(n(x)) if residual else f(n(x))
        return n(x + f(x)) if residual else n(f(x))

    y, memory = y.double(), memory.double()
    y = sub(y, lambda x: m.self_attn(x, x, x, self_mask if use_self_mask else None)[0], norm[0], "self_attn")
    kv = (lambda x: memory) if cross_kv == "memory" else (lambda x: x)
    y = sub(
        y, lambda x: m.cross_attn(x, kv(x), kv(x), cross_mask if use_cross_mask else None)[0], norm[1], "cross_attn"
    )
    return {"output": sub(y, m.ff, norm[2], "ff")}


def _decoder_mistakes(args: tuple) -> list[tuple[Callable[[], dict], tuple[str, ...]]]:
    """The catalogue: each plausible mistake as a variant of the layer, with its hints."""
    own = "The check gives every sub-layer weights of its own, so a sub-layer left out (or zeroed) shows."
    return [
        *(
            (lambda s=s: _decoder_variant(*args, skip=s), (f"A sub-layer is missing: {line}. {own}",))
            for s, line in _SKIPPED.items()
        ),
        (
            lambda: _decoder_variant(*args, pre_ln=True),
            (
                "You normalise before each sub-layer (pre-LN); the paper's decoder is post-LN: "
                "y = LayerNorm(y + Sublayer(y)).",
            ),
        ),
        (
            lambda: _decoder_variant(*args, residual=False),
            (
                "A residual connection is missing: add the sub-layer's input back before the LayerNorm, "
                "norm(y + sublayer(y)).",
            ),
        ),
        (
            lambda: _decoder_variant(*args, use_self_mask=False),
            (
                "Future tokens leak: pass self_mask to the masked self-attention.",
                "Without the causal mask, position t reads positions after t, which do not exist yet when the "
                "model generates one token at a time.",
            ),
        ),
        (
            lambda: _decoder_variant(*args, cross_kv="y"),
            ("Cross-attention must take its keys and values from memory (the encoder output) and its queries from y.",),
        ),
        (
            lambda: _decoder_variant(*args, use_cross_mask=False),
            ("Pass cross_mask to the cross-attention, so that padded source positions get no weight.",),
        ),
        (
            lambda: _decoder_variant(*args, norms=(1, 1, 1)),
            (
                "Each sub-layer has its own LayerNorm: norm1 after self-attention, norm2 after cross-attention, "
                "norm3 after the feed-forward.",
            ),
        ),
    ]


def _decoder_cases(C: int) -> list[tuple[str, Tensor, Tensor, Tensor | None, Tensor | None]]:
    g = _seeded(6)

    def r(*shape: int, dtype: torch.dtype = torch.float64) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=dtype)

    src_pad = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, None, :]  # (B, 1, 1, S)
    return [
        ("no masks", r(2, 3, C), r(2, 2, C), None, None),
        ("causal self mask, source padding mask", r(2, 4, C), r(2, 5, C), causal_mask(4), src_pad),
        ("batch of one, length one", r(1, 1, C), r(1, 1, C), causal_mask(1), None),
        ("float32", r(2, 3, C, dtype=torch.float32), r(2, 5, C, dtype=torch.float32), causal_mask(3), src_pad),
    ]


@_random_cases("check_decoder_layer")
def _random_decoder(g: torch.Generator) -> list[tuple[str, tuple[Tensor, Tensor, Tensor, Tensor]]]:
    """Two cases of random lengths (d_model 16) with a causal mask and a random source padding mask, float64 then
    float32."""
    cases = []
    for i, dtype in enumerate((torch.float64, torch.float32)):
        B, T, S = _size(g, 1, 3), _size(g, 2, 5), _size(g, 2, 6)
        y, memory = _normal(g, B, T, 16, dtype=dtype), _normal(g, B, S, 16, dtype=dtype)
        cases.append((f"random case {i + 1}", (y, memory, causal_mask(T), _keys_mask(g, B, S)[:, None, None, :])))
    return cases


def _reference(m: Any, C: int, H: int, d_ff: int) -> DecoderLayer:
    """tl.DecoderLayer (post-LN) holding the weights of the learner's sub-modules."""
    with _fixed_seed(0):
        ref = DecoderLayer(C, H, d_ff, dropout=0.0, attn_impl="eager").double().eval()
    try:
        with torch.no_grad():
            ref.self_attn.load_state_dict(m.self_attn.state_dict())
            if ref.cross_attn is None:  # DecoderLayer(cross_attention=True) by default
                raise RuntimeError("the reference DecoderLayer has no cross-attention")
            ref.cross_attn.load_state_dict(m.cross_attn.state_dict())
            ref.ff.load_state_dict(m.ff.state_dict())
            for res, i in (("self_res", 1), ("cross_res", 2), ("ff_res", 3)):
                getattr(ref, res).norm.load_state_dict(getattr(m, f"norm{i}").state_dict())
    except (RuntimeError, AttributeError) as e:
        raise _Fail(
            "The sub-modules differ from the starter code.",
            str(e),
            ("Keep the __init__ of the starter code unchanged.",),
        ) from None
    return ref


def _built(cls: Callable, C: int, H: int, d_ff: int) -> Any:  # the learner's layer, attributes and all
    """The learner's layer, its sub-modules checked against the reference's and given the check's own weights."""
    with _fixed_seed(0):
        module = _call(cls, C, H, d_ff, dropout=0.0, inputs=f"d_model = {C}, n_heads = {H}, d_ff = {d_ff}")
    missing = [a for a in _DECODER_ATTRS if not isinstance(getattr(module, a, None), nn.Module)]
    if missing:
        raise _Fail(
            f"The layer has no sub-module(s) {missing}.",
            "",
            (
                "Keep the __init__ of the starter code: the check reads self.self_attn, self.cross_attn, "
                "self.ff and self.norm1, self.norm2, self.norm3.",
            ),
        )
    with _fixed_seed(0):
        ref = DecoderLayer(C, H, d_ff, dropout=0.0)
    expected: dict[str, nn.Module] = {a: getattr(ref, a) for a in ("self_attn", "cross_attn", "ff")}
    expected |= {f"norm{i}": getattr(ref, r).norm for i, r in ((1, "self_res"), (2, "cross_res"), (3, "ff_res"))}
    _expect_modules(module, expected, _DECODER_MODULES, "Write the decoder layer's steps in forward, not in a class.")
    g = _seeded(5)
    for a in _DECODER_ATTRS:
        _set_weights(getattr(module, a), g)
    return module.eval()


@_check("decoder_layer", replays=_DECODER_MODULES)
def check_decoder_layer(cls: Callable) -> str:
    """Check a decoder layer built as ``cls(d_model, n_heads, d_ff, dropout=0.0)`` with the sub-modules of the
    starter code (``self_attn``, ``cross_attn``, ``ff``, ``norm1..3``) and ``forward(y, memory, self_mask=None,
    cross_mask=None) -> (B, T, C)``: the same numbers as :class:`~transformer_lib.layers.DecoderLayer` (post-LN)
    holding the weights the check gives the sub-modules.
    """
    C, H, d_ff = 16, 4, 32
    module = _built(cls, C, H, d_ff)
    named, random = _decoder_cases(C), drawn("check_decoder_layer")
    for label, y, memory, self_mask, cross_mask in named + [(label, *case) for label, case in random]:
        inputs = f"{label}: {_describe(y=y, memory=memory, self_mask=self_mask, cross_mask=cross_mask)}"
        m = copy.deepcopy(module).to(y.dtype)
        with torch.no_grad():
            out = _call(m, y, memory, self_mask, cross_mask, inputs=inputs)
        if isinstance(out, (tuple, list)):
            raise _Fail(
                "forward returned a tuple; expected the output tensor (B, T, C) only.",
                f"Input: {inputs}",
                ("Remember that self.self_attn(...) returns (output, weights): take [0].",),
            )
        out = _tensor(out, "The output", inputs)
        _expect_shape("The output", out, tuple(y.shape), inputs, ("The output has the shape of y: (B, T, C).",))
        _expect_dtype("The output", out, y.dtype, inputs)
        with torch.no_grad():
            want = _reference(m, C, H, d_ff)(y.double(), memory.double(), self_mask, cross_mask)[0]
        if _close(out, want, y.dtype):
            continue
        hints = _match({"output": out}, _decoder_mistakes((m, y, memory, self_mask, cross_mask)), y.dtype) or (
            "Three sub-layers in order, each as y = norm(y + sublayer(y)): masked self-attention (self_mask), "
            "cross-attention to memory (cross_mask), feed-forward.",
            "Compare with Figure 1 of the paper, the right-hand stack.",
        )
        diff = _row_diff("output", out, want, y.dtype)
        raise _Fail("The output differs from the reference.", f"Input: {inputs}\n{diff}", hints)
    return _and_random(
        f"All {len(named)} cases match tl.DecoderLayer with the check's weights (masks, no masks, a batch of one "
        "with length one, float32).",
        random,
    )

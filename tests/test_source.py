"""transformer_lib.book.source: library source shown as highlighted, foldable code."""

import inspect

import pytest

import transformer_lib as tl
from transformer_lib.book.source import show_source


def test_short_source_is_open_long_source_is_folded_and_plain_text_is_the_code():
    short, long = tl.combine_masks, tl.Transformer.decode
    shown = show_source(short, long, collapse_after=16)  # 15 and 18 lines
    page = shown._repr_html_()
    assert page.count("<details") == 2 and page.count(" open>") == 1 and "click to unfold" in page
    assert "transformer_lib.masks.combine_masks" in page and "<span" in page  # highlighted
    assert repr(shown).startswith(inspect.getsource(short).rstrip("\n")[:40])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="objects"):
        show_source()
    with pytest.raises(TypeError, match="cannot show the source of 3"):
        show_source(3)


def test_docstrings_can_be_left_out_and_the_code_stays():
    full = show_source(tl.MultiHeadAttention)
    bare = show_source(tl.MultiHeadAttention, docstrings=False)
    assert '"""' in repr(full) and '"""' not in repr(bare) and "Shape:" not in repr(bare)
    full_lines, rest = repr(full).splitlines(), iter(repr(full).splitlines())
    assert all(line in rest for line in repr(bare).splitlines())  # the lines in order: some dropped, none changed
    assert len(repr(bare).splitlines()) < len(full_lines) - 30
    assert "def forward(" in repr(bare) and "self.o_proj(" in repr(bare)
    compile(repr(bare), "<shown>", "exec")  # still Python

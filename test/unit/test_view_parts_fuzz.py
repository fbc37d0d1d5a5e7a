"""Fuzz of the `tile.view` part syntax (lowering/tile_values.py): whatever text a hand-written
cast holds, reading it gives back exactly what `render` would write for it, or a ValueError
(a located error at the cast), never another exception; every part renders and reads back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tilec.lowering.tile_values import parse_part, render

leaves = st.one_of(
    st.integers(-(2**40), 2**40), st.integers(0, 99).map(lambda i: f"%{i}"), st.none()
)
parts = st.recursive(leaves, lambda inner: st.lists(inner, max_size=5), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(parts)
def test_every_part_reads_back_as_written(part: object) -> None:
    assert parse_part(render(part)) == part


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="[],_%-0123456789 x", max_size=24))
def test_any_text_reads_as_its_rendering_or_is_refused(text: str) -> None:
    try:
        part = parse_part(text)
    except ValueError:
        return
    assert render(part) == text

"""`span` and `extent` of a (swizzled) layout from the algebra, against evaluating every index."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.measure import extent, image_is_run, span, swizzle_period

CHECK = settings(max_examples=300, deadline=None, derandomize=True)


def enumerated(x: A.Layout | A.ComposedLayout) -> int:
    return max(x(i) for i in range(A.size(x))) + 1


def reached(x: A.Layout) -> set[int]:
    return {x(i) for i in range(A.size(x))}


SWIZZLES = [A.Swizzle(b, m, s) for b, m, s in itertools.product(range(4), range(4), (3, 4, 5))]
SWIZZLES += [A.Swizzle(2, 1, -2), A.Swizzle(3, 0, -4), A.Swizzle(0, 3, 0)]


def test_hand_worked_spans() -> None:
    sw = A.Swizzle(3, 3, 3)
    tile = A.Layout((128, 64), (64, 1))  # tile_to_shape(Sw<3,3,3> o (8,64):(64,1), (128,64))
    assert span(A.ComposedLayout(sw, 0, tile)) == 8192
    staged = A.Layout((128, 64, 3), (64, 1, 8192))
    assert span(A.ComposedLayout(sw, 0, staged)) == 3 * 8192
    # 4 rows of 64: the last row's chunks are swizzled by row 3's bits, reaching offset 255.
    assert span(A.ComposedLayout(sw, 0, A.Layout((4, 64), (64, 1)))) == 256
    # 3 rows of 8 with holes: row 2 (offset 128, yyy = 2) xors chunk 0 with 2: 128 + 16 + 7 is
    # the largest offset reached.
    assert span(A.ComposedLayout(A.Swizzle(3, 3, 3), 0, A.Layout((3, 8), (64, 1)))) == 152
    assert span(A.Layout((4, 8), (8, 1))) == 32
    assert span(A.Layout((4, 8), (1, 3))) == 25  # overlapping modes: 3 + 7 * 3 + 1


def test_period() -> None:
    assert swizzle_period(A.Swizzle(3, 3, 3)) == 512
    assert swizzle_period(A.Swizzle(2, 1, -2)) == 32


def test_image_is_run() -> None:
    assert image_is_run(A.Layout((4, 8), (8, 1)))
    assert image_is_run(A.Layout((4, 8), (1, 3)))  # 0..3, then +3: overlapping, no hole
    assert not image_is_run(A.Layout((4, 8), (1, 5)))  # 0..3, 5..8: 4 is a hole
    assert image_is_run(A.Layout((4, 2), (0, 1)))  # a broadcast mode adds nothing
    assert not image_is_run(A.Layout(4, -1))


shapes = st.lists(st.integers(1, 6), min_size=1, max_size=3)


@CHECK
@given(shapes, st.data(), st.sampled_from(SWIZZLES), st.integers(0, 70))
def test_span_equals_enumeration(
    shape: list[int], data: st.DataObject, sw: A.Swizzle, offset: int
) -> None:
    strides = data.draw(st.lists(st.integers(-3, 40), min_size=len(shape), max_size=len(shape)))
    inner = A.Layout(tuple(shape), tuple(strides))
    if all(d >= 0 for d in strides):
        assert span(inner) == enumerated(inner)
    composed = A.ComposedLayout(sw, offset, inner)
    assert span(composed) == enumerated(composed)


@CHECK
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.sampled_from(SWIZZLES))
def test_compact_layouts_are_runs(shape: list[int], sw: A.Swizzle) -> None:
    inner = A.Layout(tuple(shape))  # compact column-major: 0..size-1
    assert image_is_run(inner)
    assert reached(inner) == set(range(A.size(inner)))
    assert span(A.ComposedLayout(sw, 0, inner)) == enumerated(A.ComposedLayout(sw, 0, inner))


def enumerated_extent(x: A.Layout | A.ComposedLayout, period: int) -> tuple[int, int]:
    """(floor, n) by evaluating every index: the lowest offset rounded down to `period` (0 when
    none is negative), and the elements from there to the highest."""
    offsets = [x(i) for i in range(A.size(x))]
    floor = min(0, min(offsets) // period * period)
    return floor, max(offsets) - floor + 1


def test_hand_worked_extents() -> None:
    assert extent(A.Layout((64, 64), (-64, 1))) == (-4032, 4096)
    assert extent(A.Layout((64, 64), (64, -1))) == (-63, 4096)
    assert extent(A.Layout(4, -1)) == (-3, 4)
    assert extent(A.Layout((4, 8), (8, 1))) == (0, 32)  # no negative stride: floor 0, the span
    assert extent(A.Layout((4, 2), (0, -3))) == (-3, 4)  # a broadcast mode adds nothing
    # Sw<3,3,3>: -4032 rounds down to -4096 (period 512); offsets 0..63 swizzle onto themselves.
    sw = A.Swizzle(3, 3, 3)
    assert extent(A.ComposedLayout(sw, 0, A.Layout((64, 64), (-64, 1)))) == (-4096, 4160)
    # Sw<2,2,2> has period 64: the floor -4032 is one, and the buffer is exactly 4096.
    assert extent(A.ComposedLayout(A.Swizzle(2, 2, 2), 0, A.Layout((64, 64), (-64, 1)))) == (
        -4032,
        4096,
    )
    staged = A.Layout((128, 64, 2), (-64, 1, 8192))  # tile_pipeline's two stages, 8192 apart
    assert extent(staged) == (-8128, 16384)


@CHECK
@given(shapes, st.data(), st.sampled_from(SWIZZLES), st.integers(-70, 70))
def test_extent_equals_enumeration(
    shape: list[int], data: st.DataObject, sw: A.Swizzle, offset: int
) -> None:
    strides = data.draw(st.lists(st.integers(-40, 40), min_size=len(shape), max_size=len(shape)))
    inner = A.Layout(tuple(shape), tuple(strides))
    assert extent(inner) == enumerated_extent(inner, 1)
    composed = A.ComposedLayout(sw, offset, inner)
    floor, n = extent(composed)
    assert (floor, n) == enumerated_extent(composed, swizzle_period(sw))
    # Based at start - floor, every offset lands inside the buffer, and (floor a multiple of
    # the period) the swizzle of the shifted offset is the shifted swizzle: sw(v - f) = sw(v) - f.
    for i in range(A.size(inner)):
        v = offset + inner(i)
        assert 0 <= sw(v - floor) == composed(i) - floor < n


def test_refusals() -> None:
    with pytest.raises(A.LayoutError, match="only a swizzle may compose"):
        span(A.ComposedLayout(A.Layout(8, 2), 0, A.Layout(4, 1)))
    with pytest.raises(A.LayoutError, match="static layout"):
        span(A.Layout((4, A.DYN), (1, 4)))
    with pytest.raises(A.LayoutError, match="only a swizzle may compose"):
        extent(A.ComposedLayout(A.Layout(8, 2), 0, A.Layout(4, -1)))

"""The layout algebra against pycute (CuTe's Python reference) on random layouts, index by index."""

from __future__ import annotations

import math
from collections.abc import Callable

import pycute
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tilec import layout as L

CHECK = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# ---------------------------------------------------------------------------------------------
# Strategies: nested shapes of size <= 256, strides incl. 0 and non-compact
# ---------------------------------------------------------------------------------------------


def _shapes(leaf: st.SearchStrategy[int]) -> st.SearchStrategy:
    tree = st.recursive(
        leaf,
        lambda sub: st.tuples(sub) | st.tuples(sub, sub) | st.tuples(sub, sub, sub),
        max_leaves=5,
    )
    return tree.filter(lambda s: L.product(s) <= 256)


def _strides_for(shape: object, stride: st.SearchStrategy[int]) -> st.SearchStrategy:
    if isinstance(shape, tuple):
        return st.tuples(*(_strides_for(s, stride) for s in shape))
    return stride


def _layouts(leaf: st.SearchStrategy[int], stride: st.SearchStrategy[int]) -> st.SearchStrategy:
    return _shapes(leaf).flatmap(lambda s: _strides_for(s, stride).map(lambda d: L.Layout(s, d)))


ANY_INT = st.integers(1, 9)
POW2 = st.sampled_from([1, 2, 4, 8])
layouts = _layouts(ANY_INT, st.integers(0, 40))
signed_layouts = _layouts(ANY_INT, st.integers(-20, 20))
# Powers of two divide one another, so composition's divisibility conditions always hold.
pow2_layouts = _layouts(POW2, st.sampled_from([0, 1, 2, 4, 8, 16, 32, 64]))
pow2_positive = _layouts(POW2, st.sampled_from([1, 2, 4, 8, 16, 32, 64]))


@st.composite
def injective_layouts(draw: st.DrawFn, pow2: bool = False) -> L.Layout:
    """Modes sorted by stride with gaps, then shuffled: injective, complement defined."""
    n = draw(st.integers(1, 4))
    shapes, strides, span = [], [], 1
    for _ in range(n):
        s = draw(POW2 if pow2 else st.integers(1, 6))
        gap = draw(st.sampled_from([1, 2]) if pow2 else st.integers(1, 3))
        strides.append(span * gap)
        shapes.append(s)
        span = span * gap * s
    assume(math.prod(shapes) <= 256)
    order = draw(st.permutations(range(n)))
    shp, std = tuple(shapes[i] for i in order), tuple(strides[i] for i in order)
    return L.Layout(shp[0], std[0]) if n == 1 and draw(st.booleans()) else L.Layout(shp, std)


def ref(x: L.Layout) -> pycute.Layout:
    return pycute.Layout(x.shape, x.stride)


def same_function(mine: L.Layout, theirs: pycute.Layout) -> None:
    assert L.size(mine) == pycute.size(theirs)
    for i in range(L.size(mine)):
        assert mine(i) == theirs(i), f"{mine} vs {theirs} at {i}"


def _unit_strides_zeroed(shape: object, stride: object) -> object:
    """A size-1 mode's stride is never used; CuTe writes 1:0, pycute sometimes 1:d."""
    if isinstance(shape, tuple):
        return tuple(_unit_strides_zeroed(s, d) for s, d in zip(shape, stride, strict=True))
    return 0 if shape == 1 else stride


def same_layout(mine: L.Layout, theirs: pycute.Layout) -> None:
    """Same function, same shape, same strides (up to the strides of size-1 modes)."""
    same_function(mine, theirs)
    assert mine.shape == theirs.shape
    assert _unit_strides_zeroed(mine.shape, mine.stride) == _unit_strides_zeroed(
        theirs.shape, theirs.stride
    )


# ---------------------------------------------------------------------------------------------
# Indexing
# ---------------------------------------------------------------------------------------------


@CHECK
@given(signed_layouts)
def test_indexing(x: L.Layout) -> None:
    theirs = ref(x)
    for i in range(L.size(x)):
        crd = L.idx2crd(i, x.shape)
        assert crd == pycute.idx2crd(i, x.shape)
        assert x(i) == x(crd) == L.crd2idx(crd, x.shape, x.stride) == theirs(i)
        assert L.crd2idx(crd, x.shape, x.stride) == pycute.crd2idx(crd, x.shape, x.stride)


@CHECK
@given(layouts)
def test_size_cosize_rank(x: L.Layout) -> None:
    theirs = ref(x)
    assert L.size(x) == pycute.size(theirs)
    assert L.cosize(x) == pycute.cosize(theirs)  # agree while strides are non-negative
    assert L.rank(x) == len(theirs)


# ---------------------------------------------------------------------------------------------
# Coalesce, filter
# ---------------------------------------------------------------------------------------------


@CHECK
@given(signed_layouts)
def test_coalesce(x: L.Layout) -> None:
    same_layout(L.coalesce(x), pycute.coalesce(ref(x)))


@CHECK
@given(layouts, st.data())
def test_coalesce_by_mode(x: L.Layout, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, L.rank(x)))
    profile = tuple([1] * n)
    same_layout(L.coalesce(x, profile), pycute.coalesce(ref(x), profile))


@CHECK
@given(layouts)
def test_filter(x: L.Layout) -> None:
    same_layout(L.filter(x), pycute.filter(ref(x)))


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


@CHECK
@given(pow2_layouts, pow2_layouts)
def test_composition_pow2(a: L.Layout, b: L.Layout) -> None:
    """Equal to pycute, except where b's modes overlap so that their images under a carry into
    a's next mode: there pycute's result is not a o b at some coordinate, and tilec refuses."""
    theirs = pycute.composition(ref(a), ref(b))
    try:
        mine = L.composition(a, b)
    except L.LayoutError as e:
        assert "carry" in str(e)
        assert any(theirs(i) != a(b(i)) for i in range(L.size(b))), (a, b, theirs)
        return
    same_layout(mine, theirs)


@CHECK
@given(layouts, layouts)
def test_composition_any_when_defined(a: L.Layout, b: L.Layout) -> None:
    """Where CuTe's divisibility conditions hold, the functions agree index by index."""
    try:
        mine = L.composition(a, b)
    except L.LayoutError:
        assume(False)
    same_function(mine, pycute.composition(ref(a), ref(b)))


@CHECK
@given(pow2_layouts, st.data())
def test_composition_by_mode(a: L.Layout, data: st.DataObject) -> None:
    n = data.draw(st.integers(1, L.rank(a)))
    tiler = tuple(data.draw(pow2_layouts.filter(lambda t: L.depth(t) <= 1)) for _ in range(n))
    mine = L.composition(a, tiler)
    same_layout(mine, pycute.composition(ref(a), tuple(ref(t) for t in tiler)))


# ---------------------------------------------------------------------------------------------
# Complement and inverses
# ---------------------------------------------------------------------------------------------


@CHECK
@given(injective_layouts(), st.integers(1, 300))
def test_complement(x: L.Layout, cotarget: int) -> None:
    same_layout(L.complement(x, cotarget), pycute.complement(ref(x), cotarget))
    same_layout(L.complement(x), pycute.complement(ref(x)))


@CHECK
@given(_layouts(ANY_INT, st.integers(1, 40)))
def test_right_inverse(x: L.Layout) -> None:
    same_layout(L.right_inverse(x), pycute.right_inverse(ref(x)))


@CHECK
@given(layouts)
def test_right_inverse_property(x: L.Layout) -> None:
    """Holds with stride-0 modes too, where pycute gives up (see test_layout_algebra)."""
    r = L.right_inverse(x)
    for i in range(L.size(r)):
        assert x(r(i)) == i


@CHECK
@given(injective_layouts())
def test_left_inverse(x: L.Layout) -> None:
    """Both invert x on its image; off it they differ (test_where_pycute_differs)."""
    mine, theirs = L.left_inverse(x), pycute.left_inverse(ref(x))
    for i in range(L.size(x)):
        assert mine(x(i)) == i == theirs(x(i))


# ---------------------------------------------------------------------------------------------
# Divide and product
# ---------------------------------------------------------------------------------------------


@CHECK
@given(pow2_layouts, injective_layouts(pow2=True))
def test_logical_divide(a: L.Layout, b: L.Layout) -> None:
    same_layout(L.logical_divide(a, b), pycute.logical_divide(ref(a), ref(b)))


@CHECK
@given(injective_layouts(pow2=True), pow2_layouts)
def test_logical_product(a: L.Layout, b: L.Layout) -> None:
    """Equal to pycute, except where b's modes carry under the complement (see
    test_composition_pow2): there pycute's second mode is not complement o b, and tilec
    refuses."""
    theirs = pycute.logical_product(ref(a), ref(b))
    try:
        mine = L.logical_product(a, b)
    except L.LayoutError as e:
        assert "carry" in str(e)
        rest = L.complement(a, L.size(a) * L.cosize(b))
        second = pycute.Layout(theirs.shape[1], theirs.stride[1])
        assert any(second(j) != rest(b(j)) for j in range(L.size(b))), (a, b, theirs)
        return
    same_layout(mine, theirs)


def _pow2_tiler(data: st.DataObject, a: L.Layout) -> tuple:
    n = data.draw(st.integers(1, L.rank(a)))
    return tuple(data.draw(st.one_of(st.none(), injective_layouts(pow2=True))) for _ in range(n))


def _ref_tiler(tiler: tuple) -> tuple:
    return tuple(None if t is None else ref(t) for t in tiler)


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        (L.logical_divide, pycute.logical_divide),
        (L.zipped_divide, pycute.zipped_divide),
        (L.tiled_divide, pycute.tiled_divide),
    ],
)
@CHECK
@given(pow2_layouts, st.data())
def test_divides_by_mode(
    mine: Callable, theirs: Callable, a: L.Layout, data: st.DataObject
) -> None:
    tiler = _pow2_tiler(data, a)
    same_layout(mine(a, tiler), theirs(ref(a), _ref_tiler(tiler)))


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        (L.logical_product, pycute.logical_product),
        (L.zipped_product, pycute.zipped_product),
        (L.tiled_product, pycute.tiled_product),
    ],
)
@CHECK
@given(st.data())
def test_products_by_mode(mine: Callable, theirs: Callable, data: st.DataObject) -> None:
    modes = data.draw(st.lists(injective_layouts(pow2=True), min_size=1, max_size=3))
    a = L.make_layout(*modes)
    assume(L.size(a) <= 256)
    tiler = tuple(
        data.draw(st.one_of(st.none(), pow2_positive.filter(lambda t: L.size(t) <= 8)))
        for _ in range(data.draw(st.integers(1, L.rank(a))))
    )
    same_layout(mine(a, tiler), theirs(ref(a), _ref_tiler(tiler)))


# ---------------------------------------------------------------------------------------------
# Slicing and swizzles
# ---------------------------------------------------------------------------------------------


def _coords(shape: object) -> st.SearchStrategy:
    if isinstance(shape, tuple):
        return st.one_of(st.none(), st.tuples(*(_coords(s) for s in shape)))
    return st.one_of(st.none(), st.integers(0, shape - 1))


@CHECK
@given(layouts.filter(lambda x: isinstance(x.shape, tuple)), st.data())
def test_slice_and_offset(x: L.Layout, data: st.DataObject) -> None:
    crd = data.draw(st.tuples(*(_coords(s) for s in x.shape)))
    sub, offset = L.slice_and_offset(crd, x)
    their_sub, their_offset = pycute.slice_and_offset(crd, ref(x))
    assert offset == their_offset
    if None not in L.flatten(crd):
        # Nothing left: pycute's empty layout cannot be called, so compare the parts.
        assert (sub.shape, sub.stride, L.size(sub), sub(0)) == ((), (), 1, 0)
        return
    same_layout(sub, their_sub)
    same_layout(x(crd), their_sub)


@CHECK
@given(st.integers(0, 4), st.integers(0, 4), st.integers(-6, 6))
def test_swizzle(bits: int, base: int, shift: int) -> None:
    # pycute recurses forever on shift 0 (shiftr <-> shiftl); test_layout_algebra covers it.
    assume(abs(shift) >= bits and shift != 0)
    mine, theirs = L.Swizzle(bits, base, shift), pycute.Swizzle(bits, base, shift)
    assert (mine.yyy_mask, mine.zzz_mask) == (theirs.yyy_msk, theirs.zzz_msk)
    for offset in range(1 << 12):
        assert mine(offset) == theirs(offset)


@CHECK
@given(layouts, st.integers(0, 3), st.integers(0, 4), st.integers(1, 5), st.integers(0, 64))
def test_composed_layout(x: L.Layout, bits: int, base: int, shift: int, offset: int) -> None:
    assume(shift >= bits)
    mine = L.ComposedLayout(L.Swizzle(bits, base, shift), offset, x)
    theirs = pycute.ComposedLayout(pycute.Swizzle(bits, base, shift), offset, ref(x))
    assert L.size(mine) == theirs.size()
    for i in range(L.size(x)):
        assert mine(i) == theirs(i)


# ---------------------------------------------------------------------------------------------
# Where pycute is wrong: pin its answer beside CuTe C++'s (docs/layout-algebra.md lists these)
# ---------------------------------------------------------------------------------------------


def test_where_pycute_differs() -> None:
    # cosize with a negative stride: pycute's L(size-1)+1; C++ CuTe's is the offsets' span.
    assert pycute.cosize(pycute.Layout(4, -1)) == -2
    assert L.cosize(L.Layout(4, -1)) == 4
    # left_inverse: pycute inverts x with its complement; C++ CuTe sorts x's modes by stride.
    theirs = pycute.left_inverse(pycute.Layout(2, 2))
    assert (theirs.shape, theirs.stride) == ((2, 2), (2, 1))
    assert L.left_inverse(L.Layout(2, 2)) == L.Layout((2, 2), (0, 1))
    # complement of a non-injective layout: pycute returns a shape-0 layout; CuTe rejects it.
    assert pycute.complement(pycute.Layout((2, 2), (1, 1))).shape == 0
    with pytest.raises(L.LayoutError, match="overlap or interleave"):
        L.complement(L.Layout((2, 2), (1, 1)))
    # logical_product with an integer: pycute calls logical_divide.
    theirs = pycute.logical_product(pycute.Layout((2, 2), (1, 2)), 3)
    assert (theirs.shape, theirs.stride) == ((3, 2), (1, 3))
    assert L.logical_product(L.Layout((2, 2), (1, 2)), 3) == L.Layout(((2, 2), 3), ((1, 2), 4))
    # right_inverse with a stride-0 mode: pycute stops at it and returns 1:0.
    theirs = pycute.right_inverse(pycute.Layout((2, 4), (0, 1)))
    assert (theirs.shape, theirs.stride) == (1, 0)
    assert L.right_inverse(L.Layout((2, 4), (0, 1))) == L.Layout(4, 2)
    # Swizzle with shift 0 (the identity): pycute's shiftr/shiftl call each other forever.
    with pytest.raises(RecursionError):
        pycute.Swizzle(0, 4, 0)(5)
    assert L.Swizzle(0, 4, 0)(5) == 5

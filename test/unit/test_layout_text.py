"""CuTe's layout text: parsing, printing, round trips and errors with columns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilec import layout as L

CHECK = settings(max_examples=150, deadline=None, derandomize=True)


@pytest.mark.parametrize(
    ("text", "shape", "stride"),
    [
        ("((2,4),8):((1,16),2)", ((2, 4), 8), ((1, 16), 2)),
        ("(4,8)", (4, 8), (1, 4)),
        ("8:1", 8, 1),
        ("8", 8, 1),
        ("(4):(1)", (4,), (1,)),
        ("():()", (), ()),
        ("(4,8):(-1,0)", (4, 8), (-1, 0)),
        ("(_4,_8):(_8,_1)", (4, 8), (8, 1)),  # CuTe C++ prints static ints with `_`
        ("  ( 2 , ( 3 , 4 ) ) : ( 1 , ( 2 , 6 ) ) ", (2, (3, 4)), (1, (2, 6))),
    ],
)
def test_parse_layout(text: str, shape: L.IntTuple, stride: L.IntTuple) -> None:
    assert L.parse_layout(text) == L.Layout(shape, stride)


def test_parse_composed() -> None:
    want = L.ComposedLayout(L.Swizzle(3, 3, 3), 0, L.Layout((8, 64), (64, 1)))
    for text in [
        "swizzle<3,3,3> o (8,64):(64,1)",
        "Sw<3,3,3> o 0 o (8,64):(64,1)",
        "Swizzle<3, 3, 3> o (8,64):(64,1)",
    ]:
        assert L.parse_layout(text) == want
    neg = L.parse_layout("Sw<2,4,-4> o 16 o (8,8)")
    assert neg == L.ComposedLayout(L.Swizzle(2, 4, -4), 16, L.Layout((8, 8)))
    outer = L.parse_layout("8:2 o 1 o 4:1")
    assert outer == L.ComposedLayout(L.Layout(8, 2), 1, L.Layout(4, 1))
    assert outer(3) == 8


def test_dynamic_entries() -> None:
    x = L.parse_layout("(?,(4,?)):(1,(?,64))", allow_dynamic=True)
    assert x.shape == (L.DYN, (4, L.DYN)) and x.stride == (1, (L.DYN, 64))
    assert str(x) == "(?,(4,?)):(1,(?,64))"
    assert L.parse_layout("(?,8)", allow_dynamic=True).stride == (1, L.DYN)
    assert L.parse_int_tuple("(2,?)", allow_dynamic=True) == (2, L.DYN)
    with pytest.raises(L.LayoutError, match="dynamic entry '\\?' is not allowed") as info:
        L.parse_layout("(8,?)")
    assert info.value.col == 4


@pytest.mark.parametrize(
    ("text", "col", "message"),
    [
        ("(4,8", 5, "expected ',' or ')', found end of input"),
        ("(4,8):", 7, "expected an integer, '?' or '(', found end of input"),
        ("(4,8):(1,4) x", 13, "unexpected 'x' after the end"),
        ("(4;8)", 3, "unexpected character ';'"),
        ("(4,8):(1,(4,2))", 1, "not congruent"),
        ("(4,0)", 1, "shape entry 0 must be at least 1"),
        ("Sw<3,3> o 8:1", 7, "expected ',', found '>'"),
        ("Sw<3,3,3> 8:1", 11, "expected 'o' after a swizzle, found '8'"),
        ("Sw<3,3,2> o 8:1", 1, "|S| must be at least B"),
        ("", 1, "expected an integer, '?' or '(', found end of input"),
        ("(4,,8)", 4, "expected an integer, '?' or '(', found ','"),
    ],
)
def test_malformed_text(text: str, col: int, message: str) -> None:
    with pytest.raises(L.LayoutError) as info:
        L.parse_layout(text)
    assert message in info.value.message
    assert info.value.col == col


def _trees(leaf: st.SearchStrategy[int]) -> st.SearchStrategy:
    return st.recursive(leaf, lambda sub: st.lists(sub, max_size=3).map(tuple), max_leaves=6)


@st.composite
def layouts(draw: st.DrawFn) -> L.Layout:
    shape = draw(_trees(st.integers(1, 300)))

    def strides(s: L.IntTuple) -> st.SearchStrategy:
        if isinstance(s, tuple):
            return st.tuples(*(strides(x) for x in s))
        return st.integers(-1000, 1000)

    return L.Layout(shape, draw(strides(shape)))


@CHECK
@given(layouts())
def test_round_trip(x: L.Layout) -> None:
    assert L.parse_layout(str(x)) == x


@CHECK
@given(layouts(), st.integers(0, 5), st.integers(0, 5), st.integers(-8, 8), st.integers(0, 64))
def test_composed_round_trip(x: L.Layout, b: int, m: int, s: int, offset: int) -> None:
    if abs(s) < b:
        return
    c = L.ComposedLayout(L.Swizzle(b, m, s), offset, x)
    assert L.parse_layout(str(c)) == c


@CHECK
@given(_trees(st.integers(-50, 50)))
def test_int_tuple_round_trip(t: L.IntTuple) -> None:
    assert L.parse_int_tuple(L.tuple_str(t)) == t

"""The layout algebra on hand-worked CuTe examples, swizzles, properties and every LayoutError."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilec import layout as L

P = L.parse_layout
CHECK = settings(max_examples=40, deadline=None, derandomize=True)


def table(x: L.Layout) -> list[list[int]]:
    return [[x(m, n) for n in range(L.size(x, 1))] for m in range(L.size(x, 0))]


# ---------------------------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------------------------


def test_default_stride_is_compact_column_major() -> None:
    assert L.Layout((2, (3, 4))).stride == (1, (2, 6))
    assert L.Layout(8) == L.Layout(8, 1)
    assert L.Layout(()) == L.Layout((), ())


def test_call_forms_and_str() -> None:
    x = L.Layout(((2, 4), 8), ((1, 16), 2))
    assert str(x) == "((2,4),8):((1,16),2)"
    assert str(L.Layout(8, 1)) == "8:1"
    assert str(L.Layout((4,), (1,))) == "(4):(1)"
    assert x(9) == x((1, 0), 1) == x(((1, 0), 1)) == x((1, 1)) == 1 + 2
    assert x((5, 3)) == 1 + 32 + 6  # (5 -> (1,2) in (2,4)), 3*2
    assert [x(i) for i in range(4)] == [0, 1, 16, 17]


def test_modes_rank_depth_size() -> None:
    x = P("((2,4),8):((1,16),2)")
    assert x[0] == P("(2,4):(1,16)") and x[1] == P("8:2") and x[-1] == x[1]
    assert L.get(x, 0, 1) == P("4:16")
    assert L.shape(x, 0) == (2, 4) and L.stride(x, 1) == 2
    assert (L.rank(x), L.rank(x, 0), L.rank(x, 1)) == (2, 2, 1)
    assert (L.depth(x), L.depth(x, 1), L.depth(L.Layout(3))) == (2, 0, 0)
    assert (L.size(x), L.size(x, 0), L.cosize(x)) == (64, 8, 64)
    assert L.select(x, 1, 0) == P("(8,(2,4)):(2,(1,16))")
    assert list(P("8:1")) == [P("8:1")]
    assert len({x, P("((2,4),8):((1,16),2)")}) == 1


def test_dynamic_entries() -> None:
    x = P("(?,8):(1,?)", allow_dynamic=True)
    assert x.shape == (L.DYN, 8) and not L.is_static(x.shape)
    assert L.size(x) is L.DYN and L.Layout((8, L.DYN, 2)).stride == (1, 8, L.DYN)


def test_idx2crd_crd2idx() -> None:
    assert L.idx2crd(13, (2, (3, 4))) == (1, (0, 2))
    assert L.crd2idx((1, (0, 2)), (2, (3, 4)), (1, (2, 6))) == 13
    # The last mode is not wrapped: CuTe's linear extension past the size.
    assert L.idx2crd(9, (2, 4)) == (1, 4)
    assert P("(2,4):(1,2)")(9) == 9


def test_cosize_with_negative_strides() -> None:
    """The span of the offsets (C++ CuTe's coshape); pycute's L(size-1)+1 is no bound here."""
    assert L.cosize(P("4:-1")) == 4  # offsets 0 -1 -2 -3
    assert L.cosize(P("(4,2):(-1,4)")) == 8  # offsets -3 .. 4
    assert L.cosize(P("(4,2):(1,-4)")) == 8  # offsets -4 .. 3
    assert L.cosize(P("(64,64):(-64,1)")) == 4096  # offsets -4032 .. 63
    for x in (P("(4,2):(-1,4)"), P("(3,(2,5)):(7,(-1,-3))"), P("(64,64):(-64,1)")):
        offsets = [x(i) for i in range(L.size(x))]
        assert L.cosize(x) == max(offsets) - min(offsets) + 1


def test_make_layout_and_ordered() -> None:
    assert L.make_layout(P("4:1"), P("8:4")) == P("(4,8):(1,4)")
    assert L.make_layout(P("4:1")) == P("(4):(1)")
    assert L.make_ordered_layout((4, 8), (1, 0)) == P("(4,8):(8,1)")
    assert L.make_ordered_layout((2, 3, 4), (1, 2, 0)) == P("(2,3,4):(4,8,1)")


# ---------------------------------------------------------------------------------------------
# Coalesce, filter, composition: examples from CuTe's layout-algebra docs
# ---------------------------------------------------------------------------------------------


def test_coalesce() -> None:
    assert L.coalesce(P("(2,(1,6)):(1,(6,2))")) == P("12:1")
    assert L.coalesce(P("(4,(2,3)):(2,(8,16))")) == P("24:2")
    assert L.coalesce(P("(4,(2,3)):(2,(9,16))")) == P("(4,2,3):(2,9,16)")
    assert L.coalesce(P("(2,(1,6)):(1,(6,2))"), (1, 1)) == P("(2,6):(1,2)")
    assert L.coalesce(P("(1,1):(3,5)")) == P("1:0")
    assert L.filter(P("(2,4,3):(0,1,4)")) == P("12:1")


def test_composition_from_cute_docs() -> None:
    assert L.composition(P("20:2"), P("(5,4):(4,1)")) == P("(5,4):(8,2)")
    assert L.composition(P("(10,2):(16,4)"), P("(5,4):(1,5)")) == P("(5,(2,2)):(16,(80,4))")


def test_composition_brief_example() -> None:
    """(4,8):(8,1) o (2,2):(1,4): B(a,b) = a + 4b, split colex in (4,8) -> (a,b) -> 8a + b."""
    r = L.composition(P("(4,8):(8,1)"), P("(2,2):(1,4)"))
    assert r == P("(2,2):(8,1)")
    assert table(r) == [[0, 1], [8, 9]]


def test_composition_by_mode_and_int() -> None:
    a = P("(12,(4,8)):(59,(13,1))")
    assert L.composition(a, (P("3:4"), P("8:2"))) == P("(3,(2,4)):(236,(26,1))")
    assert L.composition(a, (3, None)) == P("(3,(4,8)):(59,(13,1))")
    assert L.composition(P("(4,8):(8,1)"), 2) == P("2:8")


def test_composition_with_swizzle_makes_composed_layout() -> None:
    c = L.composition(L.Swizzle(3, 3, 3), P("(8,64):(64,1)"))
    assert c == P("Sw<3,3,3> o 0 o (8,64):(64,1)")
    assert L.composition(c, (2, 8)) == P("Sw<3,3,3> o 0 o (2,8):(64,1)")


# ---------------------------------------------------------------------------------------------
# Complement and inverses
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        ("4:1", "6:4"),
        ("6:4", "4:1"),
        ("(4,6):(1,4)", "1:0"),
        ("4:2", "(2,3):(1,8)"),
        ("(2,4):(1,6)", "3:2"),
        ("(2,2):(1,6)", "(3,2):(2,12)"),
    ],
)
def test_complement_from_cute_docs(x: str, expected: str) -> None:
    assert L.complement(P(x), 24) == P(expected)


def test_complement_of_overlapping_modes_raises() -> None:
    """pycute returns a layout with a 0 in its shape; CuTe C++ rejects it."""
    with pytest.raises(L.LayoutError, match=r"complement of \(2,2\):\(1,1\) .*span 2"):
        L.complement(P("(2,2):(1,1)"))
    with pytest.raises(L.LayoutError, match=r"\(4,2\):\(1,2\) is not defined.*span 4"):
        L.complement(P("(4,2):(1,2)"), 16)
    # injective, but its modes interleave: the message must not call it non-injective
    with pytest.raises(L.LayoutError, match=r"mode 2:3 starts inside the span 6") as err:
        L.complement(P("(3,2):(2,3)"))
    assert "injective" not in str(err.value)


def test_right_inverse_with_stride_zero_mode() -> None:
    """pycute gives 1:0 (it stops at the stride-0 mode); CuTe finds the stride-1 mode."""
    x = P("(2,4):(0,1)")
    assert L.right_inverse(x) == P("4:2")
    assert [x(L.right_inverse(x)(i)) for i in range(4)] == [0, 1, 2, 3]


def test_inverses() -> None:
    assert L.right_inverse(P("(4,8):(8,1)")) == P("(8,4):(4,1)")
    # a negative stride reaches offsets only from outside the domain (C++ CuTe agrees), so
    # it neither extends a right inverse nor a common vector
    assert L.right_inverse(P("4:-1")) == P("1:0")
    assert L.right_inverse(P("(4,8):(1,-4)")) == P("4:1")
    assert L.max_common_vector(P("4:-1"), P("4:-1")) == 1
    assert L.max_common_vector(P("(4,8):(-1,4)"), P("(4,8):(-1,4)")) == 1
    assert L.left_inverse(P("(4,2):(2,1)")) == P("(2,4):(4,1)")
    x = P("(2,3):(3,1)")
    assert [L.left_inverse(x)(x(i)) for i in range(6)] == list(range(6))


# ---------------------------------------------------------------------------------------------
# Divide and product
# ---------------------------------------------------------------------------------------------


def test_logical_divide_from_cute_docs() -> None:
    assert L.logical_divide(P("(4,2,3):(2,1,8)"), P("4:2")) == P("((2,2),(2,3)):((4,1),(2,8))")


def test_divides_by_mode() -> None:
    a = P("(8,8):(8,1)")
    assert L.logical_divide(a, (2, 4)) == P("((2,4),(4,2)):((8,16),(1,4))")
    assert L.zipped_divide(a, (2, 4)) == P("((2,4),(4,2)):((8,1),(16,4))")
    assert L.tiled_divide(a, (2, 4)) == P("((2,4),4,2):((8,1),16,4)")
    assert L.flat_divide(a, (2, 4)) == P("(2,4,4,2):(8,1,16,4)")
    assert L.logical_divide(a, (None, 4)) == P("(8,(4,2)):(8,(1,4))")
    assert L.logical_divide(P("16:1"), 4) == P("(4,4):(1,4)")


def test_logical_product_from_cute_docs() -> None:
    assert L.logical_product(P("(2,2):(4,1)"), P("6:1")) == P("((2,2),(2,3)):((4,1),(2,8))")
    assert L.logical_product(P("(2,2):(4,1)"), P("(4,2):(2,1)")) == P("((2,2),(4,2)):((4,1),(8,2))")


def test_logical_product_with_integer() -> None:
    """pycute divides here (it calls logical_divide); CuTe makes the layout n:1 and multiplies."""
    assert L.logical_product(P("(2,2):(1,2)"), 3) == P("((2,2),3):((1,2),4)")


def test_products() -> None:
    a, b = P("(2,2):(1,2)"), P("(2,3):(1,2)")
    # mode 1 is 2:2, so its complement (2,2):(1,4) fills the gap at 1 first
    assert L.zipped_product(a, (2, 4)) == P("((2,2),(2,(2,2))):((1,2),(2,(1,4)))")
    assert L.tiled_product(a, (2, 4)) == P("((2,2),2,(2,2)):((1,2),2,(1,4))")
    assert L.flat_product(a, (2, 4)) == P("(2,2,2,(2,2)):(1,2,2,(1,4))")
    assert L.blocked_product(a, b) == P("((2,2),(2,3)):((1,4),(2,8))")
    assert L.raked_product(a, b) == P("((2,2),(3,2)):((4,1),(8,2))")


def test_blocked_and_raked_product_pictures() -> None:
    blocked = L.blocked_product(P("(2,2):(1,2)"), (2, 3))
    assert table(blocked) == [
        [0, 2, 8, 10, 16, 18],
        [1, 3, 9, 11, 17, 19],
        [4, 6, 12, 14, 20, 22],
        [5, 7, 13, 15, 21, 23],
    ]
    raked = L.raked_product(P("(2,2):(1,2)"), (2, 3))
    assert table(raked) == [
        [0, 8, 16, 2, 10, 18],
        [4, 12, 20, 6, 14, 22],
        [1, 9, 17, 3, 11, 19],
        [5, 13, 21, 7, 15, 23],
    ]


def test_blocked_product_cute_docs_tile() -> None:
    """The (2,5) row-major tile repeated over a (3,4) column-major grid of tiles."""
    tile, grid = P("(2,5):(5,1)"), P("(3,4):(1,3)")
    assert L.blocked_product(tile, grid) == P("((2,3),(5,4)):((5,10),(1,30))")
    assert L.raked_product(tile, grid) == P("((3,2),(4,5)):((10,5),(30,1))")


shapes2 = st.tuples(st.integers(1, 4), st.integers(1, 4))


@CHECK
@given(shapes2, st.booleans(), shapes2, st.integers(0, 3))
def test_blocked_and_raked_semantics(bs: tuple, row_major: bool, gs: tuple, gap: int) -> None:
    """For a compact block A: product(((a0,b0),(a1,b1))) = A(a0,a1) + size(A) * B(b0,b1)."""
    a = L.make_ordered_layout(bs, (1, 0) if row_major else (0, 1))
    b = L.Layout(gs, (1, gs[0] + gap))  # not compact when gap > 0
    blocked, raked = L.blocked_product(a, b), L.raked_product(a, b)
    for a0 in range(bs[0]):
        for a1 in range(bs[1]):
            for b0 in range(gs[0]):
                for b1 in range(gs[1]):
                    want = a(a0, a1) + L.size(a) * b(b0, b1)
                    assert blocked(((a0, b0), (a1, b1))) == want
                    assert raked(((b0, a0), (b1, a1))) == want


def test_tile_to_shape() -> None:
    r = L.tile_to_shape(P("(8,8):(8,1)"), (32, 64))
    assert r == P("(32,(8,8)):(8,(1,256))")
    assert r(0, 9) == 256 + 1  # column 9: second 8x8 block to the right, its column 1
    assert sorted(r(i) for i in range(L.size(r))) == list(range(32 * 64))
    assert L.tile_to_shape(P("(2,2):(1,2)"), (4, 4), (1, 0)) == P("((2,2),4):((1,8),2)")
    sw = L.tile_to_shape(P("Sw<3,3,3> o (8,64):(64,1)"), (128, 64, 3))
    assert sw == P("Sw<3,3,3> o 0 o (128,64,3):(64,1,8192)")


# ---------------------------------------------------------------------------------------------
# Vectors, recasts, slices
# ---------------------------------------------------------------------------------------------


def test_max_common_vector_and_layout() -> None:
    a, b = P("(4,8):(1,4)"), P("(4,8):(1,8)")
    assert L.max_common_vector(a, b) == 4
    assert L.max_common_layout(a, b) == P("4:1")
    assert L.max_common_vector(a, a) == 32
    assert L.max_common_vector(P("(8,64):(64,1)"), P("(8,64):(1,8)")) == 1
    assert L.max_common_layout(P("(8,64):(64,1)"), P("(8,64):(1,8)")) == P("1:0")
    rm = P("(8,64):(64,1)")
    assert L.max_common_layout(rm, rm) == P("(64,8):(8,1)")


def test_cute_preconditions() -> None:
    """C++ CuTe's conditions, not stricter ones (test_layout_cute.py runs CuTe itself)."""
    # shape divisibility lets the last mode taken be cut short: 3 of mode 8:5
    assert L.composition(P("(4,6,8,10):(2,3,5,7)"), P("6:12")) == P("(2,3):(9,5)")
    # stride divisibility allows a step smaller than the mode when the elements end there
    assert L.composition(P("(3,8):(8,1)"), P("2:2")) == P("2:16")
    assert L.composition(P("4:1"), P("2:-1")) == P("2:-1")
    assert L.composition(P("(4,8):(1,5)"), P("4:-2")) == P("(2,2):(-2,-5)")
    # left_inverse: each stride a multiple of the next smaller one
    x = P("(4,16):(1,8)")
    assert [L.left_inverse(x)(x(i)) for i in range(L.size(x))] == list(range(L.size(x)))
    assert L.upcast(P("3:1"), 2) == P("2:1")  # the partial last vector rounds up
    assert L.upcast(P("(3,8):(1,-1)"), 2) == P("(2,4):(1,-1)")


def test_int_tuple_functions() -> None:
    assert L.shape_div((4, 5, 6), 40) == (1, 1, 3)
    assert L.shape_div((4, 5), (2, 5)) == (2, 1)
    assert L.shape_div(6, (2, 3)) == 1
    assert L.shape_div(2, 8) == 1
    assert L.shape_div((2, 8), 4) == (1, 4)
    assert L.inner_product((1, (2, 3)), (4, (5, 6))) == 32
    assert L.inner_product(3, -4) == -12
    assert L.is_int(3) and not L.is_int(True) and not L.is_int((3,)) and not L.is_int(L.DYN)


def test_upcast_downcast() -> None:
    assert L.upcast(P("(8,64):(64,1)"), 8) == P("(8,8):(8,1)")
    assert L.downcast(P("(8,8):(8,1)"), 8) == P("(8,64):(64,1)")
    assert L.upcast(P("(4,8):(1,4)"), 2) == P("(2,8):(1,2)")
    assert L.upcast(P("(4,8):(0,4)"), 4) == P("(4,8):(0,1)")


def test_recast_swizzled_layouts() -> None:
    """Swizzle<3,3,3> on f16 is Swizzle<3,4,3> on bytes and Swizzle<3,0,3> on 16-byte vectors."""
    f16 = P("Sw<3,3,3> o (8,64):(64,1)")
    as_bytes = L.downcast(f16, 2)
    assert as_bytes == P("Sw<3,4,3> o 0 o (8,128):(128,1)")
    assert L.upcast(f16, 8) == P("Sw<3,0,3> o 0 o (8,8):(8,1)")
    assert L.upcast(as_bytes, 2) == f16
    for r in range(8):
        for c in range(64):
            assert as_bytes(r, 2 * c) == 2 * f16(r, c)
    assert L.upcast(P("Sw<3,3,3> o 8 o (8,64):(64,1)"), 8).offset == 1


def test_slice() -> None:
    x = P("((2,3),4):((1,2),6)")
    assert L.slice((None, 2), x) == P("((2,3)):((1,2))")
    assert L.slice(((None, 0), None), x) == P("(2,4):(1,6)")
    assert x(((1, None), None)) == P("(3,4):(2,6)")
    assert L.slice_and_offset(((1, None), 3), x) == (P("(3):(2)"), 1 + 18)
    assert L.slice(None, x) == x


# ---------------------------------------------------------------------------------------------
# Swizzles
# ---------------------------------------------------------------------------------------------


def test_swizzle_bits() -> None:
    sw = L.Swizzle(3, 3, 3)
    assert (sw.yyy_mask, sw.zzz_mask) == (0b111_000_000, 0b000_111_000)
    assert sw(0b101_011_110) == 0b101_110_110  # zzz 011 ^ yyy 101
    neg = L.Swizzle(2, 0, -3)  # yyy is below zzz: bits 0-1 xor into bits 3-4
    assert (neg.yyy_mask, neg.zzz_mask) == (0b00011, 0b11000)
    assert neg(0b00011) == 0b11011
    assert all(L.Swizzle(0, 4, 0)(i) == i for i in range(64))  # pycute recurses forever here
    assert str(sw) == "Sw<3,3,3>"


def test_swizzle_is_a_bijection_on_its_period() -> None:
    for b, m, s in [(3, 3, 3), (3, 4, 3), (2, 3, 3), (2, 4, -4)]:
        sw = L.Swizzle(b, m, s)
        period = 1 << (b + m + abs(s))
        assert sorted(sw(i) for i in range(period)) == list(range(period))


def _bank_groups(layout: L.ComposedLayout, chunk: int, elem_bytes: int) -> set[int]:
    """The 16-byte bank groups (of a 128-byte line) hit by the 8 rows' `chunk`-th 16 bytes."""
    per_chunk = 16 // elem_bytes
    return {(layout(r, chunk * per_chunk) * elem_bytes // 16) % 8 for r in range(8)}


@pytest.mark.parametrize(
    ("spec", "elem_bytes", "chunks"),
    [
        ("Sw<3,3,3> o (8,64):(64,1)", 2, 8),  # f16, 128-byte rows
        ("Sw<3,4,3> o (8,128):(128,1)", 1, 8),  # bytes, 128-byte rows
        ("Sw<2,3,3> o (8,32):(32,1)", 2, 4),  # f16, 64-byte rows: two rows per 128-byte line
    ],
)
def test_swizzles_spread_a_column_over_all_banks(spec: str, elem_bytes: int, chunks: int) -> None:
    """Reading one 16-byte column chunk down 8 rows hits 8 different bank groups."""
    swizzled = P(spec)
    for c in range(chunks):
        assert len(_bank_groups(swizzled, c, elem_bytes)) == 8
    # ... which the plain row-major layout does not: its 8 rows share one bank group
    # (or two, with 64-byte rows).
    assert len(_bank_groups(swizzled.inner, 0, elem_bytes)) <= 2


def test_composed_layout_call_and_str() -> None:
    c = P("Sw<3,3,3> o (8,64):(64,1)")
    assert str(c) == "Sw<3,3,3> o 0 o (8,64):(64,1)"
    assert c(1, 0) == 64 ^ 8
    assert c(1, 8) == (64 + 8) ^ 8
    assert L.size(c) == 512 and L.rank(c) == 2 and L.shape(c) == (8, 64)


# ---------------------------------------------------------------------------------------------
# Errors: each names the operands and the violated condition
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (
            lambda: L.composition(P("(8,32):(32,1)"), P("(3,4):(1,3)")),
            r"composition of \(8,32\):\(32,1\) with \(3,4\):\(1,3\) is not defined: "
            r"shape 4 and mode 8:32 .* \(shape divisibility condition\)",
        ),
        (
            lambda: L.composition(P("(2,8):(1,5)"), P("2:3")),
            r"composition of \(2,8\):\(1,5\) with 2:3 .*stride 3 and mode 2:1 .*"
            r"\(stride divisibility condition\)",
        ),
        (
            lambda: L.composition(P("(4,8):(1,4)"), (2, 2, 2)),
            r"composition of \(4,8\):\(1,4\) with \(2,2,2\) .*3 modes but the layout has rank 2",
        ),
        (
            lambda: L.logical_divide(P("(4,8):(1,4)"), (2, 2, 2)),
            r"logical_divide of \(4,8\):\(1,4\) .*3 modes but the layout has rank 2",
        ),
        (
            lambda: L.zipped_divide(P("8:1"), (2, 2)),
            r"zipped_divide of 8:1 .*2 modes but the layout has rank 1",
        ),
        (
            lambda: L.logical_product(P("(4,8):(1,4)"), (2, 2, 2)),
            r"logical_product of \(4,8\):\(1,4\) .*rank 2",
        ),
        (
            lambda: L.tiled_product(P("8:1"), (2, 2)),
            r"tiled_product of 8:1 .*rank 1",
        ),
        (lambda: L.coalesce(P("8:1"), (1, 1)), r"coalesce of 8:1 .*the profile has 2 modes"),
        (lambda: L.complement(P("(2,2):(1,1)")), r"overlap or interleave"),
        (lambda: L.complement(P("4:-1")), r"complement of 4:-1 .*negative stride"),
        (lambda: L.complement(P("4:1"), 0), r"cotarget 0"),
        (
            lambda: L.left_inverse(P("(4,1,16):(3,0,8)")),
            r"left_inverse of \(4,1,16\):\(3,0,8\) is not defined: stride 8 is not a multiple "
            r"of the next smaller stride 3 \(left inverse divisibility condition\)",
        ),
        (lambda: L.left_inverse(P("4:-1")), r"left_inverse of 4:-1 .*negative stride -1"),
        (
            lambda: L.tile_to_shape(P("(8,8):(8,1)"), (12, 64)),
            r"tile_to_shape of \(8,8\):\(8,1\) to \(12,64\) .*block size 8 does not divide "
            r"target size 12 in mode 0",
        ),
        (lambda: L.tile_to_shape(P("(2,2,2)"), (4, 4)), r"block has rank 3, more than .* 2"),
        (lambda: L.upcast(P("4:3"), 2), r"upcast of 4:3 by 2 .*mode 4:3 .*divisibility condition"),
        (lambda: L.downcast(P("(4,8):(2,8)"), 2), r"downcast of .* no mode has stride 1"),
        (
            lambda: L.upcast(P("Sw<3,3,3> o (8,64):(64,1)"), 16),
            r"upcast of Sw<3,3,3> o 0 o \(8,64\):\(64,1\) by 16 .*keeps only 8 elements together",
        ),
        (lambda: L.upcast(P("Sw<3,3,3> o 4 o 64:1"), 8), r"offset 4 is not a multiple of 8"),
        (lambda: L.downcast(P("8:1 o 0 o 64:1"), 2), r"needs a swizzle outside"),
        (lambda: L.stride(P("Sw<3,3,3> o 64:1")), r"has no strides"),
        (lambda: L.Layout((2, 4), (1,)), r"shape \(2,4\) and stride \(1\) are not congruent"),
        (lambda: L.Layout((2, 0)), r"shape entry 0 must be at least 1"),
        (lambda: L.Layout("8"), r"shape entry '8' is not an integer"),
        (lambda: L.Swizzle(3, 3, 2), r"Sw<3,3,2> .*\|S\| must be at least B"),
        (lambda: L.Swizzle(-1, 3, 2), r"B and M must be >= 0"),
        (lambda: P("(4,8)")[2], r"mode 2 of \(4,8\):\(1,4\) does not exist"),
        (lambda: P("(4,8)")((1, 2, 3)), r"coordinate \(1,2,3\) does not match shape \(4,8\)"),
        (lambda: L.slice((None, 1, 2), P("(4,8)")), r"coordinate \(_,1,2\) does not match"),
        (
            lambda: L.composition(P("(?,8)", allow_dynamic=True), P("2:1")),
            r"composition of \(\?,8\):\(1,\?\) needs a static layout",
        ),
        (lambda: L.make_ordered_layout((2, 4), (0,)), r"order \(0\) does not match"),
        (lambda: L.shape_div(3, 2), r"shape_div of 3 by 2 .*\(divisibility condition\)"),
        (lambda: L.shape_div((2, 3), (1, 1, 1)), r"shape_div of \(2,3\) by \(1,1,1\) .*rank"),
        (lambda: L.inner_product((2, 3), 4), r"inner_product of \(2,3\) and 4 .*not congruent"),
    ],
)
def test_errors(call: object, pattern: str) -> None:
    with pytest.raises(L.LayoutError, match=pattern):
        call()


@settings(max_examples=400, derandomize=True, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 6), st.integers(0, 12)), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(1, 8), st.integers(-12, 12)), min_size=1, max_size=2),
)
def test_composition_is_the_composition_or_raises(
    lhs_modes: list[tuple[int, int]], rhs_modes: list[tuple[int, int]]
) -> None:
    """No silent wrong answers: each mode k of what composition returns is the function
    i -> lhs(rhs[k](i)) wherever rhs[k](i) lies in lhs's domain, lhs(-i) read as -lhs(i) for
    negative strides. (CuTe composes a tuple rhs mode by mode, so across modes the result is
    the by-mode one, not lhs(rhs(i)); past the domain CuTe extends lhs's coalesced last
    mode, which a size-1 lhs coalesced to 1:0 does not keep.)"""
    lhs = L.Layout(tuple(s for s, _ in lhs_modes), tuple(d for _, d in lhs_modes))
    rhs = L.Layout(tuple(s for s, _ in rhs_modes), tuple(d for _, d in rhs_modes))
    try:
        mine = L.composition(lhs, rhs)
    except L.LayoutError:
        return
    assert len(mine) == len(rhs)
    for k in range(len(rhs)):
        for i in range(L.size(rhs[k])):
            j = rhs[k](i)
            if abs(j) < L.size(lhs):
                want = lhs(j) if j >= 0 else -lhs(-j)
                assert mine[k](i) == want, f"{lhs} o {rhs} = {mine}: mode {k} at {i}"

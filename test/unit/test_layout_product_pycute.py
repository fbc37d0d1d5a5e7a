"""logical_product (and the zipped/tiled forms by mode) on non-power-of-two and non-divisible
blocks and tilers, exhaustively over a fixed grid of small layouts: against pycute index by
index where both accept, and against the definition `(A, complement(A, size(A) * cosize(B))
o B)` evaluated point by point wherever tilec accepts. Layout tilers only: pycute's
logical_product with an integer tiler is wrong (test_layout_pycute.test_where_pycute_differs)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pycute
import pytest

from tilec import layout as L


def blocks() -> list[L.Layout]:
    """Injective blocks of sizes 3..15: compact, gapped, row- and column-major."""
    out = [L.Layout(n, d) for n in (3, 5, 6, 7) for d in (1, 2, 3)]
    for a, b in ((2, 3), (3, 2), (3, 5), (2, 5), (5, 3)):
        out += [
            L.Layout((a, b), (1, a)),  # compact column-major
            L.Layout((a, b), (b, 1)),  # compact row-major
            L.Layout((a, b), (1, a + 1)),  # a gap after each column
            L.Layout((a, b), (2, 2 * a + 1)),
            L.Layout((a, b), (3 * b, 1)),
        ]
    return out


def tilers() -> list[L.Layout]:
    """Tilers of sizes 1..25, strides 0..3, one and two modes (broadcast, gapped, transposed)."""
    out = [L.Layout(n, d) for n in range(1, 8) for d in (0, 1, 2, 3)]
    for s in ((2, 3), (3, 2), (3, 3), (2, 5), (5, 5)):
        for d in ((1, s[0]), (s[1], 1), (1, s[0] + 1), (2, 1), (0, 1)):
            out.append(L.Layout(s, d))
    return out


CASES = list(itertools.product(blocks(), tilers()))


def ref(x: L.Layout) -> pycute.Layout:
    return pycute.Layout(x.shape, x.stride)


def by_definition(a: L.Layout, b: L.Layout) -> Callable[[int, int], int]:
    rest = L.complement(a, L.size(a) * L.cosize(b))
    return lambda i, j: a(i) + rest(b(j))


def accepted(a: L.Layout, b: L.Layout) -> L.Layout | None:
    try:
        return L.logical_product(a, b)
    except L.LayoutError:
        return None


def pycute_product(a: L.Layout, b: L.Layout) -> pycute.Layout | None:
    try:
        return pycute.logical_product(ref(a), ref(b))
    except AssertionError:  # pycute refuses with a bare assert (its divisibility checks)
        return None


# Composition by mode adds the images of B's modes under the complement, which is the
# composition only where the complement is linear across the sums: complement(3:3, 15) =
# (3,2):(1,9) o (2,3):(2,1) would come out (2,3):(2,1) (0 2 1 3 2 4), but (3,2):(1,9) at
# 0 2 1 3 2 4 is 0 2 1 9 2 10. tilec accepted these 9 products until compose.py checked that
# the modes' digits do not carry; pycute (like C++ CuTe) refuses them.
CARRYING_PRODUCTS = [
    (a, b) for a, b in CASES if pycute_product(a, b) is None and b == L.Layout((2, 3), (2, 1))
]


def test_the_grid_is_not_trivial() -> None:
    """Most cases are accepted by both, many are not powers of two and many are non-divisible
    (size(B) does not divide or is not divided by the complement's modes)."""
    both = [
        (a, b) for a, b in CASES if accepted(a, b) is not None and pycute_product(a, b) is not None
    ]
    odd = [(a, b) for a, b in both if L.size(a) % 2 or L.size(b) % 2]
    refused = [(a, b) for a, b in CASES if accepted(a, b) is None]
    assert len(CASES) == 37 * 53 and len(both) > 1400 and len(odd) > 1000 and len(refused) > 400
    assert len(CARRYING_PRODUCTS) >= 9


def test_logical_product_agrees_with_pycute() -> None:
    compared = 0
    for a, b in CASES:
        mine, theirs = accepted(a, b), pycute_product(a, b)
        if mine is None or theirs is None:
            continue
        assert L.size(mine) == pycute.size(theirs), (a, b)
        for i in range(L.size(mine)):
            assert mine(i) == theirs(i), (a, b, i)
        assert mine.shape == theirs.shape, (a, b)
        compared += 1
    assert compared > 1400


def test_logical_product_is_its_definition() -> None:
    """Wherever tilec accepts: mode 0 is A, mode 1 is the complement composed with B."""
    for a, b in CASES:
        mine = accepted(a, b)
        if mine is None:
            continue
        assert mine[0] == a
        f = by_definition(a, b)
        for i, j in itertools.product(range(L.size(a)), range(L.size(b))):
            assert mine(i, j) == f(i, j), (a, b, i, j)


def test_refusals_are_where_the_product_does_not_exist() -> None:
    """Where tilec refuses, pycute refuses too or returns a mode 1 that is not the complement
    composed with B (CuTe's result there is not the product)."""
    for a, b in CASES:
        if accepted(a, b) is not None:
            continue
        theirs = pycute_product(a, b)
        if theirs is None:
            continue
        rest = pycute.Layout(theirs.shape[1], theirs.stride[1])
        f = by_definition(a, b)
        assert pycute.size(rest) != L.size(b) or any(
            rest(j) != f(0, j) for j in range(L.size(b))
        ), (a, b)


@pytest.mark.parametrize(("a", "b"), CARRYING_PRODUCTS, ids=str)
def test_products_whose_modes_carry_are_refused(a: L.Layout, b: L.Layout) -> None:
    f = by_definition(a, b)
    try:
        mine = L.logical_product(a, b)
    except L.LayoutError as e:
        assert "carry" in str(e)
        return
    assert [mine(i, j) for i in range(L.size(a)) for j in range(L.size(b))] == [
        f(i, j) for i in range(L.size(a)) for j in range(L.size(b))
    ]


def test_composition_with_two_modes_crossing_a_mode_of_lhs() -> None:
    """The smallest case: (3,2):(1,9) o (2,2):(1,2) must be 0 1 2 9 or an error (pycute
    refuses it); tilec gave (2,2):(1,2), 0 1 2 3, and now refuses it."""
    lhs, rhs = L.Layout((3, 2), (1, 9)), L.Layout((2, 2), (1, 2))
    with pytest.raises(L.LayoutError, match="carry across its end"):
        L.composition(lhs, rhs)


def test_accepted_compositions_are_compositions() -> None:
    """Every composition tilec accepts over a grid of small layouts is lhs(rhs(c)) for every c
    whose rhs(c) lies in lhs's domain, and every refusal has a coordinate where composing mode
    by mode would differ from it (so the check refuses nothing it could have built)."""
    shapes = (1, 2, 3, 4, 6)
    lhss = [
        L.Layout((a, b), (c, d))
        for a in shapes
        for b in shapes
        for c in (0, 1, 2, 3)
        for d in (1, 4, 9)
    ]
    rhss = [
        L.Layout((a, b), (c, d))
        for a in (2, 3, 4)
        for b in (2, 3)
        for c in (0, 1, 2)
        for d in (1, 2, 3)
    ]
    accepted_n = refused_n = 0
    for lhs, rhs in itertools.product(lhss, rhss):
        n = L.size(rhs)
        if max(rhs(k) for k in range(n)) >= L.size(lhs):
            continue
        try:
            mine = L.composition(lhs, rhs)
        except L.LayoutError as e:
            if "carry" not in str(e):
                continue
            refused_n += 1
            by_mode = [
                lhs(rhs.stride[0] * (k % rhs.shape[0])) + lhs(rhs.stride[1] * (k // rhs.shape[0]))
                for k in range(n)
            ]
            assert by_mode != [lhs(rhs(k)) for k in range(n)], (lhs, rhs)
            continue
        accepted_n += 1
        assert [mine(k) for k in range(n)] == [lhs(rhs(k)) for k in range(n)], (lhs, rhs)
    assert accepted_n > 1000 and refused_n > 100, (accepted_n, refused_n)


TWO_MODE_BLOCKS = [x for x in blocks() if L.rank(x) == 2]
TWO_MODE_TILERS = [x for x in tilers() if L.rank(x) == 2 and 0 not in L.flatten(x.stride)]


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        (L.logical_product, pycute.logical_product),
        (L.zipped_product, pycute.zipped_product),
        (L.tiled_product, pycute.tiled_product),
    ],
    ids=["logical", "zipped", "tiled"],
)
def test_products_by_mode_agree_with_pycute(mine: Callable, theirs: Callable) -> None:
    """A tuple tiler (one layout per mode of the block), non-power-of-two throughout."""
    compared = 0
    for a, t in itertools.product(TWO_MODE_BLOCKS, TWO_MODE_TILERS):
        tiler = (L.Layout(t.shape[0], t.stride[0]), L.Layout(t.shape[1], t.stride[1]))
        try:
            got = mine(a, tiler)
        except L.LayoutError:
            continue
        want = theirs(ref(a), tuple(ref(x) for x in tiler))
        assert got.shape == want.shape, (a, tiler)
        assert [got(i) for i in range(L.size(got))] == [want(i) for i in range(L.size(got))]
        compared += 1
    assert compared >= 150

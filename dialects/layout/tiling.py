"""The CuTe layout algebra, part three: divides, products, tile_to_shape, the largest common
vector, upcast/downcast and slicing."""

from __future__ import annotations

from collections.abc import Callable

from tilec.dialects.layout.compose import complement, composition, right_inverse
from tilec.dialects.layout.core import (
    AnyLayout,
    ComposedLayout,
    Layout,
    LayoutLike,
    Swizzle,
    Tiler,
    _as_layout,
    _by_mode,
    _on_inner,
    _pad,
    _require_static,
    coalesce,
    cosize,
    make_layout,
    make_ordered_layout,
    shape,
    size,
    stride,
)
from tilec.dialects.layout.int_tuple import (
    DYN,
    Coord,
    IntTuple,
    LayoutError,
    ceil_div,
    crd2idx,
    flatten,
    is_tuple,
    product,
    tiler_str,
    tuple_str,
)

# ---------------------------------------------------------------------------------------------
# Divide and product
# ---------------------------------------------------------------------------------------------


def logical_divide(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    """Split x into (tile, rest): `x o (tiler, complement(tiler, size(x)))`; by mode for a tuple."""
    if isinstance(x, ComposedLayout):
        return _on_inner(x, lambda inner: logical_divide(inner, tiler))
    x = _as_layout(x)
    if tiler is None:
        return x
    if is_tuple(tiler):
        return _by_mode("logical_divide", x, tiler, logical_divide)
    t = _as_layout(tiler)
    return composition(x, make_layout(t, complement(t, size(x))))


def split_mode(m: Layout, n: int) -> tuple[Layout, Layout]:
    """Mode `m` divided by `n`, as logical_divide: its first n elements, and how those repeat
    (a tensor's mode tiled by `local_tile`). A flat mode may have runtime (DYN) entries and
    need not divide (a ragged global edge: ceil(extent / n) tiles); a nested one is divided
    by the algebra, which must define it.

        (64,2):(1,8192) by 32  ->  32:1 and (2,2):(32,8192)
    """
    if is_tuple(m.shape):
        divided = logical_divide(m, n)
        return divided[0], divided[1]
    count = DYN if m.shape is DYN else -(-m.shape // n)
    return Layout(n, m.stride), Layout(count, DYN if m.stride is DYN else m.stride * n)


def logical_product(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    """(x, tiler's layout of copies of x): `(x, complement(x, size(x)*cosize(t)) o t)`."""
    if isinstance(x, ComposedLayout):
        return _on_inner(x, lambda inner: logical_product(inner, tiler))
    x = _as_layout(x)
    if tiler is None:
        return x
    if is_tuple(tiler):
        return _by_mode("logical_product", x, tiler, logical_product)
    t = _as_layout(tiler)
    return make_layout(x, composition(complement(x, size(x) * cosize(t)), t))


def _zip(op: str, fn: Callable[[Layout, Tiler], Layout], x: Layout, tiler: Tiler) -> Layout:
    """Gather a by-mode divide/product ((t0,r0),(t1,r1),...,z) into ((t0,t1,...),(r0,r1,...,z))."""
    if tiler is None:
        return make_layout(Layout(1, 0), x)
    if not is_tuple(tiler):
        return fn(x, tiler)
    if len(tiler) > len(x):
        raise LayoutError(
            f"{op} of {x} with {tiler_str(tiler)} is not defined: the tiler has "
            f"{len(tiler)} modes but the layout has rank {len(x)}"
        )
    pairs = [_zip(op, fn, x[i], t) for i, t in enumerate(tiler)]
    tiles = make_layout(*(p[0] for p in pairs))
    rests = make_layout(*(p[1] for p in pairs), *(x[i] for i in range(len(tiler), len(x))))
    return make_layout(tiles, rests)


def zipped_divide(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    """((tile modes...), (rest modes...))."""
    return _tiled_form("zipped_divide", logical_divide, x, tiler, None)


def tiled_divide(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    """((tile modes...), rest0, rest1, ...)."""
    return _tiled_form("tiled_divide", logical_divide, x, tiler, False)


def flat_divide(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    """(tile0, tile1, ..., rest0, rest1, ...)."""
    return _tiled_form("flat_divide", logical_divide, x, tiler, True)


def zipped_product(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    return _tiled_form("zipped_product", logical_product, x, tiler, None)


def tiled_product(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    return _tiled_form("tiled_product", logical_product, x, tiler, False)


def flat_product(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    return _tiled_form("flat_product", logical_product, x, tiler, True)


def _tiled_form(
    name: str,
    op: Callable[[Layout, Tiler], Layout],
    x: AnyLayout | LayoutLike,
    tiler: Tiler,
    flat: bool | None,
) -> AnyLayout:
    """`op` by mode, zipped into (tiles, rests); then unpacked: the rest modes (`flat` False)
    or every mode (`flat` True) at the top level, or neither (None)."""

    def form(inner: Layout) -> Layout:
        zipped = _zip(name, op, inner, tiler)
        return zipped if flat is None else _unpack(zipped, flat)

    return _on_inner(x, form)


def _unpack(zipped: Layout, first_too: bool) -> Layout:
    head = list(zipped[0]) if first_too else [zipped[0]]
    return make_layout(*head, *zipped[1])


def _interleave(x: LayoutLike, tiler: LayoutLike, block_first: bool) -> AnyLayout:
    if isinstance(x, ComposedLayout):
        return _on_inner(x, lambda inner: _interleave(inner, tiler, block_first))
    x, t = _as_layout(x), _as_layout(tiler)
    r = max(len(x), len(t))
    prod = logical_product(_pad(x, r), _pad(t, r))
    block, grid = prod[0], prod[1]
    pairs = [(block[i], grid[i]) if block_first else (grid[i], block[i]) for i in range(r)]
    return make_layout(*(make_layout(a, b) for a, b in pairs))


def blocked_product(x: AnyLayout | LayoutLike, tiler: LayoutLike) -> AnyLayout:
    """Copies of the block x laid out by `tiler`, mode by mode: ((x0,t0),(x1,t1),...).

    blocked_product((2,2):(1,2), (2,3)):    0  2 |  8 10 | 16 18
                                            1  3 |  9 11 | 17 19
                                           ------+-------+------
                                            4  6 | 12 14 | 20 22
                                            5  7 | 13 15 | 21 23
    """
    return _interleave(x, tiler, True)


def raked_product(x: AnyLayout | LayoutLike, tiler: LayoutLike) -> AnyLayout:
    """Like blocked_product with each mode's halves swapped ((t0,x0),(t1,x1),...): the copies
    interleave element by element instead of sitting side by side.

        raked_product((2,2):(1,2), (2,3)):      0  8 16  2 10 18
                                                4 12 20  6 14 22
                                                1  9 17  3 11 19
                                                5 13 21  7 15 23
    """
    return _interleave(x, tiler, False)


def tile_to_shape(
    block: AnyLayout | LayoutLike, target: IntTuple, order: IntTuple | None = None
) -> AnyLayout:
    """Repeat `block` (blocked, copies ordered by `order`) until it covers `target`."""
    if isinstance(block, ComposedLayout):
        return _on_inner(block, lambda inner: tile_to_shape(inner, target, order))
    block = _as_layout(block)
    trg = target if is_tuple(target) else (target,)
    if len(block) > len(trg):
        raise LayoutError(
            f"tile_to_shape of {block} to {tuple_str(target)} is not defined: the block has "
            f"rank {len(block)}, more than the target's {len(trg)}"
        )
    padded = _pad(block, len(trg))
    counts = []
    for i, t in enumerate(trg):
        b, n = size(padded, i), product(t)
        if n % b != 0:
            raise LayoutError(
                f"tile_to_shape of {block} to {tuple_str(target)} is not defined: block size "
                f"{b} does not divide target size {n} in mode {i}"
            )
        counts.append(n // b)
    counts_t = tuple(counts)
    return coalesce(blocked_product(padded, make_ordered_layout(counts_t, order)), counts_t)


# ---------------------------------------------------------------------------------------------
# Vectorisation and recasting
# ---------------------------------------------------------------------------------------------


def max_common_layout(a: LayoutLike, b: LayoutLike) -> Layout:
    """The largest layout L with a(L(i)) == b(L(i)) == i-th contiguous element of both."""
    a, b = _as_layout(a), _as_layout(b)
    inv_b = right_inverse(b)
    common = coalesce(composition(a, inv_b))
    if stride(common, 0) != 1:
        return Layout(1, 0)
    return composition(inv_b, common[0])


def max_common_vector(a: LayoutLike, b: LayoutLike) -> int:
    """How many elements a and b both keep contiguous from index 0 (the widest common vector)."""
    common = coalesce(composition(_as_layout(a), right_inverse(b)))
    return shape(common, 0) if stride(common, 0) == 1 else 1


def _recast_swizzled(op: str, x: ComposedLayout, n: int, up: bool) -> ComposedLayout:
    """Swizzle<B,M,S> over elements is Swizzle<B,M-log2(n),S> over n-element vectors."""
    if not isinstance(x.outer, Swizzle) or n < 1 or n & (n - 1):
        raise LayoutError(
            f"{op} of {x} by {n} is not defined: needs a swizzle outside and a power-of-two n"
        )
    sw, k = x.outer, n.bit_length() - 1
    base = sw.base - k if up else sw.base + k
    if base < 0 or (up and x.offset % n):
        raise LayoutError(
            f"{op} of {x} by {n} is not defined: the swizzle keeps only {1 << sw.base} "
            f"elements together, fewer than {n}"
            if base < 0
            else f"{op} of {x} by {n} is not defined: offset {x.offset} is not a multiple of {n}"
        )
    offset = x.offset // n if up else x.offset * n
    inner = upcast(x.inner, n) if up else downcast(x.inner, n)
    return ComposedLayout(Swizzle(sw.bits, base, sw.shift), offset, inner)


def upcast(x: AnyLayout | LayoutLike, n: int) -> AnyLayout:
    """View x in units of n elements (e.g. f16 -> 128-bit vectors: n = 8)."""
    if isinstance(x, ComposedLayout):
        return _recast_swizzled("upcast", x, n, True)
    x = _as_layout(x)
    _require_static("upcast", x)

    def up(s: IntTuple, d: IntTuple) -> tuple[IntTuple, IntTuple]:
        if is_tuple(s):
            pairs = [up(a, b) for a, b in zip(s, d, strict=True)]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        if d == 0:
            return s, d
        if d % n and n % d:
            raise LayoutError(
                f"upcast of {x} by {n} is not defined: the stride of mode {s}:{d} and {n} "
                "do not divide one another (divisibility condition)"
            )
        sign = 1 if d > 0 else -1
        return ceil_div(s, ceil_div(n, abs(d))), sign * ceil_div(abs(d), n)

    return Layout(*up(x.shape, x.stride))


def downcast(x: AnyLayout | LayoutLike, n: int) -> AnyLayout:
    """View x in units of 1/n elements: unit-stride modes grow n times, other strides scale."""
    if isinstance(x, ComposedLayout):
        return _recast_swizzled("downcast", x, n, False)
    x = _as_layout(x)
    _require_static("downcast", x)
    if 1 not in flatten(x.stride):
        raise LayoutError(
            f"downcast of {x} by {n} is not defined: no mode has stride 1, so no elements "
            "are adjacent to split"
        )

    def down(s: IntTuple, d: IntTuple) -> tuple[IntTuple, IntTuple]:
        if is_tuple(s):
            pairs = [down(a, b) for a, b in zip(s, d, strict=True)]
            return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        return (s * n, d) if abs(d) == 1 else (s, d * n)

    return Layout(*down(x.shape, x.stride))


# ---------------------------------------------------------------------------------------------
# Slicing
# ---------------------------------------------------------------------------------------------


def _slice_tuple(crd: Coord, t: IntTuple) -> tuple:
    """The parts of t under `None`; nested results are joined one level (CuTe's filter_tuple)."""
    if is_tuple(crd):
        if not is_tuple(t) or len(crd) != len(t):
            raise LayoutError(f"coordinate {tiler_str(crd)} does not match shape {tuple_str(t)}")
        return tuple(e for c, x in zip(crd, t, strict=True) for e in _slice_tuple(c, x))
    return (t,) if crd is None else ()


def _zero_wildcards(crd: Coord) -> IntTuple:
    if is_tuple(crd):
        return tuple(_zero_wildcards(c) for c in crd)
    return 0 if crd is None else crd


def slice(crd: Coord, x: LayoutLike) -> Layout:
    """The sub-layout over the modes where crd is `None` (CuTe's `_`)."""
    x = _as_layout(x)
    if crd is None:
        return x
    return Layout(_slice_tuple(crd, x.shape), _slice_tuple(crd, x.stride))


def slice_and_offset(crd: Coord, x: LayoutLike) -> tuple[Layout, int]:
    """slice(crd, x) and the index where it starts (fixed coordinates applied, `_` as 0)."""
    x = _as_layout(x)
    _require_static("slice_and_offset", x)
    return slice(crd, x), crd2idx(_zero_wildcards(crd), x.shape, x.stride)

"""The CuTe layout algebra in pure Python: layouts, swizzles and their operations."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeAlias

from tilec.dialects.layout.int_tuple import (
    DYN,
    Coord,
    IntTuple,
    LayoutError,
    ceil_div,
    compact_col_major,
    congruent,
    crd2idx,
    flatten,
    is_int,
    is_static,
    is_tuple,
    product,
    tiler_str,
    tuple_str,
)

# ---------------------------------------------------------------------------------------------
# Layout, Swizzle, ComposedLayout
# ---------------------------------------------------------------------------------------------


def _check_int_tuple(t: object, what: str, least: int | None) -> None:
    if is_tuple(t):
        for x in t:
            _check_int_tuple(x, what, least)
    elif t is not DYN and not is_int(t):
        raise LayoutError(f"{what} entry {t!r} is not an integer")
    elif t is not DYN and least is not None and t < least:
        raise LayoutError(f"{what} entry {t} must be at least {least}")


class Layout:
    """A function from coordinates to indices: `shape:stride`, two congruent int-tuples."""

    __slots__ = ("shape", "stride")

    def __init__(self, shape: IntTuple, stride: IntTuple | None = None) -> None:
        _check_int_tuple(shape, "shape", 1)
        if stride is None:
            stride = compact_col_major(shape)
        _check_int_tuple(stride, "stride", None)
        if not congruent(shape, stride):
            raise LayoutError(
                f"shape {tuple_str(shape)} and stride {tuple_str(stride)} are not congruent"
            )
        self.shape = shape
        self.stride = stride

    def __call__(self, *crd: Coord) -> int | Layout:
        """`L(i)`, `L((i, j))` or `L(i, j)`; a coordinate holding `None` (CuTe's `_`) slices."""
        c = crd[0] if len(crd) == 1 else crd
        if c is None or None in flatten(c):
            return slice(c, self)
        _require_static("evaluation", self)
        return crd2idx(c, self.shape, self.stride)

    def __getitem__(self, i: int) -> Layout:
        """Mode `i` (CuTe's `layout<i>`); an int-shaped layout is its own mode 0."""
        if not is_tuple(self.shape):
            if i not in (0, -1):
                raise LayoutError(f"mode {i} of {self} does not exist: it has rank 1")
            return self
        if not -len(self.shape) <= i < len(self.shape):
            raise LayoutError(f"mode {i} of {self} does not exist: it has rank {len(self.shape)}")
        return Layout(self.shape[i], self.stride[i])

    def __len__(self) -> int:
        return len(self.shape) if is_tuple(self.shape) else 1

    def __iter__(self) -> Iterator[Layout]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Layout):
            return NotImplemented
        return self.shape == other.shape and self.stride == other.stride

    def __hash__(self) -> int:
        return hash((self.shape, self.stride))

    def __str__(self) -> str:
        return f"{tuple_str(self.shape)}:{tuple_str(self.stride)}"

    def __repr__(self) -> str:
        return f"Layout({self.shape!r}, {self.stride!r})"


class Swizzle:
    """CuTe's `Swizzle<B, M, S>`: xor the B bits at M+S into the B bits at M.

    Offset bits, for `Swizzle<3,3,3>` (B bits, M base bits kept, shift S):

        bit:  ... 8 7 6 | 5 4 3 | 2 1 0
                  y y y | z z z | b b b      zzz ^= yyy   (yyy_mask >> S lands on zzz_mask)

    A negative S moves the yyy bits below the zzz bits: the xor goes upwards instead.
    """

    __slots__ = ("bits", "base", "shift")

    def __init__(self, bits: int, base: int, shift: int) -> None:
        if bits < 0 or base < 0:
            raise LayoutError(f"Sw<{bits},{base},{shift}> is not defined: B and M must be >= 0")
        if abs(shift) < bits:
            raise LayoutError(
                f"Sw<{bits},{base},{shift}> is not defined: |S| must be at least B "
                "(the two bit fields would overlap)"
            )
        self.bits = bits
        self.base = base
        self.shift = shift

    @property
    def yyy_mask(self) -> int:
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def zzz_mask(self) -> int:
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    def __call__(self, offset: int) -> int:
        yyy = offset & self.yyy_mask
        return offset ^ (yyy >> self.shift if self.shift >= 0 else yyy << -self.shift)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Swizzle):
            return NotImplemented
        return (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self) -> int:
        return hash((self.bits, self.base, self.shift))

    def __str__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    def __repr__(self) -> str:
        return f"Swizzle({self.bits}, {self.base}, {self.shift})"


class ComposedLayout:
    """`outer o offset o inner`: a coordinate goes through inner, gets offset added, then outer."""

    __slots__ = ("outer", "offset", "inner")

    def __init__(self, outer: Swizzle | Layout, offset: int, inner: Layout) -> None:
        self.outer = outer
        self.offset = offset
        self.inner = inner

    @property
    def shape(self) -> IntTuple:
        return self.inner.shape

    def __call__(self, *crd: Coord) -> int:
        return self.outer(self.offset + self.inner(*crd))

    def __len__(self) -> int:
        return len(self.inner)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComposedLayout):
            return NotImplemented
        return (self.outer, self.offset, self.inner) == (other.outer, other.offset, other.inner)

    def __hash__(self) -> int:
        return hash((self.outer, self.offset, self.inner))

    def __str__(self) -> str:
        return f"{self.outer} o {self.offset} o {self.inner}"

    def __repr__(self) -> str:
        return f"ComposedLayout({self.outer!r}, {self.offset!r}, {self.inner!r})"


AnyLayout: TypeAlias = "Layout | ComposedLayout"
LayoutLike: TypeAlias = "Layout | IntTuple"
Tiler: TypeAlias = "Layout | int | None | tuple[Tiler, ...]"


def _as_layout(x: LayoutLike) -> Layout:
    """A layout as is; a shape as its compact column-major layout (CuTe's `make_layout(shape)`)."""
    if isinstance(x, Layout):
        return x
    if isinstance(x, (Swizzle, ComposedLayout)):
        raise LayoutError(f"expected a plain layout, got {x}")
    return Layout(x)


def _require_static(op: str, *operands: Layout) -> None:
    for x in operands:
        if isinstance(x, Layout) and not (is_static(x.shape) and is_static(x.stride)):
            raise LayoutError(f"{op} of {x} needs a static layout: it has dynamic (?) entries")


def _on_inner(x: AnyLayout, fn: Callable[[Layout], Layout]) -> AnyLayout:
    """CuTe applies right-hand operations of a composed layout to its inner layout."""
    if isinstance(x, ComposedLayout):
        return ComposedLayout(x.outer, x.offset, fn(x.inner))
    return fn(_as_layout(x))


# ---------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------


def get(x: AnyLayout | IntTuple, *path: int) -> AnyLayout | IntTuple:
    """CuTe's `get<I, J...>`: a sub-layout (or sub-tuple) by mode path."""
    for i in path:
        if isinstance(x, ComposedLayout):
            x = ComposedLayout(x.outer, x.offset, x.inner[i])
        elif isinstance(x, Layout):
            x = x[i]
        elif is_tuple(x) and -len(x) <= i < len(x):
            x = x[i]
        elif not is_tuple(x) and i in (0, -1):
            pass
        else:
            raise LayoutError(f"mode {i} of {tuple_str(x)} does not exist")
    return x


def shape(x: AnyLayout | IntTuple, *path: int) -> IntTuple:
    x = get(x, *path)
    return x.shape if isinstance(x, (Layout, ComposedLayout)) else x


def stride(x: Layout, *path: int) -> IntTuple:
    x = get(x, *path)
    if not isinstance(x, Layout):
        raise LayoutError(f"{tiler_str(x)} has no strides: only a plain layout does")
    return x.stride


def size(x: AnyLayout | IntTuple, *path: int) -> int:
    return product(shape(x, *path))


def rank(x: AnyLayout | IntTuple, *path: int) -> int:
    s = shape(x, *path)
    return len(s) if is_tuple(s) else 1


def depth(x: AnyLayout | IntTuple, *path: int) -> int:
    def d(t: IntTuple) -> int:
        return 1 + max((d(e) for e in t), default=0) if is_tuple(t) else 0

    return d(shape(x, *path))


def cosize(x: LayoutLike, *path: int) -> int:
    """The span of the offsets x reaches: `1 + sum((s-1) * |d|)` over its modes (CuTe's cosize).

    With no negative stride the smallest offset is 0, so this is the least M with L(c) < M
    for every coordinate c: the size of the buffer x indexes. A negative stride reaches below
    0: then L(c) - lo < cosize(x), where lo = sum((s-1) * d) over the negative strides is the
    smallest offset. `(64,64):(-64,1)` reaches -4032 .. 63: cosize 4096, not 64.
    """
    x = get(_as_layout(x), *path)
    _require_static("cosize", x)
    return 1 + sum((s - 1) * abs(d) for s, d in _flat_modes(x))


def select(x: Layout, *modes: int) -> Layout:
    """CuTe's `select<I...>`: a layout made of the chosen modes, in the order given."""
    return make_layout(*(x[i] for i in modes))


def make_layout(*modes: LayoutLike) -> Layout:
    """Concatenate layouts as the modes of a new one: `make_layout(4:1, 8:4) == (4,8):(1,4)`."""
    ls = [_as_layout(m) for m in modes]
    return Layout(tuple(m.shape for m in ls), tuple(m.stride for m in ls))


def make_ordered_layout(shp: IntTuple, order: IntTuple | None = None) -> Layout:
    """Compact layout whose strides grow in `order` (ties left to right); None is column-major."""
    if order is None or not is_tuple(shp):
        return Layout(shp)
    if not is_tuple(order) or len(order) != len(shp):
        raise LayoutError(f"order {tuple_str(order)} does not match shape {tuple_str(shp)}")
    strides: list[IntTuple] = [0] * len(shp)
    cur = 1
    for i in sorted(range(len(shp)), key=lambda i: (order[i], i)):
        strides[i] = compact_col_major(shp[i], cur)
        cur *= product(shp[i])
    return Layout(shp, tuple(strides))


def _pad(x: Layout, r: int) -> Layout:
    """CuTe's `append<R>`: extend with trivial 1:0 modes up to rank r."""
    if len(x) >= r:
        return x
    return make_layout(*x, *[Layout(1, 0)] * (r - len(x)))


def _flat_modes(x: Layout) -> list[tuple[int, int]]:
    return list(zip(flatten(x.shape), flatten(x.stride), strict=True))


def _from_modes(modes: list[tuple[int, int]]) -> Layout:
    """Build a layout from flat modes, merging neighbours (s0:d0, s1:s0*d0) and dropping 1s."""
    shapes: list[int] = []
    strides: list[int] = []
    for s, d in modes:
        if s == 1:
            continue
        if shapes and shapes[-1] * strides[-1] == d:
            shapes[-1] *= s
        else:
            shapes.append(s)
            strides.append(d)
    if not shapes:
        return Layout(1, 0)
    if len(shapes) == 1:
        return Layout(shapes[0], strides[0])
    return Layout(tuple(shapes), tuple(strides))


# ---------------------------------------------------------------------------------------------
# Coalesce and filter
# ---------------------------------------------------------------------------------------------


def _by_mode(
    op: str, x: Layout, tiler: tuple, fn: Callable[[Layout, object], Layout], what: str = "tiler"
) -> Layout:
    """Apply `fn` mode by mode for the first len(tiler) modes; later modes pass through."""
    if len(tiler) > len(x):
        raise LayoutError(
            f"{op} of {x} with {tiler_str(tiler)} is not defined: the {what} has "
            f"{len(tiler)} modes but the layout has rank {len(x)}"
        )
    done = [fn(x[i], t) for i, t in enumerate(tiler)]
    return make_layout(*done, *(x[i] for i in range(len(tiler), len(x))))


def coalesce(x: LayoutLike, profile: IntTuple | None = None) -> AnyLayout:
    """Same function, fewest modes; with a tuple `profile`, coalesce mode by mode instead."""
    if isinstance(x, ComposedLayout):
        return _on_inner(x, lambda inner: coalesce(inner, profile))
    x = _as_layout(x)
    _require_static("coalesce", x)
    if is_tuple(profile):
        return _by_mode("coalesce", x, profile, coalesce, "profile")
    return _from_modes(_flat_modes(x))


def filter_zeros(x: LayoutLike) -> Layout:
    """Replace every stride-0 mode's shape by 1."""
    x = _as_layout(x)

    def zero(s: IntTuple, d: IntTuple) -> IntTuple:
        if is_tuple(s):
            return tuple(zero(a, b) for a, b in zip(s, d, strict=True))
        return 1 if d == 0 else s

    return Layout(zero(x.shape, x.stride), x.stride)


def filter(x: LayoutLike, profile: IntTuple | None = None) -> Layout:
    """Drop stride-0 and size-1 modes, then coalesce."""
    return coalesce(filter_zeros(x), profile)


# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


def composition(lhs: AnyLayout | Swizzle | LayoutLike, rhs: Tiler) -> AnyLayout:
    """`(lhs o rhs)(c) = lhs(rhs(c))`, shaped like rhs; a tuple rhs composes mode by mode."""
    if isinstance(lhs, Swizzle):
        return ComposedLayout(lhs, 0, _as_layout(rhs))
    if isinstance(lhs, ComposedLayout):
        return _on_inner(lhs, lambda inner: composition(inner, rhs))
    lhs = _as_layout(lhs)
    if rhs is None:
        return lhs
    if is_tuple(rhs):
        return _by_mode("composition", lhs, rhs, composition)
    rhs = _as_layout(rhs)
    _require_static("composition", lhs, rhs)
    flat = _flat_modes(coalesce(lhs))

    def compose(s: IntTuple, d: IntTuple) -> Layout:
        if is_tuple(s):
            return make_layout(*(compose(a, b) for a, b in zip(s, d, strict=True)))
        return _compose_mode(lhs, rhs, flat, s, d)

    return compose(rhs.shape, rhs.stride)


def _compose_mode(lhs: Layout, rhs: Layout, flat: list[tuple[int, int]], s: int, d: int) -> Layout:
    """lhs o s:d for one mode of rhs, against lhs's coalesced modes `flat` (CuTe's fold).

    The rhs mode reads lhs's indices 0, d, 2d, ..., (s-1)d. Walking lhs's modes left to right,
    a mode whose size divides the step is jumped over whole (the step shrinks by that size);
    a mode larger than the step holds ceil(m/d) of the s elements, and the rest continue in the
    next mode with step 1. lhs's last mode never ends, so it absorbs whatever is left: the
    linear extension CuTe uses. A negative d walks the same modes with negated strides.

        lhs (4,6,8,10):(2,3,5,7), rhs 6:12:
            4:2    12 = 4*3: jump over it, step 3
            6:3    step 3 in a mode of 6: 2 elements, stride 3*3 = 9; 3 left, step 1
            8:5    3 fit in a mode of 8: 3 elements, stride 5; done   ->  (2,3):(9,5)

    The preconditions are CuTe's: the step is a multiple of each mode it jumps or smaller
    than it (stride divisibility); where a mode holds fewer than what is left, that count
    divides what is left (shape divisibility). One is tilec's own: a step that does not divide
    the mode it lands in can only end there; CuTe carries on and returns a layout that is not
    lhs o rhs, e.g. (3,4):(1,5) o 4:2 is 0 2 6 10, CuTe's (2,2):(2,5) is 0 2 5 7.
    """

    def fail(why: str) -> LayoutError:
        return LayoutError(f"composition of {lhs} with {rhs} is not defined: {why}")

    if d == 0:
        return Layout(s, 0)
    sign = 1 if d > 0 else -1
    *body, (_, last_d) = flat
    step, rest = abs(d), s
    taken: list[tuple[int, int]] = []
    for m, md in body:
        if step % m == 0:
            step //= m
            continue
        if step > m:
            raise fail(
                f"stride {step} and mode {m}:{md} of the left layout: {step} is neither a "
                f"multiple of {m} nor less than it (stride divisibility condition)"
            )
        fit = ceil_div(m, step)
        if rest > fit and rest % fit:
            raise fail(
                f"shape {rest} and mode {m}:{md} of the left layout: at stride {step} the mode "
                f"holds {fit} elements and {fit} does not divide {rest} (shape divisibility "
                "condition)"
            )
        if rest > fit and m % step:
            raise fail(
                f"stride {step} does not divide mode {m}:{md} of the left layout, so only "
                f"{fit} of the {rest} elements fit in it and the rest cannot continue past it "
                "(CuTe's result here is not the composition)"
            )
        if rest > 1:
            n = min(fit, rest)
            taken.append((n, sign * step * md))
            rest //= n
        step = 1
    if not taken:
        return Layout(rest, sign * step * last_d)
    if rest > 1:
        taken.append((rest, sign * step * last_d))
    return _from_modes(taken)


# ---------------------------------------------------------------------------------------------
# Complement and inverses
# ---------------------------------------------------------------------------------------------


def complement(x: LayoutLike, cotarget: IntTuple = 1) -> Layout:
    """The layout of the indices x does not reach, ordered, up to `cotarget` (its size if a tuple).

        x = 4:2, cotarget 24:   x covers 0 2 4 6          (span 8)
                                complement (2,3):(1,8)    0 1 | 0 8 16

    Defined only when x is injective and its sorted modes do not interleave.
    """
    x = _as_layout(x)
    _require_static("complement", x)
    target = product(cotarget)
    if target < 1:
        raise LayoutError(f"complement of {x} is not defined: cotarget {target} is not positive")
    shapes: list[int] = []
    strides: list[int] = []
    cur = 1
    for d, s in sorted((d, s) for s, d in _flat_modes(filter(x)) if d != 0):
        if d < 0:
            raise LayoutError(f"complement of {x} is not defined: negative stride {d}")
        if d < cur:
            raise LayoutError(
                f"complement of {x} is not defined: mode {s}:{d} starts inside the span {cur} "
                "of the modes with smaller stride (they overlap or interleave, so no layout "
                "fills the gaps)"
            )
        shapes.append(d // cur)
        strides.append(cur)
        cur = s * d
    shapes.append(ceil_div(target, cur))
    strides.append(cur)
    return _from_modes(list(zip(shapes, strides, strict=True)))


def right_inverse(x: LayoutLike) -> Layout:
    """The largest R with x(R(i)) == i: follow x's strides 1, s0, s0*s1, ... as far as they go.

    As in C++ CuTe, only positive strides continue the chain: `4:-1` reaches offset 1 only
    from coordinate -1, outside its domain, so its right inverse is `1:0`.
    """
    x = _as_layout(x)
    _require_static("right_inverse", x)
    flat = _flat_modes(coalesce(x))
    compact = flatten(compact_col_major(tuple(s for s, _ in flat)))
    modes: list[tuple[int, int]] = []
    cur = 1
    while True:
        hit = next((i for i, (s, d) in enumerate(flat) if d == cur and s > 1), None)
        if hit is None:
            break
        s, d = flat[hit]
        modes.append((s, compact[hit]))
        cur = s * d
    return _from_modes(modes)


def left_inverse(x: LayoutLike) -> Layout:
    """An L with L(x(i)) == i, built from x's modes in order of increasing stride (CuTe's).

    Each stride must be a multiple of the next smaller one (CuTe's left inverse divisibility
    condition): `(4,16):(3,8)` is injective, yet 8 is not a multiple of 3, so no layout
    inverts it.

        x = (4,2):(2,1):  by stride, 2:1 then 4:2
                          L = (1,2,4):(0,4,1)  ->  coalesced (2,4):(4,1)
    """
    x = _as_layout(x)
    _require_static("left_inverse", x)
    flat = _flat_modes(coalesce(x))
    prefix = flatten(compact_col_major(tuple(s for s, _ in flat)))
    order = sorted(range(len(flat)), key=lambda i: flat[i][1])
    shapes: list[int] = []
    strides: list[int] = [0]
    below = 1
    for i in order:
        d = flat[i][1]
        if d == 0:
            continue
        if d < 0:
            raise LayoutError(f"left_inverse of {x} is not defined: negative stride {d}")
        if d % below:
            raise LayoutError(
                f"left_inverse of {x} is not defined: stride {d} is not a multiple of the "
                f"next smaller stride {below} (left inverse divisibility condition)"
            )
        shapes.append(d // below)
        strides.append(prefix[i])
        below = d
    shapes.append(flat[order[-1]][0])
    return coalesce(Layout(tuple(shapes), tuple(strides)))


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
    return _on_inner(x, lambda inner: _zip("zipped_divide", logical_divide, inner, tiler))


def tiled_divide(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    """((tile modes...), rest0, rest1, ...)."""
    return _on_inner(
        x, lambda inner: _unpack(_zip("tiled_divide", logical_divide, inner, tiler), False)
    )


def flat_divide(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    """(tile0, tile1, ..., rest0, rest1, ...)."""
    return _on_inner(
        x, lambda inner: _unpack(_zip("flat_divide", logical_divide, inner, tiler), True)
    )


def zipped_product(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    return _on_inner(x, lambda inner: _zip("zipped_product", logical_product, inner, tiler))


def tiled_product(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    return _on_inner(
        x, lambda inner: _unpack(_zip("tiled_product", logical_product, inner, tiler), False)
    )


def flat_product(x: AnyLayout | LayoutLike, tiler: Tiler) -> AnyLayout:
    return _on_inner(
        x, lambda inner: _unpack(_zip("flat_product", logical_product, inner, tiler), True)
    )


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

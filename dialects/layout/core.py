"""The CuTe layout algebra, part one: layouts, swizzles, composed layouts, their queries,
coalesce and filter (`tilec.dialects.layout.algebra` gathers all of it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeAlias

from tilec.dialects.layout.int_tuple import (
    DYN,
    Coord,
    IntTuple,
    LayoutError,
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
            from tilec.dialects.layout.tiling import slice as sliced  # tiling builds on this

            return sliced(c, self)
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

"""Frontend (check stage): helpers on int-tuples and layouts that the checks and irgen share:
static tuples of values, runtime entries as `?`, modes, spreads and broadcasting."""

from __future__ import annotations

from tilec import layout as L
from tilec.frontend.values import IntV, TensorV, TupleV, V


def dyn(t: object) -> object:
    """Entries that are runtime names (lists of factors) become `?`."""
    if isinstance(t, tuple):
        return tuple(dyn(x) for x in t)
    return L.DYN if isinstance(t, list) else t


def int_tuple(v: V) -> object | None:
    """A static int-tuple (runtime entries as `?`) from a value, or None if it is not one."""
    if isinstance(v, IntV):
        return v.value if v.static else L.DYN
    if isinstance(v, TupleV) and v.items:
        items = [int_tuple(x) for x in v.items]
        return None if any(x is None for x in items) else tuple(items)
    return None


def static_ints(v: V) -> list[int] | None:
    if isinstance(v, IntV) and v.static:
        return [v.value]
    if isinstance(v, TupleV) and all(isinstance(x, IntV) and x.static for x in v.items):
        return [x.value for x in v.items]
    return None


def inner(layout: object) -> L.Layout:
    return layout.inner if isinstance(layout, L.ComposedLayout) else layout


def negative_stride(layout: object) -> int | None:
    """The first static negative stride of a layout, if any.

    A tensor argument's layout refuses them: a kernel addresses a tensor upwards from its
    pointer, so `(M,K):(-1,M)` would read below it (a shared buffer holds its lowest offset).
    """
    return next((d for d in L.flatten(inner(layout).stride) if L.is_int(d) and d < 0), None)


def spread(t: TensorV) -> str:
    """How a register tensor lies over the threads, for messages: its tile, layout and MMA."""
    shape = L.tuple_str(t.logical_shape)
    if t.mma is None:
        return f"a {shape} tile {t.layout}, spread over the threads by the compiler"
    tiling = L.tuple_str(t.mma.tiling)
    return f"a {shape} tile of {t.mma.atom} atoms {tiling}, one thread's part {t.layout}"


def top_modes(layout: object) -> list[L.Layout]:
    return list(inner(layout))


def with_modes(layout: object, modes: list[L.Layout]) -> object:
    """`layout` with its top-level modes replaced; a swizzle stays on the outside."""
    new = L.make_layout(*modes) if len(modes) > 1 else modes[0]
    if isinstance(layout, L.ComposedLayout):
        return L.ComposedLayout(layout.outer, layout.offset, new)
    return new


def mode_sizes(shape: object) -> list[object]:
    """The size of each top-level mode of a shape (`?` if dynamic)."""
    return [L.product(m) for m in shape] if isinstance(shape, tuple) else [L.product(shape)]


def tile_layout(shape: object) -> L.Layout:
    """The register tile a view of `shape` loads into: compact, a nested mode one mode of its
    size (a load of a `(128,(64,2))` shared tile is a 128 x 128 tile)."""
    if isinstance(shape, tuple) and any(isinstance(m, tuple) for m in shape):
        return L.Layout(tuple(mode_sizes(shape)))
    return L.Layout(shape)


def broadcastable(a: object, b: object) -> bool:
    """Whether shape `a` broadcasts to shape `b`: equal modes, or modes of size 1."""
    sa, sb = mode_sizes(a), mode_sizes(b)
    if len(sa) != len(sb):
        return L.product(a) == L.product(b) and L.DYN not in sa
    return all(x == y or x == 1 for x, y in zip(sa, sb, strict=True))

r"""Passes (lowered stage): a view's modes, flat or nested, as the layout algebra gives them.

A view (`tile_views.View`) keeps one extent and one stride per top-level mode of its tensor.
A flat mode's stride is a `Term`; a nested one's is a `Nest`, the mode's leaves in
colexicographic order, so a coordinate c along the mode is split into digits by the leaves'
extents (the last digit takes the rest, so a ragged tile's coordinates past the end extend
the last leaf linearly, as a flat mode's do):

    (64,2):(1,8192)     c = 70  ->  digits (6, 1)  ->  6 * 1 + 1 * 8192
    (128,(64,2)):(64,(1,8192))   the shared tile of attention at D = 128: mode 1 is a Nest

Tiling a nested mode is CuTe's `logical_divide` of the mode (`split`), done by the algebra on
its static leaves: the tile keeps the first n coordinates, the rest says where each tile
starts. The helpers here answer what the accesses ask of a mode: where a coordinate lies
(`offset_along`), the stride and reach of unit steps from a run's start (`leading`), every
stride a step can take (`leaves`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects.layout import algebra as A
from tilec.lowering import IndexBuilder, Term


@dataclass(frozen=True)
class Nest:
    """A nested mode: leaves (extent, stride), colexicographic; extents and strides are Terms
    (static where the type says so)."""

    extents: tuple[Term, ...]
    strides: tuple[Term, ...]

    def __str__(self) -> str:
        def text(t: Term) -> str:
            return str(t) if isinstance(t, int) else "?"

        return f"({','.join(map(text, self.extents))}):({','.join(map(text, self.strides))})"


Stride = Term | Nest  # a mode's stride: one Term (a flat mode) or its leaves


def is_static(d: Stride) -> bool:
    if isinstance(d, Nest):
        return all(isinstance(x, int) for x in (*d.extents, *d.strides))
    return isinstance(d, int)


def leading(d: Stride) -> tuple[Term, int | None]:
    """The stride of unit steps from a coordinate that is a multiple of the reach, and that
    reach: how many consecutive coordinates keep that stride (None: the whole mode)."""
    if not isinstance(d, Nest):
        return d, None
    first = d.extents[0]
    return d.strides[0], first if isinstance(first, int) else 1


def unit(d: Stride) -> bool:
    """Whether unit steps along the mode move one element (from a run's start)."""
    return leading(d)[0] == 1


def runs(d: Stride, n: int) -> bool:
    """Whether n coordinates from any multiple of n are n consecutive elements."""
    stride, reach = leading(d)
    return stride == 1 and (reach is None or reach % n == 0)


def leaves(d: Stride) -> tuple[Term, ...]:
    """Every stride a step along the mode can take."""
    return d.strides if isinstance(d, Nest) else (d,)


def offset_along(d: Stride, c: Term, b: IndexBuilder) -> Term:
    """Where coordinate `c` of a mode of stride `d` lies, from the mode's origin."""
    if not isinstance(d, Nest):
        return b.mul(c, d)
    out: Term = 0
    rest = c
    last = len(d.extents) - 1
    for i, (e, s) in enumerate(zip(d.extents, d.strides, strict=True)):
        digit = rest if i == last else b.rem(rest, e)
        out = b.add(out, b.mul(digit, s))
        rest = rest if i == last else b.div(rest, e)
    return out


def from_layout(mode: A.Layout) -> tuple[Term, Stride]:
    """(size, stride) of one mode of a layout: a nested one coalesced, a Term where one leaf
    remains, else a Nest. `A.DYN` entries stay DYN (the caller puts operands in their place)."""
    if A.is_tuple(mode.shape) and A.is_static(mode.shape) and A.is_static(mode.stride):
        mode = A.coalesce(mode)  # (a flat mode keeps its stride: 1:1 is not 1:0 to a type)
    shape, stride = A.flatten(mode.shape), A.flatten(mode.stride)
    if len(shape) == 1:
        return shape[0], stride[0]
    return A.product(mode.shape), Nest(tuple(shape), tuple(stride))


def typed_modes(layout: A.Layout | A.ComposedLayout) -> list[tuple[Term, Stride]]:
    """Each top-level mode of a (swizzled) layout as (size, stride), DYN where it says `?`."""
    inner = layout.inner if isinstance(layout, A.ComposedLayout) else layout
    return [from_layout(m) for m in inner]


def probe_layout(shape: list[int], strides: list[Stride], probe: int) -> A.Layout:
    """The modes as one static layout, each runtime stride replaced by `probe`."""

    def fix(t: Term) -> int:
        return t if isinstance(t, int) else probe

    modes = []
    for size, d in zip(shape, strides, strict=True):
        if isinstance(d, Nest) and all(isinstance(e, int) for e in d.extents):
            modes.append(A.Layout(tuple(d.extents), tuple(map(fix, d.strides))))
        elif isinstance(d, Nest):
            modes.append(A.Layout(size, probe))
        else:
            modes.append(A.Layout(size, fix(d)))
    return A.make_layout(*modes)


def block_shape(layout: A.Layout | A.ComposedLayout) -> tuple:
    """A view's tile shape: the size of each top-level mode (a nested mode is one mode)."""
    return tuple(size for size, _ in typed_modes(layout))


def as_layout(size: Term, d: Stride) -> A.Layout | None:
    """The mode as a static layout (None where a part of it is known only at run time)."""
    if not isinstance(size, int) or not is_static(d):
        return None
    if isinstance(d, Nest):
        return A.Layout(tuple(d.extents), tuple(d.strides))
    return A.Layout(size, d)


def split(size: Term, d: Stride, n: int) -> tuple[tuple[Term, Stride], tuple[Term, Stride]]:
    """A nested mode divided by `n`, as `algebra.split_mode` divides the type's: the tile's
    (size, stride) and the rest's (how many tiles, and where each starts). A.LayoutError
    where the algebra does not define it; ValueError where the mode is not static."""
    mode = as_layout(size, d)
    if mode is None:
        raise ValueError("the layout algebra tiles a nested mode of static leaves only")
    tile, rest = A.split_mode(mode, n)
    return from_layout(tile), from_layout(rest)


def same(typed: Stride, built: Stride) -> bool:
    """Whether a view's stride is what its type says (a DYN of the type matches anything)."""
    if isinstance(typed, Nest) != isinstance(built, Nest):
        return False
    if not isinstance(typed, Nest):
        return typed is A.DYN or typed == built
    if len(typed.extents) != len(built.extents):
        return False
    pairs = zip((*typed.extents, *typed.strides), (*built.extents, *built.strides), strict=True)
    return all(t is A.DYN or t == v for t, v in pairs)


def filled(d: Stride, operands: list) -> Stride:
    """`d` with each DYN leaf stride replaced by the next of `operands` (consumed in order)."""
    if not isinstance(d, Nest):
        return operands.pop(0) if d is A.DYN else d
    return Nest(d.extents, tuple(operands.pop(0) if s is A.DYN else s for s in d.strides))


def filled_size(size: Term, d: Stride, operands: list, b: IndexBuilder) -> tuple[Term, Stride]:
    """A mode's size and leaf extents with each DYN replaced by the next of `operands`."""
    if not isinstance(d, Nest):
        return (operands.pop(0) if size is A.DYN else size), d
    extents = tuple(operands.pop(0) if e is A.DYN else e for e in d.extents)
    total: Term = 1
    for e in extents:
        total = b.mul(total, e)
    return total, Nest(extents, d.strides)

"""Passes (lowered stage): tile views as pointer + index math, for `convert-tile-to-gpu`.

A view (`make_tensor`, `local_tile`, `slice`, `permute`, `prepend`/`append`, `alloc_shared`)
becomes a `View`: a base pointer, an element offset, one extent and one stride per mode (static
ints where the layout says so, SSA `index` values for its `?`), an optional swizzle applied to
the whole offset, and the bounds that predicate ragged edges. A bound says "origin + coordinate
of mode `mode` < extent" in the coordinates of the tensor the view was cut from:

    make_tensor X (?,?):(?,1)        bounds  0 + r < M,       0 + c < N
    local_tile (32,32) at (by, bx)   bounds  32*by + r < M,   32*bx + c < N
    slice (_, 5)                     bounds  32*by + r < M,   32*bx + 5 < N   (mode None)
    local_tile (32,32) at (by, _)    bounds  32*by + r < M,   c + 32*kt < N   (outer: kt)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mlir import ir
from mlir.dialects import arith, llvm

from tilec.binding import is_float_type
from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.ir import make
from tilec.dialects.tile import types
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.tile_modes import (
    Nest,
    Stride,
    filled,
    filled_size,
    offset_along,
    same,
    split,
    typed_modes,
)

GEP_DYNAMIC = -2147483648  # llvm.getelementptr's marker for an SSA index
GEP_INBOUNDS = 3  # the `inbounds` no-wrap flags (inbounds implies nusw)
SHARED_SPACE = 3
GLOBAL_SPACE = 1


@dataclass(frozen=True)
class TensorType:
    elem: ir.Type
    space: str
    layout: A.Layout | A.ComposedLayout
    tv: str | None = None  # a register tensor's thread–value layout (tile-distribute)


def tensor_type(typ: ir.Type) -> TensorType | None:
    """The parts of a `!tile.tensor<ELEM, "SPACE", "LAYOUT">` or `!tile.frag` type, None for
    other types."""
    t = types.TensorType.of(typ)
    if t is None:
        return None
    return TensorType(ir.Type.parse(t.elem), t.space, t.layout_value(), t.tv)


def elem_bytes(elem: ir.Type) -> int:
    width = elem.width if is_float_type(elem) or isinstance(elem, ir.IntegerType) else 32
    return max(1, width // 8)


@dataclass(frozen=True)
class Bound:
    origin: Term
    extent: Term
    mode: int | None  # None: a coordinate fixed by a slice, already in `origin`
    # A `_` of local_tile adds a trailing tile mode: (mode of the tile index, tile extent).
    outer: tuple[int, Term] | None = None


@dataclass
class View:
    elem: ir.Type
    space: str  # "global" or "shared"
    base: ir.Value  # !llvm.ptr<1> or !llvm.ptr<3>
    offset: Term  # elements from base (inside the swizzle)
    shape: list[Term]  # each mode's size
    stride: list[Stride]  # each mode's stride: a Term, or a Nest of its leaves (tile_modes)
    swizzle: A.Swizzle | None = None
    bounds: list[Bound] = field(default_factory=list)
    span: int = 0  # a shared buffer's elements: the domain of its swizzle function

    def static_shape(self, op: ir.Operation) -> tuple[int, ...]:
        if not all(isinstance(s, int) for s in self.shape):
            raise LoweringError(op, "a block-level access needs a static tile shape; tile first")
        return tuple(self.shape)


def modes(layout: A.Layout | A.ComposedLayout) -> tuple[list[Term], list[Stride]]:
    """Each top-level mode's size and stride (tile_modes), DYN where the layout says `?`."""
    pairs = typed_modes(layout)
    return [s for s, _ in pairs], [d for _, d in pairs]


def parse_coord(op: ir.Operation, text: str, rank: int) -> list[str]:
    items = [c.strip() for c in text.strip().strip("()").split(",")]
    if len(items) != rank or any(
        c not in ("?", "_") and not c.lstrip("-").isdigit() for c in items
    ):
        raise LoweringError(op, f"coordinate '{text}' does not fit a rank-{rank} tensor")
    return items


def coord_terms(op: ir.Operation, items: list[str], operands: list[ir.Value]) -> list[Term | None]:
    """One term per coordinate entry: an SSA value for `?`, an int, None for `_`."""
    rest = iter(operands)
    out: list[Term | None] = []
    for c in items:
        out.append(next(rest) if c == "?" else None if c == "_" else int(c))
    if next(rest, None) is not None:
        raise LoweringError(op, "more index operands than '?' entries in the coordinate")
    return out


def make_tensor(op: ir.Operation, ptr: ir.Value) -> View:
    t = tensor_type(op.results[0].type)
    inner = t.layout.inner if isinstance(t.layout, A.ComposedLayout) else t.layout
    wanted = list(A.flatten(inner.shape) + A.flatten(inner.stride)).count(A.DYN)
    if len(op.operands) != 1 + wanted:
        raise LoweringError(op, f"make_tensor of {t.layout} needs {wanted} index operand(s)")
    # The operands are the shape's `?` in order, then the stride's (a nested mode's leaves too).
    operands, b = list(op.operands)[1:], IndexBuilder()
    sizes, strides = modes(t.layout)
    shaped = [filled_size(s, d, operands, b) for s, d in zip(sizes, strides, strict=True)]
    shape = [s for s, _ in shaped]
    stride = [filled(d, operands) for _, d in shaped]
    bounds = [Bound(0, s, k) for k, s in enumerate(shape)]
    return View(t.elem, "global", ptr, 0, shape, stride, None, bounds)


def local_tile(op: ir.Operation, view: View, b: IndexBuilder) -> View:
    tile = list(ir.DenseI64ArrayAttr(op.attributes["tile"]))
    coord_text = ir.StringAttr(op.attributes["coord"]).value
    items = parse_coord(op, coord_text, len(view.shape))
    if len(tile) != len(view.shape):
        raise LoweringError(op, f"tile {tile} does not fit a rank-{len(view.shape)} tensor")
    coords = coord_terms(op, items, list(op.operands)[1:])
    offset, bounds = view.offset, list(view.bounds)
    shape, stride = list(tile), list(view.stride)
    for k, (c, t) in enumerate(zip(coords, tile, strict=True)):
        nested = isinstance(view.stride[k], Nest)
        if nested:
            offset = tile_nested(op, view, k, c, t, shape, stride, b, offset)
        if c is None:
            # `_`: keep every tile of mode k as a trailing mode of ceil(extent / t) tiles.
            rest = len(shape) - nested
            if not nested:
                shape.append(b.div(b.add(view.shape[k], t - 1), t))
                stride.append(b.mul(t, view.stride[k]))
            bounds = [replace(x, outer=(rest, t)) if x.mode == k else x for x in bounds]
            continue
        start = b.mul(c, t)
        if not nested:
            offset = b.add(offset, b.mul(start, view.stride[k]))
        bounds = [replace(x, origin=b.add(x.origin, start)) if x.mode == k else x for x in bounds]
    typed = modes(tensor_type(op.results[0].type).layout)[1]
    if not agrees(typed, stride):
        raise LoweringError(
            op, f"local_tile makes strides {describe(stride)}, its type says {describe(typed)}"
        )
    return replace(view, offset=offset, shape=shape, stride=stride, bounds=bounds)


def describe(strides: list[Stride]) -> str:
    """Strides for a message: integers, a nested mode's leaves, `?` for runtime values."""
    return "[" + ", ".join(str(d) if isinstance(d, int | Nest) else "?" for d in strides) + "]"


def tile_nested(
    op: ir.Operation,
    view: View,
    k: int,
    c: Term | None,
    t: int,
    shape: list[Term],
    stride: list[Stride],
    b: IndexBuilder,
    offset: Term,
) -> Term:
    """Mode k of `view` (a Nest) tiled by `t` at coordinate c (None: `_`), by the algebra: the
    tile's mode replaces mode k, the tiles' mode is appended for `_`, else the tile's start
    moves the offset. Returns the offset."""
    try:
        (_, tile_stride), (count, starts) = split(view.shape[k], view.stride[k], t)
    except (A.LayoutError, ValueError) as exc:
        raise LoweringError(op, f"tile {t} of mode {k} ({view.stride[k]}): {exc}") from None
    stride[k] = tile_stride
    if c is None:
        shape.append(count)
        stride.append(starts)
        return offset
    return b.add(offset, offset_along(starts, c, b))


def slice_coords(op: ir.Operation, view: View) -> list[Term | None]:
    """A `tile.slice`'s coordinates into `view`: a term per fixed mode, None per kept one."""
    items = parse_coord(op, ir.StringAttr(op.attributes["coord"]).value, len(view.shape))
    return coord_terms(op, items, list(op.operands)[1:])


def slice_view(op: ir.Operation, view: View, b: IndexBuilder) -> View:
    return slice_at(view, slice_coords(op, view), b)


def slice_at(view: View, coords: list[Term | None], b: IndexBuilder) -> View:
    """The view with each mode whose coordinate is given fixed there (None keeps the mode)."""
    kept = [k for k, c in enumerate(coords) if c is None]
    offset, base = view.offset, view.base
    bounds: list[Bound] = []
    for k, c in enumerate(coords):
        if c is None:
            continue
        if passes_swizzle(view, k) and not isinstance(c, int):
            # A pipeline stage of a shared buffer: base + stage * size, so the swizzled
            # addresses inside the stage keep folding to one xor chain plus immediates.
            base = gep(base, b.mul(c, view.stride[k]), view.elem, b)
        else:
            offset = b.add(offset, offset_along(view.stride[k], c, b))
    for x in view.bounds:
        origin, mode, outer = x.origin, x.mode, x.outer
        if mode is not None and coords[mode] is not None:
            origin, mode = b.add(origin, coords[mode]), None
        if outer is not None and coords[outer[0]] is not None:
            origin, outer = b.add(origin, b.mul(coords[outer[0]], outer[1])), None
        mode = None if mode is None else kept.index(mode)
        outer = None if outer is None else (kept.index(outer[0]), outer[1])
        bounds.append(Bound(origin, x.extent, mode, outer))
    return replace(
        view,
        base=base,
        offset=offset,
        shape=[view.shape[k] for k in kept],
        stride=[view.stride[k] for k in kept],
        bounds=bounds,
    )


def window(op: ir.Operation, view: View, b: IndexBuilder) -> View:
    """`tile.window`: modes cut to `lo..hi` (coordinates lo through hi, inclusive, as the
    language's ranges are, seen as 0 .. hi - lo): the offset moves to lo, the extent is
    hi - lo + 1, every bound along the mode sees lo more, and a global tensor's new extent
    bounds it too (a packed sequence's rows end where it does)::

        (?,?):(?,1) window (5..?,_)    bounds  0 + r < M  ->  5 + r < M,  0 + r < hi - 4
    """
    text = ir.StringAttr(op.attributes["window"]).value
    items = [c.strip() for c in text.strip().strip("()").split(",")]
    if len(items) != len(view.shape) or any(not window_entry(c) for c in items):
        raise LoweringError(op, f"window '{text}' does not fit a rank-{len(view.shape)} tensor")
    rest = iter(list(op.operands)[1:])
    offset, shape, bounds = view.offset, list(view.shape), list(view.bounds)
    for k, c in enumerate(items):
        if c == "_":
            continue
        if isinstance(view.stride[k], Nest):
            raise LoweringError(
                op,
                f"a window of mode {k}: a nested mode ({view.stride[k]}) "
                "has no contiguous range of coordinates",
            )
        lo, hi = (next(rest) if x.strip() == "?" else int(x) for x in c.split(".."))
        offset = b.add(offset, b.mul(lo, view.stride[k]))
        shape[k] = b.add(b.sub(hi, lo), 1)
        bounds = [shift_bound(x, k, lo, b) for x in bounds]
        if view.space == "global":
            bounds.append(Bound(0, shape[k], k))
    if next(rest, None) is not None:
        raise LoweringError(op, "more index operands than '?' entries in the window")
    return replace(view, offset=offset, shape=shape, bounds=bounds)


def window_entry(text: str) -> bool:
    """Whether a window entry is `_` or `lo..hi`, each `?` or an integer."""
    parts = text.split("..")
    if text == "_":
        return True
    return len(parts) == 2 and all(
        p.strip() == "?" or p.strip().lstrip("-").isdigit() for p in parts
    )


def shift_bound(x: Bound, mode: int, lo: Term, b: IndexBuilder) -> Bound:
    """A bound seen from a window of `mode` starting at lo: coordinate c there is c + lo."""
    origin = b.add(x.origin, lo) if x.mode == mode else x.origin
    if x.outer is not None and x.outer[0] == mode:
        origin = b.add(origin, b.mul(lo, x.outer[1]))
    return replace(x, origin=origin)


def passes_swizzle(view: View, mode: int) -> bool:
    """Whether moving along `mode` of a shared view leaves the swizzle's bits alone."""
    stride = view.stride[mode]  # a Nest is not an int: its steps are not one stride
    if view.space != "shared" or not isinstance(stride, int) or stride <= 0:
        return False
    sw = view.swizzle
    return sw is None or stride % (1 << (sw.base + abs(sw.shift) + sw.bits)) == 0


def permute(op: ir.Operation, view: View) -> View:
    perm = list(ir.DenseI64ArrayAttr(op.attributes["perm"]))
    if sorted(perm) != list(range(len(view.shape))):
        raise LoweringError(op, f"perm {perm} is not a permutation of {len(view.shape)} modes")
    bounds = [
        replace(
            x,
            mode=None if x.mode is None else perm.index(x.mode),
            outer=None if x.outer is None else (perm.index(x.outer[0]), x.outer[1]),
        )
        for x in view.bounds
    ]
    return replace(
        view,
        shape=[view.shape[k] for k in perm],
        stride=[view.stride[k] for k in perm],
        bounds=bounds,
    )


def add_mode(op: ir.Operation, view: View) -> View:
    """`tile.prepend` / `tile.append`: `view` with a mode of stride 0 first or last. Its size is
    the result type's, or operand 1 where the type says `?`; on a global tensor its coordinate
    is bounded by it as any mode's is (a shared buffer's views have no bounds)::

        append (?):(1) as (?,1):(1,0)       bounds  0 + c < N   ->   0 + c < N,  0 + r < 1
    """
    at = 0 if op.name == "tile.prepend" else len(view.shape)
    rest = list(op.operands)[1:]
    lay = tensor_type(op.results[0].type).layout
    sizes, strides = modes(lay)
    shape = [*view.shape[:at], sizes[at] if at < len(sizes) else 0, *view.shape[at:]]
    stride = [*view.stride[:at], 0, *view.stride[at:]]
    if not (agrees(sizes, shape) and agrees(strides, stride)):
        raise LoweringError(
            op, f"{op.name} makes {lay}, which is not its source with a mode of stride 0"
        )
    size = sizes[at]
    if len(rest) != (size is A.DYN):
        raise LoweringError(
            op, f"{op.name} of a mode of size {size} takes {int(size is A.DYN)} size operand(s)"
        )
    size = rest[0] if rest else size
    shape[at] = size

    def moved(k: int) -> int:
        return k + 1 if k >= at else k

    bounds = [
        replace(
            x,
            mode=None if x.mode is None else moved(x.mode),
            outer=None if x.outer is None else (moved(x.outer[0]), x.outer[1]),
        )
        for x in view.bounds
    ]
    if view.space == "global":
        bounds.append(Bound(0, size, at))
    return replace(view, shape=shape, stride=stride, bounds=bounds)


def agrees(typed: list[Stride], built: list[Stride]) -> bool:
    """Whether a view's extents or strides are what its type says: as many, and each static
    one of the type the same integer (a nested mode's leaves alike)."""
    if len(typed) != len(built):
        return False
    return all(same(t, v) for t, v in zip(typed, built, strict=True))


def element_index(view: View, coords: list[Term], b: IndexBuilder) -> Term:
    """swizzle(offset + sum(coord * stride)): elements from the view's base pointer.

    A swizzle of a runtime index stays layout IR, the swizzle as a function of the buffer's
    elements, for `convert-layout-to-arith` to lower (its xor/shift/and):

        %l = "layout.make"() : () -> !layout.layout<"Sw<3,3,3> o 0 o 8192:1">
        %i = "layout.apply"(%l, %index) : (!layout.layout<...>, index) -> index
    """
    index: Term = view.offset
    for c, d in zip(coords, view.stride, strict=True):
        index = b.add(index, offset_along(d, c, b))
    sw = view.swizzle
    if sw is None or sw.bits == 0:
        return index
    if isinstance(index, int):
        return sw(index)
    function = make(str(A.ComposedLayout(sw, 0, A.Layout(max(view.span, 1), 1))))
    return ir.Operation.create(
        "layout.apply", results=[ir.IndexType.get()], operands=[function.result, index]
    ).result


def element_address(view: View, coords: list[Term], b: IndexBuilder) -> ir.Value:
    """&view[coords]: base + swizzle(offset + sum(coord * stride)), as a typed GEP."""
    return gep(view.base, element_index(view, coords, b), view.elem, b)


def gep(base: ir.Value, index: Term, elem: ir.Type, b: IndexBuilder) -> ir.Value:
    """&base[index] in elements of `elem`."""
    if index == 0:
        return base
    i64 = arith.IndexCastOp(ir.IntegerType.get_signless(64), b.value(index)).result
    return llvm.GEPOp(
        base.type,
        base,
        [i64],
        ir.DenseI32ArrayAttr.get([GEP_DYNAMIC]),
        elem,
        ir.IntegerAttr.get(ir.IntegerType.get_signless(32), GEP_INBOUNDS),
    ).result


def all_of(conds: list[ir.Value | bool]) -> ir.Value | bool:
    """The conjunction, folding static truths: True, False or an i1 value."""
    result: ir.Value | bool = True
    for c in conds:
        if c is True:
            continue
        if c is False:
            return False
        result = c if result is True else arith.AndIOp(result, c).result
    return result


def less_than(b: IndexBuilder, lhs: Term, rhs: Term) -> ir.Value | bool:
    if isinstance(lhs, int) and isinstance(rhs, int):
        return lhs < rhs
    return arith.CmpIOp(arith.CmpIPredicate.slt, b.value(lhs), b.value(rhs)).result


def in_bounds(view: View, coords: list[Term], b: IndexBuilder) -> ir.Value | bool:
    """Whether the element at `coords` lies inside every bound of the view."""
    return all_of([less_than(b, position(x, coords, b), x.extent) for x in view.bounds])


def position(bound: Bound, coords: list[Term], b: IndexBuilder) -> Term:
    """Where the element at `coords` lies along `bound` (inside when below its extent)."""
    pos = bound.origin if bound.mode is None else b.add(bound.origin, coords[bound.mode])
    if bound.outer is not None:
        pos = b.add(pos, b.mul(coords[bound.outer[0]], bound.outer[1]))
    return pos


def row_step(view: View, rows: int) -> int | None:
    """How many elements `rows` rows down is when a swizzle passes it through untouched.

    A swizzle only reads and writes bits below the top of its yyy field: a static step that
    is a multiple of that span is the same step before and after it (None: it is not).
    """
    if isinstance(view.stride[0], Nest):
        return None
    step = rows * view.stride[0]
    return step if step % swizzle_span(view) == 0 else None


def swizzle_span(view: View) -> int:
    """The elements below the top of `view`'s swizzle's fields (1 without one): a swizzle
    reads and writes only those bits, so a multiple of the span passes through it untouched."""
    sw = view.swizzle
    return 1 << (sw.base + abs(sw.shift) + sw.bits) if sw is not None else 1


def row_below(view: View, at: ir.Value, first: list[Term], rows: int, b: IndexBuilder) -> ir.Value:
    """The address `rows` rows below the element at `first`, whose address is `at`."""
    step = row_step(view, rows)
    if step is not None:
        return gep(at, step, view.elem, b)
    return element_address(view, [b.add(first[0], rows), *first[1:]], b)

r"""Passes (lowered stage): what convert-tile-to-gpu has lowered each tile value to, in the IR.

A register tensor lowers to each thread's scalars. Between the op that makes it and the ops
that read it, those scalars live in the IR, not in Python: the lowering puts a
`builtin.unrealized_conversion_cast` of them to the tensor's `!tile.frag` type where the op
was, and the op's uses read the cast. A reader rebuilds its `Frag`, `Reduced` or plain value
from the cast's operands and the spread its type names (tile_spreads), so the type is the one
description of how they are laid out:

    %x = "tile.load"(%v) ... -> !tile.frag<f32, "(4,256):(1,4)", TV>
    %y = "tile.unary"(%x) {op = "exp"} ...
  →
    %a0 = ... %a7 = ...                                        (the load's 8 values a thread)
    %x = builtin.unrealized_conversion_cast %a0, ..., %a7 : f32, ... to !tile.frag<...>
    "tile.unary"(%x) ...                    (lowered next: reads %a0..%a7 back from the cast)

The order is `tile_carry.flatten`'s (a fragment's chunks, a reduced tensor's groups by key,
a one-element tensor's value), the one loops carry. The casts go when the tile ops do.

A view (`tile_views.View`: a base pointer, an element offset, extents, strides, bounds, a
swizzle) is a cast too: its operands are the base and the view's SSA index values, and a
`tile.view` attribute says where each part is, a static integer or `%i` (the cast's operand i):

    %t = "tile.local_tile"(%x, %by) {tile = array<i64: 64, 32>, coord = "(?,_)"} ...
  →
    %t = builtin.unrealized_conversion_cast %p, %o, %m, %n, %o2, %kt : ... to !tile.tensor<...>
           {tile.view = {offset = "%1", shape = "[64,32,%5]", stride = "[%2,1,32]",
                         bounds = "[[%4,%3,0,null],[0,%2,1,[2,32]]]", swizzle = "null", span = 0}}

(the element type and the space are the type's). What stays aside in Python: `Deferred`
register tensors (an epilogue computed where it is stored, chunk by chunk).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from mlir import ir

from tilec.binding import before
from tilec.dialects.layout import algebra as A
from tilec.lowering import LoweringError, Term
from tilec.lowering.tile_fragments import Deferred, Frag, Reduced
from tilec.lowering.tile_modes import Nest, Stride
from tilec.lowering.tile_spreads import PLAIN, UNDISTRIBUTED, Spread, decode, tv_text
from tilec.lowering.tile_views import Bound, View, tensor_type

CAST = "builtin.unrealized_conversion_cast"
SPREAD = "tile.spread"  # on a cast of a one-element reduced tensor: its TV layout as reduced
VIEW = "tile.view"  # on a cast of a view's values: where each part of the view is
PENDING = "tile.pending"  # on a cast of a value not lowered yet to the scalars it will be
VIEW_PARTS = ("offset", "shape", "stride", "bounds", "swizzle")
Cut = tuple[ir.Value, list[Term | None]] | None  # a slice's source view and coordinates
Lowered = View | Frag | Reduced | Deferred | ir.Value


class TileValues:
    """The lowered form of each tile value of one kernel: register tensors and views as
    casts (`put`, `get`), deferred tensors aside."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.aside: dict[ir.Value, Deferred] = {}
        self.casts: list[ir.Operation] = []  # erased after the tile ops that read them

    def put(self, op: ir.Operation, value: ir.Value, lowered: Lowered, cut: Cut = None) -> None:
        """Record `value` (a result of `op`) as lowered to `lowered`; a register tensor's
        scalars or a view's values become a cast at the insertion point, which `value`'s uses
        then read (`cut`: a slice's view, the view it was cut from and its coordinates)."""
        if isinstance(lowered, Deferred):
            self.aside[value] = lowered
            return
        if isinstance(lowered, View):
            c = view_cast(op, value.type, lowered, cut)
            self.casts.append(c)
        else:
            c = self.cast(op, value.type, lowered)
        value.replace_all_uses_with(c.results[0])

    def update(self, op: ir.Operation, value: ir.Value, lowered: Frag | Reduced | ir.Value) -> None:
        """`value` changed in place (a fill, an in-place gemm): a new cast of its scalars, which
        every use of it after `op` in program order reads from here on. `op` itself and a use
        before it (a later pass's tile op, an earlier pass's pending cast, a loop's initial
        value, a pending cast this pass made while lowering an op before `op`) keep reading the
        value as it was."""
        c = self.cast(op, value.type, lowered)
        uses = [(u.owner, u.operand_number) for u in value.uses]
        keep = [(o, i) for o, i in uses if not before(op, o)]  # op itself and what precedes it
        value.replace_all_uses_with(c.results[0])
        for owner, i in keep:
            owner.operands[i] = value

    def pending(self, op: ir.Operation, value: ir.Value) -> Frag | Reduced | ir.Value:
        """`value`, which a later pass lowers, as the scalars it will be lowered to: a cast of
        it to them here (tile.pending), which `reconcile` replaces by the scalars its lowering
        casts. The spread is its type's (a one-element reduction's: `reduced_tv`)."""
        typ = value.type
        tv = reduced_tv(value, self)
        spread, elem = self.spread(op, typ, tv), tensor_type(typ).elem
        width = (
            1
            if spread == PLAIN
            else len(group_keys(*spread))
            if isinstance(spread, tuple)
            else spread.iters * spread.vec
        )
        c = ir.Operation.create(CAST, [elem] * width, [value])
        c.attributes[PENDING] = ir.UnitAttr.get()
        return self.build(list(c.results), spread, elem)

    def cast(
        self, op: ir.Operation, typ: ir.Type, lowered: Frag | Reduced | ir.Value
    ) -> ir.Operation:
        scalars, spread = self.scalars(op, typ, lowered)
        c = ir.Operation.create(CAST, [typ], scalars)
        if spread is not None:
            c.attributes[SPREAD] = ir.StringAttr.get(spread)
        self.casts.append(c)
        return c

    def spread(self, op: ir.Operation, typ: ir.Type, tv: str | None = None) -> Spread:
        """The spread `typ`'s TV layout names (or `tv`, over `typ`'s shape); decode caches."""
        t = tensor_type(typ)
        if t is None or t.tv is None:
            raise LoweringError(op, UNDISTRIBUTED)
        try:
            return decode(tuple(A.flatten(A.shape(t.layout))), tv or t.tv, self.threads)
        except ValueError as err:
            raise LoweringError(op, str(err)) from None

    def scalars(
        self, op: ir.Operation, typ: ir.Type, lowered: object
    ) -> tuple[list[ir.Value], str | None]:
        """`lowered`'s scalars in cast order, checked against the layout its type names, and
        the TV layout of a one-element reduced tensor (its type's is plain: `tv_text`)."""
        spread, elem = self.spread(op, typ), tensor_type(typ).elem
        if isinstance(lowered, ir.Value) and spread == PLAIN:
            return [lowered], None
        if isinstance(lowered, Reduced) and lowered.elem == elem:
            own = (lowered.part, lowered.mode)
            if sorted(lowered.groups) == group_keys(*own) and spread in (own, PLAIN):
                tv = tv_text(own, self.threads) if spread == PLAIN else None
                return [lowered.groups[k] for k in sorted(lowered.groups)], tv
        if isinstance(lowered, Frag) and lowered.part == spread and lowered.elem == elem:
            if [len(row) for row in lowered.values] == [spread.vec] * spread.iters:
                return [v for row in lowered.values for v in row], None
        raise LoweringError(op, f"lowered to {type(lowered).__name__}, not as {typ} says")

    def get(self, value: ir.Value) -> Lowered | None:
        """What `value` was lowered to (None: nothing yet)."""
        if value in self.aside:
            return self.aside[value]
        owner = value.owner
        if not isinstance(owner, ir.Block) and owner.name == CAST and tensor_type(value.type):
            if VIEW in owner.attributes:
                return view_of(owner.operation, value.type)
            return self.read(owner.operation, value.type)
        return None

    def read(self, cast: ir.Operation, typ: ir.Type) -> Frag | Reduced | ir.Value:
        """The lowered value a cast of scalars to a register-tensor type stands for."""
        tv = ir.StringAttr(cast.attributes[SPREAD]).value if SPREAD in cast.attributes else None
        spread, elem = self.spread(cast, typ, tv), tensor_type(typ).elem
        return self.build(list(cast.operands), spread, elem)

    def build(
        self, scalars: list[ir.Value], spread: Spread, elem: ir.Type
    ) -> Frag | Reduced | ir.Value:
        """The value of `spread` made of `scalars` (in cast order)."""
        if spread == PLAIN:
            return scalars[0]
        if isinstance(spread, tuple):
            part, mode = spread
            groups = dict(zip(group_keys(part, mode), scalars, strict=True))
            return Reduced(part, mode, elem, groups)
        vec = spread.vec
        return Frag(spread, elem, [scalars[i * vec : (i + 1) * vec] for i in range(spread.iters)])


def reduced_tv(value: ir.Value, values: TileValues) -> str | None:
    """The TV layout, as reduced, of a one-element value a reduction makes (its type's TV
    layout is plain; its lowering is a reduced tensor of one group, see SPREAD): through
    cluster reductions and the loops that carry it to the reduce. None for any other value."""
    t = tensor_type(value.type)
    if t is None or math.prod(A.flatten(A.shape(t.layout))) != 1:
        return None
    owner = value.owner
    if isinstance(owner, ir.Block):  # a loop's iter_arg: its initial value's
        loop = owner.owner
        if loop.name != "scf.for" or value.arg_number == 0:
            return None
        return reduced_tv(loop.operands[3 + value.arg_number - 1], values)
    op = owner.operation
    if op.name == "scf.for":
        return reduced_tv(op.operands[3 + value.result_number], values)
    if op.name == "tile.cluster_reduce":
        return reduced_tv(op.operands[0], values)
    if op.name != "tile.reduce":
        return None
    part = values.spread(op, op.operands[0].type)
    return tv_text((part, ir.IntegerAttr(op.attributes["mode"]).value), values.threads)


def reconcile(pending: list[ir.Operation]) -> None:
    """Each pending cast (TileValues.pending) replaced by the scalars the value's lowering
    cast it to (a located error where they differ)."""
    for cast in pending:
        source = cast.operands[0].owner
        registers = (
            not isinstance(source, ir.Block)
            and source.name == CAST
            and VIEW not in source.attributes
            and PENDING not in source.attributes
        )
        lowered = list(source.operands) if registers else []
        if not registers or [v.type for v in lowered] != [r.type for r in cast.results]:
            raise LoweringError(cast, "a value was lowered otherwise than a later pass read it")
        for r, v in zip(cast.results, lowered, strict=True):
            r.replace_all_uses_with(v)
        cast.erase()


def group_keys(part: object, mode: int) -> list[tuple[int, int]]:
    """A reduced tensor's group keys, sorted: the order its scalars are cast and carried in."""
    return sorted({part.group_key(mode, i, j) for i in range(part.iters) for j in range(part.vec)})


def view_cast(op: ir.Operation, typ: ir.Type, view: View, cut: Cut = None) -> ir.Operation:
    """A cast of `view`'s base and SSA index values to its tensor type, with the tile.view
    attribute naming each part (its element type and space must be the type's); a slice's
    also names the view it was cut from (an operand too) and its coordinates (`cut`)."""
    t = tensor_type(typ)
    if t is None or (t.elem, t.space) != (view.elem, view.space):
        raise LoweringError(op, f"lowered to a {view.space} view of {view.elem}, not {typ}")
    operands: list[ir.Value] = [view.base]

    def term(x: Term) -> int | str:
        if isinstance(x, int):
            return x
        if x not in operands:
            operands.append(x)
        return f"%{operands.index(x)}"

    def bound(x: Bound) -> list[object]:
        outer = None if x.outer is None else [x.outer[0], term(x.outer[1])]
        return [term(x.origin), term(x.extent), x.mode, outer]

    sw = view.swizzle
    parts = {
        "offset": term(view.offset),
        "shape": [term(s) for s in view.shape],
        "stride": [stride_part(d, term) for d in view.stride],
        "bounds": [bound(x) for x in view.bounds],
        "swizzle": None if sw is None else [sw.bits, sw.base, sw.shift],
    }
    if cut is not None:
        source, coords = cut
        parts["cut"] = [term(source), [None if c is None else term(c) for c in coords]]
    c = ir.Operation.create(CAST, [typ], operands)
    attrs = {k: ir.StringAttr.get(render(v)) for k, v in parts.items()}
    attrs["span"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), view.span)
    c.attributes[VIEW] = ir.DictAttr.get(attrs)
    return c


def view_of(cast: ir.Operation, typ: ir.Type) -> View:
    """The view a cast with a tile.view attribute stands for."""
    attrs = ir.DictAttr(cast.attributes[VIEW])
    parts = {k: parse(cast, attrs, k) for k in VIEW_PARTS}
    term = terms(cast)

    def bound(x: list) -> Bound:
        origin, extent, mode, outer = x
        outer = None if outer is None else (outer[0], term(outer[1]))
        return Bound(term(origin), term(extent), mode, outer)

    t, sw = tensor_type(typ), parts["swizzle"]
    return View(
        t.elem,
        t.space,
        cast.operands[0],
        term(parts["offset"]),
        [term(s) for s in parts["shape"]],
        [stride_of(d, term) for d in parts["stride"]],
        None if sw is None else A.Swizzle(*sw),
        [bound(x) for x in parts["bounds"]],
        ir.IntegerAttr(attrs["span"]).value,
    )


def stride_part(d: Stride, term: Callable[[Term], int | str]) -> Part:
    """A mode's stride as a tile.view part: its term, or a nested mode's [[extents], [strides]]."""
    if isinstance(d, Nest):
        return [[term(e) for e in d.extents], [term(s) for s in d.strides]]
    return term(d)


def stride_of(part: Part, term: Callable[[int | str], Term]) -> Stride:
    """The stride a tile.view part names (`stride_part`'s inverse)."""
    if isinstance(part, list):
        extents, strides = part
        return Nest(tuple(term(e) for e in extents), tuple(term(s) for s in strides))
    return term(part)


def cut_of(value: ir.Value) -> tuple[ir.Value, list[Term | None]] | None:
    """Of a slice's view: the view it was cut from and its coordinates (None: not a slice's)."""
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != CAST or VIEW not in owner.attributes:
        return None
    attrs = ir.DictAttr(owner.attributes[VIEW])
    if "cut" not in attrs:
        return None
    source, coords = parse(owner, attrs, "cut")
    term = terms(owner)
    return term(source), [None if c is None else term(c) for c in coords]


def terms(cast: ir.Operation) -> Callable[[int | str], Term]:
    """Reads a part of a view's cast: a static integer, or `%i`, the cast's operand i."""
    operands = list(cast.operands)
    return lambda x: x if isinstance(x, int) else operands[int(x[1:])]


# A tile.view part: a static integer, `%i` (the cast's operand i), `_` (none) or a list of parts.
PART_TOKEN = re.compile(r"\[|\]|,|_|%\d+|-?\d+")
Part = int | str | None | list


def render(part: Part) -> str:
    if isinstance(part, list):
        return "[" + ",".join(render(x) for x in part) + "]"
    return "_" if part is None else str(part)


def parse(cast: ir.Operation, attrs: ir.DictAttr, key: str) -> Part:
    """The part `key` of a cast's tile.view (a located error when it is not one)."""
    text = ir.StringAttr(attrs[key]).value if key in attrs else ""
    try:
        return parse_part(text)
    except ValueError:
        raise LoweringError(cast, f"tile.view's {key} is not a view's part: '{text}'") from None


def parse_part(text: str) -> Part:
    """A tile.view part from its text, exactly as `render` writes it (ValueError otherwise)."""
    tokens = PART_TOKEN.findall(text)
    at = 0

    def item() -> Part:
        nonlocal at
        token, at = tokens[at], at + 1
        if token != "[":
            return None if token == "_" else token if token[0] == "%" else int(token)
        items: list[Part] = []
        while tokens[at] != "]":
            items.append(item())
            at += tokens[at] == ","
        at += 1
        return items

    try:
        part = item()
    except IndexError:
        raise ValueError(text) from None
    if at != len(tokens) or "".join(tokens) != text or render(part) != text:
        raise ValueError(text)
    return part

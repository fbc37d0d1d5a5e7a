r"""Passes (lowered stage): register tensors carried by loops, and how a fragment is spread.

A `var` that a loop updates is an `scf.for` iter_arg of register-tensor type in the tile
stage. convert-tile-to-gpu lowers register tensors to per-thread scalars, so such a loop is
rebuilt to carry those scalars instead, flattened in one fixed order per value:

    %r = scf.for ... iter_args(%s = %init) -> !tile.tensor<f32, "register", "(1,4096)">
      →
    %r:32 = scf.for ... iter_args(%s0 = %i0, ..., %s31 = %i31) -> (f32, ..., f32)

Inside the body and after the loop, `builtin.unrealized_conversion_cast` ops stand for the
old tile values (what the remaining tile ops use) and map to the scalars; they go when the
tile ops do. A tensor of one element lowers to a plain value that every thread holds, so a
running max or sum (`var m = fragment<f32>((1, 1)) = -inf`) is one scalar per thread, and a
reduction's result (`Reduced`, the same in every thread) is carried as that scalar.

A `fragment<T>(shape)` has no memory to read, so it takes the spread of the tensors it meets:
the loads its values flow into or out of, through elementwise ops and loop iter_args (see
`spread_of`). Without any, it is spread along its last mode, 16 bytes per chunk.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from mlir import ir
from mlir.dialects import llvm, scf

from tilec.dialects.layout import algebra as A
from tilec.lowering import LoweringError
from tilec.passes.tile_access import VECTOR_BYTES, choose_partition, largest_pow2_dividing
from tilec.passes.tile_fragments import Frag, Partition, Reduced
from tilec.passes.tile_loops import moved_loop
from tilec.passes.tile_views import elem_bytes, tensor_type

Lowered = Frag | Reduced | ir.Value
# Ops whose result is spread as their full-shape register operands (one element each).
SAME_SPREAD = ("tile.binary", "tile.unary", "tile.convert", "tile.compare", "tile.select")


def carries_tiles(loop: ir.Operation) -> bool:
    """Whether an scf.for carries a register tensor (a `var` the loop updates)."""
    return any(tensor_type(r.type) is not None for r in loop.results)


def single(typ: ir.Type) -> bool:
    """Whether a register-tensor type holds one element (lowered to a plain value)."""
    t = tensor_type(typ)
    return t is not None and A.size(t.layout) == 1


def flatten(op: ir.Operation, value: Lowered, like: Lowered) -> list[ir.Value]:
    """The scalars of `value`, laid out as `like` (the loop's initial value) carries them."""
    if isinstance(like, ir.Value):
        if isinstance(value, Reduced) and len(value.groups) == 1:
            return list(value.groups.values())
        if isinstance(value, ir.Value):
            return [value]
    elif isinstance(like, Reduced):
        if isinstance(value, ir.Value):
            return [value] * len(like.groups)
        if isinstance(value, Reduced) and (value.part, value.mode) == (like.part, like.mode):
            return [value.groups[k] for k in sorted(like.groups)]
    elif isinstance(value, Frag) and value.part == like.part:
        return [v for row in value.values for v in row]
    raise LoweringError(
        op, "a loop's value must stay spread over the threads as it was when the loop began"
    )


def unflatten(like: Lowered, values: list[ir.Value]) -> Lowered:
    """`like`'s kind of value made of `values` (as `flatten` ordered them)."""
    if isinstance(like, ir.Value):
        return values[0]
    if isinstance(like, Reduced):
        groups = dict(zip(sorted(like.groups), values, strict=True))
        return Reduced(like.part, like.mode, like.elem, groups)
    vec = like.part.vec
    rows = [values[i * vec : (i + 1) * vec] for i in range(like.part.iters)]
    return Frag(like.part, like.elem, rows)


def cast(values: list[ir.Value], typ: ir.Type) -> ir.Operation:
    return ir.Operation.create("builtin.unrealized_conversion_cast", [typ], values)


def width(like: Lowered) -> int:
    """How many scalars a carried value of `like`'s kind is."""
    if isinstance(like, ir.Value):
        return 1
    if isinstance(like, Reduced):
        return len(like.groups)
    return like.part.iters * like.part.vec


class CarriedLoop:
    """One rebuilt loop, and how each iter_arg was lowered at its start (None: not a tile),
    so that its yield is flattened alike."""

    def __init__(self, loop: ir.Operation, lowered: dict, casts: list) -> None:
        self.likes: list[Lowered | None] = []
        inits: list[ir.Value] = []
        for v in list(loop.operands)[3:]:
            like = lowered.get(v) if tensor_type(v.type) is not None else None
            if tensor_type(v.type) is not None and like is None:
                raise LoweringError(loop, "a loop's initial value was not lowered")
            self.likes.append(like)
            inits += [v] if like is None else flatten(loop, like, like)
        new = moved_loop(loop, inits, keep_yield=True)
        first = list(new.body.operations)[0]
        with ir.InsertionPoint(first), loop.location:
            old_args = list(loop.regions[0].blocks[0].arguments)[1:]
            self.bind(old_args, list(new.inner_iter_args), lowered, casts)
        with ir.InsertionPoint(loop), loop.location:
            self.bind(list(loop.results), list(new.results), lowered, casts)
        loop.erase()
        self.loop = new.operation

    def bind(self, olds: list, news: list, lowered: dict, casts: list) -> None:
        """Replace each old value by a cast of its new scalars, lowered to them."""
        rest = iter(news)
        for old, like in zip(olds, self.likes, strict=True):
            if like is None:
                old.replace_all_uses_with(next(rest))
                continue
            part = [next(rest) for _ in range(width(like))]
            c = cast(part, old.type)
            old.replace_all_uses_with(c.results[0])
            lowered[c.results[0]] = unflatten(like, part)
            casts.append(c)

    def yield_(self, op: ir.Operation, lowered: dict) -> None:
        """The body's scf.yield of tile values, replaced by one of their scalars."""
        values: list[ir.Value] = []
        for v, like in zip(op.operands, self.likes, strict=True):
            if like is None:
                values.append(v)
            elif v not in lowered:
                raise LoweringError(op, "a loop's value was not lowered")
            else:
                values += flatten(op, lowered[v], like)
        with ir.InsertionPoint(op), op.location:
            scf.YieldOp(values)
        op.erase()


# How a fragment is spread -----------------------------------------------------------------------


def fresh(op: ir.Operation, threads: int) -> Lowered:
    """A `tile.fragment` without an MMA, its values undefined until a fill (undef keeps them
    out of local memory): a plain value (one element), a `Reduced` (spread as a reduction's
    result, one value per group) or a `Frag`."""
    elem = tensor_type(op.results[0].type).elem
    undef = llvm.UndefOp(elem).result
    if single(op.results[0].type):
        return undef
    part = spread_of(op, threads)
    if isinstance(part, tuple):
        part, mode = part
        keys = {part.group_key(mode, i, j) for i in range(part.iters) for j in range(part.vec)}
        return Reduced(part, mode, elem, dict.fromkeys(sorted(keys), undef))
    return Frag(part, elem, [[undef] * part.vec for _ in range(part.iters)])


def filled(value: ir.Value | Reduced, c: ir.Value) -> ir.Value | Reduced:
    """A one-element tensor, or a reduction-spread fragment, with every value `c`."""
    if isinstance(value, Reduced):
        return Reduced(value.part, value.mode, value.elem, dict.fromkeys(value.groups, c))
    return c


def spread_of(op: ir.Operation, threads: int) -> Partition | tuple[Partition, int]:
    """The partition of a `tile.fragment` without an MMA: that of a load it meets (see the
    module docstring), else along its last mode in 16-byte chunks. A fragment that meets a
    reduction's result (a running max of several rows, `fragment<f32>((ROWS, 1))`) is spread as
    that result: (the reduced tensor's partition, the mode), lowered to a `Reduced`."""
    return spread_of_value(op.results[0], threads)


def spread_of_value(value: ir.Value, threads: int) -> Partition | tuple[Partition, int]:
    t = tensor_type(value.type)
    shape = tuple(A.flatten(A.shape(t.layout)))
    seen: set[ir.Value] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in seen or tensor_type(v.type) is None:
            continue
        seen.add(v)
        found = anchor(v, shape, threads)
        if found is not None:
            return found
        owner = v.owner
        if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "tile.reduce":
            source = spread_of_value(owner.operands[0], threads)
            if isinstance(source, Partition):
                return source, ir.IntegerAttr(owner.attributes["mode"]).value
        todo += neighbours(v, shape)
    m = max((k for k, s in enumerate(shape) if s > 1), default=len(shape) - 1)
    vec = largest_pow2_dividing(shape[m], max(1, VECTOR_BYTES // elem_bytes(t.elem)))
    return Partition(shape, m, vec, threads)


def anchor(v: ir.Value, shape: tuple[int, ...], threads: int) -> Partition | None:
    """The spread of `v` if a plain load made it (from its tile's type), else None."""
    owner = v.owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "tile.load":
        return None
    if len(owner.operands) > 1:
        return None  # load(t, like = x): x's spread, found through `neighbours`
    src = tensor_type(owner.operands[0].type)
    inner = src.layout.inner if isinstance(src.layout, A.ComposedLayout) else src.layout
    stride = [d if isinstance(d, int) else None for d in A.flatten(inner.stride)]
    swizzle = src.layout.outer if isinstance(src.layout, A.ComposedLayout) else None
    view = SimpleNamespace(stride=stride, elem=src.elem, swizzle=swizzle)
    if len(stride) != len(shape) or math.prod(shape) != A.size(src.layout):
        return None
    return choose_partition(view, shape, threads)  # type: ignore[arg-type]


def neighbours(v: ir.Value, shape: tuple[int, ...]) -> list[ir.Value]:
    """Values spread as `v` is: across elementwise ops (not broadcasts), load's like, loops."""
    out: list[ir.Value] = []
    owner = v.owner
    if isinstance(owner, ir.Operation | ir.OpView):
        op = owner.operation
        if op.name in SAME_SPREAD or (op.name == "tile.load" and len(op.operands) > 1):
            out += [x for x in op.operands if full(x, shape)]
        if op.name == "scf.for":
            n = list(op.results).index(v)
            out += [op.operands[3 + n], yielded(op, n), op.regions[0].blocks[0].arguments[1 + n]]
    elif isinstance(owner, ir.Block):
        loop = owner.owner
        if loop.name == "scf.for" and v.arg_number > 0:
            n = v.arg_number - 1
            out += [loop.operands[3 + n], yielded(loop, n), loop.results[n]]
    for use in v.uses:
        user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if user.name in SAME_SPREAD or (user.name == "tile.load" and use.operand_number == 1):
            out += [r for r in user.results if full(r, shape)]
        elif user.name == "scf.for" and use.operand_number >= 3:
            n = use.operand_number - 3
            out += [user.results[n], user.regions[0].blocks[0].arguments[1 + n]]
        elif user.name == "scf.yield" and user.parent.name == "scf.for":
            loop = user.parent
            n = use.operand_number
            out += [loop.results[n], loop.regions[0].blocks[0].arguments[1 + n]]
    return out


def yielded(loop: ir.Operation, n: int) -> ir.Value:
    return list(loop.regions[0].blocks[0].operations)[-1].operands[n]


def full(v: ir.Value, shape: tuple[int, ...]) -> bool:
    t = tensor_type(v.type)
    return t is not None and tuple(A.flatten(A.shape(t.layout))) == shape

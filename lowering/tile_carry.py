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

How each register tensor is spread over the threads (a `fragment` without an MMA included)
is tile-distribute's decision, read here from the `!tile.frag` types.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm, scf

from tilec.binding import enclosing_loops, walk
from tilec.lowering import LoweringError
from tilec.lowering.tile_fragments import Frag, Reduced
from tilec.lowering.tile_loops import moved_loop
from tilec.lowering.tile_spreads import PLAIN, single, spread_of_type
from tilec.lowering.tile_values import TileValues
from tilec.lowering.tile_views import tensor_type
from tilec.passes.tile_carry_accumulators import defining_block
from tilec.passes.tile_pipeline import PREFETCH

Lowered = Frag | Reduced | ir.Value


def carries_tiles(loop: ir.Operation) -> bool:
    """Whether an scf.for carries a register tensor (a `var` the loop updates)."""
    return any(tensor_type(r.type) is not None for r in loop.results)


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


def width(like: Lowered) -> int:
    """How many scalars a carried value of `like`'s kind is."""
    if isinstance(like, ir.Value):
        return 1
    if isinstance(like, Reduced):
        return len(like.groups)
    return like.part.iters * like.part.vec


class CarriedLoop:
    """One rebuilt loop, and how each iter_arg was lowered at its start (None: not a tile),
    so that its yield is flattened alike. `extra` are fragments the lowering carries after
    the iter_args (a prefetching gemm's next k-step, loaded before the loop): inside the body
    their values become the new iter_args, and the yield passes on what they hold by then."""

    def __init__(
        self, loop: ir.Operation, values: TileValues, extra: list[Frag] | None = None
    ) -> None:
        self.likes: list[Lowered | None] = []
        self.extra = extra or []
        inits: list[ir.Value] = []
        for v in list(loop.operands)[3:]:
            like = values.get(v) if tensor_type(v.type) is not None else None
            if tensor_type(v.type) is not None and like is None:
                raise LoweringError(loop, "a loop's initial value was not lowered")
            self.likes.append(like)
            inits += [v] if like is None else flatten(loop, like, like)
        inits += [v for f in self.extra for row in f.values for v in row]
        new = moved_loop(loop, inits, keep_yield=True)
        first = list(new.body.operations)[0]
        inner = list(new.inner_iter_args)
        with ir.InsertionPoint(first), loop.location:
            old_args = list(loop.regions[0].blocks[0].arguments)[1:]
            self.bind(loop, old_args, inner, values)
        rest = iter(inner[len(inner) - sum(len(row) for f in self.extra for row in f.values) :])
        for f in self.extra:
            f.values = [[next(rest) for _ in row] for row in f.values]
        with ir.InsertionPoint(loop), loop.location:
            self.bind(loop, list(loop.results), list(new.results), values)
        loop.erase()
        self.loop = new.operation

    def bind(self, loop: ir.Operation, olds: list, news: list, values: TileValues) -> None:
        """Replace each old value (an iter_arg or a result of the loop being replaced) by a
        cast of its new scalars (tile_values): every use reads them, as every use is inside
        the loop or after it."""
        rest = iter(news)
        for old, like in zip(olds, self.likes, strict=True):
            if like is None:
                old.replace_all_uses_with(next(rest))
                continue
            part = [next(rest) for _ in range(width(like))]
            values.put(loop, old, unflatten(like, part))

    def yield_(self, op: ir.Operation, values: TileValues) -> None:
        """The body's scf.yield of tile values, replaced by one of their scalars."""
        scalars: list[ir.Value] = []
        for v, like in zip(op.operands, self.likes, strict=True):
            if like is None:
                scalars.append(v)
            elif (lowered := values.get(v)) is None:
                raise LoweringError(op, "a loop's value was not lowered")
            else:
                scalars += flatten(op, lowered, like)
        scalars += [v for f in self.extra for row in f.values for v in row]
        with ir.InsertionPoint(op), op.location:
            scf.YieldOp(scalars)
        op.erase()


CARRY_FIRST = (
    "a gemm that updates an accumulator made outside its loop must be in its value form, the "
    "accumulator an iter_arg of that loop (tile-carry-accumulators writes it so)"
)


def prefetching(loop: ir.Operation) -> list[ir.Operation]:
    """The prefetching gemms whose innermost loop is `loop`."""
    found: list[ir.Operation] = []

    def visit(o: ir.Operation) -> None:
        if o.name == "tile.gemm" and PREFETCH in o.attributes:
            if enclosing_loops(o, loop.parent)[-1].operation == loop.operation:
                found.append(o)

    walk(loop, visit)
    return found


def updated_across_loop(gemm: ir.Operation) -> bool:
    """Whether an in-place gemm sits in a loop that its accumulator was made outside of."""
    home = defining_block(gemm.operands[3])
    block, holder = gemm.block, gemm.parent
    while block != home and holder is not None:
        if holder.name == "scf.for":
            return True
        block, holder = holder.block, holder.parent
    return False


# How a fragment is spread -----------------------------------------------------------------------


def fresh(op: ir.Operation, threads: int) -> Lowered:
    """A `tile.fragment` without an MMA, spread as its type says (tile-distribute), its values
    undefined until a fill (undef keeps them out of local memory): a plain value (one
    element), a `Reduced` (spread as a reduction's result, one value per group) or a `Frag`."""
    elem = tensor_type(op.results[0].type).elem
    undef = llvm.UndefOp(elem).result
    part = spread_of_type(op, op.results[0], threads)
    if single(op.results[0].type) or part == PLAIN:
        return undef
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

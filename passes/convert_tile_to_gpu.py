"""Passes: `convert-tile-to-gpu`, the last rung of the SM80 lowering: register tensors in loops.

It lowers what is left of a tile kernel once the other rungs have run: register tensors made
without an MMA (`tile.fragment`, undefined until a `tile.fill`) and the loops that carry
register tensors (rebuilt to carry each thread's scalars, tile_carry). Then it reconciles every
pending cast an earlier rung left (the scalars a later rung was to lower a value to, checked
against what it did) and erases the tile ops and casts, so no tile value remains.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir

from tilec.binding import attr_number, walk
from tilec.lowering import (
    IndexBuilder,
    LoweringError,
    tile_carry,
    tile_mma,
    tile_remat,
    tile_spreads,
    tile_values,
)
from tilec.lowering.tile_fragments import Frag, Reduced, constant
from tilec.lowering.tile_refusals import EARLIER, region_refusal
from tilec.lowering.tile_rungs import Rung, erase_lowered
from tilec.lowering.tile_values import CAST, PENDING
from tilec.lowering.tile_views import View, tensor_type
from tilec.passes.base import Pass, register
from tilec.passes.convert_tile_mma import mma_spread


class KernelLowering(Rung):
    """The state of one kernel: what each tile value has become (a View or a register Frag).
    The last rung: every value it reads is lowered already, by an earlier rung or before it in
    program order (`operand` is strict, never pending)."""

    def __init__(self, func: ir.Operation, module: ir.Operation) -> None:
        super().__init__(func, module)
        # Loops that carry register tensors, by their body's scf.yield.
        self.carrying: list[tuple[ir.Operation, tile_carry.CarriedLoop]] = []

    def get(self, op: ir.Operation, value: ir.Value) -> View | Frag | Reduced:
        lowered = self.values.get(value)
        if lowered is None:
            raise LoweringError(op, "operand was not produced by a lowered tile op")
        return lowered

    def operand(self, op: ir.Operation, value: ir.Value) -> Frag | Reduced | ir.Value:
        return value if tensor_type(value.type) is None else self.get(op, value)

    def lower(self, op: ir.Operation) -> None:
        """Lower one tile op by its entry in LOWERINGS; an op without one is a located error."""
        name = op.name
        self.enter(op)
        lowering = LOWERINGS.get(name)
        if lowering is None:
            why = EARLIER.get(name, "is not lowered by convert-tile-to-gpu yet")
            raise LoweringError(op, f"'{name}' {why}")
        result = lowering(self, op, IndexBuilder())
        if result is not None:
            self.put(op, result)

    def fragment(self, op: ir.Operation, b: IndexBuilder) -> Frag | Reduced | ir.Value:
        if op.operands:  # an MMA's accumulator
            raise LoweringError(op, f"'tile.fragment' of an MMA {MMA_FIRST}")
        return tile_carry.fresh(op, self.threads)

    def fill(self, op: ir.Operation, b: IndexBuilder) -> None:
        target = op.operands[0]
        if mma_spread(target, self.threads):
            raise LoweringError(op, f"'tile.fill' of an MMA's accumulator {MMA_FIRST}")
        number = attr_number(op.attributes["value"])
        value = self.get(op, target)
        if isinstance(value, Frag):
            tile_mma.fill(value, number)
        else:  # one element, or one per group of a reduction's spread: the number each
            c = constant(tensor_type(target.type).elem, number)
            value = tile_carry.filled(value, c)
        self.values.update(op, target, value)

    def carried_loop(self, op: ir.Operation, b: IndexBuilder) -> None:
        """A loop that carries register tensors: rebuilt to carry their scalars (and, after
        them, what convert-tile-mma made it carry: a prefetching gemm's next fragments)."""
        terminator = list(op.regions[0].blocks[0].operations)[-1]
        self.carrying.append((terminator, tile_carry.CarriedLoop(op, self.values)))

    def carried_yield(self, op: ir.Operation, b: IndexBuilder) -> None:
        carried = next(c for y, c in self.carrying if y == op)
        carried.yield_(op, self.values)


Lowering = Callable[[KernelLowering, ir.Operation, IndexBuilder], "View | Frag | Reduced | None"]
# Every tile op convert-tile-to-gpu lowers, by name; `KernelLowering.lower` refuses the rest.
LOWERINGS: dict[str, Lowering] = {
    "tile.fragment": KernelLowering.fragment,
    "tile.fill": KernelLowering.fill,
    "scf.for": KernelLowering.carried_loop,
    "scf.yield": KernelLowering.carried_yield,
    # a split unit's facts (tile-schedule), read by tile-ring and convert-tile-reductions
    "tile.work_unit": lambda self, op, b: None,
}
MMA_FIRST = "is lowered by convert-tile-mma, which must run first"


def lowered_here(op: ir.Operation) -> bool:
    """Tile ops, and the loops (with their yields) that carry register tensors."""
    if op.name.startswith("tile."):
        return True
    if op.name == "scf.for":
        return tile_carry.carries_tiles(op)
    parent = op.parent
    return op.name == "scf.yield" and parent.name == "scf.for" and tile_carry.carries_tiles(parent)


@register
class ConvertTileToGpu(Pass):
    """Lower register tensors without an MMA and the loops that carry register tensors, then
    reconcile the earlier rungs' pending casts and erase every tile op and cast:

        %r = scf.for ... iter_args(%s = %init) -> !tile.frag<f32, "(256):(1)", TV>
      →
        %r:4 = scf.for ... iter_args(%s0 = %i0, ..., %s3 = %i3) -> (f32, f32, f32, f32)

    See the module's docstring; every other rung of the `lowered` stage runs first.
    """

    name = "convert-tile-to-gpu"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lambda func: lower_kernel(func, module))


def lower_kernel(func: ir.Operation, module: ir.Operation) -> None:
    """Lower one kernel in place (a LoweringError says why it cannot be)."""
    ops: list[ir.Operation] = []
    refused: list[tuple[ir.Operation, str]] = []
    bare: list[ir.Operation] = []
    casts: list[ir.Operation] = []  # the earlier passes' casts to tile types
    pending: list[ir.Operation] = []  # their reads of what is lowered here

    def visit(op: ir.Operation) -> None:
        refused.extend(region_refusal(op))
        if lowered_here(op):
            ops.append(op)
        elif op.name == CAST and PENDING in op.attributes:
            pending.append(op)
        elif op.name == CAST and tensor_type(op.results[0].type) is not None:
            casts.append(op)
        if not bare and tile_spreads.undistributed_result(op):
            bare.append(op)

    walk(func, visit)
    names = [op.name for op in ops]  # loops are rebuilt (and their old ops erased) on the way
    if refused:
        raise LoweringError(*refused[0])
    if bare:
        raise LoweringError(bare[0], tile_spreads.UNDISTRIBUTED)
    kernel = KernelLowering(func, module)
    for op in ops:
        with ir.InsertionPoint(op), op.location:
            kernel.lower(op)
    tile_values.reconcile(pending)
    tile_ops = [o for o, name in zip(ops, names, strict=True) if name.startswith("tile.")]
    tile_remat.untag(func)
    erase_lowered([*casts, *kernel.values.casts, *tile_ops])  # tile ops first, then their casts

"""Passes: `convert-tile-to-gpu`, tile kernels expanded in place into gpu/scf/arith/math/llvm."""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir

from tilec.binding import is_float_attr, walk
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.passes import (
    tile_carry,
    tile_mma,
    tile_mma_regs,
    tile_pipeline,
    tile_remat,
    tile_spreads,
    tile_values,
    tile_views,
)
from tilec.passes.base import Pass, register
from tilec.passes.tile_fragments import (
    Frag,
    Reduced,
    constant,
)
from tilec.passes.tile_refusals import EARLIER, region_refusal
from tilec.passes.tile_rungs import Rung, erase_lowered
from tilec.passes.tile_values import CAST, PENDING, cut_of
from tilec.passes.tile_views import View, tensor_type


class KernelLowering(Rung):
    """The state of one kernel: what each tile value has become (a View or a register Frag).
    The last rung: every value it reads is lowered already, by an earlier rung or before it in
    program order (`operand` is strict, never pending)."""

    def __init__(self, func: ir.Operation, module: ir.Operation) -> None:
        super().__init__(func, module)
        # Each prefetching gemm's next k-step fragments, which its loop carries (carried_loop).
        self.ahead: list[tuple[ir.Operation, Frag]] = []
        # Loops that carry register tensors, by their body's scf.yield.
        self.carrying: list[tuple[ir.Operation, tile_carry.CarriedLoop]] = []

    def get(self, op: ir.Operation, value: ir.Value) -> View | Frag | Reduced:
        lowered = self.values.get(value)
        if lowered is None:
            raise LoweringError(op, "operand was not produced by a lowered tile op")
        return lowered

    def operand(self, op: ir.Operation, value: ir.Value) -> Frag | Reduced | ir.Value:
        return value if tensor_type(value.type) is None else self.get(op, value)

    def stage_view(self, gemm: ir.Operation, operand: int, step: int | None) -> View:
        """Of a prefetching gemm's operand (one stage of a pipelined buffer, as tile-pipeline
        slices it): stage 0 (`step` None), or the stage `step` after the one it reads."""
        cut = cut_of(gemm.operands[operand])
        index = next((c for c in cut[1] if not isinstance(c, int | None)), None) if cut else None
        if index is None:
            raise LoweringError(gemm, "a prefetching gemm reads stages of pipelined buffers")
        staged = self.view(gemm, cut[0])
        b, stages = IndexBuilder(), staged.shape[-1]
        stage: Term = 0 if step is None else b.rem(b.add(index, step), stages)
        return tile_views.slice_at(staged, [None] * (len(staged.shape) - 1) + [stage], b)

    def preload(self, gemm: ir.Operation, acc: Frag) -> Frag:
        """Before a prefetching gemm's loop: k-step 0 of the first stage (`acc`: the
        accumulator the loop starts from)."""
        a, bv = self.stage_view(gemm, 1, None), self.stage_view(gemm, 2, None)
        return tile_mma.preload(gemm, a, bv, acc, self.tid)

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

    def tiled_mma(self, op: ir.Operation, b: IndexBuilder) -> None:
        pass  # its type says it all; fragment and gemm read it

    def fragment(self, op: ir.Operation, b: IndexBuilder) -> Frag | Reduced | ir.Value:
        if op.operands:
            return tile_mma.fragment(op, op.operands[0].type, self.threads)
        return tile_carry.fresh(op, self.threads)

    def fill(self, op: ir.Operation, b: IndexBuilder) -> None:
        attr = op.attributes["value"]
        number = (ir.FloatAttr if is_float_attr(attr) else ir.IntegerAttr)(attr).value
        target = op.operands[0]
        value = self.get(op, target)
        if isinstance(value, Frag):
            tile_mma.fill(value, number)
        else:  # one element, or one per group of a reduction's spread: the number each
            c = constant(tensor_type(target.type).elem, number)
            value = tile_carry.filled(value, c)
        self.values.update(op, target, value)

    def carried_loop(self, op: ir.Operation, b: IndexBuilder) -> None:
        """A loop that carries register tensors: rebuilt to carry their scalars, and after them
        the next k-step fragments of each prefetching gemm it holds (loaded before it)."""
        ahead = []
        for gemm in tile_carry.prefetching(op):
            acc = gemm.operands[3]
            if not (
                isinstance(acc, ir.BlockArgument) and acc.owner.owner.operation == op.operation
            ):
                raise LoweringError(gemm, tile_carry.CARRY_FIRST)
            init = self.accumulator(gemm, op.operands[3 + acc.arg_number - 1])
            with ir.InsertionPoint(op), gemm.location:
                ahead.append(self.preload(gemm, init))
            self.ahead.append((gemm, ahead[-1]))
        terminator = list(op.regions[0].blocks[0].operations)[-1]
        carried = tile_carry.CarriedLoop(op, self.values, ahead)
        self.carrying.append((terminator, carried))

    def carried_yield(self, op: ir.Operation, b: IndexBuilder) -> None:
        carried = next(c for y, c in self.carrying if y == op)
        carried.yield_(op, self.values)

    def gemm(self, op: ir.Operation, b: IndexBuilder) -> Frag | None:
        if tile_pipeline.PREFETCH in op.attributes:
            frags = next((f for gemm, f in self.ahead if gemm == op), None)
            if not op.results or frags is None:
                raise LoweringError(op, tile_carry.CARRY_FIRST)
            tiles = (self.view(op, op.operands[1]), self.view(op, op.operands[2]))
            following = (self.stage_view(op, 1, 1), self.stage_view(op, 2, 1))
            pending = ir.IntegerAttr(op.attributes[tile_pipeline.PREFETCH]).value
            acc = self.accumulator(op, op.operands[3])
            tile_mma.gemm_prefetch(op, tiles, following, acc, frags, self.tid, pending)
            return acc
        if not op.results and tile_carry.updated_across_loop(op):
            raise LoweringError(op, tile_carry.CARRY_FIRST)
        barriers = tile_pipeline.PIPELINED not in op.attributes
        a, bv = self.get(op, op.operands[1]), self.view(op, op.operands[2])
        acc = self.accumulator(op, op.operands[3])
        if isinstance(a, Frag):  # an accumulator as A: the FA2 trick
            tile_mma_regs.gemm_register_a(op, a, bv, acc, self.tid, barriers)
        else:
            tile_mma.gemm(op, self.view(op, op.operands[1]), bv, acc, self.tid, barriers)
        if op.results:
            return acc
        self.values.update(op, op.operands[3], acc)  # in place: what it reads from here on
        return None

    def accumulator(self, gemm: ir.Operation, value: ir.Value) -> Frag:
        """A gemm's accumulator `value`, its partition naming the atom of the gemm's tiled MMA
        (operand 0: the A/B element type, which the accumulator's type does not hold), its
        values a list of their own for the gemm to replace."""
        acc = self.frag(gemm, value)
        block = acc.part.block if isinstance(acc.part, tile_mma.MmaPartition) else ()
        part = tile_mma.mma_partition(gemm, gemm.operands[0].type, block)
        if part != acc.part:
            raise LoweringError(gemm, "the accumulator is not spread as this gemm's MMA's C")
        return Frag(part, acc.elem, [list(row) for row in acc.values])


Lowering = Callable[[KernelLowering, ir.Operation, IndexBuilder], "View | Frag | Reduced | None"]
# Every tile op convert-tile-to-gpu lowers, by name; `KernelLowering.lower` refuses the rest.
LOWERINGS: dict[str, Lowering] = {
    **{
        f"tile.{name}": getattr(KernelLowering, name)
        for name in (
            "tiled_mma",
            "fragment",
            "fill",
            "gemm",
        )
    },
    "scf.for": KernelLowering.carried_loop,
    "scf.yield": KernelLowering.carried_yield,
}


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
    """Expand tile kernels into gpu/scf/arith/math/llvm ops: views, vector copies, registers.

    Views become pointer + index math, block-level load/store/copy become per-thread 16-byte
    vector accesses (predicated versions for ragged edges), register tensors per-thread
    scalars, reductions shuffles + shared memory:

        %t = "tile.local_tile"(%x, %bid) {coord = "(?)", tile = array<i64: 4096>} : ...
        %a = "tile.load"(%t) {other = 0.0 : f32} : (...) -> !tile.tensor<f32, "register", ...>
      →
        %p = llvm.getelementptr inbounds %x1[%off] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
        %v = scf.if %in_bounds_and_aligned -> (f32, ...) {
          %q = llvm.load %p {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32> ...
        } else { ... scalar loads under scf.if, `other` outside ... }
    """

    name = "convert-tile-to-gpu"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lambda func: lower_kernel(func, module))


def lower_kernel(func: ir.Operation, module: ir.Operation) -> None:
    """Lower one kernel in place (a LoweringError says why it cannot be)."""
    ops: list[ir.Operation] = []
    order: list[ir.Operation] = []  # every op, in program order (TileValues.update)
    refused: list[tuple[ir.Operation, str]] = []
    bare: list[ir.Operation] = []
    casts: list[ir.Operation] = []  # the earlier passes' casts to tile types
    pending: list[ir.Operation] = []  # their reads of what is lowered here

    def visit(op: ir.Operation) -> None:
        order.append(op)
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
    kernel.values.ops = order
    for op in ops:
        with ir.InsertionPoint(op), op.location:
            kernel.lower(op)
    tile_values.reconcile(pending)
    tile_ops = [o for o, name in zip(ops, names, strict=True) if name.startswith("tile.")]
    tile_remat.untag(func)
    erase_lowered([*casts, *kernel.values.casts, *tile_ops])  # tile ops first, then their casts

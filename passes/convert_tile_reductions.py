"""Passes: `convert-tile-reductions`, reductions over the threads become shuffles and shared rows.

A rung of the SM80 lowering (after convert-tile-views). `tile.reduce` folds one
mode of a register tensor: first each thread's own values, then across the lanes of a warp
with `gpu.shuffle xor`, then across warps through a shared scratch row (`__reduce_<kernel>`,
an addrspace-3 global) and a barrier, a second barrier guarding the row's reuse inside a loop
(tile_reduce; an MMA accumulator's rows and columns by tile_reduce_mma); `tile.reduce_group`
combines runs of a mode's elements that lie in one thread's chunk, in its own values alone
(tile_fragments.reduce_group). `tile.cluster_reduce`
combines each thread's values with the same thread's in every block of the kernel's cluster
through distributed shared memory (tile_cluster), after a cluster barrier at the kernel's
entry, right after its thread index, so that no block writes into one not started yet. The
result is a reduced tensor, one value
per group of the threads that hold the same one, cast to its `!tile.frag` type (a one-element
result, whose type's TV layout is plain, names its reduced spread in `tile.spread`).

    %m = "tile.reduce"(%x) {kind = "max", mode = 1 : i64} : (!tile.frag<f32, L, TV>) -> ...
  →
    %a = arith.maximumf %x0, %x1 ... ; %s = gpu.shuffle xor %a, %c1, %c32 ... ;
    llvm.store ... : f32, !llvm.ptr<3> ; gpu.barrier ; ... llvm.load ... ; arith.maximumf ...
    %m = builtin.unrealized_conversion_cast %r0, %r1 : f32, f32 to !tile.frag<...>

Operands a later rung lowers are read as pending casts (tile_values), as in
convert-tile-elementwise.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.lowering import IndexBuilder, after, sm90_split, tile_cluster, tile_mma
from tilec.lowering.tile_fragments import Frag, reduce_group
from tilec.lowering.tile_reduce import reduce
from tilec.lowering.tile_reduce_mma import reduce_mma
from tilec.lowering.tile_roles import WARPGROUP
from tilec.lowering.tile_rungs import Rung, Value, lower_kernel
from tilec.passes.base import Pass, register


class Reductions(Rung):
    """The reductions of one kernel, lowered in program order."""

    def __init__(self, func: ir.Operation, module: ir.Operation) -> None:
        super().__init__(func, module)
        with after(self.first_tid.owner.operation), func.location:
            tile_cluster.enter(func)  # every block of the cluster started, before any exchange

    def lower(self, op: ir.Operation) -> None:
        self.enter(op)
        in_loop = op.parent.name != "func.func"  # the scratch row's reuse is guarded
        value = LOWERINGS[op.name](self, op, in_loop)
        if op.results:
            self.put(op, value)

    def reduce(self, op: ir.Operation, in_loop: bool) -> Value:
        frag = self.frag(op, op.operands[0])
        if isinstance(frag.part, tile_mma.MmaPartition):
            return reduce_mma(op, frag, self.tid, self.module, self.name, in_loop)
        return reduce(op, frag, self.tid, self.module, self.name, in_loop)

    def reduce_group(self, op: ir.Operation, in_loop: bool) -> Value:
        return reduce_group(op, self.frag(op, op.operands[0]))

    def cluster_reduce(self, op: ir.Operation, in_loop: bool) -> Value:
        attrs = self.func.attributes
        size = ir.IntegerAttr(attrs["tile.cluster"]).value if "tile.cluster" in attrs else 1
        value = self.operand(op, op.operands[0])
        return tile_cluster.cluster_reduce(
            op, value, self.tid, self.threads, self.module, self.name, size, in_loop
        )

    def unit_sum(self, op: ir.Operation, in_loop: bool) -> Value:
        """A split tile's accumulator summed over its units (sm90_split.gather), through the
        kernel's workspace, as the persistent loop's `tile.work_unit` says."""
        frag, parts, pointers, split = self.unit(op)
        summed = iter(sm90_split.gather(split, parts, pointers))
        return Frag(frag.part, frag.elem, [[next(summed) for _ in row] for row in frag.values])

    def unit_part(self, op: ir.Operation, in_loop: bool) -> None:
        """A peer's part of a split tile handed over (sm90_split.hand_over)."""
        _, parts, pointers, split = self.unit(op)
        sm90_split.hand_over(split, parts, pointers)

    def unit(self, op: ir.Operation) -> tuple:
        frag = self.frag(op, op.operands[0])
        split = sm90_split.unit_of(op)
        b = IndexBuilder()
        values = [v for row in frag.values for v in row]
        # the consumer thread's index, from the kernel's (read where it is used, as the rest
        # of the epilogue does: nothing more stays live across the main loop)
        if self.role.pingpong:
            thread = b.rem(self.first_tid, WARPGROUP)
        else:
            thread = b.sub(self.first_tid, self.role.first * WARPGROUP)
        leader = arith.CmpIOp(arith.CmpIPredicate.eq, b.value(thread), b.value(0)).result
        parts = sm90_split.Parts(values, thread, self.threads, leader)
        pointers = sm90_split.workspace(self.module, self.name, parts.slot_bytes)
        return frag, parts, pointers, split


LOWERINGS = {
    "tile.reduce": Reductions.reduce,
    "tile.reduce_group": Reductions.reduce_group,
    "tile.cluster_reduce": Reductions.cluster_reduce,
    "tile.unit_sum": Reductions.unit_sum,
    "tile.unit_part": Reductions.unit_part,
}


@register
class ConvertTileReductions(Pass):
    """Lower reductions to in-thread folds, warp shuffles and a shared row across warps.

    See the module's docstring; convert-tile-to-gpu reconciles the pending casts.
    """

    name = "convert-tile-reductions"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lambda func: lower_reductions(func, module))


def lower_reductions(func: ir.Operation, module: ir.Operation) -> None:
    """Lower one kernel's reductions in place."""
    lower_kernel(func, lambda op: op.name in LOWERINGS, lambda: Reductions(func, module).lower)

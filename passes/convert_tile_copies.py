"""Passes: `convert-tile-copies`, block-level copies become per-thread accesses, by atom family.

A rung of the SM80 lowering (after convert-tile-views, whose casts it reads; late in the stage,
before convert-tile-mma, as it makes many ops and each rung walks the kernel once). A
`tile.copy` moves a tile between two views with every thread of the block; its atom's family
(the name up to its first dot) picks the lowering from `FAMILIES`:

    auto        vector loads and stores of up to 16 bytes, chunk v for thread v mod T along the
                global side's unit-stride mode, predicated on the bounds (`tile_memory.copy`)
    cp_async    `cp.async` global → shared, zero-filling past the bounds, narrower forms for a
                misaligned source under `tile.narrow` (`tile_async.copy`)

Any other family is a located error naming what is lowered (`copy<tma>` belongs to a
warp_specialize kernel's producer, tile-ring). A cp.async copy issues only: one outside
a tile-pipeline loop needs the commit and waits tile-async-waits places, else it is refused.

    "tile.copy"(%src, %dst) {atom = "cp_async.cg.16"} : (!tile.tensor<f16, "global", ...>, ...)
  →
    nvvm.cp.async.shared.global %d, %s, 16, cache = cg, %n : !llvm.ptr<3>, !llvm.ptr<1>, i32

The thread index is the kernel's (`tile_remat.thread_index`), read afresh past the loop that
holds a GEMM (`tile_remat.Epilogue`), the same values convert-tile-to-gpu reads.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir

from tilec.lowering import LoweringError, tile_async, tile_memory
from tilec.lowering.tile_refusals import UNWAITED, unlowered_copy
from tilec.lowering.tile_rungs import Rung, lower_kernel
from tilec.lowering.tile_views import View
from tilec.passes import tile_async_waits, tile_pipeline
from tilec.passes.base import Pass, register

Copy = Callable[["Copies", ir.Operation, str, View, View], None]


class Copies(Rung):
    """The copies of one kernel, lowered in program order."""

    def lower(self, op: ir.Operation) -> None:
        atom = ir.StringAttr(op.attributes["atom"]).value
        family = FAMILIES.get(atom.split(".")[0])
        if family is None:
            raise LoweringError(op, unlowered_copy(atom))
        self.enter(op)
        family(self, op, atom, self.view(op, op.operands[0]), self.view(op, op.operands[1]))

    def auto(self, op: ir.Operation, atom: str, src: View, dst: View) -> None:
        tile_memory.copy(op, src, dst, self.tid, self.threads)

    def cp_async(self, op: ir.Operation, atom: str, src: View, dst: View) -> None:
        narrow = tile_async.NARROW in op.attributes
        tile_async.copy(op, atom, src, dst, self.tid, self.threads, narrow)
        placed = tile_async_waits.DONE in self.func.attributes  # the waits for it
        if tile_pipeline.PIPELINED not in op.attributes and not placed:
            raise LoweringError(op, UNWAITED)


# Copy atoms by family; any other is refused (tile_refusals.unlowered_copy says why).
FAMILIES: dict[str, Copy] = {"auto": Copies.auto, "cp_async": Copies.cp_async}


@register
class ConvertTileCopies(Pass):
    """Lower block-level copies to per-thread vector accesses or cp.async, by atom family.

    See the module's docstring; convert-tile-views must run first.
    """

    name = "convert-tile-copies"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lower_copies)


def lower_copies(func: ir.Operation) -> None:
    """Lower one kernel's copies in place (a LoweringError says why one cannot be)."""
    lower_kernel(func, lambda op: op.name == "tile.copy", lambda: Copies(func).lower)

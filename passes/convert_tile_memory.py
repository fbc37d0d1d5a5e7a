"""Passes: `convert-tile-memory`, block-level loads and stores of register tensors.

A rung of the SM80 lowering (after convert-tile-views). `tile.load` reads a tile
of a view into each thread's registers as its type's spread says (16-byte chunks along the
unit-stride mode, tile_memory), or as its `like` operand is spread (an MMA accumulator's pairs,
tile_epilogue); `tile.store` writes a register tensor into a view (a reduced tensor's one value
per group, an accumulator's pairs, or chunks), both predicated on the view's bounds and with a
uniform fast path when the tile is inside and aligned (docs/passes.md). An epilogue whose load
flows through elementwise ops alone into a store (marked `tile.deferred` by tile-distribute:
tile_epilogue.mark_deferred) is computed where it is stored, chunk by chunk: this pass lowers
that load, the elementwise ops on its value (deferred, with tile_elementwise's lowerings) and
the store together.

    %x = "tile.load"(%v) {other = 0.0 : f32} : (!tile.tensor<f32, "global", ...>) -> !tile.frag<...>
  →
    %x0, ... = scf.if %inside -> (f32, ...) { llvm.load ... vector<4xf32> ... } else { ... }
    %x = builtin.unrealized_conversion_cast %x0, ... : f32, ... to !tile.frag<...>

Operands a later rung lowers are read as pending casts (tile_values), as in
convert-tile-elementwise.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.binding import attr_number
from tilec.lowering import (
    LoweringError,
    sm90_epilogue,
    tile_elementwise,
    tile_epilogue,
    tile_memory,
    tile_mma,
    tile_mma_store,
    tile_spreads,
)
from tilec.lowering.tile_fragments import Partition, Reduced, constant, convert, elementwise
from tilec.lowering.tile_rungs import Rung, Value, lower_kernel
from tilec.lowering.tile_views import tensor_type
from tilec.passes.base import Pass, register

MASK_SPREAD = (
    "the mask is spread over the threads differently from the value stored (hint: make the "
    "mask from the value, e.g. coord(v, mode = 1) < n)"
)


class Memory(Rung):
    """The loads and stores of one kernel (and the deferred epilogues between), in order."""

    def lower(self, op: ir.Operation) -> None:
        self.enter(op)
        if op.name == "tile.store":
            self.store(op)
        elif op.name == "tile.load":
            self.put(op, self.load(op))
        else:  # an elementwise op on a deferred epilogue value
            self.put(op, tile_elementwise.LOWERINGS[op.name](self, op))

    def load(self, op: ir.Operation) -> Value:
        view = self.view(op, op.operands[0])
        other = constant(view.elem, attr_number(op.attributes["other"]))
        like = self.frag(op, op.operands[1]) if len(op.operands) > 1 else None
        if like is None:  # spread as tile-distribute decided
            part = tile_spreads.spread_of_type(op, op.results[0], self.threads)
            if not isinstance(part, Partition):
                raise LoweringError(op, "a load's own spread is blocked (chunks along a mode)")
            loaded = tile_memory.load(op, view, other, self.tid, self.threads, part)
        else:
            loaded = tile_epilogue.load(op, view, other, like, self.tid, self.threads)
        if "masked" in op.attributes:  # `like` is the mask: its false elements read `other`
            keep = lambda p, v: arith.SelectOp(p, v, other).result  # noqa: E731
            loaded = elementwise(op, [like, loaded], keep)
        elem = tensor_type(op.results[0].type).elem
        return elementwise(op, [loaded], lambda x: convert(x, elem))

    def store(self, op: ir.Operation) -> None:
        dst, value = self.view(op, op.operands[1]), self.operand(op, op.operands[0])
        mask = self.frag(op, op.operands[2]) if len(op.operands) > 2 else None
        if isinstance(value, ir.Value):
            raise LoweringError(op, "storing a one-element register tensor is not lowered yet")
        if mask is not None and (isinstance(value, Reduced) or mask.part != value.part):
            raise LoweringError(op, MASK_SPREAD)
        if isinstance(value, Reduced) and isinstance(value.part, tile_mma.MmaPartition):
            tile_mma_store.store_reduced(op, value, dst, self.tid)
        elif isinstance(value, Reduced):
            tile_memory.store_reduced(op, value, dst, self.tid)
        elif sm90_epilogue.TMA_STORE in op.attributes and mask is None:
            sm90_epilogue.store_tile(op, value, dst, self.first_tid, self.role)
        elif isinstance(value.part, tile_mma.MmaPartition):
            pairwise = self.role is not None  # a consumer's: beside a wgmma's accumulator
            tile_mma_store.store(op, value, dst, self.tid, self.threads, mask, pairwise)
        else:
            tile_memory.store(op, value, dst, self.tid, mask)


def lowered_here(op: ir.Operation) -> bool:
    """Loads, stores, and the elementwise ops on a deferred epilogue value."""
    if op.name in ("tile.load", "tile.store"):
        return True
    return op.name in tile_elementwise.LOWERINGS and tile_elementwise.deferred(op)


@register
class ConvertTileMemory(Pass):
    """Lower block-level loads and stores of register tensors to per-thread accesses.

    See the module's docstring; convert-tile-to-gpu reconciles the pending casts.
    """

    name = "convert-tile-memory"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lower_memory)


def lower_memory(func: ir.Operation) -> None:
    """Lower one kernel's loads and stores in place."""
    lower_kernel(func, lowered_here, lambda: Memory(func).lower, distributed=True)

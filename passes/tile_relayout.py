"""Passes: `tile-relayout`, each register tensor's change of spread through shared memory.

`relayout(x, through = s[, like = y])` gives x's elements a new spread over the threads: as a
load of s spreads its tile, or as y is (docs/language.md). tile-distribute wrote both spreads
into the op's types; this pass, run after it, writes the exchange as the tile ops the rungs
already lower, each in its own rung (convert-tile-sync, convert-tile-memory):

    %r = "tile.relayout"(%x, %s) : (!tile.frag<f32, L, TV1>, ...) -> !tile.frag<f32, L, TV2>
  →
    "tile.barrier"()                     // every thread is done with what s held before
                                         // (unless the op before the relayout is a barrier)
    "tile.store"(%x, %s)                 // each element to its place in the tile
    "tile.barrier"()                     // every element is in place
    %r = "tile.load"(%s) {other = 0}     // read back as TV2 says (with `like`: tile.load(%s, %y))

A relayout whose value is spread as its result already (the same type) reads back only what its
own thread wrote: it folds to its value, with neither barrier nor traffic. A relayout whose
types hold no thread–value layout (tile-distribute has not run) is a located error.
"""

from __future__ import annotations

from mlir import ir

from tilec.binding import sibling, walk
from tilec.dialects.tile.types import TensorType
from tilec.lowering import LoweringError
from tilec.passes.base import Pass, register

UNDISTRIBUTED = "a relayout's types need their thread–value layouts: run tile-distribute first"


@register
class TileRelayout(Pass):
    """Expand each `tile.relayout` into barrier, store, barrier, load through its buffer; fold
    one whose value already has the result's spread.

    See the module's docstring.
    """

    name = "tile-relayout"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, expand_relayouts)


def expand_relayouts(func: ir.Operation) -> None:
    ops: list[ir.Operation] = []
    walk(func, lambda op: ops.append(op) if op.name == "tile.relayout" else None)
    for op in ops:
        expand(op)


def expand(op: ir.Operation) -> None:
    value, buffer, *like = op.operands
    result = op.results[0]
    if any((t := TensorType.of(v.type)) is None or t.tv is None for v in (value, result)):
        raise LoweringError(op, UNDISTRIBUTED)
    if value.type == result.type:
        result.replace_all_uses_with(value)
        op.erase()
        return
    with ir.InsertionPoint(op), op.location:
        elem = ir.Type.parse(TensorType.of(result.type).elem)
        zero = (ir.IntegerAttr if isinstance(elem, ir.IntegerType) else ir.FloatAttr).get(elem, 0)
        if not after_barrier(op):
            ir.Operation.create("tile.barrier")
        ir.Operation.create("tile.store", operands=[value, buffer])
        ir.Operation.create("tile.barrier")
        load = ir.Operation.create(
            "tile.load", results=[result.type], operands=[buffer, *like], attributes={"other": zero}
        )
    result.replace_all_uses_with(load.results[0])
    op.erase()


def after_barrier(op: ir.Operation) -> bool:
    """Whether the op just before `op` in its block is a block barrier (then every thread is
    done with the buffer already, and the relayout's first barrier would be a second one)."""
    previous = sibling(op, -1)
    return previous is not None and previous.name == "tile.barrier"

"""Passes: `convert-tile-elementwise`, elementwise register math becomes per-thread scalars.

A rung of the SM80 lowering over register tensors (after convert-tile-views). Each elementwise op
(`binary`, `unary`, `convert`, `compare`, `select`, `coord`) becomes its math on each thread's
scalars, element by element (scalars and reduced tensors broadcast), and its value a cast of
them to its `!tile.frag` type (lowering/tile_values.py). An operand a later pass lowers (a load,
a reduction, a gemm, a loop's value) is read as the scalars it will become: a cast of it to
them, `tile.pending`, spread as its type says; the rung that lowers its op casts the scalars it
made, and convert-tile-to-gpu replaces each pending cast by them (`tile_values.reconcile`), a
located error where they differ. This is MLIR's partial conversion, the cast pairs its
materialisations:

    %y = "tile.unary"(%x) {op = "exp"} : (!tile.frag<f32, L, TV>) -> !tile.frag<f32, L, TV>
  →
    %x0, %x1, ... = builtin.unrealized_conversion_cast %x : !tile.frag<...> to f32, f32, ...
                    {tile.pending}                    (the load of %x: convert-tile-memory)
    %e0 = math.exp2 ... ; %e1 = ...
    %y = builtin.unrealized_conversion_cast %e0, %e1, ... : f32, f32, ... to !tile.frag<...>

Left to convert-tile-memory: the ops on an epilogue value computed where it is stored (a
`load(..., like = acc)` whose value flows through elementwise ops alone into a store, marked
`tile.deferred` by tile-distribute), which are lowered with their store, chunk by chunk.
"""

from __future__ import annotations

from mlir import ir

from tilec.lowering.tile_elementwise import LOWERINGS, Operands, deferred
from tilec.lowering.tile_rungs import Rung, lower_kernel
from tilec.passes.base import Pass, register


class Elementwise(Rung, Operands):
    """The elementwise ops of one kernel, lowered in program order."""

    def lower(self, op: ir.Operation) -> None:
        self.enter(op)
        self.put(op, LOWERINGS[op.name](self, op))


@register
class ConvertTileElementwise(Pass):
    """Lower elementwise register math to per-thread scalars, read and kept as casts.

    See the module's docstring; convert-tile-to-gpu reconciles the pending casts.
    """

    name = "convert-tile-elementwise"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lower_elementwise)


def lower_elementwise(func: ir.Operation) -> None:
    """Lower one kernel's elementwise ops in place (those not deferred into a store)."""
    select = lambda op: op.name in LOWERINGS and not deferred(op)  # noqa: E731
    lower_kernel(func, select, lambda: Elementwise(func).lower, distributed=True)

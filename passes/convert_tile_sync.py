"""Passes: `convert-tile-sync`, the block's barriers and the cp.async groups' waits.

A rung of the SM80 lowering: `tile.barrier` becomes `gpu.barrier`; `tile.async_commit` and
`tile.async_wait {pending = n}`, which tile-async-waits placed around the cp.async copies
outside a pipelined loop, become `nvvm.cp.async.commit.group` and `nvvm.cp.async.wait.group n`
(tile_async). Each is lowered where it is; they carry no values.

    "tile.async_commit"() : () -> ()                nvvm.cp.async.commit.group
    "tile.async_wait"() {pending = 0 : i64} ...  →  nvvm.cp.async.wait.group 0
    "tile.barrier"() : () -> ()                     gpu.barrier
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import gpu

from tilec.lowering import tile_async
from tilec.lowering.tile_rungs import lower_kernel
from tilec.passes.base import Pass, register

LOWERINGS: dict[str, Callable[[ir.Operation], object]] = {
    "tile.barrier": lambda op: gpu.BarrierOp(),
    "tile.async_commit": lambda op: tile_async.commit(),
    "tile.async_wait": lambda op: tile_async.wait(ir.IntegerAttr(op.attributes["pending"]).value),
}


@register
class ConvertTileSync(Pass):
    """Lower block barriers and cp.async group commits and waits to gpu/nvvm.

    See the module's docstring.
    """

    name = "convert-tile-sync"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lower_sync)


def lower_sync(func: ir.Operation) -> None:
    """Lower one kernel's barriers and waits in place."""
    lower_kernel(func, lambda op: op.name in LOWERINGS, lambda: lambda op: LOWERINGS[op.name](op))

"""Passes (tile stage): `tile-specialize`, a kernel narrowed to the launches its
`specialize(...)` clause names.

`specialize(N <= COLS)` on a kernel asks the build for a second variant, launched when
1 <= N <= COLS (the runtime picks it, docs/runtime.md). This pass makes that variant: each
named size argument is replaced, everywhere in the kernel, by itself clamped to the range,

    %n = arith.minsi (arith.maxsi %N, 1), COLS        // N itself on every launch it serves

which changes no value the variant computes and tells `int-range-optimizations` the range. Run
with it and `canonicalize`, what the range decides folds: `cdiv(N, COLS) - 1` is 0, and a loop
over that many whole tiles has no iteration and is gone before lowering, so ptxas allocates no
registers for its body (examples/layernorm.tile: 104 -> 64 registers at COLS = 8192).

Only the variant's pipeline runs it (`SPECIALIZE_PREFIX` in tilec.stages, ahead of the
`lowered` stage); kernels without the attribute are left as they are.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.binding import walk
from tilec.passes.base import Pass, register

SPECIALIZE = "tile.specialize"  # {size name: the largest value the variant serves}


@register
class TileSpecialize(Pass):
    """Clamp each size named by a kernel's `tile.specialize` to its range, for folding."""

    name = "tile-specialize"

    def run(self, module: ir.Operation) -> None:
        kernels: list[ir.Operation] = []
        walk(module, lambda op: kernels.append(op) if SPECIALIZE in op.attributes else None)
        failed = False
        for func in kernels:
            failed = not self.specialize(func) or failed
        if failed:
            self.fail()

    def specialize(self, func: ir.Operation) -> bool:
        names = [ir.StringAttr(a).value for a in ir.ArrayAttr(func.attributes["tile.arg_names"])]
        entry = func.regions[0].blocks[0]
        index = ir.IndexType.get()
        for named in ir.DictAttr(func.attributes[SPECIALIZE]):
            name, at_most = named.name, ir.IntegerAttr(named.attr).value
            if name not in names or entry.arguments[names.index(name)].type != index:
                self.error(func, f"tile.specialize names '{name}', not an index argument")
                return False
            if at_most < 1:
                self.error(func, f"tile.specialize bounds '{name}' by {at_most}, below 1")
                return False
            arg = entry.arguments[names.index(name)]
            with ir.InsertionPoint.at_block_begin(entry), func.location:
                low = arith.MaxSIOp(arg, arith.ConstantOp(index, 1).result)
                clamped = arith.MinSIOp(low.result, arith.ConstantOp(index, at_most).result)
            arg.replace_all_uses_except(clamped.result, low.operation)
        return True

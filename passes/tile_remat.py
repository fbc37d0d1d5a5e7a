"""Passes (lowered stage): values computed again after a loop that fills the registers.

After a loop that holds a GEMM, the accumulators fill the registers, so an epilogue's
addresses should be computed where they are used, not kept alive through the loop from the
kernel's top (convert-tile-to-gpu's `after_loop`). `rematerialize` rebuilds integer
arithmetic on block/thread ids, grid sizes, constants and kernel arguments at the insertion
point, reading the special registers afresh (`special_register`) and copying the arguments
(`opaque_copy`) through volatile inline asm, which LLVM may not merge with the first reads.
The bank-conflict report reads these asm forms as the thread id and a copy.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm


def special_register(name: str, axis: str) -> ir.Value:
    """%tid.x, %ctaid.y, ... as an index, read with volatile asm (never merged with another)."""
    i32 = ir.IntegerType.get_signless(32)
    read = llvm.InlineAsmOp(i32, [], f"mov.u32 $0, %{name}.{axis};", "=r", has_side_effects=True)
    return arith.IndexCastUIOp(ir.IndexType.get(), read.result).result


def opaque_copy(value: ir.Value) -> ir.Value:
    """`value` (an integer, index or f32) through volatile asm: equal, but not known to be."""
    i64 = ir.IntegerType.get_signless(64)
    index = isinstance(value.type, ir.IndexType)
    wide = arith.IndexCastOp(i64, value).result if index else value
    if isinstance(wide.type, ir.F32Type):
        kind = ("f32", "f")
    else:
        kind = {64: ("b64", "l"), 32: ("b32", "r"), 16: ("b16", "h")}[
            ir.IntegerType(wide.type).width
        ]
    copy = llvm.InlineAsmOp(
        wide.type, [wide], f"mov.{kind[0]} $0, $1;", f"={kind[1]},{kind[1]}", has_side_effects=True
    ).result
    return arith.IndexCastOp(ir.IndexType.get(), copy).result if index else copy


REREAD = {"gpu.block_id": "ctaid", "gpu.thread_id": "tid", "gpu.grid_dim": "nctaid"}


def rematerialize(value: ir.Value, memo: dict[ir.Value, ir.Value]) -> ir.Value:
    """`value` computed again here when it is integer arithmetic on block/thread ids, grid
    sizes, constants and kernel arguments (the special registers read afresh); else itself."""
    if value in memo:
        return memo[value]
    owner = value.owner
    if not isinstance(owner, ir.Operation | ir.OpView):  # a kernel argument: an opaque copy,
        new = opaque_copy(value)  # or LLVM would merge the arithmetic on it with the first
        memo[value] = new
        return new
    op = owner.operation
    if op.name in REREAD:  # dimension = #gpu<dim y>
        new = special_register(REREAD[op.name], str(op.attributes["dimension"])[-2])
    elif op.name.startswith("arith.") and op.name != "arith.constant" and len(op.results) == 1:
        operands = [rematerialize(v, memo) for v in op.operands]
        clone = op.clone()
        for i, a in enumerate(operands):
            clone.operands[i] = a
        new = clone.results[0]
    else:
        return value
    memo[value] = new
    return new

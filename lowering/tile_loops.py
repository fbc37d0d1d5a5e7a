"""Passes (lowered stage): rebuilding an `scf.for` to carry values across its iterations.

A register tensor that lives across a loop is an `scf.for` iter_arg in the tile stage (a `var`,
and, after tile-carry-accumulators, every gemm's accumulator); tile_carry rebuilds such a loop
to carry the tensor's per-thread scalars, and the SM90 lowering (sm90_loops) its wgmma
accumulators. `moved_loop` and `with_iter_args` rebuild one loop.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import scf

from tilec.lowering import LoweringError


def with_iter_args(loop: ir.Operation, inits: list[ir.Value]) -> tuple[ir.Operation, list]:
    """`loop` (an scf.for without iter_args) rebuilt to carry `inits`, its body and attributes
    moved over, the old loop erased: (the new loop, its iter_args inside the body). The body
    still yields nothing; the caller yields the carried values."""
    if len(loop.operands) != 3:
        raise LoweringError(loop, "a loop around gemm cannot carry values of its own yet")
    new = moved_loop(loop, inits, keep_yield=False)
    loop.erase()
    return new.operation, list(new.inner_iter_args)


def moved_loop(loop: ir.Operation, inits: list[ir.Value], keep_yield: bool) -> scf.ForOp:
    """A new scf.for before `loop` with its bounds, `inits` as iter_args, its attributes and
    its body's ops (its yield too when `keep_yield`, else the new body has no terminator yet);
    the induction variable is replaced, the old loop (its iter_args and results still in use)
    left for the caller to erase."""
    with ir.InsertionPoint(loop), loop.location:
        new = scf.ForOp(loop.operands[0], loop.operands[1], loop.operands[2], inits)
    with ir.InsertionPoint(new.body), loop.location:
        placeholder = scf.YieldOp([])
    old = loop.regions[0].blocks[0]
    ops = list(old.operations)
    for o in ops if keep_yield else ops[:-1]:
        o.move_before(placeholder)
    if keep_yield:
        placeholder.operation.erase()
    old.arguments[0].replace_all_uses_with(new.induction_variable)
    for name in list(loop.attributes):
        new.operation.attributes[name] = loop.attributes[name]
    return new

"""Passes (lowered stage): the elementwise lowerings, shared by convert-tile-elementwise and
convert-tile-to-gpu (which lowers those on an epilogue value computed where it is stored).

Each takes what reads its operands' lowered values (`Operands`: convert-tile-elementwise reads
an operand not lowered yet as a pending cast, convert-tile-to-gpu only lowered ones) and
returns the result's: a `Frag`, a `Reduced`, a plain value or a `Deferred`
(tile_fragments.elementwise).
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith

from tilec.lowering import tile_epilogue, tile_mma
from tilec.lowering.tile_fragments import (
    Deferred,
    Frag,
    Reduced,
    binary,
    compare,
    convert,
    coordinates,
    elementwise,
    is_float,
    reciprocal,
)
from tilec.lowering.tile_fragments import unary as unary_op
from tilec.lowering.tile_reduce_mma import mma_coords
from tilec.lowering.tile_views import tensor_type

Value = Frag | Reduced | Deferred | ir.Value


class Operands:
    """What an elementwise lowering reads: each operand's lowered value, and the thread index."""

    operand: Callable[[ir.Operation, ir.Value], Value]
    tid: ir.Value


def lower_compare(at: Operands, op: ir.Operation) -> Value:
    pred = ir.StringAttr(op.attributes["pred"]).value
    args = [at.operand(op, v) for v in op.operands]
    return elementwise(op, args, lambda x, y: compare(op, pred, x, y))


def lower_select(at: Operands, op: ir.Operation) -> Value:
    args = [at.operand(op, v) for v in op.operands]
    return elementwise(op, args, lambda p, x, y: arith.SelectOp(p, x, y).result)


def lower_coord(at: Operands, op: ir.Operation) -> Value:
    mode = ir.IntegerAttr(op.attributes["mode"]).value
    x = at.operand(op, op.operands[0])
    if isinstance(x, Frag) and isinstance(x.part, tile_mma.MmaPartition):
        return mma_coords(x, mode, at.tid)
    return coordinates(op, x, mode, at.tid)


def lower_binary(at: Operands, op: ir.Operation) -> Value:
    kind = ir.StringAttr(op.attributes["op"]).value
    lhs, rhs = args = [at.operand(op, v) for v in op.operands]
    if (
        kind == "div"
        and not isinstance(rhs, Frag | Deferred)
        and is_float(tensor_type(op.results[0].type).elem)
    ):
        args, kind = [lhs, reciprocal(rhs)], "mul"
    return elementwise(op, args, lambda x, y: binary(op, kind, x, y))


def lower_unary(at: Operands, op: ir.Operation) -> Value:
    kind = ir.StringAttr(op.attributes["op"]).value
    return elementwise(op, [at.operand(op, op.operands[0])], lambda x: unary_op(op, kind, x))


def lower_convert(at: Operands, op: ir.Operation) -> Value:
    elem = tensor_type(op.results[0].type).elem
    return elementwise(op, [at.operand(op, op.operands[0])], lambda x: convert(x, elem))


# Every op this pass lowers, by name.
LOWERINGS: dict[str, Callable[[Operands, ir.Operation], Value]] = {
    "tile.compare": lower_compare,
    "tile.select": lower_select,
    "tile.coord": lower_coord,
    "tile.binary": lower_binary,
    "tile.unary": lower_unary,
    "tile.convert": lower_convert,
}


def deferred(op: ir.Operation) -> bool:
    """Whether `op` computes on an epilogue value that is computed where it is stored (marked
    so by tile-distribute: tile_epilogue.mark_deferred)."""
    return tile_epilogue.DEFERRED in op.attributes

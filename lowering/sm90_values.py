"""Register tensors of an SM90 consumer in the accumulator's layout, computed where stored.

An epilogue such as `store(relu(alpha * acc + beta * load(C, like = acc) + bias), C)` is kept
as a function from a pair of elements of the accumulator (two adjacent columns of a row, as
each thread holds them) to the code computing them: the epilogue
(`sm90_epilogue`) calls it chunk by chunk, so C and the bias are loaded next to the store of
each element, not all at once beside the 128 live accumulator registers. An element is named
by its accumulator (which wgmma tile of the group), its first register in it, and its (row,
column) in the block's tile. Where the whole tile lies inside the tensor and its rows keep
pairs 4-byte aligned, a load reads both elements at once; elsewhere each element is read
inside the tensor's bounds and `other` outside: the address is clamped into the tensor and
the value selected, so no branch is taken.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm

from tilec.lowering import IndexBuilder, Term
from tilec.lowering.sm90_wgmma import element
from tilec.lowering.tile_fragments import binary, constant, convert, is_float, reciprocal
from tilec.lowering.tile_fragments import unary as unary_op
from tilec.lowering.tile_views import View, element_address, in_bounds


@dataclass(frozen=True)
class Element:
    """Registers `reg` and `reg + 1` of accumulator `acc` (mi * nt + ni of the warp group):
    the elements (row, col) and (row, col + 1) of the block's tile."""

    acc: int
    reg: int
    row: Term
    col: Term
    guarded: bool = True  # False where the caller knows the tile is inside and aligned


Pair = tuple[ir.Value, ir.Value]
Value = Callable[[Element], Pair]


def of_accumulators(accs: Callable[[], list[ir.Value]]) -> Value:
    """The accumulator itself (`accs()` read when evaluated: after its loop, the results)."""
    return lambda e: (element(accs()[e.acc], e.reg), element(accs()[e.acc], e.reg + 1))


def scalar(v: ir.Value) -> Value:
    return lambda e: (v, v)


def aligned(view: View, b: IndexBuilder) -> ir.Value | bool:
    """Whether the view's rows keep every (even column, odd column) pair aligned to the
    pair's width, so that it moves as one vector (the base is: tile origins are even columns of
    16-byte aligned tensors); False where the columns are not contiguous."""
    if view.stride[1] != 1:
        return False
    if isinstance(view.stride[0], int):
        return view.stride[0] % 2 == 0
    odd = arith.AndIOp(b.value(view.stride[0]), b.value(1)).result
    return arith.CmpIOp(arith.CmpIPredicate.eq, odd, b.value(0)).result


def load(view: View, other: float, b: IndexBuilder) -> Value:
    """The tile `view` at the accumulator's elements, `other` past its edges."""
    i32 = ir.IntegerType.get_signless(32)

    def at(e: Element) -> Pair:
        coords = [e.row, e.col]
        if not e.guarded:
            vec = ir.VectorType.get([2], view.elem)
            both = llvm.LoadOp(vec, element_address(view, coords, b), alignment=4).result
            return tuple(  # type: ignore[return-value]
                llvm.ExtractElementOp(both, constant(i32, k)).result for k in (0, 1)
            )
        return guarded(view, coords, other, b), guarded(view, [e.row, b.add(e.col, 1)], other, b)

    return at


def guarded(view: View, coords: list[Term], other: float, b: IndexBuilder) -> ir.Value:
    """The element at `coords` inside the tensor's bounds, `other` outside."""
    clamped = [clamp(view, k, c, b) for k, c in enumerate(coords)]
    loaded = llvm.LoadOp(view.elem, element_address(view, clamped, b)).result
    inside = in_bounds(view, coords, b)
    if inside is True:
        return loaded
    fallback = constant(view.elem, other)
    if inside is False:
        return fallback
    return arith.SelectOp(inside, loaded, fallback).result


def clamp(view: View, mode: int, c: Term, b: IndexBuilder) -> Term:
    """The coordinate `c` along `mode` kept inside every bound on that mode (a tile past the
    tensor's edge reads its last element instead, which the caller discards)."""
    for bound in view.bounds:
        if bound.mode != mode or bound.outer is not None:
            continue
        if isinstance(bound.extent, int) and isinstance(bound.origin, int):
            last = bound.extent - 1 - bound.origin
            c = (
                min(c, last)
                if isinstance(c, int)
                else arith.MinSIOp(b.value(c), b.value(last)).result
            )
            continue
        last = arith.SubIOp(b.value(bound.extent), b.value(b.add(bound.origin, 1))).result
        c = arith.MinSIOp(b.value(c), last).result
    return c


def unary(op: ir.Operation, kind: str, x: Value) -> Value:
    return lambda e: tuple(unary_op(op, kind, v) for v in x(e))  # type: ignore[return-value]


def binary_of(op: ir.Operation, kind: str, x: Value, y: Value, y_scalar: ir.Value | None) -> Value:
    """x <kind> y; a division by a scalar is a multiplication by its reciprocal (computed once,
    here)."""
    if kind == "div" and y_scalar is not None and is_float(y_scalar.type):
        inverse = reciprocal(y_scalar)
        return lambda e: tuple(binary(op, "mul", v, inverse) for v in x(e))  # type: ignore[return-value]

    def both(e: Element) -> Pair:
        (x0, x1), (y0, y1) = x(e), y(e)
        return binary(op, kind, x0, y0), binary(op, kind, x1, y1)

    return both


def converted(x: Value, to: ir.Type) -> Value:
    return lambda e: tuple(convert(v, to) for v in x(e))  # type: ignore[return-value]

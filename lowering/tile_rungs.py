"""Passes (lowered stage): what each rung of the SM80 lowering keeps for one kernel.

A rung (convert-tile-copies, convert-tile-elementwise, convert-tile-reductions, ...) lowers the
ops of one family in program order, each where it is, reading the tile values before it from
their casts (tile_values) and a value that a later rung lowers as a pending cast; it shares
the kernel's thread index with the other rungs (tile_remat.thread_index), past the loop that
holds a GEMM the epilogue's, whose operands it computes again there (tile_remat.Epilogue).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from mlir import ir

from tilec.binding import walk
from tilec.lowering import LoweringError, tile_remat, tile_roles, tile_spreads
from tilec.lowering.tile_fragments import Deferred, Frag, Reduced
from tilec.lowering.tile_refusals import EARLIER, region_refusal
from tilec.lowering.tile_roles import Role
from tilec.lowering.tile_values import TileValues
from tilec.lowering.tile_views import View, tensor_type

Value = Frag | Reduced | Deferred | ir.Value


class Rung:
    """One kernel's state in a rung: its threads, values, thread index and epilogue."""

    def __init__(self, func: ir.Operation, module: ir.Operation | None = None) -> None:
        if "tile.threads" not in func.attributes:
            raise LoweringError(func, "a tile kernel needs a tile.threads attribute")
        self.func, self.module = func, module
        self.name = ir.StringAttr(func.attributes["sym_name"]).value
        self.dims = list(ir.DenseI64ArrayAttr(func.attributes["tile.threads"]))
        self.block_threads = self.threads = prod(self.dims)
        self.values = TileValues(self.threads)
        self.first_tid = tile_remat.thread_index(func, self.dims)
        self.epilogue = tile_remat.Epilogue(func, self.dims)
        self.tid = self.first_tid
        self.role: Role | None = None

    def enter(self, op: ir.Operation) -> None:
        """Before lowering `op`: the epilogue's operands, and the thread index where it is (in
        a warp-specialised kernel's role, the role's threads and index: tile_roles)."""
        self.role = Role.of(op)
        if self.role is not None and self.role.kind == "consumer":
            self.threads = tile_roles.spread_threads(op, self.block_threads)
            self.tid = tile_roles.thread_index(self.role, self.first_tid)
            self.values.threads = self.threads
            return
        self.threads = self.values.threads = self.block_threads
        self.epilogue.enter(op)
        self.tid = self.epilogue.tid if self.epilogue.past(op) else self.first_tid

    def operand(self, op: ir.Operation, value: ir.Value) -> Value | View:
        """`value` as lowered (a later rung's as the scalars it will be lowered to)."""
        if tensor_type(value.type) is None:
            return value
        lowered = self.values.get(value)
        return self.values.pending(op, value) if lowered is None else lowered

    def frag(self, op: ir.Operation, value: ir.Value) -> Frag:
        v = self.operand(op, value)
        if not isinstance(v, Frag):
            raise LoweringError(op, "expected a register tensor of a full tile")
        return v

    def view(self, op: ir.Operation, value: ir.Value) -> View:
        v = self.values.get(value)
        if isinstance(v, View):
            return v
        source = value.owner
        if not isinstance(source, ir.Block) and source.name in EARLIER:  # a view op left
            raise LoweringError(source, f"'{source.name}' {EARLIER[source.name]}")
        raise LoweringError(op, "expected a global or shared tensor view")

    def put(self, op: ir.Operation, result: Value) -> None:
        """`op`'s value lowered to `result` (checked against its type)."""
        tile_spreads.check(op, op.results[0], result, self.threads)
        self.values.put(op, op.results[0], result)


def lower_kernel(
    func: ir.Operation,
    select: Callable[[ir.Operation], bool],
    lowering: Callable[[], Callable[[ir.Operation], None]],
    distributed: bool = False,
) -> None:
    """A rung over one kernel: what an earlier pass must lower refused (a warp_specialize
    region; with `distributed`, a register tensor of its ops without its TV layout, at the op
    that makes it), then the ops `select` picks lowered in program order by what `lowering()`
    returns, each where it is, and erased: their values are casts by then, read by the ops
    after them. One walk of the kernel finds both."""
    ops: list[ir.Operation] = []
    refused: list[tuple[ir.Operation, str]] = []

    def visit(op: ir.Operation) -> None:
        refused.extend(region_refusal(op))
        if select(op):
            ops.append(op)

    walk(func, visit)
    if refused:
        raise LoweringError(*refused[0])
    if not ops:
        return
    if distributed:
        undistributed(ops)
    lower = lowering()
    for op in ops:
        with ir.InsertionPoint(op), op.location:
            lower(op)
    erase_lowered(ops)


def undistributed(ops: list[ir.Operation]) -> None:
    """A located error at the first op (of those making `ops`' register tensors, in order)
    whose register tensor has no TV layout: tile-distribute must run first."""
    for op in ops:
        for v in [*op.operands, *op.results]:
            t = tensor_type(v.type)
            if t is not None and t.space == "register" and t.tv is None:
                owner = v.owner
                at = owner.owner if isinstance(owner, ir.Block) else owner.operation
                raise LoweringError(at, tile_spreads.UNDISTRIBUTED)


def erase_lowered(ops: list[ir.Operation]) -> None:
    """Erase lowered `ops` (in program order), last first; a value one of them still gives to
    an op outside them is a located error."""
    for op in reversed(ops):
        for r in op.results:
            user = next((u.owner for u in r.uses), None)
            if user is not None:
                raise LoweringError(user, "a tile tensor cannot cross into this op")
        op.erase()

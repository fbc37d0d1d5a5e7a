"""Passes (lowered stage): values computed again after a loop that fills the registers.

After a loop that holds a GEMM, the accumulators fill the registers, so an epilogue's
addresses should be computed where they are used, not kept alive through the loop from the
kernel's top. `Epilogue` says where a kernel's epilogue starts: the first top-level tile op
after its first loop that holds a GEMM. There the thread index is read afresh, once, and the op
defining it is tagged `tile.thread_index = "epilogue"`, so each pass that lowers the
epilogue's ops (convert-tile-views, convert-tile-copies, convert-tile-to-gpu) finds the same
start and the same index; from there on each top-level op's integer operands are computed
again in front of it (`enter`). The kernel's first thread index, at its entry, is shared the
same way (`thread_index`, tagged `"entry"`).
`rematerialize` rebuilds integer arithmetic on block/thread ids, grid sizes, constants and
kernel arguments at the insertion point, reading the special registers afresh
(`special_register`) and copying the arguments (`opaque_copy`) through volatile inline asm,
which LLVM may not merge with the first reads. The bank-conflict report reads these asm forms
as the thread id and a copy.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, llvm

from tilec.binding import walk
from tilec.lowering import DIMS, IndexBuilder, Term

# On the op defining a thread index the lowering passes share: "entry" (the kernel's, read at
# its top) or "epilogue" (read afresh past the loop that holds a GEMM).
TAG = "tile.thread_index"


def linear_thread_id(dims: list[int], fresh: bool = False) -> Term:
    """x + X*(y + Y*z), with dimensions of extent 1 dropped; `fresh`: each axis read afresh
    (special_register) instead of by gpu.thread_id."""
    b = IndexBuilder()
    t, scale = 0, 1
    for axis, dim, extent in zip("xyz", DIMS, dims, strict=False):
        if extent > 1:
            tid = special_register("tid", axis) if fresh else gpu.ThreadIdOp(dim).result
            t = b.add(t, b.mul(tid, scale))
        scale *= extent
    return t


def tagged(func: ir.Operation, where: str) -> ir.Operation | None:
    """The op of `func`'s entry block tagged as the thread index `where`."""
    for o in func.regions[0].blocks[0].operations:
        attr = o.operation.attributes[TAG] if TAG in o.operation.attributes else None
        if attr is not None and ir.StringAttr(attr).value == where:
            return o.operation
    return None


def tag(op: ir.Operation, where: str) -> None:
    op.attributes[TAG] = ir.StringAttr.get(where)


def thread_index(func: ir.Operation, dims: list[int]) -> ir.Value:
    """The kernel's linear thread index, read at its top: the tagged one, or read there now."""
    found = tagged(func, "entry")
    if found is not None:
        return found.results[0]
    entry = func.regions[0].blocks[0]
    with ir.InsertionPoint.at_block_begin(entry), func.location:
        tid = IndexBuilder().value(linear_thread_id(dims))
    tag(tid.owner.operation, "entry")
    return tid


def untag(func: ir.Operation) -> None:
    """The last pass that reads the thread indices removes their tags."""
    for where in ("entry", "epilogue"):
        if (op := tagged(func, where)) is not None:
            del op.attributes[TAG]


def holds_gemm(loop: ir.Operation) -> bool:
    found: list[ir.Operation] = []
    walk(loop, lambda o: found.append(o) if o.name == "tile.gemm" else None)
    return bool(found)


class Epilogue:
    """Where `func`'s epilogue starts (None: no loop holding a GEMM has a tile op after it), and
    the thread index read afresh there: found by its tag, or read in front of the first
    top-level tile op after the first loop that holds a GEMM (and tagged)."""

    def __init__(self, func: ir.Operation, dims: list[int]) -> None:
        entry = func.regions[0].blocks[0]
        self.tid: ir.Value | None = None
        self.start = tagged(func, "epilogue")
        if self.start is not None:
            self.tid = self.start.results[0]
            return
        past, first = False, None
        for o in entry.operations:
            if past and o.operation.name.startswith("tile."):
                first = o.operation
                break
            past = past or (o.operation.name == "scf.for" and holds_gemm(o.operation))
        if first is None:
            return
        with ir.InsertionPoint(first), first.location:
            self.tid = IndexBuilder().value(linear_thread_id(dims, fresh=True))
        self.start = self.tid.owner.operation
        tag(self.start, "epilogue")

    def past(self, op: ir.Operation) -> bool:
        """Whether `op` lies in the epilogue (its top-level op after the start)."""
        if self.start is None:
            return False
        top = op
        while top.parent is not None and top.parent.name != "func.func":
            top = top.parent
        return top.block == self.start.block and self.start.is_before_in_block(top)

    def enter(self, op: ir.Operation) -> None:
        """Before lowering a top-level `op` of the epilogue: its integer, index and f32
        operands computed again in front of it (rematerialize)."""
        if op.parent.name != "func.func" or not self.past(op):
            return
        memo: dict[ir.Value, ir.Value] = {}
        for i, v in enumerate(op.operands):
            if isinstance(v.type, ir.IndexType | ir.IntegerType | ir.F32Type):
                op.operands[i] = rematerialize(v, memo)


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

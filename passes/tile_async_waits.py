"""Passes (tile stage, before convert-tile-to-gpu): `tile-async-waits`, where each cp.async copy
outside tile-pipeline closes its group and where an access waits for it.

A `copy<cp_async.*>` outside a pipelined loop (tile-pipeline's ring waits for its own) only
issues: its chunks land in shared memory later. This pass walks each kernel in program order
and writes the synchronisation as tile ops that convert-tile-to-gpu lowers one to one:
`tile.async_commit` right after each such copy (a group of its own) and `tile.async_wait
{pending = n}` (wait until at most the n newest groups are in flight) before an access that
could see one unfinished. It keeps the groups not yet waited for, oldest first, each with the
shared buffer it fills and the global tensor it reads (the roots of the copy's views):

- a load of a buffer a group fills waits for that group, the later groups left in flight; a
  store into such a buffer, or into a tensor a group reads, likewise;
- a load of another buffer or of any global tensor, a store into another tensor and a reduction
  (registers and its own scratch) run while copies are in flight;
- a gemm, a barrier, a relayout (it holds barriers) or a synchronous copy waits for every group
  (they may touch anything, and a barrier after copies is how other threads' chunks become
  visible to them);
- at a loop that issues such copies, the previous iteration's may be in flight at the top of
  its body and are not known there: the next access waits for every group.

So a kernel can issue the next row's copy into the buffer it has just read and work on the row
it holds while the copy is in flight (examples/softmax_persistent.tile). Distinct tensor
arguments are taken not to overlap. The kernel gets `tile.async_waits`; convert-tile-to-gpu
refuses a kernel with such copies that lacks it.

    "tile.copy"(%g, %sX) {atom = "cp_async.cg.16"}
    "tile.async_commit"()
    %t = "tile.reduce"(%x) ...                      // not the copy's memory: no wait
    "tile.async_wait"() {pending = 0 : i64}
    %y = "tile.load"(%sX)                           // the buffer it fills
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from tilec.binding import walk
from tilec.dialects.tile.types import view_root
from tilec.lowering import after
from tilec.passes.base import Pass, register
from tilec.passes.tile_pipeline import PIPELINED, is_async_copy

COMMIT = "tile.async_commit"
WAIT = "tile.async_wait"
DONE = "tile.async_waits"  # on a kernel this pass has run on
# Ops that may touch memory a copy in flight fills or reads; the others never wait.
MEMORY_OPS = ("tile.gemm", "tile.barrier", "tile.relayout", "tile.load", "tile.store", "tile.copy")


@register
class TileAsyncWaits(Pass):
    """Commit each cp.async copy outside tile-pipeline as its own group, and wait for a group
    only before the accesses that could see it unfinished."""

    name = "tile-async-waits"

    def run(self, module: ir.Operation) -> None:
        kernels: list[ir.Operation] = []
        walk(module, lambda op: kernels.append(op) if "tile.kernel" in op.attributes else None)
        for func in kernels:
            Groups().block(func.regions[0].blocks[0])
            func.attributes[DONE] = ir.UnitAttr.get()


def issues_copies(op: ir.Operation) -> bool:
    """Whether `op` holds a cp.async copy that tile-pipeline does not wait for itself."""
    found: list[ir.Operation] = []
    walk(op, lambda o: found.append(o) if unpipelined_copy(o) else None)
    return bool(found)


def unpipelined_copy(op: ir.Operation) -> bool:
    return is_async_copy(op) and PIPELINED not in op.attributes


def root(value: ir.Value) -> ir.Value | None:
    """The tensor or shared buffer a view comes from; None (conflicting with everything) when
    the chain leaves the tile ops."""
    op = view_root(value)
    return None if op is None else op.results[0]


@dataclass
class Groups:
    """The groups committed and not waited for, oldest first: (fills, reads) roots."""

    groups: list[tuple[ir.Value | None, ir.Value | None]] = field(default_factory=list)
    unknown: bool = False  # a previous iteration's copies may be in flight

    def block(self, block: ir.Block) -> None:
        for o in list(block.operations):
            self.op(o.operation)

    def op(self, op: ir.Operation) -> None:
        if op.name == "scf.for":
            self.unknown |= issues_copies(op)
        self.wait_before(op)
        for region in op.regions:
            for block in region.blocks:
                self.block(block)
        if unpipelined_copy(op):
            with after(op), op.location:
                ir.Operation.create(COMMIT)
            self.groups.append((root(op.operands[1]), root(op.operands[0])))

    def wait_before(self, op: ir.Operation) -> None:
        if not (self.groups or self.unknown) or op.name not in MEMORY_OPS or is_async_copy(op):
            return
        if self.unknown or op.name not in ("tile.load", "tile.store"):
            self.wait(op, len(self.groups) - 1)
            self.unknown = False
            return
        if op.name == "tile.load":
            loads, stores = [root(op.operands[0])], []
        else:
            loads, stores = [], [root(op.operands[1])]
        hit = [
            g
            for g, (fills, reads) in enumerate(self.groups)
            if conflicts(fills, loads) or conflicts(fills, stores) or conflicts(reads, stores)
        ]
        if hit:
            self.wait(op, hit[-1])

    def wait(self, op: ir.Operation, last: int) -> None:
        """Before `op`: wait for group `last` and every older one."""
        pending = len(self.groups) - 1 - last
        i64 = ir.IntegerType.get_signless(64)
        with ir.InsertionPoint(op), op.location:
            ir.Operation.create(WAIT, attributes={"pending": ir.IntegerAttr.get(i64, pending)})
        del self.groups[: last + 1]


def conflicts(root_of_group: ir.Value | None, accessed: list[ir.Value | None]) -> bool:
    """An unknown root on either side conflicts with anything."""
    return any(root_of_group is None or a is None or a == root_of_group for a in accessed)

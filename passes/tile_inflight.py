"""Passes (lowered stage): which accesses wait for the cp.async copies in flight.

A `copy<cp_async.*>` outside tile-pipeline (whose ring waits for its own copies) only issues:
its chunks land in shared memory later. Each such copy closes a cp.async group of its own, and
`InFlight` keeps the groups not yet waited for, oldest first, with the shared buffer each fills
and the global tensor it reads (by base pointer). Before each tile op, convert-tile-to-gpu asks
`InFlight.before`:

- a load of a buffer a group fills waits for that group (`cp.async.wait_group n`, the n
  groups committed after it left in flight); a store into such a buffer, or into a tensor a
  group reads, likewise;
- a load of other memory (another buffer, any global tensor) and a store into another tensor
  run with the copies in flight, and so does a reduction (registers and its own scratch);
- a gemm, a barrier, a synchronous copy wait for every group (they may touch anything, and a
  barrier after copies is how other threads' chunks become visible);
- at the first op inside a loop that issues such copies, the previous iteration's may be in
  flight and are not known yet: the next access waits for every group.

So a kernel may issue the next row's copy into the buffer it has just read and work on the row
it holds while the copy is in flight (examples/softmax_persistent.tile). Distinct tensor
arguments are taken not to overlap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir

from tilec.binding import walk
from tilec.passes import tile_async, tile_pipeline
from tilec.passes.tile_views import View

# Ops that may touch memory a copy in flight fills or reads; the others never wait.
MEMORY_OPS = ("tile.gemm", "tile.barrier", "tile.load", "tile.store", "tile.copy")


@dataclass
class InFlight:
    """The groups of cp.async copies issued and not waited for, oldest first: (the base of the
    shared buffer it fills, the base of the global tensor it reads)."""

    groups: list[tuple[ir.Value, ir.Value]] = field(default_factory=list)
    # Copies that may be in flight from a loop's previous iteration, not lowered yet.
    unknown: bool = False
    entered: set[ir.Operation] = field(default_factory=set)  # loops lowering has reached

    def issued(self, op: ir.Operation, src: View, dst: View) -> None:
        """After a copy's cp.async ops (`op`, unless tile-pipeline's): close its group."""
        if tile_pipeline.PIPELINED in op.attributes:
            return
        tile_async.commit()
        self.groups.append((dst.base, src.base))

    def before(self, op: ir.Operation, view: Callable[[ir.Value], View]) -> None:
        """Before lowering `op` (`view`: the View an operand has become): wait for the groups
        it could see unfinished."""
        self.enter_loops(op)
        if not (self.groups or self.unknown) or op.name not in MEMORY_OPS:
            return
        if tile_pipeline.is_async_copy(op):
            return
        if op.name == "tile.load" and not self.unknown:
            self.wait_for([view(op.operands[0]).base], [])
        elif op.name == "tile.store" and not self.unknown:
            self.wait_for([], [view(op.operands[1]).base])
        else:
            self.wait_all()

    def enter_loops(self, op: ir.Operation) -> None:
        """At the first op of a loop body that issues copies outside tile-pipeline, the
        previous iteration's may be in flight: their memory is not known yet."""
        parent = op.parent
        while parent is not None and parent.name != "func.func":
            if parent.name == "scf.for" and parent not in self.entered:
                self.entered.add(parent)
                self.unknown |= issues_copies(parent)
            parent = parent.parent

    def wait_for(self, loads: list[ir.Value], stores: list[ir.Value]) -> None:
        """Wait for the newest group that fills a buffer in `loads` or fills or reads one in
        `stores`, and every older one; the later groups stay in flight."""
        hit = [
            g
            for g, (fills, reads) in enumerate(self.groups)
            if fills in loads or fills in stores or reads in stores
        ]
        if hit:
            tile_async.wait(len(self.groups) - 1 - hit[-1])
            del self.groups[: hit[-1] + 1]

    def wait_all(self) -> None:
        """Wait for every copy in flight."""
        tile_async.wait(0)
        self.groups.clear()
        self.unknown = False


def issues_copies(loop: ir.Operation) -> bool:
    """Whether `loop` issues a cp.async copy that tile-pipeline does not wait for itself."""
    found: list[ir.Operation] = []

    def visit(o: ir.Operation) -> None:
        if tile_pipeline.is_async_copy(o) and tile_pipeline.PIPELINED not in o.attributes:
            found.append(o)

    walk(loop, visit)
    return bool(found)

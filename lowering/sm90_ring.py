"""The mbarrier ring of an SM90 pipeline: S stages of shared buffers, a full and an empty
barrier per stage, and the phase arithmetic both sides of a warp-specialised loop share.

A stage is used once per turn of the ring. The producer, before filling stage s, waits until
the consumers have released it (the empty barrier's phase), then arms the full barrier with the
bytes its TMA loads will deliver; the consumers wait on the full barrier, read the stage and
arrive on the empty one. Both sides number the loop's iterations the same way over the whole
kernel (across the tiles of a persistent loop), so iteration `i` is stage `i mod S` in turn
`i div S`, whose parity is the phase to wait for. A barrier fresh from `mbarrier.init` counts
as having completed the phase before phase 0, so the producer's first turn (waiting for parity
1 on the empty barriers) does not block: no separate prologue is needed, and trip counts of 0,
1 or fewer than S need no special case.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm

from tilec.lowering import IndexBuilder, Term
from tilec.lowering.tile_access import when
from tilec.lowering.tile_cluster import cluster_barrier
from tilec.lowering.tile_fragments import constant
from tilec.lowering.tile_views import gep

# try_wait's time limit per attempt (ns hint); the lowering loops until the phase completes.
WAIT_TICKS = 10_000_000


def i32(v: Term, b: IndexBuilder) -> ir.Value:
    return arith.IndexCastOp(ir.IntegerType.get_signless(32), b.value(v)).result


@dataclass
class Ring:
    """`stages` full barriers at `full`, as many empty ones at `empty` (8 bytes each);
    `consumers` threads arrive on an empty barrier to release its stage."""

    stages: int
    full: ir.Value  # !llvm.ptr<3>
    empty: ir.Value
    consumers: int
    # In a cluster whose producers multicast into each other's stages, a stage is free only
    # when every block's consumers have read it: each consumer thread arrives on the empty
    # barrier of block `peer` (its thread index mod the cluster size, an i32), so every
    # block's barrier still counts `consumers` arrivals, half of them (C = 2) remote.
    peer: ir.Value | None = None

    def barrier(self, base: ir.Value, stage: Term, b: IndexBuilder) -> ir.Value:
        return gep(base, stage, ir.IntegerType.get_signless(64), b)

    def init(self, tid: ir.Value, b: IndexBuilder, others: list[Ring] | None = None) -> None:
        """Thread 0 initialises every barrier (this ring's and `others`'); the block then
        synchronises so that no thread waits on one before it exists (and the async proxy
        sees the initialisation)."""

        def body() -> None:
            for ring in [self, *(others or [])]:
                one = constant(ir.IntegerType.get_signless(32), 1)
                arrivals = constant(ir.IntegerType.get_signless(32), ring.consumers)
                for s in range(ring.stages):
                    nvvm.MBarrierInitOp(ring.barrier(ring.full, s, b), one)
                    nvvm.MBarrierInitOp(ring.barrier(ring.empty, s, b), arrivals)
            nvvm.FenceMbarrierInitOp()

        is_first = arith.CmpIOp(arith.CmpIPredicate.eq, tid, b.value(0)).result
        when(is_first, body)
        gpu.BarrierOp()
        if self.peer is not None:  # no block signals another's barriers before they exist
            cluster_barrier()

    def position(self, counter: Term, b: IndexBuilder) -> tuple[Term, ir.Value]:
        """(stage, phase parity as i32) of the iteration numbered `counter`."""
        stage = b.rem(counter, self.stages)
        parity = b.rem(b.div(counter, self.stages), 2)
        return stage, i32(parity, b)

    def wait(self, base: ir.Value, stage: Term, parity: ir.Value, b: IndexBuilder) -> None:
        ticks = constant(ir.IntegerType.get_signless(32), WAIT_TICKS)
        nvvm.MBarrierTryWaitParityOp(self.barrier(base, stage, b), parity, ticks)

    def acquire(self, counter: Term, tx_bytes: int, b: IndexBuilder) -> tuple[Term, ir.Value]:
        """Producer: wait until stage `counter` is free, arm its full barrier with `tx_bytes`;
        returns (stage, its full barrier) for the TMA loads that complete it."""
        stage, parity = self.position(counter, b)
        flipped = arith.XOrIOp(parity, constant(ir.IntegerType.get_signless(32), 1)).result
        self.wait(self.empty, stage, flipped, b)
        full = self.barrier(self.full, stage, b)
        tx = constant(ir.IntegerType.get_signless(32), tx_bytes)
        nvvm.MBarrierArriveExpectTxOp(ir.IntegerType.get_signless(64), full, tx)
        return stage, full

    def wait_full(self, counter: Term, b: IndexBuilder) -> Term:
        """Consumer: wait until stage `counter` holds its data; returns the stage."""
        stage, parity = self.position(counter, b)
        self.wait(self.full, stage, parity, b)
        return stage

    def release(self, counter: Term, b: IndexBuilder) -> None:
        """Consumer: this thread is done reading stage `counter`."""
        stage = b.rem(counter, self.stages)
        barrier = self.barrier(self.empty, stage, b)
        if self.peer is None:
            nvvm.MBarrierArriveOp(ir.IntegerType.get_signless(64), barrier)
            return
        # The default .release.cta semantics, as for a local arrive: the stage's reads are
        # complete (wgmma.wait_group) before it. `.release.cluster` makes ptxas put a
        # MEMBAR.ALL.GPU before every arrive: 510 against 772 TFLOP/s measured at 4096^3.
        remote = nvvm.MapaOp(ir.Type.parse("!llvm.ptr<7>"), barrier, self.peer).result
        nvvm.MBarrierArriveOp(None, remote)


def aligned_base(base: ir.Value, align: int) -> ir.Value:
    """`base` (a shared pointer) rounded up to `align` bytes: the dynamic shared window starts
    only 16-byte aligned, and the 128-byte swizzle of TMA and wgmma is anchored at 1024."""
    i32t = ir.IntegerType.get_signless(32)
    addr = llvm.PtrToIntOp(i32t, base).result
    up = arith.AddIOp(addr, constant(i32t, align - 1)).result
    rounded = arith.AndIOp(up, constant(i32t, -align)).result
    pad = arith.IndexCastUIOp(ir.IndexType.get(), arith.SubIOp(rounded, addr).result).result
    return gep(base, pad, ir.IntegerType.get_signless(8), IndexBuilder())

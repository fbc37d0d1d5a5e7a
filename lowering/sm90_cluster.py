"""Thread-block clusters in a warp-specialised SM90 kernel: TMA multicast of the tiles every
block of a cluster loads alike.

In a kernel with `cluster(C)`, a persistent loop walks blocks of C tiles along m, one per
block of the cluster (irgen; tile-schedule adds the block's rank to m). A producer copy whose
tile does not depend on that rank (B's tile `(t.n, k)` when the blocks differ only in `t.m`)
is the same box in every block, so each block loads 1/C of it (rows rank·R/C on) and
multicasts its share into the same place in every block, each share completing on every
block's full barrier. The full barriers expect the whole tile as before. A stage is then
written by every block's producer, so it is free again only when every block's consumers have
read it: the consumers' releases go to the cluster (`sm90_ring.Ring.peer`). Two cluster
barriers bracket the kernel: after the barriers' initialisation (no block signals another's
barrier before it exists) and at the end (no block leaves while another may still signal
its barriers).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, nvvm

from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.sm90_sources import owner
from tilec.lowering.sm90_tma import SwizzledRows
from tilec.lowering.tile_cluster import cluster_barrier

VARYING = {"tile.block_id", "tile.thread_id", "nvvm.read.ptx.sreg.cluster.ctarank"}


def varies(value: ir.Value, cluster: int, seen: dict[ir.Value, bool] | None = None) -> bool:
    """Whether `value` may differ between the blocks of a cluster of `cluster` blocks: it is
    computed from a block or thread index or the block's rank in its cluster (tile-schedule
    adds it to a persistent tile's m). A block argument (a loop's induction variable: the
    loops walk the same iterations in every block) does not, nor does the block index divided
    by a multiple of the cluster's size (the cluster's index: a persistent loop's start)."""
    seen = {} if seen is None else seen
    if value in seen:
        return seen[value]
    op = owner(value)
    result = False
    if op is not None:
        if op.name in VARYING:
            result = True
        elif not cluster_index(op, cluster):
            result = any(varies(v, cluster, seen) for v in op.operands)
    seen[value] = result
    return result


def cluster_index(op: ir.Operation, cluster: int) -> bool:
    """Whether `op` is block.x divided by a multiple of the cluster's size."""
    if op.name != "arith.divui":
        return False
    source, divisor = (owner(v) for v in op.operands)
    if source is None or source.name != "tile.block_id" or divisor is None:
        return False
    if divisor.name != "arith.constant" or ir.IntegerAttr(source.attributes["dim"]).value != 0:
        return False
    return ir.IntegerAttr(divisor.attributes["value"]).value % cluster == 0


def check_split(op: ir.Operation, rows: SwizzledRows, cluster: int) -> None:
    """A multicast tile splits into `cluster` shares of whole swizzle atoms (8 rows, K-major)
    or whole chunks (MN-major), so that each share lands where the swizzle expects it."""
    if rows.mn_major and rows.chunks % cluster:
        raise LoweringError(
            op, f"this tile is the same in every block of the cluster and is multicast in "
            f"{cluster} shares of whole {rows.width}-element chunks: {rows.chunks} chunk(s)",
        )  # fmt: skip
    if not rows.mn_major and rows.rows % (8 * cluster):
        raise LoweringError(
            op, f"this tile is the same in every block of the cluster and is multicast in "
            f"{cluster} shares of whole 8-row swizzle atoms: {rows.rows} rows do not split",
        )  # fmt: skip


def rank() -> ir.Value:
    """The block's rank in its cluster, as an index."""
    i32 = ir.IntegerType.get_signless(32)
    r = nvvm.read_ptx_sreg_cluster_ctarank(i32)
    return arith.IndexCastUIOp(ir.IndexType.get(), r).result


def peer(tid: ir.Value, cluster: int, b: IndexBuilder) -> ir.Value:
    """The block whose empty barriers this thread releases: its thread index mod the cluster
    size (an i32), so that every block receives the same number of arrivals."""
    return arith.IndexCastOp(ir.IntegerType.get_signless(32), b.value(b.rem(tid, cluster))).result


@dataclass(frozen=True)
class Share:
    """This block's part of a copy: `chunks` boxes from row `first_row` (elements along M or
    N) and byte `first_byte` of the tile; `mask` names the blocks it goes to (None: this
    block alone)."""

    rows: int
    chunks: int
    first_row: Term
    first_byte: Term
    mask: ir.Value | None

    @staticmethod
    def of(rows: SwizzledRows, cluster: int, b: IndexBuilder) -> Share:
        if cluster == 1:
            return Share(rows.rows, rows.chunks, 0, 0, None)
        r = rank()
        mask = arith.ConstantOp(ir.IntegerType.get_signless(16), (1 << cluster) - 1).result
        part = rows.rows // cluster
        # MN-major: whole chunks; K-major: in each chunk along K, a box of R/C rows
        first_byte = b.mul(r, rows.bytes // cluster if rows.mn_major else part * rows.row_bytes)
        chunks = rows.chunks // cluster if rows.mn_major else rows.chunks
        return Share(part, chunks, b.mul(r, part), first_byte, mask)


def leave_together(func: ir.Operation) -> None:
    """A cluster barrier before the kernel returns: a block's shared memory and barriers
    outlive every signal the other blocks send it."""
    block = func.regions[0].blocks[0]
    ret = list(block.operations)[-1]
    with ir.InsertionPoint(ret), func.location:
        cluster_barrier()

"""Passes (lowered stage): `tile.cluster_reduce`, a register tensor combined over a cluster.

A kernel with `cluster(S)` runs S consecutive blocks along x as one thread-block cluster, whose
shared memory each block can read (distributed shared memory, sm_90). Every block partitions
its tile over its threads alike, so thread t of each block holds the same elements of its
block's tile; the combination is element by element, thread t with thread t:

1. thread t of the block of rank r writes its values into every block of the cluster (its
   own too), at slots r * n * T + k * T + t of a shared scratch (`mapa` maps a shared address
   to that block's copy);
2. `barrier.cluster.arrive` (release) and `wait` (acquire): every block's values are there;
3. thread t reads its S slots from its own block's scratch and combines them in rank order,
   so every block gets the same bits.

Before all of it, at the kernel's entry, one more cluster barrier: a block must not write into
another that has not started (racecheck reports it). No block reads another's memory, so a
block may exit, or go on, as soon as it has read its own: only inside a loop (the next
exchange rewrites the scratch) does a second cluster barrier follow the reads. Pulling each
block's values instead (reads through `mapa` after the barrier) needs that second barrier
always: softmax rows of 32768 split over two blocks ran 0.65 of the copy ceiling that way
and 0.75 this way (H200, docs/performance.md).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, nvvm

from tilec.binding import walk
from tilec.lowering import IndexBuilder, LoweringError
from tilec.lowering.tile_carry import Lowered, flatten, unflatten
from tilec.lowering.tile_fragments import combine
from tilec.lowering.tile_shared import shared_global, shared_pointer
from tilec.lowering.tile_views import gep


def cluster_barrier() -> None:
    """Every thread of every block of the cluster arrives (release), then waits (acquire)."""
    nvvm.ClusterArriveOp(aligned=True)
    nvvm.ClusterWaitOp(aligned=True)


def enter(func: ir.Operation) -> None:
    """At the kernel's entry, when it exchanges over a cluster: a cluster barrier (relaxed
    arrive, then wait), so that every block of the cluster has started before any block
    writes into another's shared memory (one that has not entered has no shared memory yet;
    racecheck reports such writes)."""
    attrs = func.attributes
    if "tile.cluster" not in attrs or ir.IntegerAttr(attrs["tile.cluster"]).value == 1:
        return
    found: list[ir.Operation] = []
    walk(func, lambda op: found.append(op) if op.name == "tile.cluster_reduce" else None)
    if found:
        nvvm.ClusterArriveRelaxedOp(aligned=True)
        nvvm.ClusterWaitOp(aligned=True)


def cluster_reduce(
    op: ir.Operation,
    value: Lowered,
    t: ir.Value,
    threads: int,
    module: ir.Operation,
    kernel: str,
    size: int,
    reuse_guard: bool,
) -> Lowered:
    """`value` (this block's) combined by the op's kind with the same thread's value in every
    block of a cluster of `size`; `reuse_guard` (the op runs again, inside a loop) adds a
    cluster barrier after the reads, before any block writes the scratch again."""
    if size == 1:
        return value
    kind = ir.StringAttr(op.attributes["kind"]).value
    values = flatten(op, value, value)
    elem = values[0].type
    if any(v.type != elem for v in values):
        raise LoweringError(op, "cluster reductions take one element type")
    b = IndexBuilder()
    n = len(values)
    symbol = shared_global(module, f"__cluster_{kernel}", elem, size * n * threads)
    base = shared_pointer(symbol)
    generic = llvm.AddrSpaceCastOp(ir.Type.parse("!llvm.ptr"), base).result
    i32 = ir.IntegerType.get_signless(32)
    rank = nvvm.read_ptx_sreg_cluster_ctarank(i32)
    # This block's slots in every block's scratch: rank * n * T + k * T + t.
    mine = b.add(b.mul(arith.IndexCastUIOp(ir.IndexType.get(), rank).result, n * threads), t)
    own = gep(generic, mine, elem, b)
    for r in range(size):
        there = nvvm.MapaOp(generic.type, own, arith.ConstantOp(i32, r).result).result
        for k, v in enumerate(values):
            llvm.StoreOp(v, gep(there, k * threads, elem, b))
    cluster_barrier()
    row = gep(base, t, elem, b)
    out = []
    for k in range(n):
        acc = None
        for r in range(size):
            v = llvm.LoadOp(elem, gep(row, (r * n + k) * threads, elem, b)).result
            acc = v if acc is None else combine(kind, acc, v)
        out.append(acc)
    if reuse_guard:
        cluster_barrier()
    return unflatten(value, out)

r"""Passes: `tile-ring`, the pipelined loops of a warp-specialised kernel on a TMA mbarrier ring.

What tile-pipeline does with cp.async groups for a loop all threads run, this pass does for
the producer and the consumers of a `warp_specialize` block (sm90_ring): every shared buffer a
producer's `copy<tma>` fills gets S stages (S the loops' `stages`) of 1024-byte aligned slots
in one shared array, with a full and an empty mbarrier per stage after them, initialised at the
kernel's entry. Both sides number the pipelined loops' iterations over the whole kernel
(sm90_loops.counter_of, continued from a split unit's `tile.work_unit` start), so iteration i
is stage i mod S in turn i div S:

- the producer's loop, at the top of each iteration, waits until the consumers have released
  the stage and arms its full barrier with the bytes its TMA boxes deliver (expect-tx), then
  each `copy<tma>` becomes `cp.async.bulk.tensor` loads into the stage's slot (the TMA copy
  family, sm90_tma; multicast shares in a cluster, sm90_cluster), completing on that barrier;
- the consumers' loop waits on the stage's full barrier by phase before its gemm, the gemm
  reads the stage's slots (casts of their pointers to the buffers' types, as convert-tile-views
  writes views), and after it releases the stage the iteration before read: the wgmma family
  leaves at most one group of wgmmas in flight when a gemm ends (convert-tile-mma), so that
  stage's reads are done. After the loop the last stage is released (the family waits for the
  last group first, right after the loop).

    scf.for %k ... {tile.stages = 4} {            scf.for %k ... {
      "tile.copy"(%gA, %sA) {atom = "tma"}    →     wait empty[s] (phase), expect_tx full[s]
    }                                                 cp.async.bulk.tensor ... full[s] }
    scf.for %k ... {tile.stages = 4} {            scf.for %k ... {
      "tile.gemm"(%mma, %sA, %sB, %acc)       →     wait full[s] (phase)
    }                                                 "tile.gemm"(%mma, %slotA, %slotB, %acc)
                                                      release empty[(i - 1) mod S] if i > 0 }
                                                  release empty[last] if the loop ran

It also plans the consumers' TMA-store epilogue (a 16-bit tile of a kernel tensor, stored
once): the shared chunks after the stages (tagged `tile.epilogue_chunks`), the tensor map
(`tile.tma_store` on the store: its argument), which convert-tile-memory's store uses. It
writes `tile.tma` (the maps the runtime encodes) and `tile.ring_stages` (the contract facts
`stages` and `depth`) on the kernel. In the `lowered` stage, after tile-schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, gpu

from tilec import smem
from tilec.binding import op_id, walk
from tilec.dialects.layout import algebra as A
from tilec.dialects.tile.types import MmaType
from tilec.lowering import IndexBuilder, LoweringError, Term, sm90_cluster, sm90_split, sm90_tma
from tilec.lowering.sm90_epilogue import EPILOGUE, TMA_STORE
from tilec.lowering.sm90_loops import counter_of, index, trips
from tilec.lowering.sm90_ring import Ring, aligned_base
from tilec.lowering.sm90_roles import roles_of
from tilec.lowering.sm90_sources import tensor_of
from tilec.lowering.sm90_tma import SwizzledRows
from tilec.lowering.tile_access import if_else
from tilec.lowering.tile_roles import Role, role_of
from tilec.lowering.tile_values import view_cast
from tilec.lowering.tile_views import (
    View,
    elem_bytes,
    gep,
    shared_global,
    shared_pointer,
    tensor_type,
)
from tilec.passes.base import Pass, register
from tilec.passes.tile_schedule import UNIT, cluster_width
from tilec.targets import smem_optin


def pipelined(op: ir.Operation) -> ir.Operation:
    """The pipelined loop (`scf.for {tile.stages}`) holding `op`."""
    p = op.parent
    while p is not None and p.name != "func.func":
        if p.name == "scf.for" and "tile.stages" in p.attributes:
            return p
        p = p.parent
    raise LoweringError(op, f"'{op.name}' of a warp-specialised kernel belongs in a pipelined loop")


def unit_start(loop: ir.Operation) -> Term | None:
    """The ring's count before a split unit's first iteration (its `tile.work_unit`), for a
    pipelined loop in a split persistent loop; None elsewhere."""
    persistent = sm90_split.around(loop)
    if "tile.split_tail" not in persistent.attributes:
        return None
    for o in persistent.regions[0].blocks[0].operations:
        if o.operation.name == UNIT:
            return o.operation.operands[0]
    return None


@dataclass
class Plan:
    """The ring's shape: each TMA-filled buffer's slot (offset in a stage, rows), a stage's
    bytes, the bytes each producer loop's stage loads, S, the copies every block of a cluster
    makes alike (multicast), and the epilogue's chunks."""

    slots: dict[ir.Value, tuple[int, SwizzledRows]] = field(default_factory=dict)
    stage_bytes: int = 0
    loop_bytes: dict[int, int] = field(default_factory=dict)
    stages: int = 0
    multicast: set[int] = field(default_factory=set)
    store: ir.Operation | None = None  # the store through the TMA epilogue
    epilogue_bytes: int = 0

    def add_copy(self, op: ir.Operation, cluster: int) -> None:
        dst = op.operands[1]
        rows = sm90_tma.swizzled_rows(op, tensor_type(dst.type))
        key = op_id(pipelined(op))
        self.loop_bytes[key] = self.loop_bytes.get(key, 0) + rows.bytes
        if cluster > 1 and not sm90_cluster.varies(op.operands[0], cluster):
            sm90_cluster.check_split(op, rows, cluster)
            self.multicast.add(op_id(op))
        if dst not in self.slots:
            self.slots[dst] = (self.stage_bytes, rows)
            self.stage_bytes += smem.ring_slot_bytes(rows.bytes)


def make_plan(func: ir.Operation, roles: dict[str, ir.Operation], epilogue: str) -> Plan:
    plan, stages = Plan(), set()
    ops: list[ir.Operation] = []
    walk(func, lambda o: ops.append(o) if o.name in ("tile.copy", "tile.gemm") else None)
    for op in ops:
        stages.add(ir.IntegerAttr(pipelined(op).attributes["tile.stages"]).value)
        if op.name == "tile.copy":
            atom = ir.StringAttr(op.attributes["atom"]).value
            if atom != "tma":
                raise LoweringError(
                    op, f"copy<{atom}> in a warp-specialised kernel: only copy<tma> is lowered"
                )
            plan.add_copy(op, cluster_width(func))
    if len(stages) > 1:
        raise LoweringError(
            func,
            f"the producer's and consumers' pipelined loops share one ring: they need one "
            f"stage count, got {sorted(stages)}",
        )
    plan.stages = stages.pop() if stages else 0
    plan_epilogue(plan, roles["consumer"], epilogue)
    return plan


def plan_epilogue(plan: Plan, consumer: ir.Operation, mode: str) -> None:
    """The consumers' store goes out through TMA (`epilogue=tma`) when it is the one store of
    a 16-bit tile of a kernel tensor from a register tensor spread as a wgmma's C."""
    stores: list[ir.Operation] = []
    walk(consumer, lambda o: stores.append(o) if o.name == "tile.store" else None)
    if mode != "tma" or len(stores) != 1 or len(stores[0].operands) != 2:
        return
    t = tensor_type(stores[0].operands[1].type)
    if tensor_of(stores[0].operands[1]) is None or elem_bytes(t.elem) != 2:
        return
    if not whole_chunks(stores[0], consumer):
        return
    plan.store = stores[0]
    role = Role.of(consumer)
    plan.epilogue_bytes = smem.epilogue_bytes(len(role.groups))


def whole_chunks(store: ir.Operation, consumer: ir.Operation) -> bool:
    """Whether each consumer group's piece of the stored tile is whole epilogue chunks (64
    rows of 128 bytes): the tile over the wgmma's (GM, GN) warp groups (the consumers' one
    tiled MMA)."""
    mmas = {g.operands[0].type for g in gemms_in(consumer)}
    if len(mmas) != 1:
        return False
    tiling = MmaType.of(mmas.pop()).tiling
    gm, gn = (int(x) for x in tiling.strip("()").split(",")[:2])
    shape = A.flatten(A.shape(tensor_type(store.operands[1].type).layout))
    if len(shape) != 2 or not all(isinstance(e, int) for e in shape):
        return False
    return shape[0] % (gm * smem.EPILOGUE_CHUNK_BYTES // 128) == 0 and shape[1] % (gn * 64) == 0


def gemms_in(op: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []
    walk(op, lambda o: found.append(o) if o.name == "tile.gemm" else None)
    return found


class RingKernel:
    """One warp-specialised kernel while its ring is built."""

    def __init__(self, func: ir.Operation, module: ir.Operation, epilogue: str) -> None:
        self.func, self.module = func, module
        self.roles = roles_of(func)
        self.name = ir.StringAttr(func.attributes["sym_name"]).value
        self.cluster = cluster_width(func)
        self.plan = make_plan(func, self.roles, epilogue)
        self.tma: list[ir.Attribute] = []
        self.descriptors: dict[str, ir.Value] = {}
        self.issued: dict[int, tuple[Term, ir.Value]] = {}  # producer loop -> stage, barrier

    def build(self) -> None:
        entry = self.func.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(entry), self.func.location:
            self.prologue()
        ops: list[ir.Operation] = []
        walk(self.func, lambda o: ops.append(o) if o.name in ("tile.copy", "tile.gemm") else None)
        has_gemm = any(o.name == "tile.gemm" for o in ops)
        for op in ops:
            with ir.InsertionPoint(op), op.location:
                self.copy(op) if op.name == "tile.copy" else self.gemm(op)
        if not self.plan.loop_bytes or not has_gemm:
            raise LoweringError(
                self.roles["consumer"],
                "a warp-specialised kernel needs copy<tma> in its producer and gemm in its "
                "consumers: the consumers release the ring's stages the producer waits for",
            )
        for buffer in self.plan.slots:
            for use in buffer.uses:
                raise LoweringError(
                    use.owner, "a TMA-filled buffer is read only by gemms in the ring's loops"
                )
            buffer.owner.erase()
        self.roles["consumer"].parent.attributes["tile.ring"] = ir.UnitAttr.get()
        self.func.attributes["tile.tma"] = ir.ArrayAttr.get(self.tma)
        i64 = ir.IntegerType.get_signless(64)  # for contracts: depth == STAGES
        self.func.attributes["tile.ring_stages"] = ir.IntegerAttr.get(i64, self.plan.stages)

    def prologue(self) -> None:
        b, plan = IndexBuilder(), self.plan
        tid = gpu.ThreadIdOp(gpu.Dimension.x).result
        ring_bytes = plan.stages * plan.stage_bytes + plan.epilogue_bytes
        total = smem.ring_bytes(plan.stages, plan.stage_bytes, plan.epilogue_bytes)
        limit = smem_optin(ir.StringAttr(self.func.attributes["tile.target"]).value)
        if total > limit:
            raise LoweringError(
                self.func,
                f"shared memory needs {total} bytes ({plan.stages} stages x {plan.stage_bytes}"
                f" + {plan.epilogue_bytes} for the epilogue + barriers and alignment), the "
                f"target allows {limit}",
            )
        i8 = ir.IntegerType.get_signless(8)
        symbol = shared_global(self.module, f"__smem_{self.name}_ring", i8, total)
        self.base = aligned_base(shared_pointer(symbol), smem.SLOT_ALIGN)
        full = gep(self.base, ring_bytes, i8, b)
        empty = gep(self.base, ring_bytes + plan.stages * smem.BARRIER_BYTES, i8, b)
        # Every consumer thread releases a stage it read; with ping-pong, one group reads it.
        consumer = Role.of(self.roles["consumer"])
        self.ring = Ring(plan.stages, full, empty, consumer.threads)
        if plan.multicast:  # consumers release the stages of every block that fills theirs
            self.ring.peer = sm90_cluster.peer(tid, self.cluster, b)
        self.ring.init(tid, b)
        if plan.multicast:  # no block leaves while another may still signal its barriers
            sm90_cluster.leave_together(self.func)
        chunks = gep(self.base, plan.stages * plan.stage_bytes, i8, b)
        if plan.store is not None:
            chunks.owner.attributes[EPILOGUE] = ir.UnitAttr.get()
            self.store_map(plan.store)

    def store_map(self, store: ir.Operation) -> None:
        """The TMA-store epilogue's tensor map: a kernel argument, named on the store."""
        descriptor = sm90_tma.add_descriptor_argument(self.func)
        tensor = tensor_of(store.operands[1])
        name = ir.StringAttr(tensor.attributes["name"]).value
        rank = len(tensor_type(tensor.results[0].type).layout.shape)
        box = [1] * (rank - 2) + [smem.EPILOGUE_CHUNK_BYTES // 128, 128 // 2]
        self.tma.append(sm90_tma.describe(f"tma_{name}", name, box, 128, optional=True))
        i64 = ir.IntegerType.get_signless(64)
        store.attributes[TMA_STORE] = ir.IntegerAttr.get(i64, descriptor.arg_number)

    def counter(self, loop: ir.Operation, b: IndexBuilder, at_end: bool = False) -> Term:
        return counter_of(loop, role_of(loop), b, at_end, unit_start)

    def copy(self, op: ir.Operation) -> None:
        """A TMA load of a global tile into this iteration's stage of its buffer."""
        loop = pipelined(op)
        key = op_id(loop)
        if key not in self.issued:
            with ir.InsertionPoint.at_block_begin(loop.regions[0].blocks[0]), op.location:
                counter = self.counter(loop, IndexBuilder())
                acquired = self.ring.acquire(counter, self.plan.loop_bytes[key], IndexBuilder())
                self.issued[key] = acquired
        stage, full = self.issued[key]
        offset, rows = self.plan.slots[op.operands[1]]
        i8 = ir.IntegerType.get_signless(8)
        b = IndexBuilder()
        dst = gep(self.base, b.add(b.mul(stage, self.plan.stage_bytes), offset), i8, b)
        share = sm90_cluster.Share.of(
            rows, self.cluster if op_id(op) in self.plan.multicast else 1, b
        )
        sm90_tma.load_tile(op, rows, dst, full, share, self.descriptors, self.tma, b)
        op.erase()

    def gemm(self, op: ir.Operation) -> None:
        """Wait for the stage, read its slots, release the stage the iteration before read."""
        loop = pipelined(op)
        b = IndexBuilder()
        counter = self.counter(loop, b)
        stage = self.ring.wait_full(counter, b)
        here = b.mul(stage, self.plan.stage_bytes)
        for n in (1, 2):
            op.operands[n] = self.slot(op, op.operands[n], here, b)
        later = arith.CmpIOp(arith.CmpIPredicate.ugt, b.value(index(loop, b)), b.value(0)).result
        previous = arith.SubIOp(b.value(counter), b.value(1)).result
        with ir.InsertionPoint(_next(op)):
            self.release_if(later, previous)
        self.after_loop(loop)

    def slot(self, op: ir.Operation, buffer: ir.Value, here: Term, b: IndexBuilder) -> ir.Value:
        """The stage's slot of `buffer` as a view of the buffer's type."""
        if buffer not in self.plan.slots:
            raise LoweringError(op, "a wgmma operand must be a buffer the producer fills by TMA")
        offset, rows = self.plan.slots[buffer]
        i8 = ir.IntegerType.get_signless(8)
        ptr = gep(self.base, b.add(here, offset), i8, b)
        t = tensor_type(buffer.type)
        inner = t.layout.inner  # swizzled rows (sm90_tma.swizzled_rows checked them); MN-major
        shape, stride = list(A.flatten(inner.shape)), list(A.flatten(inner.stride))  # nests
        span = rows.bytes // rows.elem_bytes
        view = View(t.elem, "shared", ptr, 0, shape, stride, t.layout.outer)
        view.span = span
        return view_cast(op, buffer.type, view).results[0]

    def release_if(self, cond: ir.Value, counter: Term) -> None:
        def release() -> list:
            self.ring.release(counter, IndexBuilder())
            return []

        if_else(cond, [], release, lambda: [])

    def after_loop(self, loop: ir.Operation) -> None:
        """After a consumer loop (once): release the last stage it read, if it ran."""
        key = op_id(loop)
        if key in self.issued:
            return
        self.issued[key] = (0, loop.results[0] if loop.results else None)
        b = IndexBuilder()
        with ir.InsertionPoint(_next(loop)), loop.location:
            end = self.counter(loop, b, at_end=True)
            ran = arith.CmpIOp(arith.CmpIPredicate.sgt, b.value(trips(loop, b)), b.value(0)).result
            self.release_if(ran, arith.SubIOp(b.value(end), b.value(1)).result)


def _next(op: ir.Operation) -> ir.Operation:
    """The op after `op` in its block (a block always ends in its terminator)."""
    ops = list(op.block.operations)
    return ops[[o.operation for o in ops].index(op.operation) + 1].operation


@register
class TileRing(Pass):
    """Put a warp-specialised kernel's pipelined loops on an mbarrier ring of TMA stages.

    See the module's docstring; after tile-schedule, before tile-distribute.
    """

    name = "tile-ring"
    # `tma`: the consumers' output tile through shared chunks and TMA stores (16-bit outputs of
    # a kernel tensor; others store from registers), `direct`: always from registers.
    epilogue: str = "tma"

    def run(self, module: ir.Operation) -> None:
        if self.epilogue not in ("tma", "direct"):
            self.error(module, f"epilogue must be tma or direct, got '{self.epilogue}'")
            self.fail()

        def lower(func: ir.Operation) -> None:
            if roles_of(func) is not None:
                RingKernel(func, module, self.epilogue).build()

        self.each_kernel(module, lower)

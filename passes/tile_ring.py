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

from mlir import ir
from mlir.dialects import arith, gpu

from tilec import smem
from tilec.binding import before, enclosing_loops, op_id, walk
from tilec.dialects.layout import algebra as A
from tilec.lowering import IndexBuilder, LoweringError, Term, sm90_cluster, sm90_split, sm90_tma
from tilec.lowering.sm90_epilogue import EPILOGUE, TMA_STORE
from tilec.lowering.sm90_loops import counter_of, index, siblings, trips
from tilec.lowering.sm90_plan import make_plan, pipelined
from tilec.lowering.sm90_ring import Ring, aligned_base
from tilec.lowering.sm90_roles import roles_of
from tilec.lowering.sm90_sources import tensor_of
from tilec.lowering.tile_access import if_else
from tilec.lowering.tile_roles import Role, role_of
from tilec.lowering.tile_shared import shared_global, shared_pointer
from tilec.lowering.tile_values import view_cast
from tilec.lowering.tile_views import View, gep, tensor_type
from tilec.passes.base import Pass, register
from tilec.passes.tile_schedule import UNIT, cluster_width
from tilec.targets import smem_optin


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


class RingKernel:
    """One warp-specialised kernel while its ring is built."""

    def __init__(self, func: ir.Operation, module: ir.Operation, epilogue: str) -> None:
        self.func, self.module = func, module
        self.roles = roles_of(func)
        self.name = ir.StringAttr(func.attributes["sym_name"]).value
        self.cluster = cluster_width(func)
        self.plan = make_plan(func, self.roles, epilogue, self.cluster)
        self.tma: list[ir.Attribute] = []
        self.descriptors: dict[str, ir.Value] = {}
        self.issued: dict[int, tuple[Term, ir.Value]] = {}  # producer loop -> stage, barrier
        self.once_issued: tuple[Term, ir.Value] | None = None  # the once ring's, likewise
        # the consumers' first loop reading the once ring -> its stage, the release's arrive
        self.once_waited: dict[int, tuple[Term, ir.Operation]] = {}
        self.first: dict[int, int] = {}  # consumer loop -> its first gemm

    def build(self) -> None:
        entry = self.func.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(entry), self.func.location:
            self.prologue()
        ops: list[ir.Operation] = []
        walk(self.func, lambda o: ops.append(o) if o.name in ("tile.copy", "tile.gemm") else None)
        has_gemm = any(o.name == "tile.gemm" for o in ops)
        for op in ops:
            if op.name == "tile.gemm":
                self.first.setdefault(op_id(pipelined(op)), op_id(op))
        for op in ops:
            with ir.InsertionPoint(op), op.location:
                self.copy(op) if op.name == "tile.copy" else self.gemm(op)
        if not self.plan.loop_bytes or not has_gemm:
            raise LoweringError(
                self.roles["consumer"],
                "a warp-specialised kernel needs copy<tma> in its producer and gemm in its "
                "consumers: the consumers release the ring's stages the producer waits for",
            )
        for buffer in [*self.plan.slots, *self.plan.once]:
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
        limit = smem_optin(ir.StringAttr(self.func.attributes["tile.target"]).value)
        if plan.total > limit:
            once = f" + {plan.once_stages} x {plan.once_bytes} loaded once" if plan.once else ""
            raise LoweringError(
                self.func,
                f"shared memory needs {plan.total} bytes ({plan.stages} stages x "
                f"{plan.stage_bytes}{once} + {plan.epilogue_bytes} for the epilogue + "
                f"barriers and alignment), the target allows {limit}",
            )
        i8 = ir.IntegerType.get_signless(8)
        symbol = shared_global(self.module, f"__smem_{self.name}_ring", i8, plan.total)
        self.base = aligned_base(shared_pointer(symbol), smem.SLOT_ALIGN)
        barriers = plan.barriers_offset
        full = gep(self.base, barriers, i8, b)
        empty = gep(self.base, barriers + plan.stages * smem.BARRIER_BYTES, i8, b)
        # Every consumer thread releases a stage it read; with ping-pong, one group reads it.
        consumer = Role.of(self.roles["consumer"])
        self.ring = Ring(plan.stages, full, empty, consumer.threads)
        if plan.once:  # the once ring's barriers after the stage ring's
            at = barriers + 2 * plan.stages * smem.BARRIER_BYTES
            once_full = gep(self.base, at, i8, b)
            once_empty = gep(self.base, at + plan.once_stages * smem.BARRIER_BYTES, i8, b)
            self.once = Ring(plan.once_stages, once_full, once_empty, consumer.threads)
        if plan.multicast:  # consumers release the stages of every block that fills theirs
            self.ring.peer = sm90_cluster.peer(tid, self.cluster, b)
        self.ring.init(tid, b, [self.once] if plan.once else [])
        if plan.multicast:  # no block leaves while another may still signal its barriers
            sm90_cluster.leave_together(self.func)
        chunks = gep(self.base, plan.chunks_offset, i8, b)
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

    def once_counter(self, op: ir.Operation, b: IndexBuilder) -> Term:
        """The once ring's count at `op`: the kernel-wide number of the current iteration of
        the loops around it in its role (0 outside loops). Both roles must run the copies and
        the pipelined loop that reads them at the same depth of loops."""
        loops = enclosing_loops(op, role_of(op))
        return counter_of(loops[-1], role_of(op), b) if loops else 0

    def copy(self, op: ir.Operation) -> None:
        """A TMA load of a global tile into this iteration's stage of its buffer."""
        if op.operands[1] in self.plan.once:
            self.copy_once(op)
            return
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

    def copy_once(self, op: ir.Operation) -> None:
        """A TMA load into the once ring: the first of the copies acquires its stage."""
        b, plan = IndexBuilder(), self.plan
        if self.once_issued is None:
            self.once_depth = len(enclosing_loops(op, role_of(op)))
            self.once_issued = self.once.acquire(self.once_counter(op, b), plan.once_tx, b)
        stage, full = self.once_issued
        offset, rows = plan.once[op.operands[1]]
        at = b.add(b.add(b.mul(stage, plan.once_bytes), plan.once_offset), offset)
        dst = gep(self.base, at, ir.IntegerType.get_signless(8), b)
        share = sm90_cluster.Share.of(rows, 1, b)
        sm90_tma.load_tile(op, rows, dst, full, share, self.descriptors, self.tma, b)
        op.erase()

    def gemm(self, op: ir.Operation) -> None:
        """Wait for the stage, read its slots, release the stage the iteration before read.

        The wait and the release go with the loop's first gemm: every wgmma gemm commits one
        group and leaves at most one in flight (convert-tile-mma), so once the first gemm of
        iteration i ends, every group of iteration i - 1 is complete, whichever gemm of it
        read the stage. A gemm reading the once ring's buffers has its loop wait for their
        stage before it and release it after (`wait_once`)."""
        loop = pipelined(op)
        b = IndexBuilder()
        first = self.first[op_id(loop)] == op_id(op)
        counter = self.counter(loop, b)
        stage = self.ring.wait_full(counter, b) if first else b.rem(counter, self.plan.stages)
        here = b.mul(stage, self.plan.stage_bytes)
        for n in (1, 2):
            self.operand(op, n, loop, here, b)
        if first:
            later = arith.CmpIOp(
                arith.CmpIPredicate.ugt, b.value(index(loop, b)), b.value(0)
            ).result
            previous = arith.SubIOp(b.value(counter), b.value(1)).result
            with ir.InsertionPoint(_next(op)):
                self.release_if(later, previous)
        self.after_loop(loop)

    def operand(
        self, op: ir.Operation, n: int, loop: ir.Operation, here: Term, b: IndexBuilder
    ) -> None:
        """Gemm operand `n` as the slot of its buffer (through a `permute` of it: the slot
        permuted): of this stage, or of the once ring's stage; a register tensor stays."""
        value = op.operands[n]
        t = tensor_type(value.type)
        if t is not None and t.space == "register":
            return
        source = value.owner.operation if isinstance(value.owner, ir.OpView) else None
        permute = source is not None and source.name == "tile.permute"
        buffer = source.operands[0] if permute else value
        if buffer in self.plan.once:
            offset, _ = self.plan.once[buffer]
            place = b.add(b.mul(self.wait_once(op, loop), self.plan.once_bytes), offset)
            place = b.add(place, self.plan.once_offset)
        elif buffer in self.plan.slots:
            place = b.add(here, self.plan.slots[buffer][0])
        else:
            raise LoweringError(op, "a wgmma operand must be a buffer the producer fills by TMA")
        op.operands[n] = self.slot(op, value.type, place, b)
        if permute and not list(source.results[0].uses):
            source.erase()

    def slot(self, op: ir.Operation, typ: ir.Type, place: Term, b: IndexBuilder) -> ir.Value:
        """The slot at byte `place` of the array as a view of type `typ` (the buffer's, or
        its permutation's: swizzled rows, which sm90_tma.swizzled_rows checks)."""
        rows = sm90_tma.swizzled_rows(op, tensor_type(typ))
        i8 = ir.IntegerType.get_signless(8)
        ptr = gep(self.base, place, i8, b)
        t = tensor_type(typ)
        inner = t.layout.inner
        shape, stride = list(A.flatten(inner.shape)), list(A.flatten(inner.stride))  # nests
        view = View(t.elem, "shared", ptr, 0, shape, stride, t.layout.outer)
        view.span = rows.bytes // rows.elem_bytes
        return view_cast(op, typ, view).results[0]

    def wait_once(self, op: ir.Operation, loop: ir.Operation) -> Term:
        """Before the first consumer loop that reads the once ring (once): wait for its stage;
        after the last of those loops (pipelined loops one after the other in one block:
        `sm90_loops.siblings`), release it (the wgmma family's `wait_group 0` comes first,
        right after the loop). Returns the stage."""
        key = op_id(siblings(loop)[0])
        if key in self.once_waited:
            stage, release = self.once_waited[key]
            if before(release, loop):  # a later loop reads it too: release after that one
                release.move_after(loop)
            return stage
        if self.once_waited or len(enclosing_loops(loop, role_of(loop))) != self.once_depth:
            raise LoweringError(
                op, "the buffers loaded outside the pipelined loops are read by the pipelined "
                "loops of one block of the consumers, at the depth of loops their copies sit "
                "at in the producer (both sides count the once ring's turns alike)",
            )  # fmt: skip
        b = IndexBuilder()
        with ir.InsertionPoint(loop), loop.location:
            counter = self.once_counter(loop, b)
            stage = self.once.wait_full(counter, b)
        with ir.InsertionPoint(_next(loop)), loop.location:
            self.once.release(counter, IndexBuilder())
            release = _next(loop)
            while release.name != "nvvm.mbarrier.arrive":
                release = _next(release)
        self.once_waited[key] = (stage, release)
        return stage

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

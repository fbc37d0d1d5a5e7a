"""Passes: `convert-tile-sm90`, warp-specialised SM90 kernels: TMA, an mbarrier ring, wgmma.

A kernel with a `warp_specialize` region is lowered here whole (convert-tile-to-gpu then finds
no tile op in it). Its roles run on the warp groups they name, each after `setmaxnreg`; the
producer's pipelined loops become TMA loads into the stages of an mbarrier ring
(`sm90_ring`), issued by one thread; the consumers' pipelined loops wait for a stage, issue
wgmma on it, keep one wgmma group in flight, and release the stage the group before read
(`sm90_wgmma`); their accumulators are `scf.for` iter_args. Every shared buffer a producer
loop fills gets S stages (S = the loops' `stages`) of 1024-byte-aligned slots in one dynamic
shared array, with the 2·S barriers after them:

    scf.execute_region {                                    %wg = tid / 128
      scf.execute_region { ... copy<tma> ... }          →   scf.if %wg == 0 { setmaxnreg.dec 40
        {tile.role = "producer", ...}                         scf.if %tid mod 128 == 0 {
      scf.execute_region { ... gemm ... store ... }             ... wait empty, expect_tx,
        {tile.role = "consumer", ...}                           cp.async.bulk.tensor ... } }
    } {tile.warp_specialize}                                scf.if %wg in 1..2 { setmaxnreg.inc
                                                              ... wait full, wgmma, release }

Ops and atoms this pass does not handle are located errors (e.g. a copy other than
`copy<tma>` in a warp-specialised kernel, an MN-major operand).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm

from tilec.binding import is_float_attr, walk
from tilec.dialects.tile.types import MmaType
from tilec.passes import sm90_epilogue, sm90_roles, sm90_tma, sm90_values, sm90_wgmma
from tilec.passes.base import Pass, register
from tilec.passes.convert_layout_to_arith import IndexBuilder, Term
from tilec.passes.sm90_loops import RoleLoops, counter_of, index, trips
from tilec.passes.sm90_ring import BARRIER_BYTES, Ring, aligned_base
from tilec.passes.sm90_sources import box_origin, tensor_of
from tilec.passes.sm90_tma import SwizzledRows
from tilec.passes.sm90_wgmma import WgmmaAtom
from tilec.passes.tile_fragments import constant
from tilec.passes.tile_memory import if_else
from tilec.passes.tile_views import (
    LoweringError,
    View,
    elem_bytes,
    gep,
    shared_global,
    shared_pointer,
    slice_view,
    tensor_type,
)
from tilec.passes.tile_views import local_tile as view_of_tile
from tilec.passes.tile_views import make_tensor as view_of_tensor
from tilec.targets import smem_optin

WARPGROUP = 128
SLOT_ALIGN = 1024  # the 128-byte swizzle's period: TMA and wgmma address it from here
ID_OPS = {
    "tile.block_id": gpu.BlockIdOp,
    "tile.thread_id": gpu.ThreadIdOp,
    "tile.grid_dim": gpu.GridDimOp,
}
DIMS = (gpu.Dimension.x, gpu.Dimension.y, gpu.Dimension.z)


def is_region(op: ir.Operation, key: str) -> bool:
    return op.name == "scf.execute_region" and key in op.attributes


class Sm90Kernel:
    """One warp-specialised kernel while it is lowered: what each tile value has become."""

    def __init__(self, func: ir.Operation, module: ir.Operation, mode: str = "tma") -> None:
        self.func, self.module, self.mode = func, module, mode
        self.name = ir.StringAttr(func.attributes["sym_name"]).value
        threads = list(ir.DenseI64ArrayAttr(func.attributes["tile.threads"]))
        if len([t for t in threads if t > 1]) > 1 or threads[0] % WARPGROUP:
            raise LoweringError(
                func, "a warp-specialised kernel takes threads(N), N a multiple of 128"
            )
        self.threads = threads[0]
        self.views: dict[ir.Value, View] = {}
        self.tile_ops: dict[ir.Value, ir.Operation] = {}  # local_tile results: their ops
        self.tensor_names: dict[ir.Value, str] = {}
        self.slots: dict[ir.Value, tuple[int, SwizzledRows]] = {}  # buffer -> (offset, rows)
        self.accs: dict[ir.Value, list[ir.Value]] = {}  # fragment -> accumulator structs
        self.values: dict[ir.Value, sm90_values.Value] = {}  # register tensors, per element
        self.loading: dict[ir.Value, list[View]] = {}  # those computed from loads: the views
        self.descriptors: dict[str, ir.Value] = {}
        self.tma: list[ir.Attribute] = []
        self.stage_bytes = 0
        self.loops = RoleLoops()
        self.issued: dict[ir.Operation, tuple[Term, ir.Value]] = {}  # producer loop -> stage

    # --- structure -------------------------------------------------------------------------

    def lower(self) -> None:
        regions: list[ir.Operation] = []
        walk(
            self.func, lambda o: regions.append(o) if is_region(o, "tile.warp_specialize") else None
        )
        if len(regions) != 1 or regions[0].parent.name != "func.func":
            raise LoweringError(regions[-1], "a kernel holds one warp_specialize, at its top level")
        ws = regions[0]
        roles = [
            o.operation
            for o in ws.regions[0].blocks[0].operations
            if is_region(o.operation, "tile.role")
        ]
        self.roles = {ir.StringAttr(r.attributes["tile.role"]).value: r for r in roles}
        if sorted(self.roles) != ["consumer", "producer"] or len(roles) != 2:
            raise LoweringError(ws, "warp_specialize lowers one producer and one consumer role")
        ops: list[ir.Operation] = []
        walk(self.func, lambda o: ops.append(o) if o.name.startswith("tile.") else None)
        self.plan(ops)
        entry = self.func.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(entry), self.func.location:
            self.prologue()
        for op in ops:
            self.loops.close_outside(op, self.accs)
            if op.name == "tile.gemm":  # moves the op: before its insertion point is taken
                self.carry(op)
            with ir.InsertionPoint(op), op.location:
                self.lower_op(op)
        self.loops.close_outside(None, self.accs)
        for op in reversed(ops):
            for r in op.results:
                user = next((u.owner for u in r.uses), None)
                if user is not None:
                    raise LoweringError(user, "a tile tensor cannot cross into this op")
            op.erase()
        self.split(roles)
        del ws.attributes["tile.warp_specialize"]
        self.func.attributes["tile.tma"] = ir.ArrayAttr.get(self.tma)
        i64 = ir.IntegerType.get_signless(64)  # for contracts: depth == STAGES
        self.func.attributes["tile.ring_stages"] = ir.IntegerAttr.get(i64, self.stages)

    def plan(self, ops: list[ir.Operation]) -> None:
        """The ring: a slot per stage for every buffer a producer copy fills, and S."""
        stages: set[int] = set()
        for op in ops:
            if op.name == "tile.copy":
                loop = self.loops.pipelined(op)
                stages.add(ir.IntegerAttr(loop.attributes["tile.stages"]).value)
                dst = op.operands[1]
                if dst not in self.slots:
                    rows = sm90_tma.swizzled_rows(op, tensor_type(dst.type))
                    self.slots[dst] = (self.stage_bytes, rows)
                    self.stage_bytes += -(-rows.bytes // SLOT_ALIGN) * SLOT_ALIGN
        for op in ops:
            if op.name == "tile.gemm":
                loop = self.loops.pipelined(op)
                stages.add(ir.IntegerAttr(loop.attributes["tile.stages"]).value)
        if len(stages) != 1:
            raise LoweringError(
                self.func,
                f"the producer's and consumers' pipelined loops share one ring: they need one "
                f"stage count, got {sorted(stages)}",
            )
        self.stages = stages.pop()
        self.plan_epilogue(ops)

    def prologue(self) -> None:
        b = IndexBuilder()
        self.tid = gpu.ThreadIdOp(gpu.Dimension.x).result
        self.warpgroup = b.div(self.tid, WARPGROUP)
        ring_bytes = self.stages * self.stage_bytes + self.epilogue_bytes
        total = ring_bytes + 2 * self.stages * BARRIER_BYTES + SLOT_ALIGN
        limit = smem_optin(ir.StringAttr(self.func.attributes["tile.target"]).value)
        if total > limit:
            raise LoweringError(
                self.func,
                f"shared memory needs {total} bytes ({self.stages} stages x {self.stage_bytes}"
                f" + {self.epilogue_bytes} for the epilogue + barriers and alignment), the "
                f"target allows {limit}",
            )
        symbol = shared_global(
            self.module, f"__smem_{self.name}_ring", ir.IntegerType.get_signless(8), total
        )
        self.base = aligned_base(shared_pointer(symbol), SLOT_ALIGN)
        i8 = ir.IntegerType.get_signless(8)
        full = gep(self.base, ring_bytes, i8, b)
        empty = gep(self.base, ring_bytes + self.stages * BARRIER_BYTES, i8, b)
        consumers = len(self.warpgroups(self.roles["consumer"])) * WARPGROUP
        self.ring = Ring(self.stages, full, empty, consumers)
        self.ring.init(self.tid, b)
        self.epilogue_base = gep(self.base, self.stages * self.stage_bytes, i8, b)
        if self.tma_store is not None:
            self.store_descriptor = sm90_tma.add_descriptor_argument(self.func)
            cols = 128 // 2
            box = [1] * (self.store_rank - 2) + [sm90_epilogue.CHUNK_ROWS, cols]
            name = f"tma_{self.tma_store}"
            self.tma.append(sm90_tma.describe(name, self.tma_store, box, 128, optional=True))

    def warpgroups(self, role: ir.Operation) -> list[int]:
        groups = list(ir.DenseI64ArrayAttr(role.attributes["tile.warpgroups"]))
        if any(not 0 <= g < self.threads // WARPGROUP for g in groups):
            raise LoweringError(role, f"warp groups {groups} beyond threads({self.threads})")
        return groups

    def split(self, roles: list[ir.Operation]) -> None:
        """The roles on their warp groups (`sm90_roles`): the producer's body on one thread
        of its group, the consumers' ending with their stores drained."""
        b = IndexBuilder()
        groups = [self.warpgroups(role) for role in roles]
        for role in roles:
            if sm90_roles.kind(role) == "producer":
                with ir.InsertionPoint(role), role.location:
                    single = self.leader(b)
                sm90_roles.prepare(role, single=single)
            elif self.tma_store is not None:
                sm90_roles.prepare(role, at_end=lambda: sm90_epilogue.drain(self.leader(b)))
            else:
                sm90_roles.prepare(role)
        sm90_roles.chain(
            [
                (role, partial(sm90_roles.condition, g, b.value(self.warpgroup), b))
                for role, g in zip(roles, groups, strict=True)
            ]
        )

    # --- ops ---------------------------------------------------------------------------------

    def lower_op(self, op: ir.Operation) -> None:
        lowering = LOWERINGS.get(op.name)
        if lowering is None:
            raise LoweringError(op, f"'{op.name}' is not lowered in a warp-specialised kernel yet")
        lowering(self, op, IndexBuilder())

    def view(self, op: ir.Operation, value: ir.Value) -> View:
        if value not in self.views:
            raise LoweringError(op, "expected a global tensor or a tile of one")
        return self.views[value]

    def special_id(self, op: ir.Operation, b: IndexBuilder) -> None:
        dim = DIMS[ir.IntegerAttr(op.attributes["dim"]).value]
        op.results[0].replace_all_uses_with(ID_OPS[op.name](dim).result)

    def make_tensor(self, op: ir.Operation, b: IndexBuilder) -> None:
        ptr = llvm.AddrSpaceCastOp(ir.Type.parse("!llvm.ptr<1>"), op.operands[0]).result
        self.views[op.results[0]] = view_of_tensor(op, ptr)
        self.tensor_names[op.results[0]] = ir.StringAttr(op.attributes["name"]).value

    def slice(self, op: ir.Operation, b: IndexBuilder) -> None:
        self.views[op.results[0]] = slice_view(op, self.view(op, op.operands[0]), b)

    def local_tile(self, op: ir.Operation, b: IndexBuilder) -> None:
        self.views[op.results[0]] = view_of_tile(op, self.view(op, op.operands[0]), b)
        self.tile_ops[op.results[0]] = op

    def alloc_shared(self, op: ir.Operation, b: IndexBuilder) -> None:
        if op.results[0] not in self.slots:
            raise LoweringError(
                op, "a shared buffer of a warp-specialised kernel must be a TMA destination"
            )

    def tiled_mma(self, op: ir.Operation, b: IndexBuilder) -> None:
        mma = MmaType.of(op.results[0].type)
        self.atom = WgmmaAtom.parse(op, mma.atom)
        tiling = [int(x) for x in mma.tiling.strip("()").split(",")]
        if len(tiling) != 3 or tiling[2] != 1:
            raise LoweringError(op, f"wgmma tiling {mma.tiling}: (m, n, 1) warp groups")
        self.tiling = (tiling[0], tiling[1])

    def tile_coord(self, op: ir.Operation, b: IndexBuilder) -> None:
        """Linear tile index → (m, n): `grouped(G)` walks G rows of tiles column by column."""
        t, tiles_m, tiles_n = op.operands
        if "raster" in op.attributes and ir.StringAttr(op.attributes["raster"]).value == "grouped":
            group = ir.IntegerAttr(op.attributes["group"]).value
            width = b.mul(tiles_n, group)
            first = b.mul(b.div(t, width), group)
            rest = arith.SubIOp(b.value(tiles_m), b.value(first)).result
            size = arith.MinUIOp(rest, b.value(group)).result
            within = b.rem(t, width)
            m, n = b.add(first, b.rem(within, size)), b.div(within, size)
        else:
            m, n = b.div(t, tiles_n), b.rem(t, tiles_n)
        op.results[0].replace_all_uses_with(b.value(m))
        op.results[1].replace_all_uses_with(b.value(n))

    def copy(self, op: ir.Operation, b: IndexBuilder) -> None:
        """A TMA load of a global tile into this iteration's stage of its buffer."""
        atom = ir.StringAttr(op.attributes["atom"]).value
        if atom != "tma":
            raise LoweringError(
                op, f"copy<{atom}> in a warp-specialised kernel: only copy<tma> is lowered"
            )
        tile = self.tile_ops.get(op.operands[0])
        if tile is None:
            raise LoweringError(op, "copy<tma> reads local_tile(T, ...) of a kernel tensor T")
        offset, rows = self.slots[op.operands[1]]
        shape = list(ir.DenseI64ArrayAttr(tile.attributes["tile"]))
        if shape != [rows.rows, rows.cols]:
            raise LoweringError(
                op, f"copy<tma> of a {shape} tile into a ({rows.rows},{rows.cols}) buffer"
            )
        name, coords, box = box_origin(tile, b)
        loop = self.loops.pipelined(op)
        if loop not in self.issued:
            with ir.InsertionPoint.at_block_begin(loop.regions[0].blocks[0]), op.location:
                counter = counter_of(loop, self.roles["producer"], IndexBuilder())
                self.issued[loop] = self.ring.acquire(counter, self.loaded_bytes(), IndexBuilder())
        stage, full = self.issued[loop]
        dst = gep(
            self.base,
            b.add(b.mul(stage, self.stage_bytes), offset),
            ir.IntegerType.get_signless(8),
            b,
        )
        if name not in self.descriptors:
            self.descriptors[name] = sm90_tma.add_descriptor_argument(self.func)
            self.tma.append(sm90_tma.describe(f"tma_{name}", name, box, rows.swizzle))
        sm90_tma.load(self.descriptors[name], dst, coords[::-1], full, b)

    def loaded_bytes(self) -> int:
        """What the TMA loads of one stage deliver (the full barrier's transaction count)."""
        return sum(rows.bytes for _, rows in self.slots.values())

    def fragment(self, op: ir.Operation, b: IndexBuilder) -> None:
        block = tuple(ir.DenseI64ArrayAttr(op.attributes["block_shape"]))
        wm, wn = self.tiling
        if len(block) != 2 or block[0] % (64 * wm) or block[1] % (self.atom.n * wn):
            raise LoweringError(
                op,
                f"a {block} accumulator does not tile by {wm}x{wn} warp groups of 64x{self.atom.n}",
            )
        self.block = block
        frag = op.results[0]
        self.accs[frag] = []
        self.values[frag] = sm90_values.of_accumulators(lambda: self.accs[frag])

    def fill(self, op: ir.Operation, b: IndexBuilder) -> None:
        value = ir.FloatAttr(op.attributes["value"]).value
        mt, nt = self.subtiles()
        count = mt * nt
        self.accs[op.operands[0]] = [sm90_wgmma.filled(self.atom, value) for _ in range(count)]

    def consumer_index(self, b: IndexBuilder) -> ir.Value:
        first = min(self.warpgroups(self.roles["consumer"]))
        return arith.SubIOp(b.value(self.warpgroup), b.value(first)).result

    def gemm(self, op: ir.Operation, b: IndexBuilder) -> None:
        """Wait for the stage, issue its wgmmas as one group, keep it in flight, release the
        stage the group before read."""
        loop = self.loops.pipelined(op)
        frag = op.operands[3]
        counter = counter_of(loop, self.roles["consumer"], b)
        stage = self.ring.wait_full(counter, b)
        (oa, ra), (ob, rb) = self.slots_of(op, 1), self.slots_of(op, 2)
        if ra.cols != rb.cols or ra.elem_bytes != rb.elem_bytes:
            raise LoweringError(
                op, f"A and B tiles differ along K: {ra.cols} vs {rb.cols} elements"
            )
        wm, _ = self.tiling
        mt, nt = self.subtiles()
        cw = self.consumer_index(b)
        here = b.mul(stage, self.stage_bytes)
        i8 = ir.IntegerType.get_signless(8)
        a_rows, b_rows = b.mul(b.rem(cw, wm), mt * 64), b.mul(b.div(cw, wm), nt * self.atom.n)
        base_a = gep(self.base, b.add(b.add(here, oa), b.mul(a_rows, ra.row_bytes)), i8, b)
        base_b = gep(self.base, b.add(b.add(here, ob), b.mul(b_rows, rb.row_bytes)), i8, b)
        desc_a, desc_b = sm90_wgmma.descriptor(base_a, ra), sm90_wgmma.descriptor(base_b, rb)
        accs = self.accs[frag]
        step = self.atom.k * ra.elem_bytes
        nvvm.WgmmaFenceAlignedOp()
        for kk in range(ra.cols // self.atom.k):
            for mi in range(mt):
                da = sm90_wgmma.advanced(desc_a, mi * 64 * ra.row_bytes + kk * step)
                for ni in range(nt):
                    db = sm90_wgmma.advanced(desc_b, ni * self.atom.n * rb.row_bytes + kk * step)
                    accs[mi * nt + ni] = sm90_wgmma.mma(self.atom, accs[mi * nt + ni], da, db)
        nvvm.WgmmaGroupSyncAlignedOp()
        nvvm.WgmmaWaitGroupSyncOp(1)
        later = arith.CmpIOp(arith.CmpIPredicate.ugt, b.value(index(loop, b)), b.value(0)).result
        self.release_if(later, arith.SubIOp(b.value(counter), b.value(1)).result)
        self.loops.after_loop(loop, lambda: self.drain(loop))

    def carry(self, gemm: ir.Operation) -> None:
        """The gemm's loop rebuilt with its accumulator as iter_args."""
        frag = gemm.operands[3]
        if frag not in self.accs or not self.accs[frag]:
            raise LoweringError(gemm, "gemm accumulates into a fragment filled before its loop")
        self.loops.carry(self.loops.pipelined(gemm), [frag], self.accs)

    def release_if(self, cond: ir.Value, counter: ir.Value) -> None:
        def release() -> list:
            self.ring.release(counter, IndexBuilder())
            return []

        if_else(cond, [], release, lambda: [])

    def drain(self, loop: ir.Operation) -> None:
        """After a consumer loop: wait for its last wgmma group, release the last stage."""
        b = IndexBuilder()
        nvvm.WgmmaWaitGroupSyncOp(0)
        end = counter_of(loop, self.roles["consumer"], b, at_end=True)
        ran = arith.CmpIOp(arith.CmpIPredicate.sgt, b.value(trips(loop, b)), b.value(0)).result
        self.release_if(ran, arith.SubIOp(b.value(end), b.value(1)).result)

    def subtiles(self) -> tuple[int, int]:
        """wgmma tiles per consumer warp group: (along M, along N)."""
        wm, wn = self.tiling
        return self.block[0] // (64 * wm), self.block[1] // (self.atom.n * wn)

    def slots_of(self, op: ir.Operation, operand: int) -> tuple[int, SwizzledRows]:
        value = op.operands[operand]
        if value not in self.slots:
            raise LoweringError(op, "a wgmma operand must be a buffer the producer fills by TMA")
        return self.slots[value]

    def store(self, op: ir.Operation, b: IndexBuilder) -> None:
        """The accumulators into a global tile, converted: through shared chunks and TMA
        stores (`epilogue=tma`, a 16-bit tile of a kernel tensor), else pairs of adjacent
        columns stored from registers."""
        if op.operands[0] not in self.values:
            raise LoweringError(op, "store of a register tensor not in the accumulator's layout")
        view = self.view(op, op.operands[1])
        if tuple(view.shape) != self.block:
            raise LoweringError(
                op, f"storing a {self.block} accumulator into a {tuple(view.shape)} tile"
            )
        wm, _ = self.tiling
        mt, nt = self.subtiles()
        cw = self.consumer_index(b)
        rows, cols = b.mul(b.rem(cw, wm), mt * 64), b.mul(b.div(cw, wm), nt * self.atom.n)
        value = self.values[op.operands[0]]
        if self.tma_store is None:
            sm90_epilogue.direct(view, value, self.atom, (mt, nt), (rows, cols), self.tid)
            return
        _, origin, _ = box_origin(self.tile_ops[op.operands[1]], b)
        outer, first = origin[:-2], origin[-2:]
        at = (b.add(first[0], rows), b.add(first[1], cols))
        # The map is optional: rows whose stride is not a multiple of 16 bytes get none, and
        # the chunks are copied out by the threads instead.
        i64 = ir.IntegerType.get_signless(64)
        address = llvm.PtrToIntOp(i64, self.store_descriptor).result
        made = arith.CmpIOp(arith.CmpIPredicate.ne, address, constant(i64, 0)).result
        epilogue = sm90_epilogue.Epilogue(
            self.atom, self.epilogue_base, cw, self.tid, self.leader(b), self.store_descriptor,
            made, view, (rows, cols), outer,
        )  # fmt: skip
        epilogue.store(value, (mt, nt), at, view.elem, self.loading.get(op.operands[0]))

    def leader(self, b: IndexBuilder) -> ir.Value:
        """Thread 0 of its warp group."""
        lane = b.rem(self.tid, WARPGROUP)
        return arith.CmpIOp(arith.CmpIPredicate.eq, b.value(lane), b.value(0)).result

    def register(self, op: ir.Operation, value: ir.Value) -> sm90_values.Value:
        """A register operand (in the accumulator's layout), or a scalar broadcast."""
        if value in self.loading:
            views = self.loading.setdefault(op.results[0], [])
            views.extend(v for v in self.loading[value] if v not in views)
        if tensor_type(value.type) is None:
            return sm90_values.scalar(value)
        if value not in self.values:
            raise LoweringError(op, "a register tensor here must be in the accumulator's layout")
        return self.values[value]

    def load(self, op: ir.Operation, b: IndexBuilder) -> None:
        """load(tile, like = acc): each element where the accumulator holds it."""
        if len(op.operands) != 2 or op.operands[1] not in self.values:
            raise LoweringError(op, "a load in a consumer needs like = <the accumulator>")
        view = self.view(op, op.operands[0])
        if tuple(view.shape) != self.block:
            raise LoweringError(op, f"loading a {tuple(view.shape)} tile like a {self.block} one")
        attr = op.attributes["other"]
        other = ir.FloatAttr(attr).value if is_float_attr(attr) else ir.IntegerAttr(attr).value
        loaded = sm90_values.load(view, other, b)
        elem = tensor_type(op.results[0].type).elem
        self.values[op.results[0]] = sm90_values.converted(loaded, elem)
        self.loading[op.results[0]] = [view]

    def convert(self, op: ir.Operation, b: IndexBuilder) -> None:
        elem = tensor_type(op.results[0].type).elem
        self.values[op.results[0]] = sm90_values.converted(self.register(op, op.operands[0]), elem)

    def unary(self, op: ir.Operation, b: IndexBuilder) -> None:
        kind = ir.StringAttr(op.attributes["op"]).value
        self.values[op.results[0]] = sm90_values.unary(op, kind, self.register(op, op.operands[0]))

    def binary(self, op: ir.Operation, b: IndexBuilder) -> None:
        kind = ir.StringAttr(op.attributes["op"]).value
        x, y = (self.register(op, v) for v in op.operands)
        rhs = op.operands[1]
        scalar = rhs if tensor_type(rhs.type) is None else None
        self.values[op.results[0]] = sm90_values.binary_of(op, kind, x, y, scalar)

    def plan_epilogue(self, ops: list[ir.Operation]) -> None:
        """Whether the tile store goes through TMA (`epilogue=tma` and a 16-bit tile of a
        kernel tensor), and its tensor map."""
        stores = [o for o in ops if o.name == "tile.store"]
        self.epilogue_bytes, self.tma_store = 0, None
        if self.mode != "tma" or len(stores) != 1:
            return
        t = tensor_type(stores[0].operands[1].type)
        tensor = tensor_of(stores[0].operands[1])
        if tensor is None or elem_bytes(t.elem) != 2:
            return
        groups = len(self.warpgroups(self.roles["consumer"]))
        self.epilogue_bytes = groups * sm90_epilogue.BUFFERS * sm90_epilogue.CHUNK_BYTES
        self.tma_store = ir.StringAttr(tensor.attributes["name"]).value
        self.store_rank = len(tensor_type(tensor.results[0].type).layout.shape)


Lowering = Callable[[Sm90Kernel, ir.Operation, IndexBuilder], None]
LOWERINGS: dict[str, Lowering] = {
    **dict.fromkeys(ID_OPS, Sm90Kernel.special_id),
    **{
        f"tile.{name}": getattr(Sm90Kernel, name)
        for name in (
            "make_tensor",
            "slice",
            "local_tile",
            "alloc_shared",
            "tiled_mma",
            "tile_coord",
            "copy",
            "fragment",
            "fill",
            "gemm",
            "load",
            "convert",
            "unary",
            "binary",
            "store",
        )
    },
}


def is_warp_specialized(func: ir.Operation) -> bool:
    found: list[ir.Operation] = []
    walk(func, lambda o: found.append(o) if is_region(o, "tile.warp_specialize") else None)
    return bool(found)


@register
class ConvertTileSm90(Pass):
    """Lower warp-specialised SM90 kernels: TMA loads on an mbarrier ring, wgmma, setmaxnreg."""

    name = "convert-tile-sm90"
    # `tma`: the output tile through shared chunks and TMA stores (16-bit outputs of a kernel
    # tensor; others store from registers), `direct`: always from registers.
    epilogue: str = "tma"

    def run(self, module: ir.Operation) -> None:
        funcs: list[ir.Operation] = []
        walk(module, lambda op: funcs.append(op) if op.name == "func.func" else None)
        if self.epilogue not in ("tma", "direct"):
            self.error(module, f"epilogue must be tma or direct, got '{self.epilogue}'")
            self.fail()
        failed = False
        for func in funcs:
            if "tile.kernel" not in func.attributes or not is_warp_specialized(func):
                continue
            try:
                Sm90Kernel(func, module, self.epilogue).lower()
            except LoweringError as err:
                self.error(err.op, str(err))
                failed = True
        if failed:
            self.fail()

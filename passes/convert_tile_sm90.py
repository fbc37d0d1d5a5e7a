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
from mlir.dialects import arith, gpu, llvm

from tilec import smem
from tilec.binding import inside, op_id, walk
from tilec.dialects.tile.types import MmaType
from tilec.lowering import (
    DIMS,
    ID_OPS,
    IndexBuilder,
    LoweringError,
    Term,
    sm90_cluster,
    sm90_epilogue,
    sm90_pingpong,
    sm90_roles,
    sm90_split,
    sm90_tma,
    sm90_values,
)
from tilec.lowering.sm90_consumer import ConsumerOps
from tilec.lowering.sm90_loops import RoleLoops, counter_of
from tilec.lowering.sm90_ring import Ring, aligned_base
from tilec.lowering.sm90_roles import WARPGROUP
from tilec.lowering.sm90_sources import box_origin
from tilec.lowering.sm90_tma import SwizzledRows
from tilec.lowering.sm90_wgmma import WgmmaAtom
from tilec.lowering.tile_rungs import erase_lowered
from tilec.lowering.tile_views import (
    View,
    gep,
    shared_global,
    shared_pointer,
    slice_view,
    tensor_type,
)
from tilec.lowering.tile_views import local_tile as view_of_tile
from tilec.lowering.tile_views import make_tensor as view_of_tensor
from tilec.lowering.tile_views import permute as permuted_view
from tilec.passes.base import Pass, register
from tilec.targets import smem_optin


def is_region(op: ir.Operation, key: str) -> bool:
    return op.name == "scf.execute_region" and key in op.attributes


class Sm90Kernel(ConsumerOps):
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
        attrs = func.attributes
        self.cluster = ir.IntegerAttr(attrs["tile.cluster"]).value if "tile.cluster" in attrs else 1
        # Ops as keys by binding.op_id (an op's hash follows its operands, which change).
        self.multicast: set[int] = set()  # copies every block of the cluster makes
        self.views: dict[ir.Value, View] = {}
        self.tile_ops: dict[ir.Value, ir.Operation] = {}  # local_tile results: their ops
        self.slots: dict[ir.Value, tuple[int, SwizzledRows]] = {}  # buffer -> (offset, rows)
        self.accs: dict[ir.Value, list[ir.Value]] = {}  # fragment -> accumulator structs
        self.values: dict[ir.Value, sm90_values.Value] = {}  # register tensors, per element
        self.loading: dict[ir.Value, list[View]] = {}  # those computed from loads: the views
        self.descriptors: dict[str, ir.Value] = {}
        self.tma: list[ir.Attribute] = []
        self.stage_bytes = 0
        self.loops = RoleLoops()
        self.issued: dict[int, tuple[Term, ir.Value]] = {}  # producer loop -> stage
        self.splits: dict[int, sm90_split.Split] = {}  # persistent loops with split tails

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
        consumer = self.roles["consumer"]
        self.pingpong = sm90_pingpong.requested(consumer)
        entry = self.func.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(entry), self.func.location:
            self.prologue()
        self.turns = None
        if self.pingpong:  # the order of the turns' barriers: after the epilogue's 1 + group
            groups = self.warpgroups(consumer)
            first = 1 + len(groups)
            group = partial(self.uniform_index, IndexBuilder())  # a warp-uniform branch
            self.turns = sm90_pingpong.alternate(consumer, groups, group, first)
        for op in ops:
            self.loops.close_outside(op, self.accs)
            if op.name == "tile.gemm":  # moves the op: before its insertion point is taken
                self.carry(op)
            with ir.InsertionPoint(op), op.location:
                self.lower_op(op)
        self.loops.close_outside(None, self.accs)
        has_gemm = any(o.name == "tile.gemm" for o in ops)
        erase_lowered(ops)
        if not self.issued or not has_gemm:
            raise LoweringError(
                self.roles["consumer"],
                "a warp-specialised kernel needs copy<tma> in its producer and gemm in its "
                "consumers: the consumers release the ring's stages the producer waits for",
            )
        self.split(roles)
        del ws.attributes["tile.warp_specialize"]
        self.func.attributes["tile.tma"] = ir.ArrayAttr.get(self.tma)
        i64 = ir.IntegerType.get_signless(64)  # for contracts: depth == STAGES
        self.func.attributes["tile.ring_stages"] = ir.IntegerAttr.get(i64, self.stages)

    def plan(self, ops: list[ir.Operation]) -> None:
        """The ring: a slot per stage for every buffer a producer copy fills, and S."""
        stages: set[int] = set()
        self.loop_bytes: dict[int, int] = {}  # producer loop -> bytes its stage loads
        for op in ops:
            if op.name == "tile.copy":
                loop = self.loops.pipelined(op)
                stages.add(ir.IntegerAttr(loop.attributes["tile.stages"]).value)
                dst = op.operands[1]
                if ir.StringAttr(op.attributes["atom"]).value == "tma":
                    rows = sm90_tma.swizzled_rows(op, tensor_type(dst.type))
                    key = op_id(loop)
                    self.loop_bytes[key] = self.loop_bytes.get(key, 0) + rows.bytes
                    if self.cluster > 1 and not sm90_cluster.varies(op.operands[0]):
                        sm90_cluster.check_split(op, rows, self.cluster)
                        self.multicast.add(op_id(op))
                if dst not in self.slots:
                    rows = sm90_tma.swizzled_rows(op, tensor_type(dst.type))
                    self.slots[dst] = (self.stage_bytes, rows)
                    self.stage_bytes += smem.ring_slot_bytes(rows.bytes)
        gemms = [op for op in ops if op.name == "tile.gemm"]
        for op in gemms:
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
        total = smem.ring_bytes(self.stages, self.stage_bytes, self.epilogue_bytes)
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
        self.base = aligned_base(shared_pointer(symbol), smem.SLOT_ALIGN)
        i8 = ir.IntegerType.get_signless(8)
        full = gep(self.base, ring_bytes, i8, b)
        empty = gep(self.base, ring_bytes + self.stages * smem.BARRIER_BYTES, i8, b)
        # Every consumer thread releases a stage it read; with ping-pong, one group reads it.
        groups = 1 if self.pingpong else len(self.warpgroups(self.roles["consumer"]))
        self.ring = Ring(self.stages, full, empty, groups * WARPGROUP)
        if self.multicast:  # consumers release the stages of every block that fills theirs
            self.ring.peer = sm90_cluster.peer(self.tid, self.cluster, b)
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
        if self.multicast:
            sm90_cluster.leave_together(self.func)

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

    def slice(self, op: ir.Operation, b: IndexBuilder) -> None:
        self.views[op.results[0]] = slice_view(op, self.view(op, op.operands[0]), b)

    def local_tile(self, op: ir.Operation, b: IndexBuilder) -> None:
        self.views[op.results[0]] = view_of_tile(op, self.view(op, op.operands[0]), b)
        self.tile_ops[op.results[0]] = op

    def permute(self, op: ir.Operation, b: IndexBuilder) -> None:
        self.views[op.results[0]] = permuted_view(op, self.view(op, op.operands[0]))

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
        groups = len(self.warpgroups(self.roles["consumer"]))
        if self.pingpong and tiling[0] * tiling[1] != 1:
            raise LoweringError(
                op, f"a pingpong consumer group holds whole tiles: tile the wgmma over "
                f"(1, 1, 1) warp groups, not {mma.tiling}",
            )  # fmt: skip
        if not self.pingpong and tiling[0] * tiling[1] != groups:
            raise LoweringError(
                op, f"the {groups} consumer warp group(s) split each tile: the wgmma tiling "
                f"{mma.tiling} must cover {groups}",
            )  # fmt: skip
        self.tiling = (tiling[0], tiling[1])

    def tile_coord(self, op: ir.Operation, b: IndexBuilder) -> None:
        """Linear tile index → (m, n): `grouped(G)` walks G rows of tiles column by column."""
        t, tiles_m, tiles_n = op.operands
        loop = sm90_split.around(op)
        rank = sm90_cluster.rank() if self.cluster > 1 else 0
        if "tile.split_tail" in loop.attributes:  # units of work, the tail's tiles split
            role = next(r for r in self.roles.values() if inside(op, r))
            t, self.splits[op_id(loop)] = sm90_split.plan(op, loop, role, b, (self.cluster, rank))
        if self.cluster > 1:  # the walk is over blocks of `cluster` tiles along m
            tiles_m = arith.CeilDivUIOp(tiles_m, b.value(self.cluster)).result
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
        if self.cluster > 1:
            m = b.add(b.mul(m, self.cluster), rank)
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
        name, coords, box, (mn_mode, k_mode) = box_origin(tile, b)
        stride = self.views[op.operands[0]].stride
        if (stride[0] if rows.mn_major else stride[-1]) != 1:
            along = "M or N" if rows.mn_major else "K"
            raise LoweringError(
                op,
                f"copy<tma> into this {'MN' if rows.mn_major else 'K'}-major buffer reads rows "
                f"of contiguous elements along {along}: the tile's stride there must be 1, "
                f"got {[d if isinstance(d, int) else '?' for d in stride]}",
            )
        loop = self.loops.pipelined(op)
        key = op_id(loop)
        if key not in self.issued:
            with ir.InsertionPoint.at_block_begin(loop.regions[0].blocks[0]), op.location:
                counter = self.counter(loop, "producer", IndexBuilder())
                self.issued[key] = self.ring.acquire(counter, self.loop_bytes[key], IndexBuilder())
        stage, full = self.issued[key]
        i8 = ir.IntegerType.get_signless(8)
        dst = gep(self.base, b.add(b.mul(stage, self.stage_bytes), offset), i8, b)
        # The tensor map's modes innermost first: the contiguous one, then the others.
        inner = mn_mode if rows.mn_major else k_mode
        order = [inner] + [m for m in reversed(range(len(box))) if m != inner]
        # Multicast: this block loads its 1/C share of the tile, rows rank·R/C on, into every
        # block of the cluster (the same offset in each), completing on each one's barrier.
        share = sm90_cluster.Share.of(rows, self.cluster if op_id(op) in self.multicast else 1, b)
        if rows.mn_major:  # one box per chunk of `width` elements along M (N)
            box = [rows.width if m == mn_mode else e for m, e in enumerate(box)]
        else:
            box = [share.rows if m == mn_mode else e for m, e in enumerate(box)]
        if name not in self.descriptors:
            self.descriptors[name] = sm90_tma.add_descriptor_argument(self.func)
            self.tma.append(sm90_tma.describe(f"tma_{name}", name, box, rows.swizzle, order=order))
        coords[mn_mode] = b.add(coords[mn_mode], share.first_row)
        dst = gep(dst, share.first_byte, i8, b)
        for c in range(share.chunks):
            at = [b.add(x, c * rows.width) if m == mn_mode else x for m, x in enumerate(coords)]
            chunk = gep(dst, c * rows.chunk_bytes, i8, b)
            sm90_tma.load(
                self.descriptors[name], chunk, [at[m] for m in order], full, b, share.mask
            )

    def counter(self, loop: ir.Operation, role: str, b: IndexBuilder, at_end: bool = False) -> Term:
        """`counter_of` in `role`, a split persistent loop's pipelined loops numbered on from
        the iterations of the block's units before."""
        return counter_of(loop, self.roles[role], b, at_end, self.unit_start)

    def unit_start(self, loop: ir.Operation) -> Term | None:
        split = self.splits.get(op_id(sm90_split.around(loop)))  # keyed by persistent loops
        return None if split is None else split.start

    def split_around(self, op: ir.Operation) -> sm90_split.Split | None:
        p = op.parent
        while p is not None and p.name != "func.func":
            if p.name == "scf.for" and op_id(p) in self.splits:
                return self.splits[op_id(p)]
            p = p.parent
        return None

    def leader(self, b: IndexBuilder) -> ir.Value:
        """Thread 0 of its warp group."""
        lane = b.rem(self.tid, WARPGROUP)
        return arith.CmpIOp(arith.CmpIPredicate.eq, b.value(lane), b.value(0)).result


Lowering = Callable[[Sm90Kernel, ir.Operation, IndexBuilder], None]
LOWERINGS: dict[str, Lowering] = {
    **dict.fromkeys(ID_OPS, Sm90Kernel.special_id),
    **{
        f"tile.{name}": getattr(Sm90Kernel, name)
        for name in (
            "make_tensor",
            "slice",
            "local_tile",
            "permute",
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
        if self.epilogue not in ("tma", "direct"):
            self.error(module, f"epilogue must be tma or direct, got '{self.epilogue}'")
            self.fail()

        def lower(func: ir.Operation) -> None:
            if is_warp_specialized(func):
                Sm90Kernel(func, module, self.epilogue).lower()

        self.each_kernel(module, lower)

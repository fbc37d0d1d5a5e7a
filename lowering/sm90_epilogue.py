"""The SM90 epilogue: accumulators through swizzled shared chunks to TMA stores.

Each consumer warp group writes its accumulators, converted to the output's type, one chunk
at a time into shared memory: 64 rows of one 128-byte swizzle row each (the rows of one
wgmma tile, `128 / element bytes` columns), laid out as a TMA map with the 128-byte swizzle
reads them, so the four threads of a row write one 16-byte unit and the eight rows of a warp's
store eight different units: no bank conflicts. One thread of the group then stores the chunk
with `cp.async.bulk.tensor` (TMA clips the box at the tensor's edges: ragged M and N need no
guard) and the group moves on; two chunk buffers per group alternate, so a chunk is written
while the one before is still being read out (`cp.async.bulk.wait_group.read 1` before a
buffer is reused). The stores drain while the consumers run the next tile's main loop.

    per chunk q of the group:    thread 0: wait_group.read 1      bar.sync 1+g, 128
                                 all:      st.shared (cvt pairs)   fence.proxy.async.shared::cta
                                           bar.sync 1+g, 128
                                 thread 0: cp.async.bulk.tensor.2d.global.shared::cta, commit
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, scf

from tilec import smem
from tilec.dialects.tile.atoms import split, value_mode, wgmma_c
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.sm90_ring import i32
from tilec.lowering.tile_access import if_else, when
from tilec.lowering.tile_fragments import (
    Deferred,
    Evaluation,
    Frag,
    chunk_values,
    convert,
    fast_path,
)
from tilec.lowering.tile_math import constant
from tilec.lowering.tile_mma import pair
from tilec.lowering.tile_roles import WARPGROUP, Role
from tilec.lowering.tile_roles import named_barrier as barrier
from tilec.lowering.tile_views import View, elem_bytes, element_address, gep, in_bounds

# The accumulator's value modes (dialects/tile/atoms.wgmma_c): a pair along the row, the
# pair HALF.row rows down, then blocks BLOCK.col columns apart.
PAIR, HALF, BLOCK = split(value_mode(wgmma_c(8)), 64)


def c_register(block: int, half: int) -> int:
    """The first register of the pair `half` of 8-column block `block` (4 * block + 2 * half
    for the f32 accumulator): the value mode's column-major index."""
    return PAIR.extent * (half + HALF.extent * block)


def c_lanes(tid: ir.Value, b: IndexBuilder) -> tuple[Term, Term, Term]:
    """(row, byte in a 16-byte unit, column) of this thread's first accumulator pair in its
    warp group's 64×N tile: wgmma's C layout (`atoms.wgmma_c`, thread modes 4:(0, 2 columns),
    8:(1 row, 0), 4:(16 rows, 0)), spelled in the instruction order the kernels were measured
    with; test_tile_mma evaluates it for every thread against the layout."""
    t = b.rem(tid, 128)
    lane = b.rem(t, 32)
    row = b.add(b.mul(b.div(t, 32), 16), b.div(lane, 4))  # and row + 8
    unit_byte = b.mul(b.rem(lane, 4), 4)  # a pair of 16-bit elements per thread
    return row, unit_byte, b.mul(b.rem(lane, 4), 2)


CHUNK_ROWS = 64
EPILOGUE = "tile.epilogue_chunks"  # tile-ring's tag on the chunks' base pointer
TMA_STORE = "tile.tma_store"  # tile-ring's tag on a store through them: its map's argument
CHUNK_BYTES = smem.EPILOGUE_CHUNK_BYTES  # CHUNK_ROWS of 128 bytes
BUFFERS = smem.EPILOGUE_BUFFERS  # chunk buffers per warp group


def op(name: str, operands: list[ir.Value], attrs: dict[str, str] | None = None) -> None:
    ir.Operation.create(
        name,
        operands=operands,
        attributes={k: ir.Attribute.parse(v) for k, v in (attrs or {}).items()},
    )


def group_barrier(group: ir.Value, b: IndexBuilder) -> None:
    """bar.sync 1 + group, 128: the warp group's own barrier (0 is the block's)."""
    barrier(b.add(group, 1), 128, b)


def on_leader(leader: ir.Value, body: Callable[[], None]) -> None:
    guard = scf.IfOp(leader)
    with ir.InsertionPoint(guard.then_block):
        body()
        scf.YieldOp([])


@dataclass
class Epilogue:
    """Where a warp group's chunk buffers are and who it is: `buffers` (shared, 1024-aligned,
    BUFFERS chunks per group), the group's index among the consumers, its thread 0."""

    buffers: ir.Value
    group: Term
    tid: ir.Value
    leader: ir.Value
    descriptor: ir.Value
    made: ir.Value  # i1: the runtime made the (optional) map; else copy chunks out by hand
    view: View  # the output tile, for the copy by hand
    offset: tuple[Term, Term]  # the group's first (row, column) in the tile
    outer: list[Term]  # the tile's coordinates along the tensor's outer modes (a batch)

    def store(
        self, value: Frag | Deferred, piece: tuple[int, int], origin: tuple[Term, Term],
        elem: ir.Type,
    ) -> None:  # fmt: skip
        """`value` (spread as the consumers' wgmma C: `tile_mma.wgmma_partition`) at every
        element of the group's `piece` (rows, columns of its 64-row tiles) into the output
        tile whose first element is at `origin` (row, column) of the tensor. A deferred value
        (an epilogue's loads and math) gets two versions: unguarded loads where the whole tile
        lies inside the tensor and its loads may skip their bounds, guarded ones elsewhere."""
        b = IndexBuilder()
        last = [s - 1 for s in self.view.shape]
        whole = None
        if isinstance(value, Deferred):
            whole = fast_path(value, in_bounds(self.view, last, b), b)
        lanes = c_lanes(self.tid, b)
        cols = 128 // elem_bytes(elem)
        q = 0
        for mi in range(piece[0] // CHUNK_ROWS):
            for right in range(0, piece[1], cols):
                down = mi * CHUNK_ROWS
                at = (b.add(origin[0], down), b.add(origin[1], right))
                here = (b.add(self.offset[0], down), b.add(self.offset[1], right))
                where_ = (at, here)
                chunk = Chunk(value, mi, right // 8, cols // 8, piece[0] // CHUNK_ROWS)
                self.chunk(chunk, lanes, q, where_, elem, whole)
                q += 1

    def chunk(
        self, chunk: Chunk, lanes: tuple[Term, Term, Term], q: int,
        where_: tuple[tuple[Term, Term], tuple[Term, Term]], elem: ir.Type,
        whole: ir.Value | bool | None = None,
    ) -> None:  # fmt: skip
        """Chunk q: (`where_`) its first element's (row, column) in the tensor and in the
        tile; `lanes`: the thread's row in it, byte in a 16-byte unit and column in an
        8-column block."""
        at, here = where_
        row, unit_byte, _ = lanes
        b = IndexBuilder()
        i8 = ir.IntegerType.get_signless(8)
        slot = b.add(b.mul(self.group, BUFFERS * CHUNK_BYTES), (q % BUFFERS) * CHUNK_BYTES)
        base = gep(self.buffers, slot, i8, b)
        on_leader(self.leader, lambda: op("nvvm.cp.async.bulk.wait_group", [],
                                          {"group": "1 : i32", "read": "unit"}))  # fmt: skip
        group_barrier(self.group, b)

        def write(guarded: bool) -> list:
            ev = Evaluation(guarded)
            for h in range(HALF.extent):
                r = b.add(row, HALF.row * h)
                line = b.mul(r, 128)
                phase = b.rem(r, 8)
                for j in range(chunk.blocks):
                    values = [convert(v, elem) for v in chunk.pair(j, h, ev)]
                    unit = arith.XOrIOp(b.value(phase), b.value(j)).result
                    where = b.add(b.add(line, b.mul(unit, 16)), unit_byte)
                    llvm.StoreOp(pair(*values), gep(base, where, i8, b), alignment=4)
            return []

        if whole is None:
            write(True)
        else:  # unguarded pair loads where the tile is whole and aligned
            if_else(whole, [], lambda: write(False), lambda: write(True))
        op("nvvm.fence.proxy", [], {"kind": "#nvvm.proxy_kind<async.shared>",
                                    "space": "#nvvm.shared_space<cta>"})  # fmt: skip
        group_barrier(self.group, b)

        def issue() -> None:
            coords = [i32(c, b) for c in (at[1], at[0], *reversed(self.outer))]  # innermost first
            op("nvvm.cp.async.bulk.tensor.global.shared.cta", [self.descriptor, base, *coords],
               {"mode": "#nvvm.tma_store_mode<tile>",
                "operandSegmentSizes": f"array<i32: 1, 1, {len(coords)}, 0, 0>"})  # fmt: skip
            op("nvvm.cp.async.bulk.commit.group", [])

        def by_tma() -> list:
            on_leader(self.leader, issue)
            return []

        if_else(self.made, [], by_tma, lambda: self.copy_out(base, here, elem))

    def copy_out(self, base: ir.Value, here: tuple[Term, Term], elem: ir.Type) -> list:
        """The chunk from shared memory to the tile by the group's threads, element by
        element inside the tensor's bounds (rows too unaligned for a tensor map). A loop, not
        unrolled: the slow path must not add to the registers the accumulators hold."""
        b = IndexBuilder()
        i8 = ir.IntegerType.get_signless(8)
        t = b.rem(self.tid, 128)
        col = b.rem(t, 64)
        unit, within = b.div(col, 8), b.mul(b.rem(col, 8), 2)
        loop = scf.ForOp(b.value(0), b.value(CHUNK_ROWS), b.value(2))
        with ir.InsertionPoint(loop.body):
            row = b.add(b.div(t, 64), loop.induction_variable)
            swizzled = arith.XOrIOp(b.value(unit), b.value(b.rem(row, 8))).result
            offset = b.add(b.add(b.mul(row, 128), b.mul(swizzled, 16)), within)
            value = llvm.LoadOp(elem, gep(base, offset, i8, b)).result
            coords = [b.add(here[0], row), b.add(here[1], col)]
            when(
                in_bounds(self.view, coords, b),
                lambda: llvm.StoreOp(value, element_address(self.view, coords, b)),
            )
            scf.YieldOp([])
        return []


@dataclass(frozen=True)
class Chunk:
    """One 64-row chunk of a warp group's part of `value`: its 64-row tile `mi` of `tiles`,
    8-column blocks `first` .. `first + blocks - 1` of the group's piece."""

    value: Frag | Deferred
    mi: int
    first: int
    blocks: int
    tiles: int

    def pair(self, j: int, h: int, ev: Evaluation) -> list[ir.Value]:
        """Values 2h, 2h + 1 of block `first + j`: the thread's pair h of it (row + 8h),
        chunk mi + TM·block of the fragment (`tile_mma_wgmma`'s order)."""
        i = self.mi + self.tiles * (self.first + j)
        return chunk_values(self.value, i, ev)[PAIR.extent * h : PAIR.extent * (h + 1)]


def drain(leader: ir.Value) -> None:
    """At the end of the consumers' role: every store of the group has completed (its shared
    chunks must outlive the reads, the block's exit would free them)."""
    on_leader(leader, lambda: op("nvvm.cp.async.bulk.wait_group", [], {"group": "0 : i32"}))


def store_tile(
    op: ir.Operation, value: Frag | Deferred, view: View, tid: ir.Value, role: Role
) -> None:
    """tile.store of a register tensor spread as a wgmma's C into a 16-bit tile of a kernel
    tensor, through the chunks tile-ring set aside (`tile.epilogue_chunks`) and the tensor map
    it added (`tile.tma_store`: its argument); `tid` is the kernel's thread index. The group's
    stores are drained at the end of the consumers' role."""
    part, func = value.part, kernel_of(op)
    gm, gn = part.warps[0] // 4, part.warps[1]
    piece = (part.block[0] // gm, part.block[1] // gn)
    if elem_bytes(view.elem) != 2 or piece[1] % 64 or piece[0] % CHUNK_ROWS:
        raise LoweringError(
            op,
            f"a TMA-stored output goes out in chunks of 64 rows of 128 bytes: 16-bit elements "
            f"and a warp group's tile of whole chunks (got {view.elem}, {piece})",
        )
    b = IndexBuilder()
    group = b.sub(b.div(tid, WARPGROUP), role.first)
    place: Term = 0 if role.pingpong else group
    rows, cols = b.mul(b.rem(place, gm), piece[0]), b.mul(b.div(place, gm), piece[1])
    origin = [bound.origin for bound in view.bounds]  # the tile's first element, every mode
    at = (b.add(origin[-2], rows), b.add(origin[-1], cols))
    number = ir.IntegerAttr(op.attributes[TMA_STORE]).value
    descriptor = func.regions[0].blocks[0].arguments[number]
    i64 = ir.IntegerType.get_signless(64)
    address = llvm.PtrToIntOp(i64, descriptor).result
    made = arith.CmpIOp(arith.CmpIPredicate.ne, address, constant(i64, 0)).result
    lane = b.rem(tid, WARPGROUP)
    leader = arith.CmpIOp(arith.CmpIPredicate.eq, b.value(lane), b.value(0)).result
    epilogue = Epilogue(
        chunk_base(op, func), group, tid, leader, descriptor, made, view, (rows, cols), origin[:-2]
    )
    epilogue.store(value, piece, at, view.elem)
    body = role.op.regions[0].blocks[0]
    end = list(body.operations)[-1]
    if not any(o.operation.name == "nvvm.cp.async.bulk.wait_group" for o in body.operations):
        with ir.InsertionPoint(end), op.location:
            b = IndexBuilder()
            lane = b.rem(gpu.ThreadIdOp(gpu.Dimension.x).result, WARPGROUP)
            drain(arith.CmpIOp(arith.CmpIPredicate.eq, b.value(lane), b.value(0)).result)


def chunk_base(op: ir.Operation, func: ir.Operation) -> ir.Value:
    for o in func.regions[0].blocks[0].operations:
        if EPILOGUE in o.operation.attributes:
            return o.operation.results[0]
    raise LoweringError(op, "a TMA-stored epilogue needs the chunks tile-ring sets aside")


def kernel_of(op: ir.Operation) -> ir.Operation:
    p = op.parent
    while p.name != "func.func":
        p = p.parent
    return p

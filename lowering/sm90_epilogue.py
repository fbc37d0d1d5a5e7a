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
from mlir.dialects import arith, llvm, scf

from tilec import smem
from tilec.dialects.tile.atoms import split, value_mode, wgmma_c
from tilec.lowering import IndexBuilder, Term
from tilec.lowering.sm90_ring import i32
from tilec.lowering.sm90_values import Element, Value, aligned
from tilec.lowering.sm90_wgmma import WgmmaAtom
from tilec.lowering.tile_access import if_else, when
from tilec.lowering.tile_fragments import constant, convert
from tilec.lowering.tile_mma import pair
from tilec.lowering.tile_mma_store import write_pair
from tilec.lowering.tile_views import View, all_of, elem_bytes, element_address, gep, in_bounds

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
CHUNK_BYTES = smem.EPILOGUE_CHUNK_BYTES  # CHUNK_ROWS of 128 bytes
BUFFERS = smem.EPILOGUE_BUFFERS  # chunk buffers per warp group


def op(name: str, operands: list[ir.Value], attrs: dict[str, str] | None = None) -> None:
    ir.Operation.create(
        name,
        operands=operands,
        attributes={k: ir.Attribute.parse(v) for k, v in (attrs or {}).items()},
    )


def named_barrier(group: ir.Value, b: IndexBuilder) -> None:
    """bar.sync 1 + group, 128: the warp group's own barrier (0 is the block's)."""
    barrier(b.add(group, 1), 128, b)


def barrier(ident: Term, count: int, b: IndexBuilder, arrive: bool = False) -> None:
    """bar.sync (or, `arrive`, bar.arrive) on named barrier `ident` for `count` threads.
    Called as the intrinsic: MLIR 22's `nvvm.barrier` prints a trailing `loc(...)` its parser
    rejects, so a `lowered` module holding one would not parse back (`tilec build`'s wide
    variant does)."""
    kind = "arrive" if arrive else "sync"
    op(
        "llvm.call_intrinsic",
        [i32(ident, b), constant(ir.IntegerType.get_signless(32), count)],
        {
            "intrin": f'"llvm.nvvm.barrier.cta.{kind}.aligned.count"',
            "fastmathFlags": "#llvm.fastmath<none>",
            "op_bundle_sizes": "array<i32>",
            "operandSegmentSizes": "array<i32: 2, 0>",
        },
    )


def on_leader(leader: ir.Value, body: Callable[[], None]) -> None:
    guard = scf.IfOp(leader)
    with ir.InsertionPoint(guard.then_block):
        body()
        scf.YieldOp([])


@dataclass
class Epilogue:
    """Where a warp group's chunk buffers are and who it is: `buffers` (shared, 1024-aligned,
    BUFFERS chunks per group), the group's index among the consumers, its thread 0."""

    atom: WgmmaAtom
    buffers: ir.Value
    group: ir.Value
    tid: ir.Value
    leader: ir.Value
    descriptor: ir.Value
    made: ir.Value  # i1: the runtime made the (optional) map; else copy chunks out by hand
    view: View  # the output tile, for the copy by hand
    offset: tuple[Term, Term]  # the group's first (row, column) in the tile
    outer: list[Term]  # the tile's coordinates along the tensor's outer modes (a batch)

    def store(
        self, value: Value, subtiles: tuple[int, int], origin: tuple[Term, Term],
        elem: ir.Type, loads: list[View] | None = None,
    ) -> None:  # fmt: skip
        """`value` at every element of the group's accumulators (`subtiles` = wgmma tiles
        along M, N) into the output tile whose first element is at `origin` (row, column) of
        the tensor. A value that `loads` gets two versions: unguarded loads where the whole
        tile lies inside the tensor, guarded ones elsewhere."""
        b = IndexBuilder()
        # 16-bit elements, n a multiple of 64: ConsumerOps.store_tile refuses anything else.
        row, unit_byte, pair_col = c_lanes(self.tid, b)
        last = [s - 1 for s in self.view.shape]
        whole = all_of([in_bounds(self.view, last, b), *(aligned(v, b) for v in loads or [])])
        lanes = (row, unit_byte, pair_col)

        self.chunks(value, subtiles, origin, elem, lanes, whole if loads else None)

    def chunks(
        self, value: Value, subtiles: tuple[int, int], origin: tuple[Term, Term], elem: ir.Type,
        lanes: tuple[Term, Term, Term], whole: ir.Value | bool | None,
    ) -> None:  # fmt: skip
        """Every chunk in turn; `whole`: where the loads may skip the bounds checks (None: the
        value loads nothing)."""
        b = IndexBuilder()
        cols = 128 // elem_bytes(elem)
        q = 0
        mt, nt = subtiles
        for mi in range(mt):
            for ni in range(nt):
                for c in range(self.atom.n // cols):
                    down, right = mi * CHUNK_ROWS, ni * self.atom.n + c * cols
                    at = (b.add(origin[0], down), b.add(origin[1], right))
                    here = (b.add(self.offset[0], down), b.add(self.offset[1], right))
                    first = c * cols // 8  # the chunk's first 8-column block in the tile
                    where_ = (at, here)
                    self.chunk(value, mi * nt + ni, first, cols // 8, lanes, q, where_, elem, whole)
                    q += 1

    def chunk(
        self, value: Value, acc: int, first: int, blocks: int, lanes: tuple[Term, Term, Term],
        q: int, where_: tuple[tuple[Term, Term], tuple[Term, Term]], elem: ir.Type,
        whole: ir.Value | bool | None = None,
    ) -> None:  # fmt: skip
        """Chunk q of accumulator `acc`: (`where_`) its first element's (row, column) in the
        tensor and in the tile; `lanes`: the thread's row in it, byte in a 16-byte unit and
        column in an 8-column block."""
        at, here = where_
        row, unit_byte, pair_col = lanes
        b = IndexBuilder()
        i8 = ir.IntegerType.get_signless(8)
        slot = b.add(b.mul(self.group, BUFFERS * CHUNK_BYTES), (q % BUFFERS) * CHUNK_BYTES)
        base = gep(self.buffers, slot, i8, b)
        on_leader(self.leader, lambda: op("nvvm.cp.async.bulk.wait_group", [],
                                          {"group": "1 : i32", "read": "unit"}))  # fmt: skip
        named_barrier(self.group, b)

        def write(guarded: bool) -> list:
            for h in range(HALF.extent):
                r = b.add(row, HALF.row * h)
                line = b.mul(r, 128)
                phase = b.rem(r, 8)
                for j in range(blocks):
                    reg = c_register(first + j, h)  # and the next: a pair along the row
                    col = b.add(b.add(here[1], BLOCK.col * j), pair_col)
                    at_pair = Element(acc, reg, b.add(here[0], r), col, guarded)
                    values = [convert(v, elem) for v in value(at_pair)]
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
        named_barrier(self.group, b)

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


def drain(leader: ir.Value) -> None:
    """At the end of the consumers' role: every store of the group has completed (its shared
    chunks must outlive the reads, the block's exit would free them)."""
    on_leader(leader, lambda: op("nvvm.cp.async.bulk.wait_group", [], {"group": "0 : i32"}))


def direct(
    view: View, value: Value, atom: WgmmaAtom, subtiles: tuple[int, int],
    offset: tuple[Term, Term], tid: ir.Value,
) -> None:  # fmt: skip
    """The accumulators stored from registers: pairs of adjacent columns (4-byte stores where
    the rows keep them aligned and the tile is whole, else element by element, guarded).
    `offset`: the group's first (row, column) in the tile."""
    b = IndexBuilder()
    t = b.rem(tid, 128)  # c_lanes' row and column, the offset added in the measured order
    lane = b.rem(t, 32)
    row0 = b.add(b.add(offset[0], b.mul(b.div(t, 32), 16)), b.div(lane, 4))
    col0 = b.add(offset[1], b.mul(b.rem(lane, 4), 2))
    last = [s - 1 for s in view.shape]
    # A pair of columns is one 4-byte store where the columns are contiguous (a permuted
    # view's are not: C^T's columns are C's rows) and every row keeps the pairs aligned.
    whole = in_bounds(view, last, b)
    pairs = aligned(view, b)  # False where the columns are not contiguous: no pairs at all
    paired = pairs is not False
    fast = all_of([whole, pairs]) if paired else whole
    mt, nt = subtiles

    def version(guarded: bool) -> list:
        vb = IndexBuilder()
        for mi in range(mt):
            for ni in range(nt):
                for j in range(atom.n // BLOCK.col):
                    for h in range(HALF.extent):
                        at = [
                            vb.add(row0, mi * 64 + HALF.row * h),
                            vb.add(col0, ni * atom.n + BLOCK.col * j),
                        ]
                        here = Element(mi * nt + ni, c_register(j, h), at[0], at[1])
                        vals = [convert(v, view.elem) for v in value(here)]
                        write_pair(view, at, vals, paired, guarded, vb)
        return []

    if_else(fast, [], lambda: version(False), lambda: version(True))

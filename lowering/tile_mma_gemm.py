r"""Passes (lowered stage): the SM80 gemm's schedule: ldmatrix.x4 and mma.sync per k-step
(convert-tile-mma), from the atom's layouts and partitions in `tile_mma`.

`Feed` says where each lane's ldmatrix rows sit in a gemm's A and B tiles and issues the
mma.sync that consume them; `gemm` runs a whole K between barriers, `gemm_prefetch` the form
that loads each k-step's fragments one k-step early inside a pipelined loop (its first k-step
loaded before the loop by `preload`).
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import gpu, llvm, nvvm

from tilec.dialects.tile.atoms import split
from tilec.lowering import IndexBuilder, LoweringError
from tilec.lowering.tile_anchors import Anchors
from tilec.lowering.tile_fragments import Frag
from tilec.lowering.tile_mma import (
    AK,
    AM,
    AN,
    ATOM,
    Lanes,
    MmaPartition,
    check_operand,
    lane_coords,
    lane_place,
)
from tilec.lowering.tile_views import View


def ldmatrix_x4(ptr: ir.Value, trans: bool = False) -> list[ir.Value]:
    """The four registers (i32: two b16 each) of one ldmatrix.x4; `ptr` is this lane's row."""
    i32 = ir.IntegerType.get_signless(32)
    regs = nvvm.LdMatrixOp(
        ir.Type.parse("!llvm.struct<(i32, i32, i32, i32)>"),
        ptr,
        4,
        ir.Attribute.parse(f"#nvvm.mma_layout<{'col' if trans else 'row'}>"),
        ir.Attribute.parse("#nvvm.ld_st_matrix_shape<m = 8, n = 8>"),
        ir.Attribute.parse("#nvvm.ld_st_matrix_elt_type<b16>"),
    ).result
    return [llvm.ExtractValueOp(i32, regs, [q]).result for q in range(4)]


def mma_sync(
    a: list[ir.Value], b: list[ir.Value], acc: list[ir.Value], elem: str
) -> list[ir.Value]:
    """acc + a·b for one m16n8k16 atom: a (4 registers), b (2), acc (4 f32), as nvvm.mma.sync.

    f16 operands go in as vector<2xf16>, bf16 ones as the i32 registers ldmatrix gave.
    """
    if elem == "f16":
        half2 = ir.VectorType.get([2], ir.F16Type.get())
        a = [llvm.BitcastOp(half2, r).result for r in a]
        b = [llvm.BitcastOp(half2, r).result for r in b]
    f32 = ir.F32Type.get()
    d = nvvm.MmaOp(
        ir.Type.parse("!llvm.struct<(f32, f32, f32, f32)>"),
        ir.Attribute.parse(f"#nvvm.shape<m = {AM}, n = {AN}, k = {AK}>"),
        ir.Attribute.parse("#nvvm.mma_layout<row>"),
        ir.Attribute.parse("#nvvm.mma_layout<col>"),
        a,
        b,
        acc,
        multiplicandAPtxType=ir.Attribute.parse(f"#nvvm.mma_type<{elem}>"),
        multiplicandBPtxType=ir.Attribute.parse(f"#nvvm.mma_type<{elem}>"),
    ).result
    return [llvm.ExtractValueOp(f32, d, [i]).result for i in range(4)]


class Feed:
    """Where this thread's ldmatrix rows sit in a gemm's A and B tiles, and the mma.sync that
    consume what it loads. One k-step's registers are a flat list: four per A ldmatrix (an
    m-atom's fragment), then four per B ldmatrix (n-atoms 2p and 2p+1).

    ldmatrix.x4 lanes 8q..8q+7 address the rows of 8×8 matrix q. A K-major tile stores rows
    along K, so lane l points at (row, k) = (l%8 + 8((l/8)%2), 8(l/16)) of A and
    (l%8 + 8(l/16), 8((l/8)%2)) of B; an MN-major tile stores them along M (N), and .trans
    hands each lane the same registers when it points at (8((l/8)%2), 8(l/16) + l%8) of A and
    (8(l/16), 8((l/8)%2) + l%8) of B.
    """

    def __init__(
        self, part: MmaPartition, majors: tuple[bool, bool], tid: ir.Value, b: IndexBuilder
    ) -> None:
        self.part, self.majors, self.b = part, majors, b
        at = Lanes.of(tid, part, b)
        # (row, k) of this lane's ldmatrix row in an operand's 16×16 block (A) or 16×16 pair of
        # n-atoms (B), for K-major and MN-major tiles: ldmatrix's layouts, over one (8,2,2)
        # decomposition of the lane (l % 8, (l / 8) % 2, l / 16).
        layouts = [*ATOM.ldsm_a, *ATOM.ldsm_b]
        if len({x.shape for x in layouts}) != 1:
            raise AssertionError("the ldmatrix layouts decompose the lane alike")
        coords = lane_coords(split(layouts[0], AM), at.lane, b)
        ka, mna, kb, mnb = (lane_place(split(x, AM), coords, b) for x in layouts)
        self.lane_a, self.lane_b = (ka, mna), (kb, mnb)
        self.m0, self.n0 = b.mul(at.wm, part.piece[0]), b.mul(at.wn, part.piece[1])
        # per operand tile (its view kept alive beside its id): the lane's anchored rows
        self.addressed: dict[tuple[int, int], tuple[View, Anchors]] = {}

    def load(self, a: View, bv: View, ks: int) -> list[ir.Value]:
        """The registers of k-step `ks` (a multiple of 16) of the tiles a (M×K), bv (N×K)."""
        return self.load_a(a, ks) + [
            r for p in range(self.part.tiles[1] // 2) for r in self.load_b(bv, ks, p)
        ]

    def load_a(self, a: View, ks: int) -> list[ir.Value]:
        """Four registers per m-atom: the A fragments of k-step `ks`."""
        rows = [mi * AM for mi in range(self.part.tiles[0])]
        return self.rows(a, 0, rows, ks)

    def load_b(self, bv: View, ks: int, p: int) -> list[ir.Value]:
        """Four registers: the B fragments of n-atoms 2p and 2p+1 for k-step `ks`."""
        return self.rows(bv, 1, [p * 2 * AN], ks)

    def mma_rolling(
        self, frags: list[ir.Value], values: list[list[ir.Value]], a: View, bv: View, ks: int
    ) -> list[ir.Value]:
        """`mma` over a whole k-step that loads k-step `ks` of a and bv as the registers free
        up: an m-atom's A fragment after its row, a B pair after the last row used it. Both
        k-steps' fragments are live only in part (~20 registers fewer than loading the next
        k-step first); returns the next k-step's registers, as `load`."""
        tm, tn = self.part.tiles
        next_a: list[list[ir.Value]] = [[] for _ in range(tm)]
        next_b: list[list[ir.Value]] = [[] for _ in range(tn // 2)]

        def after(mi: int, ni: int) -> None:
            forward = mi % 2 == 0  # the serpentine: even rows run n up, odd rows down
            p, half = divmod(ni, 2)
            if mi == tm - 1 and half == (1 if forward else 0):
                next_b[p] = self.load_b(bv, ks, p)
            if ni == (tn - 1 if forward else 0):
                next_a[mi] = self.rows(a, 0, [mi * AM], ks)

        self.mma(frags, values, after=after)
        return [r for regs in next_a + next_b for r in regs]

    def rows(self, view: View, operand: int, rows: list[int], ks: int) -> list[ir.Value]:
        """ldmatrix.x4 of the rows `rows` (steps along M or N) at k-step `ks` of operand 0 (A)
        or 1 (B): each address an anchor plus an immediate (`tile_anchors`)."""
        k_major = self.majors[operand]
        out = []
        for row in rows:
            ptr = self.anchors(view, operand).address([row, ks])
            out += ldmatrix_x4(ptr, trans=not k_major)
        return out

    def anchors(self, view: View, operand: int) -> Anchors:
        """The lane's rows of an operand tile, made on its first load. The lane's (row, k) is
        under 16 in both modes; the warp's first row (m0, n0) is 0 on every thread where one
        warp spans the mode (`fragment` checks the threads are the warps)."""
        key = (id(view), operand)
        if key not in self.addressed:
            lanes = (self.lane_a, self.lane_b)[operand]
            r, k = lanes[0] if self.majors[operand] else lanes[1]
            row0 = (self.m0, self.n0)[operand]
            zero = self.part.warps[operand] == 1 or (isinstance(row0, int) and row0 % AK == 0)
            first = [self.b.add(row0, r), k]
            self.addressed[key] = (view, Anchors(view, first, [zero, True], AK, self.b))
        return self.addressed[key][1]

    def mma(
        self,
        frags: list[ir.Value],
        values: list[list[ir.Value]],
        pairs: list[int] | None = None,
        after: Callable[[int, int], None] | None = None,
    ) -> None:
        """values[mi + TM*ni] += the atom products of one k-step's registers: the A fragments,
        then the B registers of the ldmatrix `pairs` (all of them when None), four each.

        A whole k-step goes m-atom by m-atom, its n-atoms back and forth (CUTLASS's serpentine):
        consecutive mma.sync share A (4 registers) and, at the turns, B, which the register
        file's operand reuse caches instead of reading them again. Given pairs, each B load
        feeds its two n-atoms of every m-atom. `after(mi, ni)` runs after each mma.sync.
        """
        (tm, tn), elem = self.part.tiles, self.part.elem
        afr, bregs = frags[: 4 * tm], frags[4 * tm :]
        if pairs is None:
            pairs = list(range(tn // 2))
            order = [
                (mi, ni)
                for mi in range(tm)
                for ni in (range(tn) if mi % 2 == 0 else reversed(range(tn)))
            ]
        else:
            order = [(mi, 2 * p + h) for p in pairs for h in (0, 1) for mi in range(tm)]
        for mi, ni in order:
            p, half = divmod(ni, 2)
            at = 4 * pairs.index(p) + 2 * half
            i = mi + tm * ni
            values[i] = mma_sync(afr[4 * mi : 4 * mi + 4], bregs[at : at + 2], values[i], elem)
            if after is not None:
                after(mi, ni)


def check_gemm(
    op: ir.Operation, a: View, bv: View, acc: Frag
) -> tuple[MmaPartition, int, tuple[bool, bool]]:
    """The accumulator's partition, K, and whether A and B are K-major, once checked."""
    part = acc.part
    if not isinstance(part, MmaPartition):
        raise LoweringError(op, "gemm accumulates into a fragment of its tiled MMA")
    if a.static_shape(op)[1:] != bv.static_shape(op)[1:]:
        raise LoweringError(op, "gemm operands a and b differ in K")
    majors = (
        check_operand(op, a, part.block[0], "a", part.elem),
        check_operand(op, bv, part.block[1], "b", part.elem),
    )
    return part, a.static_shape(op)[1], majors


def gemm(
    op: ir.Operation, a: View, bv: View, acc: Frag, tid: ir.Value, barriers: bool = True
) -> None:
    """acc += a @ bᵀ, between two barriers (the copies before, the next copies after) unless
    a pipelined loop's wait + barrier orders the shared tiles already."""
    part, k, majors = check_gemm(op, a, bv, acc)
    gemm_steps(acc, majors, tid, k, lambda feed, ks: feed.load_a(a, ks), bv, barriers)


def gemm_steps(
    acc: Frag,
    majors: tuple[bool, bool],
    tid: ir.Value,
    k: int,
    a_frags: Callable[[Feed, int], list[ir.Value]],
    bv: View,
    barriers: bool,
) -> None:
    """acc += A @ bᵀ over K = k, the A fragments of each k-step from `a_frags(feed, ks)`
    (ldmatrix from shared memory, or registers: `tile_mma_regs`), B by ldmatrix."""
    if barriers:
        gpu.BarrierOp()
    part = acc.part
    feed = Feed(part, majors, tid, IndexBuilder())
    values = [list(row) for row in acc.values]
    for ks in range(0, k, AK):
        # B one ldmatrix at a time: 4 B registers live instead of 2 TN (fewer registers than
        # the prefetching form, which keeps a whole k-step of both operands ahead).
        afr = a_frags(feed, ks)
        for p in range(part.tiles[1] // 2):
            feed.mma(afr + feed.load_b(bv, ks, p), values, [p])
    acc.values = values
    if barriers:
        gpu.BarrierOp()


def preload(op: ir.Operation, a: View, bv: View, acc: Frag, tid: ir.Value) -> Frag:
    """The first k-step's fragments of a prefetching gemm (see `gemm_prefetch`)."""
    part, _, majors = check_gemm(op, a, bv, acc)
    frags = Feed(part, majors, tid, IndexBuilder()).load(a, bv, 0)
    return Frag(part, acc.elem, [frags])


def gemm_prefetch(
    op: ir.Operation,
    tiles: tuple[View, View],
    following: tuple[View, View],
    acc: Frag,
    ahead: Frag,
    tid: ir.Value,
    pending: int,
) -> None:
    """acc += a @ bᵀ in a pipelined loop, loading each k-step's fragments one k-step early.

    `ahead` holds k-step 0 of `tiles` (loaded by the previous iteration, or `preload` before
    the loop); each k-step loads the next one before its mma.sync. Before the last k-step the
    loop waits for the next stage's copies (all but `pending` groups) and for every warp
    (barrier), then loads k-step 0 of `following`, so the mma.sync of the last k-step overlap
    the barrier's wake-up and the next stage's first loads:

        k-steps:   load 1 | mma 0 | load 2 | mma 1 | wait, barrier, load next 0 | mma 2
    """
    part, k, majors = check_gemm(op, *tiles, acc)
    check_gemm(op, *following, acc)
    feed = Feed(part, majors, tid, IndexBuilder())
    values = [list(row) for row in acc.values]
    current = ahead.values[0]
    for ks in range(0, k, AK):
        if ks + AK < k:
            current = feed.mma_rolling(current, values, *tiles, ks + AK)
        else:
            nvvm.CpAsyncWaitGroupOp(pending)
            gpu.BarrierOp()
            current = feed.mma_rolling(current, values, *following, 0)
    acc.values = values
    ahead.values = [current]

r"""Passes (lowered stage): mma.sync m16n8k16 fragments, ldmatrix and gemm (convert-tile-mma).

A tiled MMA of atoms (WM, WN, 1) gives each warp one contiguous (BM/WM)×(BN/WN) piece of the
block tile; warp w = tid / 32 sits at (w mod WM, w div WM) (column-major, as CuTe's atom
layout). Inside its piece the warp repeats the 16×8 atom TM×TN times. Which lane holds which
element of A, B and C, and which row each lane hands `ldmatrix.x4`, are the atom's TV layouts
(`dialects/tile/atoms.py`, the PTX ISA's "mma.m16n8k16" figures as CuTe layouts); the
lowering reads its lane arithmetic off them (`split`, `lane_coords`, `lane_place`), e.g. for
C, ((4,8),(2,2)):((32,1),(16,8)) into the column-major 16×8 block:

    thread modes  4:32 -> 2 columns a step (2t),  8:1 -> 1 row a step (g)
    value modes   2:16 -> 1 column (a pair),      2:8 -> 8 rows (pair h at g + 8h)

`ldmatrix.x4` loads four 8×8 b16 matrices; lanes 8q..8q+7 give the row addresses of matrix q
and lane l receives row l/4, columns 2(l mod 4)+{0,1} of matrix q in register q. With K-major
shared tiles (sA[m][k], sB[n][k]) that is exactly an A fragment when lane l points at row
l mod 8 + 8((l/8) mod 2), column 8(l/16) of a 16×16 block, and two B fragments (n-atoms
2p and 2p+1) when it points at row l mod 8 + 8(l/16), column 8((l/8) mod 2); no `.trans`.

The accumulator of `partition_c` is (4, TM, TN):(1, 4, 4TM) per thread, held as a `Frag`
whose chunk i = mi + TM*ni holds c0..c3 of atom (mi, ni).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import gpu, llvm, nvvm

from tilec.dialects.layout import algebra as A
from tilec.dialects.tile.atoms import (
    Mode,
    SM80_16x8x16,
    place,
    split,
    thread_mode,
    tiled_c,
    value_mode,
)
from tilec.dialects.tile.types import MmaType
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.passes.tile_fragments import (
    Frag,
    constant,
)
from tilec.passes.tile_views import View, rows_from, tensor_type

# The lowered mma.sync atoms and the element type of their A and B operands.
ATOMS = {"sm80.mma_16x8x16.f32.f16.f16.f32": "f16", "sm80.mma_16x8x16.f32.bf16.bf16.f32": "bf16"}
WARP = 32


# The atom's TV layouts (dialects/tile/atoms.py); the index maps below and the lowering's
# address and accumulator arithmetic are read off them (the unit test runs the maps through
# numpy's matrix product and checks the layouts against the PTX ISA's figures).
ATOM = SM80_16x8x16
AM, AN, AK = ATOM.shape
# The value mode of C: a pair (c(2h), c(2h+1)) runs along N, pair h sits PAIR_ROWS * h down.
C_PAIR, C_HALF = split(value_mode(ATOM.c), AM)
PAIR_ROWS = C_HALF.row


def a_elem(lane: int, r: int) -> tuple[int, int]:
    """(m, k) in the 16×16 A block of register half r (0..7) of `lane`."""
    return ATOM.a_elem(lane, r)


def b_elem(lane: int, r: int) -> tuple[int, int]:
    """(k, n) in the 16×8 B block of register half r (0..3) of `lane`."""
    return ATOM.b_elem(lane, r)


def c_elem(lane: int, r: int) -> tuple[int, int]:
    """(m, n) in the 16×8 C block of accumulator r (0..3) of `lane`."""
    return ATOM.c_elem(lane, r)


def a_row(lane: int) -> tuple[int, int]:
    """(m, k) of the 8-element row whose address `lane` gives to ldmatrix.x4 for A."""
    return place(ATOM.ldsm_a[0], AM, lane)


def b_row(lane: int) -> tuple[int, int]:
    """(n, k) of the row `lane` gives to ldmatrix.x4 for the B blocks of n-atoms 2p, 2p+1."""
    return place(ATOM.ldsm_b[0], 2 * AN, lane)


def lane_coords(modes: list[Mode], lane: Term, b: IndexBuilder) -> list[Term]:
    """The coordinates of `lane` along the modes of a layout of the warp (column-major; the
    last mode takes the rest, no remainder)."""
    coords, below = [], 1
    for k, m in enumerate(modes):
        step = b.div(lane, below)
        coords.append(step if k == len(modes) - 1 else b.rem(step, m.extent))
        below *= m.extent
    return coords


def lane_place(modes: list[Mode], coords: list[Term], b: IndexBuilder) -> tuple[Term, Term]:
    """(row, column) of a lane in the block: its coordinates times each mode's steps."""
    row: Term = 0
    col: Term = 0
    for m, c in zip(modes, coords, strict=True):
        row = b.add(row, b.mul(c, m.row)) if m.row else row
        col = b.add(col, b.mul(c, m.col)) if m.col else col
    return row, col


@dataclass(frozen=True)
class MmaPartition:
    """The C partition of a tiled mma.sync: a `Frag` with this part is an accumulator."""

    block: tuple[int, int]  # (BM, BN)
    warps: tuple[int, int]  # (WM, WN)
    # of A and B: not part of the C layout, so not of equality (two accumulators of f16 and
    # bf16 MMAs on one block and warps are spread alike)
    elem: str = field(default="f16", compare=False)

    @property
    def piece(self) -> tuple[int, int]:
        return self.block[0] // self.warps[0], self.block[1] // self.warps[1]

    @property
    def tiles(self) -> tuple[int, int]:
        return self.piece[0] // AM, self.piece[1] // AN

    @property
    def iters(self) -> int:  # chunks per thread, as elementwise ops count them
        return self.tiles[0] * self.tiles[1]

    vec = 4  # values per chunk: c0..c3

    @property
    def tv(self) -> A.Layout:
        """The C TV layout over the block (`atoms.tiled_c`): thread × value → m + BM·n; what a
        thread holds is its value mode, in the accumulator's register order."""
        return tiled_c(ATOM, self.warps, self.block)

    def group_key(self, mode: int, i: int, j: int) -> tuple[int, int]:
        """The group of value j of chunk i when `mode` is reduced: a row (mi, h) of the
        thread's pairs for mode 1 (c(2h), c(2h+1) lie in row g + 8h of m-atom mi), a column
        (ni, e) for mode 0."""
        tm = self.tiles[0]
        return (i % tm, j // 2) if mode == 1 else (i // tm, j % 2)

    def under(self, mode: int, part: object) -> bool:
        """Whether a reduction of this along `mode` broadcasts over a tensor spread as `part`:
        this spread, or another MMA's C over the same warps whose kept mode is laid out alike
        (the rows of S, BM x BN, over O, BM x D; `group_key` of a row depends on them alone)."""
        if self == part:
            return True
        kept = 1 - mode
        return (
            isinstance(part, MmaPartition)
            and self.warps == part.warps
            and self.block[kept] == part.block[kept]
            and (mode == 1 or self.block[0] == part.block[0])
        )

    def describe(self) -> str:
        return f"the C fragment of an MMA on a {self.block[0]}x{self.block[1]} block"


def mma_partition(op: ir.Operation, mma: ir.Type, block: tuple[int, ...]) -> MmaPartition:
    t = MmaType.of(mma)
    if t is None:
        raise LoweringError(op, f"expected a !tile.mma type, got {mma}")
    if t.atom not in ATOMS:
        raise LoweringError(
            op, f"mma atom '{t.atom}' is not lowered yet (lowered: {', '.join(ATOMS)})"
        )
    tiling = [int(x) for x in t.tiling.strip("()").split(",")]
    if len(tiling) != 3 or tiling[2] != 1:
        raise LoweringError(op, f"atoms {t.tiling}: expected (WM, WN, 1)")
    if len(block) != 2:
        raise LoweringError(op, f"block_shape {list(block)} must have two modes")
    part = MmaPartition((block[0], block[1]), (tiling[0], tiling[1]), ATOMS[t.atom])
    pm, pn = part.piece
    if pm * tiling[0] != block[0] or pn * tiling[1] != block[1] or pm % AM or pn % (2 * AN):
        raise LoweringError(
            op, f"block {list(block)} over warps {tiling[:2]} is not whole 16x16 pieces"
        )
    return part


def fragment(op: ir.Operation, mma: ir.Type, threads: int) -> Frag:
    block = tuple(ir.DenseI64ArrayAttr(op.attributes["block_shape"]))
    part = mma_partition(op, mma, block)
    t = tensor_type(op.results[0].type)
    if A.size(t.layout) != A.size(value_mode(part.tv)):
        raise LoweringError(op, f"fragment layout {t.layout} is not this MMA's C partition")
    if part.warps[0] * part.warps[1] * WARP != threads:
        raise LoweringError(op, f"{part.warps} warps need {WARP * part.warps[0] * part.warps[1]}")
    # Undefined until a `fill`; llvm.undef keeps the values out of local memory.
    undef = llvm.UndefOp(t.elem).result
    return Frag(part, t.elem, [[undef] * part.vec for _ in range(part.iters)])  # type: ignore[arg-type]


def fill(frag: Frag, value: float) -> None:
    c = constant(frag.elem, value)
    frag.values = [[c] * len(row) for row in frag.values]


@dataclass
class Lanes:
    """The warp coordinates of this thread, as index terms."""

    lane: Term
    wm: Term
    wn: Term

    @staticmethod
    def of(tid: ir.Value, part: MmaPartition, b: IndexBuilder) -> Lanes:
        warp = b.div(tid, WARP)
        return Lanes(b.rem(tid, WARP), b.rem(warp, part.warps[0]), b.div(warp, part.warps[0]))


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


def pair(x: ir.Value, y: ir.Value) -> ir.Value:
    i32 = ir.IntegerType.get_signless(32)
    v = llvm.UndefOp(ir.VectorType.get([2], x.type)).result
    v = llvm.InsertElementOp(v, x, constant(i32, 0)).result
    return llvm.InsertElementOp(v, y, constant(i32, 1)).result


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


def check_operand(op: ir.Operation, view: View, rows: int, name: str, elem: str) -> bool:
    """A shared (rows, 16k) tile of the atom's element type, in whole 16-byte ldmatrix rows
    along K ("K-major": read as is) or along M or N ("MN-major": read with ldmatrix.trans)."""
    shape = view.static_shape(op)
    if view.space != "shared" or len(shape) != 2 or shape[0] != rows or shape[1] % AK:
        raise LoweringError(op, f"gemm operand {name}: expected a shared ({rows}, 16k) tile")
    if str(view.elem) != elem:
        raise LoweringError(op, f"gemm operand {name}: the atom takes {elem}, got {view.elem}")
    k_major = view.stride[1] == 1
    other = view.stride[0] if k_major else view.stride[1]
    if (not k_major and view.stride[0] != 1) or not isinstance(other, int) or other % 8:
        raise LoweringError(
            op, f"gemm operand {name}: expected 8-element rows along K or along {name}'s rows"
        )
    if view.swizzle is not None and view.swizzle.base < 3:
        raise LoweringError(op, f"gemm operand {name}: the swizzle splits 16-byte rows")
    if not isinstance(view.offset, int) or view.offset % 8:
        raise LoweringError(op, f"gemm operand {name}: the tile must start on 16 bytes")
    return k_major


class PairCoords:
    """Where this thread's accumulator pairs sit in the block tile: chunk i = mi + TM*ni holds
    c(2h), c(2h+1) of atom (mi, ni) at row g + 8h, columns 2t, 2t+1 (h = 0, 1). The store of
    an accumulator and a load `like` it walk the same pairs."""

    def __init__(self, part: MmaPartition, tid: ir.Value, b: IndexBuilder) -> None:
        at = Lanes.of(tid, part, b)
        self.part, self.b = part, b
        modes = split(thread_mode(ATOM.c), AM)  # g = lane / 4 down, 2t = 2(lane % 4) along
        g, t2 = lane_place(modes, lane_coords(modes, at.lane, b), b)
        self.m0: Term = b.add(b.mul(at.wm, part.piece[0]), g)
        self.n0: Term = b.add(b.mul(at.wn, part.piece[1]), t2)

    def __call__(self, i: int, h: int) -> list[Term]:
        """(row, column) of the first element of pair h of chunk i."""
        b, tm = self.b, self.part.tiles[0]
        mi, ni = i % tm, i // tm
        return [b.add(self.m0, mi * AM + PAIR_ROWS * h), b.add(self.n0, ni * AN)]


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

    def load(self, a: View, bv: View, ks: int) -> list[ir.Value]:
        """The registers of k-step `ks` (a multiple of 16) of the tiles a (M×K), bv (N×K)."""
        return self.load_a(a, ks) + [
            r for p in range(self.part.tiles[1] // 2) for r in self.load_b(bv, ks, p)
        ]

    def load_a(self, a: View, ks: int) -> list[ir.Value]:
        """Four registers per m-atom: the A fragments of k-step `ks`."""
        rows = [mi * AM for mi in range(self.part.tiles[0])]
        return self.rows(a, self.m0, self.lane_a, self.majors[0], rows, ks)

    def load_b(self, bv: View, ks: int, p: int) -> list[ir.Value]:
        """Four registers: the B fragments of n-atoms 2p and 2p+1 for k-step `ks`."""
        return self.rows(bv, self.n0, self.lane_b, self.majors[1], [p * 2 * AN], ks)

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
                next_a[mi] = self.rows(a, self.m0, self.lane_a, self.majors[0], [mi * AM], ks)

        self.mma(frags, values, after=after)
        return [r for regs in next_a + next_b for r in regs]

    def rows(
        self, view: View, row0: Term, lanes: tuple, k_major: bool, rows: list[int], ks: int
    ) -> list[ir.Value]:
        b = self.b
        r, k = lanes[0] if k_major else lanes[1]
        out = []
        for ptr in rows_from(view, [b.add(row0, r), b.add(k, ks)], rows, b):
            out += ldmatrix_x4(ptr, trans=not k_major)
        return out

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

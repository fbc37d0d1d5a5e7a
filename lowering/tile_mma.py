r"""Passes (lowered stage): the mma.sync m16n8k16 atom, its partitions and its fragments.

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

import re
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import llvm

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
from tilec.lowering.tile_fragments import (
    Frag,
    constant,
)
from tilec.lowering.tile_modes import leaves, runs
from tilec.lowering.tile_roles import ROLE, role_of
from tilec.lowering.tile_views import View, tensor_type

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
    # warps that interleave along M (`atoms.tiled_c`): 4 for a wgmma warp group holding more
    # than one 64-row tile, else 1
    group: int = 1

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
        return tiled_c(ATOM, self.warps, self.block, self.group)

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


# wgmma reads its operands from the stages of an mbarrier ring that a producer fills by TMA:
# it is lowered only in a warp_specialize consumer (convert-tile-mma's sm90 family).
WGMMA_OUTSIDE = (
    "wgmma atom '{atom}' outside warp_specialize: wgmma is lowered only inside a "
    "warp_specialize block, with the gemm in a consumer(...) role fed by a producer's "
    "copy<tma> (examples/gemm_sm90.tile); outside one, use an sm80.mma_16x8x16 atom"
)
WGMMA_SHAPE = re.compile(r"sm90\.wgmma_64x(\d+)x16\.f32\.(\w+)\.\2")


def mma_partition(op: ir.Operation, mma: ir.Type, block: tuple[int, ...]) -> MmaPartition:
    t = MmaType.of(mma)
    if t is None:
        raise LoweringError(op, f"expected a !tile.mma type, got {mma}")
    tiling = [int(x) for x in t.tiling.strip("()").split(",")]
    if len(tiling) != 3 or tiling[2] != 1:
        raise LoweringError(op, f"atoms {t.tiling}: expected (WM, WN, 1)")
    if len(block) != 2:
        raise LoweringError(op, f"block_shape {list(block)} must have two modes")
    if t.atom.startswith("sm90.wgmma"):
        return wgmma_partition(op, t.atom, (tiling[0], tiling[1]), (block[0], block[1]))
    if t.atom not in ATOMS:
        raise LoweringError(
            op, f"mma atom '{t.atom}' is not lowered yet (lowered: {', '.join(ATOMS)})"
        )
    part = MmaPartition((block[0], block[1]), (tiling[0], tiling[1]), ATOMS[t.atom])
    pm, pn = part.piece
    if pm * tiling[0] != block[0] or pn * tiling[1] != block[1] or pm % AM or pn % (2 * AN):
        raise LoweringError(
            op, f"block {list(block)} over warps {tiling[:2]} is not whole 16x16 pieces"
        )
    return part


def wgmma_partition(
    op: ir.Operation, atom: str, groups: tuple[int, int], block: tuple[int, int]
) -> MmaPartition:
    """The C of a wgmma tiled over (GM, GN) warp groups on a block: each group a contiguous
    (BM/GM)×(BN/GN) piece of 64×n tiles, its four warps 16 rows apart in each (`wgmma_c`).
    As warps, that is the mma.sync C over (4·GM, GN) warps, interleaved in groups of four where
    a group holds more than one 64-row tile. Only a consumer role lowers wgmma."""
    if not is_consumer(op):
        raise LoweringError(op, WGMMA_OUTSIDE.format(atom=atom))
    found = WGMMA_SHAPE.fullmatch(atom)
    if found is None or found.group(2) not in ("f16", "bf16"):
        raise LoweringError(op, f"wgmma atom '{atom}' is not lowered (f32 += f16/bf16 products)")
    n = int(found.group(1))
    (gm, gn), (bm, bn) = groups, block
    if bm % (64 * gm) or bn % (n * gn) or n % 8:
        raise LoweringError(
            op, f"a {bm}x{bn} block does not tile by {gm}x{gn} warp groups of 64x{n}"
        )
    group = 4 if bm // gm > 64 else 1
    return MmaPartition(block, (4 * gm, gn), found.group(2), group)


def is_consumer(op: ir.Operation) -> bool:
    role = role_of(op)
    return role is not None and ir.StringAttr(role.attributes[ROLE]).value == "consumer"


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


def pair(x: ir.Value, y: ir.Value) -> ir.Value:
    i32 = ir.IntegerType.get_signless(32)
    v = llvm.UndefOp(ir.VectorType.get([2], x.type)).result
    v = llvm.InsertElementOp(v, x, constant(i32, 0)).result
    return llvm.InsertElementOp(v, y, constant(i32, 1)).result


def check_operand(op: ir.Operation, view: View, rows: int, name: str, elem: str) -> bool:
    """A shared (rows, 16k) tile of the atom's element type, in whole 16-byte ldmatrix rows
    along K ("K-major": read as is) or along M or N ("MN-major": read with ldmatrix.trans)."""
    shape = view.static_shape(op)
    if view.space != "shared" or len(shape) != 2 or shape[0] != rows or shape[1] % AK:
        raise LoweringError(op, f"gemm operand {name}: expected a shared ({rows}, 16k) tile")
    if str(view.elem) != elem:
        raise LoweringError(op, f"gemm operand {name}: the atom takes {elem}, got {view.elem}")
    # 8-element rows: runs of 8 along K (or M/N) are contiguous, and every step of the other
    # mode (each leaf of a nested one) keeps rows 16-byte aligned.
    k_major = runs(view.stride[1], 8)
    along, across = view.stride[::-1] if k_major else view.stride
    steps = [*leaves(across), *leaves(along)[1:]]
    if not runs(along, 8) or not all(isinstance(d, int) and d % 8 == 0 for d in steps):
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
        group = part.group  # warps of a group interleave: 16 rows apart, atoms 16·group apart
        first = at.wm if group == 1 else b.div(at.wm, group)
        m0 = b.mul(first, part.piece[0] * group)
        if group > 1:
            m0 = b.add(m0, b.mul(b.rem(at.wm, group), AM))
        self.m0: Term = b.add(m0, g)
        self.n0: Term = b.add(b.mul(at.wn, part.piece[1]), t2)

    def __call__(self, i: int, h: int) -> list[Term]:
        """(row, column) of the first element of pair h of chunk i."""
        b, tm = self.b, self.part.tiles[0]
        mi, ni = i % tm, i // tm
        down = mi * AM * self.part.group + PAIR_ROWS * h
        return [b.add(self.m0, down), b.add(self.n0, ni * AN)]

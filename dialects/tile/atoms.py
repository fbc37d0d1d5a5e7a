"""The MMA atoms' thread–value layouts, in the layout algebra's terms (CuTe's TV layouts).

A TV layout maps (thread, value) — the lane of the warp and the index of a value in its
registers — to the value's place in the atom's block, as the block's column-major index:
`m + M·k` for an M×K operand. For SM80's `mma.sync.m16n8k16` (the PTX ISA's figures for
.f16/.bf16 A and B and an .f32 C; g = lane / 4, t = lane mod 4):

    A (16×16)   ((4,8),(2,2,2)):((32,1),(16,8,128))   a(2i+e) at (g + 8(i&1), 2t + e + 8(i>>1))
    B (8×16)    ((4,8),(2,2)):((16,1),(8,64))         b(2i+e) at (n = g, k = 2t + e + 8i)
    C (16×8)    ((4,8),(2,2)):((32,1),(16,8))         c(2i+e) at (g + 8i, 2t + e)

`ldmatrix.x4` has a layout of its own: lane l gives the address of one 8-element row of the
16×16 block it loads (four 8×8 matrices), the lane → (row, column) map of that row's first
element. K-major tiles (rows along K) are read as they are; MN-major tiles with `.trans`,
whose lanes point at the transposed rows:

    A, K-major   (8,2,2):(1,8,128)     (l%8 + 8((l/8)%2), 8(l/16))
    B, K-major   (8,2,2):(1,128,8)     (l%8 + 8(l/16), 8((l/8)%2))     B as (N, K)
    A, MN-major  (8,2,2):(16,8,128)    (8((l/8)%2), 8(l/16) + l%8)
    B, MN-major  (8,2,2):(16,128,8)    (8(l/16), 8((l/8)%2) + l%8)

The lowering (lowering/tile_mma.py) reads its address and accumulator arithmetic off these
layouts (`split`: each mode moves along one side of the block); test/unit/test_tile_mma.py
checks them against the PTX ISA's maps and runs the lowering's index maps through numpy.
Pure Python: no MLIR.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects.layout.algebra import Layout, flatten, size


@dataclass(frozen=True)
class Mode:
    """One flattened mode of a layout into an R×C block: its extent and how far a step along
    it moves down the rows and along the columns."""

    extent: int
    row: int
    col: int


def split(layout: Layout, rows: int) -> list[Mode]:
    """The flattened modes of `layout` as (extent, row step, column step) in an R×C block
    indexed column-major (`row + rows·col`). Each stride must move along one side only: a
    multiple of `rows`, or below it (a TV layout of an MMA atom is such)."""
    modes = []
    for s, d in zip(flatten(layout.shape), flatten(layout.stride), strict=True):
        if d % rows and d >= rows:
            raise ValueError(f"stride {d} of {layout} moves along both sides of {rows} rows")
        modes.append(Mode(s, 0 if d >= rows else d, d // rows))
    return modes


def shuffle_masks(modes: list[Mode], along: str) -> tuple[int, ...]:
    """The lane xor distances that reach every lane holding the same row (`along` = "col":
    the lanes differ only in modes that step along columns) or the same column ("row"), for
    the warp's modes in lane order (power-of-two extents).

        C of m16n8k16, thread modes 4:(0 rows, 2 cols), 8:(1 row, 0 cols):
            along "col" (one row)  -> (1, 2);   along "row" (one column) -> (4, 8, 16)
    """
    masks, below = [], 1
    for m in modes:
        if m.extent & (m.extent - 1):
            raise ValueError(f"a lane mode of extent {m.extent} is not a power of two")
        if (m.row == 0) if along == "col" else (m.col == 0):
            masks += [below << i for i in range(m.extent.bit_length() - 1)]
        below *= m.extent
    return tuple(masks)


def thread_mode(tv: Layout) -> Layout:
    """The thread mode of a TV layout (lane → the place of its first value)."""
    return Layout(tv.shape[0], tv.stride[0])


def value_mode(tv: Layout) -> Layout:
    """The value mode of a TV layout (value index → its offset from the lane's first)."""
    return Layout(tv.shape[1], tv.stride[1])


def place(layout: Layout, rows: int, index: int) -> tuple[int, int]:
    """(row, column) of the element `layout(index)` in an R×C block (column-major)."""
    return layout(index) % rows, layout(index) // rows


@dataclass(frozen=True)
class MmaAtom:
    """One MMA atom's shape (M, N, K) and its TV layouts: (lane, value) → the column-major
    index in A (M×K), B (N×K) and C (M×N); and ldmatrix's lane → row layouts."""

    shape: tuple[int, int, int]
    a: Layout
    b: Layout
    c: Layout
    ldsm_a: tuple[Layout, Layout]  # (K-major, MN-major)
    ldsm_b: tuple[Layout, Layout]

    def a_elem(self, lane: int, r: int) -> tuple[int, int]:
        """(m, k) of value r of `lane` in A."""
        return place(self.a, self.shape[0], lane + 32 * r)

    def b_elem(self, lane: int, r: int) -> tuple[int, int]:
        """(k, n) of value r of `lane` in B (its layout indexes (N, K))."""
        n, k = place(self.b, self.shape[1], lane + 32 * r)
        return k, n

    def c_elem(self, lane: int, r: int) -> tuple[int, int]:
        """(m, n) of value r of `lane` in C."""
        return place(self.c, self.shape[0], lane + 32 * r)

    def values(self, tv: Layout) -> int:
        return size(tv) // 32


SM80_16x8x16 = MmaAtom(
    (16, 8, 16),
    a=Layout(((4, 8), (2, 2, 2)), ((32, 1), (16, 8, 128))),
    b=Layout(((4, 8), (2, 2)), ((16, 1), (8, 64))),
    c=Layout(((4, 8), (2, 2)), ((32, 1), (16, 8))),
    ldsm_a=(Layout((8, 2, 2), (1, 8, 128)), Layout((8, 2, 2), (16, 8, 128))),
    ldsm_b=(Layout((8, 2, 2), (1, 128, 8)), Layout((8, 2, 2), (16, 128, 8))),
)


def wgmma_c(n: int) -> Layout:
    """C (f32) of SM90's `wgmma.mma_async.m64nNk16`: (thread of the warp group, value) → the
    column-major index in the 64×N tile. Warp w of the group holds rows 16w..16w+15, as the
    m16n8k16 C does for its 16 rows, repeated every 8 columns (the PTX ISA's "wgmma .m64nNk16"
    D figure: d(i) at row 16w + g + 8((i/2)%2), column 2t + i%2 + 8(i/4))."""
    return Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


def rescale(x: Layout, rows: int, block_rows: int) -> Layout:
    """`x`, a layout into a column-major block of `rows` rows, into one of `block_rows` rows
    (a mode's row step kept, its column step times the new column stride)."""
    modes = split(x, rows)
    return Layout(tuple(m.extent for m in modes), tuple(m.row + block_rows * m.col for m in modes))


def tiled_c(
    atom: MmaAtom, warps: tuple[int, int], block: tuple[int, int], group: int = 1
) -> Layout:
    """The C TV layout of an MMA tiled over warps (WM, WN, column-major, each warp a
    contiguous (BM/WM)×(BN/WN) piece repeating the atom TM×TN times) on a BM×BN block:

        thread  (atom lanes, (WM, WN))          -> m + BM·n of its first element
        value   (atom values, TM, TN)            -> offset from it; value v = r + 4(mi + TM·ni)

    the per-thread order of the accumulator `partition_c` gives (`(4, TM, TN):(1, 4, 4TM)`).
    For m16n8k16 over 2×2 warps on 64×64: (4,8,2,2):(128,1,32,2048) threads,
    (2,2,2,4):(64,8,16,512) values.

    `group` > 1: the warps come in groups of `group` along M that interleave, as the four
    warps of a wgmma warp group do (`wgmma_c`): warp `wi` of group `gm` holds rows
    `gm·(BM·group/WM) + 16·(wi + group·mi)`, its atom repeats `16·group` rows apart. The
    thread mode is then (atom lanes, (group, WM/group, WN)). (Where each group holds one
    64-row wgmma tile, TM = 1, that is the plain layout above: `group` is then 1.)"""
    (am, an, _), (wm, wn), (bm, bn) = atom.shape, warps, block
    pm, pn = bm // wm, bn // wn
    lanes = rescale(thread_mode(atom.c), am, bm)
    values = rescale(value_mode(atom.c), am, bm)
    if group == 1:
        return Layout(
            ((*lanes.shape, wm, wn), (*values.shape, pm // am, pn // an)),
            ((*lanes.stride, pm, bm * pn), (*values.stride, am, bm * an)),
        )
    return Layout(
        ((*lanes.shape, group, wm // group, wn), (*values.shape, pm // am, pn // an)),
        ((*lanes.stride, am, pm * group, bm * pn), (*values.stride, am * group, bm * an)),
    )

"""Unit: the mma.sync m16n8k16 fragment maps of `tile_mma`, emulated against numpy.

The emulation follows the lowering's data flow for one 128×128×32 block over 4 warps: the
operands sit in swizzled shared memory, each lane gives ldmatrix.x4 one row address, register
q of a lane receives row lane/4, columns 2(lane mod 4)+{0,1} of matrix q, the atom computes
D = A·B + C on the matrices the PTX fragment maps rebuild, and the epilogue's C map places
each accumulator. A wrong lane address, register order or fragment map fails the comparison.
"""

from __future__ import annotations

import numpy as np
import pytest
from mlir import ir
from mlir.dialects import func, gpu

from tilec.banks import Evaluator
from tilec.context import make_context
from tilec.dialects.layout import algebra as A
from tilec.dialects.tile.atoms import (
    Mode,
    place,
    shuffle_masks,
    split,
    thread_mode,
    tiled_c,
    value_mode,
    wgmma_c,
)
from tilec.dialects.tile.atoms import SM80_16x8x16 as T
from tilec.lowering import IndexBuilder
from tilec.lowering import tile_mma as M
from tilec.lowering.sm90_epilogue import c_lanes

BM = BN = 128
BK = 32
SWIZZLE = A.Swizzle(2, 3, 3)  # examples/gemm_sm80.tile: Sw<2,3,3> o (8,32):(32,1) tiled


def to_shared(x: np.ndarray) -> np.ndarray:
    """The K-major tile as the copy writes it: element (r, c) at swizzle(r*BK + c)."""
    phys = np.full(x.size, np.nan, dtype=np.float64)
    for r in range(x.shape[0]):
        for c in range(x.shape[1]):
            phys[SWIZZLE(r * BK + c)] = x[r, c]
    return phys


def ldmatrix_x4(phys: np.ndarray, rows: list[tuple[int, int]]) -> list[list[np.ndarray]]:
    """regs[lane][q] (2 values) when lane l points at logical (row, col) = rows[l]."""
    mats = []
    for q in range(4):
        mat = []
        for r in range(8):
            row, col = rows[8 * q + r]
            start = SWIZZLE(row * BK + col)
            mat.append(phys[start : start + 8])
        mats.append(np.array(mat))
    return [
        [mats[q][lane // 4, 2 * (lane % 4) : 2 * (lane % 4) + 2] for q in range(4)]
        for lane in range(32)
    ]


def emulate(a: np.ndarray, b: np.ndarray, warps: tuple[int, int]) -> np.ndarray:
    part = M.MmaPartition((BM, BN), warps)
    pm, pn = part.piece
    tm, tn = part.tiles
    sa, sb = to_shared(a), to_shared(b)
    out = np.full((BM, BN), np.nan)
    for warp in range(warps[0] * warps[1]):
        wm, wn = warp % warps[0], warp // warps[0]
        acc = np.zeros((32, tm * tn, 4))
        for ks in range(0, BK, M.AK):
            afr = []
            for mi in range(tm):
                rows = [(wm * pm + mi * 16 + r, ks + c) for r, c in map(M.a_row, range(32))]
                afr.append(ldmatrix_x4(sa, rows))
            bfr = []
            for p in range(tn // 2):
                rows = [(wn * pn + p * 16 + r, ks + c) for r, c in map(M.b_row, range(32))]
                regs = ldmatrix_x4(sb, rows)
                bfr += [[lane[0:2] for lane in regs], [lane[2:4] for lane in regs]]
            for mi in range(tm):
                for ni in range(tn):
                    am, bm = np.full((16, 16), np.nan), np.full((16, 8), np.nan)
                    for lane in range(32):
                        for r in range(8):
                            am[M.a_elem(lane, r)] = afr[mi][lane][r // 2][r % 2]
                        for r in range(4):
                            bm[M.b_elem(lane, r)] = bfr[ni][lane][r // 2][r % 2]
                    d = am @ bm
                    for lane in range(32):
                        for r in range(4):
                            acc[lane, mi + tm * ni, r] += d[M.c_elem(lane, r)]
        for lane in range(32):
            for i in range(tm * tn):
                mi, ni = i % tm, i // tm
                for r in range(4):
                    m, n = M.c_elem(lane, r)
                    out[wm * pm + mi * 16 + m, wn * pn + ni * 8 + n] = acc[lane, i, r]
    return out


@pytest.mark.parametrize("warps", [(2, 2), (4, 1), (1, 4)])
def test_fragments_compute_a_times_b_transposed(warps: tuple[int, int]) -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-3, 4, (BM, BK)).astype(np.float64)
    b = rng.integers(-3, 4, (BN, BK)).astype(np.float64)
    np.testing.assert_array_equal(emulate(a, b, warps), a @ b.T)


def test_ldmatrix_rows_stay_contiguous_under_the_swizzle() -> None:
    for row in range(BM):
        for col in range(0, BK, 8):
            start = SWIZZLE(row * BK + col)
            assert [SWIZZLE(row * BK + col + e) for e in range(8)] == list(range(start, start + 8))


def test_fragment_maps_cover_each_atom_once() -> None:
    for fn, regs, shape in (
        (M.a_elem, 8, (16, 16)),
        (M.b_elem, 4, (16, 8)),
        (M.c_elem, 4, (16, 8)),
    ):
        seen = {fn(lane, r) for lane in range(32) for r in range(regs)}
        assert len(seen) == shape[0] * shape[1]
        assert all(0 <= x < shape[0] and 0 <= y < shape[1] for x, y in seen)


# The PTX ISA's "mma.m16n8k16" fragment figures for .f16/.bf16 A, B and .f32 C, written out
# as the ISA states them (g = lane / 4, t = lane mod 4), and ldmatrix.x4's row addresses: the
# atom's TV layouts (dialects/tile/atoms.py), which the lowering reads, must give exactly these.
def isa_a(lane: int, r: int) -> tuple[int, int]:
    g, t, i, e = lane // 4, lane % 4, r // 2, r % 2
    return g + 8 * (i % 2), 2 * t + e + 8 * (i // 2)


def isa_b(lane: int, r: int) -> tuple[int, int]:
    g, t, i, e = lane // 4, lane % 4, r // 2, r % 2
    return 2 * t + e + 8 * i, g


def isa_c(lane: int, r: int) -> tuple[int, int]:
    g, t, i, e = lane // 4, lane % 4, r // 2, r % 2
    return g + 8 * i, 2 * t + e


def test_tv_layouts_are_the_ptx_isa_fragments() -> None:
    for lane in range(32):
        assert [T.a_elem(lane, r) for r in range(8)] == [isa_a(lane, r) for r in range(8)]
        assert [T.b_elem(lane, r) for r in range(4)] == [isa_b(lane, r) for r in range(4)]
        assert [T.c_elem(lane, r) for r in range(4)] == [isa_c(lane, r) for r in range(4)]
        l8, q, hi = lane % 8, lane // 8 % 2, lane // 16
        rows = [
            (l8 + 8 * q, 8 * hi),
            (8 * q, 8 * hi + l8),
            (l8 + 8 * hi, 8 * q),
            (8 * hi, 8 * q + l8),
        ]
        got = [place(x, 16, lane) for x in (*T.ldsm_a, *T.ldsm_b)]
        assert got == rows
    assert (T.values(T.a), T.values(T.b), T.values(T.c)) == (8, 4, 4)


def test_split_reads_steps_off_the_layout_and_refuses_diagonals() -> None:
    assert split(thread_mode(T.c), 16) == [Mode(4, 0, 2), Mode(8, 1, 0)]
    assert split(value_mode(T.c), 16) == [Mode(2, 0, 1), Mode(2, 8, 0)]
    with pytest.raises(ValueError, match="both sides"):
        split(A.Layout((4, 2), (1, 17)), 16)  # 17 = one column and one row


@pytest.mark.parametrize("n", [8, 64, 128, 256])
def test_wgmma_c_layout_is_the_ptx_isa_fragment(n: int) -> None:
    """wgmma .m64nNk16 f32 D: d(i) of thread t (warp w = t / 32, g, t4 of its lane) at row
    16w + g + 8((i/2)%2), column 2 t4 + i%2 + 8(i/4); every element of 64×N exactly once."""
    tv = wgmma_c(n)
    seen = set()
    for t in range(128):
        w, lane = divmod(t, 32)
        for i in range(n // 2):
            want = (16 * w + lane // 4 + 8 * (i // 2 % 2), 2 * (lane % 4) + i % 2 + 8 * (i // 4))
            assert place(tv, 64, t + 128 * i) == want
            seen.add(want)
    assert len(seen) == 64 * n


def test_shuffle_masks_follow_the_layout() -> None:
    lanes = split(thread_mode(T.c), 16)
    assert shuffle_masks(lanes, "col") == (1, 2)  # the 4 lanes of one row
    assert shuffle_masks(lanes, "row") == (4, 8, 16)  # the 8 lanes of one column
    with pytest.raises(ValueError, match="power of two"):
        shuffle_masks([Mode(3, 1, 0)], "row")


@pytest.mark.parametrize(
    ("warps", "block"),
    [((2, 2), (64, 64)), ((2, 4), (128, 256)), ((4, 2), (128, 64)), ((1, 1), (16, 16))],
)
def test_tiled_c_layout_is_where_the_lowering_puts_each_accumulator(warps, block) -> None:
    """The tiled MMA's C TV layout (atoms.tiled_c) against the lowering: PairCoords' index
    arithmetic, emitted as IR and evaluated for every thread, puts pair h of chunk i of thread
    t where the layout puts value 2h + 4i of t; and the layout covers the block once."""
    tv = tiled_c(T, warps, block)
    threads = 32 * warps[0] * warps[1]
    assert sorted(tv(i) for i in range(A.size(tv))) == list(range(block[0] * block[1]))
    part = M.MmaPartition(block, warps)
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("k", ([], []))
        with ir.InsertionPoint(fn.add_entry_block()):
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            coords = M.PairCoords(part, tid, IndexBuilder())
            terms = {(i, h): coords(i, h) for i in range(part.iters) for h in range(2)}
            func.ReturnOp([])
        for t in range(threads):
            ev = Evaluator((t, 0, 0), {})
            for (i, h), (row, col) in terms.items():
                got = tuple(x if isinstance(x, int) else ev.value(x) for x in (row, col))
                assert got == place(tv, block[0], t + threads * (2 * h + 4 * i)), (t, i, h)


def test_sm90_epilogue_lanes_are_the_wgmma_c_layout() -> None:
    """The SM90 epilogue's per-thread arithmetic (sm90_epilogue.c_lanes), emitted as IR and
    evaluated for each thread of a warp group, is where wgmma's C layout puts the thread's
    first value; the byte in a 16-byte unit is that column's pair of 16-bit elements."""
    tv = wgmma_c(64)
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("k", ([], []))
        with ir.InsertionPoint(fn.add_entry_block()):
            terms = c_lanes(gpu.ThreadIdOp(gpu.Dimension.x).result, IndexBuilder())
            func.ReturnOp([])
        for t in range(256):  # two warp groups: the second repeats the first
            row, unit_byte, col = (Evaluator((t, 0, 0), {}).value(x) for x in terms)
            assert (row, col) == place(tv, 64, t % 128), t
            assert unit_byte == 2 * col

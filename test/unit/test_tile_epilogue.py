"""Unit: `load(t, like = acc)` reads each accumulator element where mma.sync leaves it, and an
epilogue's loads move to its store only when nothing in between can change what they read."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mlir import ir

from tilec.context import make_context
from tilec.driver import CompileOptions, compile_file
from tilec.lowering import tile_mma as M
from tilec.lowering.tile_epilogue import FragmentReader
from tilec.lowering.tile_views import View

BM, BN = 128, 64


@pytest.mark.parametrize("warps", [(2, 2), (4, 1), (1, 4), (2, 1)])
def test_fragment_reader_reads_the_accumulator_elements(warps: tuple[int, int]) -> None:
    part = M.MmaPartition((BM, BN), warps)
    threads = 32 * warps[0] * warps[1]
    pm, pn = part.piece
    tm, _ = part.tiles
    seen = set()
    with make_context(), ir.Location.unknown():
        view = View(ir.F16Type.get(), "global", None, 0, [BM, BN], [BN, 1])
        for tid in range(threads):  # static thread ids: the index math folds to integers
            reader = FragmentReader(view, None, part, tid, threads)
            lane, warp = tid % 32, tid // 32
            wm, wn = warp % warps[0], warp // warps[0]
            for i in range(part.iters):
                mi, ni = i % tm, i // tm
                for j in range(part.vec):
                    row, col = reader.coords(i, j // 2)
                    m, n = M.c_elem(lane, j)  # the PTX ISA's accumulator map
                    assert (row, col + j % 2) == (wm * pm + mi * 16 + m, wn * pn + ni * 8 + n)
                    seen.add((row, col + j % 2))
    assert len(seen) == BM * BN


HEADER = (
    "kernel k(C: f16[M, N], D: f16[M, N]) grid(cdiv(M, 32), cdiv(N, 32)) threads(128)\n"
    "  target(sm_80) {\n"
    "  let mma = tiled_mma<sm80.mma_16x8x16.f32.f16.f16.f32>(atoms = (2, 2, 1))\n"
    "  let acc = fragment<f32>(partition_c(mma, (32, 32))) = 1\n"
    "  let gD = local_tile(D, (32, 32), (block.x, block.y))\n"
    "  let c = load(local_tile(C, (32, 32), (block.x, block.y)), like = acc)\n"
)
PAIR_LOAD = re.compile(r"llvm\.load .* -> vector<2xf16>")
PAIR_STORE = re.compile(r"llvm\.store .* : vector<2xf16>, !llvm\.ptr<1>")


def pair_accesses(tmp_path: Path, body: str) -> str:
    """The fast path's pair loads (L) and stores (S) of the kernel, in program order."""
    source = tmp_path / "k.tile"
    source.write_text(HEADER + body + "}\n")
    gpu = str(compile_file(str(source), CompileOptions(emit="gpu")).value)
    order = []
    for line in gpu.splitlines():
        if PAIR_LOAD.search(line):
            order.append("L")
        elif PAIR_STORE.search(line):
            order.append("S")
    return "".join(order)


def test_an_epilogue_loads_each_chunk_where_it_stores_it(tmp_path: Path) -> None:
    # 32×32 over 4 warps: two atoms per thread, each two C pairs loaded then two stored.
    assert pair_accesses(tmp_path, "store(relu(2.0 * acc + c), gD)\n") == "LLSSLLSS"


@pytest.mark.parametrize(
    "body",
    [
        "barrier()\nstore(acc + c, gD)\n",  # another thread may write C before the barrier
        "store(acc, gD)\nstore(acc + c, gD)\n",  # a store in between may write what c reads
        "store(c * c, gD)\n",  # used twice: loaded once, here
        "let s = c + acc\nfor i in range(2) { store(s, gD) }\n",  # stored in another block
    ],
)
def test_loads_stay_in_place_when_moving_them_could_change_them(tmp_path: Path, body: str) -> None:
    assert re.fullmatch("L{4}S+", pair_accesses(tmp_path, body))

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


ROWNORM = """
kernel rownorm<COLS: int = 1024, T: type = f16>(
    X: f32[R, N], W: T[(R, N):(0, 1)], B: T[(R, N):(0, 1)], Y: T[R, N])
  grid(R) threads(128) target(sm_80)
{
  let x = load(local_tile(X, (1, COLS), (block.x, 0)))
  let w = load(local_tile(W, (1, COLS), (block.x, 0)), like = x)
  let b = load(local_tile(B, (1, COLS), (block.x, 0)), like = x)
  store(x * w + b, local_tile(Y, (1, COLS), (block.x, 0)))
}
"""
VECTOR_LOAD = re.compile(r"^\s*ld\.global\.v\d\.(b16|b32)\s+\{([^}]*)\}")


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_a_branch_that_loads_a_vector_does_not_wait_for_it(tmp_path: Path, elem: str) -> None:
    # The edge versions read each weight and bias chunk behind a branch (a vector where the
    # chunk is inside the bounds, else element by element). Unpacked inside that branch, the
    # weight's vector was waited for there, before the bias's load could issue (a LayerNorm
    # over odd rows: 0.63 of the copy ceiling); as words the loaded registers cross the join.
    # (x is f32, whose vectors need no unpacking, so only W's and B's loads are looked at.)
    source = tmp_path / "k.tile"
    source.write_text(ROWNORM)
    options = CompileOptions(emit="ptx", params={"T": elem})
    text = str(compile_file(str(source), options).value)
    branching = 0
    for block in re.split(r"\n\$L__BB\d+_\d+:", text):
        lines = block.splitlines()
        if not lines or not re.match(r"\s*(@%p\d+ )?bra", lines[-1]):
            continue
        for k, line in enumerate(lines):
            loaded = VECTOR_LOAD.match(line)
            if loaded is None:
                continue
            branching += 1
            assert loaded.group(1) == "b32", f"unpacked where it is loaded: {line}"
            regs = [r.strip() for r in loaded.group(2).split(",")]
            later = "\n".join(lines[k + 1 :])
            used = [r for r in regs if re.search(re.escape(r) + r"\b", later)]
            assert not used, f"{used} read in the block that loads them:\n{block}"
    assert branching >= 4, "weights and biases behind branches, in two edge versions"

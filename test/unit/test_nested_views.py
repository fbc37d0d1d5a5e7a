"""Views of nested layouts (lowering/tile_modes.py): every address the lowering computes for a
nested shared or global layout is the layout algebra's, for every thread of the block.

The kernels copy tiles into swizzled shared buffers whose columns are nested modes (attention's
`tile_to_shape(swizzle<3,3,3> o (8, 64):(64, 1), (BM, D))` at D = 128 and 256 is
`Sw<3,3,3> o (BM,(64,D/64)):(64,(1,64 BM))`), read them with ldmatrix for two gemms (K-major
and, through a permuted view, MN-major), and copy from a global tensor whose rows are a nested
mode. Each address is evaluated per thread (tilec.banks.Evaluator) on the `lowered` stage and
checked against `tilec.layout`: each cp.async moves the 16 bytes at global coordinate (r, c) to
the shared offset the buffer's layout gives (r, c), every chunk once; each ldmatrix lane points
at the row the PTX ISA's ldmatrix wants in its 16x16 block, every row of a warp's operand tile
once per warp.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from mlir import ir
from test_shared_extent import shared_base

from tilec import binding
from tilec import layout as L
from tilec.banks import Evaluator
from tilec.driver import CompileOptions, compile_file

THREADS = 128
GLOBAL = 1 << 32  # tensor argument i is based at i * GLOBAL
ATTENTION_TILES = """
kernel nested<D: int = 128, T: type = f16>(Q: T[64, D], K: T[64, D], V: T[64, D], O: f32[64, D])
  grid(1) threads(128) target(sm_80)
{
  let sQ = shared<T>(tile_to_shape(swizzle<3, 3, 3> o (8, 64):(64, 1), (64, D)))
  let sK = shared<T>(tile_to_shape(swizzle<3, 3, 3> o (8, 64):(64, 1), (64, D)))
  let sV = shared<T>(tile_to_shape(swizzle<3, 3, 3> o (8, 64):(64, 1), (64, D)))
  copy<cp_async.cg.16>(local_tile(Q, (64, D), (0, 0)), sQ)
  copy<cp_async.cg.16>(local_tile(K, (64, D), (0, 0)), sK)
  copy<cp_async.cg.16>(local_tile(V, (64, D), (0, 0)), sV)
  let mma = tiled_mma<sm80.mma_16x8x16.f32.T.T.f32>(atoms = (4, 1, 1))
  let s = fragment<f32>(partition_c(mma, (64, 64))) = 0
  gemm(mma, sQ, sK, s)
  let o = fragment<f32>(partition_c(mma, (64, D))) = 0
  gemm(mma, s : T, permute(sV, (1, 0)), o)
  store(o, local_tile(O, (64, D), (0, 0)))
}
"""
# A global tensor whose rows are a nested mode ((4, 8):(1, 256)) and whose columns step by 4:
# its second 32-column tile, into a column-major shared buffer, 4 f32 (16 bytes) a cp.async.
NESTED_GLOBAL = """
kernel rows(X: f32[((4, 8), 64):((1, 256), 4)], Y: f32[32, 32])
  grid(1) threads(128) target(sm_80)
{
  let s = shared<f32>((32, 32):(1, 32))
  copy<cp_async.cg.16>(local_tile(X, (32, 32), (0, 1)), s)
  barrier()
  copy(s, local_tile(Y, (32, 32), (0, 0)))
}
"""


def lowered(tmp_path: Path, source: str, params: dict[str, str]) -> ir.Operation:
    path = tmp_path / "k.tile"
    path.write_text(source)
    return compile_file(str(path), CompileOptions(emit="lowered", params=params)).value.operation


def ops_named(module: ir.Operation, name: str) -> list[ir.Operation]:
    out: list[ir.Operation] = []
    binding.walk(module, lambda o: out.append(o) if o.name == name else None)
    return out


def evaluators(module: ir.Operation) -> list[Evaluator]:
    """One evaluator per thread, the kernel's pointer arguments based GLOBAL apart."""
    func = ops_named(module, "func.func")[0]
    args = list(func.regions[0].blocks[0].arguments)
    ivs = {a: i * GLOBAL for i, a in enumerate(args)}
    return [Evaluator((t, 0, 0), ivs) for t in range(THREADS)]


def buffer_named(symbol: str, names: str) -> str:
    """The source name (one of `names`) a buffer's symbol (`__smem_<kernel>_<name>`) has."""
    return next(n for n in names if symbol.endswith(f"_{n}"))


def check_copies(module: ir.Operation, tiles: dict[int, tuple], shared: dict[str, object]) -> None:
    """Every cp.async: global (argument, element) -> the shared offset its coordinate has.

    `tiles[arg]` = (name of its shared buffer, layout of the argument's global tile: coordinate
    -> element, its shape); `shared[name]` the buffer's layout."""
    seen: Counter = Counter()
    copies = ops_named(module, "nvvm.cp.async.shared.global")
    assert copies
    for ev in evaluators(module):
        for op in copies:
            dst, src = op.operands[0], op.operands[1]
            buffer = shared_base(dst)
            assert buffer is not None
            arg, byte = divmod(ev.value(src), GLOBAL)
            name, layout, shape, elem = tiles[arg]
            assert buffer.endswith(f"_{name}"), (buffer, name)
            assert byte % elem == 0
            where = inverse(layout, shape)[byte // elem]
            expected = shared[name](*where) * elem
            assert ev.value(dst) == expected, (name, where, ev.value(dst), expected)
            seen[(name, where)] += 1
    for name, layout, shape, elem in tiles.values():
        chunk = 16 // elem
        run_mode = 0 if name == "s" else 1  # the chunks' mode: the copy's unit-stride one
        starts = {w for w in inverse(layout, shape).values() if w[run_mode] % chunk == 0}
        assert {w for (n, w) in seen if n == name} == starts, name
    assert set(seen.values()) == {1}  # every chunk once


_INVERSES: dict = {}


def inverse(layout: object, shape: tuple[int, int]) -> dict[int, tuple[int, int]]:
    """element -> coordinate of an injective layout over `shape` (memoised)."""
    key = (str(layout), shape)
    if key not in _INVERSES:
        _INVERSES[key] = {layout(r, c): (r, c) for r in range(shape[0]) for c in range(shape[1])}
    return _INVERSES[key]


def ldmatrix_row(operand: str, lane: int) -> tuple[int, int]:
    """(row, column) in the 16x16 block of the row `lane` gives ldmatrix.x4 (PTX ISA): A's
    (m, k) and a pair of B's n-atoms (n, k) K-major; an MN-major B's (n, k) under .trans."""
    q, r = divmod(lane, 8)
    if operand == "a":
        return r + 8 * (q % 2), 8 * (q // 2)
    if operand == "b":
        return r + 8 * (q // 2), 8 * (q % 2)
    return 8 * (q // 2), 8 * (q % 2) + r  # MN-major B (V): n along D, k along the rows of V


def check_ldmatrix(module: ir.Operation, shared: dict[str, object], d: int) -> None:
    """Every ldmatrix lane points at its row of its 16x16 block, every 8-element row of a
    warp's part of the operand once per warp: A (sQ) rows 16w .. 16w + 15 of warp w, B (sK)
    all its rows, B = sV^T all of sV's rows in 8-column runs."""
    per_warp: dict[tuple[int, str], Counter] = {}
    loads = ops_named(module, "nvvm.ldmatrix")
    for t, ev in enumerate(evaluators(module)):
        warp, lane = divmod(t, 32)
        for op in loads:
            name = buffer_named(shared_base(op.operands[0]), shared)
            byte = ev.value(op.operands[0])
            r, c = inverse(shared[name], (64, d))[byte // 2]
            operand = {"sQ": "a", "sK": "b", "sV": "v"}[name]
            block = (c % 16, r % 16) if operand == "v" else (r % 16, c % 16)
            assert block == ldmatrix_row(operand, lane), (name, t, r, c)
            per_warp.setdefault((warp, name), Counter())[(r, c)] += 1
    for (warp, name), rows in per_warp.items():
        want = {
            (r, c)
            for r in (range(16 * warp, 16 * warp + 16) if name == "sQ" else range(64))
            for c in range(0, d, 8)
        }
        assert set(rows) == want and set(rows.values()) == {1}, (warp, name)


@pytest.mark.parametrize("d", [128, 256])
def test_attention_tiles(tmp_path: Path, d: int) -> None:
    """The D = 128 and 256 tiles of attention: nested columns (64, D / 64)."""
    module = lowered(tmp_path, ATTENTION_TILES, {"D": str(d)})
    swizzled = L.tile_to_shape(
        L.composition(L.Swizzle(3, 3, 3), L.Layout((8, 64), (64, 1))), (64, d)
    )
    assert L.depth(L.get(swizzled.inner, 1)) == 1  # a nested mode: the case in point
    shared = dict.fromkeys(("sQ", "sK", "sV"), swizzled)
    row_major = L.Layout((64, d), (d, 1))
    tiles = {i: (name, row_major, (64, d), 2) for i, name in enumerate(("sQ", "sK", "sV"))}
    check_copies(module, tiles, shared)
    check_ldmatrix(module, shared, d)


def test_nested_global_rows(tmp_path: Path) -> None:
    """A global tensor's nested row mode, tiled at column tile 1, into a column-major buffer."""
    module = lowered(tmp_path, NESTED_GLOBAL, {})
    tile = L.Layout(((4, 8), 32), ((1, 256), 4))  # X's second 32-column tile, 128 in
    shifted = lambda r, c: tile(r, c) + 128  # noqa: E731
    check_copies(module, {0: ("s", shifted, (32, 32), 4)}, {"s": L.Layout((32, 32), (1, 32))})

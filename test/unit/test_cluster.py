"""`cluster(S)`, `cluster.rank` and `cluster_max/min/sum`: the checks, the IR, the PTX's cluster
shape and exchange, the manifest's cluster and the launch check of the grid.

The GPU tier runs examples/softmax.tile and layernorm.tile split over clusters
(test/gpu/test_rows.py, bundles `*_c{COLS}s{SPLIT}_sm90a`) against float64 torch.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from test_runtime import FakeCuda

from tilec.build import compile_tile
from tilec.diagnostics import DiagnosticError, render
from tilec.driver import CompileOptions, compile_file
from tilec.runtime.binding import bind
from tilec.runtime.bundle import Manifest, ManifestError, SizeParam, TensorParam

REPO = Path(__file__).resolve().parents[2]
HEAD = (
    "kernel k<COLS: int = 256, S: int = 2>(X: f32[R, N], Y: f32[R, N])\n"
    "  grid(R * S) threads(64) {clause} target({target})\n"
)
# A row of S * COLS columns over a cluster of S blocks: each block's sum, then the row's.
BODY = """{
  let x = load(local_tile(X, (1, COLS), (block.x / S, cluster.rank)))
  let s = cluster_sum(reduce_sum(x, mode = 1))
  store(x / s, local_tile(Y, (1, COLS), (block.x / S, cluster.rank)))
}
"""


def source(clause: str = "cluster(S)", target: str = "sm_90a", body: str = BODY) -> str:
    return HEAD.format(clause=clause, target=target) + body


def compiled(tmp_path: Path, src: str, emit: str, arch: str | None = None, **params: str) -> str:
    path = tmp_path / "k.tile"
    path.write_text(src)
    return str(compile_file(str(path), CompileOptions(emit=emit, arch=arch, params=params)).value)


def diagnostics(tmp_path: Path, src: str, arch: str | None = None) -> list[list[str]]:
    path = tmp_path / "k.tile"
    path.write_text(src)
    with pytest.raises(DiagnosticError) as info:
        compile_file(str(path), CompileOptions(emit="tile", arch=arch))
    return [render(d, src).splitlines()[:3] for d in info.value.diagnostics]


@pytest.mark.parametrize(
    ("clause", "body", "message", "caret"),
    [
        ("cluster(3)", BODY, "a static power of two up to 8, found 3", "^"),
        ("cluster(16)", BODY, "a static power of two up to 8, found 16", "^~"),
        ("cluster(N)", BODY, "a static power of two up to 8, found a runtime", "^"),
        ("cluster(2, 1)", BODY, "takes one size", "^~~~~~~"),
        (
            "cluster(S)",
            BODY.replace("cluster.rank)))\n  let s", "cluster.x)))\n  let s"),
            "cluster has 'rank', not 'x'",
            "^~~~~~~~~",
        ),
        (
            "cluster(S)",
            BODY.replace("cluster_sum(reduce_sum(x, mode = 1))", "cluster_sum(1.5)"),
            "cluster_sum combines register tensors",
            "^~~",
        ),
        (
            "cluster(S)",
            BODY.replace("cluster_sum(reduce_sum(x, mode = 1))", "cluster_max(x < 0.0)"),
            "cluster_max combines numbers, not predicates",
            "^~~~~~~",
        ),
    ],
)
def test_cluster_errors_are_located(
    tmp_path: Path, clause: str, body: str, message: str, caret: str
) -> None:
    header, line, marks = diagnostics(tmp_path, source(clause, body=body))[0]
    assert message in header, header
    assert re.search(r"k\.tile:\d+:\d+: error:", header), header
    assert marks.strip() == caret, (line, marks)


def test_a_cluster_needs_a_target_that_has_them(tmp_path: Path) -> None:
    (header, _, _), *_ = diagnostics(tmp_path, source(target="sm_80"))
    assert "cluster(2) needs target sm_90a; kernel 'k' is built for sm_80" in header, header
    # --arch may give it one; it may not take it away.
    assert "tile.cluster_reduce" in compiled(tmp_path, source(target="sm_80"), "tile", "sm_90a")
    (header, _, _), *_ = diagnostics(tmp_path, source(), arch="sm_80")
    assert "is built for sm_80" in header, header


def test_cluster_one_is_no_cluster(tmp_path: Path) -> None:
    # cluster(1): cluster.rank is 0 and cluster_sum is its operand (the same kernel as
    # without the clause, for examples/softmax.tile's default SPLIT = 1).
    tile = compiled(tmp_path, source(), "tile", S="1")
    assert "tile.cluster" not in tile and "tile.reduce" in tile
    ptx = compiled(tmp_path, source(), "ptx", S="1")
    assert "barrier.cluster" not in ptx and "reqnctapercluster" not in ptx


def test_a_cluster_kernel_exchanges_through_distributed_shared_memory(tmp_path: Path) -> None:
    tile = compiled(tmp_path, source(), "tile")
    assert re.search(r'"tile.cluster_reduce"\(%\w+\) \{kind = "sum"\}', tile), tile
    assert "tile.cluster = 2 : i64" in tile
    ptx = compiled(tmp_path, source(), "ptx")
    assert ".reqnctapercluster 2, 1, 1" in ptx
    # At entry, a relaxed cluster barrier: every block has started before any writes into
    # another. Then each thread writes its sum into both blocks (mapa to rank 0 and 1), one
    # cluster barrier, and reads its two slots from its own block's shared memory: no barrier
    # after it outside a loop, since no block reads another's memory.
    assert len(re.findall(r"mapa\.u64\s+%rd\d+, %rd\d+, [01];", ptx)) == 2, ptx
    order = re.findall(r"barrier\.cluster\.\w+(?:\.relaxed)?|mapa|ret;", ptx)
    assert order == [
        "barrier.cluster.arrive.relaxed",
        "barrier.cluster.wait",
        "mapa",
        "mapa",
        "barrier.cluster.arrive",
        "barrier.cluster.wait",
        "ret;",
    ], order
    assert "%cluster_ctarank" in ptx


def test_in_a_loop_a_second_barrier_guards_the_scratch(tmp_path: Path) -> None:
    body = """{
  var t = fragment<f32>((1, 1)) = 0
  for k in range(3) {
    let x = load(local_tile(X, (1, COLS), (block.x / S, cluster.rank + k * S)))
    t = t + cluster_max(reduce_max(x, mode = 1))
  }
  let y = load(local_tile(X, (1, COLS), (block.x / S, 0))) * t
  store(y, local_tile(Y, (1, COLS), (block.x / S, 0)))
}
"""
    ptx = compiled(tmp_path, source(body=body), "ptx")
    # the entry barrier, then the loop's exchange and its reuse guard
    assert ptx.count("barrier.cluster.wait") == 3, "the loop's exchange lost its reuse guard"


def test_the_manifest_carries_the_cluster_and_the_launch_checks_the_grid(tmp_path: Path) -> None:
    path = tmp_path / "k.tile"
    path.write_text(source())
    m = compile_tile(str(path), {}, "sm_90a").manifests[0]
    assert m.cluster == 2 and Manifest.from_json(m.to_json()).cluster == 2
    with pytest.raises(ManifestError, match="cluster: 3 is not a power of two"):
        replace(m, cluster=3)
    rows = Manifest(
        entry="rows",
        target="sm_90a",
        params=(
            TensorParam("x", "f32", ("R", "N")),
            SizeParam("R", ("x", 0)),
            SizeParam("N", ("x", 1)),
        ),
        grid=("R", 1, 1),
        block=(64, 1, 1),
        cluster=2,
    )
    assert bind(rows, (FakeCuda((4, 8), "<f4"),)).grid == (4, 1, 1)
    with pytest.raises(
        ValueError, match="grid \\[5, 1, 1\\] along x is not a multiple of its cluster of 2"
    ):
        bind(rows, (FakeCuda((5, 8), "<f4"),))


def test_the_examples_split_rows_over_clusters() -> None:
    # examples/softmax.tile and layernorm.tile with SPLIT = 2: their specialised variants (a
    # row of at most SPLIT * COLS) fold their loops away and keep one exchange per statistic
    # (two), after the entry barrier.
    for name in ("softmax", "layernorm"):
        compiled_ = compile_tile(
            str(REPO / f"examples/{name}.tile"), {"COLS": "1024", "SPLIT": "2"}, "sm_90a"
        )
        special = compiled_.special_ptx
        assert ".reqnctapercluster 2, 1, 1" in special
        assert special.count("barrier.cluster.wait") == 3, name
        assert compiled_.manifests[0].cluster == 2

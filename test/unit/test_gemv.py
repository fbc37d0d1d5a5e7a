"""examples/gemv.tile (the few-row kernel of tilec.ops.gemm, gemm_plan.row_plan) and what it
leans on: a reduction over a mode of extent 1 (B's row held as a reduction over a one-row
view, which broadcasts over A's rows) is spread as its source, in a loop that carries a var
too; each build touches at most MR rows of A; a block is one warp (row sums by shuffles, no
barrier). Its numbers are the GPU tier's
(test/gpu/test_ops_gemm.py: test_gemv_family_rules)."""

from pathlib import Path

import pytest

from tilec.build import compile_tile

REPO = Path(__file__).resolve().parents[2]
GEMV = REPO / "examples" / "gemv.tile"
CARRIED = """\
kernel k(X: f32[R, N], Y: f32[R, N]) grid(R) threads(128) target(sm_80) {{
  var acc = fragment<f32>((1, 512)) = 0
  for k in range(cdiv(N, 512)) {{
    let x = load(local_tile(X, (1, 512), (block.x, k)))
    acc = acc + {product}
  }}
  store(acc, local_tile(Y, (1, 512), (block.x, 0)))
}}
"""


def test_a_reduction_over_an_extent_1_mode_is_its_source(tmp_path: Path) -> None:
    # tile-distribute once searched from the reduction's result back to its source and from
    # there to the result again, without end (a RecursionError, reported as an internal error)
    ptx = []
    for name, product in (("reduced", "x * reduce_sum(x, mode = 0)"), ("plain", "x * x")):
        src = tmp_path / f"{name}.tile"
        src.write_text(CARRIED.format(product=product))
        ptx.append(compile_tile(str(src), {}, "sm_80").ptx)
    assert "fma.rn.f32" in ptx[0]
    assert ptx[0] == ptx[1]  # byte for byte: the same spread, nothing added


@pytest.mark.parametrize("mr", [1, 4])
def test_gemv_builds_take_up_to_mr_rows(mr: int) -> None:
    compiled = compile_tile(str(GEMV), {"MR": str(mr), "T": "bf16"}, "sm_80")
    (manifest,) = compiled.manifests
    assert [(r.value, r.at_most) for r in manifest.requires] == [("M", mr)]
    strides = {p.name: p.strides for p in manifest.params if hasattr(p, "strides")}
    assert strides == {"A": ("lda", 1), "B": ("ldb", 1), "C": None}
    # B's row is read as skewed 16-byte blocks where it starts misaligned (odd K)
    assert "prmt.b32" in compiled.ptx and "ld.global.v4" in compiled.ptx


@pytest.mark.parametrize(("mr", "nb", "u"), [(1, 2, 2), (2, 2, 1), (4, 2, 2), (8, 2, 1)])
def test_gemv_rows_are_warp_sums(mr: int, nb: int, u: int) -> None:
    params = {"MR": str(mr), "NB": str(nb), "U": str(u), "T": "bf16"}
    ptx = compile_tile(str(GEMV), params, "sm_80").ptx
    # NB x MR sums of a lane's columns, each over the warp's 32 lanes: 5 butterfly steps
    assert ptx.count("shfl.sync.bfly.b32") == 5 * nb * mr
    assert "bar.sync" not in ptx and ".shared" not in ptx
    # the NB x MR x 256U tile of products, each lane's run of 8 columns of each 256 folded in
    # the lane (reduce_sum(.., group = 8)): a multiply and 7 multiply-adds a run, and one add
    # into the running NB x MR x 32U sums (no second copy of the products)
    assert ptx.count("fma.rn.f32") == nb * mr * 7 * u
    assert ptx.count("mul.f32") == nb * mr * u

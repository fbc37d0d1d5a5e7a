"""prepend / append (docs/language.md, "A rank-1 tensor as a row"): a rank-1 tensor given a
unit or broadcast mode of stride 0 lowers exactly as a tensor argument declared with that
layout, so its addresses and bounds are those the rest of the compiler already checks."""

from pathlib import Path

import pytest

from tilec.build import compile_tile

REPO = Path(__file__).resolve().parents[2]
RANK1 = REPO / "test" / "gpu" / "rank1_rows.tile"

ROWS = """\
kernel rows<COLS: int = 1024>(X: f16[R, N], W: {w}, B: {w}, Y: f16[R, N])
  grid(R) threads(128) target(sm_80)
{{
  let x = load(local_tile(X, (1, COLS), (block.x, 0))) : f32
  let w = load(local_tile({wv}, (1, COLS), (block.x, 0)), like = x)
  let b = load(local_tile({bv}, (1, COLS), (block.x, 0)), like = x)
  store(x * w + b, local_tile(Y, (1, COLS), (block.x, 0)))
}}
"""
COLUMNS = """\
kernel cols<ROWS: int = 512>(X: f32[N, C], W: {w}, Y: f32[N, C])
  grid(cdiv(N, ROWS), C) threads(128) target(sm_80)
{{
  let x = load(local_tile(X, (ROWS, 1), (block.x, block.y)))
  let w = load(local_tile({wv}, (ROWS, 1), (block.x, 0)), like = x)
  store(x * w, local_tile(Y, (ROWS, 1), (block.x, block.y)))
}}
"""
# prepend(W, R): W's N values over R rows, as the argument layout (R, N):(0, 1) says them;
# append(W, 1): W's N values as an (N, 1) column, as (N, 1):(1, 0).
CASES = {
    "prepend": (
        ROWS.format(w="f16[N]", wv="prepend(W, R)", bv="prepend(B, R)"),
        ROWS.format(w="f16[(R, N):(0, 1)]", wv="W", bv="B"),
    ),
    "append": (
        COLUMNS.format(w="f32[N]", wv="append(W, 1)"),
        COLUMNS.format(w="f32[(N, 1):(1, 0)]", wv="W"),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_added_mode_compiles_as_the_argument_layout_it_spells(tmp_path: Path, case: str) -> None:
    ptx = []
    for name, text in zip(("view", "argument"), CASES[case], strict=True):
        src = tmp_path / f"{name}.tile"
        src.write_text(text)
        ptx.append(compile_tile(str(src), {}, "sm_80").ptx)
    assert ".entry" in ptx[0] and "ld.global" in ptx[0]
    assert ptx[0] == ptx[1]  # byte for byte: the same addresses, predicates and vectors


def test_layernorm_with_rank1_weight_and_bias_compiles_for_both_targets() -> None:
    for arch in ("sm_80", "sm_90a"):
        compiled = compile_tile(str(RANK1), {}, arch)
        manifests = {m.entry: m for m in compiled.manifests}
        assert sorted(manifests) == ["rank1_norm", "rank1_scale"]
        for m in manifests.values():
            shapes = {p.name: p.shape for p in m.params if hasattr(p, "shape")}
            assert shapes == {"X": ("R", "N"), "W": ("N",), "B": ("N",), "Y": ("R", "N")}
        # the one-tile kernel: its rows (X's tile at column 0) hold at most COLS columns
        assert [(r.value, r.at_most) for r in manifests["rank1_norm"].requires] == [("N", 1024)]
        assert manifests["rank1_scale"].requires == ()
        assert ".entry rank1_norm" in compiled.ptx and ".entry rank1_scale" in compiled.ptx


def test_a_tile_of_the_added_view_at_a_fixed_coordinate_bounds_the_size(tmp_path: Path) -> None:
    # Only W's row is tiled at a static column: the launch must refuse N > COLS, as for any
    # tensor argument tiled so (the mode of W it names is W's own mode 0).
    src = tmp_path / "fixed.tile"
    src.write_text(
        "kernel k(X: f32[R, N], W: f32[N], Y: f32[R, N]) grid(R, cdiv(N, 256)) threads(128)"
        " target(sm_80) {\n"
        "  let x = load(local_tile(X, (1, 256), (block.x, block.y)))\n"
        "  let w = load(local_tile(prepend(W, 1), (1, 256), (0, 0)), like = x)\n"
        "  store(x + w, local_tile(Y, (1, 256), (block.x, block.y)))\n"
        "}\n"
    )
    (m,) = compile_tile(str(src), {}, "sm_80").manifests
    assert [(r.value, r.at_most) for r in m.requires] == [("N", 256)]
    assert "W is tiled by (1, 256) at coordinate 0 of mode 0" in m.requires[0].why

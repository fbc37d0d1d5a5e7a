"""assume(...): a build's facts about its runtime sizes become launch requirements, so a launch
that breaks one is refused (never run wrong), and a variant(...) routes such launches to a
build without them. CPU only: the bundles are compiled and bound, never launched."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_runtime import FakeCuda

from tilec.build import build
from tilec.runtime import load
from tilec.runtime.binding import bind

# Row strides in elements: 64 keeps 16-byte rows (f16), 68 does not.
SOURCE = """
kernel rows<ALIGN: int = 0>(X: f16[(M, N):(sxm, 1)], Y: f16[(M, N):(sym, 1)])
  grid(cdiv(M, 64)) threads(128) target(sm_80)
  variant(sxm % 8 + sym % 8 == 0, ALIGN = 1)
  assume(ALIGN == 1, sxm % 8 == 0, sym % 8 == 0)
{
  let s = shared<f16>((64, 64))
  copy(local_tile(X, (64, 64), (block.x, 0)), s)
  barrier()
  copy(s, local_tile(Y, (64, 64), (block.x, 0)))
}
"""


def rows(stride: int) -> tuple[FakeCuda, FakeCuda]:
    """X and Y of 128 x 64 f16 elements, rows `stride` elements apart (strides in bytes)."""
    return tuple(FakeCuda((128, 64), strides=(2 * stride, 2)) for _ in range(2))  # type: ignore[return-value]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("assume")
    (root / "rows.tile").write_text(SOURCE)
    (path,) = build(str(root / "rows.tile"), root / "out", {}, "sm_80")
    return path


def test_the_assuming_build_refuses_a_launch_that_breaks_its_facts(bundle: Path) -> None:
    aligned = load(bundle / "variant").manifest
    assert {(r.value, r.at_most) for r in aligned.requires} >= {("sxm % 8", 0), ("sym % 8", 0)}
    assert bind(aligned, rows(64)).symbols["sxm"] == 64
    with pytest.raises(ValueError, match=r"rows: sxm % 8 = 4, but this build handles sxm % 8 == 0"):
        bind(aligned, rows(68))


def test_the_variant_runs_the_assuming_build_only_where_its_facts_hold(bundle: Path) -> None:
    kernel = load(bundle)
    assert not any("%" in str(r.value) for r in kernel.manifest.requires)  # ALIGN = 0: no facts
    assert kernel.variant_for(bind(kernel.manifest, rows(64))) is kernel.others[0]
    assert kernel.variant_for(bind(kernel.manifest, rows(68))) is None

"""GPU tier: a pipeline(...) loop that carries vars (test/gpu/pipelined_rows.tile): an online
softmax whose statistics pass reads the row through a cp.async pipeline 2 or 3 stages deep,
against float64 torch on ragged rows, the output NaN-poisoned. Row lengths cover fewer tiles
than stages, as many, and more, each with a ragged last tile. Bundles:
test/gpu/build_row_bundles.sh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
BUNDLES = sorted(p.name for p in ROWS.glob("pipelined_s*") if (p / "manifest.json").is_file())
if not BUNDLES:
    pytest.skip(f"no pipelined row bundles in {ROWS}", allow_module_level=True)


@pytest.mark.parametrize("bundle", BUNDLES)
@pytest.mark.parametrize("n", [1, 5, 1000, 1024, 1025, 2047, 3000, 4096, 9999])
def test_pipelined_online_softmax(bundle: str, n: int) -> None:
    kernel = load(ROWS / bundle)
    assert int(kernel.manifest.constants["S"]) in (2, 3)
    rows = 19
    g = torch.Generator(device="cuda").manual_seed(n)
    x = (torch.randn(rows, n, device="cuda", generator=g) * 4).half()
    y = torch.full_like(x, float("nan"))
    kernel(x, y)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=1)
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    assert ((y.double() - ref).norm() / ref.norm()).item() < 4e-3

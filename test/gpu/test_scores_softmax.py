"""GPU tier: row reductions of an mma.sync accumulator (test/gpu/scores_softmax.tile): P =
softmax(scale * Q Kᵀ) by rows for one K tile, with 1 or 2 warps a row, against float64 torch
on random ragged shapes, the output NaN-poisoned. Bundles: test/gpu/build_row_bundles.sh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
BUNDLES = sorted(p.name for p in ROWS.glob("scores_*") if (p / "manifest.json").is_file())
if not BUNDLES:
    pytest.skip(f"no scores bundles in {ROWS}", allow_module_level=True)
D = 64


@pytest.mark.parametrize("bundle", BUNDLES)
@pytest.mark.parametrize(("m", "n"), [(64, 64), (1, 1), (100, 37), (257, 64), (33, 9)])
def test_scores_softmax(bundle: str, m: int, n: int) -> None:
    kernel = load(ROWS / bundle)
    bn = int(kernel.manifest.constants["BN"])
    n = min(n if bn == 64 else 2 * n - 1, bn)
    g = torch.Generator(device="cuda").manual_seed(m * 1000 + n)
    q = torch.randn(m, D, device="cuda", generator=g).half()
    k = torch.randn(n, D, device="cuda", generator=g).half()
    p = torch.full((m, n), float("nan"), device="cuda")
    scale = 0.125
    kernel(q, k, p, scale)
    torch.cuda.synchronize()
    ref = torch.softmax(scale * (q.double() @ k.double().T), dim=1)
    assert not torch.isnan(p).any(), "unwritten or NaN outputs"
    err = ((p.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-4, err

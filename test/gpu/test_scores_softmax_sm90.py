"""GPU tier: the SM90 rungs (test/gpu/scores_softmax_sm90.tile): a warp-specialised kernel whose
producer loads Q and K by TMA into an mbarrier ring and whose consumers compute S = Q Kᵀ by
wgmma, mask it by coordinates, take its row max, exp and row sum and store P =
softmax(scale · S) by rows, all lowered by the rungs every kernel shares. Against float64
torch on random ragged shapes (rows not a multiple of the tile, keys fewer than the tile),
the output NaN-poisoned; several tiles a block (the ring's stages wrap over tiles), cooperative
and ping-pong consumers, f16 and bf16. Bundles: test/gpu/build_sm90_rungs_bundles.sh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
if torch.cuda.get_device_capability()[0] < 9:
    pytest.skip("needs an SM90 GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROOT = Path(__file__).resolve().parents[2]
BUNDLES_DIR = Path(os.environ.get("TILEC_SM90_RUNGS", ROOT / "build/sm90_rungs"))
BUNDLES = sorted(
    p.name for p in BUNDLES_DIR.glob("*") if (p / "scores90" / "manifest.json").is_file()
)
if not BUNDLES:
    pytest.skip(f"no bundles in {BUNDLES_DIR}", allow_module_level=True)
SHAPES = [(1, 1), (128, 128), (100, 37), (1000, 77), (4097, 120), (33, 9), (20000, 128)]


@pytest.mark.parametrize("bundle", BUNDLES)
@pytest.mark.parametrize(("m", "n"), SHAPES)
def test_scores_softmax_sm90(bundle: str, m: int, n: int) -> None:
    kernel = load(BUNDLES_DIR / bundle / "scores90")
    constants = kernel.manifest.constants
    bn, d = int(constants["BN"]), int(constants["D"])
    dtype = torch.bfloat16 if bundle.endswith("bf16") else torch.float16  # the build's T
    n = max(1, min(n * bn // 128, bn))
    g = torch.Generator(device="cuda").manual_seed(m * 1009 + n * 7 + d)
    q = torch.randn(m, d, device="cuda", generator=g).to(dtype)
    k = torch.randn(n, d, device="cuda", generator=g).to(dtype)
    p = torch.full((m, n), float("nan"), device="cuda")
    scale = 1.0 / d**0.5
    kernel(q, k, p, scale)
    torch.cuda.synchronize()
    ref = torch.softmax(scale * (q.double() @ k.double().T), dim=1)
    assert not torch.isnan(p).any(), "unwritten or NaN outputs"
    err = ((p.double() - ref).norm() / ref.norm()).item()
    assert err < 1e-4, err

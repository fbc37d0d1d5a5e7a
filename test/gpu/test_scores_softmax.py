"""GPU tier: row reductions of an MMA accumulator. P = softmax(scale * Q Kᵀ) by rows for one K
tile, against float64 torch on random ragged shapes, the output NaN-poisoned:

- test/gpu/scores_softmax.tile (sm_80, mma.sync): 1 or 2 warps a row; bundles
  test/gpu/build_row_bundles.sh (build/rows, or $TILEC_ROW_BUNDLES);
- test/gpu/scores_softmax_sm90.tile (sm_90a, the SM90 rungs): a warp-specialised kernel whose
  producer loads Q and K by TMA into an mbarrier ring and whose consumers compute S by wgmma,
  mask it by coordinates, take its row max, exp and row sum with the rungs every kernel shares;
  several tiles a block (the ring's stages wrap over tiles), cooperative and ping-pong
  consumers, f16 and bf16; bundles test/gpu/build_sm90_rungs_bundles.sh (build/sm90_rungs, or
  $TILEC_SM90_RUNGS).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROOT = Path(__file__).resolve().parents[2]
ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", ROOT / "build/rows"))
SM80 = sorted(p.name for p in ROWS.glob("scores_*") if (p / "manifest.json").is_file())
RUNGS = Path(os.environ.get("TILEC_SM90_RUNGS", ROOT / "build/sm90_rungs"))
SM90 = sorted(p.name for p in RUNGS.glob("*") if (p / "scores90" / "manifest.json").is_file())
HOPPER = torch.cuda.get_device_capability()[0] >= 9


def check(kernel, m: int, n: int, d: int, dtype: torch.dtype, seed: int) -> None:  # noqa: ANN001
    """Launch `kernel` on fresh randn Q (m x d), K (n x d) into NaN-poisoned P; compare."""
    g = torch.Generator(device="cuda").manual_seed(seed)
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


@pytest.mark.parametrize("bundle", SM80)
@pytest.mark.parametrize(("m", "n"), [(64, 64), (1, 1), (100, 37), (257, 64), (33, 9)])
def test_scores_softmax(bundle: str, m: int, n: int) -> None:
    kernel = load(ROWS / bundle)
    bn = int(kernel.manifest.constants["BN"])
    n = min(n if bn == 64 else 2 * n - 1, bn)
    check(kernel, m, n, 64, torch.float16, m * 1000 + n)


@pytest.mark.skipif(not HOPPER, reason="needs an SM90 GPU")
@pytest.mark.parametrize("bundle", SM90)
@pytest.mark.parametrize(
    ("m", "n"), [(1, 1), (128, 128), (100, 37), (1000, 77), (4097, 120), (33, 9), (20000, 128)]
)
def test_scores_softmax_sm90(bundle: str, m: int, n: int) -> None:
    kernel = load(RUNGS / bundle / "scores90")
    bn, d = int(kernel.manifest.constants["BN"]), int(kernel.manifest.constants["D"])
    dtype = torch.bfloat16 if bundle.endswith("bf16") else torch.float16  # the build's T
    n = max(1, min(n * bn // 128, bn))
    check(kernel, m, n, d, dtype, m * 1009 + n * 7 + d)

"""GPU tier: examples/gemm_sm80_splitk.tile and examples/gemm_sm90_splitk.tile (split-K for few
rows) against torch.

Bundles: `bash test/gpu/build_gemm_bundles.sh` (on a machine with MLIR) also writes
build/splitk/[<tile>/]s<S>/gemm_splitk{,_sum}_{sm80,sm90a}, built with SPLITS = S (2, 4, 8 at
the default 16×64 tile; 2 and 4 at 128×128 and 128×256); every such folder is tested. gemm_splitk
multiplies each S-th of K into W[z] (S × M × N, f32); gemm_splitk_sum, a `reduce_sum` over W's
first mode stored straight to C, adds the S partials and scales. gemm90_splitk (sm90a, f16, in
s2/, s4/ and s8/) is the SM90 form, TMA and wgmma, its partials summed by the
same gemm_splitk_sum. W and C are poisoned with NaN,
so a split that owns no k-tile (K of fewer than S tiles) must still write its zeros, and every
output must be written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROOT = Path(
    os.environ.get("TILEC_SPLITK_BUNDLES", Path(__file__).resolve().parents[2] / "build/splitk")
)
# (kernel, arch, folder) of every split-K GEMM bundle: the SM80 kernel for both targets, the
# SM90 one for sm90a, each folder (s4, m128n128/s2, ...) holding the sum kernel for its S.
BUILT = ROOT.glob("**/gemm*_splitk_sm*/manifest.json")
CASES = sorted(
    (*p.parent.name.rsplit("_", 1), str(p.parent.parent.relative_to(ROOT))) for p in BUILT
)
if not CASES:
    pytest.skip(f"no split-K bundles in {ROOT}", allow_module_level=True)

# Decode shapes, ragged ones, K of one k-tile (S - 1 empty splits), 520 = 8 k-tiles + 8 (four
# ways: runs of 3, 3, 3 and none), and K = 4104 (the last run ragged).
SHAPES = [
    (16, 4096, 4096),
    (1, 1, 8),
    (16, 64, 64),
    (33, 200, 1000),
    (100, 300, 520),
    (7, 130, 4104),
]


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def splitk(
    folder: Path, arch: str, a: object, b: object, c: object, alpha: float,
    kernel: str = "gemm_splitk",
) -> tuple[object, int, int]:  # fmt: skip
    """Runs both kernels; returns the workspace, the split count (the sum's W extent) and BK."""
    gemm, total = load(folder / f"{kernel}_{arch}"), load(folder / f"gemm_splitk_sum_{arch}")
    splits = total.manifest.params[0].shape[0]
    m, n = c.shape
    w = torch.full((splits, m, n), float("nan"), device="cuda", dtype=torch.float32)
    gemm(a, b, w)
    total(w.view(splits, m * n), c.view(m * n), alpha)
    return w, splits, gemm.manifest.constants["BK"]


@pytest.mark.parametrize(("kernel", "arch", "folder"), CASES)
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_splitk_matches_torch(kernel: str, arch: str, folder: str, m: int, n: int, k: int) -> None:
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch.float16)
    b = torch.randn(n, k, device="cuda", generator=g).to(torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    w, splits, bk = splitk(ROOT / folder, arch, a, b, c, 1.5, kernel)
    torch.cuda.synchronize()
    assert not torch.isnan(w).any(), "unwritten partial products"
    assert not torch.isnan(c).any(), "unwritten outputs"
    # Each split's partial product on its own, then the scaled sum.
    per = cdiv(cdiv(k, bk), splits) * bk  # elements of K per split, as the kernel counts them
    for z in range(splits):
        lo, hi = min(z * per, k), min((z + 1) * per, k)
        part = a[:, lo:hi].double() @ b[:, lo:hi].double().T
        scale = max(part.norm().item(), 1.0)
        assert (w[z].double() - part).norm().item() / scale < 1e-5, f"split {z}"
    ref = 1.5 * (a.double() @ b.double().T)
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 2e-3, err

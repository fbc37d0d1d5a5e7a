"""GPU tier: the SM80 GEMM example from its bundle against torch, on random ragged shapes.

Bundle: `tilec build examples/gemm_sm80.tile -o build/gemm --arch sm_80` (and sm_90a), on a
machine with MLIR. C = alpha * A @ B^T with A M×K, B N×K row-major, f16 in, f32 accumulate.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

BUNDLES = Path(
    os.environ.get("TILEC_GEMM_BUNDLES", Path(__file__).resolve().parents[2] / "build/gemm")
)
NAMES = [n for n in ("gemm_sm80", "gemm_sm90a") if (BUNDLES / n / "manifest.json").is_file()]
if not NAMES:
    pytest.skip(f"no GEMM bundles in {BUNDLES}", allow_module_level=True)

SHAPES = [(128, 128, 32), (256, 384, 512), (1, 1, 8), (129, 257, 72), (1000, 999, 1024)]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_gemm_matches_torch(name: str, m: int, n: int, k: int) -> None:
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = torch.randn(m, k, device="cuda", generator=g).half()
    b = torch.randn(n, k, device="cuda", generator=g).half()
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    load(BUNDLES / name)(a, b, c, 1.5)
    torch.cuda.synchronize()
    ref = 1.5 * (a.double() @ b.double().T)
    assert not torch.isnan(c).any(), "unwritten outputs"
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 2e-3, err

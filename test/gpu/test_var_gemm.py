"""GPU tier: test/gpu/var_gemm.tile, a K loop carrying a var (a count of its steps) beside the
gemm's accumulator, against torch on random ragged shapes with NaN-poisoned outputs. Bundle:
test/gpu/build_row_bundles.sh (build/rows/var_gemm_*)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
BUNDLES = sorted(p.name for p in ROWS.glob("var_gemm_*") if (p / "manifest.json").is_file())
if not BUNDLES:
    pytest.skip(f"no var_gemm bundles in {ROWS}", allow_module_level=True)


@pytest.mark.parametrize("bundle", BUNDLES)
@pytest.mark.parametrize(
    ("m", "n", "k"), [(64, 64, 32), (100, 70, 200), (1, 130, 8), (257, 64, 96)]
)
def test_var_beside_accumulator(bundle: str, m: int, n: int, k: int) -> None:
    kernel = load(ROWS / bundle)
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = torch.randn(m, k, device="cuda", generator=g).half()
    b = torch.randn(n, k, device="cuda", generator=g).half()
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    kernel(a, b, c)
    torch.cuda.synchronize()
    ref = (a.double() @ b.double().T) / -(-k // 32)
    assert not torch.isnan(c).any(), "unwritten or NaN outputs"
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < 3e-3, err

"""GPU tier: examples/attention_step.tile, attention's inner step fused (S = Q Kᵀ, P = row
softmax of scale * S in registers, O = P V with P as the A operand from registers), against
float64 torch on random ragged shapes with NaN-poisoned outputs. Bundles:
test/gpu/build_row_bundles.sh (build/rows/attention_*)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
BUNDLES = sorted(p.name for p in ROWS.glob("attention_*") if (p / "manifest.json").is_file())
if not BUNDLES:
    pytest.skip(f"no attention bundles in {ROWS}", allow_module_level=True)
D = 64


@pytest.mark.parametrize("bundle", BUNDLES)
@pytest.mark.parametrize(("m", "n"), [(64, 64), (1, 1), (100, 37), (300, 64), (65, 9)])
def test_attention_step(bundle: str, m: int, n: int) -> None:
    kernel = load(ROWS / bundle)
    bn = int(kernel.manifest.constants["BN"])
    n = min(n if bn == 64 else 2 * n - 1, bn)
    dtype = torch.bfloat16 if "bf16" in bundle else torch.float16
    g = torch.Generator(device="cuda").manual_seed(m * 1000 + n)
    q, k, v = (torch.randn(r, D, device="cuda", generator=g).to(dtype) for r in (m, n, n))
    o = torch.full((m, D), float("nan"), device="cuda", dtype=dtype)
    scale = D**-0.5
    kernel(q, k, v, o, scale)
    torch.cuda.synchronize()
    p = torch.softmax(scale * (q.double() @ k.double().T), dim=1)
    ref = p @ v.double()
    assert not torch.isnan(o).any(), "unwritten or NaN outputs"
    err = ((o.double() - ref).norm() / ref.norm()).item()
    assert err < (2e-2 if dtype == torch.bfloat16 else 3e-3), err

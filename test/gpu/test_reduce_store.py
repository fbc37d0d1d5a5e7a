"""GPU tier: reductions stored straight to memory (test/gpu/reduce_store.tile) against torch.

Bundles: `python test/gpu/build_bundles.py` (on a machine with MLIR) writes
build/bundles/reduce/<kernel>_<arch>. Each kernel reduces along a mode that lies in a different
place (a thread's registers; lanes and warps), on random data with ragged edges; the outputs
are poisoned with NaN first and the elements past the edge must stay NaN, so a result written
twice, never, or out of bounds fails.
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
    os.environ.get(
        "TILEC_REDUCE_BUNDLES", Path(__file__).resolve().parents[2] / "build/bundles/reduce"
    )
)
ARCHS = [a for a in ("sm80", "sm90a") if (ROOT / f"colsum_{a}" / "manifest.json").exists()]
if not ARCHS:
    pytest.skip(f"no reduction bundles in {ROOT}", allow_module_level=True)


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).to(dtype)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("p", [512, 1000, 4096 + 7, 3])
def test_colsum(arch: str, p: int) -> None:
    x = randn(8, p, seed=p)
    # One output element past the tensor's end, poisoned, must stay so.
    out = torch.full((p + 1,), float("nan"), device="cuda", dtype=torch.float16)
    load(ROOT / f"colsum_{arch}")(x, out[:p])
    torch.cuda.synchronize()
    ref = x.double().sum(0)
    assert torch.isnan(out[p]), "wrote past the end"
    assert not torch.isnan(out[:p]).any(), "unwritten sums"
    assert torch.allclose(out[:p].double(), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("r", [1, 5, 300])
def test_rowmax(arch: str, r: int) -> None:
    x = randn(r, 1024, seed=r)
    y = torch.full((r, 1), float("nan"), device="cuda")
    load(ROOT / f"rowmax_{arch}")(x, y, -0.5)
    torch.cuda.synchronize()
    ref = -0.5 * x.max(1, keepdim=True).values
    assert torch.equal(y, ref)  # max and one multiply are exact


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n", [64, 100, 640, 1031])
def test_colmin(arch: str, n: int) -> None:
    x = randn(32, n, seed=n, dtype=torch.float16)
    out = torch.full((n + 8,), float("nan"), device="cuda", dtype=torch.float16)
    load(ROOT / f"colmin_{arch}")(x, out[:n])
    torch.cuda.synchronize()
    assert torch.isnan(out[n:]).all(), "wrote past the end"
    assert torch.equal(out[:n], x.min(0).values)  # a minimum of f16 values is one of them

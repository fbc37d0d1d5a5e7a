"""GPU tier: relayout (test/gpu/relayout.tile) against torch.

Bundles: `python test/gpu/build_bundles.py` (on a machine with MLIR) writes
build/bundles/relayout/<kernel>_<arch>. `transpose2` relays two tiles a block, one after the
other through one buffer (a relayout without its first barrier would let the second tile's
writes overtake the first's reads); `mma_relayout` relays a loaded tile to an MMA accumulator's
spread (like = acc) and the sum back to a load's; `relayout_sweep` copies X to Y through a
relayout for each buffer layout, spread pair and element type of test/gpu/relayout_sweep.tile,
which must be exact. Random data, ragged shapes, outputs poisoned with NaN, and the elements
past the output's end must stay NaN.
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
        "TILEC_RELAYOUT_BUNDLES", Path(__file__).resolve().parents[2] / "build/bundles/relayout"
    )
)
ARCHS = [a for a in ("sm80", "sm90a") if (ROOT / f"transpose2_{a}" / "manifest.json").exists()]
if not ARCHS:
    pytest.skip(f"no relayout bundles in {ROOT}", allow_module_level=True)
TAIL = 64  # poisoned elements past each output
SWEEP = sorted(p.name for p in (ROOT.parent / "relayout_sweep").glob("*") if p.is_dir())
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).to(dtype)


def poisoned(rows: int, cols: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A NaN-filled (rows, cols) f32 tensor and the buffer it starts, TAIL elements longer."""
    buf = torch.full((rows * cols + TAIL,), float("nan"), device="cuda")
    return buf[: rows * cols].view(rows, cols), buf


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n", [(64, 64), (128, 192), (100, 70), (1, 130), (300, 257)])
def test_transpose2(arch: str, m: int, n: int) -> None:
    x = randn(m, n, seed=m * 1000 + n)
    y, buf = poisoned(n, m)
    load(ROOT / f"transpose2_{arch}")(x, y)
    torch.cuda.synchronize()
    assert torch.isnan(buf[n * m :]).all(), "wrote past the end"
    assert torch.equal(y, 2.0 * x.t())  # a doubling is exact


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("m,n,k", [(64, 64, 32), (128, 128, 96), (100, 72, 40), (130, 200, 200)])
def test_mma_relayout(arch: str, m: int, n: int, k: int) -> None:
    seed = m * 7 + n * 13 + k
    a = randn(m, k, seed=seed, dtype=torch.float16)
    b = randn(n, k, seed=seed + 1, dtype=torch.float16)
    x = randn(m, n, seed=seed + 2)
    c, buf = poisoned(m, n)
    load(ROOT / f"mma_relayout_{arch}")(a, b, x, c)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().t() + x.double()
    assert torch.isnan(buf[m * n :]).all(), "wrote past the end"
    assert not torch.isnan(c).any(), "unwritten elements"
    assert torch.allclose(c.double(), ref, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("variant", SWEEP)
@pytest.mark.parametrize("m,n", [(64, 128), (45, 100), (300, 70)])
def test_relayout_sweep(variant: str, m: int, n: int) -> None:
    dtype = DTYPES[variant.rsplit("_", 1)[1]]
    x = randn(m, n, seed=m + n, dtype=dtype)
    z = torch.empty(n, m, device="cuda", dtype=dtype).t()  # column-major: only its spread counts
    buf = torch.full((m * n + TAIL,), float("nan"), device="cuda", dtype=dtype)
    y = buf[: m * n].view(m, n)
    load(ROOT.parent / "relayout_sweep" / variant / "relayout_sweep_sm90a")(x, z, y)
    torch.cuda.synchronize()
    assert torch.isnan(buf[m * n :]).all(), "wrote past the end"
    assert torch.equal(y, x)  # moved, never computed on

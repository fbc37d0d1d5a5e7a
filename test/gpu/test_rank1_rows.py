"""GPU tier: rank-1 weights and biases meeting row tiles through `prepend(W, 1)`
(test/gpu/rank1_rows.tile) against float64 torch on random data with NaN-poisoned outputs, on
ragged rows: the kernels take w and b as the 1-d tensors they are.

Bundles: `test/gpu/build_row_bundles.sh` builds build/rows/rank1_{norm,scale}_<arch> on a
machine with MLIR; this file needs only the runtime, torch and a GPU.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
ARCH = os.environ.get("ARCH", "sm_90a").replace("_", "")
if not (ROWS / f"rank1_norm_{ARCH}" / "manifest.json").is_file():
    pytest.skip(f"no rank-1 row bundles in {ROWS}", allow_module_level=True)
EPS = 1e-5


def rand(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g)


def operands(r: int, n: int, seed: int) -> tuple[torch.Tensor, ...]:
    x = rand(r, n, seed=seed).half()
    w = (1 + rand(n, seed=seed + 1) / 4).half()
    b = rand(n, seed=seed + 2).half()
    y = torch.full_like(x, float("nan"))
    return x, w, b, y


@pytest.mark.parametrize(("r", "n"), [(3, 1024), (5, 1000), (2, 777), (4, 1), (1, 33)])
def test_layernorm_with_rank1_weight_and_bias(r: int, n: int) -> None:
    kernel = load(ROWS / f"rank1_norm_{ARCH}")
    x, w, b, y = operands(r, n, seed=r * n)
    kernel(x, w, b, y, EPS)
    torch.cuda.synchronize()
    xd = x.double()
    mu = xd.mean(dim=1, keepdim=True)
    var = ((xd - mu) ** 2).mean(dim=1, keepdim=True)
    want = (xd - mu) / torch.sqrt(var + EPS) * w.double() + b.double()
    assert not torch.isnan(y).any(), "an element of a row was not written"
    torch.testing.assert_close(y.double(), want, atol=2e-2, rtol=1e-2)


@pytest.mark.parametrize(("r", "n"), [(3, 512), (2, 513), (4, 1500), (1, 5), (6, 2048)])
def test_scale_shift_with_rank1_weight_and_bias_over_tiles(r: int, n: int) -> None:
    kernel = load(ROWS / f"rank1_scale_{ARCH}")
    x, w, b, y = operands(r, n, seed=r + n)
    kernel(x, w, b, y)
    torch.cuda.synchronize()
    want = x.double() * w.double() + b.double()
    assert not torch.isnan(y).any(), "an element of a row was not written"
    torch.testing.assert_close(y.double(), want, atol=2e-3, rtol=2e-3)


def test_a_row_longer_than_the_tile_is_refused_at_launch() -> None:
    # rank1_norm reads one tile a row: N <= COLS (1024), which the launch checks.
    kernel = load(ROWS / f"rank1_norm_{ARCH}")
    x, w, b, y = operands(2, 1025, seed=7)
    with pytest.raises(ValueError, match="N = 1025, but this build handles N <= 1024 only"):
        kernel(x, w, b, y, EPS)

"""GPU tier: the memory-bound examples, run from bundles, against torch on random ragged data.

Bundles come from `tilec build examples/vadd.tile examples/transpose.tile
examples/softmax.tile -o build/examples --arch sm_90a` (and `--arch sm_80`) on a machine with
MLIR; this file needs only the runtime, torch and a GPU.
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
    os.environ.get("TILEC_EXAMPLE_BUNDLES", Path(__file__).resolve().parents[2] / "build/examples")
)
ARCHES = [a for a in ("sm90a", "sm80") if (BUNDLES / f"vadd_{a}" / "manifest.json").is_file()]
if not ARCHES:
    pytest.skip(f"no example bundles in {BUNDLES}", allow_module_level=True)


def rand(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).to(dtype)


def poisoned(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("n", [1, 1000, 4095, 4097, 1_000_003, (1 << 22) + 5])
def test_vadd(arch: str, n: int) -> None:
    kernel = load(BUNDLES / f"vadd_{arch}")
    x, y, out = rand(n, seed=n), rand(n, seed=n + 1), poisoned(n + 64)
    kernel(x, y, out[:n])
    torch.cuda.synchronize()
    assert torch.equal(out[:n], x + y)
    assert torch.isnan(out[n:]).all(), "wrote past the end"


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize(("m", "n"), [(1, 1), (33, 65), (64, 64), (1000, 777), (2048, 4100)])
def test_transpose(arch: str, m: int, n: int) -> None:
    kernel = load(BUNDLES / f"transpose_{arch}")
    x, y = rand(m, n, seed=m * n), poisoned(n, m)
    kernel(x, y)
    torch.cuda.synchronize()
    assert torch.equal(y, x.t())


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize(("rows", "cols"), [(1, 4096), (3, 1000), (129, 4096), (1000, 2049)])
def test_softmax(arch: str, rows: int, cols: int) -> None:
    kernel = load(BUNDLES / f"softmax_{arch}")
    x = (rand(rows, cols, seed=rows + cols) * 3).to(torch.float16)
    y = poisoned(rows, cols, dtype=torch.float16)
    kernel(x, y)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=1)
    err = ((y.double() - ref).norm() / ref.norm()).item()
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    assert err < 2e-3, err


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("cols", [4097, 8192, 10000])
def test_softmax_rows_longer_than_the_tile(arch: str, cols: int) -> None:
    # The build's tile is COLS = 4096 columns. The one-tile kernel refused longer rows at launch
    # (before that, they came back NaN); the online kernel walks the row in tiles, carrying the
    # running max and sum, so any N works.
    kernel = load(BUNDLES / f"softmax_{arch}")
    x = (rand(5, cols, seed=cols) * 3).to(torch.float16)
    y = poisoned(5, cols, dtype=torch.float16)
    kernel(x, y)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=1)
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    assert ((y.double() - ref).norm() / ref.norm()).item() < 2e-3

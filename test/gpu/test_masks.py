"""GPU tier: loads and stores with explicit predicates (`mask =`, test/gpu/masks.tile) against
torch on random data with NaN-poisoned outputs: a masked-off element of a load reads `other`,
one of a store is not written (it stays NaN). Bundles: test/gpu/build_row_bundles.sh."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
if not (ROWS / "masks_rows_sm90a" / "manifest.json").is_file():
    pytest.skip(f"no mask bundles in {ROWS}", allow_module_level=True)
D = 64


def rand(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g)


@pytest.mark.parametrize(
    ("r", "n", "lo", "hi"),
    [(5, 1024, 100, 900), (3, 1000, 0, 1024), (7, 333, 17, 200), (2, 1024, 1024, 1), (4, 8, 3, 6)],
)
def test_rows_masked(r: int, n: int, lo: int, hi: int) -> None:
    kernel = load(ROWS / "masks_rows_sm90a")
    x = rand(r, n, seed=r * n + lo).half()
    y = torch.full_like(x, float("nan"))
    kernel(x, y, lo, hi)
    torch.cuda.synchronize()
    cols = torch.arange(n, device="cuda")
    z = torch.where(cols >= lo, x, torch.full_like(x, 7.0))
    want = z * 2 + x  # in f16, as the kernel computes it (x 2 is exact, + rounds once)
    written = cols < hi
    assert torch.equal(y[:, written], want[:, written])
    assert torch.isnan(y[:, ~written]).all(), "a masked-off element was written"


@pytest.mark.parametrize(("m", "n", "nb"), [(64, 64, 64), (100, 64, 13), (37, 50, 0), (200, 7, 5)])
def test_causal_store_of_an_accumulator(m: int, n: int, nb: int) -> None:
    kernel = load(ROWS / "masks_causal_sm90a")
    q, k = rand(m, D, seed=m).half(), rand(n, D, seed=n + 1).half()
    bias = rand(m, n, seed=m + n)
    s = torch.full((m, n), float("nan"), device="cuda")
    kernel(q, k, bias, s, nb)
    torch.cuda.synchronize()
    rows, cols = torch.arange(m, device="cuda")[:, None], torch.arange(n, device="cuda")[None, :]
    b = torch.where(cols < nb, bias.double(), torch.full_like(bias.double(), 0.5))
    ref = q.double() @ k.double().T + b
    kept = (rows >= cols).expand(m, n)
    assert torch.isnan(s[~kept]).all(), "an element above the diagonal was written"
    assert not torch.isnan(s[kept]).any(), "an element on or below the diagonal was not written"
    err = ((s[kept].double() - ref[kept]).norm() / ref[kept].norm()).item()
    assert err < 1e-5, err

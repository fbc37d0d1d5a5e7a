"""GPU tier: shared buffers with negative strides (test/gpu/negative_stride.tile) against numpy.

Bundles: `python test/gpu/build_bundles.py` (on a machine with MLIR) writes
build/bundles/negative_stride/<kernel>_<arch>. Each kernel fills a shared buffer through a
layout with a negative stride and reads it back through the same view (T, a transpose) and
through a row-major view of its memory (R), which shows where every element landed: the buffer
must span its offsets' range, based at its start minus the lowest offset. Outputs are poisoned
with NaN first; R is compared where its tile's source element lies inside X.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROOT = Path(
    os.environ.get(
        "TILEC_NEGATIVE_STRIDE_BUNDLES",
        Path(__file__).resolve().parents[2] / "build/bundles/negative_stride",
    )
)
ARCHS = [a for a in ("sm80", "sm90a") if (ROOT / f"flip_rows_{a}" / "manifest.json").exists()]
if not ARCHS:
    pytest.skip(f"no negative-stride bundles in {ROOT}", allow_module_level=True)

TILE = 64


def sw222(v: np.ndarray) -> np.ndarray:
    """Sw<2,2,2>: bits 4-5 xor-ed into bits 2-3 (two's complement, as the layout algebra)."""
    return v ^ ((v & 0x30) >> 2)


# kernel -> where element (r, c) of a 64x64 tile lands in its buffer, counted from the start
PLACES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "flip_rows": lambda r, c: 4032 - 64 * r + c,  # (64,64):(-64,1), floor -4032
    "flip_cols": lambda r, c: 64 * r + 63 - c,  # (64,64):(64,-1), floor -63
    "flip_swizzled": lambda r, c: sw222(-64 * r + c) + 4032,  # Sw<2,2,2> o (64,64):(-64,1)
}


def raw_reference(x: np.ndarray, kernel: str) -> np.ndarray:
    """R: every tile of x as its buffer holds it, read row-major; NaN where the buffer's element
    came from outside x (a ragged tile's missing rows or columns are never loaded)."""
    m, n = x.shape
    r, c = np.meshgrid(np.arange(TILE), np.arange(TILE), indexing="ij")
    place = PLACES[kernel](r, c)
    assert sorted(place.ravel().tolist()) == list(range(TILE * TILE))  # the buffer, all of it
    out = np.full((m, n), np.nan)
    for i in range(0, m, TILE):
        for j in range(0, n, TILE):
            tile = np.full((TILE, TILE), np.nan)
            src = np.full((TILE, TILE), np.nan)
            src[: min(TILE, m - i), : min(TILE, n - j)] = x[i : i + TILE, j : j + TILE]
            tile.ravel()[place.ravel()] = src.ravel()
            out[i : i + TILE, j : j + TILE] = tile[: min(TILE, m - i), : min(TILE, n - j)]
    return out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("kernel", list(PLACES))
@pytest.mark.parametrize("shape", [(64, 64), (128, 192), (100, 70), (61, 131), (3, 64)])
def test_negative_stride_buffer(arch: str, kernel: str, shape: tuple[int, int]) -> None:
    m, n = shape
    g = torch.Generator(device="cuda").manual_seed(m * 1000 + n)
    x = torch.randn(m, n, device="cuda", generator=g)
    t = torch.full((n, m), float("nan"), device="cuda")
    # R one row longer than X, poisoned: the last row must stay so.
    r = torch.full((m + 1, n), float("nan"), device="cuda")
    args = [x, t, r[:m]]
    if kernel == "flip_rows":
        args.append(torch.full((m, n), float("nan"), device="cuda"))
    load(ROOT / f"{kernel}_{arch}")(*args)
    torch.cuda.synchronize()
    assert torch.equal(t, x.T), "the view does not read back what it wrote"
    assert torch.isnan(r[m]).all(), "wrote past the end of R"
    want = raw_reference(x.cpu().numpy().astype(np.float64), kernel)
    got = r[:m].cpu().numpy().astype(np.float64)
    known = ~np.isnan(want)
    # a row-reversed tile of few rows puts them all past M: only T and the poison check it
    assert known.any() or (kernel != "flip_cols" and m < TILE // 2)
    np.testing.assert_array_equal(got[known], want[known])  # the elements' places in memory
    if kernel == "flip_rows":  # a buffer beside s, filled from X: nothing of s spilled into it
        assert torch.equal(args[3], x)

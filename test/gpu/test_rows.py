"""GPU tier: row kernels for any N (examples/softmax.tile, examples/layernorm.tile), whose loops
carry running sums (`var`), against float64 torch on random data with NaN-poisoned outputs.

Bundles: `test/gpu/build_row_bundles.sh` builds build/rows/{softmax,layernorm}_c{COLS}_{arch}
(COLS 1024, 4096, 8192; layernorm also in bf16), and `_c{COLS}s{SPLIT}_` ones whose rows are
split over a cluster of SPLIT blocks (sm_90a), on a machine with MLIR; this file needs only
the runtime, torch and a GPU. Row lengths cover one tile, one tile and one column, many tiles
and a ragged last tile, for each COLS. Both kernels have `specialize(N <= COLS)`: a row of one
tile launches the specialised variant (no loops), a longer one the general PTX; each test
checks which one ran.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
BUNDLES = sorted(p.name for p in ROWS.glob("*_c*_*") if (p / "manifest.json").is_file())
if not BUNDLES:
    pytest.skip(f"no row bundles in {ROWS}", allow_module_level=True)
EPS = 1e-5


def cols_of(bundle: str) -> int:
    """The columns a block of the bundle covers at once: COLS, times SPLIT for a bundle of a
    cluster of SPLIT blocks a row (`softmax_c16384s2`: 32768)."""
    m = re.match(r"c(\d+)(?:s(\d+))?", bundle.split("_")[1])
    return int(m.group(1)) * int(m.group(2) or 1)


def cases(kernel: str) -> list[tuple[str, int, int]]:
    """(bundle, rows, N) for every bundle of `kernel`: N around and across its tile width."""
    out = []
    for name in (b for b in BUNDLES if b.startswith(kernel + "_")):
        cols = cols_of(name)
        # 1000, 3 * cols: whole 16-byte runs at the edge; 998, 1020, cols + 2: 4-byte runs
        # (or single elements, past 16 runs a thread); odd N: element by element.
        ns = {1, 7, 998, 1000, 1020, cols - 1, cols, cols + 1, cols + 2, 2 * cols + 3, 3 * cols}
        for n in sorted(ns):
            out.append((name, 3 if n > 4 * cols else 37, n))
    return out


def dtype_of(name: str) -> torch.dtype:
    return torch.bfloat16 if "bf16" in name else torch.float16


def rand(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g)


def rel_err(y: torch.Tensor, ref: torch.Tensor) -> float:
    return ((y.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize(("bundle", "rows", "n"), cases("softmax"))
def test_softmax_any_n(bundle: str, rows: int, n: int) -> None:
    kernel = load(ROWS / bundle)
    x = (rand(rows, n, seed=rows * n) * 4).to(dtype_of(bundle))
    y = torch.full_like(x, float("nan"))
    assert kernel.bind(x, y).special == (n <= cols_of(bundle)), "the wrong variant launches"
    kernel(x, y)
    torch.cuda.synchronize()
    ref = torch.softmax(x.double(), dim=1)
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    assert rel_err(y, ref) < 4e-3
    assert (y.double().sum(1) - 1).abs().max().item() < 2e-2, "rows do not sum to 1"


@pytest.mark.parametrize(("bundle", "rows", "n"), cases("layernorm"))
def test_layernorm_any_n(bundle: str, rows: int, n: int) -> None:
    kernel = load(ROWS / bundle)
    dt = dtype_of(bundle)
    # An offset mean: a one-pass E[x^2] - mean^2 variance would lose it to cancellation.
    x = (rand(rows, n, seed=n) * 2 + 3).to(dt)
    w = (1 + 0.1 * rand(n, seed=n + 1)).to(dt)
    b = (0.1 * rand(n, seed=n + 2)).to(dt)
    y = torch.full_like(x, float("nan"))
    args = (x, w.expand(rows, n), b.expand(rows, n), y, EPS)
    assert kernel.bind(*args).special == (n <= cols_of(bundle)), "the wrong variant launches"
    kernel(*args)
    torch.cuda.synchronize()
    ref = torch.nn.functional.layer_norm(x.double(), (n,), w.double(), b.double(), EPS)
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    assert rel_err(y, ref) < (1e-2 if dt == torch.bfloat16 else 2e-3)

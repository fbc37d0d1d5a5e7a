"""GPU tier: examples/gemm_sm80.tile from its bundles against torch, on random ragged shapes.

Bundles: `bash test/gpu/build_gemm_bundles.sh` (on a machine with MLIR) writes build/gemm/<name>/
gemm_sm80: `default_sm80`, `default_sm90a`, and `a<MA>b<MB>_<T>` for each operand layout and
element type. C = alpha * A @ B^T with A M×K, B N×K, f32 accumulate; MA = 1 hands A over as the
transpose of a row-major K×M tensor (M contiguous), MB = 1 likewise B (N contiguous).
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

ROOT = Path(
    os.environ.get("TILEC_GEMM_BUNDLES", Path(__file__).resolve().parents[2] / "build/gemm")
)
# Each name's folder holds one bundle (gemm_sm80 or gemm_sm90a, after the target).
BUNDLES = {p.parent.parent.name: p.parent for p in ROOT.glob("*/*/manifest.json")}
NAMES = sorted(BUNDLES)
if not NAMES:
    pytest.skip(f"no GEMM bundles in {ROOT}", allow_module_level=True)

# Whole tiles everywhere (pipeline-steady-state's fast loop in every block), ragged M, N and
# K (edge blocks run the general loop), a ragged K under whole M and N tiles (1000 = 15 × 64
# + 40: the ragged k-tile, walked first, is copied in the prologue and every block runs the
# fast loop; with BK = 32 the same), and K = 45, 46, 44: rows 90, 92, 88 bytes apart are not
# 16-byte aligned, so the copies go element by element, or (bundles without prefetch) with
# 4- and 8-byte cp.async.
SHAPES = [
    (128, 128, 32),
    (512, 512, 256),
    (256, 384, 512),
    (256, 512, 1000),
    (1, 1, 8),
    (129, 257, 72),
    (130, 260, 45),
    (129, 258, 46),
    (131, 262, 44),
    (1000, 999, 1024),
]
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
# Relative Frobenius error bounds against an f64 reference: the output's rounding dominates.
BOUNDS = {"f16": 2e-3, "bf16": 1e-2}


def layout(name: str) -> tuple[int, int, str]:
    """(MA, MB, T) of a bundle named a<MA>b<MB>_<T>[_...]; the others are K-major f16."""
    m = re.fullmatch(r"a([01])b([01])_(f16|bf16)(_\w+)?", name)
    return (int(m[1]), int(m[2]), m[3]) if m else (0, 0, "f16")


def operand(rows: int, k: int, mn_major: int, dtype: torch.dtype, g: object) -> torch.Tensor:
    """A rows×K operand, K contiguous, or (mn_major) the transpose of a K×rows tensor."""
    if mn_major:
        return torch.randn(k, rows, device="cuda", generator=g).to(dtype).T
    return torch.randn(rows, k, device="cuda", generator=g).to(dtype)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_gemm_matches_torch(name: str, m: int, n: int, k: int) -> None:
    ma, mb, t = layout(name)
    g = torch.Generator(device="cuda").manual_seed(m * 7 + n * 3 + k)
    a = operand(m, k, ma, DTYPES[t], g)
    b = operand(n, k, mb, DTYPES[t], g)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=DTYPES[t])
    load(BUNDLES[name])(a, b, c, 1.5)
    torch.cuda.synchronize()
    ref = 1.5 * (a.double() @ b.double().T)
    assert not torch.isnan(c).any(), "unwritten outputs"
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err < BOUNDS[t], err

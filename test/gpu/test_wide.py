"""GPU tier: tensors past 2^31 elements run the bundles' wide (64-bit index) variant, checked at
the tail, where a 32-bit offset would have wrapped.

Bundles: `tilec build examples/vadd.tile -o build/examples --arch sm_90a` (and `--arch sm_80`)
and `bash test/gpu/build_gemm_bundles.sh` (build/gemm/default_sm90a/gemm_sm90a), on a machine
with MLIR; `TILEC_EXAMPLE_BUNDLES` and `TILEC_GEMM_BUNDLES` point elsewhere. Each test needs
tens of GB of free GPU memory and skips without them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)
from tilec.runtime.binding import INDEX_LIMIT  # noqa: E402

BUILD = Path(__file__).resolve().parents[2] / "build"
EXAMPLES = Path(os.environ.get("TILEC_EXAMPLE_BUNDLES", BUILD / "examples"))
GEMMS = Path(os.environ.get("TILEC_GEMM_BUNDLES", BUILD / "gemm"))
GB = 10**9


def bundle(path: Path) -> Path:
    if not (path / "manifest.json").is_file():
        pytest.skip(f"no bundle at {path}")
    return path


def need_free(nbytes: int) -> None:
    free, _ = torch.cuda.mem_get_info()
    if free < nbytes:
        pytest.skip(f"needs {nbytes / GB:.0f} GB of free GPU memory, {free / GB:.0f} GB free")


@pytest.mark.parametrize("arch", ["sm90a", "sm80"])
def test_vadd_past_2_31_elements(arch: str) -> None:
    """x + y over 2^31 + 4099 f32 (8.6 GB a tensor): the last 4099 lie past the 32-bit index,
    and the last block is ragged (4099 = 4096 + 3)."""
    kernel = load(bundle(EXAMPLES / f"vadd_{arch}"))
    n = INDEX_LIMIT + 4099
    need_free(40 * GB)  # x, y, out (+64 poisoned) and x + y: 4 × 8.6 GB
    g = torch.Generator(device="cuda").manual_seed(31)
    x = torch.randn(n, device="cuda", generator=g)
    y = torch.randn(n, device="cuda", generator=g)
    out = torch.full((n + 64,), float("nan"), device="cuda")
    assert kernel.bind(x, y, out[:n]).wide, "the launch must take the wide variant"
    kernel(x, y, out[:n])
    torch.cuda.synchronize()
    tail = slice(INDEX_LIMIT - 4096, n)
    assert torch.equal(out[tail], x[tail] + y[tail]), "the tail past 2^31 is wrong"
    assert torch.isnan(out[n:]).all(), "wrote past the end"
    assert torch.equal(out[:n], x + y)


def test_vadd_below_2_31_takes_the_ordinary_ptx() -> None:
    kernel = load(bundle(EXAMPLES / "vadd_sm90a"))
    x = torch.randn(1 << 20, device="cuda")
    assert not kernel.bind(x, x, torch.empty_like(x)).wide


def test_gemm_with_a_past_2_31_elements() -> None:
    """C = 1.5 · A @ Bᵀ with A 540000×4096 f16 (2.2·10⁹ elements, 4.4 GB): rows from 524288 on
    start past 2^31 elements. Checked on the tail rows (the last block is ragged: 540000 =
    4218 · 128 + 96), the rows around 2^31 and random rows, against float64."""
    kernel = load(bundle(GEMMS / "default_sm90a" / "gemm_sm90a"))
    m, n, k = 540_000, 256, 4096
    need_free(40 * GB)  # A 4.4 GB, C 0.3 GB: ample room
    g = torch.Generator(device="cuda").manual_seed(540)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=torch.float16, generator=g)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    assert a.numel() >= 2.2e9 and kernel.bind(a, b, c, 1.5).wide
    kernel(a, b, c, 1.5)
    torch.cuda.synchronize()
    assert not torch.isnan(c).any(), "unwritten outputs"
    boundary = INDEX_LIMIT // k  # the first row whose elements start at 2^31
    rows = torch.cat(
        [
            torch.arange(4, device="cuda"),
            torch.arange(boundary - 130, boundary + 130, device="cuda"),
            torch.arange(m - 300, m, device="cuda"),
            torch.randint(0, m, (64,), device="cuda", generator=g),
        ]
    )
    ref = 1.5 * (a[rows].double() @ b.double().T)
    got = c[rows].double()
    err = ((got - ref).norm() / ref.norm()).item()
    assert err < 2e-3, f"relative error {err:.2e}"
    # Each row on its own too: a wrong row among many right ones must not pass.
    row_err = (got - ref).norm(dim=1) / ref.norm(dim=1)
    worst = int(row_err.argmax())
    assert row_err[worst] < 5e-3, f"row {int(rows[worst])}: relative error {row_err[worst]:.2e}"

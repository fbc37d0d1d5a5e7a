"""GPU tier: the examples compiled with non-default parameters (-D), against torch.

`bench/build_variants.sh` builds them into build/variants/<name>/<kernel>_<arch>; each is
checked on ragged sizes with poisoned outputs, like the defaults in test_examples.py.
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
    os.environ.get("TILEC_VARIANTS", Path(__file__).resolve().parents[2] / "build/variants")
)
BUNDLES = sorted(p.parent for p in ROOT.glob("*/*/manifest.json")) if ROOT.is_dir() else []
if not BUNDLES:
    pytest.skip(f"no variant bundles in {ROOT}", allow_module_level=True)

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def rand(*shape: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).to(dtype)


def nan(*shape: int, dtype: torch.dtype) -> torch.Tensor:
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype)


def check(bundle: Path) -> None:
    kernel = load(bundle)
    m = kernel.manifest
    dtype = TORCH[m.tensors()[0].dtype]
    if m.entry == "vadd":
        for n in (1, 999, 4097, 100_003):
            x, y, out = (
                rand(n, dtype=dtype, seed=n),
                rand(n, dtype=dtype, seed=-n),
                nan(n, dtype=dtype),
            )
            kernel(x, y, out)
            assert torch.equal(out, x + y), n
    elif m.entry == "transpose":
        for rows, cols in ((1, 1), (47, 129), (300, 257)):
            x, y = rand(rows, cols, dtype=dtype, seed=rows), nan(cols, rows, dtype=dtype)
            kernel(x, y)
            assert torch.equal(y, x.t()), (rows, cols)
    elif m.entry == "softmax":
        cols = int(m.constants["COLS"])
        for rows, n in ((3, cols), (65, cols - 5)):
            x, y = rand(rows, n, dtype=dtype, seed=n) * 3, nan(rows, n, dtype=dtype)
            kernel(x, y)
            ref = torch.softmax(x.double(), 1)
            assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2, (rows, n)
    elif m.entry == "gemm":
        for mm, nn, kk in ((64, 64, 16), (200, 130, 72), (257, 383, 100)):
            a, b = rand(mm, kk, dtype=dtype, seed=mm), rand(nn, kk, dtype=dtype, seed=nn)
            c = nan(mm, nn, dtype=dtype)
            kernel(a, b, c, 1.5)
            ref = 1.5 * (a.double() @ b.double().T)
            assert ((c.double() - ref).norm() / ref.norm()).item() < 2e-3, (mm, nn, kk)
    else:
        pytest.fail(f"no check for kernel {m.entry}")


@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_variant_matches_torch(bundle: Path) -> None:
    check(bundle)
    torch.cuda.synchronize()

"""GPU tier: the persistent row kernels (examples/softmax_persistent.tile and
layernorm_persistent.tile): min(R, num_sms) blocks walk the rows, each holding one row in
registers while the next row's cp.async copy is in flight into the shared buffer it just read.
Against float64 torch on random data with NaN-poisoned outputs, over row counts below, at and
far above the SM count (one row a block, many rows a block, a last round that only some blocks
run), and ragged N: 16-byte multiples, odd N (the copy's element-by-element path), one column,
and N = COLS (the specialised variant, N <= COLS). The softmax takes longer rows too (its
general PTX: whole tiles walked before the last, a row past 2 COLS and 3 COLS among them); the
LayerNorm refuses them at launch.

Bundles: `test/gpu/build_row_bundles.sh` builds build/rows/softmax_p{COLS}_{arch} and (sm_90a)
layernorm_p{COLS}_{arch} for COLS 4096 and 32768.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

from tilec.runtime import load  # noqa: E402  (after the skips)
from tilec.runtime.binding import bind  # noqa: E402

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
BUNDLES = sorted(p.name for p in ROWS.glob("*_p*_*") if (p / "manifest.json").is_file())
if not BUNDLES:
    pytest.skip(f"no persistent row bundles in {ROWS}", allow_module_level=True)
EPS = 1e-5


def cases(kernel: str) -> list[tuple[str, int, int]]:
    """(bundle, rows, N): row counts around the SM count, N across the bundle's COLS."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = []
    for name in (b for b in BUNDLES if b.startswith(kernel + "_")):
        cols = int(name.split("_")[1][1:])
        for r, n in [(1, cols), (5, 1), (37, 7), (sms, 1000), (sms + 1, cols - 1)]:
            out.append((name, r, n))
        out += [(name, 4 * sms + 3, n) for n in (1000, cols - 8, cols)]
        if kernel == "softmax":  # rows of several tiles: the general variant
            out += [(name, 3, cols + 1), (name, sms + 1, 2 * cols + 5), (name, 37, 3 * cols)]
    return out


def rand(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g)


def error(y: torch.Tensor, ref: torch.Tensor) -> float:
    assert not torch.isnan(y).any(), "unwritten or NaN outputs"
    return ((y.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize(("bundle", "r", "n"), cases("softmax"))
def test_softmax_persistent(bundle: str, r: int, n: int) -> None:
    kernel = load(ROWS / bundle)
    x = (rand(r, n, seed=r * 7919 + n) * 4).half()
    y = torch.full_like(x, float("nan"))
    kernel(x, y)
    torch.cuda.synchronize()
    assert error(y, torch.softmax(x.double(), dim=1)) < 4e-3


@pytest.mark.parametrize(("bundle", "r", "n"), cases("layernorm"))
def test_layernorm_persistent(bundle: str, r: int, n: int) -> None:
    kernel = load(ROWS / bundle)
    x = (rand(r, n, seed=r * 7919 + n) + 0.5).half()
    w = (1 + 0.1 * rand(n, seed=n + 1)).half()
    b = (0.1 * rand(n, seed=n + 2)).half()
    y = torch.full_like(x, float("nan"))
    kernel(x, w.expand(r, n), b.expand(r, n), y, EPS)
    torch.cuda.synchronize()
    ref = F.layer_norm(x.double(), (n,), w.double(), b.double(), EPS)
    assert error(y, ref) < 2e-3


@pytest.mark.parametrize("bundle", [b for b in BUNDLES if b.startswith("layernorm_")])
def test_longer_rows_refused(bundle: str) -> None:
    kernel = load(ROWS / bundle)
    cols = int(bundle.split("_")[1][1:])
    x = rand(3, cols + 1, seed=1).half()
    y = torch.full_like(x, float("nan"))
    w, b = rand(cols + 1, seed=2).half(), rand(cols + 1, seed=3).half()
    with pytest.raises(ValueError, match=f"N <= {cols}"):
        kernel(x, w.expand(3, -1), b.expand(3, -1), y, EPS)
    assert torch.isnan(y).all(), "a refused launch wrote its output"


@pytest.mark.parametrize("bundle", [b for b in BUNDLES if b.startswith("softmax_")])
def test_softmax_variants(bundle: str) -> None:
    """Rows of one tile run the specialised PTX, longer ones the general PTX."""
    kernel = load(ROWS / bundle)
    cols = int(bundle.split("_")[1][1:])
    assert kernel.manifest.special and kernel.special_ptx
    sms = {"num_sms": torch.cuda.get_device_properties(0).multi_processor_count}
    for n, special in ((cols, True), (cols + 1, False)):
        x = rand(3, n, seed=n).half()
        assert bind(kernel.manifest, (x, torch.empty_like(x)), lambda _: sms).special is special

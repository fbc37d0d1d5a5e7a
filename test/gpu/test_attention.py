"""GPU tier: examples/attention.tile, FlashAttention-2's forward loop (S = Q Kᵀ per K/V tile,
the running row max m and row sum l and the output accumulator o carried by the loop, P V with
P from registers), against float64 torch on random ragged shapes with NaN-poisoned outputs;
the `causal` bundles against a top-left causal mask (query rows above M = N included).
Bundles: test/gpu/build_row_bundles.sh (build/rows/flash_*)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROWS = Path(os.environ.get("TILEC_ROW_BUNDLES", Path(__file__).resolve().parents[2] / "build/rows"))
BUNDLES = sorted(p.name for p in ROWS.glob("flash_*") if (p / "manifest.json").is_file())
if not BUNDLES:
    pytest.skip(f"no attention bundles in {ROWS}", allow_module_level=True)
D = 64


def attention(bundle: str, m: int, n: int, sharp: float, heads: int = 1) -> float:
    """The kernel's relative error against float64; `sharp` scales the scores (large ones
    need the running max: exp of an unshifted score overflows)."""
    kernel = load(ROWS / bundle)
    dtype = torch.bfloat16 if "bf16" in bundle else torch.float16
    g = torch.Generator(device="cuda").manual_seed(m * 1000 + n)
    q, k, v = (torch.randn(heads, r, D, device="cuda", generator=g).to(dtype) for r in (m, n, n))
    o = torch.full((heads, m, D), float("nan"), device="cuda", dtype=dtype)
    scale = sharp * D**-0.5
    kernel(q, k, v, o, scale)
    torch.cuda.synchronize()
    scores = scale * (q.double() @ k.double().transpose(1, 2))
    if "causal" in bundle:  # key column c <= query row r (top-left, as torch's is_causal)
        seen = torch.ones(m, n, device="cuda", dtype=torch.bool).tril()
        scores = scores.masked_fill(~seen, float("-inf"))
    p = torch.softmax(scores, dim=2)
    ref = p @ v.double()
    assert not torch.isnan(o).any(), "unwritten or NaN outputs"
    return ((o.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("bundle", BUNDLES)
@pytest.mark.parametrize(
    ("m", "n"), [(64, 64), (1, 1), (100, 37), (300, 200), (65, 129), (128, 1000), (64, 4097)]
)
def test_attention(bundle: str, m: int, n: int) -> None:
    err = attention(bundle, m, n, 1.0)
    assert err < (2e-2 if "bf16" in bundle else 3e-3), err


@pytest.mark.parametrize("bundle", BUNDLES)
def test_attention_heads(bundle: str) -> None:
    """Several heads (block.y): each reads and writes its own slices."""
    err = attention(bundle, 130, 300, 1.0, heads=5)
    assert err < (2e-2 if "bf16" in bundle else 3e-3), err


@pytest.mark.parametrize("bundle", BUNDLES)
def test_attention_sharp_scores(bundle: str) -> None:
    """Scores up to ~100: each new tile's max rescales l and o (exp(m_old - m_new))."""
    err = attention(bundle, 96, 700, 25.0)
    assert err < (3e-2 if "bf16" in bundle else 5e-3), err

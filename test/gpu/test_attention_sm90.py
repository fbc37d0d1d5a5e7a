"""GPU tier, SM90: examples/attention_sm90.tile (FlashAttention-3's structure: Q once, K/V by
TMA into an mbarrier ring, S = Q Kᵀ and O += P V by wgmma, P from registers) against
torch.nn.functional.scaled_dot_product_attention computed in float64, on fresh random data:
head dims 64, 128 and 256, f16 and bf16, no mask, top-left causal (torch's is_causal) and
bottom-right causal (FlashAttention's), M != N and shapes no tile divides, (B, H, S, D) and
(B, S, H, D) tensors (strides), grouped-query and multi-query heads, and the row log-sum-exp.
Outputs (O and LSE) are poisoned with NaN before each launch. Every bundle built runs the
shapes below; the layout, GQA, sharp-score, long-row and empty-row cases run on the named
builds and on their intra-warpgroup overlap forms (`_io`, IO = 1) where built. Needs an SM90
GPU (sm_90a PTX).

Bundles: test/gpu/build_attention_sm90_bundles.sh (build/attention_sm90, or
$TILEC_ATTENTION_SM90_BUNDLES).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
if torch.cuda.get_device_capability() < (9, 0):
    pytest.skip("sm_90a kernels need an SM90 GPU", allow_module_level=True)

from attention_check import launch  # noqa: E402  (after the skips)

from tilec.runtime import load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = Path(os.environ.get("TILEC_ATTENTION_SM90_BUNDLES", ROOT / "build/attention_sm90"))
if not (BUNDLES / "d128_f16_c0" / "manifest.json").is_file():
    pytest.skip(f"no SM90 attention bundles in {BUNDLES}", allow_module_level=True)
_KERNELS: dict[str, object] = {}


def run(name: str, *shape: int, sharp: float = 1.0, bshd: bool = False) -> None:
    """One launch of bundle `name` (d<D>_<T>_c<CAUSAL>[_...]) on a (B, H, HK, M, N) shape."""
    if name not in _KERNELS:
        _KERNELS[name] = load(BUNDLES / name)
    fields = name.split("_")
    build = (int(fields[0][1:]), fields[1], int(fields[2][1:]))
    launch(_KERNELS[name], name, build, shape, sharp, bshd)


BUILT = sorted(p.name for p in BUNDLES.glob("d*") if (p / "manifest.json").is_file())


def with_io(names: list[str]) -> list[str]:
    """`names` and, where built, their intra-warpgroup overlap forms (`_io`: IO = 1)."""
    return names + [f"{n}_io" for n in names if f"{n}_io" in BUILT]


SHAPES = [  # (B, H, HK, M, N): ragged, M != N both ways, one row, tile multiples (no masked loop)
    (1, 2, 2, 100, 37),
    (2, 3, 3, 300, 700),
    (1, 1, 1, 1, 1),
    (1, 2, 2, 129, 257),
    (2, 2, 2, 256, 512),
    (1, 1, 1, 400, 128),
]


@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_attention(name: str, shape: tuple[int, ...]) -> None:
    run(name, *shape)


@pytest.mark.parametrize(
    "name", with_io(["d64_f16_c0", "d128_f16_c1", "d128_bf16_c0", "d128_f16_c2"])
)
def test_bshd_layout(name: str) -> None:
    """(B, S, H, D) tensors passed as q.transpose(1, 2): the strides carry the layout (the
    tensor maps' row strides are H·D elements)."""
    run(name, 2, 4, 4, 150, 333, bshd=True)


@pytest.mark.parametrize(
    "name", with_io(["d64_f16_c0", "d128_f16_c1", "d256_f16_c0", "d128_bf16_c1"])
)
@pytest.mark.parametrize("hk", [2, 1])
def test_grouped_and_multi_query(name: str, hk: int) -> None:
    """8 query heads over 2 kv heads (groups of 4) and over 1 (multi-query)."""
    run(name, 2, 8, hk, 190, 270)


@pytest.mark.parametrize("name", with_io(["d64_f16_c0", "d256_f16_c1", "d128_bf16_c0"]))
def test_sharp_scores(name: str) -> None:
    """Scores up to ~100: each new tile's max rescales l and o; the LSE still matches."""
    run(name, 1, 2, 2, 96, 700, sharp=25.0)


@pytest.mark.parametrize("name", with_io(["d128_f16_c0", "d128_f16_c1", "d64_f16_c2"]))
def test_long_rows(name: str) -> None:
    """Thousands of keys: the ring wraps many times (no masked tile where N % BN == 0), and
    one key past it (a masked last tile)."""
    run(name, 1, 2, 2, 300, 4096)
    run(name, 1, 2, 2, 300, 4097)


@pytest.mark.parametrize("name", with_io(["d128_f16_c2", "d64_f16_c2"]))
def test_rows_without_keys(name: str) -> None:
    """Bottom-right causal with M > N: the first M - N rows see no key (O 0, LSE -inf)."""
    run(name, 1, 2, 2, 500, 130)

"""GPU tier: examples/attention.tile (FlashAttention-2's loop on mma.sync) and
examples/attention_varlen.tile (packed variable-length sequences) against
torch.nn.functional.scaled_dot_product_attention computed in float64, on fresh random data:
every head dim built (64, 96, 128, 256), f16 and bf16, no mask, top-left causal (torch's
is_causal) and bottom-right causal (FlashAttention's), M != N and shapes no tile divides,
(B, H, S, D) and (B, S, H, D) tensors (strides), grouped-query and multi-query heads, and the
row log-sum-exp. Outputs (O and LSE) are poisoned with NaN before each launch.

Bundles: test/gpu/build_attention_bundles.sh (build/attention, or $TILEC_ATTENTION_BUNDLES).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from attention_check import DTYPES, check_sequences, cumulative, generator, launch  # noqa: E402

from tilec.runtime import load  # noqa: E402  (after the skips)

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = Path(os.environ.get("TILEC_ATTENTION_BUNDLES", ROOT / "build/attention"))
if not (BUNDLES / "d64_f16_c0" / "manifest.json").is_file():
    pytest.skip(f"no attention bundles in {BUNDLES}", allow_module_level=True)
_KERNELS: dict[str, object] = {}


def kernel(name: str) -> object:
    if name not in _KERNELS:
        _KERNELS[name] = load(BUNDLES / name)
    return _KERNELS[name]


def parts(name: str) -> tuple[int, str, int]:
    """(D, dtype, CAUSAL) of a bundle named d<D>_<T>_c<C>[...] or varlen_d<D>_<T>_c<C>."""
    fields = name.removeprefix("varlen_").split("_")
    return int(fields[0][1:]), fields[1], int(fields[2][1:])


def run(
    name: str,
    b: int,
    h: int,
    hk: int,
    m: int,
    n: int,
    sharp: float = 1.0,
    bshd: bool = False,
) -> None:
    """One launch of bundle `name` (attention_check.launch)."""
    launch(kernel(name), name, parts(name), (b, h, hk, m, n), sharp, bshd)


DENSE = sorted(p.name for p in BUNDLES.glob("d*") if (p / "manifest.json").is_file())
SHAPES = [  # (B, H, HK, M, N): ragged, M != N both ways, one row, tile multiples (MASK = 0)
    (1, 2, 2, 100, 37),
    (2, 3, 3, 300, 700),
    (1, 1, 1, 1, 1),
    (1, 2, 2, 65, 129),
    (2, 2, 2, 256, 512),
    (1, 1, 1, 200, 64),
]


@pytest.mark.parametrize("name", DENSE)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_attention(name: str, shape: tuple[int, ...]) -> None:
    run(name, *shape)


@pytest.mark.parametrize("name", ["d64_f16_c0", "d128_f16_c1", "d64_bf16_c1", "d128_f16_c2"])
def test_bshd_layout(name: str) -> None:
    """(B, S, H, D) tensors passed as q.transpose(1, 2): the strides carry the layout."""
    run(name, 2, 4, 4, 150, 333, bshd=True)


@pytest.mark.parametrize("name", ["d64_f16_c0", "d128_f16_c1", "d96_f16_c0", "d128_bf16_c0"])
@pytest.mark.parametrize("hk", [2, 1])
def test_grouped_and_multi_query(name: str, hk: int) -> None:
    """8 query heads over 2 kv heads (groups of 4) and over 1 (multi-query)."""
    run(name, 2, 8, hk, 190, 270)


@pytest.mark.parametrize("name", ["d64_f16_c0", "d256_f16_c1", "d128_bf16_c0"])
def test_sharp_scores(name: str) -> None:
    """Scores up to ~100: each new tile's max rescales l and o; the LSE still matches."""
    run(name, 1, 2, 2, 96, 700, sharp=25.0)


@pytest.mark.parametrize("name", ["d64_f16_c0", "d128_f16_c1"])
def test_long_rows(name: str) -> None:
    """A few thousand keys (the unmasked variant's many tiles, N % BN == 0), and one past."""
    run(name, 1, 2, 2, 130, 4096)
    run(name, 1, 2, 2, 130, 4097)


VARLEN = sorted(p.name for p in BUNDLES.glob("varlen_*") if (p / "manifest.json").is_file())


@pytest.mark.parametrize("name", VARLEN)
@pytest.mark.parametrize(
    ("q_lens", "k_lens"),
    [
        ([100, 1, 257, 64], [37, 300, 129, 64]),
        ([513, 5], [513, 700]),
        ([30, 0, 70], [0, 50, 200]),  # an empty query sequence, and keys none of a row sees
    ],
)
def test_varlen(name: str, q_lens: list[int], k_lens: list[int]) -> None:
    """Packed sequences (flash_attn_varlen_func's interface), each against its own float64
    reference; O's and LSE's rows of every sequence checked."""
    d, dtype, causal = parts(name)
    h, hk = 4, 2
    g = generator(name, *q_lens, *k_lens)
    tq, tk = sum(q_lens), sum(k_lens)
    q, k, v = (
        torch.randn(t, heads, d, device="cuda", generator=g).to(DTYPES[dtype])
        for t, heads in ((tq, h), (tk, hk), (tk, hk))
    )
    o = torch.full_like(q, math.nan)
    lse = torch.full((h, tq), math.nan, device="cuda")
    cu_q, cu_k = cumulative(q_lens), cumulative(k_lens)
    scale = 1.0 / math.sqrt(d)
    kernel(name)(q, k, v, o, lse, cu_q, cu_k, max(q_lens), scale)
    torch.cuda.synchronize()
    check_sequences((q, k, v), (o, lse), (q_lens, k_lens), causal, scale, dtype)

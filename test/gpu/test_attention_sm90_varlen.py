"""GPU tier, SM90: examples/attention_sm90_varlen.tile (FlashAttention-3's structure over packed
variable-length sequences, flash_attn_varlen_func's interface) against
torch.nn.functional.scaled_dot_product_attention computed per sequence in float64, on fresh
random data: head dims 64 and 128 (and 256), f16 and bf16, no mask, top-left and bottom-right
causal within each sequence, ragged cu_seqlens with empty and one-token sequences, sequences
longer than a block's rows and than many K/V tiles, grouped-query and multi-query heads,
packed (T, 3, H, D) q/k/v (token strides), and the (H, TQ) log-sum-exp. The packed neighbours
are random data: a TMA box not offset by the sequence's first row, or a key past the
sequence left unmasked, changes the numbers. O and LSE are NaN-poisoned before each launch,
and views of larger buffers whose rows past TQ must stay NaN. Needs an SM90 GPU.

Bundles: test/gpu/build_attention_sm90_varlen_bundles.sh (build/attention_sm90_varlen, or
$TILEC_ATTENTION_SM90_VARLEN_BUNDLES).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)
if torch.cuda.get_device_capability() < (9, 0):
    pytest.skip("sm_90a kernels need an SM90 GPU", allow_module_level=True)

from attention_check import DTYPES, check_sequences, cumulative, generator  # noqa: E402

from tilec.runtime import load  # noqa: E402  (after the skips)

ROOT = Path(__file__).resolve().parents[2]
BUNDLES = Path(
    os.environ.get("TILEC_ATTENTION_SM90_VARLEN_BUNDLES", ROOT / "build/attention_sm90_varlen")
)
if not (BUNDLES / "varlen_d128_f16_c0" / "manifest.json").is_file():
    pytest.skip(f"no SM90 varlen attention bundles in {BUNDLES}", allow_module_level=True)
BUILT = sorted(p.name for p in BUNDLES.glob("varlen_*") if (p / "manifest.json").is_file())
_KERNELS: dict[str, object] = {}
PAD = 64  # rows past TQ in O's and LSE's buffers: never written


def kernel(name: str) -> object:
    if name not in _KERNELS:
        _KERNELS[name] = load(BUNDLES / name)
    return _KERNELS[name]


def parts(name: str) -> tuple[int, str, int]:
    """(D, dtype, CAUSAL) of a bundle named varlen_d<D>_<T>_c<C>."""
    fields = name.removeprefix("varlen_").split("_")
    return int(fields[0][1:]), fields[1], int(fields[2][1:])


def run(
    name: str, q_lens: list[int], k_lens: list[int], h: int = 4, hk: int = 2, qkv: bool = False
) -> None:
    """One launch on packed sequences of `q_lens` queries and `k_lens` keys (`qkv`: q, k and
    v as views of one (T, 3, H, D) tensor), every sequence checked on its own."""
    d, dtype, causal = parts(name)
    g = generator(name, q_lens, k_lens, h, hk, qkv)
    tq, tk = sum(q_lens), sum(k_lens)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device="cuda", generator=g).to(DTYPES[dtype])

    if qkv:
        assert tq == tk and h == hk
        q, k, v = rand(tq, 3, h, d).unbind(1)
    else:
        q, k, v = rand(tq, h, d), rand(tk, hk, d), rand(tk, hk, d)
    o_all = torch.full((tq + PAD, h, d), math.nan, dtype=DTYPES[dtype], device="cuda")
    lse_all = torch.full((h * tq + PAD,), math.nan, device="cuda")
    o, lse = o_all[:tq], lse_all[: h * tq].view(h, tq)
    cu_q, cu_k = cumulative(q_lens), cumulative(k_lens)
    scale = 1.0 / math.sqrt(d)
    kernel(name)(q, k, v, o, lse, cu_q, cu_k, max(q_lens), scale)
    torch.cuda.synchronize()
    assert o_all[tq:].isnan().all() and lse_all[h * tq :].isnan().all(), "a store past TQ"
    check_sequences((q, k, v), (o, lse), (q_lens, k_lens), causal, scale, dtype)


LENGTHS = [  # (query lengths, key lengths): ragged, empty and one-token sequences
    ([100, 1, 257, 64], [37, 300, 129, 64]),
    ([513, 5], [513, 700]),
    ([30, 0, 70, 1], [0, 50, 200, 1]),  # an empty query sequence, one without keys
    ([1, 1, 1], [1, 2, 3]),
    ([128, 256, 129], [128, 256, 127]),  # whole tiles, and one row past
]


@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize(("q_lens", "k_lens"), LENGTHS, ids=lambda x: "-".join(map(str, x)))
def test_varlen(name: str, q_lens: list[int], k_lens: list[int]) -> None:
    run(name, q_lens, k_lens)


@pytest.mark.parametrize("name", ["varlen_d64_f16_c0", "varlen_d128_bf16_c1", "varlen_d128_f16_c2"])
@pytest.mark.parametrize("hk", [2, 1])
def test_grouped_and_multi_query(name: str, hk: int) -> None:
    """8 query heads over 2 kv heads (groups of 4) and over 1 (multi-query)."""
    run(name, [190, 3, 77], [270, 9, 77], h=8, hk=hk)


@pytest.mark.parametrize("name", ["varlen_d64_f16_c1", "varlen_d128_f16_c0", "varlen_d128_bf16_c2"])
def test_packed_qkv(name: str) -> None:
    """q, k and v as views of one (T, 3, H, D) tensor: token strides of 3 H D elements."""
    run(name, [150, 1, 333], [150, 1, 333], h=2, hk=2, qkv=True)


@pytest.mark.parametrize("name", ["varlen_d128_f16_c0", "varlen_d128_f16_c1", "varlen_d64_bf16_c2"])
def test_long_sequences(name: str) -> None:
    """Thousands of keys beside short sequences: the ring wraps many times, most blocks of the
    short sequences run no tile (the grid spans the longest one)."""
    run(name, [4096, 7, 1000], [4097, 3000, 1])

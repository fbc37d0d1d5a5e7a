"""SM80 kernels run on the CPU, numbers and all: sm90_emu with sm80_emu_ops' ldmatrix and
mma.sync (fragments placed as the PTX ISA says), cp.async, against numpy in float64.

examples/gemm_sm80.tile is the model's own check (its PTX is measured on the GPU): K-major and
MN-major operands (ldmatrix and ldmatrix.trans), f16 and bf16, alpha, ragged M, N and K at
small tiles. examples/attention.tile (FlashAttention-2's loop: S = Q Kᵀ and P V by mma.sync, P
from registers, V through ldmatrix.trans) runs against the reference test_sm90_emulated holds:
masks past N, both causal alignments, GQA, (B, S, H, D) strides, D = 64, 96 and 128, LSE;
examples/attention_varlen.tile over packed ragged sequences.
Outputs are NaN-poisoned first. A fragment placed wrongly (an A register's row and column
halves swapped, ldmatrix.trans's two elements in the other order) fails here."""

from __future__ import annotations

import numpy as np
import pytest
from sm90_emu import Tensor, example, run
from test_sm90_emulated import bf16_values, case_id, check_attention, check_attention_varlen

from tilec.runtime.tensors import bf16_bits

# (dtype, MA, MB, M, N, K, alpha): 64 x 64 tiles over 2 x 2 warps, so M and N span two
# tiles each with a ragged edge; K = 80 is two and a half k-tiles of 32 (MN-major) or 64
GEMM = [("bf16", 0, 0, 70, 72, 80, 1.0), ("f16", 1, 1, 70, 72, 80, 0.5),
        ("bf16", 0, 1, 65, 130, 136, 1.0), ("f16", 1, 0, 33, 72, 80, -2.0)]  # fmt: skip


def bits_of(x: np.ndarray, dtype: str) -> np.ndarray:
    return bf16_bits(x) if dtype == "bf16" else x.astype(np.float16).view(np.uint16)


def values_of(bits: np.ndarray, dtype: str) -> np.ndarray:
    return bf16_values(bits) if dtype == "bf16" else bits.view(np.float16).astype(np.float64)


def gemm_id(c: tuple) -> str:
    return f"{c[0]}-MA{c[1]}-MB{c[2]}-{c[3]}x{c[4]}x{c[5]}"


@pytest.mark.parametrize("case", GEMM, ids=gemm_id)
def test_gemm_sm80(case: tuple) -> None:
    dtype, ma, mb, m, n, k, alpha = case
    c = example("gemm_sm80", T=dtype, MA=str(ma), MB=str(mb), BM="64", BN="64", WM="2", WN="2")
    rng = np.random.default_rng(m * n + k)
    a, b = bits_of(rng.standard_normal((m, k)), dtype), bits_of(rng.standard_normal((n, k)), dtype)
    # MN-major: the transposes of K x M and K x N tensors
    ta = a if not ma else np.ascontiguousarray(a.T).T
    tb = b if not mb else np.ascontiguousarray(b.T).T
    out = np.full((m, n), 0xFFFF, dtype=np.uint16)  # NaN
    run(c, (Tensor(ta, dtype), Tensor(tb, dtype), Tensor(out, dtype), alpha))
    want = alpha * (values_of(a, dtype) @ values_of(b, dtype).T)
    got = values_of(out, dtype)
    assert not np.isnan(got).any(), "an element of C left unwritten"
    tol = 8e-3 if dtype == "bf16" else 1e-3  # C rounded to its dtype
    np.testing.assert_allclose(got, want, atol=tol * np.abs(want).max(), rtol=tol)


def test_gemm_sm80_forms() -> None:
    """gemm_sm80's batched form (3 batches) and its fused epilogue (relu(alpha A Bᵀ + beta C +
    bias), bias an expanded vector), f16."""
    rng = np.random.default_rng(7)
    m, n, k = 70, 72, 80

    def operand(*shape: int) -> np.ndarray:
        return bits_of(rng.standard_normal(shape), "f16")

    small = {"BM": "64", "BN": "64", "WM": "2", "WN": "2"}
    a, b = operand(3, m, k), operand(3, n, k)
    out = np.full((3, m, n), 0xFFFF, dtype=np.uint16)
    run(example("gemm_sm80_batched", **small), (Tensor(a, "f16"), Tensor(b, "f16"),
                                                 Tensor(out, "f16"), 0.5))  # fmt: skip
    want = 0.5 * np.einsum("lmk,lnk->lmn", values_of(a, "f16"), values_of(b, "f16"))
    np.testing.assert_allclose(values_of(out, "f16"), want, atol=2e-3 * np.abs(want).max())

    a, b, c, bias = operand(m, k), operand(n, k), operand(m, n), operand(n)
    before = values_of(c, "f16")
    run(example("gemm_sm80_bias_relu", ACT="1", **small),
        (Tensor(a, "f16"), Tensor(b, "f16"), Tensor(c, "f16"),
         Tensor(np.broadcast_to(bias, (m, n)), "f16"), 2.0, -1.0))  # fmt: skip
    z = 2.0 * values_of(a, "f16") @ values_of(b, "f16").T - before + values_of(bias, "f16")
    want = np.maximum(z, 0)
    np.testing.assert_allclose(values_of(c, "f16"), want, atol=2e-3 * np.abs(want).max())


# (params, B, H, HK, M, N, dtype, layout): layout "bhsd" as torch's (B, H, S, D), "bshd" the
# transpose of a (B, S, H, D) tensor. N past one K/V tile and not a multiple of BN (the mask);
# M over two blocks of BM = 128 or 64 rows; causal 2 with M > N: rows that see no key
ATTENTION = [
    ({"D": "64"}, 1, 2, 1, 150, 100, "f16", "bhsd"),
    ({"D": "128", "CAUSAL": "1", "T": "bf16"}, 1, 2, 2, 70, 90, "bf16", "bshd"),
    ({"D": "64", "CAUSAL": "2"}, 1, 2, 1, 130, 70, "f16", "bhsd"),
    ({"D": "96", "CAUSAL": "2"}, 2, 1, 1, 40, 100, "f16", "bhsd"),
    ({"D": "64", "MASK": "0"}, 1, 1, 1, 64, 128, "f16", "bhsd"),
]


@pytest.mark.parametrize("case", ATTENTION, ids=case_id)
def test_attention_sm80(case: tuple) -> None:
    check_attention("attention", case)


# examples/attention_varlen.tile: (params, H, HK, query lengths, key lengths, dtype, packed), as
# test_sm90_emulated's VARLEN: ragged, empty and one-token sequences, a query length over a
# block's 128 rows, GQA, K and V views of one packed tensor
VARLEN = [
    ({"D": "64"}, 2, 1, [0, 1, 130, 5, 70], [3, 0, 150, 1, 200], "f16", False),
    ({"D": "128", "CAUSAL": "1", "T": "bf16"}, 2, 2, [3, 140, 1, 0, 66], [3, 140, 1, 0, 66],
     "bf16", False),
    ({"D": "64", "CAUSAL": "2"}, 2, 2, [20, 0, 130], [150, 5, 1], "f16", True),
]  # fmt: skip


@pytest.mark.parametrize("case", VARLEN, ids=case_id)
def test_attention_varlen_sm80(case: tuple) -> None:
    check_attention_varlen("attention_varlen", case, 128)


# examples/gemm_skinny.tile: (params, S, M, N, K, offset), S splits (W's first extent): B's rows
# K + 3 apart from `offset`
# elements into their buffer (the base 16-byte aligned, as the runtime binds every tensor;
# the rows after it 2-byte aligned, NaN in the gaps), A's K + 1 apart; the
# splits' partial sums W NaN-poisoned. K = 64 at S = 4: three splits without a k-tile (their W
# zeros); K = 200 at S = 8 and BK = 32: one tile short of a second round; a BM 64 build; the
# gemm_skinny family's build (BN 64, BK 32) at K = 1, every block of a row cut by the bound
SKINNY = [({}, 4, 5, 70, 77, 8), ({"T": "f16"}, 2, 16, 300, 1001, 0),
          ({"BM": "32", "BK": "32", "BN": "64"}, 8, 30, 130, 200, 16), ({}, 4, 16, 128, 64, 8),
          ({"BN": "64", "WN": "2"}, 8, 1, 200, 4097, 24),
          ({"BM": "64", "BN": "64"}, 3, 40, 70, 300, 8),
          ({"BN": "64", "BK": "32"}, 3, 13, 100, 1, 8)]  # fmt: skip


def skinny_id(c: tuple) -> str:
    return ",".join(f"{k}={v}" for k, v in c[0].items()) + f",S={c[1]},{c[2]}x{c[3]}x{c[4]}"


@pytest.mark.parametrize("case", SKINNY, ids=skinny_id)
def test_gemm_skinny(case: tuple) -> None:
    params, splits, m, n, k, offset = case
    dtype = params.get("T", "bf16")
    c = example("gemm_skinny", **params)
    rng = np.random.default_rng(m + n + k)

    def spaced(rows: int, apart: int, at: int) -> np.ndarray:
        flat = np.full(-(-(at + rows * apart) // 8) * 8, 0xFFFF, dtype=np.uint16)  # NaN
        view = flat[at : at + rows * apart].reshape(rows, apart)[:, :k]
        view[...] = bits_of(rng.standard_normal((rows, k)), dtype)
        return view

    a, b = spaced(m, k + 1, 0), spaced(n, k + 3, offset)
    w = np.full((splits, m, n), np.nan, dtype=np.float32)
    run(c, (Tensor(a, dtype), Tensor(b, dtype), w))
    assert not np.isnan(w).any(), "a partial sum left unwritten"
    want = values_of(a, dtype) @ values_of(b, dtype).T
    np.testing.assert_allclose(w.astype(np.float64).sum(0), want, atol=1e-5 * np.abs(want).max())

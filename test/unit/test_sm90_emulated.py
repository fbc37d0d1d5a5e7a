"""SM90 kernels run on the CPU, numbers and all (sm90_emu: every warp group of a block as 128
numpy lanes, TMA, mbarriers and wgmma modelled from the PTX ISA), against numpy in float64.

The GEMM builds are the emulator's own check (their PTX is measured on the GPU); the
attention builds (examples/attention_sm90.tile) are checked here before any GPU sees them:
the Q tile's ring, the K/V ring read by two gemms an iteration, the waits before the
softmax reads S and before the next iteration rescales O, P·V with P from registers, the
K-major D = 128 and 256 tiles in chunks, V MN-major, the masks, GQA, strided layouts, LSE,
the staggered consumer groups' named barriers (ST = 1: no deadlock, every wait matched), and
FlashAttention-3's intra-warpgroup overlap (IO = 1: S_j waited for alone with P_{j-1} V_{j-1}
in flight, O before its rescaling; the producer's shifted V tiles; both gemms one turn).
Outputs are NaN-poisoned first; a stage released early, an accumulator read before its
wgmma group retires or a wrong fragment fails here."""

from __future__ import annotations

import numpy as np
import pytest
from sm90_emu import Tensor, run
from sm90_emu import example as build

from tilec.runtime.tensors import bf16_bits


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def typed(x: np.ndarray, dtype: str, swap: bool = False) -> tuple[Tensor, np.ndarray]:
    """`x` as a kernel tensor of `dtype` and the values it holds (float64); `swap`: its
    modes 1 and 2 swapped after (a view: (B, S, H, D) memory seen as (B, H, S, D))."""
    bits = bf16_bits(x) if dtype == "bf16" else x.astype(np.float16)
    values = bf16_values(bits) if dtype == "bf16" else bits.astype(np.float64)
    if swap:
        bits, values = bits.transpose(0, 2, 1, 3), values.transpose(0, 2, 1, 3)
    return Tensor(bits, dtype if dtype == "bf16" else None), values


@pytest.mark.parametrize("build_params", [{}, {"MA": "1", "MB": "1"}])
def test_gemm(build_params: dict[str, str]) -> None:
    """C = A Bᵀ (f16, f32 out, no split tail): exact on small integers, K-major and MN-major
    operands, over a persistent grid of 2 blocks whose ring wraps."""
    c = build("gemm_sm90", SK="0", O="f32", T="f16", **build_params)
    rng = np.random.default_rng(1)
    m, n, k = 200, 304, 7 * 64 + 8
    a = rng.integers(-3, 4, (m, k)).astype(np.float16)
    b = rng.integers(-3, 4, (n, k)).astype(np.float16)
    if build_params:  # MN-major: the transposes of K x M and K x N tensors
        a, b = np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T
    out = np.full((m, n), np.nan, dtype=np.float32)
    run(c, (a, b, out), num_sms=2)
    np.testing.assert_array_equal(out, a.astype(np.float64) @ b.astype(np.float64).T)


# (params, M, N, K): the swapped few-row builds over a row-major B (MN-major here: km) beside the
# K-major pair's, and the 128x256 build, at odd K: A's rows (and a K-major B's) lie
# round_up(K, 8) elements apart with NaN in the gap (one row: its stride is free), so a box
# that read past K, not TMA's zeros, fails (tilec/ops/gemm_plan.py's leading dimension)
LEADING = [
    ({"MB": "1", "SW": "1", "BN": "8", "STAGES": "8"}, 1, 200, 1001),
    ({"MB": "1", "SW": "1", "BN": "8", "STAGES": "8"}, 7, 136, 77),
    ({"MB": "1", "SW": "1", "PP": "1", "BM": "64", "BN": "64", "STAGES": "8"}, 50, 136, 201),
    ({"MB": "0", "SW": "1", "BN": "16", "STAGES": "8"}, 9, 136, 201),
    ({"MB": "1"}, 130, 264, 201),
]


def leading_id(case: tuple) -> str:
    return ",".join(f"{k}={v}" for k, v in case[0].items()) + f",M={case[1]},K={case[3]}"


@pytest.mark.parametrize("case", LEADING, ids=leading_id)
def test_gemm_leading_dimension(case: tuple) -> None:
    params, m, n, k = case
    c = build("gemm_sm90", SK="0", O="f32", T="f16", MA="0", **params)
    rng = np.random.default_rng(m + k)
    ld = -(-k // 8) * 8

    def spaced(rows: int) -> np.ndarray:
        x = np.full((rows, ld), np.nan, dtype=np.float16)
        x[:, :k] = rng.integers(-3, 4, (rows, k))
        return x[:, :k]

    a, b = spaced(m), spaced(n)
    if params["MB"] == "1":  # row-major B (K x N) as the kernels' N x K: MN-major, ld = N
        b = np.ascontiguousarray(b.T).T
    out = np.full((m, n), np.nan, dtype=np.float32)
    run(c, (a, b, out), num_sms=2)
    np.testing.assert_array_equal(out, a.astype(np.float64) @ b.astype(np.float64).T)


# (params, L, M, N, K): examples/gemm_sm90_batched.tile over ragged tiles (M, N not multiples
# of BM, BN: a tile of one batch must not read or write the next), K-major A and B, a row-major
# B (L x K x N: MN-major here, ldb = N, tilec.ops.bmm's B as it lies) beside an A of odd K
# (rows round_up(K, 8) apart, NaN between), a column-major A too
BATCHED = [
    ({}, 3, 130, 136, 200),
    ({"MB": "1"}, 3, 130, 136, 200),
    ({"MB": "1"}, 2, 70, 264, 77),
    ({"MA": "1", "MB": "1", "PP": "1", "BN": "128"}, 2, 136, 200, 72),
]


def batched_id(case: tuple) -> str:
    return ",".join([*(f"{k}={v}" for k, v in case[0].items()), "x".join(map(str, case[1:]))])


@pytest.mark.parametrize("case", BATCHED, ids=batched_id)
def test_gemm_batched(case: tuple) -> None:
    """C[l] = A[l] B[l]ᵀ (f16, exact on small integers) into a NaN-poisoned C whose batches lie
    8 rows apart: the rows between them must stay NaN."""
    params, nb, m, n, k = case
    c = build("gemm_sm90_batched", T="f16", **params)
    rng = np.random.default_rng(m + n + k)
    a = np.full((nb, m, -(-k // 8) * 8), np.nan, dtype=np.float16)[:, :, :k]
    a[...] = rng.integers(-3, 4, (nb, m, k))
    b = rng.integers(-3, 4, (nb, n, k)).astype(np.float16)
    if params.get("MA") == "1":  # the transpose of an L x K x M tensor
        a = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
    if params.get("MB") == "1":  # torch.bmm's row-major B (L x K x N) seen as L x N x K
        b = np.ascontiguousarray(b.transpose(0, 2, 1)).transpose(0, 2, 1)
    poisoned = np.full((nb, m + 8, n), np.nan, dtype=np.float16)
    run(c, (a, b, poisoned[:, :m]), num_sms=2)
    want = np.einsum("lmk,lnk->lmn", a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_array_equal(poisoned[:, :m].astype(np.float64), want)
    assert np.isnan(poisoned[:, m:]).all()


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: int):  # noqa: ANN201
    """O and LSE in float64, torch's conventions: causal 1 top-left, 2 bottom-right."""
    h, hk = q.shape[1], k.shape[1]
    k, v = np.repeat(k, h // hk, axis=1), np.repeat(v, h // hk, axis=1)
    s = np.einsum("bhmd,bhnd->bhmn", q, k) * scale
    m, n = s.shape[-2:]
    if causal:
        shift = 0 if causal == 1 else n - m
        s = np.where(np.arange(n)[None, :] <= np.arange(m)[:, None] + shift, s, -np.inf)
    mx = s.max(-1, keepdims=True, initial=-np.inf)  # no key (an empty sequence): -inf
    safe = np.where(np.isfinite(mx), mx, 0)
    p = np.exp(s - safe)
    total = p.sum(-1, keepdims=True)
    o = np.einsum("bhmn,bhnd->bhmd", p / np.where(total > 0, total, 1), v)
    with np.errstate(divide="ignore"):
        return o, (safe + np.log(total))[..., 0]


# (params, B, H, HK, M, N, dtype, layout): layout "bhsd" as torch's (B, H, S, D), "bshd"
# the transpose of a (B, S, H, D) tensor
ATTENTION = [
    ({"D": "64"}, 1, 2, 1, 150, 300, "f16", "bhsd"),
    ({"D": "64", "ST": "1"}, 1, 1, 1, 130, 256, "f16", "bhsd"),
    ({"D": "128", "CAUSAL": "1", "T": "bf16"}, 2, 2, 2, 200, 130, "bf16", "bshd"),
    ({"D": "128", "CAUSAL": "2"}, 1, 4, 2, 300, 140, "f16", "bhsd"),
    ({"D": "256", "CAUSAL": "2"}, 1, 1, 1, 100, 150, "f16", "bhsd"),
    ({"D": "128", "CAUSAL": "1", "ST": "1"}, 1, 2, 1, 260, 300, "f16", "bhsd"),
    # the default 3-stage ring at D = 128 over 6 K/V tiles: its phases wrap twice
    ({"D": "128"}, 1, 1, 1, 130, 700, "f16", "bhsd"),
    # FlashAttention-3's intra-warpgroup overlap (IO = 1): S_j with P_{j-1} V_{j-1}, the
    # softmax under P V; not staggered, staggered, causal both ways, one tile, bf16, D = 64
    ({"D": "128", "IO": "1", "ST": "0"}, 1, 1, 1, 130, 700, "f16", "bhsd"),
    ({"D": "128", "IO": "1"}, 1, 2, 1, 200, 500, "f16", "bhsd"),
    ({"D": "128", "IO": "1", "CAUSAL": "1"}, 1, 2, 1, 260, 300, "f16", "bhsd"),
    ({"D": "64", "IO": "1", "CAUSAL": "2"}, 1, 2, 2, 300, 140, "f16", "bhsd"),
    ({"D": "128", "IO": "1", "T": "bf16"}, 2, 2, 1, 70, 100, "bf16", "bshd"),
    ({"D": "64", "IO": "1"}, 1, 1, 1, 64, 512, "f16", "bhsd"),
]


def case_id(case: tuple) -> str:
    return ",".join(f"{k}={v}" for k, v in case[0].items())


@pytest.mark.parametrize("case", ATTENTION, ids=case_id)
def test_attention(case: tuple) -> None:
    check_attention("attention_sm90", case)


def check_attention(kernel: str, case: tuple) -> None:
    """examples/<kernel>.tile built with the case's params, run on random Q, K, V of its
    shapes and layout, O and LSE NaN-poisoned, against `reference`."""
    params, b, h, hk, m, n, dtype, layout = case
    d = int(params["D"])
    c = build(kernel, **params)
    rng = np.random.default_rng(len(str(case)))

    swap = layout == "bshd"

    def tensor(heads: int, rows: int) -> tuple[Tensor, np.ndarray]:
        shape = (b, rows, heads, d) if swap else (b, heads, rows, d)
        return typed(rng.standard_normal(shape), dtype, swap)

    (tq, q), (tk, k), (tv, v) = (tensor(x, r) for x, r in ((h, m), (hk, n), (hk, n)))
    to, _ = typed(np.full((b, m, h, d) if swap else (b, h, m, d), np.nan), dtype, swap)
    assert not swap or to.array.strides[1] < to.array.strides[2]
    lse = np.full((b, h, m), np.nan, dtype=np.float32)
    scale = 1 / np.sqrt(d)
    run(c, (tq, tk, tv, to, lse, scale))
    o = bf16_values(to.array) if dtype == "bf16" else to.array.astype(np.float64)
    want_o, want_lse = reference(q, k, v, scale, int(params.get("CAUSAL", 0)))
    tol = 2e-2 if dtype == "bf16" else 2e-3
    np.testing.assert_allclose(o, want_o, atol=tol, rtol=tol)
    np.testing.assert_allclose(lse, want_lse, atol=1e-4, rtol=1e-5)


# examples/attention_sm90_varlen.tile: (params, H, HK, query lengths, key lengths, dtype,
# packed: K and V views of one (TK, 2, HK, D) tensor, Q's heads padded: other strides). The
# lengths are ragged, with empty and one-token sequences; a query length over BM = 128 takes
# two blocks, one over BN more than one K/V tile (the ring wraps).
VARLEN = [
    ({"D": "64"}, 2, 1, [0, 1, 130, 5, 70], [3, 0, 150, 1, 200], "f16", False),
    ({"D": "128", "CAUSAL": "1", "T": "bf16"}, 4, 2, [3, 140, 1, 0, 66], [3, 140, 1, 0, 66],
     "bf16", False),
    ({"D": "128", "CAUSAL": "2"}, 2, 2, [1, 150, 70, 0, 9], [40, 130, 200, 7, 2], "f16", False),
    ({"D": "64", "CAUSAL": "2", "ST": "0"}, 2, 2, [20, 0, 130], [150, 5, 1], "f16", True),
    ({"D": "256", "CAUSAL": "1"}, 1, 1, [1, 140, 0], [2, 140, 5], "f16", False),
]  # fmt: skip


def varlen_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, causal: int):  # noqa: ANN201
    """One sequence's O (m, H, D) and LSE (H, m) in float64; no key: O 0, LSE -inf."""
    o, lse = reference(q.transpose(1, 0, 2)[None], k.transpose(1, 0, 2)[None],
                       v.transpose(1, 0, 2)[None], scale, causal)  # fmt: skip
    return o[0].transpose(1, 0, 2), lse[0]


@pytest.mark.parametrize("case", VARLEN, ids=case_id)
def test_attention_varlen(case: tuple) -> None:
    """Each sequence against numpy on its own. The packed neighbours are random data, so a
    TMA box not offset by the sequence's first row, or a key past the sequence left unmasked,
    changes the numbers; the blocks run last sequence first, so a store past a sequence's
    rows (into the next one's, already written) changes them too; O and LSE are NaN-poisoned
    first and their rows past TQ (a larger buffer's) must stay so."""
    check_attention_varlen("attention_sm90_varlen", case, 128)


def check_attention_varlen(kernel: str, case: tuple, bm: int) -> None:
    """examples/<kernel>.tile (blocks of `bm` query rows) on the case's packed sequences, its
    blocks run last first, each sequence against `varlen_reference`."""
    params, h, hk, lq, lk, dtype, packed = case
    d, causal = int(params["D"]), int(params.get("CAUSAL", 0))
    c = build(kernel, **params)
    rng = np.random.default_rng(len(str(case)))
    cu_q = np.concatenate([[0], np.cumsum(lq)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lk)]).astype(np.int32)
    tq, tk = int(cu_q[-1]), int(cu_k[-1])

    def tokens(rows: int, heads: int) -> tuple[Tensor, np.ndarray]:
        return typed(rng.standard_normal((rows, heads, d)), dtype)

    if packed:  # K and V of one (TK, 2, HK, D) tensor, Q's heads D + 64 elements apart
        kv_t, kv = typed(rng.standard_normal((tk, 2, hk, d)), dtype)
        (k_t, k), (v_t, v) = ((Tensor(kv_t.array[:, i], kv_t.dtype), kv[:, i]) for i in (0, 1))
        wide_t, wide = typed(rng.standard_normal((tq, h, d + 64)), dtype)
        q_t, q = Tensor(wide_t.array[..., :d], wide_t.dtype), wide[..., :d]
    else:
        (q_t, q), (k_t, k), (v_t, v) = tokens(tq, h), tokens(tk, hk), tokens(tk, hk)
    o_all, _ = typed(np.full((tq + 64, h, d), np.nan), dtype)
    o_t = Tensor(o_all.array[:tq], o_all.dtype)
    lse_all = np.full(h * tq + 64, np.nan, dtype=np.float32)  # LSE is contiguous (H, TQ)
    lse = lse_all[: h * tq].reshape(h, tq)
    scale = 1 / np.sqrt(d)
    args = (q_t, k_t, v_t, o_t, lse, cu_q, cu_k, max(lq), scale)
    grid = (-(-max(lq) // bm), h, len(lq))
    blocks = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    assert run(c, args, blocks=blocks[::-1]) == grid
    o = bf16_values(o_all.array) if dtype == "bf16" else o_all.array.astype(np.float64)
    assert np.isnan(o[tq:]).all() and np.isnan(lse_all[h * tq :]).all()
    tol = 2e-2 if dtype == "bf16" else 2e-3
    for b in range(len(lq)):
        rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        want_o, want_lse = varlen_reference(q[rows], k[keys], v[keys], scale, causal)
        np.testing.assert_allclose(o[rows], want_o, atol=tol, rtol=tol, err_msg=f"O of {b}")
        np.testing.assert_allclose(lse[:, rows], want_lse, atol=1e-4, rtol=1e-5)

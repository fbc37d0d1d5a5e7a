"""The row kernels and the few-row GEMM on the CPU (sm90_emu: their `gpu` stage lane by lane, a
block under 128 threads as a partial warp group), against numpy in float64, outputs
NaN-poisoned: softmax, LayerNorm and RMSNorm (a block a row, and persistent: cp.async copies
land when a wait retires them) and examples/gemv.tile (one warp over NB rows of B) at odd
lengths, where rows start 2-byte aligned (every eighth on a 16-byte boundary), and at even
ones. Sources end at the 16-byte block of their last element (a read past it fails)."""

from __future__ import annotations

import numpy as np
import pytest
from sm90_emu import example as build
from sm90_emu import run


def rows(rng: np.random.Generator, r: int, n: int) -> np.ndarray:
    """An r x n f16 array whose storage ends at the 16-byte block of its last element."""
    size = -(-(r * n) // 8) * 8
    return rng.standard_normal(size).astype(np.float16)[: r * n].reshape(r, n)


def poisoned(r: int, n: int) -> np.ndarray:
    return np.full((r, n), np.nan, dtype=np.float16)


def close(got: np.ndarray, ref: np.ndarray) -> None:
    assert not np.isnan(got).any(), "an output left unwritten"
    err = np.abs(got.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1.0)
    assert err < 2e-3, err


@pytest.mark.parametrize(("r", "n"), [(9, 1001), (9, 1003), (2, 2500), (3, 1024)])
def test_row_kernels_at_odd_lengths(r: int, n: int) -> None:
    rng = np.random.default_rng(r * n)
    small = {"COLS": "1024", "THREADS": "128"}
    x, w, b = rows(rng, r, n), rows(rng, 1, n)[0], rows(rng, 1, n)[0]
    xf = x.astype(np.float64)
    y = poisoned(r, n)
    run(build("softmax", **small), (x, y))
    e = np.exp(xf - xf.max(1, keepdims=True))
    close(y, e / e.sum(1, keepdims=True))
    wide, bias = np.broadcast_to(w, (r, n)), np.broadcast_to(b, (r, n))
    y = poisoned(r, n)
    run(build("layernorm", **small), (x, wide, bias, y, 1e-5))
    mu, var = xf.mean(1, keepdims=True), xf.var(1, keepdims=True)
    close(y, (xf - mu) / np.sqrt(var + 1e-5) * w + b)
    y = poisoned(r, n)
    run(build("rmsnorm", **small), (x, wide, y, 1e-5))
    close(y, xf / np.sqrt((xf**2).mean(1, keepdims=True) + 1e-5) * w)


@pytest.mark.parametrize(("r", "n"), [(9, 2500), (10, 2051), (9, 2049)])
def test_persistent_row_kernels_past_one_tile(r: int, n: int) -> None:
    """The persistent kernels, four blocks walking the rows, each row's (last) tile copied by
    cp.async while the row before is reduced (the emulator lands a copy only when a wait
    retires its group): softmax's general build (rows past COLS; its specialisation takes the
    rest), the norms' (a row of at most COLS)."""
    rng = np.random.default_rng(r * n + 1)
    small, whole = {"COLS": "1024", "THREADS": "128"}, {"COLS": "4096", "THREADS": "256"}
    x, w, b = rows(rng, r, n), rows(rng, 1, n)[0], rows(rng, 1, n)[0]
    xf = x.astype(np.float64)
    wide, bias = np.broadcast_to(w, (r, n)), np.broadcast_to(b, (r, n))
    y = poisoned(r, n)
    run(build("softmax_persistent", **small), (x, y), num_sms=4)
    e = np.exp(xf - xf.max(1, keepdims=True))
    close(y, e / e.sum(1, keepdims=True))
    y = poisoned(r, n)
    run(build("layernorm_persistent", **whole), (x, wide, bias, y, 1e-5), num_sms=4)
    mu, var = xf.mean(1, keepdims=True), xf.var(1, keepdims=True)
    close(y, (xf - mu) / np.sqrt(var + 1e-5) * w + b)
    y = poisoned(r, n)
    run(build("rmsnorm_persistent", **whole), (x, wide, y, 1e-5), num_sms=4)
    close(y, xf / np.sqrt((xf**2).mean(1, keepdims=True) + 1e-5) * w)


@pytest.mark.parametrize(("r", "n"), [(9, 1001), (10, 1003), (9, 1024)])
def test_persistent_softmax_of_one_tile(r: int, n: int) -> None:
    """Rows of at most COLS: the specialize(N <= COLS) build, which those launches run."""
    rng = np.random.default_rng(r * n + 2)
    x, y = rows(rng, r, n), poisoned(r, n)
    run(build("softmax_persistent", True, COLS="1024", THREADS="128"), (x, y), num_sms=4)
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(1, keepdims=True))
    close(y, e / e.sum(1, keepdims=True))


@pytest.mark.parametrize(("r", "n", "g"), [(9, 1001, 3), (7, 1024, 2)])
def test_norm_backward_kernels_and_colsum(r: int, n: int, g: int) -> None:
    """LayerNorm's and RMSNorm's backward (G blocks walking rows block.x, block.x + G, ...: dx,
    and each block's f32 sums of dw, db over its rows), then colsum over the G partial rows."""
    rng = np.random.default_rng(r * n + g)
    small = {"COLS": "1024", "THREADS": "128"}
    x, dy, w = rows(rng, r, n), rows(rng, r, n), rows(rng, 1, n)[0]
    xf, dyf, wf = x.astype(np.float64), dy.astype(np.float64), w.astype(np.float64)
    wide = np.broadcast_to(w, (r, n))
    mine = [np.arange(b, r, g) for b in range(g)]  # each block's rows
    for op, centred in (("layernorm_bwd", True), ("rmsnorm_bwd", False)):
        mean = xf.mean(1, keepdims=True) if centred else 0.0
        rstd = 1 / np.sqrt(((xf - mean) ** 2).mean(1, keepdims=True) + 1e-5)
        xhat, gw = (xf - mean) * rstd, wf * dyf
        dx_ref = rstd * (gw - (gw.mean(1, keepdims=True) if centred else 0.0)
                         - xhat * (gw * xhat).mean(1, keepdims=True))  # fmt: skip
        dx, dw = poisoned(r, n), np.full((g, n), np.nan, dtype=np.float32)
        sums = [dw]
        if centred:
            sums.append(np.full((g, n), np.nan, dtype=np.float32))
        run(build(op, **small), (x, wide, dy, dx, *sums, 1e-5))
        close(dx, dx_ref)
        for b, its in enumerate(mine):
            close(dw[b], (dyf * xhat)[its].sum(0))
            if centred:
                close(sums[1][b], dyf[its].sum(0))
    partial = rng.standard_normal((2, 5, n)).astype(np.float32)
    total = np.full((2, n), np.nan, dtype=np.float32)
    run(build("colsum"), (partial, total))
    close(total, partial.astype(np.float64).sum(1))


@pytest.mark.parametrize(("mr", "m"), [(1, 1), (2, 2), (4, 3)])
@pytest.mark.parametrize(("n", "k"), [(6, 1001), (5, 300), (4, 512)])
def test_gemv_at_odd_k(mr: int, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(mr * n * k)
    a, b = rows(rng, m, k), rows(rng, n, k)
    c = poisoned(m, n)
    run(build("gemv", MR=str(mr)), (a, b, c))
    close(c, a.astype(np.float64) @ b.astype(np.float64).T)

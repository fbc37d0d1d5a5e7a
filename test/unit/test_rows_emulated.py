"""The row kernels and the few-row GEMM on the CPU (sm90_emu: their `gpu` stage lane by lane, a
block under 128 threads as a partial warp group), against numpy in float64, outputs
NaN-poisoned: softmax, LayerNorm and RMSNorm (a block a row) and examples/gemv.tile (one warp
over NB rows of B) at odd lengths, where rows start 2-byte aligned and every eighth row on a
16-byte boundary, so one launch takes both the skewed and the aligned path. Sources end at the
16-byte block of their last element (a read past it fails)."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from sm90_emu import compile_kernel, run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@functools.cache
def build(example: str, **params: str) -> object:
    return compile_kernel(str(EXAMPLES / f"{example}.tile"), dict(params))


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


@pytest.mark.parametrize(("mr", "m"), [(1, 1), (2, 2), (4, 3)])
@pytest.mark.parametrize(("n", "k"), [(6, 1001), (5, 300), (4, 512)])
def test_gemv_at_odd_k(mr: int, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(mr * n * k)
    a, b = rows(rng, m, k), rows(rng, n, k)
    c = poisoned(m, n)
    run(build("gemv", MR=str(mr)), (a, b, c))
    close(c, a.astype(np.float64) @ b.astype(np.float64).T)

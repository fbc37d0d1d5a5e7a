"""The SM90 GEMM example's launch rule, on the CPU: which build its `variant(...)` clauses pick
for a launch's sizes (the GPU tier's routing test launches the same cases against torch).

The clauses are read from the kernel's tile-stage attributes, as `tilec build` writes them into
the bundle's manifest, and tested with the runtime's own `all_hold` (Kernel.variant_for's)."""

from pathlib import Path

import pytest

from tilec.binding import functions
from tilec.build import variants_of
from tilec.context import make_context
from tilec.frontend import check, irgen, parse_source
from tilec.runtime.formula import all_hold

ROOT = Path(__file__).resolve().parents[2]
SMS = 132  # the H200's


def variants_for(params: dict[str, str]):  # noqa: ANN201
    src = (ROOT / "examples" / "gemm_sm90.tile").read_text()
    ctx = make_context()
    module = irgen(check(parse_source(src, "gemm_sm90.tile"), params), ctx)
    with ctx:
        (func,) = functions(module.operation)
        return variants_of(func)


@pytest.fixture(scope="module")
def variants():  # noqa: ANN201
    return variants_for({})


def chosen(variants, m: int, n: int, k: int, ldb: int | None = None) -> dict[str, str] | None:  # noqa: ANN001
    """The parameters of the first variant whose conditions all hold, else None (the default).
    B's leading dimension `ldb` is K (K-major, whole rows) unless given."""
    sizes = {"M": m, "N": n, "K": k, "ldb": k if ldb is None else ldb, "num_sms": SMS}
    return next((v.params for v in variants if all_hold(v.when, sizes)), None)


# (M, N, K) -> the parameters the build it runs sets (None: the kernel's own build).
CASES = [
    ((1000, 1500, 3000), {"CM": "2"}),  # 16-byte rows: clusters first
    ((32, 300, 72), {"CM": "2"}),
    ((1, 4096, 4096), {"SW": "1", "BN": "8", "STAGES": "8"}),
    ((8, 4096, 4096), {"SW": "1", "BN": "8", "STAGES": "8"}),
    ((9, 1000, 528), {"SW": "1", "BN": "16", "STAGES": "8"}),
    ((32, 300, 80), {"SW": "1", "BN": "32", "STAGES": "8"}),
    ((33, 11008, 256), {"SW": "1", "PP": "1", "BM": "64", "BN": "64", "STAGES": "8"}),
    ((128, 4096, 11008), {"SW": "1", "PP": "1", "BM": "64", "BN": "128", "STAGES": "8"}),
    ((192, 4096, 4096), {"SW": "1", "PP": "1", "BM": "64", "BN": "192", "STAGES": "6"}),
    ((200, 2000, 4096), {"PP": "1", "BN": "128", "STAGES": "5"}),  # 16 tiles, K at the bound
    ((256, 2048, 1024), {"PP": "1", "BN": "128"}),  # K under 2048: 4 stages
    ((193, 11008, 256), {"PP": "1", "BN": "128"}),
    ((1024, 4096, 256), None),  # 128 tiles: a wave 97% full
    ((256, 512, 4160), None),  # K past 4096
    ((4096, 4096, 4096), None),
]


@pytest.mark.parametrize(("size", "params"), CASES)
def test_gemm_sm90_launch_rule(variants, size: tuple[int, int, int], params) -> None:  # noqa: ANN001
    assert chosen(variants, *size) == params, size


def test_every_row_count_up_to_192_runs_a_swapped_build(variants) -> None:  # noqa: ANN001
    """With K a multiple of 16 (no cluster variant), M <= 192 always runs C^T = B A^T, with a
    wgmma n (BN) that covers M and is the smallest of the variants' that does."""
    bounds = (8, 16, 32, 64, 128, 192)
    for m in range(1, 200):
        got = chosen(variants, m, 4096, 4096)
        if m > 192:
            assert got is None or got.get("SW") is None, m
            continue
        assert got is not None and got["SW"] == "1", m
        assert int(got["BN"]) == min(b for b in bounds if b >= m), m


def test_the_leading_dimension_picks_the_clusters() -> None:
    """B's leading dimension, not K, decides the clusters of two (16- but not 32-byte rows):
    an odd K with rows padded to a multiple of 16 runs the swapped build."""
    kk = variants_for({})
    assert chosen(kk, 1, 4096, 4097, ldb=4112) == {"SW": "1", "BN": "8", "STAGES": "8"}
    assert chosen(kk, 1, 4096, 4096, ldb=4104) == {"CM": "2"}


def test_a_row_major_b_runs_the_swapped_builds_too() -> None:
    """K-major A, MN-major B (km: torch's x @ W, W of K x N): the few-row variants as kk's; an
    MN-major A (mk, mm) has none."""
    km = variants_for({"MB": "1"})
    assert chosen(km, 7, 4096, 4097, ldb=4096) == {"SW": "1", "BN": "8", "STAGES": "8"}
    want = {"SW": "1", "PP": "1", "BM": "64", "BN": "64", "STAGES": "8"}
    assert chosen(km, 64, 4096, 1001, ldb=4096) == want
    assert chosen(km, 64, 4104, 1001, ldb=4104) == {"CM": "2"}  # N % 16 == 8
    for mm in (variants_for({"MA": "1"}), variants_for({"MA": "1", "MB": "1"})):
        got = chosen(mm, 8, 4096, 4096, ldb=4096)
        assert got is None or got.get("SW") is None

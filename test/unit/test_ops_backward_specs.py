"""The families behind tilec.ops' backward kernels (tilec/ops/backward_specs.py): every row
length has a rule for f16 and bf16 on SM 8.x and 9.0, the buckets pick the builds the module's
docstring promises, and the norms' partial sums get at least one and at most R rows (no GPU,
no build)."""

from __future__ import annotations

import pytest

from tilec.ops import op_specs
from tilec.ops.attention_specs import ATTENTION_SPECS
from tilec.ops.backward_specs import BACKWARD_SPECS, partial_rows
from tilec.ops.gemm_specs import GEMM_SPECS
from tilec.ops.specs import SPECS
from tilec.runtime.family import runs_on
from tilec.runtime.formula import all_hold

ROWS = ("softmax_bwd", "layernorm_bwd", "rmsnorm_bwd")
NS = (1, 2, 255, 256, 257, 511, 512, 513, 1000, 1024, 1025, 4095, 4096, 4097, 4104, 8192, 8193,
      20000, 131072)  # fmt: skip


def first(name: str, arch: str, dtype: str, n: int) -> str:
    spec = BACKWARD_SPECS[name]()
    arg = spec.args[0][0]
    for rule in spec.rules:
        build = spec.builds[rule.build]
        if runs_on(build.arch, arch) and rule.dtypes.get(arg, dtype) == dtype:
            if all_hold(rule.when, {"N": n, "R": 4}):
                return rule.build
    raise AssertionError(f"{name} {dtype} N={n} on {arch}: no rule")


def test_op_specs_hold_every_table() -> None:
    tables = (SPECS, BACKWARD_SPECS, GEMM_SPECS, ATTENTION_SPECS)
    assert set(op_specs()) == set().union(*tables)
    assert sum(map(len, tables)) == len(op_specs())  # no name in two tables


@pytest.mark.parametrize("name", ROWS)
@pytest.mark.parametrize("arch", ["sm_90", "sm_80", "sm_86"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_every_row_length_has_a_rule(name: str, arch: str, dtype: str) -> None:
    spec = BACKWARD_SPECS[name]()
    for n in NS:
        build = spec.builds[first(name, arch, dtype, n)]
        assert build.params["T"] == dtype and build.arch == "sm_80"


def test_buckets() -> None:
    def tag(name: str, n: int) -> str:
        return first(name, "sm_90", "bf16", n).removesuffix("_bf16")

    assert [tag("softmax_bwd", n) for n in (1, 256, 257, 512, 513, 1025, 4096, 4097, 9000)] == [
        "r4c256", "r4c256", "r2c512", "r2c512", "c1024", "c2048", "c4096", "c8192", "c8192",
    ]  # fmt: skip
    for name in ("layernorm_bwd", "rmsnorm_bwd"):
        # rows of 16-byte chunks (N % 8 == 0) up to 8192: the cp.async kernels; others up to
        # 4096 the register kernels; the rest the _long kernels
        got = [tag(name, n) for n in (1, 256, 257, 1000, 1024, 2049, 4096, 4097, 4104, 8192)]
        assert got == ["c256", "p256", "c512", "p1024", "p1024", "c4096", "p4096", "long",
                       "p8192", "p8192"]  # fmt: skip
        assert tag(name, 8193) == tag(name, 8200) == tag(name, 131072) == "long"
        spec = BACKWARD_SPECS[name]()
        assert spec.builds["long_f16"].kernel == f"{name}_long"
        assert spec.builds["p4096_f16"].kernel == f"{name}_persistent"
        assert spec.builds["c4096_f16"].params == {"COLS": "4096", "T": "f16"}
    assert BACKWARD_SPECS["layernorm_bwd"]().builds["p8192_bf16"].params["THREADS"] == "512"


@pytest.mark.parametrize("name", ["layernorm_bwd", "rmsnorm_bwd"])
def test_partial_rows(name: str) -> None:
    # the blocks of N's bucket an SM holds (8 elements a thread, 16 warps an SM), at most R
    assert partial_rows(name, 4096, 16384, 132) == 132
    assert partial_rows(name, 1024, 16384, 132) == 4 * 132
    assert partial_rows(name, 200, 1 << 20, 132) == 16 * 132
    assert partial_rows(name, 50000, 1 << 20, 132) == 132
    for n in NS:
        for r in (1, 3, 200):
            assert 1 <= partial_rows(name, n, r, 132) <= r


def test_colsum_rules_by_output_dtype() -> None:
    spec = BACKWARD_SPECS["colsum"]()
    assert [(r.build, r.dtypes) for r in spec.rules] == [
        (f"o{o}", {"P": "f32", "Y": o}) for o in ("f32", "f16", "bf16")
    ]
    assert {b.params["O"] for b in spec.builds.values()} == {"f32", "f16", "bf16"}

"""The families behind tilec.ops (tilec/ops/specs.py): every row length has a rule on SM 9.0 and
SM 8.x for f16 and bf16, and the buckets pick the builds the module's docstring promises (the
rules' formulas evaluated as a family evaluates them; no GPU, no build)."""

from __future__ import annotations

import pytest

from tilec.ops.specs import SPECS
from tilec.runtime.family import runs_on
from tilec.runtime.formula import all_hold

NS = sorted({1, 2, 255, 256, 257, 512, 513, 1000, 1001, 1024, 1025, 4095, 8192, 8193, 12288, 12289,
             16384, 16385, 20000, 32768, 32769, 40000, 65536, 131071, 131072})  # fmt: skip


def first(op: str, arch: str, dtype: str, n: int) -> str:
    spec = SPECS[op]()
    for rule in spec.rules:
        build = spec.builds[rule.build]
        if runs_on(build.arch, arch) and rule.dtypes.get("X", dtype) == dtype:
            if all_hold(rule.when, {"N": n, "R": 4}):
                return rule.build
    raise AssertionError(f"{op} {dtype} N={n} on {arch}: no rule")


@pytest.mark.parametrize("op", sorted(SPECS))
@pytest.mark.parametrize("arch", ["sm_90", "sm_80", "sm_86"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_every_row_length_has_a_rule(op: str, arch: str, dtype: str) -> None:
    for n in NS:
        build = SPECS[op]().builds[first(op, arch, dtype, n)]
        assert build.params["T"] == dtype
        assert build.arch == ("sm_90a" if arch == "sm_90" else "sm_80")


@pytest.mark.parametrize("op", sorted(SPECS))
def test_buckets_on_sm90(op: str) -> None:
    def tag(n: int) -> str:
        return first(op, "sm_90", "f16", n).removesuffix("_f16_sm90a")

    assert [tag(n) for n in (1, 256, 257, 512, 513, 1024, 1025, 8192)] == [
        "r4c256", "r4c256", "r2c512", "r2c512", "c1024", "c1024", "c2048", "c8192",
    ]  # fmt: skip
    assert tag(12288) == "p16384" and tag(12289) == "c16384"  # 16-byte rows: persistent
    assert tag(32768) == "p32768" and tag(32767) == ("c32768" if op == "softmax" else "c16384")
    assert tag(65536) == ("p32768" if op == "softmax" else "c16384")
    spec = SPECS[op]()
    assert spec.sizes == {"R": ("X", 0), "N": ("X", 1)}
    assert spec.rules[-1].build.startswith("c8192")  # the last resort for any long row


@pytest.mark.parametrize("name", ["softmax", "layernorm", "rmsnorm", "gemm"])
def test_shipped_tuning_tables_come_first_and_run_as_timed(name: str) -> None:
    """tilec/ops/tuning's tables (tilec tune's results) put their rules ahead of the spec's in
    what `tilec family build --op` and an on-demand family dispatch by, the narrowest buckets
    first (the tables' order among equals): each a build of the table's kernel and source with
    the best candidate's parameters, without variant clauses."""
    from pathlib import Path

    from tilec.ops import op_specs, shipped_tables, tuned_spec
    from tilec.runtime.family import repository_root
    from tilec.runtime.tuning_table import bucket_extent, read_table, tuned_rules

    tables = [read_table(p) for p in shipped_tables(name)]
    assert tables, f"no shipped table for {name}"
    expected = [r for t in tables for r in tuned_rules(t)]
    expected.sort(key=lambda r: bucket_extent(r.when))
    spec, bare = tuned_spec(name), op_specs()[name]()
    head = spec.rules[: len(expected)]
    assert [r.when for r in head] == [r.when for r in expected]
    assert [r.dtypes for r in head] == [r.dtypes for r in expected]
    assert spec.rules[len(expected) :] == bare.rules
    for rule, want in zip(head, expected, strict=True):
        build = spec.builds[rule.build]
        assert build.params == want.params and build.variants is False
        assert (Path(repository_root()) / build.source).is_file()
    # every row length of the tables' buckets still lands on a rule of the bare spec's kind too
    assert set(bare.builds) <= set(spec.builds)

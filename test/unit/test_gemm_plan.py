"""tilec.ops.gemm's dispatch without a GPU or torch (tilec/ops/gemm_plan.py, gemm_specs.py): over
a grid of shapes (M = 1, few rows, K = 1001 and 2002, odd N) and operand layouts (row- and
column-major A and B, an nn.Linear weight's transpose, sliced and misaligned views), both plans
(with a leading dimension: the SM90 `gemm` builds; exact: the epilogues, SM 8.x) never refuse,
the laid-out operands have the strides and alignment TMA and the builds' manifests take, exactly
the expected build of each family's rules takes them (the rules' formulas evaluated as a family
evaluates them, over sizes and strides), and no operand TMA reads as it is gets copied."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tilec.ops.gemm_plan import FEW_ROWS, Operand, Plan, plan, strides_after
from tilec.ops.gemm_specs import EPILOGUES, GEMM_SPECS, LAYOUTS
from tilec.runtime.family import FamilySpec, runs_on
from tilec.runtime.formula import all_hold

MS = (1, 7, 8, 16, 64, 129, 192, 193, 256, 1000, 4096)
NS = (1, 3, 8, 1001, 4096, 50257)
KS = (1, 7, 8, 1001, 2002, 4096, 4097)


def torch_a(m: int, k: int, form: str) -> Operand:
    """A (M x K) as torch holds it: row-major, column-major (X.t()), a slice of wider rows,
    or row-major at a 2-byte offset."""
    return {
        "row": Operand(m, k, (k, 1)),
        "col": Operand(m, k, (1, m)),
        "slice": Operand(m, k, (k + 3, 1)),
        "offset": Operand(m, k, (k, 1), aligned=False),
    }[form]


def torch_b(k: int, n: int, form: str) -> Operand:
    """B (K x N) as torch holds it, returned as the kernels' N x K operand B^T: row-major B
    (MN-major B^T), an nn.Linear weight's transpose W.t() (K-major B^T), a column slice."""
    return {
        "row": Operand(n, k, (1, n)),
        "weight": Operand(n, k, (k, 1)),
        "slice": Operand(n, k, (1, n + 5)),
        "offset": Operand(n, k, (1, n), aligned=False),
    }[form]


def after(op: Operand, how: str, major: str, k: int) -> Operand:
    """The operand once laid out (tilec.ops.gemm.laid_out, in strides; test_torch_ops_fake.py
    checks that it makes these): torch's fresh allocations are 16-byte aligned."""
    strides = strides_after(op, how, major, k)
    copied = how not in ("keep", "view")
    return Operand(op.rows, k, strides, op.aligned or copied)


def tma_reads(op: Operand) -> bool:
    """Whether TMA reads the operand as it is, K-major or MN-major: a 16-byte base, a unit
    stride along K or R, the other stride a whole number of 16-byte chunks spanning that dim
    (a stride along a dim of extent 1 is free: nothing is read along it)."""
    sr, sk = op.strides
    for unit, unit_n, ld, ld_n in ((sk, op.k, sr, op.rows), (sr, op.rows, sk, op.k)):
        spans = ld % 8 == 0 and ld >= unit_n or ld_n == 1
        if op.aligned and (unit == 1 or unit_n == 1) and spans:
            return True
    return False


def symbols(a: Operand, b: Operand) -> dict[str, int]:
    return {"M": a.rows, "N": b.rows, "K": a.k, "SA_M": a.strides[0], "SA_K": a.strides[1],
            "SB_N": b.strides[0], "SB_K": b.strides[1]}  # fmt: skip


def chosen(spec: FamilySpec, arch: str, dtypes: dict[str, str], syms: dict[str, int]) -> str:
    for rule in spec.rules:
        if not runs_on(spec.builds[rule.build].arch, arch):
            continue
        if any(rule.dtypes.get(k, v) != v for k, v in dtypes.items()):
            continue
        if all_hold(rule.when, syms):
            return rule.build
    raise AssertionError(f"{spec.name}: no rule takes {syms} {dtypes} on {arch}")


def binds(op: Operand, major: str, lead: bool) -> bool:
    """What a build's manifest and TMA check: a unit stride along the contiguous dim, the outer
    one a multiple of 16 bytes whatever its extent, a 16-byte base; exact builds (not `lead`)
    want the outer stride K (K-major) or R (MN-major) too (a dim of extent 1 takes any)."""
    want = (op.k, 1) if major == "k" else (1, op.rows)
    extents = (op.rows, op.k)
    inner, outer = (1, 0) if major == "k" else (0, 1)
    ok = [s == w or n == 1 for s, w, n in zip(op.strides, want, extents, strict=True)]
    spans = op.strides[outer] >= extents[inner] or extents[outer] == 1
    exact = all(ok) if not lead else ok[inner] and spans
    return exact and op.aligned and op.strides[outer] % 8 == 0


GRID = list(itertools.product(MS, NS, KS, ("row", "col", "slice", "offset"),
                              ("row", "weight", "slice", "offset")))  # fmt: skip


def laid(a: Operand, b: Operand, p: Plan) -> tuple[Operand, Operand]:
    return after(a, p.a, p.layout[0], p.k), after(b, p.b, p.layout[1], p.k)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_nothing_is_refused_and_one_layout_rule_takes_it(dtype: str) -> None:
    gemm, sm80 = GEMM_SPECS["gemm"](), GEMM_SPECS["gemm_sm80"]()
    for (m, n, k, fa, fb), lead in itertools.product(GRID, (True, False)):
        a, b = torch_a(m, k, fa), torch_b(k, n, fb)
        p = plan(a, b, lead)
        la, lb = laid(a, b, p)
        what = f"M={m} N={n} K={k} A {fa} B {fb} lead={lead}: {p}"
        ma, mb = LAYOUTS[p.layout]
        assert binds(la, "mn" if ma else "k", lead), what
        assert binds(lb, "mn" if mb else "k", lead), what
        syms = symbols(la, lb)
        # the SM90 `gemm` builds take either plan's operands (the composed epilogues run it on
        # the exact plan's)
        build = chosen(gemm, "sm_90", {"A": dtype, "C": dtype}, syms)
        assert build == f"{p.layout}_{dtype}", what
        assert gemm.builds[build].params["MA"] == str(ma), what
        f32 = chosen(gemm, "sm_90", {"A": dtype, "C": "f32"}, syms)
        assert f32 == f"{p.layout}_{dtype}_of32", what
        if lead:
            assert p.k == k, what  # nothing zero-padded: the kernel runs K
            continue
        assert chosen(sm80, "sm_80", {"A": dtype, "C": dtype}, syms).startswith(p.layout), what
        if p.layout == "kk":  # the fused epilogues take it, on both targets where they exist
            for fam, _, act80 in EPILOGUES.values():
                spec = GEMM_SPECS[fam]()
                assert chosen(spec, "sm_90", {"A": dtype}, syms) == f"kk_{dtype}_sm90a"
                if act80 is not None:
                    assert chosen(spec, "sm_86", {"A": dtype}, syms) == f"kk_{dtype}_sm80"


def test_no_operand_tma_reads_is_copied() -> None:
    """With a leading dimension an operand is copied only where TMA cannot read it as it is
    (the weight above all), but for a few-row MN-major A (copied K-major: the swapped builds);
    a copy's rows lie round_up(K, 8) apart, nothing zero-filled."""
    for m, n, k, fa, fb in GRID:
        a, b = torch_a(m, k, fa), torch_b(k, n, fb)
        p = plan(a, b)
        what = f"M={m} N={n} K={k} A {fa} B {fb}: {p}"
        assert (p.b == "contiguous") == (not tma_reads(b)), what
        few = m <= FEW_ROWS and a.strides[0] == 1 and m > 1
        assert (p.a == "contiguous") == (not tma_reads(a) or few), what
        assert p.a != "pad" != p.b and p.k == k, what


def test_the_plan_copies_only_what_tma_refuses() -> None:
    # torch's x @ W.t() (nn.Linear): both K-major, nothing copied, at any M and N
    assert plan(torch_a(4096, 4096, "row"), torch_b(4096, 50257, "weight")) == Plan(
        "keep", "keep", 4096, "kk"
    )
    # row-major A @ row-major B: B^T is MN-major, kept where N % 8 == 0
    assert plan(torch_a(512, 4096, "row"), torch_b(4096, 1024, "row")).layout == "km"
    # ... and copied K-major where N is odd (its columns are not 16-byte chunks)
    assert plan(torch_a(512, 4096, "row"), torch_b(4096, 1001, "row")) == Plan(
        "keep", "contiguous", 4096, "kk"
    )
    # column-major A (a transpose, as autograd's A^T dZ): kept MN-major
    assert plan(torch_a(1024, 512, "col"), torch_b(512, 256, "row")) == Plan(
        "keep", "keep", 512, "mm"
    )
    # one row of a matrix whose rows are not 16-byte chunks: viewed (its row stride is free)
    assert plan(Operand(1, 4096, (4099, 1)), torch_b(4096, 256, "weight")).a == "view"
    assert plan(Operand(1, 4096, (4099, 1)), torch_b(4096, 256, "weight"), False).a == (
        "contiguous"
    )
    assert plan(Operand(1, 4096, (4104, 1)), torch_b(4096, 256, "weight")).a == "keep"
    # a slice with a wider leading dimension: kept where that is a multiple of 8, else copied
    assert plan(Operand(64, 512, (520, 1)), torch_b(512, 256, "weight")).a == "keep"
    exact = plan(Operand(64, 512, (520, 1)), torch_b(512, 256, "weight"), False)
    assert exact.a == "contiguous"
    assert plan(torch_a(64, 512, "slice"), torch_b(512, 256, "weight")).a == "contiguous"
    # a misaligned base: copied
    assert plan(torch_a(300, 512, "offset"), torch_b(512, 256, "weight")).a == "contiguous"


def test_the_cached_plan_tells_operands_apart() -> None:
    """plan is cached per operand pair and mode: a pair differing only in alignment, a stride
    or an extent gets its own plan, the same pair the same one (from the cache)."""
    b = torch_b(512, 256, "weight")
    first = plan(Operand(64, 512, (512, 1)), b)
    assert plan(Operand(64, 512, (512, 1)), b) is first
    assert plan(Operand(64, 512, (512, 1), aligned=False), b).a == "contiguous" != first.a
    assert plan(Operand(64, 512, (520, 1)), b, False).a == "contiguous"
    assert plan(Operand(64, 512, (1, 64)), b) == Plan("contiguous", "keep", 512, "kk")
    assert plan(Operand(256, 512, (1, 256)), b) == Plan("keep", "keep", 512, "mk")


def test_few_rows_go_k_major_for_the_swapped_builds() -> None:
    for m, fb, lead in itertools.product((16, FEW_ROWS), ("weight", "row"), (True, False)):
        p = plan(torch_a(m, 4096, "col"), torch_b(4096, 4096, fb), lead)
        if not lead and fb == "row":  # exact builds: mm (no swapped mm, km builds there)
            assert p == Plan("keep", "keep", 4096, "mm"), m
            continue
        assert p == Plan("contiguous", "keep", 4096, "k" + ("k" if fb == "weight" else "m")), m
    # one row, column-major: strides (1, 1), K-major but for TMA's outer stride of 2 bytes
    assert plan(torch_a(1, 4096, "col"), torch_b(4096, 4096, "weight")).a == "view"
    assert plan(torch_a(1, 4096, "col"), torch_b(4096, 4096, "weight"), False).a == "contiguous"
    p = plan(torch_a(FEW_ROWS + 8, 4096, "col"), torch_b(4096, 4096, "weight"))
    assert p == Plan("keep", "keep", 4096, "mk")


def test_k_not_a_multiple_of_8_with_a_leading_dimension() -> None:
    """The kernel runs K itself: a row-major B (decode with an odd hidden size, x @ W with W of
    K x N) is never copied; A is viewed (one row) or copied with its rows 8-aligned; only a B
    whose rows TMA cannot read (an nn.Linear weight of odd K) is copied."""
    for m, k in itertools.product((1, 7, 64, 4096), (1001, 4097)):
        p = plan(torch_a(m, k, "row"), torch_b(k, 4096, "row"))
        assert p == Plan("view" if m == 1 else "contiguous", "keep", k, "km"), (m, k)
        p = plan(torch_a(m, k, "col"), torch_b(k, 4096, "row"))
        if m % 8 == 0 and m > FEW_ROWS:
            assert p == Plan("keep", "keep", k, "mm"), (m, k)
        p = plan(torch_a(m, k, "row"), torch_b(k, 4096, "weight"))
        assert p.b == "contiguous" and p.layout == "kk" and p.k == k, (m, k)
    a = torch_a(1, 4097, "row")
    assert after(a, "view", "k", 4097).strides == (4104, 1)  # the same memory, a free stride
    assert after(torch_b(4097, 4096, "weight"), "contiguous", "k", 4097).strides == (4104, 1)


def test_k_not_a_multiple_of_8_exactly() -> None:
    # M and N multiples of 8: the operands go MN-major (row-major B^T is already)
    assert plan(torch_a(4096, 2002, "row"), torch_b(2002, 4096, "row"), False) == Plan(
        "transposed", "keep", 2002, "mm"
    )
    assert plan(torch_a(4096, 2002, "col"), torch_b(2002, 4096, "weight"), False) == Plan(
        "keep", "transposed", 2002, "mm"
    )
    # one row (decode) or an odd N: both padded with zeros to K' = 1008
    assert plan(torch_a(1, 1001, "row"), torch_b(1001, 4096, "weight"), False) == Plan(
        "pad", "pad", 1008, "kk"
    )
    assert plan(torch_a(64, 1001, "row"), torch_b(1001, 1001, "row"), False) == Plan(
        "pad", "pad", 1008, "kk"
    )
    assert plan(torch_a(8, 1, "row"), torch_b(1, 3, "row"), False).k == 8


def test_mismatched_k_is_an_error() -> None:
    with pytest.raises(ValueError, match="K = 8, B has K = 16"):
        plan(Operand(4, 8, (8, 1)), Operand(4, 16, (16, 1)))


def test_specs_round_trip_and_name_real_sources() -> None:
    from tilec.runtime.family import repository_root

    for name, make in GEMM_SPECS.items():
        spec = make()
        assert spec.name == name
        assert FamilySpec.from_json(spec.to_json()) == spec
        for build in spec.builds.values():
            assert (repository_root() / build.source).is_file(), build
            assert build.params["T"] in ("f16", "bf16")
        assert {r.build for r in spec.rules} == set(spec.builds), name


def test_bmm_rules() -> None:
    """K-major operands (K % 8 == 0) take the kk builds; B^T N-major (torch.bmm's row-major B)
    the km builds (SM90 only) at any K, with A's and B's leading dimensions multiples of 8."""
    spec = GEMM_SPECS["bmm"]()
    syms = {"L": 4, "M": 100, "N": 77, "K": 64, "SA_M": 64, "SA_K": 1, "SB_N": 64, "SB_K": 1}
    assert chosen(spec, "sm_90", {"A": "bf16"}, syms) == "kk_bf16_sm90a"
    with pytest.raises(AssertionError, match="no rule"):
        chosen(spec, "sm_90", {"A": "bf16"}, {**syms, "K": 63, "SA_M": 63, "SB_N": 63})
    row_b = {**syms, "N": 136, "SB_N": 1, "SB_K": 136}
    for k, lda in ((64, 64), (77, 80), (1, 8)):
        got = chosen(spec, "sm_90", {"A": "f16"}, {**row_b, "K": k, "SA_M": lda})
        assert got == "km_f16_sm90a", (k, lda)
    for bad in ({"SA_M": 77}, {"SB_K": 100}, {"SB_N": 2}, {"SA_K": 2}):
        with pytest.raises(AssertionError, match="no rule"):
            chosen(spec, "sm_90", {"A": "f16"}, {**row_b, **bad})
    assert spec.builds["km_f16_sm90a"].params == {"MB": "1", "T": "f16"}
    sm80 = GEMM_SPECS["bmm_sm80"]()
    assert chosen(sm80, "sm_80", {"A": "f16"}, syms) == "kk_f16_sm80"
    assert set(sm80.builds) == {"kk_f16_sm80", "kk_bf16_sm80"}


def test_the_bench_parses_its_arguments_without_torch(capsys: pytest.CaptureFixture[str]) -> None:
    """bench/bench_gemm_ops.py imports torch only to run: --list and bad arguments work here."""
    import importlib.util

    from tilec.runtime.family import repository_root

    path = repository_root() / "bench" / "bench_gemm_ops.py"
    spec = importlib.util.spec_from_file_location("bench_gemm_ops", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--list", "--sets", "few,odd_k"]) == 0
    out = capsys.readouterr().out
    assert "few: 1x4096x4096" in out and "odd_k: 2048x2048x2002" in out
    assert bench.parse(["--shapes", "1x2x3"]).shape_list == [("shapes", (1, 2, 3))]
    for bad in (["--sets", "cubes"], ["--shapes", "1x2"], ["--dtypes", "f32"]):
        with pytest.raises(SystemExit):
            bench.parse(bad)


def test_the_built_families_bind_the_planned_operands(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where build/families holds the GEMM families (test/gpu/build_gemm_families.sh), their
    real manifests (exact strides, TMA's 16-byte rules, requires) take each planned layout
    through the rules, on a stand-in SM 9.0 (Family.select binds; nothing launches)."""
    from test_runtime import FakeCuda

    from tilec.runtime import driver
    from tilec.runtime.family import open_family, repository_root

    root = repository_root() / "build" / "families"
    if not all((root / f / "family.json").is_file() for f in ("gemm", "gemm_bias", "bmm")):
        pytest.skip("no GEMM families in build/families (test/gpu/build_gemm_families.sh)")
    monkeypatch.setattr(driver, "capability", lambda device=None: (9, 0))
    monkeypatch.setattr(driver, "sm_count", lambda device=None: 132)
    gemm, bias = (open_family(root / f, compile_build=False) for f in ("gemm", "gemm_bias"))
    ptrs = iter(range(0x7F0000000000, 0x7FF000000000, 1 << 24))

    def arr(shape: tuple[int, ...], strides: tuple[int, ...], typestr: str = "<f2") -> Any:
        size = 2 if typestr == "<f2" else 4
        return FakeCuda(shape, typestr, next(ptrs), tuple(s * size for s in strides))

    grid = itertools.product(
        (1, 8, 129, 1000),
        (3, 8, 4096),
        (7, 8, 2002, 4097),
        ("row", "col", "slice"),
        ("row", "weight"),
    )
    for (m, n, k, fa, fb), lead in itertools.product(grid, (True, False)):
        a, b = torch_a(m, k, fa), torch_b(k, n, fb)
        p = plan(a, b, lead)
        la, lb = laid(a, b, p)
        x, y = arr((m, p.k), la.strides), arr((n, p.k), lb.strides)
        for typestr, tag in (("<f2", ""), ("<f4", "_of32")):
            got = gemm.select(x, y, arr((m, n), (n, 1), typestr))
            assert got == f"{p.layout}_f16{tag}", f"M={m} N={n} K={k} A {fa} B {fb}: {p}"
        if p.layout == "kk" and not lead:
            c, v = arr((m, n), (n, 1)), arr((m, n), (0, 1))
            assert bias.select(x, y, c, v, 1.0, 0.0) == "kk_f16_sm90a"


def test_the_built_bmm_family_binds_both_layouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where build/families holds `bmm`, its real manifests take a K-major B^T (kk) and
    torch.bmm's row-major B as it lies (km: B^T N-major, ldb = N), beside an A of odd K whose
    rows lie round_up(K, 8) apart, on a stand-in SM 9.0 (Family.select binds; no launch)."""
    from test_runtime import FakeCuda

    from tilec.runtime import driver
    from tilec.runtime.family import open_family, repository_root

    root = repository_root() / "build" / "families" / "bmm"
    if not (root / "family.json").is_file():
        pytest.skip("no bmm family in build/families (test/gpu/build_gemm_families.sh)")
    monkeypatch.setattr(driver, "capability", lambda device=None: (9, 0))
    monkeypatch.setattr(driver, "sm_count", lambda device=None: 132)
    bmm = open_family(root, compile_build=False)
    ptrs = iter(range(0x7F0000000000, 0x7FF000000000, 1 << 24))

    def arr(shape: tuple[int, ...], strides: tuple[int, ...], typestr: str = "<f2") -> Any:
        return FakeCuda(shape, typestr, next(ptrs), tuple(s * 2 for s in strides))

    x, y = arr((3, 100, 64), (6400, 64, 1)), arr((3, 77, 64), (0, 64, 1))
    assert bmm.select(x, y, arr((3, 100, 77), (7700, 77, 1))) == "kk_f16_sm90a"
    c = arr((3, 100, 136), (13600, 136, 1))
    for k, lda in ((64, 64), (77, 80)):
        x, y = arr((3, 100, k), (100 * lda, lda, 1)), arr((3, 136, k), (136 * k, 1, 136))
        assert bmm.select(x, y, c) == "km_f16_sm90a", k


def test_few_rows_against_a_weight_tma_cannot_read_run_the_row_kernels() -> None:
    """row_plan: up to 16 rows and a B whose K is contiguous but whose rows TMA cannot read (an
    nn.Linear weight at K % 8 != 0) go to the `gemv` family (up to 4 rows) or `gemm_skinny`,
    B kept where it lies, A kept where its K is contiguous; the smallest build of at least M
    rows takes the laid-out operands. Everything else stays with the GEMM plan."""
    from tilec.ops.gemm_plan import ROW_KERNEL_ROWS, SKINNY_ROWS, row_plan
    from tilec.ops.gemm_specs import GEMV_ROWS, SKINNY

    assert max(GEMV_ROWS) == ROW_KERNEL_ROWS and max(SKINNY) == SKINNY_ROWS
    gemv, skinny = GEMM_SPECS["gemv"](), GEMM_SPECS["gemm_skinny"]()
    grid = GRID + [(m, 4096, 4097, fa, "weight") for m in (5, 9, 16, 17, 32, 33, 64)
                   for fa in ("row", "col", "offset")]  # fmt: skip
    for m, n, k, fa, fb in grid:
        a, b = torch_a(m, k, fa), torch_b(k, n, fb)
        p = row_plan(a, b)
        what = f"M={m} N={n} K={k} A {fa} B {fb}: {p}"
        rows = m <= SKINNY_ROWS and b.strides[1] == 1 and b.aligned and not tma_reads(b)
        assert (p is not None) == rows, what
        if p is None:
            continue
        assert p.kernel == ("gemv" if m <= ROW_KERNEL_ROWS else "gemm_skinny"), what
        assert p.b == "keep" and p.k == k, what
        assert p.a == ("keep" if a.strides[1] == 1 and a.aligned else "contiguous"), what
        syms = symbols(after(a, p.a, "k", k), b)
        if p.kernel == "gemm_skinny":
            bm = min(r for r in SKINNY if r >= m)
            assert chosen(skinny, "sm_90", {"A": "bf16"}, syms) == f"m{bm}_bf16", what
            continue
        for out, tag in (("bf16", ""), ("f32", "_of32")):
            mr = min(r for r in GEMV_ROWS if r >= m)
            build = chosen(gemv, "sm_90", {"A": "bf16", "C": out}, syms)
            assert build == f"r{mr}_bf16{tag}", what
    # decode against a Linear weight of odd K: B read where it lies (its rows 2-byte aligned)
    w = torch_b(4097, 4096, "weight")
    assert row_plan(torch_a(1, 4097, "row"), w) == Plan("keep", "keep", 4097, "kk", "gemv")
    assert row_plan(torch_a(4, 4097, "col"), w) == Plan("contiguous", "keep", 4097, "kk", "gemv")
    assert row_plan(torch_a(3, 4097, "offset"), w).a == "contiguous"  # A's base misaligned
    five = Plan("keep", "keep", 4097, "kk", "gemm_skinny")
    assert row_plan(torch_a(5, 4097, "row"), w) == five
    assert row_plan(torch_a(16, 4097, "row"), w).kernel == "gemm_skinny"
    assert row_plan(torch_a(32, 4097, "row"), w).kernel == "gemm_skinny"
    assert row_plan(torch_a(33, 4097, "row"), w) is None  # past 32 rows: the GEMM (B copied)
    assert row_plan(torch_a(1, 4097, "row"), Operand(9, 4097, (4097, 1), False)) is None
    assert row_plan(torch_a(1, 4096, "row"), torch_b(4096, 4096, "weight")) is None  # TMA reads
    with pytest.raises(ValueError, match="K = 8, B has K = 16"):
        row_plan(Operand(4, 8, (8, 1)), Operand(4, 16, (16, 1)))


def test_splits_fill_the_sms_within_the_k_tiles() -> None:
    """gemm_skinny's split count: SKINNY_WAVES blocks per SM over cdiv(N, BN) column tiles,
    at least 1, at most SKINNY_SPLITS and the k-tiles (each split takes k-tiles s, s + S, ...).
    On 132 SMs both shapes it was timed at take 8."""
    from tilec.ops.gemm_plan import SKINNY_SPLITS, SKINNY_WAVES, splits

    assert splits(4096, 4097, 64, 32, 132) == splits(11008, 4097, 64, 32, 132) == 8
    assert splits(50257, 4097, 64, 32, 132) == round(SKINNY_WAVES * 132 / 786)  # a vocabulary
    assert splits(1000, 40, 64, 32, 132) == 2  # K of two k-tiles: no more splits than that
    assert splits(1 << 20, 4097, 64, 32, 132) == 1  # N alone fills the SMs
    for n, k in itertools.product((1, 63, 64, 65, 4096, 11008, 100000), (1, 31, 33, 4097)):
        s = splits(n, k, 64, 32, 132)
        assert 1 <= s <= min(SKINNY_SPLITS, max(1, -(-k // 32))), (n, k, s)

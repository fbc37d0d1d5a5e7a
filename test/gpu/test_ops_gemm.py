"""GPU tier: tilec.ops.gemm and bmm (tilec/ops/gemm.py) and torch.ops.tilec.gemm's autograd,
against torch in float64 on fresh randn data: every rule of the GEMM families this device runs
chosen at least once (launched directly on NaN-poisoned outputs), the plan's paths (operands
kept, copied K-major, transposed, zero-padded along K), few rows, K = 1001 and 2002, odd N,
column-major and sliced operands, bias with each activation (fused and composed), alpha, beta
and C, out_dtype, bmm, empty sizes, bad input refused; the few-row kernel (gemv) on weights TMA
cannot read (odd K: rows 2-byte aligned), M = 1 .. 4, and past that gemm_skinny's split-K
partial sums added up by colsum, M = 5 .. 32.

Families: bash test/gpu/build_gemm_families.sh on a machine with MLIR (or $TILEC_FAMILIES);
this file needs only the runtime, torch and a GPU.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

ROOT = Path(
    os.environ.get("TILEC_FAMILIES", Path(__file__).resolve().parents[2] / "build/families")
)
FAMILIES = ("gemm", "gemm_bias", "gemm_bias_relu", "gemm_bias_gelu", "gemm_bias_gelu_tanh",
            "gemm_addmm", "bmm", "gemm_sm80", "gemm_f32_sm80", "bmm_sm80", "gemv",
            "gemm_skinny", "colsum", "pad_rows")  # fmt: skip
SM8X_ONLY = ("gemm_sm80", "gemm_f32_sm80", "bmm_sm80")
if not all((ROOT / f / "family.json").is_file() for f in FAMILIES):
    pytest.skip(f"no GEMM families in {ROOT} (test/gpu/build_gemm_families.sh)",
                allow_module_level=True)  # fmt: skip
os.environ.setdefault("TILEC_FAMILIES", str(ROOT))

import tilec.ops as ops  # noqa: E402
import tilec.torch_ops  # noqa: E402, F401  (registers torch.ops.tilec)
from tilec.ops.gemm import _operand  # noqa: E402
from tilec.ops.gemm_plan import row_plan  # noqa: E402
from tilec.ops.gemm_specs import LAYOUTS  # noqa: E402
from tilec.runtime.family import device_arch, runs_on  # noqa: E402

DTYPES = (torch.float16, torch.bfloat16)
IDS = ("f16", "bf16")
NAMES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}
CHOSEN: dict[str, set[str]] = defaultdict(set)
SM90 = device_arch(None) == "sm_90"


def rand(*shape: int, seed: int, dtype: Any = torch.float32) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).to(dtype)


def rel_err(y: torch.Tensor, ref: torch.Tensor) -> float:
    floor = 1e-3 * max(ref.numel(), 1) ** 0.5
    return ((y.double() - ref).norm() / (ref.norm() + floor)).item()


def close(got: torch.Tensor, ref: torch.Tensor, dt: Any, what: str) -> None:
    tol = {torch.bfloat16: 1.5e-2, torch.float16: 4e-3}.get(dt, 1e-3)
    assert got.shape == ref.shape, f"{what}: shape {tuple(got.shape)}, not {tuple(ref.shape)}"
    assert not torch.isnan(got).any(), f"{what}: unwritten or NaN"
    err = rel_err(got, ref)
    assert err < tol, f"{what}: relative error {err:.2e}"


def poison(nbytes: int) -> None:
    """Leave NaN in the blocks torch's caching allocator hands out next (the outputs tilec.ops
    allocates), so an element the kernels leave unwritten shows."""
    block = torch.full((nbytes // 2 + 4096,), float("nan"), dtype=torch.float16, device="cuda")
    del block


def launch(name: str, *args: Any) -> None:
    fam = ops.family(name)
    CHOSEN[name].add(fam.select(*args))
    fam(*args)
    torch.cuda.synchronize()


def operand(rows: int, k: int, major: str, dt: Any, seed: int) -> torch.Tensor:
    """An R x K operand of the kernels, K-major ("k") or MN-major ("m")."""
    x = rand(rows, k, seed=seed, dtype=dt)
    return x if major == "k" else x.t().contiguous().t()


# every rule of the families, launched directly ------------------------------------------------


@pytest.mark.parametrize("out", ["T", "f32"])
@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize(
    "mnk", [(136, 264, 72), (1, 4096, 4096), (16, 200, 512), (1000, 1016, 2048)]
)
def test_gemm_family_rules(mnk: tuple[int, int, int], layout: str, dt: Any, out: str) -> None:
    """Each layout build (and, through its variants, the few-row, few-wave and clustered
    forms) on NaN-poisoned C."""
    m, n, k = mnk
    if layout[0] == "m" and m % 8 or layout[1] == "m" and n % 8:
        pytest.skip("MN-major needs M (N) % 8 == 0")
    ma, mb = LAYOUTS[layout]
    a = operand(m, k, "m" if ma else "k", dt, seed=m + k)
    b = operand(n, k, "m" if mb else "k", dt, seed=n + k + 1)
    odt = dt if out == "T" else torch.float32
    ref = a.double() @ b.double().t()
    c = torch.full((m, n), float("nan"), dtype=odt, device="cuda")
    if SM90:
        launch("gemm", a, b, c)
    elif out == "T":
        launch("gemm_sm80", a, b, c, 1.0)
    else:
        if layout != "kk":
            pytest.skip("gemm_f32_sm80 takes K-major operands")
        w = torch.full((1, m, n), float("nan"), dtype=torch.float32, device="cuda")
        launch("gemm_f32_sm80", a, b, w)
        c = w[0]
    close(c, ref, dt, f"{layout} {mnk} C {NAMES[odt]}")


def test_tuned_rules_run_their_builds_and_match() -> None:
    """Each rule a tuning table added to the gemm family (`tilec family build --tuning`), at
    the largest shape of its bucket: its build is the one chosen, C against float64 torch on
    NaN-poisoned memory, its operands laid out as the build binds them (MA, MB: a table timed
    on MN-major operands); the same call with B laid out the other way takes another build
    (the tuned build's binding refuses it)."""
    spec = ops.family("gemm").spec
    tuned = [r for r in spec.rules if r.build.startswith("tuned_")]
    if not SM90 or not tuned:
        pytest.skip("no tuned rules here (a family built without --tuning, or not SM 9.0)")
    for i, rule in enumerate(tuned):
        sizes = {w.split(" <= ")[0]: int(w.split(" <= ")[1]) for w in rule.when if " <= " in w}
        m, n, k = sizes["M"], sizes["N"], sizes["K"]
        params = spec.builds[rule.build].params
        ma, mb = (int(params.get(p, 0)) for p in ("MA", "MB"))
        dt = {"f16": torch.float16, "bf16": torch.bfloat16}[rule.dtypes["A"]]
        a = operand(m, k, "m" if ma else "k", dt, seed=90 + i)
        b = operand(n, k, "m" if mb else "k", dt, seed=190 + i)
        c = torch.full((m, n), float("nan"), dtype=dt, device="cuda")
        assert ops.family("gemm").select(a, b, c) == rule.build, rule
        launch("gemm", a, b, c)
        close(c, a.double() @ b.double().t(), dt, f"{rule.build} at {m}x{n}x{k}")
        if n % 8 == 0:
            other = operand(n, k, "k" if mb else "m", dt, seed=190 + i)
            assert ops.family("gemm").select(a, other, c) != rule.build


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("act", ["none", "relu", "gelu", "gelu_tanh", "addmm"])
@pytest.mark.parametrize("mn", [(8, 4096), (100, 1001), (777, 1536)])
def test_epilogue_family_rules(mn: tuple[int, int], act: str, dt: Any) -> None:
    m, n = mn
    k = 1024
    family = {"none": "gemm_bias", "addmm": "gemm_addmm"}.get(act, f"gemm_bias_{act}")
    spec = ops.family(family).spec
    if not any(runs_on(b.arch, device_arch(None)) for b in spec.builds.values()):
        pytest.skip(f"{family} has no build for this device")
    a, b = rand(m, k, seed=1, dtype=dt), rand(n, k, seed=2, dtype=dt) / 8
    bias = rand(n, seed=3, dtype=dt)
    alpha, beta = 0.5, (0.25 if act == "addmm" else 0.0)
    c0 = rand(m, n, seed=4, dtype=dt)
    c = c0.clone() if act == "addmm" else torch.full((m, n), float("nan"), dtype=dt, device="cuda")
    launch(family, a, b, c, bias.expand(m, n), alpha, beta)
    z = alpha * (a.double() @ b.double().t()) + bias.double() + beta * c0.double()
    ref = {"relu": F.relu(z), "gelu": F.gelu(z), "gelu_tanh": F.gelu(z, approximate="tanh")}
    close(c, ref.get(act, z), dt, f"{family} {mn}")


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("layout", ["kk", "km"])
@pytest.mark.parametrize("lmnk", [(3, 100, 77, 64), (8, 512, 512, 512), (2, 1024, 1024, 256)])
def test_bmm_family_rules(lmnk: tuple[int, ...], layout: str, dt: Any) -> None:
    """Each bmm build on NaN-poisoned C: K-major operands (kk), and B^T N-major (km, SM90:
    torch.bmm's row-major B, its rows round_up(N, 8) elements apart, NaN in the gap)."""
    l, m, n, k = lmnk
    if layout == "km" and not SM90:
        pytest.skip("the SM 8.x batched kernel reads K-major operands only")
    a = rand(l, m, k, seed=5, dtype=dt)
    if layout == "kk":
        b = rand(l, n, k, seed=6, dtype=dt)
    else:
        wide = torch.full((l, k, -(-n // 8) * 8), float("nan"), dtype=dt, device="cuda")
        wide[:, :, :n] = rand(l, k, n, seed=6, dtype=dt)
        b = wide[:, :, :n].transpose(1, 2)
    c = torch.full((l, m, n), float("nan"), dtype=dt, device="cuda")
    if SM90:
        launch("bmm", a, b, c)
        assert ops.family("bmm").select(a, b, c).startswith(layout)
    else:
        launch("bmm_sm80", a, b, c, 1.0)
    close(c, a.double() @ b.double().transpose(1, 2), dt, f"bmm {layout} {lmnk}")


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("lmnk", [(3, 200, 136, 72), (3, 200, 4096, 72), (2, 130, 264, 77)])
def test_bmm_reads_a_row_major_b_where_it_lies(lmnk: tuple[int, ...], dt: Any) -> None:
    """tilec.ops.bmm with torch.bmm's row-major B at ragged shapes (M, N past whole tiles, K
    past whole k-tiles; K = 77: A copied with rows 80 apart) on SM90: the km build takes B
    where it lies (its pointer, no copy), into a NaN-poisoned output, against float64."""
    if not SM90:
        pytest.skip("SM 8.x copies a row-major B K-major")
    import sys

    from tilec.ops.planned import PlannedCalls

    gemm_module = sys.modules["tilec.ops.gemm"]
    l, m, n, k = lmnk
    a, b = rand(l, m, k, seed=m, dtype=dt), rand(l, k, n, seed=n, dtype=dt) / 8
    seen: list[tuple[Any, ...]] = []

    class Recording:  # the bmm family, its call's arguments kept
        def __call__(self, *args: Any) -> None:
            seen.append(args)
            launch("bmm", *args)

        def launch(self, *args: Any) -> Any:
            return ops.family("bmm").launch(*args)

    family, planned = gemm_module.family, gemm_module.PLANNED
    gemm_module.family = lambda name: Recording() if name == "bmm" else family(name)
    gemm_module.PLANNED = PlannedCalls()  # a first call, whatever ran before
    try:
        poison(l * m * n * 2)
        y = ops.bmm(a, b)
    finally:
        gemm_module.family, gemm_module.PLANNED = family, planned
    (x, bt, c), = seen  # fmt: skip
    assert bt.data_ptr() == b.data_ptr() and bt.stride() == (k * n, 1, n)
    assert ops.family("bmm").select(x, bt, c) == f"km_{NAMES[dt]}_sm90a"
    close(y, a.double() @ b.double(), dt, f"bmm row-major B {lmnk}")


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("layout", ["kk", "km"])
@pytest.mark.parametrize("mnk", [(1, 4096, 4097), (7, 1000, 1001), (64, 4096, 1001),
                                 (192, 520, 77), (300, 264, 1001)])  # fmt: skip
def test_gemm_leading_dimension(mnk: tuple[int, int, int], layout: str, dt: Any) -> None:
    """The SM90 builds at an odd K: A's rows (a K-major B's too) round_up(K, 8) elements apart
    with NaN in the gap (one row: a view, its free stride a multiple of 8), a row-major B (km)
    as it is; the swapped few-row builds and the 128x256 one. A box that read past K fails."""
    if not SM90:
        pytest.skip("the SM 8.x builds take exact layouts")
    m, n, k = mnk
    ld = -(-k // 8) * 8

    def spaced(rows: int, seed: int) -> torch.Tensor:
        x = torch.full((rows, ld), float("nan"), dtype=dt, device="cuda")
        x[:, :k] = rand(rows, k, seed=seed, dtype=dt)
        return x[:, :k]

    a = spaced(m, m + k) if m > 1 else rand(1, k, seed=k, dtype=dt).as_strided((1, k), (ld, 1))
    b = spaced(n, n) if layout == "kk" else rand(k, n, seed=n, dtype=dt).t()
    c = torch.full((m, n), float("nan"), dtype=dt, device="cuda")
    launch("gemm", a, b, c)
    close(c, a.double() @ b.double().t(), dt, f"{layout} {mnk}")


@pytest.mark.parametrize("out", ["T", "f32"])
@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("nk", [(4096, 4097), (300, 1001), (33, 7), (5, 1), (64, 4096)])
@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_gemv_family_rules(m: int, nk: tuple[int, int], dt: Any, out: str) -> None:
    """examples/gemv.tile's builds (MR = 1, 2, 4; M <= MR) on NaN-poisoned C: B's rows at any
    offset (odd K: 2-byte aligned), A's rows K + 3 apart (at every offset) with NaN in the gap
    (a read past K shows), K past the tile (4097: a ragged last tile of one column) and within
    one (7, 1)."""
    n, k = nk
    odt = dt if out == "T" else torch.float32
    wide = torch.full((m, k + 3), float("nan"), dtype=dt, device="cuda")
    wide[:, :k] = rand(m, k, seed=m + k, dtype=dt)
    a = wide[:, :k]
    b = rand(n, k, seed=n + k, dtype=dt) / 8
    c = torch.full((m, n), float("nan"), dtype=odt, device="cuda")
    launch("gemv", a, b, c)
    close(c, a.double() @ b.double().t(), dt, f"gemv M={m} N={n} K={k} C {NAMES[odt]}")


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("s", [1, 3, 8])
@pytest.mark.parametrize("nk", [(4096, 4097), (300, 1001), (33, 7), (100, 1), (64, 4096)])
@pytest.mark.parametrize("m", [5, 8, 13, 16, 17, 24, 32])
def test_gemm_skinny_family_rules(m: int, nk: tuple[int, int], s: int, dt: Any) -> None:
    """examples/gemm_skinny.tile's builds (BM = 16 at 5 blocks an SM, BM = 32; the smallest
    with M <= BM, each chosen) into S NaN-poisoned
    partial sums: each written whole (splits with no k-tile as zeros), their sum A @ B^T. B's
    rows at any offset (odd K: 2-byte aligned), A's rows K + 3 apart with NaN in the gap (a
    read past K shows), K past a tile (4097), within one (7, 1), and at a multiple of 8."""
    n, k = nk
    wide = torch.full((m, k + 3), float("nan"), dtype=dt, device="cuda")
    wide[:, :k] = rand(m, k, seed=m + k, dtype=dt)
    a = wide[:, :k]
    b = rand(n, k, seed=n + k, dtype=dt) / 8
    w = torch.full((s, m, n), float("nan"), dtype=torch.float32, device="cuda")
    launch("gemm_skinny", a, b, w)
    assert not torch.isnan(w).any(), f"gemm_skinny M={m} N={n} K={k} S={s}: a split unwritten"
    close(w.double().sum(0), a.double() @ b.double().t(), dt, f"gemm_skinny {m}x{n}x{k} S={s}")


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("form", ["row", "col", "offset"])
@pytest.mark.parametrize("mk", [(1, 4097), (3, 1001), (4, 4097), (4, 2002), (2, 4095),
                                (5, 4097), (8, 2002), (8, 4095), (16, 4097), (33, 1001),
                                (17, 4097), (32, 4095), (64, 4097)])  # fmt: skip
def test_gemm_few_rows_against_a_weight_tma_cannot_read(
    mk: tuple[int, int], form: str, dt: Any
) -> None:
    """tilec.ops.gemm with up to 64 rows against an nn.Linear weight TMA cannot read (odd K, or
    K % 8 == 2: rows 4-byte aligned): up to 4 rows the row kernel, up to 32 gemm_skinny and
    colsum (the weight never copied), past that the weight copied by the row copy (pad_rows)
    and the GEMM; with a bias and an activation (composed) and f32 out too."""
    m, k = mk
    n = 1000
    a, b = torch_a(m, k, form, dt, seed=m), torch_b(k, n, "weight", dt, seed=k)
    assert (row_plan(_operand(a), _operand(b.t())) is not None) == (m <= 32)
    poison(m * n * 4)
    ref = a.double() @ b.double()
    close(ops.gemm(a, b), ref, dt, f"{mk} A {form}")
    bias = rand(n, seed=k + 1, dtype=dt)
    y = ops.gemm(a, b, bias=bias, activation="relu", out_dtype=torch.float32)
    assert y.dtype == torch.float32
    close(y, F.relu(ref + bias.double()), dt, f"{mk} A {form}, bias, relu, f32 out")


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("rnx", [(4096, 4097, 0), (7, 1001, 8), (33, 7, 16), (3, 1, 8), (2, 8, 0),
                                 (9, 2002, 24), (1, 20001, 8)])  # fmt: skip
def test_pad_rows_family(rnx: tuple[int, int, int], dt: Any) -> None:
    """examples/pad_rows.tile: X's rows (N + 3 apart from `x` elements into the buffer: the base
    16-byte aligned, as the runtime binds every tensor, the rows after it at every 2-byte
    alignment, NaN in the gaps) into NaN-poisoned rows of round_up(N, 8), exactly; the gap past
    N in Y's rows is left as it was (a write past a row shows as a number)."""
    r, n, x = rnx
    src = torch.full((r * (n + 3) + x,), float("nan"), dtype=dt, device="cuda")
    xs = src[x:].as_strided((r, n), (n + 3, 1))
    xs.copy_(rand(r, n, seed=r + n, dtype=dt))
    ld = -(-n // 8) * 8
    dst = torch.full((r, ld), float("nan"), dtype=dt, device="cuda")
    launch("pad_rows", xs, dst[:, :n])
    assert torch.equal(dst[:, :n], xs), f"pad_rows {r}x{n} at +{x}: rows differ"
    assert torch.isnan(dst[:, n:]).all(), f"pad_rows {r}x{n}: written past a row"


# tilec.ops.gemm as a user calls it -----------------------------------------------------------


def torch_a(m: int, k: int, form: str, dt: Any, seed: int) -> torch.Tensor:
    x = rand(m, k + 8, seed=seed, dtype=dt)
    return {"row": x[:, :k].contiguous(), "col": x[:, :k].t().contiguous().t(),
            "slice": x[:, :k], "offset": x[:, 1 : k + 1]}[form]  # fmt: skip


def torch_b(k: int, n: int, form: str, dt: Any, seed: int) -> torch.Tensor:
    w = rand(n, k, seed=seed, dtype=dt) / 8
    wide = rand(k, n + 5, seed=seed, dtype=dt) / 8
    return {"row": w.t().contiguous(), "weight": w.t(), "slice": wide[:, :n]}[form]


SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (200, 1000, 1024), (1, 4096, 1001),
          (64, 1001, 1001), (4096, 512, 2002), (257, 333, 512), (129, 1536, 8), (8, 8, 1),
          (1024, 1024, 1024), (1, 4096, 4097), (7, 4096, 4097), (64, 4096, 1001)]  # fmt: skip


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize(
    "forms",
    [
        ("row", "weight"),
        ("row", "row"),
        ("col", "row"),
        ("col", "weight"),
        ("slice", "slice"),
        ("offset", "row"),
    ],
)
@pytest.mark.parametrize("mnk", SHAPES)
def test_gemm_any_layout(mnk: tuple[int, int, int], forms: tuple[str, str], dt: Any) -> None:
    m, n, k = mnk
    a, b = torch_a(m, k, forms[0], dt, seed=m), torch_b(k, n, forms[1], dt, seed=n)
    poison(m * n * 4)
    y = ops.gemm(a, b)
    assert y.dtype == dt and y.is_contiguous()
    close(y, a.double() @ b.double(), dt, f"{mnk} {forms}")


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("form", ["weight", "row"])  # row-major B: layout km, composed
def test_gemm_bias_activation_alpha_beta(act: str | None, form: str, dt: Any) -> None:
    m, n, k = 300, 1000, 512
    a, b = torch_a(m, k, "row", dt, seed=10), torch_b(k, n, form, dt, seed=11)
    bias, c = rand(n, seed=12, dtype=dt), rand(m, n, seed=13, dtype=dt)
    z = a.double() @ b.double() + bias.double()
    acts = {
        None: z,
        "relu": F.relu(z),
        "gelu": F.gelu(z),
        "gelu_tanh": F.gelu(z, approximate="tanh"),
    }
    for alpha, beta, cc in ((1.0, 0.0, None), (0.5, 0.0, None), (2.0, 0.75, c), (-1.0, 1.0, c)):
        poison(m * n * 4)
        y = ops.gemm(a, b, bias=bias, activation=act, alpha=alpha, beta=beta, C=cc)
        ref = alpha * acts[act] + (0.0 if cc is None else beta * c.double())
        close(y, ref, dt, f"act={act} alpha={alpha} beta={beta} B {form}")


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_gemm_out_dtypes_and_empty(dt: Any) -> None:
    a, b = torch_a(100, 1001, "row", dt, seed=20), torch_b(1001, 300, "row", dt, seed=21)
    ref = a.double() @ b.double()
    for out in (torch.float32, torch.float16, torch.bfloat16):
        y = ops.gemm(a, b, out_dtype=out)
        assert y.dtype == out
        close(y, ref, dt, f"out_dtype {out}")
    bias = rand(300, seed=22, dtype=dt)
    y = ops.gemm(a, b, bias=bias, activation="relu", out_dtype=torch.float32)
    close(y, F.relu(ref + bias.double()), dt, "bias, relu, f32 out")
    assert ops.gemm(a[:0], b).shape == (0, 300)
    z = ops.gemm(a[:, :0], b[:0], bias=bias)
    close(z, bias.double().expand(100, 300), dt, "K = 0: the bias alone")


def test_gemm_refuses_bad_input() -> None:
    a = rand(8, 16, seed=30, dtype=torch.float16)
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        ops.gemm(a.float(), a.t().float())
    with pytest.raises(TypeError, match="one dtype"):
        ops.gemm(a, a.t().bfloat16())
    with pytest.raises(TypeError, match="CUDA tensor"):
        ops.gemm(a.cpu(), a.t().cpu())
    with pytest.raises(ValueError, match="do not multiply"):
        ops.gemm(a, a)
    with pytest.raises(ValueError, match="bias of shape"):
        ops.gemm(a, a.t(), bias=a[0])
    with pytest.raises(ValueError, match="activation"):
        ops.gemm(a, a.t(), activation="swish")
    with pytest.raises(TypeError, match="Python int or float"):
        ops.gemm(a, a.t(), alpha=torch.tensor(2.0))


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_bmm(dt: Any) -> None:
    l, m, n, k = 4, 130, 257, 1001
    a = rand(l, m, k, seed=40, dtype=dt)
    b = rand(l, k, n, seed=41, dtype=dt) / 8  # row-major, N = 257: rows TMA cannot read
    poison(l * m * n * 4)
    close(ops.bmm(a, b), a.double() @ b.double(), dt, "bmm, odd K")
    bt = rand(l, n, 512, seed=42, dtype=dt).transpose(1, 2)  # K-major B^T: kept
    a2 = rand(l, m, 512, seed=43, dtype=dt)
    close(ops.bmm(a2, bt, alpha=0.5), 0.5 * (a2.double() @ bt.double()), dt, "bmm alpha")
    bias = rand(n, seed=44, dtype=dt)
    y = ops.bmm(a2, bt, bias=bias, activation="gelu", out_dtype=torch.float32)
    close(y, F.gelu(a2.double() @ bt.double() + bias.double()), dt, "bmm epilogue")
    assert ops.bmm(a2[:0], bt[:0]).shape == (0, m, n)


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
def test_planned_products_match_torch_on_fresh_operands(dt: Any) -> None:
    """A plain gemm/bmm repeated with a signature seen before launches what its first call
    planned (tilec/ops/planned.py): each repeat, on fresh data and fresh memory, against torch,
    its output poisoned first; the repeats must hit the planned launches."""
    import sys

    planned = sys.modules["tilec.ops.gemm"].PLANNED
    hits: list[bool] = []
    run = planned.run
    planned.run = lambda *args: hits.append((found := run(*args)) is not None) or found
    cases = [  # (what, A's shape, B's shape, B as B^T transposed)
        ("gemm row-major B", (136, 264), (264, 72), False),
        ("gemm nn.Linear W^T", (7, 256), (512, 256), True),
        ("bmm row-major B, N = 257 (copied K-major)", (3, 130, 64), (3, 64, 257), False),
        ("bmm row-major B (kept: km on SM90)", (3, 200, 72), (3, 72, 136), False),
        ("bmm row-major B, K = 77 (A's rows 80 apart)", (3, 130, 77), (3, 77, 264), False),
        ("bmm K-major B^T", (2, 64, 512), (2, 96, 512), True),
    ]
    try:
        for what, a_shape, b_shape, transposed in cases:
            op = ops.bmm if what.startswith("bmm") else ops.gemm
            for seed in (70, 80, 90):
                a, b = rand(*a_shape, seed=seed, dtype=dt), rand(*b_shape, seed=seed + 1, dtype=dt)
                b = b.transpose(-1, -2) if transposed else b
                poison(a.shape[-2] * b.shape[-1] * a.shape[0] * 4)
                close(op(a, b), a.double() @ b.double(), dt, f"{what}, seed {seed}")
            assert hits[-2:] == [True, True], f"{what}: the repeats were not planned"
            hits.clear()
    finally:
        del planned.run  # the method again


def test_no_host_synchronisation() -> None:
    a, b = rand(64, 1001, seed=50, dtype=torch.bfloat16), rand(1001, 200, seed=51).bfloat16()
    bias = rand(200, seed=52, dtype=torch.bfloat16)

    def step() -> None:
        ops.gemm(a, b, bias=bias, activation="gelu")
        ops.gemm(a[:, :1000], b[:1000].t().contiguous().t(), alpha=0.5)
        ops.bmm(a.view(4, 16, 1001), b.expand(4, 1001, 200))

    step()
    torch.cuda.set_sync_debug_mode("error")
    try:
        step()
    finally:
        torch.cuda.set_sync_debug_mode("default")


# torch.ops.tilec.gemm's autograd -------------------------------------------------------------


@pytest.mark.parametrize("dt", DTYPES, ids=IDS)
@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("mnk", [(200, 384, 512), (64, 1001, 1000), (33, 96, 2002)])
def test_gemm_autograd_matches_torch(mnk: tuple[int, int, int], act: str | None, dt: Any) -> None:
    m, n, k = mnk
    a = rand(m, k, seed=60, dtype=dt).requires_grad_()
    w = (rand(n, k, seed=61) / 16).to(dt).requires_grad_()  # nn.Linear's weight: b = w.t()
    bias = rand(n, seed=62, dtype=dt).requires_grad_()
    dy = rand(m, n, seed=63, dtype=dt)
    got = torch.autograd.grad(torch.ops.tilec.gemm(a, w.t(), bias, act), (a, w, bias), dy)
    leaves = [t.detach().double().requires_grad_() for t in (a, w, bias)]
    z = leaves[0] @ leaves[1].t() + leaves[2]
    y = {None: z, "relu": F.relu(z), "gelu": F.gelu(z), "gelu_tanh": F.gelu(z, approximate="tanh")}
    refs = torch.autograd.grad(y[act], leaves, dy.double())
    for g, ref, what in zip(got, refs, ("da", "dw", "dbias"), strict=True):
        close(g, ref, dt, f"{mnk} {act} {what}")


def test_linear_forward_backward() -> None:
    import tilec.nn as tnn

    ref = torch.nn.Linear(1001, 300).cuda()
    ours = tnn.Linear(1001, 300).cuda()
    ours.load_state_dict(ref.state_dict())
    ours, ref = ours.bfloat16(), ref.double()
    x = rand(2, 50, 1001, seed=70, dtype=torch.bfloat16).requires_grad_()
    dy = rand(2, 50, 300, seed=71, dtype=torch.bfloat16)
    y = ours(x)
    got = torch.autograd.grad(y, (x, *ours.parameters()), dy)
    xd = x.detach().double().requires_grad_()
    yr = ref(xd)
    refs = torch.autograd.grad(yr, (xd, *ref.parameters()), dy.double())
    close(y, yr, torch.bfloat16, "Linear y")
    for g, r, what in zip(got, refs, ("dx", "dw", "db"), strict=True):
        close(g, r, torch.bfloat16, f"Linear {what}")


def test_every_rule_was_exercised() -> None:
    arch = device_arch(None)
    if not CHOSEN:
        pytest.skip("run with the tests above (pytest test/gpu/test_ops_gemm.py)")
    for name in FAMILIES:
        if arch == "sm_90" and name in SM8X_ONLY:
            continue  # tilec.ops takes these on SM 8.x only (gemm.py's _product, bmm)
        spec = ops.family(name).spec
        # the newest target of the family this device runs (gemv has sm_80 builds only)
        own = max((b.arch for b in spec.builds.values() if runs_on(b.arch, arch)), default="")
        runnable = {r.build for r in spec.rules if spec.builds[r.build].arch == own}
        if runnable:
            assert runnable <= CHOSEN[name], (
                f"{name}: never chosen: {sorted(runnable - CHOSEN[name])}"
            )

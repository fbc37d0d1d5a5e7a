"""The families behind tilec.ops.gemm and bmm (tilec/ops/gemm.py): builds of the GEMM examples
and the rules that pick one by majorness, alignment and dtype.

In the kernels' terms C = A @ B^T with A of M x K and B of N x K (torch.matmul's B is this B's
transpose). Each operand is K-major (its K contiguous: strides (K, 1)) or MN-major (its M or N
contiguous: strides (1, M) or (1, N)); TMA takes a K-major operand whose rows are whole 16-byte
chunks (K % 8 == 0 for f16/bf16) and an MN-major one whose M (N) is (M % 8 == 0). The rules
name those strides (`SA_K`, `SA_M`, `SB_K`, `SB_N`: FamilySpec.strides) and sizes, so a family
passes over a build whose layout is not the arguments' without loading it; tilec/ops/gemm.py
lays the operands out so that exactly one layout rule holds (copying the others).

- `gemm` (A, B, C): examples/gemm_sm90.tile for sm_90a, every (MA, MB) layout, f16 and bf16,
  C of the inputs' dtype or f32 (-D O=f32), A's and B's leading dimensions bound from the
  tensors (any multiple of 8: K need not be one). Its variant(...) clauses go with each bundle:
  the swapped builds for up to 192 rows of a K-major A (decode shapes: no split-K build here,
  docs/performance.md "Split-K and decode-sized rows": the default with these variants beside
  gemm_sm90_splitk.tile 0.71-1.07x against 0.75-1.01x cuBLAS), the ping-pong 128x128 builds
  for under three waves, the clusters of two where B's leading dimension is 16- but not
  32-byte aligned.
- `gemm_sm80` (A, B, C, alpha): examples/gemm_sm80.tile for SM 8.x, every layout, f16 and bf16.
- `gemm_f32_sm80` (A, B, W): examples/gemm_sm80_splitk.tile's gemm_splitk (K-major) on SM 8.x,
  W of 1 x M x N f32: the f32 product, for out_dtype=f32 there (gemm_sm80.tile stores T only).
- `gemm_bias`, `gemm_bias_relu`, `gemm_bias_gelu`, `gemm_bias_gelu_tanh` (A, B, C, bias, alpha,
  beta): the fused epilogue act(alpha * A @ B^T + bias) (examples/gemm_sm90_bias_act.tile with
  BETA = 0, C only written, and gemm_sm80_bias_relu.tile on SM 8.x, which has no tanh form);
  `gemm_addmm`: alpha * A @ B^T + beta * C + bias (BETA = 1), no activation. K-major A and B.
- `gemv` (A, B, C): examples/gemv.tile for sm_80 (it runs on SM 9.0 too), up to 4 rows of A
  (a build for each MR of GEMV_ROWS takes M <= MR), K-contiguous operands with any row stride
  (rows 2-byte aligned; tilec/ops/gemm_plan.py's `row_plan`: a weight TMA cannot read), C of T
  or f32.
- `gemm_skinny` (A, B, W): examples/gemm_skinny.tile for sm_80 (it runs on SM 9.0 too), from 5
  up to 32 rows of A (a build for each BM of SKINNY takes M <= BM) against the same weights as
  `gemv`: B read where it lies into shared memory, mma.sync; W of S x M x N f32 split-K partial
  sums (S chosen per call, gemm_plan.splits), which the `colsum` family adds up into C.
- `pad_rows` (X, Y): examples/pad_rows.tile for sm_80 (it runs on SM 9.0 too), f16 and bf16:
  an operand whose K is contiguous copied K-major into rows round_up(K, 8) elements apart
  (tilec/ops/gemm.py's `laid_out`, "contiguous": a weight of odd K before the SM90 GEMM), its
  rows read where they lie (2-byte aligned: skewed 16-byte loads), written in 16-byte vectors.
- `bmm` (A, B, C): examples/gemm_sm90_batched.tile (3-D, every stride but the unit one bound
  from the tensors), A K-major, B K-major (`kk`) or N-major (`km`, MB = 1: torch.bmm's
  row-major B as it lies, its leading dimension and A's multiples of 8, any K);
  `bmm_sm80` (A, B, C, alpha): gemm_sm80_batched.tile, K-major.

Every build is for f16 and bf16.
"""

from __future__ import annotations

from collections.abc import Callable

from tilec.runtime.family import Build, FamilySpec, Rule

DTYPES = ("f16", "bf16")
ARCHS = ("sm_90a", "sm_80")
SIZES = {"M": ("A", 0), "K": ("A", 1), "N": ("B", 0)}
STRIDES = {"SA_M": ("A", 0), "SA_K": ("A", 1), "SB_N": ("B", 0), "SB_K": ("B", 1)}
# (MA, MB) -> tag and the conditions under which TMA (and the build's strides) take it: exact
# strides (K, 1) or (1, M) where the build's are, any leading dimension TMA reads (a multiple of
# 8 elements) where the build binds it (gemm_sm90.tile's lda, ldb)
K_MAJOR = {"A": ("SA_K == 1", "K % 8 == 0"), "B": ("SB_K == 1", "K % 8 == 0")}
MN_MAJOR = {"A": ("SA_M == 1", "M % 8 == 0"), "B": ("SB_N == 1", "N % 8 == 0")}
K_MAJOR_LD = {"A": ("SA_K == 1", "SA_M % 8 == 0"), "B": ("SB_K == 1", "SB_N % 8 == 0")}
MN_MAJOR_LD = {"A": ("SA_M == 1", "SA_K % 8 == 0"), "B": ("SB_N == 1", "SB_K % 8 == 0")}
LAYOUTS = {"kk": (0, 0), "mk": (1, 0), "km": (0, 1), "mm": (1, 1)}
# activation -> (family, ACT of the sm_90a kernel, of the sm_80 kernel or None: it has none)
EPILOGUES = {
    None: ("gemm_bias", 0, 0),
    "relu": ("gemm_bias_relu", 1, 1),
    "gelu": ("gemm_bias_gelu", 2, 2),
    "gelu_tanh": ("gemm_bias_gelu_tanh", 3, None),
}
ADDMM = "gemm_addmm"  # BETA = 1: beta * C read, no activation
GEMV_ROWS = (1, 2, 4)  # examples/gemv.tile's MR (its reductions want powers of two)
# examples/gemm_skinny.tile's builds: BM (the rows a build takes) -> its BN, BK, WN, BLOCKS. BN 64
# and BK 32 beat BN 128 and BK 64 on the H100 (5-16 rows x 4096 x 4097: 30 us against 38-80).
# H100, 2026-12-07, x 4097, S = 8, colsum-summed, graphs: BLOCKS = 5 (96 registers, 5 blocks an
# SM) 30.9 / 34.4 us at 5 / 16 rows x 4096 against 32.8 / 38.1 at 0 (11008: 86.4 / 100.9 against
# 91.4 / 108); BM 32 at 24 / 32 rows x 4096 37.9 / 40.5 us (0.87 / 0.86x cuBLAS) where the row copy
# and the SM90 GEMM took 56.6 (0.58 / 0.61), x 11008 111 / 120 against 118 / 117; BM 64 slower
# than the copy at 48-64 rows (0.51-0.55 against 0.63-0.69): not a build.
SKINNY = {16: (64, 32, 4, 5), 32: (64, 32, 4, 0)}


def layout_when(tag: str, lead: bool = False) -> tuple[str, ...]:
    """The rule conditions of a layout: each operand's unit stride and TMA's alignment (of the
    leading dimension where the build binds it, `lead`; else of K, M or N)."""
    ma, mb = LAYOUTS[tag]
    k_major, mn_major = (K_MAJOR_LD, MN_MAJOR_LD) if lead else (K_MAJOR, MN_MAJOR)
    both = (*(mn_major if ma else k_major)["A"], *(mn_major if mb else k_major)["B"])
    return tuple(dict.fromkeys(both))  # K % 8 == 0 once


def _name(*parts: str) -> str:
    return "_".join(p.replace("_", "") if p.startswith("sm_") else p for p in parts)


def gemm_spec() -> FamilySpec:
    """gemm90 builds for sm_90a: every layout, f16 and bf16, C of T or f32."""
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    for out in ("T", "f32"):
        for tag, (ma, mb) in LAYOUTS.items():
            for t in DTYPES:
                o = t if out == "T" else out
                name = _name(tag, t, *(["of32"] if out == "f32" else []))
                params = {"MA": str(ma), "MB": str(mb), "T": t, "O": o}
                builds[name] = Build(name, "examples/gemm_sm90.tile", "gemm90", params, "sm_90a")
                when = layout_when(tag, lead=True)
                rules.append(Rule(name, when, {"A": t, "C": o}, (), f"{tag} layout, C of {o}"))
    return FamilySpec("gemm", (("A", "tensor"), ("B", "tensor"), ("C", "tensor")), builds,
                      tuple(rules), sizes=SIZES, strides=STRIDES)  # fmt: skip


def gemm_sm80_spec() -> FamilySpec:
    """gemm_sm80.tile's gemm for SM 8.x: every layout, f16 and bf16 (C of T)."""
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    for tag, (ma, mb) in LAYOUTS.items():
        for t in DTYPES:
            name = _name(tag, t, "sm_80")
            params = {"MA": str(ma), "MB": str(mb), "T": t}
            builds[name] = Build(name, "examples/gemm_sm80.tile", "gemm", params, "sm_80")
            rules.append(Rule(name, layout_when(tag), {"A": t, "C": t}, (), f"{tag} layout"))
    args = (("A", "tensor"), ("B", "tensor"), ("C", "tensor"), ("alpha", "scalar"))
    return FamilySpec("gemm_sm80", args, builds, tuple(rules), sizes=SIZES, strides=STRIDES)


def gemm_f32_sm80_spec() -> FamilySpec:
    """The f32 product on SM 8.x: gemm_splitk with one split, W of 1 x M x N."""
    builds = {
        _name("kk", t, "sm_80"): Build(_name("kk", t, "sm_80"), "examples/gemm_sm80_splitk.tile",
                                       "gemm_splitk", {"T": t}, "sm_80")
        for t in DTYPES
    }  # fmt: skip
    rules = tuple(Rule(b, layout_when("kk"), {"A": b.split("_")[1]}, (), "f32 product")
                  for b in builds)  # fmt: skip
    args = (("A", "tensor"), ("B", "tensor"), ("W", "tensor"))
    return FamilySpec("gemm_f32_sm80", args, builds, rules, sizes=SIZES, strides=STRIDES)


def epilogue_spec(family: str, act90: int, act80: int | None, beta: int) -> FamilySpec:
    """One fused epilogue (ACT, BETA) for sm_90a and, where it has the activation, sm_80."""
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    for arch in ARCHS:
        act = act90 if arch == "sm_90a" else act80
        if act is None:
            continue
        source = "gemm_sm90_bias_act" if arch == "sm_90a" else "gemm_sm80_bias_relu"
        kernel = "gemm90_bias_act" if arch == "sm_90a" else "gemm_bias_act"
        for t in DTYPES:
            name = _name("kk", t, arch)
            params = {"ACT": str(act), "BETA": str(beta), "T": t}
            builds[name] = Build(name, f"examples/{source}.tile", kernel, params, arch)
            rules.append(Rule(name, layout_when("kk"), {"A": t, "C": t}, (), f"ACT={act}"))
    args = (("A", "tensor"), ("B", "tensor"), ("C", "tensor"), ("bias", "tensor"),
            ("alpha", "scalar"), ("beta", "scalar"))  # fmt: skip
    return FamilySpec(family, args, builds, tuple(rules), sizes=SIZES, strides=STRIDES)


def gemv_spec() -> FamilySpec:
    """The few-row kernel: a build for each MR of GEMV_ROWS (the smallest that holds M first),
    f16 and bf16, C of T or f32; K-contiguous A and B (row strides bound from the tensors)."""
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    for mr in GEMV_ROWS:
        for out in ("T", "f32"):
            for t in DTYPES:
                o = t if out == "T" else out
                name = _name(f"r{mr}", t, *(["of32"] if out == "f32" else []))
                params = {"MR": str(mr), "T": t, "O": o}
                builds[name] = Build(name, "examples/gemv.tile", "gemv", params, "sm_80")
                when = (f"M <= {mr}", "SA_K == 1", "SB_K == 1")
                rules.append(Rule(name, when, {"A": t, "C": o}, (), f"{mr} rows, C of {o}"))
    return FamilySpec("gemv", (("A", "tensor"), ("B", "tensor"), ("C", "tensor")), builds,
                      tuple(rules), sizes=SIZES, strides=STRIDES)  # fmt: skip


def gemm_skinny_spec() -> FamilySpec:
    """The few-row GEMM on the tensor cores: a build for each BM of SKINNY (the smallest that
    holds M first), f16 and bf16; K-contiguous A and B (row strides bound from the tensors),
    W of S x M x N f32 (S any: the splits of K)."""
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    for bm, (bn, bk, wn, blocks) in SKINNY.items():
        for t in DTYPES:
            name = _name(f"m{bm}", t)
            params = {"BM": str(bm), "BN": str(bn), "BK": str(bk), "WN": str(wn), "T": t}
            if blocks:
                params["BLOCKS"] = str(blocks)
            builds[name] = Build(name, "examples/gemm_skinny.tile", "gemm_skinny", params, "sm_80")
            when = (f"M <= {bm}", "SA_K == 1", "SB_K == 1")
            rules.append(Rule(name, when, {"A": t}, (), f"{bm} rows"))
    return FamilySpec("gemm_skinny", (("A", "tensor"), ("B", "tensor"), ("W", "tensor")), builds,
                      tuple(rules), sizes=SIZES, strides=STRIDES)  # fmt: skip


def pad_rows_spec() -> FamilySpec:
    """The row copy to 16-byte rows: a build a dtype (X's unit stride along its rows; its row
    stride, and Y's, bound from the tensors)."""
    builds = {
        _name(t): Build(_name(t), "examples/pad_rows.tile", "pad_rows", {"T": t}, "sm_80")
        for t in DTYPES
    }
    rules = tuple(Rule(_name(t), ("SX_N == 1",), {"X": t, "Y": t}, (), t) for t in DTYPES)
    return FamilySpec("pad_rows", (("X", "tensor"), ("Y", "tensor")), builds, rules,
                      sizes={"R": ("X", 0), "N": ("X", 1)}, strides={"SX_N": ("X", 1)})  # fmt: skip


# The batched builds' B layouts: tag -> (MB, rule). K-major first (both operands exactly K-major
# at K % 8 == 0, as tilec.ops.bmm copies them); N-major B (SM90 only) binds B's and A's leading
# dimensions, so K is free (TMA zero-fills each box past it).
BMM_LAYOUTS = {
    "kk": (0, ("SA_K == 1", "SB_K == 1", "K % 8 == 0"), "batched, K-major"),
    "km": (1, (*K_MAJOR_LD["A"], *MN_MAJOR_LD["B"]), "batched, N-major B"),
}


def bmm_spec(arch: str) -> FamilySpec:
    """Batched GEMM (3-D; strides other than the unit one bound from the tensors): K-major
    operands, and on sm_90a an N-major B beside them (BMM_LAYOUTS)."""
    sm90 = arch == "sm_90a"
    source = "gemm_sm90_batched" if sm90 else "gemm_sm80_batched"
    kernel = "gemm90_batched" if sm90 else "gemm_batched"
    builds: dict[str, Build] = {}
    rules: list[Rule] = []
    for tag in BMM_LAYOUTS if sm90 else ("kk",):
        mb, when, note = BMM_LAYOUTS[tag]
        for t in DTYPES:
            name = _name(tag, t, arch)
            params = {"MB": str(mb), "T": t} if mb else {"T": t}
            builds[name] = Build(name, f"examples/{source}.tile", kernel, params, arch)
            rules.append(Rule(name, when, {"A": t, "C": t}, (), note))
    args = [("A", "tensor"), ("B", "tensor"), ("C", "tensor")] + [("alpha", "scalar")] * (not sm90)
    sizes = {"L": ("A", 0), "M": ("A", 1), "K": ("A", 2), "N": ("B", 1)}
    strides = {"SA_K": ("A", 2), "SB_K": ("B", 2)}
    if sm90:  # the km rule's leading dimensions and B's unit stride along N
        strides.update(SA_M=("A", 1), SB_N=("B", 1))
    name = "bmm" if sm90 else "bmm_sm80"
    return FamilySpec(name, tuple(args), builds, tuple(rules), sizes=sizes, strides=strides)


GEMM_SPECS: dict[str, Callable[[], FamilySpec]] = {
    "gemm": gemm_spec,
    "gemm_sm80": gemm_sm80_spec,
    "gemm_f32_sm80": gemm_f32_sm80_spec,
    **{
        fam: (lambda f=fam, a=a90, b=a80: epilogue_spec(f, a, b, 0))
        for fam, a90, a80 in EPILOGUES.values()
    },
    ADDMM: lambda: epilogue_spec(ADDMM, 0, 0, 1),
    "gemv": gemv_spec,
    "gemm_skinny": gemm_skinny_spec,
    "pad_rows": pad_rows_spec,
    "bmm": lambda: bmm_spec("sm_90a"),
    "bmm_sm80": lambda: bmm_spec("sm_80"),
}

"""Bench: tilec GEMM bundles beside cuBLAS (torch.matmul) and an autotuned Triton kernel.

    python bench/bench_gemm.py --bundle build/gemm/gemm_sm80 [--dtype f16] [--out table.md]
    python bench/bench_gemm.py --splitk build/splitk/s4 --shape 16x4096x4096   (both kernels)
    python bench/bench_gemm.py --triton masked ...   (the earlier Triton kernel, see below)

C = alpha * A @ B^T with A M×K and B N×K row-major ("TN"), randn inputs (never zeros or small
integers: the H200 runs ~10% faster on low-entropy data; `--data int` measures that kind only
to compare with figures published on it). Each figure is the median of 15
samples of 10 back-to-back launches timed with CUDA events; all three run in the same process
on the same tensors. With `--graph` the 10 calls are captured in a CUDA graph and replayed, so
the figure is the GPU's time alone: small problems whose kernels finish before Python has
issued the next launch are measured without that host time. TFLOP/s counts 2·M·N·K.

The Triton column (`--triton`, default `best`) is a kernel a Triton user would write:

- `tutorial`: the form of Triton's matmul tutorial (python/tutorials/03-matrix-multiplication.py):
  a 1-D grid walked in grouped order (GROUP_SIZE_M = 8 row-tiles per group, for L2 reuse), row
  offsets wrapped with `% M` / `% N` so no load needs an M or N mask, only the K tail masked
  (`offs_k < K - k * BLOCK_SIZE_K`), `tl.multiple_of` / `tl.max_contiguous` hints on the row
  offsets (as in the persistent-matmul tutorial), f32 accumulation through `tl.dot(a, b, acc)`,
  and the tutorial's CUDA autotune list (`get_cuda_autotune_config`: 128×256×64 s3 w8,
  64×256×32 s4 w4, 128×128×32 s4 w4, 128×64×32 s4 w4, 64×128×32 s4 w4, 128×32×32 s4 w4,
  64×32×32 s5 w2, 32×64×32 s5 w2, then its BK=128/64 entries: 128×256×128 s3 w8,
  256×128×128 s3 w8, 256×64×128 s4 w4, 64×256×128 s4 w4, 128×128×128 s4 w4, 128×64×64 s4 w4,
  64×128×64 s4 w4, 128×32×64 s4 w4; BLOCK M×N×K, stages, warps), plus 256×128×64 s3 w8 and
  128×128×64 s3 w4 from the earlier list. Configs that do not fit shared memory are skipped by
  the autotuner. Any strides of A and B; only the store is masked.
- `descriptor`: the same grouped order and config list, A, B and C through on-device TMA tensor
  descriptors (`tl.make_tensor_descriptor`, Triton >= 3.4; `triton.set_allocator` supplies
  their global scratch), as in the persistent-matmul tutorial's descriptor kernel but one tile
  per program. Out-of-bounds boxes are zero-filled on load and clipped on store, so nothing is
  masked. An MN-major operand is described as its K×rows storage and its tile transposed
  (`.T`) before `tl.dot`. Needs 16-byte aligned bases and row strides; otherwise absent.
- `best` (default): both, and the faster per shape is the Triton column; the variant that won
  is noted under the table.
- `masked`: the bench's earlier kernel (2-D grid in row order, M, N and K masks on every load,
  a 7-config list), kept to compare with figures measured with it (every Triton column in
  docs/performance.md before issue 15).

Each Triton variant is checked against an f32 product (relative error < 1e-2) before it is
timed; the autotuner keys on M, N, K and the operand layout, so the first call at each shape
and layout compiles and times every config (tens of seconds per variant).
`bench/check_triton_reference.py` checks these kernels on a CPU (Triton's interpreter, and
cross-compilation for sm_90).
"""

from __future__ import annotations

import argparse
import datetime
from math import nan
from pathlib import Path
from statistics import median

import torch
import triton
import triton.language as tl

from tilec.runtime import load
from tilec.runtime.measure import time_graph_ms, time_ms

SHAPES = [
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (8192, 4096, 4096),
    (4096, 11008, 4096),
    (16, 4096, 4096),
]


def _configs() -> list[triton.Config]:
    """The `masked` kernel's list (the bench's Triton reference before issue 15)."""
    out = []
    for bm, bn, bk, warps, stages in [
        (128, 128, 32, 4, 4),
        (128, 128, 64, 4, 3),
        (128, 256, 64, 8, 3),
        (256, 128, 64, 8, 3),
        (64, 128, 64, 4, 4),
        (128, 64, 64, 4, 4),
        (64, 64, 64, 4, 4),
    ]:
        meta = {"BM": bm, "BN": bn, "BK": bk}
        out.append(triton.Config(meta, num_warps=warps, num_stages=stages))
    return out


@triton.autotune(configs=_configs(), key=["M", "N", "K", "sam", "sbn"])
@triton.jit
def _triton_gemm(
    a, b, c, M, N, K, sam, sak, sbn, sbk, alpha,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):  # fmt: skip
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        ta = tl.load(
            a + rm[:, None] * sam + ks[None, :] * sak,
            mask=(rm[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        tb = tl.load(
            b + rn[:, None] * sbn + ks[None, :] * sbk,
            mask=(rn[:, None] < N) & (ks[None, :] < K),
            other=0.0,
        )
        acc += tl.dot(ta, tl.trans(tb))
    out = (acc * alpha).to(c.dtype.element_ty)
    tl.store(c + rm[:, None] * N + rn[None, :], out, mask=(rm[:, None] < M) & (rn[None, :] < N))


def masked_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, alpha: float) -> None:
    """The `masked` variant: c = alpha * a @ b.T for any strides of a (M×K) and b (N×K); c
    row-major."""
    m, k = a.shape
    n = b.shape[0]
    grid = lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))  # noqa: E731
    _triton_gemm[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), alpha)


# The CUDA list of Triton's matmul tutorial (03-matrix-multiplication.py,
# get_cuda_autotune_config), in its order: (BLOCK_SIZE_M, _N, _K, num_stages, num_warps), all
# with GROUP_SIZE_M = 8. The tutorial heads its last eight "Good config for fp8 inputs"; they
# stay, as a user autotuning f16 would keep them. The two after them are not the tutorial's:
# they are the Hopper-sized entries of the bench's earlier list (256×128×64 and 128×128×64, 3
# stages), added so the new list covers the old one's large tiles.
TUTORIAL_CONFIGS = [
    (128, 256, 64, 3, 8),
    (64, 256, 32, 4, 4),
    (128, 128, 32, 4, 4),
    (128, 64, 32, 4, 4),
    (64, 128, 32, 4, 4),
    (128, 32, 32, 4, 4),
    (64, 32, 32, 5, 2),
    (32, 64, 32, 5, 2),
    (128, 256, 128, 3, 8),
    (256, 128, 128, 3, 8),
    (256, 64, 128, 4, 4),
    (64, 256, 128, 4, 4),
    (128, 128, 128, 4, 4),
    (128, 64, 64, 4, 4),
    (64, 128, 64, 4, 4),
    (128, 32, 64, 4, 4),
    (256, 128, 64, 3, 8),
    (128, 128, 64, 3, 4),
]


def _tutorial_configs() -> list[triton.Config]:
    return [
        triton.Config(
            {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8},
            num_stages=stages,
            num_warps=warps,
        )
        for bm, bn, bk, stages, warps in TUTORIAL_CONFIGS
    ]


@triton.jit
def _grouped_pid(pid, M, N, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                 GROUP_SIZE_M: tl.constexpr):  # fmt: skip
    """The tutorial's grouped ordering: GROUP_SIZE_M row-tiles walked column by column."""
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    return pid_m, pid_n


# Keyed on the strides as well: a K-major and an MN-major operand (stride 1 on the other mode)
# compile to different kernels and want their own config.
@triton.autotune(configs=_tutorial_configs(), key=["M", "N", "K", "stride_am", "stride_bk"])
@triton.jit
def _tutorial_gemm(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, alpha,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):  # fmt: skip
    """C = alpha * A @ B with A M×K and B K×N (the tutorial's kernel; B here is the bench's
    N×K operand seen through its transpose's strides), C in its own dtype."""
    pid = tl.program_id(axis=0)
    pid_m, pid_n = _grouped_pid(pid, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
    # Rows past M (columns past N) wrap onto valid ones, so the loads need no M/N mask; the
    # store below drops them.
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
    offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = (accumulator * alpha).to(c_ptr.dtype.element_ty)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


def _grid_1d(m: int, n: int):
    return lambda meta: (  # noqa: E731
        triton.cdiv(m, meta["BLOCK_SIZE_M"]) * triton.cdiv(n, meta["BLOCK_SIZE_N"]),
    )


def tutorial_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, alpha: float) -> None:
    """The `tutorial` variant: c = alpha * a @ b.T for any strides of a (M×K), b (N×K), c."""
    m, k = a.shape
    n = b.shape[0]
    bt = b.T  # K×N, as the tutorial's B
    _tutorial_gemm[_grid_1d(m, n)](
        a, bt, c, m, n, k, a.stride(0), a.stride(1), bt.stride(0), bt.stride(1),
        c.stride(0), c.stride(1), alpha,
    )  # fmt: skip


@triton.autotune(configs=_tutorial_configs(), key=["M", "N", "K", "A_MN", "B_MN"])
@triton.jit
def _descriptor_gemm(
    a_ptr, b_ptr, c_ptr, M, N, K, stride_a, stride_b, stride_c, alpha,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, A_MN: tl.constexpr, B_MN: tl.constexpr,
):  # fmt: skip
    """C = alpha * A @ B^T with A M×K and B N×K through TMA tensor descriptors. A_MN (B_MN):
    the operand is stored K×M (K×N) row-major, stride_a (stride_b) its row stride."""
    pid = tl.program_id(axis=0)
    pid_m, pid_n = _grouped_pid(pid, M, N, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M)
    offs_am = pid_m * BLOCK_SIZE_M
    offs_bn = pid_n * BLOCK_SIZE_N
    if A_MN:
        a_desc = tl.make_tensor_descriptor(
            a_ptr, shape=[K, M], strides=[stride_a, 1], block_shape=[BLOCK_SIZE_K, BLOCK_SIZE_M]
        )
    else:
        a_desc = tl.make_tensor_descriptor(
            a_ptr, shape=[M, K], strides=[stride_a, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K]
        )
    if B_MN:
        b_desc = tl.make_tensor_descriptor(
            b_ptr, shape=[K, N], strides=[stride_b, 1], block_shape=[BLOCK_SIZE_K, BLOCK_SIZE_N]
        )
    else:
        b_desc = tl.make_tensor_descriptor(
            b_ptr, shape=[N, K], strides=[stride_b, 1], block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K]
        )
    c_desc = tl.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[stride_c, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N]
    )
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        offs_k = k * BLOCK_SIZE_K
        if A_MN:
            a = a_desc.load([offs_k, offs_am]).T
        else:
            a = a_desc.load([offs_am, offs_k])
        if B_MN:
            b = b_desc.load([offs_k, offs_bn])
        else:
            b = b_desc.load([offs_bn, offs_k]).T
        accumulator = tl.dot(a, b, accumulator)
    c_desc.store([offs_am, offs_bn], (accumulator * alpha).to(c_ptr.dtype.element_ty))


def _alloc_scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    """Global scratch for on-device tensor descriptors (Triton asks through set_allocator)."""
    return torch.empty(size, device="cuda", dtype=torch.int8)


def _row_major(t: torch.Tensor) -> tuple[bool, int] | None:
    """(transposed, row stride) of a 2-D tensor whose storage is row-major in one of its two
    orders with a 16-byte aligned base and row stride (what a TMA descriptor needs), else None."""
    size = t.element_size()
    if t.stride(1) == 1:
        mn, stride = False, t.stride(0)
    elif t.stride(0) == 1:
        mn, stride = True, t.stride(1)
    else:
        return None
    if t.data_ptr() % 16 or (stride * size) % 16:
        return None
    return mn, stride


def descriptor_supported(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> bool:
    """Whether the `descriptor` variant takes these operands (and the Triton has the API)."""
    rm = _row_major(c)
    return (
        hasattr(tl, "make_tensor_descriptor")
        and _row_major(a) is not None
        and _row_major(b) is not None
        and rm is not None
        and not rm[0]
    )


def descriptor_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, alpha: float) -> None:
    """The `descriptor` variant: c = alpha * a @ b.T through TMA descriptors (operands as
    `descriptor_supported` requires)."""
    triton.set_allocator(_alloc_scratch)
    m, k = a.shape
    n = b.shape[0]
    (a_mn, sa), (b_mn, sb) = _row_major(a), _row_major(b)  # type: ignore[misc]
    _descriptor_gemm[_grid_1d(m, n)](
        a, b, c, m, n, k, sa, sb, c.stride(0), alpha, A_MN=a_mn, B_MN=b_mn
    )


TRITON_VARIANTS = {"tutorial": tutorial_gemm, "descriptor": descriptor_gemm, "masked": masked_gemm}


def triton_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, alpha: float) -> None:
    """c = alpha * a @ b.T for any strides of a (M×K) and b (N×K): the tutorial variant."""
    tutorial_gemm(a, b, c, alpha)


def operand(
    rows: int, k: int, mn_major: bool, dtype: torch.dtype, data: str = "randn"
) -> torch.Tensor:
    """rows×K, K contiguous, or (mn_major) the transpose of a row-major K×rows tensor; randn
    values, or (data "int") integers in [-3, 3], the low-entropy kind some published figures
    use (they draw less power, so the GPU clocks higher: only for comparing with those)."""
    shape = (k, rows) if mn_major else (rows, k)
    if data == "int":
        t = torch.randint(-3, 4, shape, device="cuda").to(dtype)
    else:
        t = torch.randn(*shape, device="cuda").to(dtype)
    return t.T if mn_major else t


def operands(
    m: int, n: int, k: int, dtype: torch.dtype, ma: bool, mb: bool, data: str = "randn"
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A (M×K), B (N×K) and a NaN-poisoned C (M×N) for one shape."""
    a, b = operand(m, k, ma, dtype, data), operand(n, k, mb, dtype, data)
    return a, b, torch.full((m, n), float("nan"), device="cuda", dtype=dtype)


def cublas(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    """The reference: c = a @ b.T through torch.matmul (cuBLAS)."""
    torch.matmul(a, b.T, out=c)


def error(kernel: object, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, alpha: float) -> float:
    """The kernel's relative error against an f32 a @ b.T (C poisoned first)."""
    ref = (a.float() @ b.float().T) * alpha
    c.fill_(float("nan"))
    kernel(a, b, c, alpha)
    return ((c.float() - ref).norm() / ref.norm()).item()


def _triton_tflops(
    variant: str, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, alpha: float, timer, flops: int
) -> tuple[float | None, str]:
    """One Triton variant's TFLOP/s here (None where it does not apply or is wrong) and why."""
    kernel = TRITON_VARIANTS[variant]
    if variant == "descriptor" and not descriptor_supported(a, b, c):
        return None, "not applicable (needs 16-byte aligned rows)"
    try:
        err = error(kernel, a, b, c, alpha)  # the first call autotunes
    except Exception as exc:  # noqa: BLE001 - reported, and the other variant still runs
        first = (str(exc).splitlines() or [""])[0][:200]
        return None, f"failed: {type(exc).__name__}: {first}"
    if not err < 1e-2:
        return None, f"WRONG (relative error {err:.3g})"
    tf = flops / timer(lambda: kernel(a, b, c, alpha), inner=10) / 1e9
    return tf, f"{tf:.0f}"


def triton_variants(choice: str) -> list[str]:
    """The Triton kernels a `--triton` choice times (`best`: the two a Triton user would write)."""
    if choice == "none":
        return []
    return ["tutorial", "descriptor"] if choice == "best" else [choice]


def interleaved(fns: dict[str, object], rounds: int, timer) -> dict[str, list[float]]:  # noqa: ANN001
    """Each function's ms in each of `rounds` rounds, the order reversed every other round (so
    a steady drift of clocks or power favours none of them)."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(rounds):
        for name in list(fns)[:: -1 if r % 2 else 1]:
            times[name].append(timer(fns[name], inner=10))
    return times


def bench_shape(
    kernels: dict[str, object],
    m: int,
    n: int,
    k: int,
    dtype: torch.dtype,
    ma: bool,
    mb: bool,
    data: str = "randn",
    graph: bool = False,
    triton_choice: str = "best",
    notes: list[str] | None = None,
    rounds: int = 1,
) -> list[str]:
    """One table row per bundle at this shape; references timed on the same tensors. The
    Triton figure is the fastest of `triton_variants(triton_choice)`; cuBLAS and what each
    variant gave are appended to `notes` (so a run without bundles still compares them). With
    `rounds` > 1 every kernel and both references are timed again in that many interleaved
    rounds: the figures are medians, a ratio the median of the rounds' ratios, and the notes
    give each ratio's range over the rounds."""
    timer = time_graph_ms if graph else time_ms
    alpha = 1.0
    a, b, c = operands(m, n, k, dtype, ma, mb, data)
    flops = 2 * m * n * k
    cublas_tf = flops / timer(lambda: cublas(a, b, c), inner=10) / 1e9
    results = {
        v: _triton_tflops(v, a, b, c, alpha, timer, flops) for v in triton_variants(triton_choice)
    }
    timed = {v: tf for v, (tf, _) in results.items() if tf is not None}
    trit = max(timed.values()) if timed else float("nan")
    won = max(timed, key=lambda v: timed[v]) if timed else "none"
    if notes is not None:
        each = ", ".join(f"{v} {why}" for v, (_, why) in results.items())
        notes.append(f"- {m}×{n}×{k}: cuBLAS {cublas_tf:.0f}; Triton column from {won} ({each})")
    checked = {}
    for name, kernel in kernels.items():
        err = error(kernel, a, b, c, alpha)
        if not err < 1e-2:
            print(f"{name} {m}x{n}x{k}: WRONG (relative error {err:.3g})")
            continue
        checked[name] = lambda kernel=kernel: kernel(a, b, c, alpha)
    if rounds > 1:
        return _rounds_rows(checked, (a, b, c), m, n, k, won, rounds, timer, notes)
    rows = []
    for name, fn in checked.items():
        ours = flops / timer(fn, inner=10) / 1e9
        rows.append(
            f"| {name} | {m}×{n}×{k} | {ours:.0f} | {cublas_tf:.0f} | {trit:.0f} | "
            f"{ours / cublas_tf:.2f} | {ours / trit:.2f} |"
        )
    return rows


def _rounds_rows(checked, abc, m, n, k, won, rounds, timer, notes) -> list[str]:  # noqa: ANN001
    """bench_shape's rows from interleaved rounds (see there)."""
    a, b, c = abc
    fns = {"cuBLAS": lambda: cublas(a, b, c), **checked}
    if won != "none":
        fns["Triton"] = lambda: TRITON_VARIANTS[won](a, b, c, 1.0)
    times = interleaved(fns, rounds, timer)
    tf = {name: [2 * m * n * k / t / 1e9 for t in ts] for name, ts in times.items()}
    refs = [ref for ref in ("cuBLAS", "Triton") if ref in tf]
    rows = []
    for name in checked:
        ratios = {ref: [o / r for o, r in zip(tf[name], tf[ref], strict=True)] for ref in refs}
        trit, by_triton = (
            (median(tf["Triton"]), median(ratios["Triton"])) if "Triton" in tf else (nan, nan)
        )
        rows.append(
            f"| {name} | {m}×{n}×{k} | {median(tf[name]):.0f} | {median(tf['cuBLAS']):.0f} | "
            f"{trit:.0f} | {median(ratios['cuBLAS']):.2f} | {by_triton:.2f} |"
        )
        if notes is not None:
            spans = "; ".join(f"/ {ref} {min(r):.2f}-{max(r):.2f}" for ref, r in ratios.items())
            notes.append(f"  - {name}: {rounds} interleaved rounds, ratio range {spans}")
    return rows


def split_k(folder: Path, arch: str, kernel: str = "gemm_splitk"):
    """examples/gemm_sm80_splitk.tile's two kernels (or, `kernel` = gemm90_splitk,
    examples/gemm_sm90_splitk.tile's with the same sum) as one call c = alpha * a @ b.T, split as
    many ways as the sum kernel was built for (its W's first extent, -D SPLITS); the f32
    workspace (SPLITS × M × N) is allocated once per shape, outside the timed calls."""
    gemm, total = load(folder / f"{kernel}_{arch}"), load(folder / f"gemm_splitk_sum_{arch}")
    splits = total.manifest.params[0].shape[0]
    workspaces: dict[tuple[int, int], torch.Tensor] = {}

    def run(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, alpha: float) -> None:
        m, n = c.shape
        if (m, n) not in workspaces:
            workspaces[(m, n)] = torch.empty(splits, m, n, device="cuda", dtype=torch.float32)
        w = workspaces[(m, n)]
        gemm(a, b, w)
        total(w.view(splits, m * n), c.view(m * n), alpha)

    return run


def as_gemm(kernel):
    """A bundle as c = alpha * a @ b.T: kernels without an alpha (examples/gemm_sm90.tile)
    are called without it (the bench's alpha is 1)."""
    if any(p.name == "alpha" for p in kernel.manifest.params):
        return kernel
    return lambda a, b, c, alpha: kernel(a, b, c)


def parse_shape(text: str) -> tuple[int, int, int]:
    m, n, k = (int(x) for x in text.lower().split("x"))
    return m, n, k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", action="append", help="repeatable")
    parser.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    parser.add_argument("--shape", action="append", type=parse_shape, help="MxNxK, repeatable")
    parser.add_argument("--ma", action="store_true", help="A M-major (bundles built -D MA=1)")
    parser.add_argument("--mb", action="store_true", help="B N-major (bundles built -D MB=1)")
    parser.add_argument("--data", default="randn", choices=("randn", "int"))
    parser.add_argument(
        "--splitk", action="append", default=[], help="a folder of gemm_sm80_splitk.tile bundles"
    )
    parser.add_argument("--arch", default="sm90a", help="of the --splitk bundles: sm80 or sm90a")
    parser.add_argument(
        "--splitk90", action="append", default=[], help="a folder with gemm90_splitk_sm90a"
    )
    parser.add_argument(
        "--graph",
        action="store_true",
        help="time CUDA-graph replays: the GPU's time alone, without the host side of each call",
    )
    parser.add_argument(
        "--triton",
        default="best",
        choices=("best", "tutorial", "descriptor", "masked", "none"),
        help="the Triton reference: the matmul tutorial's kernel, its TMA-descriptor form, the "
        "faster of the two per shape (default), the earlier fully masked kernel, or none (a "
        "sweep beside cuBLAS alone, without autotuning Triton at every shape)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="time every kernel and reference again in R interleaved rounds (medians, ranges)",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    dtype = torch.float16 if args.dtype == "f16" else torch.bfloat16
    kernels = {b: as_gemm(load(b)) for b in args.bundle or []}
    for folder in args.splitk:
        kernels[f"{folder} (split-K)"] = split_k(Path(folder), args.arch)
    for folder in args.splitk90:
        kernels[f"{folder} (SM90 split-K)"] = split_k(Path(folder), "sm90a", "gemm90_splitk")
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {torch.cuda.get_device_name()}, "
        f"torch {torch.__version__}, triton {triton.__version__}, {args.dtype}, "
        f"{args.data} inputs, {'CUDA-graph replays' if args.graph else 'eager launches'}, "
        f"A {'M' if args.ma else 'K'}-major, B {'N' if args.mb else 'K'}-major, "
        f"Triton reference {args.triton}.",
        "",
        "| bundle | M×N×K | tilec TFLOP/s | cuBLAS | Triton | tilec / cuBLAS | tilec / Triton |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    print("\n".join(lines), flush=True)
    notes: list[str] = []
    for m, n, k in args.shape or SHAPES:
        before = len(notes)
        rows = bench_shape(
            kernels, m, n, k, dtype, args.ma, args.mb, args.data, args.graph, args.triton, notes,
            args.rounds,
        )  # fmt: skip
        print("\n".join(rows), flush=True)  # each row once, as it is measured
        print("\n".join(notes[before:]), flush=True)
        lines += rows
    lines += ["", f"References (TFLOP/s), --triton {args.triton}:", *notes]
    table = "\n".join(lines)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()

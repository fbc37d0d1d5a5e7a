"""Bench: tilec GEMM bundles beside cuBLAS (torch.matmul) and an autotuned Triton kernel.

    python bench/bench_gemm.py --bundle build/gemm/gemm_sm80 [--dtype f16] [--out table.md]
    python bench/bench_gemm.py --splitk build/splitk/s4 --shape 16x4096x4096   (both kernels)

C = alpha * A @ B^T with A M×K and B N×K row-major ("TN"), randn inputs (never zeros or small
integers: the H200 runs ~10% faster on low-entropy data; `--data int` measures that kind only
to compare with figures published on it). Each figure is the median of 15
samples of 10 back-to-back launches timed with CUDA events; all three run in the same process
on the same tensors. With `--graph` the 10 calls are captured in a CUDA graph and replayed, so
the figure is the GPU's time alone: small problems whose kernels finish before Python has
issued the next launch are measured without that host time. TFLOP/s counts 2·M·N·K.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

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


def triton_gemm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, alpha: float) -> None:
    """c = alpha * a @ b.T for any strides of a (M×K) and b (N×K)."""
    m, k = a.shape
    n = b.shape[0]
    grid = lambda meta: (triton.cdiv(m, meta["BM"]), triton.cdiv(n, meta["BN"]))  # noqa: E731
    _triton_gemm[grid](a, b, c, m, n, k, *a.stride(), *b.stride(), alpha)


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
) -> list[str]:
    """One table row per bundle at this shape; references timed once, on the same tensors."""
    timer = time_graph_ms if graph else time_ms
    alpha = 1.0
    a, b, c = operands(m, n, k, dtype, ma, mb, data)
    flops = 2 * m * n * k
    cublas_tf = flops / timer(lambda: cublas(a, b, c), inner=10) / 1e9
    trit = flops / timer(lambda: triton_gemm(a, b, c, alpha), inner=10) / 1e9
    rows = []
    for name, kernel in kernels.items():
        err = error(kernel, a, b, c, alpha)
        if not err < 1e-2:
            print(f"{name} {m}x{n}x{k}: WRONG (relative error {err:.3g})")
            continue
        ours = flops / timer(lambda kernel=kernel: kernel(a, b, c, alpha), inner=10) / 1e9
        rows.append(
            f"| {name} | {m}×{n}×{k} | {ours:.0f} | {cublas_tf:.0f} | {trit:.0f} | "
            f"{ours / cublas_tf:.2f} | {ours / trit:.2f} |"
        )
    return rows


def split_k(folder: Path, arch: str):
    """examples/gemm_sm80_splitk.tile's two kernels as one call c = alpha * a @ b.T, split as
    many ways as the sum kernel was built for (its W's first extent, -D SPLITS); the f32
    workspace (SPLITS × M × N) is allocated once per shape, outside the timed calls."""
    gemm, total = load(folder / f"gemm_splitk_{arch}"), load(folder / f"gemm_splitk_sum_{arch}")
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
        "--graph",
        action="store_true",
        help="time CUDA-graph replays: the GPU's time alone, without the host side of each call",
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    dtype = torch.float16 if args.dtype == "f16" else torch.bfloat16
    kernels = {b: as_gemm(load(b)) for b in args.bundle or []}
    for folder in args.splitk:
        kernels[f"{folder} (split-K)"] = split_k(Path(folder), args.arch)
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {torch.cuda.get_device_name()}, "
        f"torch {torch.__version__}, triton {triton.__version__}, {args.dtype}, "
        f"{args.data} inputs, {'CUDA-graph replays' if args.graph else 'eager launches'}, "
        f"A {'M' if args.ma else 'K'}-major, B {'N' if args.mb else 'K'}-major.",
        "",
        "| bundle | M×N×K | tilec TFLOP/s | cuBLAS | Triton | tilec / cuBLAS | tilec / Triton |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    print("\n".join(lines), flush=True)
    for m, n, k in args.shape or SHAPES:
        rows = bench_shape(kernels, m, n, k, dtype, args.ma, args.mb, args.data, args.graph)
        print("\n".join(rows), flush=True)  # each row once, as it is measured
        lines += rows
    table = "\n".join(lines)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()

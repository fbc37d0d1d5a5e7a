"""Bench: the SM90 GEMM with an f32 output (`-D O=f32`) beside cuBLAS with an f32 output.

    python bench/bench_output_type.py --f32 build/sm90/o32_bf16/gemm90 \
        --same build/sm90/default_bf16/gemm90 [--rounds 7]

bf16 randn inputs. The f32-output kernel is checked against an fp64 product (the output
poisoned first); then it, the bf16-output build, cuBLAS with a bf16 output (torch.matmul) and
cuBLAS with an f32 output (`torch.mm(..., out_dtype=torch.float32)`) are timed in interleaved
rounds (eager 10-call bursts, medians).
"""

from __future__ import annotations

import argparse
import statistics

import torch

from tilec.runtime import load
from tilec.runtime.measure import time_ms

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096)]


def row(f32: object, same: object, shape: tuple[int, int, int], rounds: int) -> str:
    m, n, k = shape
    a = torch.randn(m, k, device="cuda").bfloat16()
    b = torch.randn(n, k, device="cuda").bfloat16()
    c32 = torch.full((m, n), float("nan"), device="cuda")
    c16 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    f32(a, b, c32)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    err = ((c32.double() - ref).norm() / ref.norm()).item()
    if not err < 1e-4:
        raise SystemExit(f"O = f32 {m}x{n}x{k}: WRONG (relative error {err:.2e})")
    fns = {
        "tilec O=f32": lambda: f32(a, b, c32),
        "cuBLAS f32 out": lambda: torch.mm(a, b.T, out_dtype=torch.float32),
        "tilec bf16 out": lambda: same(a, b, c16),
        "cuBLAS bf16 out": lambda: torch.matmul(a, b.T, out=c16),
    }
    times: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(rounds):
        for name in list(fns)[:: -1 if r % 2 else 1]:
            times[name].append(time_ms(fns[name], inner=10))
    tf = {name: 2 * m * n * k / statistics.median(t) / 1e9 for name, t in times.items()}
    ratio = statistics.median(
        c / t for t, c in zip(times["tilec O=f32"], times["cuBLAS f32 out"], strict=True)
    )
    cells = " | ".join(f"{tf[name]:.0f}" for name in fns)
    return f"| {m}×{n}×{k} | {cells} | {ratio:.2f} | {err:.1e} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--f32", required=True, help="a gemm_sm90.tile bundle built -D O=f32")
    parser.add_argument("--same", required=True, help="the same build with O = T")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    f32, same = load(args.f32), load(args.same)
    print("| M×N×K | tilec O=f32 | cuBLAS f32 out | tilec bf16 out | cuBLAS bf16 out | "
          "f32: tilec / cuBLAS | error |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for shape in SHAPES:
        print(row(f32, same, shape, args.rounds), flush=True)


if __name__ == "__main__":
    main()

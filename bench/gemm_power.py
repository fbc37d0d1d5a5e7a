"""Bench: the SM clock and power a GEMM runs at, beside cuBLAS on the same tensors.

    python bench/gemm_power.py --bundle build/gemm/default_sm90a/gemm_sm90a [--shape 8192x8192x8192]
        [--triton] [--rounds R]

Each kernel runs back to back for `--seconds` while nvidia-smi is sampled (mma_study's sampler);
TFLOP/s is the whole run's. A GEMM held at the power limit runs below the clock the register-only
ceiling was measured at, so its ratio to that ceiling mixes two things: how full it keeps the
tensor pipe, and how much energy each flop costs. With `--rounds R` every kernel runs once a
round (the order reversed every other round) and the medians of the per-round ratios follow:
sustained throughput at the power limit, where short interleaved bursts (bench_gemm.py
--rounds) also weigh how each kernel runs before the clock settles.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import torch
from bench_gemm import as_gemm, error, parse_shape, triton_gemm
from mma_study import sample

from tilec.runtime import load


def run(name: str, fn, flops: float, seconds: float) -> tuple[float, str]:
    fn()
    torch.cuda.synchronize()
    stop, seen = threading.Event(), []
    sampler = threading.Thread(target=sample, args=(stop, seen))
    sampler.start()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            fn()
        count += 20
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    stop.set()
    sampler.join()
    clocks, power = sorted(c for c, _ in seen), sorted(p for _, p in seen)
    mid = len(seen) // 2
    tflops = flops * count / elapsed / 1e12
    return tflops, (
        f"| {name} | {tflops:.0f} | {clocks[0]}–{clocks[-1]} "
        f"(median {clocks[mid]}) | {power[mid]:.0f} (max {power[-1]:.0f}) |"
    )


def summary(seen: dict[str, list[float]]) -> list[str]:
    """Each kernel's median TFLOP/s over the rounds, and the median (range) of its per-round
    ratios to cuBLAS and to Triton."""
    lines = ["", "| kernel | median TFLOP/s | / cuBLAS (range) | / Triton (range) |"]
    lines.append("| --- | ---: | ---: | ---: |")
    for name, runs in seen.items():
        cells = [f"{statistics.median(runs):.0f}"]
        for ref in ("cuBLAS", "Triton"):
            if ref not in seen or ref == name:
                cells.append("")
                continue
            r = sorted(x / y for x, y in zip(runs, seen[ref], strict=True))
            cells.append(f"{statistics.median(r):.3f} ({r[0]:.3f}–{r[-1]:.3f})")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True, action="append", help="repeatable")
    parser.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    parser.add_argument("--shape", type=parse_shape, default=(8192, 8192, 8192))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--triton", action="store_true", help="also the Triton tutorial kernel (autotuned first)"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="R rounds, the order reversed every other one"
    )
    args = parser.parse_args()
    dtype = torch.float16 if args.dtype == "f16" else torch.bfloat16
    m, n, k = args.shape
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(n, k, device="cuda").to(dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    flops = 2 * m * n * k
    print(f"{m}×{n}×{k} {args.dtype}, randn")
    print("| kernel | TFLOP/s | SM MHz | W |\n| --- | ---: | --- | --- |")
    fns = {"cuBLAS": lambda: torch.matmul(a, b.T, out=c)}
    if args.triton:
        fns["Triton"] = lambda: triton_gemm(a, b, c, 1.0)
    for bundle in args.bundle:
        kernel = as_gemm(load(bundle))
        fns[bundle] = lambda k=kernel: k(a, b, c, 1.0)
        err = error(kernel, a, b, c, 1.0)
        if not err < 1e-2:
            raise SystemExit(f"{bundle}: WRONG (relative error {err:.3g})")
    seen: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(args.rounds):
        for name in list(fns) if r % 2 == 0 else list(fns)[::-1]:
            tflops, row = run(name, fns[name], flops, args.seconds)
            seen[name].append(tflops)
            print(row, flush=True)
    if args.rounds > 1:
        print("\n".join(summary(seen)))


if __name__ == "__main__":
    main()

"""Bench: the SM clock and power a GEMM runs at, beside cuBLAS on the same tensors.

    python bench/gemm_power.py --bundle build/gemm/default_sm90a/gemm_sm90a [--shape 8192x8192x8192]

Each kernel runs back to back for `--seconds` while nvidia-smi is sampled (mma_study's sampler);
TFLOP/s is the whole run's. A GEMM held at the power limit runs below the clock the register-only
ceiling was measured at, so its ratio to that ceiling mixes two things: how full it keeps the
tensor pipe, and how much energy each flop costs.
"""

from __future__ import annotations

import argparse
import threading
import time

import torch
from bench_gemm import parse_shape
from mma_study import sample

from tilec.runtime import load


def run(name: str, fn, flops: float, seconds: float) -> str:
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
    return (
        f"| {name} | {flops * count / elapsed / 1e12:.0f} | {clocks[0]}–{clocks[-1]} "
        f"(median {clocks[mid]}) | {power[mid]:.0f} (max {power[-1]:.0f}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True, action="append", help="repeatable")
    parser.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    parser.add_argument("--shape", type=parse_shape, default=(8192, 8192, 8192))
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    dtype = torch.float16 if args.dtype == "f16" else torch.bfloat16
    m, n, k = args.shape
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(n, k, device="cuda").to(dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    flops = 2 * m * n * k
    print(f"{m}×{n}×{k} {args.dtype}, randn")
    print("| kernel | TFLOP/s | SM MHz | W |\n| --- | ---: | --- | --- |")
    print(run("cuBLAS", lambda: torch.matmul(a, b.T, out=c), flops, args.seconds), flush=True)
    for bundle in args.bundle:
        kernel = load(bundle)
        print(run(bundle, lambda k=kernel: k(a, b, c, 1.0), flops, args.seconds), flush=True)


if __name__ == "__main__":
    main()

"""Bench: the host-side cost of one launch through `tilec.runtime`, beside torch's.

    python bench/bench_launch.py --bundle build/gemm/default_sm90a/gemm_sm90a

A 128×256×64 GEMM is one block, far shorter than a Python launch, so `count` calls back to back
followed by one synchronize time the host side of a call. Rows: a planned call (the same
shapes each time), `Kernel.bind` alone (what a call without a plan adds), and torch.matmul on
the same tensors (cuBLAS's host path) for scale. Then the bundle's TFLOP/s at 1024³, where the
launch used to dominate.
"""

from __future__ import annotations

import argparse
import time

import torch

from tilec.runtime import load
from tilec.runtime.measure import time_ms


def per_call_us(fn, count: int = 2000) -> float:
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / count * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True)
    args = parser.parse_args()
    kernel = load(args.bundle)
    a = torch.randn(128, 64, device="cuda", dtype=torch.float16)
    b = torch.randn(256, 64, device="cuda", dtype=torch.float16)
    c = torch.full((128, 256), float("nan"), device="cuda", dtype=torch.float16)
    kernel(a, b, c, 1.0)
    err = ((c.float() - a.float() @ b.float().T).norm() / (a.float() @ b.float().T).norm()).item()
    assert err < 1e-2, f"wrong result (relative error {err:.3g})"
    rows = [
        ("tilec kernel(a, b, c, 1.0), planned", lambda: kernel(a, b, c, 1.0)),
        ("tilec Kernel.bind alone", lambda: kernel.bind(a, b, c, 1.0)),
        ("torch.matmul(a, b.T, out=c)", lambda: torch.matmul(a, b.T, out=c)),
    ]
    print("| call | µs per call |")
    print("| --- | ---: |")
    for name, fn in rows:
        print(f"| {name} | {per_call_us(fn):.1f} |")
    print(f"plans held: {kernel.plans}")
    n = 1024
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    ours = 2 * n**3 / time_ms(lambda: kernel(a, b, c, 1.0), inner=10) / 1e9
    cublas = 2 * n**3 / time_ms(lambda: torch.matmul(a, b.T, out=c), inner=10) / 1e9
    print(f"1024³: tilec {ours:.0f} TFLOP/s, cuBLAS {cublas:.0f}")


if __name__ == "__main__":
    main()

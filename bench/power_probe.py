"""Bench: SM90 GEMMs run back to back for seconds, with the SM clock and the power draw.

    python bench/power_probe.py [--bundles build/pingpong] [--seconds 2] [--kernel NAME=FOLDER]
        [--dtype bf16|f16] [--shape MxNxK ...] [--refs]

Bursts of ten calls (bench_gemm*.py) start in whatever power state the GPU is in; a kernel run
for seconds settles where the power limit holds it. For each shape and kernel (the plain,
fused ReLU and fused GELU kernels of bench/build_pingpong.sh, cooperative and ping-pong), this
calls the kernel back to back for `--seconds`, times all the calls with CUDA events, and
samples `nvidia-smi` (SM clock, power draw) meanwhile: TFLOP/s, the median clock and power.
randn inputs (bf16 unless `--dtype f16`). `--refs` runs cuBLAS (`torch.matmul`) and the Triton
matmul tutorial's kernel (bench/bench_gemm.py, autotuned first) the same way, beside them.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from functools import partial

import torch

from tilec.runtime import load

SHAPES = [(4096, 4096, 4096), (4096, 11008, 4096), (8192, 8192, 8192)]


def sample(stop: threading.Event, out: list[tuple[float, float]]) -> None:
    query = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"]
    while not stop.is_set():
        clock, power = subprocess.run(query, capture_output=True, text=True).stdout.split(",")
        out.append((float(clock), float(power)))
        time.sleep(0.05)


def sustained(fn: Callable[[], None], seconds: float) -> tuple[float, float, float]:
    """(ms a call, median SM clock MHz, median power W) over `seconds` of back-to-back calls."""
    fn()
    torch.cuda.synchronize()
    stop, samples = threading.Event(), []
    sampler = threading.Thread(target=sample, args=(stop, samples))
    sampler.start()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    began, calls = time.time(), 0
    start.record()
    while time.time() - began < seconds:
        for _ in range(20):
            fn()
        calls += 20
        torch.cuda.synchronize()
    end.record()
    torch.cuda.synchronize()
    stop.set()
    sampler.join()
    settled = samples[2:] or samples
    return (
        start.elapsed_time(end) / calls,
        statistics.median(c for c, _ in settled),
        statistics.median(p for _, p in settled),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundles", default="build/pingpong")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument(
        "--kernel",
        action="append",
        default=[],
        help="NAME=FOLDER (repeatable): a bundle under --bundles instead of the default set",
    )
    parser.add_argument("--dtype", default="bf16", choices=("bf16", "f16"))
    parser.add_argument("--shape", action="append", default=[], help="MxNxK, repeatable")
    parser.add_argument("--refs", action="store_true", help="also cuBLAS and Triton's kernel")
    args = parser.parse_args()
    p = args.bundles
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shape] or SHAPES
    chosen = dict(k.split("=", 1) for k in args.kernel) or {
        "plain": "coop/gemm90",
        "relu": "coop_act1/gemm90_bias_act",
        "gelu": "coop_act2/gemm90_bias_act",
        "ping-pong plain": "pp_n128_s6/gemm90",
        "ping-pong gelu": "pp_act2/gemm90_bias_act",
    }
    # name -> (kernel, whether it takes the bias and alpha, beta)
    kernels = {name: (load(f"{p}/{f}"), "bias_act" in f) for name, f in chosen.items()}
    print("| M×N×K | kernel | TFLOP/s | SM clock MHz | power W |")
    print("| --- | --- | ---: | ---: | ---: |")
    for m, n, k in shapes:
        a = torch.randn(m, k, device="cuda").to(dtype)
        b = torch.randn(n, k, device="cuda").to(dtype)
        bias = torch.randn(n, device="cuda").to(dtype).expand(m, n)
        c = torch.empty(m, n, device="cuda", dtype=dtype)
        calls = {
            name: partial(kernel, a, b, c, bias, 1.0, 0.0) if fused else partial(kernel, a, b, c)
            for name, (kernel, fused) in kernels.items()
        }
        if args.refs:
            from bench_gemm import cublas, tutorial_gemm

            calls["cuBLAS"] = partial(cublas, a, b, c)
            calls["Triton (tutorial)"] = partial(tutorial_gemm, a, b, c, 1.0)
        for name, call in calls.items():
            ms, clock, power = sustained(call, args.seconds)
            tflops = 2 * m * n * k / ms / 1e9
            row = f"| {m}×{n}×{k} | {name} | {tflops:.0f} | {clock:.0f} | {power:.0f} |"
            print(row, flush=True)


if __name__ == "__main__":
    main()

"""Attention forward (examples/attention.tile, FlashAttention-2's loop on mma.sync) beside
torch's scaled_dot_product_attention (FlashAttention's kernels where torch picks them) on the
same randn tensors, in one run: TFLOP/s (4·H·M·N·D per call, half that for the `causal`
bundles, which SDPA runs with is_causal) and the ratio.

Bundles: test/gpu/build_row_bundles.sh (build/rows/flash_*). Each case checks the bundle
against SDPA before timing it; rounds interleave the two, each a median of CUDA-event timings
of back-to-back launches (tilec.runtime.measure.time_ms).

    python bench/bench_attention.py [--rows build/rows] [--bundles flash_default,flash_s1]
"""

from __future__ import annotations

import argparse
import datetime
import statistics
from pathlib import Path

import torch
import torch.nn.functional as F

from tilec.runtime import load
from tilec.runtime.measure import time_ms

D = 64
REPEATS = 5
# (heads, M = N): batch x heads folded into one mode.
SHAPES = [(16, 1024), (32, 2048), (16, 4096), (8, 8192)]


def case(kernel, name: str, heads: int, n: int) -> tuple[float, float]:  # noqa: ANN001
    """(tilec ms, SDPA ms), medians over interleaved rounds."""
    dtype = torch.bfloat16 if "bf16" in name else torch.float16
    q, k, v = (torch.randn(heads, n, D, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    scale = D**-0.5
    ours = lambda: kernel(q, k, v, o, scale)  # noqa: E731
    causal = "causal" in name
    theirs = lambda: F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)  # noqa: E731
    ours()
    ref = theirs()[0]
    err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
    if not err < 2e-2:
        raise AssertionError(f"{name} {heads}x{n}: relative error {err:.3g} against SDPA")
    t_ours, t_theirs = [], []
    for _ in range(REPEATS):
        t_ours.append(time_ms(ours))
        t_theirs.append(time_ms(theirs))
    return statistics.median(t_ours), statistics.median(t_theirs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=Path, default=Path("build/rows"))
    ap.add_argument("--bundles", default="flash_default,flash_m64,flash_causal,flash_causal_m64")
    args = ap.parse_args()
    print(f"# attention forward, D = {D}, {datetime.date.today()}, {torch.cuda.get_device_name()}")
    print("| bundle | heads x M=N | tilec TFLOP/s | SDPA TFLOP/s | tilec / SDPA |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name in args.bundles.split(","):
        kernel = load(args.rows / f"{name}_sm90a")
        for heads, n in SHAPES:
            ours, theirs = case(kernel, name, heads, n)
            flops = 4 * heads * n * n * D // (2 if "causal" in name else 1)
            print(
                f"| {name} | {heads}x{n} | {flops / ours / 1e9:.0f} | "
                f"{flops / theirs / 1e9:.0f} | {theirs / ours:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()

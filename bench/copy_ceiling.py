"""Bench: the device-copy ceiling (torch D2D copy), and optionally a vadd bundle beside it.

    python bench/copy_ceiling.py [--bundle build/bundles/vadd_sm90a] [--reps 50]

Bandwidth counts bytes read + bytes written; each figure is the median of `reps` launches
timed one by one with CUDA events, after warm-up.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import torch

GIB = 1 << 30


def median_ms(fn: Callable[[], None], reps: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", help="a vadd bundle to time beside the copy")
    parser.add_argument("--reps", type=int, default=50)
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    best = 0.0
    for gib in (1, 2, 4):
        n = gib * GIB // 4
        src = torch.randn(n, device="cuda")
        dst = torch.empty_like(src)
        ms = median_ms(lambda d=dst, s=src: d.copy_(s), args.reps)
        gbs = 2 * n * 4 / ms / 1e6
        best = max(best, gbs)
        print(f"torch copy {gib} GiB: {ms:.3f} ms median, {gbs:.0f} GB/s (read + write)")
        del src, dst
    print(f"copy ceiling: {best:.0f} GB/s")
    if args.bundle:
        from tilec.runtime import load

        kernel = load(args.bundle)
        for gib in (1, 2):
            n = gib * GIB // 4
            a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            c = torch.empty_like(a)
            ms = median_ms(lambda a=a, b=b, c=c: kernel(a, b, c), args.reps)
            gbs = 3 * n * 4 / ms / 1e6
            print(
                f"vadd bundle {args.bundle} N={n}: {ms:.3f} ms median, {gbs:.0f} GB/s "
                f"({100 * gbs / best:.0f}% of copy ceiling); includes Python launch overhead"
            )
            ok = torch.equal(c, a + b)
            print(f"  result matches torch: {ok}")


if __name__ == "__main__":
    main()

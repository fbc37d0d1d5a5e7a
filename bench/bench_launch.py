"""Bench: the host-side cost of one launch through `tilec.runtime`, beside torch's.

    python bench/bench_launch.py --bundle build/gemm/default_sm90a/gemm_sm90a \
        [--batched build/sm90/batched/default/gemm90_batched --profile]

A 128×256×64 GEMM is one block, far shorter than a Python launch, so `count` calls back to back
followed by one synchronize time the host side of a call. Rows: a planned call (the same
shapes each time), `Kernel.bind` alone (what a call without a plan adds), and torch.matmul on
the same tensors (cuBLAS's host path) for scale. Then the bundle's TFLOP/s at 1024³, where the
launch used to dominate. With `--batched`, the same for examples/gemm_sm90_batched.tile at
32×512×512×512 (three tensor maps; its kernel is shorter than a call's host side) beside
torch.bmm, and with `--profile` where a planned call's host time goes (cProfile, own time).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import torch

from tilec.runtime import load
from tilec.runtime.binding import bind
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


def batched(path: str, profile: bool) -> None:
    """The batched kernel's host side on one 128×256×64 tile (three tensor maps, a kernel far
    shorter than the call), then its eager TFLOP/s at 32×512×512×512 beside torch.bmm's."""
    kernel = load(path)

    def operands(l: int, m: int, n: int, k: int) -> tuple[torch.Tensor, ...]:
        a = torch.randn(l, m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(l, n, k, device="cuda", dtype=torch.bfloat16)
        c = torch.full((l, m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        kernel(a, b, c)
        want = a.float() @ b.float().transpose(1, 2)
        err = ((c.float() - want).norm() / want.norm()).item()
        assert err < 1e-2, f"wrong result (relative error {err:.3g})"
        return a, b, c

    def packing_each_call(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        for plan in kernel._plans.values():  # the planned path as it was before ready launches
            plan.launches.clear()
        kernel(a, b, c)

    def bmm(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
        torch.bmm(a, b.transpose(1, 2), out=c)

    small = operands(1, 128, 256, 64)
    rows = [
        ("tilec batched kernel(a, b, c), planned", kernel),
        ("the same, packing its parameters each call", packing_each_call),
        ("torch.bmm(a, b.transpose(1, 2), out=c)", bmm),
    ]
    for name, fn in rows:
        print(f"| {name} | {per_call_us(lambda fn=fn: fn(*small)):.1f} |")
    big = operands(32, 512, 512, 512)
    flops = 2 * 32 * 512**3 / 1e9
    ours, before, theirs = (
        flops / time_ms(lambda f=f: f(*big), inner=10) for f in (kernel, packing_each_call, bmm)
    )
    print(
        f"32×512³ eager, TFLOP/s: tilec {ours:.0f}, packing each call {before:.0f}, "
        f"torch.bmm {theirs:.0f} ({ours / theirs:.2f} and {before / theirs:.2f})"
    )
    a, b, c = small
    if profile:
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(2000):
            kernel(a, b, c)
        prof.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(14)
        print(text.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--batched", help="examples/gemm_sm90_batched.tile's bundle")
    parser.add_argument("--profile", action="store_true", help="where a batched call's time goes")
    args = parser.parse_args()
    loaded = load(args.bundle)
    with_alpha = any(p.name == "alpha" for p in loaded.manifest.params)

    def kernel(*call):  # noqa: ANN002, ANN202 - examples/gemm_sm90.tile takes no alpha
        return loaded(*(call if with_alpha else call[:3]))

    kernel.bind = (
        lambda *call: bind(  # with the device's symbols (num_sms)
            loaded.manifest, call if with_alpha else call[:3], loaded.device_symbols
        )
    )
    kernel.manifest = loaded.manifest
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
    print(f"plans held: {loaded.plans}")
    n = 1024
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    ours = 2 * n**3 / time_ms(lambda: kernel(a, b, c, 1.0), inner=10) / 1e9
    cublas = 2 * n**3 / time_ms(lambda: torch.matmul(a, b.T, out=c), inner=10) / 1e9
    print(f"1024³: tilec {ours:.0f} TFLOP/s, cuBLAS {cublas:.0f}")
    if args.batched:
        batched(args.batched, args.profile)


if __name__ == "__main__":
    main()

"""Bench: batched SM90 GEMM bundles beside torch.bmm, in interleaved rounds.

    python bench/bench_batched.py --bundle build/sm90/batched/default/gemm90_batched \
        [--bundle build/sm90/batched/pp/gemm90_batched] [--rounds 9] [--out table.md] \
        [--b-row-major] [--ops]

C[l] = A[l] @ B[l]^T, bf16 randn inputs; every bundle is checked against an fp64 product (the
output poisoned first) before it is timed. B is K-major (L x N x K, torch.bmm given its
transpose), or with --b-row-major torch.bmm's usual row-major L x K x N (the bundles given its
transpose: an MN-major B, for builds with MB = 1). --ops times tilec.ops.bmm beside them (the
whole call: operands laid out, any copy included, the planned launch). Each kernel and
torch.bmm are timed in R rounds, the order reversed every other round, as eager 10-call bursts
and as CUDA-graph replays (the GPU's time alone); a ratio is the median over the rounds of
torch.bmm's time / the kernel's.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import torch

from tilec.runtime import load
from tilec.runtime.measure import time_graph_ms, time_ms

SHAPES = [(32, 512, 512, 512), (8, 4096, 4096, 1024)]


def check(kernels: dict, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    ref = torch.bmm(a.double(), b.double().transpose(1, 2))
    for name, kernel in kernels.items():
        c.fill_(float("nan"))
        kernel(a, b, c)
        torch.cuda.synchronize()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            raise SystemExit(f"{name} {tuple(c.shape)}: WRONG (relative error {err:.2e})")


def shape_rows(kernels: dict, shape: tuple[int, int, int, int], args: argparse.Namespace
               ) -> list[str]:  # fmt: skip
    l, m, n, k = shape
    a = torch.randn(l, m, k, device="cuda").bfloat16()
    if args.b_row_major:  # torch.bmm's L x K x N, seen as L x N x K (MN-major)
        b = torch.randn(l, k, n, device="cuda").bfloat16().transpose(1, 2)
    else:
        b = torch.randn(l, n, k, device="cuda").bfloat16()
    c = torch.empty(l, m, n, device="cuda", dtype=torch.bfloat16)
    bt, out = b.transpose(1, 2), torch.empty_like(c)
    fns = {name: (lambda kernel=kernel: kernel(a, b, c)) for name, kernel in kernels.items()}
    if args.ops:
        import tilec.ops as ops

        kernels = {**kernels, "tilec.ops.bmm": lambda a, b, c: c.copy_(ops.bmm(a, b.mT))}
        fns["tilec.ops.bmm"] = lambda: ops.bmm(a, bt)
    check(kernels, a, b, c)
    fns["torch.bmm"] = lambda: torch.bmm(a, bt, out=out)
    flops = 2 * l * m * n * k
    rows = []
    for label, timer in (("eager", time_ms), ("graph", time_graph_ms)):
        times: dict[str, list[float]] = {name: [] for name in fns}
        for r in range(args.rounds):
            for name in list(fns)[:: -1 if r % 2 else 1]:
                times[name].append(timer(fns[name], inner=10))
        bmm = flops / statistics.median(times["torch.bmm"]) / 1e9
        for name in kernels:
            tf = flops / statistics.median(times[name]) / 1e9
            ratio = statistics.median(
                t / mine for mine, t in zip(times[name], times["torch.bmm"], strict=True)
            )
            rows.append(
                f"| {name} | {l}×{m}×{n}×{k} | {label} | {tf:.0f} | {bmm:.0f} | {ratio:.2f} |"
            )
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundle", action="append", required=True, help="repeatable")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--shape", action="append", help="LxMxNxK, repeatable (default: the issue's two)"
    )
    parser.add_argument("--out")
    parser.add_argument("--b-row-major", action="store_true", help="B row-major L x K x N")
    parser.add_argument("--ops", action="store_true", help="time tilec.ops.bmm too")
    args = parser.parse_args()
    kernels = {b: load(b) for b in args.bundle}
    lines = ["| bundle | L×M×N×K | timing | tilec TFLOP/s | torch.bmm | / torch.bmm |",
             "| --- | --- | --- | ---: | ---: | ---: |"]  # fmt: skip
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shape] if args.shape else SHAPES
    for shape in shapes:
        lines += shape_rows(kernels, shape, args)  # type: ignore[arg-type]
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

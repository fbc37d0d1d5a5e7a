"""Bench: what fused epilogues cost over the plain SM90 GEMM, variants in interleaved rounds.

    python bench/bench_epilogue_cost.py --plain build/pingpong/coop/gemm90 \
        --fused gelu=build/pingpong/coop_act2/gemm90_bias_act \
        --fused relu=build/pingpong/coop_act1/gemm90_bias_act [--rounds 7] [--dtype bf16]

Each `--fused NAME=BUNDLE` is examples/gemm_sm90_bias_act.tile built with BETA = 0; NAME is its
activation (relu, gelu, gelu_tanh; anything after a `:` in NAME only labels it, e.g.
`gelu:before=...`). Every kernel runs on the same randn tensors, its result checked against
torch first; then all of them, plain included, are timed in R rounds, the order reversed every
other round (each time the median of 15 ten-call bursts). A variant's cost is the median over
the rounds of its time over the plain kernel's in that round, minus one, with the range.

`--sms N` runs every kernel on N SMs (`Kernel.with_sms`): with a quarter of the H200's SMs the
GPU stays under its 700 W limit and at its top clock, so a cost is the epilogue's time alone,
within a few tenths of a percent from round to round; on all SMs the kernels run at the power
limit, where what an epilogue costs includes the energy it burns, and rounds spread by
several percent (docs/performance.md).
"""

from __future__ import annotations

import argparse
import datetime
from statistics import median

import torch
from bench_gemm import interleaved
from bench_gemm_fused import ACTS, FUSED_SHAPES, check, emit

from tilec.runtime import load
from tilec.runtime.measure import time_ms


def shape_rows(plain, fused: dict[str, object], shape, dtype, rounds: int) -> list[str]:  # noqa: ANN001
    m, n, k = shape
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(n, k, device="cuda").to(dtype)
    bias = torch.randn(n, device="cuda").to(dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    y = (a.float() @ b.float().T) + bias.float()
    wide = bias.expand(m, n)
    fns = {"plain": lambda: plain(a, b, c)}
    for name, kernel in fused.items():
        act = name.split(":")[0]
        c.fill_(float("nan"))
        kernel(a, b, c, wide, 1.0, 0.0)
        check(c, torch.relu(y) if act == "relu" else ACTS[act](y), name)
        fns[name] = lambda kernel=kernel: kernel(a, b, c, wide, 1.0, 0.0)
    times = interleaved(fns, rounds, time_ms)
    flops = 2 * m * n * k / 1e9
    rows = []
    for name in fused:
        costs = [f / p - 1 for f, p in zip(times[name], times["plain"], strict=True)]
        rows.append(
            f"| {name} | {m}×{n}×{k} | {flops / median(times[name]):.0f} | "
            f"{flops / median(times['plain']):.0f} | {median(costs):+.1%} | "
            f"{min(costs):+.1%} … {max(costs):+.1%} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plain", required=True, help="examples/gemm_sm90.tile's bundle")
    parser.add_argument("--fused", action="append", required=True, help="NAME=BUNDLE, repeatable")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dtype", default="bf16", choices=("f16", "bf16"))
    parser.add_argument("--sms", type=int, help="run every kernel on this many SMs")
    parser.add_argument("--out")
    args = parser.parse_args()
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[args.dtype]

    def limited(path: str):  # noqa: ANN202
        kernel = load(path)
        return kernel if args.sms is None else kernel.with_sms(args.sms)

    plain = limited(args.plain)
    fused = {}
    for spec in args.fused:
        name, path = spec.split("=", 1)
        if name.split(":")[0] not in ACTS:
            raise SystemExit(f"{name}: the activation must be one of {', '.join(ACTS)}")
        fused[name] = limited(path)
    lines = [
        f"Measured {datetime.date.today()} on {torch.cuda.get_device_name()}, {args.dtype}, randn, "
        f"{args.rounds} interleaved rounds" + (f", {args.sms} SMs." if args.sms else "."),
        "",
        "| fused | M×N×K | fused TFLOP/s | plain | cost (median) | range |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for shape in FUSED_SHAPES:
        lines += shape_rows(plain, fused, shape, dtype, args.rounds)
    emit(lines, args.out)


if __name__ == "__main__":
    main()

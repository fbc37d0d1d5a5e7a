"""Bench: the SM90 GEMM's fused epilogue and batched kernels beside torch, in one run.

    python bench/bench_gemm_fused.py --plain build/sm90/default_bf16/gemm90 \
        --fused build/sm90/epilogue/act1_beta0/gemm90_bias_act --act relu \
        --batched build/sm90/batched/default/gemm90_batched [--dtype bf16] [--out table.md]

Fused: y = act(A @ B^T + bias) by the fused kernel (built with BETA = 0, alpha = 1), by the
plain tilec GEMM (the fusion's cost: same shape, no epilogue math), and by torch's unfused
sequence, `torch.addmm(bias, A, B^T)` then the activation in place. Batched: C[l] = A[l] @
B[l]^T against `torch.bmm`. randn inputs; each figure the median of CUDA-event timings of 10
back-to-back calls (`tilec.runtime.measure.time_ms`), results checked against torch first.
With `--graph` every figure times CUDA-graph replays instead (`time_graph_ms`): the GPU's time
alone, for shapes whose kernels are shorter than a call's host side (32×512³ batched).
"""

from __future__ import annotations

import argparse
import datetime

import torch
from bench_gemm import parse_shape

from tilec.runtime import load
from tilec.runtime.measure import time_graph_ms, time_ms

ACTS = {
    "relu": torch.relu_,
    "gelu": lambda y: torch.nn.functional.gelu(y, approximate="none"),
    "gelu_tanh": lambda y: torch.nn.functional.gelu(y, approximate="tanh"),
}
FUSED_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 11008, 4096)]
BATCHED_SHAPES = [(32, 512, 512, 512), (8, 4096, 4096, 1024)]


def check(out: torch.Tensor, ref: torch.Tensor, what: str) -> None:
    err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
    if not err < 2e-2:
        raise SystemExit(f"{what}: WRONG (relative error {err:.3g})")


def fused_row(plain, fused, act_name: str, shape: tuple[int, int, int], dtype, timer) -> str:  # noqa: ANN001
    m, n, k = shape
    act = ACTS[act_name]
    a = torch.randn(m, k, device="cuda").to(dtype)
    b = torch.randn(n, k, device="cuda").to(dtype)
    bias = torch.randn(n, device="cuda").to(dtype)
    c = torch.empty(m, n, device="cuda", dtype=dtype)
    y = (a.float() @ b.float().T) + bias.float()
    expect = torch.relu(y) if act_name == "relu" else ACTS[act_name](y)
    wide_bias = bias.expand(m, n)

    def ours() -> None:
        fused(a, b, c, wide_bias, 1.0, 0.0)

    def torch_unfused() -> torch.Tensor:  # relu in place; gelu has no in-place form
        return act(torch.addmm(bias, a, b.T, out=c))

    ours()
    check(c, expect, "fused")
    t_fused = timer(ours, inner=10)
    t_plain = timer(lambda: plain(a, b, c), inner=10)
    check(torch_unfused(), expect, "torch")
    t_torch = timer(torch_unfused, inner=10)
    flops = 2 * m * n * k / 1e9
    return (
        f"| {act_name} | {m}×{n}×{k} | {flops / t_fused:.0f} | {flops / t_plain:.0f} | "
        f"{flops / t_torch:.0f} | {t_fused / t_plain - 1:+.1%} | {t_torch / t_fused:.2f} |"
    )


def batched_row(kernel, shape: tuple[int, int, int, int], dtype, timer) -> str:  # noqa: ANN001
    l, m, n, k = shape
    a = torch.randn(l, m, k, device="cuda").to(dtype)
    b = torch.randn(l, n, k, device="cuda").to(dtype)
    c = torch.empty(l, m, n, device="cuda", dtype=dtype)
    kernel(a, b, c)
    check(c, a.float() @ b.float().transpose(1, 2), "batched")
    ours = timer(lambda: kernel(a, b, c), inner=10)
    theirs = timer(lambda: torch.bmm(a, b.transpose(1, 2), out=c), inner=10)
    flops = 2 * l * m * n * k / 1e9
    return f"| {l}×{m}×{n}×{k} | {flops / ours:.0f} | {flops / theirs:.0f} | {theirs / ours:.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plain", required=True, help="examples/gemm_sm90.tile's bundle")
    parser.add_argument("--fused", help="examples/gemm_sm90_bias_act.tile, built BETA=0")
    parser.add_argument("--act", default="relu", choices=sorted(ACTS))
    parser.add_argument("--batched", help="examples/gemm_sm90_batched.tile's bundle")
    parser.add_argument("--dtype", default="bf16", choices=("f16", "bf16"))
    parser.add_argument("--graph", action="store_true", help="time CUDA-graph replays")
    parser.add_argument(
        "--shape", action="append", type=parse_shape, help="MxNxK of the fused rows, repeatable"
    )
    parser.add_argument("--out")
    args = parser.parse_args()
    timer = time_graph_ms if args.graph else time_ms
    dtype = torch.float16 if args.dtype == "f16" else torch.bfloat16
    lines = [
        f"Measured {datetime.date.today().isoformat()} on {torch.cuda.get_device_name()}, "
        f"torch {torch.__version__}, {args.dtype}, randn inputs, "
        f"{'CUDA-graph replays' if args.graph else 'eager launches'}.",
        "",
    ]
    if args.fused:
        lines += [
            "| act | M×N×K | fused TFLOP/s | plain tilec | torch addmm + act | fusion cost | "
            "fused / torch |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
            *(
                fused_row(load(args.plain), load(args.fused), args.act, s, dtype, timer)
                for s in args.shape or FUSED_SHAPES
            ),
            "",
        ]
    if args.batched:
        lines += [
            "| L×M×N×K | tilec TFLOP/s | torch.bmm | tilec / torch |",
            "| --- | ---: | ---: | ---: |",
            *(batched_row(load(args.batched), s, dtype, timer) for s in BATCHED_SHAPES),
        ]
    emit(lines, args.out)


def emit(lines: list[str], out: str | None) -> None:
    """Print the table, and write it to `out` when given."""
    print("\n".join(lines))
    if out:
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

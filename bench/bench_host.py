"""Bench (GPU): the host cost of a planned `tilec.ops` call beside the matching torch op
(issue 45's bar: at most torch's + 2 µs).

    python bench/bench_host.py [--calls 10000] [--rounds 5] [--ops gemm,softmax,...] [--profile]

Each op runs a tiny problem (one block or a few: the GPU finishes each launch long before the
host issues the next), `--calls` back-to-back calls, then one synchronisation; the figure is
µs a call, the minimum over `--rounds` rounds, tilec and torch interleaved round by round (the
host's speed drifts between machine starts, so only the ratio of one run means much). The
first call of each (plan, compile-free family dispatch, tensor maps) is made before timing:
this is the planned path. Outputs are checked against torch once, before timing.
Families come from TILEC_FAMILIES or build/families, as for tilec.ops. `--profile` then splits
a planned gemm, softmax, layernorm and LayerNorm backward into their pieces (the key, the
outputs' allocation, the family call, the planned launch, the driver's context query and
launch, torch's stream getter), each timed alone the same way (µs a call, min of the rounds).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

import tilec.ops as ops


def per_call_us(fn: Callable[[], object], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def cases() -> dict[str, tuple[Callable[[], object], Callable[[], object]]]:
    """Each op's (tilec call, torch call) on fresh randn operands."""
    dev, dt = "cuda", torch.float16
    x = torch.randn(4, 1024, device=dev, dtype=dt)
    w, b = torch.randn(1024, device=dev, dtype=dt), torch.randn(1024, device=dev, dtype=dt)
    a, bb = torch.randn(128, 64, device=dev, dtype=dt), torch.randn(64, 128, device=dev, dtype=dt)
    ba = torch.randn(2, 128, 64, device=dev, dtype=dt)
    bbb = torch.randn(2, 64, 128, device=dev, dtype=dt)
    q, k, v = (torch.randn(1, 2, 128, 64, device=dev, dtype=dt) for _ in range(3))
    return {
        "softmax": (lambda: ops.softmax(x), lambda: torch.softmax(x, -1)),
        "layernorm": (
            lambda: ops.layernorm(x, w, b),
            lambda: F.layer_norm(x, (1024,), w, b),
        ),
        "rmsnorm": (lambda: ops.rmsnorm(x, w, 1e-6), lambda: F.rms_norm(x, (1024,), w, 1e-6)),
        "gemm": (lambda: ops.gemm(a, bb), lambda: torch.matmul(a, bb)),
        "bmm": (lambda: ops.bmm(ba, bbb), lambda: torch.bmm(ba, bbb)),
        "attention": (
            lambda: ops.attention(q, k, v),
            lambda: F.scaled_dot_product_attention(q, k, v),
        ),
    }


def pieces() -> dict[str, Callable[[], object]]:
    """The parts of a planned gemm (128 x 64 @ 64 x 128), softmax and layernorm (4 x 1024)
    call, and of a planned LayerNorm backward (its rows launch and colsum)."""
    import sys

    from tilec.ops import backward
    from tilec.runtime import driver

    dev, dt = "cuda", torch.float16
    a, b = torch.randn(128, 64, device=dev, dtype=dt), torch.randn(64, 128, device=dev, dtype=dt)
    x = torch.randn(4, 1024, device=dev, dtype=dt)
    w, dy = torch.randn(1024, device=dev, dtype=dt), torch.randn_like(x)
    c, y, bt = ops.gemm(a, b), ops.softmax(x), b.t()
    for _ in range(2):
        ops.gemm(a, b), ops.layernorm(x, w, w), backward.layernorm_backward(x, dy, w)
    gemm_table = sys.modules["tilec.ops.gemm"].PLANNED
    gemm_key = gemm_table._key("gemm", (a, b), ())[0]
    step = gemm_table._calls[gemm_key].steps[0]  # the planned launch of a @ b
    launch, args = step.launch, step.args
    ptrs = [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    launch(ptrs, args)
    plan = launch.plan
    ready = next(iter(plan.launches.values()))
    stream = plan.current_stream()
    gemm, softmax = ops.family("gemm"), ops.family("softmax")
    cu = driver.cu
    return {
        "tilec.ops.gemm": lambda: ops.gemm(a, b),
        "  its key (PlannedCalls._key)": lambda: gemm_table._key("gemm", (a, b), ()),
        "  gemm family call (a, b^T, c)": lambda: gemm(a, bt, c),
        "  planned launch (ptrs)": lambda: launch(ptrs, args),
        "  driver.launch (a ready launch)": lambda: driver.launch(
            ready[0], plan.grid, plan.block, plan.dynamic_smem, stream, ready[1]),
        "  driver.current_context()": driver.current_context,
        "  cu.cuCtxGetCurrent() alone": cu.cuCtxGetCurrent,
        "  the stream getter": plan.current_stream,
        "  a.new_empty((128, 128))": lambda: a.new_empty((128, 128)),
        "  b.t()": b.t,
        "tilec.ops.softmax": lambda: ops.softmax(x),
        "  softmax family call (x, y)": lambda: softmax(x, y),
        "  torch.empty_like(x)": lambda: torch.empty_like(x),
        "tilec.ops.layernorm (x, w, b)": lambda: ops.layernorm(x, w, w),
        "  its key (3 tensors, eps)": lambda: ops.PLANNED._key("layernorm", (x, w, w), (1e-5,)),
        "backward.layernorm_backward (2 launches)": lambda: backward.layernorm_backward(x, dy, w),
        "  its new tensors (dx, partials, dw/db)": lambda: backward.PLANNED._calls[
            backward.PLANNED._key("layernorm", (x, dy, w), (1e-5,))[0]].make((x, dy, w)),
        "torch.matmul": lambda: torch.matmul(a, b),
        "torch.softmax": lambda: torch.softmax(x, -1),
        "F.layer_norm": lambda: F.layer_norm(x, (1024,), w, w),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ops", default="softmax,layernorm,rmsnorm,gemm,bmm,attention")
    parser.add_argument("--profile", action="store_true", help="then the planned calls' parts")
    args = parser.parse_args()
    table = cases()
    print(f"# {torch.cuda.get_device_name()}, {args.calls} calls a round, min of {args.rounds}")
    print("| op | tilec µs | torch µs | tilec - torch |")
    print("| --- | ---: | ---: | ---: |")
    for name in args.ops.split(","):
        ours, theirs = table[name]
        got, want = ours(), theirs()
        torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2, msg=f"{name}: tilec != torch")
        best_ours = best_theirs = float("inf")
        for _ in range(args.rounds):
            best_ours = min(best_ours, per_call_us(ours, args.calls))
            best_theirs = min(best_theirs, per_call_us(theirs, args.calls))
        print(f"| {name} | {best_ours:.1f} | {best_theirs:.1f} | {best_ours - best_theirs:+.1f} |")
    if args.profile:
        print("\n| part of a planned call | µs |\n| --- | ---: |")
        for name, fn in pieces().items():
            us = min(per_call_us(fn, args.calls) for _ in range(args.rounds))
            print(f"| {name} | {us:.2f} |")


if __name__ == "__main__":
    main()

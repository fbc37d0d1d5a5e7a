"""Bench (CPU, no GPU): the host cost of tilec.nn's modules and of tilec.ops' calls, eager
(issue 45 and 46: at 16384 x 4096 the Python of a norm's forward + backward once outlasted the
GPU's ~180 us; bench_host.py's tiny softmax, gemm, bmm and attention beside the norms).

    python bench/bench_eager.py [--rows 4] [--cols 4096] [--calls 300] [--families]

CPU tensors stand in for CUDA ones and the kernels are not run: by default every family call
and every planned launch a family offers (tilec/ops/planned.py) is a no-op (the Python around
the launches: checks, allocations, views, autograd); with `--families` the norms' and
softmax's real families are used (their builds compiled through the cache: needs MLIR) with
bench_dispatch's stand-ins for the driver, so a launch's dispatch, signature and plan lookup
count too. Beside them, torch.nn's modules on the same CPU tensors, their CPU
compute included (torch's CUDA host cost is not measured here). Each figure is the minimum
over 9 rounds of `--calls` calls of the thread's CPU time (the wall clock of a shared machine
swings by 2x): µs a call, bf16.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

import tilec.nn as tnn
import tilec.ops as ops
import tilec.torch_eager as torch_eager
from tilec.ops import backward

DT = torch.bfloat16


def per_call_us(fns: dict[str, Callable[[], Any]], calls: int) -> dict[str, float]:
    best = {name: float("inf") for name in fns}
    for _ in range(9):
        for name, fn in fns.items():
            for _ in range(5):
                fn()
            start = time.thread_time()
            for _ in range(calls):
                fn()
            best[name] = min(best[name], (time.thread_time() - start) / calls * 1e6)
    return best


class NoOp:
    """A family stand-in that launches nothing, directly or through the planned launch it offers
    (`Family.launch`: tilec.ops' planned calls keep it)."""

    def __call__(self, *args: Any) -> None:
        return None

    def launch(self, *args: Any) -> Any:
        return lambda ptrs, args: None


def stand_in(families: bool) -> None:
    """CPU tensors taken as CUDA ones; family calls as no-ops or, with `families`, the real
    families over bench_dispatch's stand-in driver (tensors on "device 0")."""
    gemm, attention = sys.modules["tilec.ops.gemm"], sys.modules["tilec.ops.attention"]
    for module in (ops, backward, gemm):
        module._check = lambda op, x: torch  # type: ignore[attr-defined]
    attention._on_gpu = lambda op, q: None  # type: ignore[attr-defined]
    backward._num_sms = lambda device: 132  # type: ignore[attr-defined]
    gemm._arch = lambda device: "sm_90"  # type: ignore[attr-defined]
    torch_eager._on_device = lambda t: True  # type: ignore[attr-defined]
    if not families:
        noop = NoOp()
        for module in (ops, backward, gemm, attention):
            module.family = lambda name: noop  # type: ignore[attr-defined]
        return
    from bench_dispatch import stand_in_driver

    from tilec.runtime import kernel, tensors

    stand_in_driver()
    kernel.stream_reader = lambda framework, device: lambda: 0  # type: ignore[attr-defined]

    def on_device_0(t: Any, name: str) -> Any:
        dtype = tensors._TORCH[str(t.dtype).removeprefix("torch.")]
        shape, strides = tuple(t.shape), tuple(t.stride())
        return tensors.TensorView(t.data_ptr(), shape, strides, dtype, "torch", device=0)

    tensors._from_torch = on_device_0  # type: ignore[assignment]


def cases(rows: int, cols: int, families: bool) -> dict[str, Callable[[], Any]]:
    x = torch.randn(rows, cols, dtype=DT)
    w, dy = torch.randn(cols, dtype=DT), torch.randn(rows, cols, dtype=DT)
    fns: dict[str, Callable[[], Any]] = {
        "tilec.ops.layernorm": lambda: ops.layernorm(x, w, w),
        "tilec.ops.rmsnorm": lambda: ops.rmsnorm(x, w),
        "backward.layernorm_backward": lambda: backward.layernorm_backward(x, dy, w),
        "backward.rmsnorm_backward": lambda: backward.rmsnorm_backward(x, dy, w),
        "torch.ops.tilec.layernorm": lambda: torch.ops.tilec.layernorm(x, w, w, 1e-5),
    }
    fns["tilec.ops.softmax"] = lambda: ops.softmax(x)
    if not families:  # bench_host.py's tiny problems (the GEMM families' builds are many)
        a, b = torch.randn(128, 64, dtype=DT), torch.randn(64, 128, dtype=DT)
        ba, bb = torch.randn(2, 128, 64, dtype=DT), torch.randn(2, 64, 128, dtype=DT)
        fns["tilec.ops.gemm"] = lambda: ops.gemm(a, b)
        fns["tilec.ops.bmm"] = lambda: ops.bmm(ba, bb)
        q, k, v = (torch.randn(1, 2, 128, 64, dtype=DT) for _ in range(3))
        fns["tilec.ops.attention"] = lambda: ops.attention(q, k, v)
    modules = {
        "LayerNorm": (tnn.LayerNorm(cols), torch.nn.LayerNorm(cols), cols),
        "RMSNorm": (tnn.RMSNorm(cols), torch.nn.RMSNorm(cols), cols),
    }
    if not families:  # the GEMM families' builds are many: compiled on demand, minutes
        modules["Linear"] = (tnn.Linear(512, 512), torch.nn.Linear(512, 512), 512)
    for name, (ours, ref, n) in modules.items():
        xg = torch.randn(rows, n, dtype=DT, requires_grad=True)
        g = torch.randn(rows, n, dtype=DT)
        for who, m in (("tilec", ours.to(DT)), ("torch", ref.to(DT))):
            leaves = (xg, *m.parameters())
            fns[f"{who}.nn.{name} fwd"] = lambda m=m, xg=xg: m(xg)
            fns[f"{who}.nn.{name} fwd+bwd"] = lambda m=m, xg=xg, g=g, leaves=leaves: (
                torch.autograd.grad(m(xg), leaves, g)
            )
    return fns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--families", action="store_true", help="the norms' real families")
    args = ap.parse_args()
    torch.set_num_threads(1)  # torch's CPU modules: no thread pool's start-up in the figures
    stand_in(args.families)
    what = "real families, driver stood in" if args.families else "family calls as no-ops"
    print(f"host µs a call, {args.rows} x {args.cols} bf16 CPU tensors, {what}")
    for name, us in per_call_us(cases(args.rows, args.cols, args.families), args.calls).items():
        print(f"  {name:32s} {us:8.1f}")


if __name__ == "__main__":
    main()

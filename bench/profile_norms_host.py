"""Host time of tilec.nn's norms, forward + backward, on the GPU machine (issue 46), split up.

    python3 bench/profile_norms_host.py [--rows 4] [--cols 4096] [--calls 300]

At 4 x 4096 the GPU's work is nothing, so each figure is the host's: µs a call, the median of
7 rounds. Parts: (1) the pieces a call is made of (tilec.ops' calls, one family call, one
planned launch, the driver calls inside it, CUDA allocations); (2) a forward + backward split at
timestamps taken on the main thread and inside the autograd Function's backward, which runs on
the autograd engine's CUDA device thread: the forward, main -> backward entry (autograd.grad's
Python, the engine, the hand-over to the device thread, the PyNode), our backward's own work,
and backward exit -> autograd.grad's return (outputs checked, the hand-back); (3) the same
split for a Function that does nothing but allocate its outputs (the engine's floor), and
torch.nn's modules whole; (4) cProfile of the forward + backward loop (Python 3.12's cProfile
sees every thread's calls, the device thread's too).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import threading
import time

import torch

os.environ.setdefault("TILEC_FAMILIES", "build/families")
import tilec.nn as tnn  # noqa: E402
import tilec.ops as ops  # noqa: E402
import tilec.torch_eager as te  # noqa: E402
from tilec.ops import backward as bwd  # noqa: E402
from tilec.runtime import driver, streams  # noqa: E402

DT = torch.bfloat16


def per_call(fns: dict, calls: int) -> None:
    runs: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(7):
        for name, fn in fns.items():
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            runs[name].append((time.perf_counter() - start) / calls * 1e6)
            torch.cuda.synchronize()
    for name, r in runs.items():
        print(f"  {name:46s} {statistics.median(r):8.1f} µs")


STAMPS: dict[str, list[float]] = {}
THREADS: set[int] = set()


def stamp(name: str) -> None:
    STAMPS.setdefault(name, []).append(time.perf_counter())


def instrument() -> None:
    """Timestamps at the eager LayerNorm/RMSNorm backward's entry and exit, and around tilec.ops'
    backward call inside it."""
    for cls in (te._LayerNorm, te._RMSNorm):
        inner = cls.backward

        def backward(ctx, grad, inner=inner):
            stamp("enter")
            THREADS.add(threading.get_ident())
            out = inner(ctx, grad)
            stamp("exit")
            return out

        cls.backward = staticmethod(backward)
    for name in ("layernorm_backward", "rmsnorm_backward"):
        inner = getattr(te._Direct, name)

        def direct(*args, inner=inner):
            stamp("ops in")
            out = inner(*args)
            stamp("ops out")
            return out

        setattr(te._Direct, name, staticmethod(direct))


class Empty(torch.autograd.Function):
    """Nothing but the outputs' allocations: the engine's and the Function's floor."""

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save_for_backward(x, w)
        return torch.empty_like(x)

    @staticmethod
    def backward(ctx, grad):
        stamp("enter")
        x, w = ctx.saved_tensors
        out = torch.empty_like(x), torch.empty_like(w), torch.empty_like(w)
        stamp("ops in"), stamp("ops out"), stamp("exit")
        return out


def split(label: str, forward, leaves, dy, calls: int) -> None:
    for _ in range(20):
        torch.autograd.grad(forward(), leaves, dy)
    torch.cuda.synchronize()
    STAMPS.clear()
    parts: dict[str, list[float]] = {}
    for _ in range(calls):
        t0 = time.perf_counter()
        y = forward()
        t1 = time.perf_counter()
        torch.autograd.grad(y, leaves, dy)
        t2 = time.perf_counter()
        enter, i, o, out = (STAMPS[k][-1] for k in ("enter", "ops in", "ops out", "exit"))
        times = {
            "forward": t1 - t0,
            "grad() -> backward entry": enter - t1,
            "backward: before the ops call": i - enter,
            "backward: ops call": o - i,
            "backward: after it": out - o,
            "backward exit -> grad() returns": t2 - out,
            "total": t2 - t0,
        }
        for name, d in times.items():
            parts.setdefault(name, []).append(d * 1e6)
    torch.cuda.synchronize()
    print(f"{label}: medians of {calls} calls, µs")
    for name, d in parts.items():
        print(f"  {name:40s} {statistics.median(d):8.1f}")


def pieces(rows: int, cols: int, calls: int) -> None:
    x = torch.randn(rows, cols, device="cuda", dtype=DT)
    w, dy = torch.randn(cols, device="cuda", dtype=DT), torch.randn_like(x)
    p, o = torch.randn(2, 132, cols, device="cuda"), torch.empty(2, cols, device="cuda", dtype=DT)
    fam = ops.family("colsum")
    fam(p, o)
    key, ptrs, _ = fam._sign((p, o))
    k = fam._plans[key][0]
    plan = k._plans[key]
    ready = next(iter(plan.launches.values()))
    handle = streams.current_stream("torch", 0)
    grid, block, smem = plan.grid, plan.block, plan.dynamic_smem
    print(f"pieces ({rows} x {cols} bf16), µs a call:")
    fns = {
        "tilec.ops.layernorm": lambda: ops.layernorm(x, w, w),
        "backward.layernorm_backward (2 launches)": lambda: bwd.layernorm_backward(x, dy, w),
        "backward.layernorm_backward(apart) (3)": (
            lambda: bwd.layernorm_backward(x, dy, w, apart=True)
        ),
        "backward.rmsnorm_backward (2)": lambda: bwd.rmsnorm_backward(x, dy, w),
        "colsum family call (planned)": lambda: fam(p, o),
        "Kernel.call_signed (planned)": lambda: k.call_signed(key, ptrs, (p, o), None),
        "driver.launch (a ready launch)": (
            lambda: driver.launch(ready[0], grid, block, smem, handle, ready[1])
        ),
        "driver.current_context()": driver.current_context,
        "streams.current_stream (torch)": lambda: streams.current_stream("torch", 0),
        "fam._sign (2 tensors)": lambda: fam._sign((p, o)),
        "torch.empty_like (CUDA)": lambda: torch.empty_like(x),
        "x.new_empty((2, 132, N), f32) (CUDA)": (
            lambda: x.new_empty((2, 132, cols), dtype=torch.float32)
        ),
        "w.expand(R, N)": lambda: w.expand(rows, cols),
        "torch F.layer_norm": lambda: torch.nn.functional.layer_norm(x, (cols,), w, w),
    }
    per_call(fns, calls)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    r, n = args.rows, args.cols
    pieces(r, n, args.calls)
    instrument()
    x = torch.randn(r, n, device="cuda", dtype=DT, requires_grad=True)
    dy = torch.randn_like(x)
    pairs = {
        "LayerNorm": (tnn.LayerNorm(n), torch.nn.LayerNorm(n)),
        "RMSNorm": (tnn.RMSNorm(n), torch.nn.RMSNorm(n)),
    }
    for name, (ours, theirs) in pairs.items():
        m, t = ours.cuda().to(DT), theirs.cuda().to(DT)
        lm, lt = (x, *m.parameters()), (x, *t.parameters())
        split(f"tilec.nn.{name} fwd+bwd", lambda m=m: m(x), lm, dy, args.calls)
        print(f"  whole: tilec vs torch.nn.{name} fwd+bwd, µs a call")
        whole = {
            f"tilec.nn.{name}": lambda m=m, lm=lm: torch.autograd.grad(m(x), lm, dy),
            f"torch.nn.{name}": lambda t=t, lt=lt: torch.autograd.grad(t(x), lt, dy),
        }
        per_call(whole, args.calls)
    ln = tnn.LayerNorm(n).cuda().to(DT)
    w, b = ln.weight, ln.bias
    split("Empty Function fwd+bwd (floor)", lambda: Empty.apply(x, w, b), (x, w, b), dy, args.calls)
    print(f"backward ran on threads {sorted(THREADS)}; main is {threading.get_ident()}")
    before = bwd.layernorm_backward
    te.grads.layernorm_backward = lambda *a, **k: before(*a, apart=True, **k)
    step = lambda: torch.autograd.grad(ln(x), (x, w, b), dy)  # noqa: E731
    per_call({"tilec.nn.LayerNorm fwd+bwd, 3 launches (before)": step}, args.calls)
    te.grads.layernorm_backward = before
    per_call({"tilec.nn.LayerNorm fwd+bwd, 2 launches": step}, args.calls)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(200):
        torch.autograd.grad(ln(x), (x, w, b), dy)
    torch.cuda.synchronize()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()

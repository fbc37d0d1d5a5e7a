"""Bench: tilec.nn's modules beside torch.nn's, forward and forward + backward, bf16 (issue 46's
bars: Linear at 8192x4096 -> 4096 >= 0.97x torch, LayerNorm and RMSNorm at 16384x4096 >= 1.2x).

    python bench/bench_torch.py [--rounds 5] [--cases linear,layernorm,rmsnorm] [--json out.json]

Each case builds torch's module and tilec.nn's from the same state_dict (bf16 parameters),
checks that their outputs and gradients agree on randn inputs, then times, for each, the
forward alone and the forward + backward (`torch.autograd.grad` of the output against a fixed
randn dy, with respect to the input and the parameters, as a training step's backward computes
them). "graph" figures replay the call captured in a CUDA graph (`time_graph_ms`: the GPU's
time alone); "eager" figures are back-to-back calls (`time_ms`: the host's dispatch counts
where it outlasts the kernels). Every round times tilec and torch in turn; each figure is the
median over the rounds; the ratio is torch's time over tilec's (> 1: tilec is faster). Linear
is skipped where tilec.ops has no gemm (issue 45). Families: $TILEC_FAMILIES or
build/families (test/gpu/test_torch_ops.py lists them).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("TILEC_FAMILIES", str(ROOT / "build" / "families"))

import tilec.nn as tnn  # noqa: E402  (after TILEC_FAMILIES)
import tilec.ops as ops  # noqa: E402
from tilec.runtime.measure import time_graph_ms, time_ms  # noqa: E402

Fn = Callable[[], object]
DT = torch.bfloat16
CASES = {  # name: (rows, in features, out features)
    "linear": (8192, 4096, 4096),
    "layernorm": (16384, 4096, 4096),
    "rmsnorm": (16384, 4096, 4096),
}


def modules(name: str, d_in: int, d_out: int) -> tuple[torch.nn.Module, torch.nn.Module]:
    """(torch's module, tilec.nn's), the same bf16 parameters on the GPU."""
    torch.manual_seed(0)
    pair = {
        "linear": (torch.nn.Linear, tnn.Linear),
        "layernorm": (torch.nn.LayerNorm, tnn.LayerNorm),
        "rmsnorm": (torch.nn.RMSNorm, tnn.RMSNorm),
    }[name]
    args = (d_in, d_out) if name == "linear" else (d_in,)
    theirs = pair[0](*args).cuda().to(DT)
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = pair[1](*args).cuda().to(DT)
    ours.load_state_dict(theirs.state_dict())
    return theirs, ours


def calls(m: torch.nn.Module, x: torch.Tensor, dy: torch.Tensor) -> dict[str, Fn]:
    xg = x.detach().requires_grad_()
    leaves = (xg, *m.parameters())
    return {
        "fwd": lambda: m(x),
        "fwd+bwd": lambda: torch.autograd.grad(m(xg), leaves, dy),
    }


def check(name: str, theirs: torch.nn.Module, ours: torch.nn.Module, x: torch.Tensor,
          dy: torch.Tensor) -> None:  # fmt: skip
    """Outputs and gradients agree (relative error in norm < 2e-2, bf16) before any timing."""
    got, ref = calls(ours, x, dy)["fwd+bwd"](), calls(theirs, x, dy)["fwd+bwd"]()
    for a, b in zip([ours(x), *got], [theirs(x), *ref], strict=True):
        err = ((a.double() - b.double()).norm() / b.double().norm()).item()
        if not err < 2e-2:
            raise SystemExit(f"{name}: tilec and torch disagree (relative error {err:.2e})")


def bench_case(name: str, rounds: int) -> list[dict[str, object]]:
    r, d_in, d_out = CASES[name]
    theirs, ours = modules(name, d_in, d_out)
    x = torch.randn(r, d_in, device="cuda", dtype=DT)
    dy = torch.randn(r, d_out, device="cuda", dtype=DT)
    check(name, theirs, ours, x, dy)
    fns = {impl: calls(m, x, dy) for impl, m in (("tilec", ours), ("torch", theirs))}
    rows = []
    for what in ("fwd", "fwd+bwd"):
        for timer_name, timer in (("graph", time_graph_ms), ("eager", time_ms)):
            samples: dict[str, list[float]] = {"tilec": [], "torch": []}
            for _ in range(rounds):
                for impl in samples:
                    samples[impl].append(timer(fns[impl][what]))
            ms = {impl: statistics.median(s) for impl, s in samples.items()}
            rows.append({"case": name, "shape": f"{r}x{d_in}->{d_out}", "what": what,
                         "timer": timer_name, "tilec_ms": ms["tilec"], "torch_ms": ms["torch"],
                         "ratio": ms["torch"] / ms["tilec"]})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", help="write the rows here too")
    args = parser.parse_args()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, bf16, median of "
          f"{args.rounds} interleaved rounds; ratio = torch ms / tilec ms")  # fmt: skip
    print(f"{'case':<10} {'shape':<18} {'what':<8} {'timer':<6} {'tilec ms':>9} "
          f"{'torch ms':>9} {'ratio':>6}")  # fmt: skip
    rows: list[dict[str, object]] = []
    for name in args.cases.split(","):
        if name == "linear" and not hasattr(ops, "gemm"):
            print(f"{name:<10} skipped: tilec.ops has no gemm (issue 45)")
            continue
        for row in bench_case(name, args.rounds):
            rows.append(row)
            print(f"{row['case']:<10} {row['shape']:<18} {row['what']:<8} {row['timer']:<6} "
                  f"{row['tilec_ms']:>9.3f} {row['torch_ms']:>9.3f} "
                  f"{row['ratio']:>6.2f}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

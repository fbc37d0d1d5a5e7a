"""Bench: tilec.ops.softmax, layernorm and rmsnorm beside torch, Triton's tutorial-form kernels and
the copy ceiling, interleaved in one run, over row lengths N = 256 .. 131072, even and odd, f16
and bf16, R = ceil(2^26 / N) rows (R·N >= 2^26).

    python bench/bench_ops.py [--ops softmax,rmsnorm] [--dtypes f16] [--ns 1000,1001] [--graph]
                              [--out table.md] [--json rows.json]

tilec is the op as a user calls it (`tilec.ops.softmax(x)`: the family's dispatch, the output's
allocation and the launch); torch is `torch.softmax(x, -1)`, `F.layer_norm(x, (N,), w, b)`,
`F.rms_norm(x, (N,), w)`; Triton is the tutorials' one-program-a-row form (02-fused-softmax,
05-layer-norm, and RMSNorm written the same way here), BLOCK_SIZE = next_power_of_2(N), the
tutorial's num_warps and 16 and 32 past 16384 columns, the fastest reported. Bandwidth counts
x read and y written (and w, b once); the ceiling is a 1 GiB f32 device copy measured once
(bench_memory.copy_case). Outputs are checked against float64 torch before anything is timed;
each figure is the median of REPEATS rounds, every round timing each function once in turn
(`tilec.runtime.measure.time_ms`, or `time_graph_ms` with --graph). The build each shape ran
is named in the table (`Family.select`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

import tilec.ops as ops
from tilec.runtime.measure import time_graph_ms, time_ms

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import gbs  # noqa: E402
from bench_rows import (  # noqa: E402
    _layer_norm_row,
    _softmax_row,
    ceiling_gbs,
    check,
    free,
    interleaved,
    triton_variants,
)

EPS = 1e-5
EVEN = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
ODD = (1001, 4095, 8191, 16383, 32767, 131071)
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
Fn = Callable[[], object]


# RMSNorm in the tutorials' form: one program a row, the whole row in registers.
@triton.jit
def _rms_norm_row(X, Y, W, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < N
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    tl.store(Y + row * stride + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)


def case(op: str, x: torch.Tensor) -> tuple[Fn, Fn, torch.Tensor, Callable[[int], Fn], tuple]:
    """(tilec, torch, float64 reference, a Triton launch by num_warps, the family's args)."""
    r, n = x.shape
    w = (1 + 0.1 * torch.randn(n, device="cuda")).to(x.dtype)
    b = (0.1 * torch.randn(n, device="cuda")).to(x.dtype)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n)
    stride = x.stride(0)

    def tri(warps: int) -> Fn:
        if op == "softmax":
            return lambda: _softmax_row[(r,)](x, y, stride, n, BLOCK_SIZE=block, num_warps=warps)
        if op == "layernorm":
            return lambda: _layer_norm_row[(r,)](
                x, y, w, b, stride, n, EPS, BLOCK_SIZE=block, num_warps=warps
            )
        return lambda: _rms_norm_row[(r,)](
            x, y, w, stride, n, EPS, BLOCK_SIZE=block, num_warps=warps
        )

    if op == "softmax":
        ref = torch.softmax(x.double(), -1)
        return lambda: ops.softmax(x), lambda: torch.softmax(x, -1), ref, tri, (x, y)
    if op == "layernorm":
        ref = F.layer_norm(x.double(), (n,), w.double(), b.double(), EPS)
        args = (x, w.expand(r, n), b.expand(r, n), y, EPS)
        ours = lambda: ops.layernorm(x, w, b, EPS)  # noqa: E731
        return ours, lambda: F.layer_norm(x, (n,), w, b, EPS), ref, tri, args
    ref = F.rms_norm(x.double(), (n,), w.double(), EPS)
    args = (x, w.expand(r, n), y, EPS)
    return lambda: ops.rmsnorm(x, w, EPS), lambda: F.rms_norm(x, (n,), w, EPS), ref, tri, args


def measure(op: str, dtype: str, n: int, timer: Callable[[Fn], float], ceiling: float) -> dict:
    r = -(-(1 << 26) // n)
    x = torch.randn(r, n, device="cuda", dtype=DTYPES[dtype])
    ours, theirs, ref, tri, args = case(op, x)
    what = f"{op} {dtype} {r}x{n}"
    build = ops.family(op).select(*args)
    check(f"tilec {what}", ours(), ref)
    check(f"torch {what}", theirs(), ref)
    y_tri = args[-2] if op != "softmax" else args[-1]
    variants = triton_variants(what, y_tri, ref, triton.next_power_of_2(n), tri)
    del ref
    torch.cuda.empty_cache()
    ms = interleaved({"tilec": ours, "torch": theirs, **variants}, timer)
    vectors = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}[op]  # w and b, read once
    nbytes = (2 * r + vectors) * n * x.element_size()
    row = {"op": op, "dtype": dtype, "R": r, "N": n, "build": build}
    row["tilec"] = gbs(nbytes, ms.pop("tilec")) / ceiling
    row["torch"] = gbs(nbytes, ms.pop("torch")) / ceiling
    best = min(ms, key=ms.get) if ms else None
    row["triton"] = gbs(nbytes, ms[best]) / ceiling if best else None
    row["triton_config"] = best or "none compiled"
    return row


def line(row: dict) -> str:
    tri = "n/a" if row["triton"] is None else f"{row['triton']:.2f}"
    ratio = "n/a" if row["triton"] is None else f"{row['tilec'] / row['triton']:.2f}"
    return (
        f"| {row['op']} | {row['dtype']} | {row['R']}x{row['N']} | {row['build']} | "
        f"{row['tilec']:.2f} | {row['torch']:.2f} | {tri} | {ratio} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--ops", default="softmax,layernorm,rmsnorm")
    parser.add_argument("--dtypes", default="f16,bf16")
    parser.add_argument("--ns", help="row lengths (default: the even and odd sets)")
    parser.add_argument("--graph", action="store_true", help="time with time_graph_ms")
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument("--json", help="also write the rows as JSON here")
    args = parser.parse_args()
    timer = time_graph_ms if args.graph else time_ms
    ns = [int(v) for v in args.ns.split(",")] if args.ns else sorted(EVEN + ODD)
    torch.manual_seed(0)
    ceiling = ceiling_gbs()
    head = [
        f"Measured {datetime.date.today().isoformat()} on {torch.cuda.get_device_name()}, torch "
        f"{torch.__version__}, triton {triton.__version__}, "
        f"{'time_graph_ms' if args.graph else 'time_ms'}; "
        f"fractions of the copy ceiling, {ceiling:.0f} GB/s.",
        "",
        "| op | dtype | shape | build | tilec | torch | Triton | tilec/Triton |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    print("\n".join(head), flush=True)
    rows, failed = [], []
    for op in args.ops.split(","):
        for dtype in args.dtypes.split(","):
            for n in ns:
                try:
                    row = measure(op, dtype, n, timer, ceiling)
                except Exception as exc:  # noqa: BLE001 - one failing shape must not hide the others
                    failed.append(f"{op} {dtype} N={n}: {type(exc).__name__}: {exc}")
                    print(f"FAILED: {failed[-1]}", flush=True)
                    continue
                finally:
                    free()
                rows.append(row)
                print(line(row), flush=True)
    table = "\n".join([*head, *map(line, rows), *[f"FAILED: {f}" for f in failed]])
    if args.out:
        Path(args.out).write_text(table + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps({"ceiling_gbs": ceiling, "rows": rows}, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

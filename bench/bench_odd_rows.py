"""Bench: odd-length rows (2-byte aligned starts: the skewed accesses of lowering/tile_skew.py)
of softmax, layernorm and rmsnorm, two sets of bundles side by side (the current builds and a
candidate's), beside Triton's tutorial-form kernel and the copy ceiling, interleaved in one run.

    python bench/bench_odd_rows.py [--bundles build/oddrows] [--sets cur,new]
                                   [--ns 1001,4095,8191,1024,4096,8192] [--out table.md]

BUNDLES/SET holds `{op}_c{COLS}_{dtype}` (bench/build_odd_rows.sh): a row of N runs the bundle of
the narrowest COLS >= N of 1024, 4096, 8192, as tilec.ops does (its specialised PTX: one tile a
row, read once). R = ceil(2^26 / N) rows of randn; W = 1 + 0.1 randn and B = 0.1 randn over the
rows (expanded, as tilec.ops passes them). Every output is NaN-poisoned and checked against
float64 torch (bench_rows.check) before anything is timed, each set's and Triton's. Bandwidth
counts x read and y written (w and b once); each figure is a fraction of the copy ceiling (a
1 GiB f32 device copy, bench_rows.ceiling_gbs), the median of bench_rows.REPEATS rounds that
time every function once in turn (`tilec.runtime.measure.time_ms`). Triton is the tutorial's
one-program-a-row form (bench_rows, bench_ops), its num_warps as the tutorial picks it.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
import triton

from tilec.runtime import load
from tilec.runtime.measure import time_ms

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_memory import gbs  # noqa: E402
from bench_ops import _rms_norm_row  # noqa: E402
from bench_rows import (  # noqa: E402
    EPS,
    _layer_norm_row,
    _softmax_row,
    ceiling_gbs,
    check,
    free,
    interleaved,
    triton_variants,
)

COLS = (1024, 4096, 8192)
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
Fn = Callable[[], object]


def inputs(op: str, r: int, n: int, dtype: torch.dtype) -> tuple[list, torch.Tensor, list]:
    """(the bundles' arguments with y last but eps, the float64 reference, Triton's)."""
    x = torch.randn(r, n, device="cuda", dtype=dtype)
    w = (1 + 0.1 * torch.randn(n, device="cuda")).to(dtype)
    b = (0.1 * torch.randn(n, device="cuda")).to(dtype)
    if op == "softmax":
        return [x], torch.softmax(x.double(), -1), [x]
    if op == "layernorm":
        ref = F.layer_norm(x.double(), (n,), w.double(), b.double(), EPS)
        return [x, w.expand(r, n), b.expand(r, n)], ref, [x, w, b]
    return [x, w.expand(r, n)], F.rms_norm(x.double(), (n,), w.double(), EPS), [x, w]


def triton_launch(op: str, args: list, y: torch.Tensor, n: int) -> Callable[[int], Fn]:
    kernel = {"softmax": _softmax_row, "layernorm": _layer_norm_row, "rmsnorm": _rms_norm_row}[op]
    x, r, block = args[0], y.shape[0], triton.next_power_of_2(n)
    rest = () if op == "softmax" else (EPS,)

    def launch(warps: int) -> Fn:
        if op == "rmsnorm":  # (X, Y, W, stride, N, eps)
            call = (x, y, args[1], x.stride(0), n, *rest)
        else:  # (X, Y, [W, B,] stride, N[, eps])
            call = (x, y, *args[1:], x.stride(0), n, *rest)
        return lambda: kernel[(r,)](*call, BLOCK_SIZE=block, num_warps=warps)

    return launch


def shape_row(root: Path, sets: list[str], op: str, dtype: str, n: int) -> dict:
    r = -(-(1 << 26) // n)
    cols = next(c for c in COLS if c >= n)
    args, ref, tri_args = inputs(op, r, n, DTYPES[dtype])
    what = f"{op} {dtype} {r}x{n}"
    fns: dict[str, Fn] = {}
    for name in sets:
        kernel = load(root / name / f"{op}_c{cols}_{dtype}")
        y = torch.full_like(args[0], float("nan"))
        call = (*args, y) if op == "softmax" else (*args, y, EPS)
        kernel(*call)
        check(f"{name} {what}", y, ref)
        fns[name] = lambda kernel=kernel, call=call: kernel(*call)
    y_tri = torch.full_like(args[0], float("nan"))
    launch = triton_launch(op, tri_args, y_tri, n)
    variants = triton_variants(what, y_tri, ref, triton.next_power_of_2(n), launch)
    del ref
    torch.cuda.empty_cache()
    ms = interleaved({**fns, **variants}, time_ms)
    vectors = {"softmax": 0, "layernorm": 2, "rmsnorm": 1}[op]
    nbytes = (2 * r + vectors) * n * args[0].element_size()
    row = {"op": op, "dtype": dtype, "shape": f"{r}x{n}", "cols": cols}
    row.update({name: gbs(nbytes, ms.pop(name)) for name in sets})
    row["triton"] = gbs(nbytes, min(ms.values())) if ms else None
    return row


def line(row: dict, sets: list[str], ceiling: float) -> str:
    frac = [f"{row[s] / ceiling:.3f}" for s in sets]
    tri = "n/a" if row["triton"] is None else f"{row['triton'] / ceiling:.3f}"
    vs_first = [f"{row[s] / row[sets[0]]:.2f}" for s in sets[1:]]
    vs_tri = ["n/a" if row["triton"] is None else f"{row[s] / row['triton']:.2f}" for s in sets]
    cells = [row["op"], row["dtype"], row["shape"], f"c{row['cols']}", *frac, tri]
    return "| " + " | ".join([*cells, *vs_first, *vs_tri]) + " |"


def header(sets: list[str]) -> list[str]:
    cols = ["op", "dtype", "R x N", "build", *[f"{s}/ceiling" for s in sets], "Triton/ceiling"]
    cols += [f"{s}/{sets[0]}" for s in sets[1:]] + [f"{s}/Triton" for s in sets]
    return ["| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bundles", default="build/oddrows")
    parser.add_argument("--sets", default="cur,new", help="bundle sets, the first the baseline")
    parser.add_argument("--ops", default="softmax,layernorm,rmsnorm")
    parser.add_argument("--dtypes", default="f16,bf16")
    parser.add_argument("--ns", default="1001,4095,8191,1024,4096,8192")
    parser.add_argument("--out", help="also write the markdown table here")
    args = parser.parse_args()
    sets = [s for s in args.sets.split(",") if s]
    torch.manual_seed(0)
    ceiling = ceiling_gbs()
    lines = header(sets)
    print(f"copy ceiling {ceiling:.0f} GB/s", flush=True)
    failed = []
    for op in args.ops.split(","):
        for dtype in args.dtypes.split(","):
            for n in (int(v) for v in args.ns.split(",")):
                try:
                    lines.append(
                        line(shape_row(Path(args.bundles), sets, op, dtype, n), sets, ceiling)
                    )
                    print(lines[-1], flush=True)
                except Exception as exc:  # noqa: BLE001 - one failing shape must not hide the rest
                    failed.append(f"FAILED {op} {dtype} N={n}: {type(exc).__name__}: {exc}")
                    print(failed[-1], flush=True)
                free()
    today = datetime.date.today().isoformat()
    title = f"{today}, {torch.cuda.get_device_name()}, copy ceiling {ceiling:.0f} GB/s, time_ms"
    table = "\n".join([title, "", *lines, *([""] + failed if failed else [])])
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

"""Bench: tilec.ops.gemm beside torch.matmul (cuBLAS), interleaved in one run, over issue 45's
mix: squares 1024^3 .. 8192^3, LLM projections, few rows (M = 1 .. 256) and K not a multiple of
8, f16 and bf16; the ratio tilec / cuBLAS per shape and their geometric mean.

    python bench/bench_gemm_ops.py [--sets squares,llm,few,odd_k] [--dtypes bf16]
                                   [--shapes 4096x4096x4096,1x4096x11008] [--graph]
                                   [--out table.md] [--json rows.json] [--list]

A shape is M x N x K: C (M x N) = A (M x K) @ B (K x N). B is an nn.Linear weight's transpose
(W.t(), W of N x K: K-major for the kernels, as torch.nn.Linear holds it) unless --b-row-major.
tilec is the call as a user makes it (`tilec.ops.gemm(a, b)`: the plan, any copy it makes, the
family's dispatch, the output's allocation, the launch); torch is `a @ b`. Outputs are checked
against float64 first; each figure is the median of rounds that time each function once in turn
(`time_ms`, or `time_graph_ms` with --graph, CUDA graphs: the GPU's time alone). The table names
the build the family chose and the plan (copies, padding). --list prints the shapes and exits
(no GPU, no torch).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import sys
from pathlib import Path
from typing import Any

SETS = {
    "squares": [(s, s, s) for s in (1024, 2048, 3072, 4096, 6144, 8192)],
    # (tokens, out, in) of Llama-style projections: qkv, o, gate/up, down
    "llm": [(m, n, k) for m in (2048, 8192)
            for n, k in ((6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336))],
    "few": [(m, n, k) for m in (1, 8, 16, 32, 64, 128, 192, 256)
            for n, k in ((4096, 4096), (11008, 4096))],
    # K % 8 != 0, and decode against a Linear weight of odd K (the few-row kernels, B read where
    # it lies, up to 32 rows; copied past that)
    "odd_k": [(4096, 4096, 4001), (2048, 2048, 2002), (8192, 4096, 1001), (64, 4096, 1001),
              (1, 4096, 4097), (4, 4096, 4097), (8, 4096, 4097), (16, 4096, 4097),
              (24, 4096, 4097), (32, 4096, 4097), (48, 4096, 4097), (64, 4096, 4097),
              (8, 11008, 4097), (16, 11008, 4097), (32, 11008, 4097)],
}  # fmt: skip
DTYPES = ("f16", "bf16")


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--sets", default=",".join(SETS), help=f"of {', '.join(SETS)}")
    p.add_argument("--shapes", help="MxNxK,... instead of the sets")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--b-row-major", action="store_true", help="B row-major K x N (MN-major)")
    p.add_argument("--graph", action="store_true", help="time with time_graph_ms")
    p.add_argument("--out", help="also write the markdown table here")
    p.add_argument("--json", help="also write the rows as JSON here")
    p.add_argument("--list", action="store_true", help="print the shapes and exit")
    args = p.parse_args(argv)
    unknown = set(args.sets.split(",")) - set(SETS)
    if unknown:
        p.error(f"--sets: unknown {sorted(unknown)} (of {', '.join(SETS)})")
    if set(args.dtypes.split(",")) - set(DTYPES):
        p.error(f"--dtypes: of {', '.join(DTYPES)}")
    try:
        args.shape_list = shapes_of(args)
    except ValueError as err:
        p.error(str(err))
    return args


def shapes_of(args: argparse.Namespace) -> list[tuple[str, tuple[int, int, int]]]:
    if args.shapes:
        out = []
        for text in args.shapes.split(","):
            dims = text.lower().split("x")
            if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
                raise ValueError(f"--shapes: {text!r} is not MxNxK")
            out.append(("shapes", (int(dims[0]), int(dims[1]), int(dims[2]))))
        return out
    return [(s, shape) for s in args.sets.split(",") for shape in SETS[s]]


def measure(torch: Any, shape: tuple[int, int, int], dtype: str, args: argparse.Namespace,
            timer: Any) -> dict[str, Any]:  # fmt: skip
    import tilec.ops as ops
    from tilec.ops.gemm import _operand
    from tilec.ops.gemm_plan import plan, row_plan

    m, n, k = shape
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = torch.randn(m, k, device="cuda", dtype=dt)
    w = torch.randn(n, k, device="cuda", dtype=dt) / k**0.5
    b = w.t().contiguous() if args.b_row_major else w.t()
    ref = a.double() @ b.double()
    for name, y in (("tilec", ops.gemm(a, b)), ("torch", a @ b)):
        err = ((y.double() - ref).norm() / ref.norm()).item()
        if not err < 2e-2:
            raise AssertionError(f"{name} {dtype} {shape}: relative error {err:.2e}")
    del ref
    # the row kernel's plan where it takes the product, else the SM90 plan (a leading dimension)
    p = row_plan(_operand(a), _operand(b.t())) or plan(_operand(a), _operand(b.t()))
    fns = {"tilec": lambda: ops.gemm(a, b), "torch": lambda: a @ b}
    samples: dict[str, list[float]] = {key: [] for key in fns}
    for _ in range(5):  # interleaved rounds
        for key, fn in fns.items():
            samples[key].append(timer(fn))
    ms = {key: sorted(v)[len(v) // 2] for key, v in samples.items()}
    tflops = {key: 2 * m * n * k / (t * 1e-3) / 1e12 for key, t in ms.items()}
    return {"M": m, "N": n, "K": k, "dtype": dtype, "plan": f"A {p.a}, B {p.b}, K {p.k}",
            "build": _build(ops, a, b, p), "tilec_ms": ms["tilec"], "torch_ms": ms["torch"],
            "tilec_tflops": tflops["tilec"], "torch_tflops": tflops["torch"],
            "ratio": ms["torch"] / ms["tilec"]}  # fmt: skip


def _build(ops: Any, a: Any, b: Any, p: Any) -> str:
    """The family's build for the laid-out operands (its name; its variant is internal): the
    few-row kernels' as gemv/NAME, gemm_skinny/NAME."""
    from tilec.ops.gemm import laid_out

    la, lb = laid_out(a, p.a, p.k, p.layout[0]), laid_out(b.t(), p.b, p.k, p.layout[1])
    shape = (la.shape[0], lb.shape[0])  # gemm_skinny writes S x M x N f32 partial sums
    c = la.new_empty(shape) if p.kernel != "gemm_skinny" else la.new_empty((1, *shape)).float()
    build = ops.family(p.kernel).select(la, lb, c)
    return build if p.kernel == "gemm" else f"{p.kernel}/{build}"


def line(set_name: str, r: dict[str, Any]) -> str:
    return (f"| {set_name} | {r['dtype']} | {r['M']}x{r['N']}x{r['K']} | {r['build']} | "
            f"{r['plan']} | {r['tilec_tflops']:.0f} | {r['torch_tflops']:.0f} | "
            f"{r['ratio']:.2f} |")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.list:
        for set_name, (m, n, k) in args.shape_list:
            print(f"{set_name}: {m}x{n}x{k}")
        return 0
    import torch

    from tilec.runtime.measure import time_graph_ms, time_ms

    timer = time_graph_ms if args.graph else time_ms
    torch.manual_seed(0)
    head = [f"Measured {datetime.date.today().isoformat()} on {torch.cuda.get_device_name()}, "
            f"torch {torch.__version__}, {'time_graph_ms' if args.graph else 'time_ms'}; B "
            f"{'row-major' if args.b_row_major else 'W.t()'}; ratio = cuBLAS time / tilec's.",
            "", "| set | dtype | MxNxK | build | plan | tilec TFLOP/s | cuBLAS TFLOP/s | ratio |",
            "| --- | --- | --- | --- | --- | ---: | ---: | ---: |"]  # fmt: skip
    print("\n".join(head), flush=True)
    rows, lines, failed = [], [], []
    for dtype in args.dtypes.split(","):
        for set_name, shape in args.shape_list:
            try:
                row = measure(torch, shape, dtype, args, timer)
            except Exception as exc:  # noqa: BLE001 - one failing shape must not hide the others
                failed.append(f"{dtype} {shape}: {type(exc).__name__}: {exc}")
                print(f"FAILED: {failed[-1]}", flush=True)
                continue
            finally:
                torch.cuda.empty_cache()
            rows.append({"set": set_name, **row})
            lines.append(line(set_name, row))
            print(lines[-1], flush=True)
    ratios = [r["ratio"] for r in rows]
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        lines.append(f"\ngeometric mean ratio {geo:.3f}, lowest {min(ratios):.3f}")
        print(lines[-1])
    if args.out:
        Path(args.out).write_text("\n".join([*head, *lines, *[f"FAILED: {f}" for f in failed]]))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

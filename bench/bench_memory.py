"""Bench: the memory-bound examples beside torch and the device-copy ceiling, in one run.

    python bench/bench_memory.py [--bundles build/examples] [--arch sm90a] [--out table.md]

Bandwidth counts each tensor once (read or written): the least traffic the operation needs.
Each figure is the median over repeats of 20 back-to-back launches timed with CUDA events
(launch gaps amortised), after warm-up; inputs are randn, never zeros.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

import torch

from tilec.runtime import load
from tilec.runtime.measure import time_ms


def gbs(nbytes: int, ms: float) -> float:
    return nbytes / ms / 1e6


Row = tuple[str, str, float, float, str]


def bench_copy() -> float:
    n = 1 << 28  # 1 GiB of f32
    src, dst = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    return gbs(2 * n * 4, time_ms(lambda: dst.copy_(src)))


def bench_vadd(root: Path, arch: str) -> Row:
    n = 1 << 28
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    vadd = load(root / f"vadd_{arch}")
    vadd(x, y, out)
    assert torch.equal(out, x + y)
    ours = gbs(3 * n * 4, time_ms(lambda: vadd(x, y, out)))
    ref = gbs(3 * n * 4, time_ms(lambda: torch.add(x, y, out=out)))
    return ("vadd", "N=2^28 f32", ours, ref, "torch.add")


def bench_transpose(root: Path, arch: str) -> Row:
    m = n = 16384
    a = torch.randn(m, n, device="cuda")
    b = torch.full((n, m), float("nan"), device="cuda")
    transpose = load(root / f"transpose_{arch}")
    transpose(a, b)
    assert torch.equal(b, a.t())
    ours = gbs(2 * m * n * 4, time_ms(lambda: transpose(a, b)))
    ref = gbs(2 * m * n * 4, time_ms(lambda: b.copy_(a.t())))
    return ("transpose", f"{m}x{n} f32", ours, ref, "b.copy_(a.t())")


def bench_softmax(root: Path, arch: str) -> Row:
    r, c = 65536, 4096
    x = torch.randn(r, c, device="cuda", dtype=torch.float16)
    y = torch.full_like(x, float("nan"))
    softmax = load(root / f"softmax_{arch}")
    softmax(x, y)
    ref_y = torch.softmax(x.double(), 1)
    err = ((y.double() - ref_y).norm() / ref_y.norm()).item()
    assert err < 2e-3, err
    ours = gbs(2 * r * c * 2, time_ms(lambda: softmax(x, y)))
    ref = gbs(2 * r * c * 2, time_ms(lambda: torch.softmax(x, 1, out=y)))
    return ("softmax", f"{r}x{c} f16", ours, ref, "torch.softmax")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", default="build/examples")
    parser.add_argument("--arch", default="sm90a")
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument(
        "--sweep", metavar="DIR", help="time every variant folder DIR/<name>/<kernel>_<arch>"
    )
    args = parser.parse_args()
    ceiling = bench_copy()
    rows: list[Row] = [("device copy (torch)", "1 GiB f32", ceiling, ceiling, "copy_")]
    roots = [(Path(args.bundles), "")]
    if args.sweep:
        roots = [(d, f" {d.name}") for d in sorted(Path(args.sweep).iterdir()) if d.is_dir()]
    benches = {"vadd": bench_vadd, "transpose": bench_transpose, "softmax": bench_softmax}
    for root, label in roots:
        for kernel, bench in benches.items():
            if not (root / f"{kernel}_{args.arch}").is_dir():
                continue
            try:
                name, size, ours, ref, what = bench(root, args.arch)
                rows.append((name + label, size, ours, ref, what))
            except Exception as exc:  # noqa: BLE001 - one failing kernel must not hide the others
                print(f"{kernel}{label}: FAILED: {type(exc).__name__}: {exc}")
    today = datetime.date.today().isoformat()
    lines = [
        f"Measured {today} on {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"bundles for {args.arch}.",
        "",
        "| kernel | size | tilec GB/s | / copy | reference | ref GB/s | tilec / ref |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: |",
    ]
    for name, size, ours, ref, what in rows:
        lines.append(
            f"| {name} | {size} | {ours:.0f} | {ours / ceiling:.2f} | {what} | {ref:.0f} | "
            f"{ours / ref:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")


if __name__ == "__main__":
    main()

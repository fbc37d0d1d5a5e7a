"""Bench: the memory-bound examples beside torch and the device-copy ceiling, in one run.

    python bench/bench_memory.py [--bundles build/examples] [--arch sm90a] [--out table.md]

Bandwidth counts each tensor once (read or written): the least traffic the operation needs.
Each figure is the median over repeats of 20 back-to-back launches timed with CUDA events
(launch gaps amortised), after warm-up; inputs are randn, never zeros.
"""

from __future__ import annotations

import argparse
import datetime
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from tilec.runtime import load
from tilec.runtime.measure import time_ms


def gbs(nbytes: int, ms: float) -> float:
    return nbytes / ms / 1e6


Row = tuple[str, str, float, float, str]


@dataclass
class Case:
    """One kernel call and its torch reference on the same tensors, the kernel's result already
    checked against torch; `nbytes` is the traffic both move (bench/baseline.py times them)."""

    name: str
    size: str
    nbytes: int
    run: Callable[[], object]
    reference: Callable[[], object]
    what: str


def copy_case() -> Case:
    """The ceiling: a 1 GiB f32 device-to-device copy, counting read + write."""
    n = 1 << 28
    src, dst = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    copy = lambda: dst.copy_(src)  # noqa: E731
    return Case("device copy (torch)", "1 GiB f32", 2 * n * 4, copy, copy, "copy_")


def vadd_case(bundle: Path) -> Case:
    n = 1 << 28
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full((n,), float("nan"), device="cuda")
    vadd = load(bundle)
    vadd(x, y, out)
    assert torch.equal(out, x + y)
    return Case(
        "vadd",
        "N=2^28 f32",
        3 * n * 4,
        lambda: vadd(x, y, out),
        lambda: torch.add(x, y, out=out),
        "torch.add",
    )


def transpose_case(bundle: Path) -> Case:
    m = n = 16384
    a = torch.randn(m, n, device="cuda")
    b = torch.full((n, m), float("nan"), device="cuda")
    transpose = load(bundle)
    transpose(a, b)
    assert torch.equal(b, a.t())
    return Case(
        "transpose",
        f"{m}x{n} f32",
        2 * m * n * 4,
        lambda: transpose(a, b),
        lambda: b.copy_(a.t()),
        "b.copy_(a.t())",
    )


def softmax_case(bundle: Path) -> Case:
    r, c = 65536, 4096
    x = torch.randn(r, c, device="cuda", dtype=torch.float16)
    y = torch.full_like(x, float("nan"))
    softmax = load(bundle)
    softmax(x, y)
    ref_y = torch.softmax(x.double(), 1)
    err = ((y.double() - ref_y).norm() / ref_y.norm()).item()
    assert err < 2e-3, err
    return Case(
        "softmax",
        f"{r}x{c} f16",
        2 * r * c * 2,
        lambda: softmax(x, y),
        lambda: torch.softmax(x, 1, out=y),
        "torch.softmax",
    )


# Each example's case, made from its bundle folder.
CASES: dict[str, Callable[[Path], Case]] = {
    "vadd": vadd_case,
    "transpose": transpose_case,
    "softmax": softmax_case,
}


def bench(case: Case) -> Row:
    """The kernel's and the reference's GB/s, each timed on its own."""
    ours, ref = gbs(case.nbytes, time_ms(case.run)), gbs(case.nbytes, time_ms(case.reference))
    return (case.name, case.size, ours, ref, case.what)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bundles", default="build/examples")
    parser.add_argument("--arch", default="sm90a")
    parser.add_argument("--out", help="also write the markdown table here")
    parser.add_argument(
        "--sweep", metavar="DIR", help="time every variant folder DIR/<name>/<kernel>_<arch>"
    )
    args = parser.parse_args()
    ceiling = bench(copy_case())[2]
    rows: list[Row] = [("device copy (torch)", "1 GiB f32", ceiling, ceiling, "copy_")]
    roots = [(Path(args.bundles), "")]
    if args.sweep:
        roots = [(d, f" {d.name}") for d in sorted(Path(args.sweep).iterdir()) if d.is_dir()]
    for root, label in roots:
        for kernel, make in CASES.items():
            bundle = root / f"{kernel}_{args.arch}"
            if not bundle.is_dir():
                continue
            try:
                name, size, ours, ref, what = bench(make(bundle))
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

"""Bench (CPU, no GPU): what a family's dispatch adds to a planned launch.

    python bench/bench_dispatch.py [--family build/families/softmax] [--calls 100000]

The driver's calls are stood in for (a launch does nothing), so the figures are the host's
alone: a bundle's planned call (`Kernel.__call__` with a signature seen before), the same call
through its family (`Family.__call__`: the signature, a dict lookup, the kernel's plan), and
the difference, per call, the median of 7 interleaved rounds of `--calls` calls each. The
arguments are objects with `__cuda_array_interface__` (no torch needed), which the signature
reads through `as_view` (torch tensors take a faster path). Without `--family`, a family of
two builds of a row kernel is built in a temporary directory (needs MLIR).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tilec.runtime import driver
from tilec.runtime.family import Family, open_family


class Device:
    """A device array stand-in: `__cuda_array_interface__` over a made-up pointer."""

    def __init__(self, shape: tuple[int, ...], ptr: int, typestr: str = "<f2") -> None:
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (ptr, False), "strides": None,
            "version": 3,
        }  # fmt: skip


def stand_in_driver() -> None:
    driver.current_context = lambda device=None: 1
    driver.load_function = lambda ptx, entry, smem: ("module", "function")
    driver.set_max_dynamic_smem = lambda fn, n: None
    driver.launch = lambda *args: None
    driver.capability = lambda device=None: (9, 0)
    driver.sm_count = lambda device=None: 132


def per_call_us(fns: dict[str, Callable[[], Any]], calls: int) -> dict[str, float]:
    """Each function's µs a call: the median of 7 rounds, each timing `calls` calls of every
    function in turn (interleaved, so a busy machine slows them alike)."""
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(7):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            runs[name].append((time.perf_counter() - start) / calls * 1e6)
    return {name: statistics.median(r) for name, r in runs.items()}


def example_family(root: Path) -> Family:
    from tilec.build import build
    from tilec.runtime.family import Build, FamilySpec, Rule

    source = root / "rows.tile"
    source.write_text(
        "kernel rows<COLS: int = 256>(X: f16[R, N], Y: f16[R, N]) grid(R) threads(64)\n"
        "  target(sm_80)\n{\n  store(load(local_tile(X, (1, COLS), (block.x, 0))) * 2.0,\n"
        "        local_tile(Y, (1, COLS), (block.x, 0)))\n}\n"
    )
    builds, rules = {}, []
    for cols in (256, 1024):
        name = f"c{cols}"
        (bundle,) = build(str(source), root / "tmp", {"COLS": str(cols)}, "sm_80")
        bundle.rename(root / name)
        builds[name] = Build(name, str(source), "rows", {"COLS": str(cols)}, "sm_80", name)
        rules.append(Rule(name, (f"N <= {cols}",), {"X": "f16"}))
    return Family(
        FamilySpec("rows", (("X", "tensor"), ("Y", "tensor")), builds, tuple(rules)), root
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--family", help="a family directory of (X, Y) kernels, e.g. softmax")
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--n", type=int, default=1000, help="the rows' length")
    args = parser.parse_args()
    stand_in_driver()
    with tempfile.TemporaryDirectory() as tmp:
        fam = open_family(args.family, False) if args.family else example_family(Path(tmp))
        x, y = Device((4096, args.n), 0x7F0000000000), Device((4096, args.n), 0x7F1000000000)
        kernel = fam.kernel(fam.select(x, y))
        kernel(x, y)
        fam(x, y)
        us = per_call_us({"kernel": lambda: kernel(x, y), "family": lambda: fam(x, y)}, args.calls)
        bare, through = us["kernel"], us["family"]
    print(f"{fam.spec.name} N={args.n}: kernel {bare:.2f} µs, family {through:.2f} µs a call")
    print(f"dispatch on the planned path: {through - bare:.2f} µs a call")


if __name__ == "__main__":
    main()

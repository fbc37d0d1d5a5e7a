"""GPU tier: compute-sanitizer over every example kernel, at small ragged shapes.

    python test/gpu/sanitize.py BUNDLES... [--planted BUNDLE] [--log FILE] [--tool NAME ...]

Each bundle (a folder holding manifest.json, searched recursively under each argument) is
launched once, in a child process, under each of memcheck (`--report-api-errors no`:
cuda-python probes driver entry points that do not exist, and memcheck counts those),
racecheck, synccheck and initcheck, on random data at sizes that are not multiples of any
tile. A tool that reports an error or hazard fails the tier. `--planted` names a bundle with
a known hazard (transpose.tile without its barrier, built by `test/gpu/build_bundles.py`):
racecheck must report it, or the tier fails — a tier that cannot catch a race proves nothing.
`--tool` (repeatable) runs only the tools named.

initcheck counts all 16 bytes of a zero-filling `cp.async` (src-size < 16) as read from global
memory, though only src-size bytes are: test/gpu/initcheck_probe.cu shows it (src-size 8 of a
16-byte buffer with 8 bytes written is reported, src-size 0 is not). A copy whose last chunk
straddles the end of a small tensor is reported by it at ragged sizes; such a bundle is
initchecked at a size of whole chunks and run under the other tools at the ragged one.
Needs the runtime, torch, a GPU and compute-sanitizer; exit status 0 when clean.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

TOOLS = {
    "memcheck": ["--tool", "memcheck", "--report-api-errors", "no", "--leak-check", "no"],
    "racecheck": ["--tool", "racecheck", "--racecheck-report", "all"],
    "synccheck": ["--tool", "synccheck"],
    "initcheck": ["--tool", "initcheck"],
}
# Ragged sizes: no tile of any example divides them (K stays a multiple of 8: 16-byte rows).
SIZES = {"M": 67, "N": 131, "K": 72, "L": 2, "R": 3, "S": 4, "P": 1000}
SUMMARY = re.compile(r"(ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: (\d+) hazard)")


def child(bundle: str, overrides: dict[str, int]) -> None:
    """Launch `bundle` once on random inputs (the process compute-sanitizer watches)."""
    import torch

    from tilec.runtime import load
    from tilec.runtime.measure import random_args

    kernel = load(bundle)
    sizes = dict(SIZES)
    if kernel.manifest.entry == "vadd":
        sizes["N"] = 4099
    sizes.update(overrides)
    args = random_args(kernel.manifest, sizes, seed=1)
    kernel(*args)
    torch.cuda.synchronize()


def sanitize(bundle: Path, tool: str, sizes: list[str]) -> tuple[int, str]:
    """(errors or hazards reported, the tool's output) for one bundle under one tool."""
    cmd = ["compute-sanitizer", *TOOLS[tool], sys.executable, __file__, "--child", str(bundle)]
    cmd += [f"--size={s}" for s in sizes]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    counts = [int(m.group(2) or m.group(3)) for m in SUMMARY.finditer(out)]
    if not counts or run.returncode != 0 and sum(counts) == 0:
        return 1, out  # no summary, or the child failed: count it as a finding
    return sum(counts), out


def bundles_under(roots: list[str]) -> list[Path]:
    found = set()
    for root in roots:
        found |= {m.parent for m in Path(root).rglob("manifest.json")}
    return sorted(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="*", default=["build/examples"])
    parser.add_argument("--planted", help="a bundle racecheck must catch")
    parser.add_argument("--log", help="write every tool's output here")
    parser.add_argument(
        "--size", action="append", default=[], help="NAME=VALUE over the ragged sizes"
    )
    parser.add_argument("--tool", action="append", choices=tuple(TOOLS), help="only these tools")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, {k: int(v) for k, v in (s.split("=", 1) for s in args.size)})
        return 0
    log = open(args.log, "w") if args.log else None  # noqa: SIM115 - closed below
    failed = 0
    planted = Path(args.planted).resolve() if args.planted else None
    for bundle in bundles_under(args.roots):
        if planted is not None and bundle.resolve() == planted:
            continue
        for tool in args.tool or TOOLS:
            count, out = sanitize(bundle, tool, args.size)
            print(f"{'clean' if count == 0 else 'FOUND'}  {tool:<9} {bundle}  ({count})")
            failed += count > 0
            if log:
                log.write(f"==== {tool} {bundle}\n{out}\n")
    if planted is not None:
        count, out = sanitize(planted, "racecheck", args.size)
        caught = count > 0 and "hazard" in out.lower()
        print(f"{'caught' if caught else 'MISSED'}  racecheck {planted}  (planted race, {count})")
        failed += not caught
        if log:
            log.write(f"==== racecheck (planted) {planted}\n{out}\n")
    if log:
        log.close()
    print(f"{'clean' if failed == 0 else f'{failed} failing'}: sanitizer tier")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

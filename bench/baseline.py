"""Bench: speed baselines, each example kernel's throughput as a ratio to its in-run reference.

    python bench/baseline.py --write-facts build/baseline/facts.json   (where MLIR and ptxas are)
    python bench/baseline.py --record bench/baselines/h200.json        (the GPU machine)
    python bench/baseline.py --check bench/baselines/h200.json [--bundle gemm_f16=PATH] [--only K]
    python bench/baseline.py --check BASE.json --measured NOW.json     (anywhere: no GPU)

Each kernel runs beside its reference (the 1 GiB copy ceiling for vadd, transpose and softmax;
cuBLAS for the GEMMs) in R interleaved repeats, kernel then reference, then reference then
kernel, so a drift of clocks or temperature hits both; every timing is
tilec.runtime.measure.time_ms. A repeat's ratio is the kernel's throughput over the
reference's; the kernel's ratio is the median over repeats and its noise band the repeats'
spread, (max - min) / median, at least FLOOR. `--check` flags a kernel whose ratio fell below
baseline * (1 - band), band the larger of the baseline's and this run's, exits 1, and names the
facts that differ from those recorded with the baseline: the passport (`tilec report --json`,
written here by --write-facts, since the GPU machine has no MLIR), the manifest's parameters
and a hash of the PTX.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "tilec-speed-baseline"
FACTS_FORMAT = "tilec-bundle-facts"
FLOOR = 0.02  # no band narrower than 2%: run-to-run spread on the H200 is about that
REPEATS = 9
FACTS = "build/baseline/facts.json"

Fact = int | str | None
Facts = dict[str, Fact]


_MEMORY = ("vadd", "transpose", "softmax")


@dataclass(frozen=True)
class Kernel:
    """One baseline row: a bundle (named by its --bundle key) at one problem size."""

    name: str
    key: str  # the --bundle / --only key; a GEMM bundle has a row per shape
    source: str  # the .tile file `tilec report` reads for the passport
    path: str  # the bundle folder built by the build steps (bench/tier_session.sh)
    shape: tuple[int, int, int] | None = None  # GEMM: M, N, K


_GEMMS = {"f16": "build/gemm/default_sm90a/gemm_sm90a", "bf16": "build/gemm/a0b0_bf16/gemm_sm90a"}
_SM90 = "build/sm90/default_bf16/gemm90"  # examples/gemm_sm90.tile (test/gpu/build_sm90_bundles.sh)
KERNELS = (
    *(Kernel(k, k, f"examples/{k}.tile", f"build/examples/{k}_sm90a") for k in _MEMORY),
    *(
        Kernel(f"gemm_{t} {n}³", f"gemm_{t}", "examples/gemm_sm80.tile", path, (n, n, n))
        for t, path in _GEMMS.items()
        for n in (4096, 8192)
    ),
    *(
        Kernel(f"gemm90_bf16 {n}³", "gemm90_bf16", "examples/gemm_sm90.tile", _SM90, (n, n, n))
        for n in (4096, 8192)
    ),
)


# -- facts ---------------------------------------------------------------------------------------


def _norm(path: str | Path) -> str:
    return os.path.normpath(str(path))


def ptx_hash(bundle: Path) -> str:
    manifest = json.loads((bundle / "manifest.json").read_text())
    return "sha256:" + hashlib.sha256((bundle / manifest["ptx"]).read_bytes()).hexdigest()[:16]


def flatten(report: dict[str, Any]) -> Facts:
    """One kernel's `tilec report --json` entry as flat name -> value facts."""
    facts: Facts = {name: f["value"] for name, f in report["facts"].items()}
    facts |= {f"count({insn})": n for insn, n in report["instructions"].items()}
    for p in report["contract"]:
        facts[f"contract {p['promise']}"] = "kept" if p["kept"] else f"BROKEN ({p['found']})"
    return facts


def passport(source: str, bundle: Path) -> Facts:
    """The bundle's passport, compiled again from its source with the manifest's parameters."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    digest = "sha256:" + hashlib.sha256(Path(source).read_bytes()).hexdigest()
    if manifest["source"]["hash"] != digest:
        raise SystemExit(f"{bundle} was built from another {source}: rebuild it first")
    cmd = [sys.executable, "-m", "tilec.tools.tilec", "report", source, "--json"]
    cmd += ["--arch", manifest["target"]]
    for name, value in manifest["source"]["params"].items():
        cmd += ["-D", f"{name}={value}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    entry = next(k for k in json.loads(out) if k["kernel"] == manifest["entry"])
    return flatten(entry)


def write_facts(path: Path, bundles: dict[str, str]) -> None:
    """Add each bundle's passport to the facts file (bundle folder -> PTX hash and facts)."""
    data = read_facts(path) if path.exists() else {}
    for folder, source in bundles.items():
        data[_norm(folder)] = {
            "ptx": ptx_hash(Path(folder)),
            "facts": passport(source, Path(folder)),
        }
        print(f"facts: {folder}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": FACTS_FORMAT, "bundles": data}, indent=1) + "\n")


def read_facts(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if data.get("format") != FACTS_FORMAT:
        raise ValueError(f"{path}: not a {FACTS_FORMAT} file")
    return data["bundles"]


def bundle_facts(bundle: Path, recorded: dict[str, Any]) -> tuple[Facts, bool]:
    """The facts of the bundle as built now: its parameters and PTX hash from the manifest, and
    its passport where the facts file has one for this very PTX (False: none, or stale)."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    ptx = ptx_hash(bundle)
    facts: Facts = {f"param {k}": v for k, v in manifest["constants"].items()}
    facts["ptx"] = ptx
    entry = recorded.get(_norm(bundle))
    if entry is None or entry["ptx"] != ptx:
        return facts, False
    return entry["facts"] | facts, True


def diff_facts(old: Facts, new: Facts) -> list[str]:
    """'name old -> new' for every fact that differs; '?' where one side does not know it."""
    out = []
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name, "?"), new.get(name, "?")
        if a != b:
            out.append(f"{name} {a} -> {b}")
    return out


# -- ratios, bands and the comparison --------------------------------------------------------------


def band(ratios: list[float], floor: float = FLOOR) -> float:
    """The repeats' relative spread, (max - min) / median, never below `floor`."""
    if not ratios:
        raise ValueError("a band needs at least one repeat")
    return max(floor, (max(ratios) - min(ratios)) / statistics.median(ratios))


@dataclass(frozen=True)
class Verdict:
    kernel: str
    status: str  # ok, SLOWER, faster, FAILED, not measured, new
    base: float | None
    now: float | None
    band: float | None
    changed: tuple[str, ...] = ()

    @property
    def alarm(self) -> bool:
        return self.status in ("SLOWER", "FAILED")


def judge(
    kernel: str, base: dict[str, Any] | None, now: dict[str, Any] | None, floor: float = FLOOR
) -> Verdict:
    """One kernel's verdict from its baseline entry and this run's: the band is the wider of
    theirs, never below `floor` (--floor widens it for a noisier machine without re-recording)."""
    if now is None:
        return Verdict(kernel, "not measured", base and base["ratio"], None, base and base["band"])
    if "error" in now:
        return Verdict(kernel, "FAILED", base and base["ratio"], None, None, (now["error"],))
    if base is None:
        return Verdict(kernel, "new", None, now["ratio"], now["band"])
    width = max(floor, base["band"], now["band"])
    changed = tuple(diff_facts(base["facts"], now["facts"]))
    status = "ok"
    if now["ratio"] < base["ratio"] * (1 - width):
        status = "SLOWER"
    elif now["ratio"] > base["ratio"] * (1 + width):
        status = "faster"
    return Verdict(kernel, status, base["ratio"], now["ratio"], width, changed)


def compare(base: dict[str, Any], now: dict[str, Any], floor: float = FLOOR) -> list[Verdict]:
    """Every kernel of either file, in the baseline's order, then the new ones."""
    names = list(base["kernels"]) + [k for k in now["kernels"] if k not in base["kernels"]]
    return [judge(k, base["kernels"].get(k), now["kernels"].get(k), floor) for k in names]


def _f(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def render(verdicts: Iterable[Verdict]) -> str:
    lines = [
        "| kernel | baseline | now | change | band | verdict | facts changed |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for v in verdicts:
        change = None if v.base is None or v.now is None else v.now / v.base - 1
        facts = "; ".join(v.changed) if v.changed else "none"
        lines.append(
            f"| {v.kernel} | {_f(v.base, '.3f')} | {_f(v.now, '.3f')} | {_f(change, '+.1%')} | "
            f"±{_f(v.band, '.1%')} | {v.status} | {facts} |"
        )
    return "\n".join(lines)


def render_run(run: dict[str, Any]) -> str:
    lines = [
        f"Measured {run['date']} on {run['device']}, {run['repeats']} interleaved repeats.",
        "",
        "| kernel | tilec | reference | ratio | band | repeats' ratios |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, k in run["kernels"].items():
        if "error" in k:
            lines.append(f"| {name} | FAILED: {k['error']} | | | | |")
            continue
        ratios = " ".join(f"{r:.3f}" for r in k["ratios"])
        lines.append(
            f"| {name} | {k['rate']:.0f} {k['unit']} | {k['reference_rate']:.0f} "
            f"({k['reference']}) | {k['ratio']:.3f} | ±{k['band']:.1%} | {ratios} |"
        )
    return "\n".join(lines)


def read(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} file")
    return data


def write(path: Path, run: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n")


# -- the GPU part ----------------------------------------------------------------------------------


@dataclass
class Pair:
    """A kernel call and its reference's, with the work each does (MB or GFLOP) per call."""

    ours: Callable[[], object]
    ref: Callable[[], object]
    work: float
    ref_work: float
    unit: str  # of work per millisecond: GB/s, TFLOP/s
    what: str  # the reference's name
    inner: int  # back-to-back calls per timed sample


def pair(kernel: Kernel, bundle: Path) -> Pair:
    """The kernel (checked against torch once) and its reference, on device tensors."""
    if kernel.shape is None:  # bench/ is on sys.path: this file runs as bench/baseline.py
        import bench_memory

        case, copy = bench_memory.CASES[kernel.key](bundle), bench_memory.copy_case()
        return Pair(case.run, copy.run, case.nbytes / 1e6, copy.nbytes / 1e6, "GB/s", "copy", 20)
    import bench_gemm
    import torch

    from tilec.runtime import load

    loaded = load(bundle)
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16}[loaded.manifest.params[0].dtype]
    gemm = bench_gemm.as_gemm(loaded)  # the SM90 kernel takes no alpha
    m, n, k = kernel.shape
    a, b, c = bench_gemm.operands(m, n, k, dtype, False, False)
    err = bench_gemm.error(gemm, a, b, c, 1.0)
    if not err < 1e-2:
        raise AssertionError(f"wrong result (relative error {err:.3g})")
    flops = 2 * m * n * k / 1e9
    ours, ref = (lambda: gemm(a, b, c, 1.0)), (lambda: bench_gemm.cublas(a, b, c))
    return Pair(ours, ref, flops, flops, "TFLOP/s", "cuBLAS", 10)


def measure(kernel: Kernel, bundle: Path, repeats: int, recorded: dict[str, Any]) -> dict:
    """One kernel's entry: R interleaved repeats beside its reference, ratios, band, facts."""
    from tilec.runtime.measure import time_ms

    p = pair(kernel, bundle)
    rates: list[float] = []
    ref_rates: list[float] = []
    for i in range(repeats):
        # Alternate who goes first (ABBA...), so a steady drift favours neither.
        for ours in (True, False) if i % 2 == 0 else (False, True):
            if ours:
                rates.append(p.work / time_ms(p.ours, inner=p.inner))
            else:
                ref_rates.append(p.ref_work / time_ms(p.ref, inner=p.inner))
    ratios = [a / b for a, b in zip(rates, ref_rates, strict=True)]
    facts, known = bundle_facts(bundle, recorded)
    if not known:
        print(f"{kernel.name}: no passport facts for {bundle} (run --write-facts where MLIR is)")
    return {
        "bundle": _norm(bundle),
        "reference": p.what,
        "unit": p.unit,
        "rate": statistics.median(rates),
        "reference_rate": statistics.median(ref_rates),
        "ratio": statistics.median(ratios),
        "band": band(ratios),
        "ratios": ratios,
        "facts": facts,
    }


def run_all(kernels: list[Kernel], bundles: dict[str, str], repeats: int, facts: Path) -> dict:
    import torch

    recorded = read_facts(facts) if facts.exists() else {}
    if not recorded:
        print(f"no facts file {facts}: only parameters and PTX hashes are compared")
    out: dict[str, Any] = {}
    for k in kernels:
        try:
            out[k.name] = measure(k, Path(bundles.get(k.key, k.path)), repeats, recorded)
        except Exception as exc:  # noqa: BLE001 - one failing kernel must not hide the others
            out[k.name] = {"error": f"{type(exc).__name__}: {exc}"}
        torch.cuda.empty_cache()
        print(f"{k.name}: done", flush=True)
    return {
        "format": FORMAT,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "repeats": repeats,
        "kernels": out,
    }


# -- the command line ------------------------------------------------------------------------------


def _bundle(text: str) -> tuple[str, str]:
    key, sep, path = text.partition("=")
    if not sep or key not in {k.key for k in KERNELS}:
        keys = ", ".join(sorted({k.key for k in KERNELS}))
        raise argparse.ArgumentTypeError(f"expected KEY=PATH with KEY one of {keys}")
    return key, path


def check(base: dict[str, Any], now: dict[str, Any], floor: float = FLOOR) -> int:
    """Print the comparison; 1 when a kernel is slower or failed, 2 on another device."""
    if base["device"] != now["device"]:
        print(f"baseline from {base['device']}, this run on {now['device']}: not comparable")
        return 2
    verdicts = compare(base, now, floor)
    print(f"Baseline {base['date']} on {base['device']}; this run {now['date']}.\n")
    print(render(verdicts))
    alarms = [v.kernel for v in verdicts if v.alarm]
    print(f"\nbaseline check: {len(alarms)} flagged" + (f": {', '.join(alarms)}" if alarms else ""))
    return 1 if alarms else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", metavar="FILE", help="measure and write a baseline")
    mode.add_argument("--check", metavar="FILE", help="measure and compare with this baseline")
    mode.add_argument("--write-facts", metavar="FILE", help="add the bundles' passports (MLIR)")
    parser.add_argument("--facts", default=FACTS, help=f"the facts file to read ({FACTS})")
    parser.add_argument("--bundle", action="append", type=_bundle, default=[], metavar="KEY=PATH")
    parser.add_argument("--only", action="append", default=[], metavar="KEY", help="repeatable")
    parser.add_argument("--repeats", type=int, default=REPEATS, help=f"({REPEATS})")
    parser.add_argument("--floor", type=float, default=FLOOR, help=f"least band ({FLOOR})")
    parser.add_argument("--measured", metavar="FILE", help="--check this saved run, no GPU")
    parser.add_argument("--save", metavar="FILE", help="also write this run's measurements")
    args = parser.parse_args(argv)
    if args.repeats < 2:
        parser.error("--repeats: at least 2 (the band is their spread)")
    bundles = dict(args.bundle)
    kernels = [k for k in KERNELS if not args.only or k.key in args.only or k.name in args.only]
    if args.write_facts:
        folders = {bundles.get(k.key, k.path): k.source for k in kernels}
        write_facts(Path(args.write_facts), folders)
        return 0
    if args.measured:
        now = read(Path(args.measured))
    else:
        now = run_all(kernels, bundles, args.repeats, Path(args.facts))
        print(render_run(now) + "\n")
    if args.save:
        write(Path(args.save), now)
    if args.record:
        write(Path(args.record), now)
        failed = [n for n, k in now["kernels"].items() if "error" in k]
        return 1 if failed else 0
    return check(read(Path(args.check)), now, args.floor)


if __name__ == "__main__":
    sys.exit(main())

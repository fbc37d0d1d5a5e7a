"""`tilec tune`: build a kernel's candidates in parallel processes, drop those that cannot win,
time the rest on each shape (the runtime's tuning module, on the GPU), print ranked tables and
write a tuning table that a family reads.

    tilec tune examples/softmax.tile --shapes "R=65536,N=1000 R=8192,N=8192" --bucket-by N
    tilec tune K.tile --space "COLS=1024,2048 THREADS=128,256" --shapes ... --compile-only -o plan
    tilec tune --from plan --table softmax.tuning.json          # where the GPU is, no MLIR

The compile half (MLIR) writes a plan directory: each candidate's bundle and its ptxas facts,
and why a candidate gets no GPU time (it does not compile or breaks its contract, it spills or
keeps a stack frame, no block of it fits an SM, or fewer than MIN_WARPS warps of it do).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the runtime (cuda-python) loads only when tilec tune runs
    from tilec.runtime.tuning import Plan

MIN_WARPS = 4  # resident warps an SM below which a candidate cannot hide memory latency


class TuneError(ValueError):
    """A bad command line or plan (tilec.runtime.tuning's errors are reported alike)."""


def parse_space(text: str) -> dict[str, tuple[int, ...]]:
    """`"BM=64,128 STAGES=3,4,5"` -> {BM: (64, 128), STAGES: (3, 4, 5)}."""
    space: dict[str, tuple[int, ...]] = {}
    for item in text.split():
        name, _, values = item.partition("=")
        try:
            parsed = tuple(int(v) for v in values.split(",") if v)
        except ValueError:
            raise TuneError(f"--space: {item!r} is not NAME=INT,INT,...") from None
        if not name.isidentifier() or not parsed or name in space:
            raise TuneError(f"--space: {item!r} is not NAME=INT,INT,... (each name once)")
        space[name] = parsed
    if not space:
        raise TuneError("--space names no parameter")
    return space


def parse_shapes(text: str) -> list[dict[str, int]]:
    """`"R=65536,N=1000 R=8192,N=8192"` -> one dict of sizes per shape."""
    shapes = []
    for item in text.split():
        sizes: dict[str, int] = {}
        for part in item.split(","):
            name, _, value = part.partition("=")
            if not name.isidentifier() or not value.isdigit() or int(value) < 1:
                raise TuneError(f"--shapes: {part!r} is not NAME=POSITIVE_INT")
            sizes[name] = int(value)
        shapes.append(sizes)
    if not shapes:
        raise TuneError("--shapes names no shape")
    return shapes


def check_buckets(shapes: list[dict[str, int]], by: list[str]) -> None:
    """Two shapes of one bucket would share a table rule and a cache entry (the second timed as
    the first): refused, naming both."""
    from tilec.runtime.tuning import bucket

    seen: dict[tuple[str, ...], dict[str, int]] = {}
    for sizes in shapes:
        key = tuple(bucket(sizes, by, shapes))
        if key in seen:
            first, second = (",".join(f"{k}={v}" for k, v in x.items()) for x in (seen[key], sizes))
            raise TuneError(
                f"--shapes: {first} and {second} fall in one bucket ({' and '.join(key)}), "
                "which a tuning table holds one result for: drop one, or --bucket-by other sizes"
            )
        seen[key] = sizes


def space_candidates(
    path: str, kernel: str | None, defines: dict[str, str], space: dict[str, tuple[int, ...]] | None
) -> tuple[str, list[dict[str, int]]]:
    """The kernel's name and its candidates: the product of `space`, or its tune(...) clause's
    (checked by the frontend: a located error where it is wrong)."""
    from tilec.frontend import check, parse_source, read_source

    checked = check(parse_source(read_source(path), path), defines)
    names = [k.node.name for k in checked.kernels]
    chosen = [k for k in checked.kernels if kernel in (None, k.node.name)]
    if len(chosen) != 1:
        raise TuneError(f"{path}: pick one kernel with --kernel (its kernels: {', '.join(names)})")
    k = chosen[0]
    if space is not None:
        unknown = [n for n in space if n not in k.params]
        if unknown:
            raise TuneError(f"--space names {', '.join(unknown)}, not parameters of {k.node.name}")
        keys = list(space)
        return k.node.name, [
            dict(zip(keys, v, strict=True)) for v in itertools.product(*space.values())
        ]
    if k.tune is None:
        raise TuneError(f"{k.node.name} has no tune(...) clause: give --space")
    return k.node.name, k.tune.candidates(k.params)


def _compile_one(job: tuple[str, str, dict[str, str], str, str, bool]) -> dict[str, Any]:
    """Build one candidate into its folder (a worker process); its facts and why it is pruned.
    A candidate is built without the kernel's variant(...) clauses (`variants` False), so it
    runs its own parameters at every launch; the baseline is built with them."""
    path, kernel, params, arch, folder, variants = job
    from tilec.build import build
    from tilec.diagnostics import DiagnosticError
    from tilec.runtime.bundle import read_bundle

    try:
        written = build(path, folder, params, arch, contracts=True, variants=variants)
    except DiagnosticError as err:
        return {"bundle": "", "facts": {}, "pruned": f"does not build: {first_error(err)}"}
    except Exception as err:  # noqa: BLE001 - a candidate's failure must not stop the others
        return {"bundle": "", "facts": {}, "pruned": f"does not build: {type(err).__name__}: {err}"}
    mine = next(b for b in written if read_bundle(b)[0].entry == kernel)
    for other in written:
        if other != mine:
            shutil.rmtree(other, ignore_errors=True)
    facts = bundle_facts(mine, arch)
    return {"bundle": str(Path(mine).relative_to(Path(folder).parent)), **judge(facts)}


def first_error(err: Any) -> str:
    """A DiagnosticError's first error (not a warning the compile printed before it)."""
    errors = [d for d in err.diagnostics if d.severity == "error"] or err.diagnostics
    return errors[0].header() if errors else str(err)


def bundle_facts(bundle: Path, arch: str) -> dict[str, Any]:
    """The worst of ptxas's facts over the PTX files a launch of ordinary sizes runs (the
    ordinary and the specialised; not the 64-bit-index one, for tensors of 2^31 elements and
    more), and the blocks and warps an SM holds. Empty without ptxas."""
    from tilec.backend import BackendError, ptxas_reports
    from tilec.runtime.bundle import read_bundle
    from tilec.targets import ctas_per_sm

    manifest, _ = read_bundle(bundle)
    files = [manifest.ptx_file, manifest.special_ptx_file]
    registers = spills = stack = shared = 0
    try:
        for name in (f for f in files if f):
            usage = ptxas_reports((bundle / name).read_text(), arch)[manifest.entry]
            registers = max(registers, usage.registers)
            spills = max(spills, usage.spill_stores + usage.spill_loads)
            stack = max(stack, usage.stack_frame)
            shared = max(shared, usage.shared_bytes)
    except BackendError:
        return {}
    threads = manifest.block[0] * manifest.block[1] * manifest.block[2]
    facts: dict[str, Any] = {"registers": registers, "spills": spills, "local_memory": stack}
    if isinstance(threads, int) and isinstance(manifest.dynamic_smem, int):
        shared += manifest.dynamic_smem
        ctas = ctas_per_sm(manifest.target, threads, registers, shared)
        facts.update(shared_bytes=shared, ctas_per_sm=ctas, warps_per_sm=ctas * (-(-threads // 32)))
    return facts


def judge(facts: dict[str, Any]) -> dict[str, Any]:
    """The facts and why they leave a candidate no chance (None: time it)."""
    why = None
    if facts.get("spills", 0) or facts.get("local_memory", 0):
        why = f"spills {facts['spills']} B, stack frame {facts['local_memory']} B"
    elif facts.get("ctas_per_sm", 1) < 1:
        why = "no block fits an SM (registers or shared memory)"
    elif facts.get("warps_per_sm", MIN_WARPS) < MIN_WARPS:
        why = f"occupancy: {facts['warps_per_sm']} warps an SM (< {MIN_WARPS})"
    return {"facts": facts, "pruned": why}


def compile_plan(args: argparse.Namespace, out: Path) -> Plan:
    from tilec.cli import _parse_params
    from tilec.frontend import read_source
    from tilec.runtime.tuning import PLAN_FILE, Candidate, Plan, source_hash

    defines = _parse_params(args.param)
    space = parse_space(args.space) if args.space else None
    kernel, candidates = space_candidates(args.input, args.kernel, defines, space)
    arch = args.arch or _target(args.input, defines)
    shapes = parse_shapes(args.shapes)
    by = args.bucket_by.split(",") if args.bucket_by else sorted(shapes[0])
    for sizes in shapes:
        missing = [n for n in by if n not in sizes]
        if missing:
            raise TuneError(f"--bucket-by {', '.join(missing)}: not in shape {sizes}")
    check_buckets(shapes, by)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    jobs = [
        (
            args.input,
            kernel,
            {**defines, **{k: str(v) for k, v in c.items()}},
            arch,
            str(out / f"c{i}"),
            False,
        )
        for i, c in enumerate(candidates)
    ]
    jobs.append((args.input, kernel, defines, arch, str(out / "baseline"), True))
    *results, base = _run_jobs(jobs, args.jobs)
    source = read_source(args.input)
    plan = Plan(
        source=str(Path(args.input)),
        source_hash=source_hash(source),
        kernel=kernel,
        arch=arch,
        defines=defines,
        shapes=shapes,
        bucket_by=by,
        candidates=[Candidate(params=c, **r) for c, r in zip(candidates, results, strict=True)],
        flops=args.flops or "",
        reference=args.reference or "",
        baseline=base["bundle"],  # timed even where a candidate would be pruned
    )
    (out / PLAN_FILE).write_text(json.dumps(plan.to_json(), indent=1))
    return plan


def _target(path: str, defines: dict[str, str]) -> str:
    from tilec.frontend import check, parse_source, read_source, target_of

    return target_of(check(parse_source(read_source(path), path), defines)) or "sm_80"


def _run_jobs(jobs: list[tuple[Any, ...]], workers: int) -> list[dict[str, Any]]:
    """Each job in a worker process, `workers` at once, with a progress bar."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    results: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        mapped = pool.map(_compile_one, jobs)
        if tqdm is not None:
            mapped = tqdm(mapped, total=len(jobs), desc="compiling", unit="build", leave=False)
        results.extend(mapped)
    return results


def print_plan(plan: Plan) -> None:
    alive = [c for c in plan.candidates if c.pruned is None]
    print(f"{plan.kernel}: {len(plan.candidates)} candidates, {len(alive)} to time")
    for c in plan.candidates:
        if c.pruned is not None:
            print(f"  pruned {' '.join(f'{k}={v}' for k, v in c.params.items())}: {c.pruned}")


def cmd_tune(args: argparse.Namespace) -> int:
    from tilec.diagnostics import DiagnosticError, render_all
    from tilec.runtime import tuning

    try:
        if args.from_plan:
            directory = Path(args.from_plan)
        else:
            if not args.input or not args.shapes:
                raise TuneError("tilec tune FILE needs --shapes (or --from PLAN to time a plan)")
            if args.reference and args.reference not in tuning.REFERENCES:
                raise TuneError(f"--reference: one of {', '.join(tuning.REFERENCES)}")
            directory = Path(args.output or Path("build/tune") / Path(args.input).stem)
            print_plan(compile_plan(args, directory))
            if args.compile_only:
                print(f"plan written to {directory}; time it with: tilec tune --from {directory}")
                return 0
        return time_and_report(directory, args)
    except DiagnosticError as err:
        print(render_all(err.diagnostics), file=sys.stderr)
        return 1
    except BrokenPipeError:  # a closed pipe: the tool's entry point ends quietly
        raise
    except (TuneError, tuning.TuneError, OSError) as err:
        print(f"error: tilec tune: {err}", file=sys.stderr)
        return 1


def time_and_report(directory: Path, args: argparse.Namespace) -> int:
    from tilec.runtime.driver import CudaError
    from tilec.runtime.tuning import baseline_gain, copy_ceiling_gbs, render, time_plan
    from tilec.runtime.tuning_table import table_json

    try:
        plan, entries, gpu = time_plan(directory, args.rounds, not args.no_cache)
        ceiling = copy_ceiling_gbs() if not plan.flops else None
    except CudaError as err:
        print(f"error: tilec tune: {err}", file=sys.stderr)
        return 1
    print(
        f"{gpu['gpu']} (driver {gpu['driver']})" + (f", copy {ceiling:.0f} GB/s" if ceiling else "")
    )
    for entry in entries:
        print(render(plan, entry, ceiling))
    gain = baseline_gain(entries)
    if gain is not None:
        print(f"best over baseline (its defaults and variant clauses), geometric mean over the "
              f"shapes: {gain:.3f}x")  # fmt: skip
    table = Path(args.table or directory / "table.json")
    table.write_text(json.dumps(table_json(plan, entries, gpu), indent=1) + "\n")
    print(f"tuning table: {table}")
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tune",
        help="search a kernel's parameters: build the candidates, time them, write a table",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", nargs="?", help="the .tile file (not with --from)")
    p.add_argument("--kernel", help="the kernel, when the file has several")
    p.add_argument("-D", dest="param", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--arch", choices=("sm_80", "sm_90a"))
    p.add_argument("--space", help='candidates, "NAME=V1,V2 NAME=..." (default: tune(...))')
    p.add_argument("--shapes", help='sizes to time, "R=65536,N=1000 R=8192,N=8192"')
    p.add_argument("--bucket-by", help="the sizes a shape's bucket is made of (default: all)")
    p.add_argument("--flops", help="a formula of the sizes (2*M*N*K): rank by TFLOP/s")
    p.add_argument(
        "--reference", help="a torch op timed beside: softmax, layernorm, rmsnorm or matmul"
    )
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("-o", "--output", help="the plan directory (default build/tune/STEM)")
    p.add_argument("--compile-only", action="store_true", help="build the plan, time nothing")
    p.add_argument("--from", dest="from_plan", metavar="PLAN", help="time a plan built before")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--table", help="where to write the tuning table (default PLAN/table.json)")
    p.add_argument("--no-cache", action="store_true", help="time again what the cache holds")
    p.set_defaults(func=cmd_tune)

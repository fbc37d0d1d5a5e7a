"""`tilec family`: build a kernel family's bundles (MLIR side) and show its rules.

    tilec family build SPEC.json -o build/families/softmax [--tuning TABLE.json ...]
    tilec family build --op softmax -o build/families/softmax --arch sm_90a
    tilec family show build/families/softmax

A spec is a family.json without bundles (docs/runtime.md, "Families"); `--op NAME` takes the
spec of a `tilec.ops` operation. Each tuning table written by `tilec tune` adds, before the
spec's own rules, one build and one rule per shape it timed: the fastest candidate, where the
shape's bucket holds and the arguments have its dtypes. Builds compile in parallel processes;
the family directory gets one bundle folder per build and the family.json naming them. A build
that does not compile (a diagnostic, a broken contract) is left out with its rules, and named
last (`--strict`: exit 1); where its rows would go to a build `--arch` did not build (the same
bucket's sm_80 build: no launch there runs without MLIR), the command fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tilec.runtime.family import Build, FamilySpec


def _build_one(job: tuple[str, str, dict[str, str], str, str, bool]) -> str:
    """Build one kernel into `folder` (a worker process); '' or the failure's text."""
    path, kernel, params, arch, folder, variants = job
    from tilec.build import build
    from tilec.diagnostics import DiagnosticError, render_all
    from tilec.runtime.bundle import read_bundle

    staging = Path(f"{folder}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        written = build(path, staging, params, arch, variants=variants)
    except DiagnosticError as err:
        return render_all(err.diagnostics)
    mine = [b for b in written if read_bundle(b)[0].entry == kernel]
    if not mine:
        return f"{path} has no kernel {kernel!r}"
    shutil.rmtree(folder, ignore_errors=True)
    os.rename(mine[0], folder)
    shutil.rmtree(staging, ignore_errors=True)
    return ""


def build_family(
    spec: FamilySpec, out: Path, root: Path, jobs: int, only_arch: str | None
) -> tuple[FamilySpec, list[str]]:
    """Every build of `spec` (those for `only_arch`, when given) as a bundle in `out`, and the
    spec naming them, less the builds that failed and their rules; the failures' messages."""
    out.mkdir(parents=True, exist_ok=True)
    chosen = [b for b in spec.builds.values() if only_arch in (None, b.arch)]
    jobs_list = [
        (str(root / b.source), b.kernel, b.params, b.arch, str(out / b.name), b.variants)
        for b in chosen
    ]
    failures: list[str] = []
    built: dict[str, Build] = {}
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = pool.map(_build_one, jobs_list)
        try:
            from tqdm import tqdm

            results = tqdm(
                results, total=len(jobs_list), desc="building", unit="build", leave=False
            )
        except ImportError:
            pass
        for b, failure in zip(chosen, results, strict=True):
            if failure:
                failures.append(f"build {b.name}: {failure}")
            else:
                built[b.name] = replace(b, bundle=b.name)
    dropped = {b.name for b in chosen if b.name not in built}
    builds = {name: built.get(name, b) for name, b in spec.builds.items() if name not in dropped}
    rules = tuple(r for r in spec.rules if r.build not in dropped)
    return replace(spec, builds=builds, rules=rules), failures


def stranded(before: FamilySpec, after: FamilySpec) -> list[str]:
    """Where the rows of each left-out build go when the next rule of its bucket (the same
    sizes, dtypes and devices) is one whose build was not built (`--arch` left it out): there a
    launch fails unless MLIR is installed to compile it. One line each."""
    out = []
    for i, r in enumerate(before.rules):
        if r.build in after.builds:
            continue
        bucket = (r.when, r.dtypes, r.devices)
        nxt = [s for s in before.rules[i + 1 :] if (s.when, s.dtypes, s.devices) == bucket]
        kept = [s for s in nxt if s.build in after.builds]
        if kept and not after.builds[kept[0].build].bundle:
            where = " and ".join(r.when) or "always"
            out.append(f"the rows of {r.build} ({where}) go to {kept[0].build}, which is not built")
    return out


def cmd_family(args: argparse.Namespace) -> int:
    from tilec.ops import shipped_tables
    from tilec.runtime.family import FamilyError, read_family, repository_root
    from tilec.runtime.tuning import TuneError
    from tilec.runtime.tuning_table import read_table, tuned

    try:
        if args.action == "show":
            print(describe(read_family(args.spec)))
            return 0
        if bool(args.op) == bool(args.spec):
            raise FamilyError("tilec family build takes a SPEC file or --op NAME (one of them)")
        # the tables given, then (--op) the operation's shipped ones: their rules in this order,
        # ahead of the spec's
        tables = [(str(t), read_table(t)) for t in args.tuning]
        if args.op:
            tables += [(str(p), read_table(p)) for p in shipped_tables(args.op)]
        spec = tuned(op_spec(args.op) if args.op else read_family(args.spec),
                     [t for _, t in tables])  # fmt: skip
        if not args.output:
            raise FamilyError("tilec family build needs -o DIR (the family directory)")
        root = Path(args.root) if args.root else repository_root()
        for path, table in tables:
            if _source_hash(root / table["source"]) != table["source_hash"]:
                print(f"warning: tilec family: {path} was tuned on another version of "
                      f"{table['source']}: its builds are made from the file as it is now; "
                      "tune again to time them", file=sys.stderr)  # fmt: skip
        out = Path(args.output)
        built_spec, failures = build_family(spec, out, root, args.jobs, args.arch)
        (out / "family.json").write_text(json.dumps(built_spec.to_json(), indent=1) + "\n")
    except BrokenPipeError:  # `tilec family show ... | head`: the tool's entry point ends quietly
        raise
    except (FamilyError, TuneError, OSError) as err:
        print(f"error: tilec family: {err}", file=sys.stderr)
        return 1
    for failure in failures:
        print(f"left out (with its rules): {failure}", file=sys.stderr)
    built = sum(1 for b in built_spec.builds.values() if b.bundle)
    left = [name for name in spec.builds if name not in built_spec.builds]
    others = len(built_spec.builds) - built
    print(
        f"{out}: {built} of {len(spec.builds)} builds built"
        + (f", {others} for other targets not built" if others else "")
        + (f", {len(left)} left out" if left else "")
        + f", {len(built_spec.rules)} rules"
    )
    if left:  # after the progress bar and the diagnostics, where it is seen
        print(f"warning: tilec family: left out: {', '.join(left)}", file=sys.stderr)
    lost = stranded(spec, built_spec)
    for line in lost:
        print(f"error: tilec family: {line}", file=sys.stderr)
    return 1 if lost or (failures and args.strict) else 0


def _source_hash(path: Path) -> str:
    """The hash `tilec tune` records of a kernel's source, or "" where the file is gone."""
    from tilec.runtime.tuning import source_hash

    try:
        return source_hash(path.read_text())
    except OSError:
        return ""


def op_spec(name: str) -> FamilySpec:
    """A tilec.ops operation's own spec (cmd_family adds its shipped tuning tables)."""
    from tilec.ops import op_specs

    specs = op_specs()
    if name not in specs:
        from tilec.runtime.family import FamilyError

        raise FamilyError(f"--op {name!r}: one of {', '.join(sorted(specs))}")
    return specs[name]()


def describe(spec: FamilySpec) -> str:
    lines = [f"family {spec.name}({', '.join(n for n, _ in spec.args)})"]
    for r in spec.rules:
        b = spec.builds[r.build]
        where = " and ".join(r.when) or "always"
        types = " ".join(f"{k}:{v}" for k, v in r.dtypes.items())
        params = " ".join(f"{k}={v}" for k, v in b.params.items())
        built = "" if b.bundle else "  (not built)"
        lines.append(f"  {r.build:<24} {b.arch:<7} {types:<14} {where}")
        lines.append(f"      {b.source}:{b.kernel} {params}{built}")
    return "\n".join(lines)


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "family",
        help="build a kernel family's bundles (several builds and their dispatch rules)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("action", choices=("build", "show"))
    p.add_argument("spec", nargs="?", help="a family.json (or a family directory, for show)")
    p.add_argument("--op", help="the spec of a tilec.ops operation (softmax, layernorm, ...)")
    p.add_argument("-o", "--output", help="the family directory to write (build)")
    p.add_argument("--tuning", action="append", default=[], help="a tuning table (tilec tune)")
    p.add_argument("--arch", choices=("sm_80", "sm_90a"), help="build only this target's builds")
    p.add_argument("--root", help="where the builds' sources are (default: the repository)")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--strict", action="store_true", help="fail when a build does not compile")
    p.set_defaults(func=cmd_family)

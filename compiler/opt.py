"""tile-opt: an mlir-opt-like driver running tilec and upstream passes over `.mlir` input."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from mlir import ir

from tilec import binding
from tilec.context import make_context
from tilec.diagnostics import Diagnostic, DiagnosticError, parse_expected, render, verify_expected
from tilec.passes import PASSES
from tilec.pipeline import PipelineError, build_pass_manager

SPLIT_MARKER = "// -----"


def load_pass_plugin(path: str) -> None:
    """Import a user's Python file; its `@register`ed passes join the pass table by name."""
    file = Path(path)
    if not file.is_file():
        raise DiagnosticError([Diagnostic("error", f"pass plugin '{path}' does not exist", None)])
    spec = importlib.util.spec_from_file_location(f"tilec_plugin_{file.stem}", file)
    if spec is None or spec.loader is None:
        raise DiagnosticError([Diagnostic("error", f"cannot load pass plugin '{path}'", None)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a broken plugin is user input: report, don't crash
        message = f"pass plugin '{path}' failed to load: {type(exc).__name__}: {exc}"
        raise DiagnosticError([Diagnostic("error", message, None)]) from None


def preload_plugins(argv: list[str]) -> None:
    """Load plugins before the parser is built, so their passes get `--<name>` flags too."""
    for i, arg in enumerate(argv):
        if arg == "--load-pass-plugin" and i + 1 < len(argv):
            load_pass_plugin(argv[i + 1])
        elif arg.startswith("--load-pass-plugin="):
            load_pass_plugin(arg.split("=", 1)[1])


class _AppendPass(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None) -> None:  # noqa: ANN001
        namespace.pass_flags = [*(namespace.pass_flags or []), self.const]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tile-opt",
        description="Run tilec and upstream MLIR passes over MLIR input (an mlir-opt for tilec).",
        epilog="example: tile-opt -p 'tile-verify,canonicalize,cse' kernel.mlir",
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file ('-': stdin)")
    parser.add_argument("-o", "--output", default="-", help="output file ('-': stdout)")
    parser.add_argument(
        "-p",
        "--pass-pipeline",
        default="",
        metavar="PIPELINE",
        help="comma-separated passes, tilec and upstream mixed: 'tile-verify,canonicalize,"
        "gpu.module(convert-gpu-to-nvvm)'",
    )
    parser.add_argument("--list-passes", action="store_true", help="list tilec passes and exit")
    parser.add_argument(
        "--load-pass-plugin",
        action="append",
        default=[],
        metavar="FILE.py",
        help="import a Python file whose @register'ed passes become available by name",
    )
    parser.add_argument(
        "--split-input-file",
        action="store_true",
        help=f"split the input at '{SPLIT_MARKER}' lines and process each chunk on its own",
    )
    parser.add_argument(
        "--verify-diagnostics",
        action="store_true",
        help="check diagnostics against '// expected-error {{...}}' annotations in the input",
    )
    parser.add_argument("--print-ir-after-all", action="store_true", help="IR after each pass")
    parser.add_argument("--timing", action="store_true", help="report pass timing")
    parser.add_argument(
        "--mlir-print-op-generic", action="store_true", help="print ops in the generic form"
    )
    parser.add_argument(
        "--mlir-print-debuginfo", action="store_true", help="print locations in the output"
    )
    parser.add_argument(
        "--allow-unregistered-dialect", action="store_true", help="accept unknown ops"
    )
    passes = parser.add_argument_group("tilec passes (run in the order given)")
    for name, cls in sorted(PASSES.items()):
        passes.add_argument(
            f"--{name}", action=_AppendPass, nargs=0, const=name, help=cls.summary()
        )
    parser.set_defaults(pass_flags=[])
    return parser


def list_passes() -> str:
    width = max((len(n) for n in PASSES), default=0)
    lines = ["tilec passes:"]
    for name, cls in sorted(PASSES.items()):
        lines.append(f"  {name:<{width}}  {cls.summary()}")
        for field in cls.options():
            default = field.default if field.default is not field.default_factory else "..."
            lines.append(f"  {'':<{width}}    {field.name.replace('_', '-')}={default}")
    lines.append("Upstream MLIR passes are used by their mlir-opt names, e.g. canonicalize, cse.")
    return "\n".join(lines)


@dataclass
class Chunk:
    """One piece of the input: its text padded so line numbers match the whole file."""

    text: str
    first_line: int


def split_chunks(source: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(source, 1)]
    chunks, current, start = [], [], 1
    for number, line in enumerate(source.split("\n"), start=1):
        if line.strip() == SPLIT_MARKER:
            chunks.append(Chunk("\n" * (start - 1) + "\n".join(current), start))
            current, start = [], number + 1
            continue
        current.append(line)
    chunks.append(Chunk("\n" * (start - 1) + "\n".join(current), start))
    return chunks


def _drop_printed_op_notes(diags: list[Diagnostic]) -> list[Diagnostic]:
    # MLIR attaches "see current operation: ..." to parse/verify errors; like mlir-opt in
    # --verify-diagnostics mode we drop it (it is a debugging aid, not an expected note).
    for d in diags:
        d.notes = [n for n in d.notes if not n.message.startswith("see current operation")]
    return diags


def process_chunk(
    ctx: ir.Context, chunk: Chunk, pipeline: str, args: argparse.Namespace, file: str
) -> tuple[str | None, list[Diagnostic]]:
    """Parse and transform one chunk: (printed IR or None on failure, diagnostics)."""
    with ctx:
        try:
            module = ir.Module.parse(chunk.text)
        except ir.MLIRError as exc:
            return None, _drop_printed_op_notes(binding.error_diagnostics(exc, file))
        try:
            pm = build_pass_manager(
                ctx, pipeline, print_ir_after_all=args.print_ir_after_all, timing=args.timing
            )
        except PipelineError as exc:
            message = f"invalid pass pipeline: {exc}"
            raise DiagnosticError([Diagnostic("error", message, None)]) from None
        try:
            pm.run(module.operation)
        except ir.MLIRError as exc:
            return None, _drop_printed_op_notes(binding.error_diagnostics(exc, file))
        text = module.operation.get_asm(
            print_generic_op_form=args.mlir_print_op_generic,
            enable_debug_info=args.mlir_print_debuginfo,
            assume_verified=True,
        )
        return text, []


def run(args: argparse.Namespace) -> int:
    file = "<stdin>" if args.input == "-" else args.input
    try:
        source = sys.stdin.read() if args.input == "-" else Path(args.input).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"tile-opt: error: cannot read '{file}': {exc}", file=sys.stderr)
        return 1
    pipeline = ",".join(p for p in [args.pass_pipeline, *args.pass_flags] if p)
    outputs: list[str] = []
    failed = False
    # One context for every chunk: loading the dialects is the slow part, and chunks are
    # separate modules anyway.
    ctx = make_context(allow_unregistered=args.allow_unregistered_dialect)
    for chunk in split_chunks(source, args.split_input_file):
        try:
            text, diags = process_chunk(ctx, chunk, pipeline, args, file)
        except DiagnosticError as exc:  # a bad pipeline is fatal: report once
            print(exc.render(None), file=sys.stderr)
            return 1
        if args.verify_diagnostics:
            expected = parse_expected(chunk.text, file)
            for problem in verify_expected(expected, diags):
                print(problem, file=sys.stderr)
                failed = True
        else:
            for d in diags:
                print(render(d, source), file=sys.stderr)
            failed = failed or text is None
        if text is not None:
            outputs.append(text)
    if not args.verify_diagnostics:
        out = f"\n{SPLIT_MARKER}\n".join(o.rstrip("\n") for o in outputs) + "\n"
        if args.output == "-":
            sys.stdout.write(out)
        else:
            Path(args.output).write_text(out)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        preload_plugins(argv)
    except DiagnosticError as exc:
        print(exc.render(None), file=sys.stderr)
        return 1
    args = build_parser().parse_args(argv)
    if args.list_passes:
        print(list_passes())
        return 0
    return run(args)

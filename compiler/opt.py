"""tile-opt: mlir-opt's command line over tilec and upstream passes (`docs/tile-opt.md`).

What mlir-opt does, tile-opt does the same way: options with one dash or two, every
registered pass as a flag (nested by its anchor op), `--pass-pipeline`, input split at
`// -----` into buffers named `within split at FILE:LINE offset `, every diagnostic collected
through a handler and, with `--verify-diagnostics`, matched against `expected-*` annotations.
tilec adds `-p` (a pipeline mixing tilec and upstream passes), `--list-passes` and
`--load-pass-plugin`.
"""

from __future__ import annotations

import importlib.util
import io
import os
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path, PurePath

from mlir import ir, passmanager

from tilec import binding
from tilec.context import make_context
from tilec.diagnostics import Diagnostic, DiagnosticError, render_all
from tilec.expected import verify_expected
from tilec.options import TILE_OPT, CommandLine, CommandLineError, asm_flags, help_text
from tilec.options import parse_command_line as read_command_line
from tilec.passes import PASSES
from tilec.pipeline import PipelineError, build_pass_manager, instrument, textual_pass_manager

USAGE = "usage: tile-opt [options] [input.mlir]   (mlir-opt's options; passes are flags too)"


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


def first_sentence(doc: str | None) -> str:
    """A docstring's first sentence (to the first '. ' or the end of its first paragraph),
    joined onto one line: what `--list-passes` says a pass does."""
    paragraph = " ".join((doc or "").strip().split("\n\n")[0].split())
    end = paragraph.find(". ")
    sentence = paragraph if end < 0 else paragraph[: end + 1]
    return sentence[:-1] + "." if sentence.endswith(":") else sentence  # ':' before an example


def list_passes(width: int = 100) -> str:
    """Each tilec pass, its whole first sentence wrapped to `width` columns, and its options."""
    name_width = max((len(n) for n in PASSES), default=0)
    indent = " " * (name_width + 4)
    lines = ["tilec passes:"]
    for name, cls in sorted(PASSES.items()):
        text = textwrap.wrap(
            first_sentence(cls.__doc__), width - len(indent), break_on_hyphens=False
        ) or [""]
        lines.append(f"  {name:<{name_width}}  {text[0]}")
        lines.extend(indent + rest for rest in text[1:])
        for field in cls.options():
            default = field.default if field.default is not field.default_factory else "..."
            lines.append(f"{indent}  {field.name.replace('_', '-')}={default}")
    lines.append("Upstream MLIR passes are used by their mlir-opt names, e.g. canonicalize, cse.")
    return "\n".join(lines)


@dataclass
class Chunk:
    """One buffer of the input: its text, its name (what locations in it print) and the line
    of the whole input it starts on."""

    text: str
    name: str
    first_line: int


def split_input(source: str, name: str, marker: str | None) -> tuple[list[Chunk], list[str]]:
    """The input's buffers, split as mlir-opt splits them: at each occurrence of `marker`, a
    buffer starting right after it (so its line 1 is the rest of the marker's line). A marker
    short of its last two dashes is a near miss: warned about and not split at."""
    if marker is None:
        return [Chunk(source, name, 1)], []
    pieces = source.split(marker[:-2])
    warnings: list[str] = []
    starts = [0]  # offsets into `source` of each buffer
    offset = len(pieces[0])
    for piece in pieces[1:]:
        at = offset + len(marker) - 2
        if piece.startswith(marker[-2:]) and len(piece) > 2:
            starts.append(at + 2)
        else:
            line = source.count("\n", 0, at) + 1
            warnings.append(f"{name}:{line}: warning: near miss with file split marker")
        offset = at + len(piece)
    chunks = []
    for i, start in enumerate(starts):
        end = starts[i + 1] - len(marker) if i + 1 < len(starts) else len(source)
        line = source.count("\n", 0, start) + 1
        chunks.append(Chunk(source[start:end], f"within split at {name}:{line} offset ", line))
    return chunks, warnings


def parse_named(text: str, name: str) -> ir.Module:
    """`text` parsed as MLIR parses a file: one top-level `builtin.module` is the root, other
    top-level ops get a module made around them (aliases, bytecode and all) — with the buffer
    named `name` as mlir-opt names it. The bindings name a file's buffer by the path they are
    given and a string's buffer "-", so the text is written to a file whose path, relative to a
    scratch directory, is spelled exactly `name`, and parsed from there."""
    relative = PurePath(name)
    assert not relative.is_absolute(), name
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="tile-opt-") as scratch:
        path = Path(scratch, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.chdir(scratch)
        try:
            return ir.Module.parseFile(name)
        finally:
            os.chdir(here)


def parse_root(
    chunk: Chunk, implicit_module: bool, from_file: str | None
) -> ir.Module | ir.Operation | None:
    """The chunk's root, as mlir-opt builds it: a module (the input's own, or one made around
    its top-level ops), or with `--no-implicit-module` the one top-level op. Diagnostics go to
    the open collector; None when parsing failed. (A Module is returned as itself: it owns
    its op.)"""
    try:
        if not implicit_module:
            return ir.Operation.parse(chunk.text, source_name=chunk.name).operation
        if from_file is not None:
            return ir.Module.parseFile(from_file)
        return parse_named(chunk.text, chunk.name)
    except ir.MLIRError:
        return None


def pass_manager(ctx: ir.Context, line: CommandLine, anchor: str) -> passmanager.PassManager:
    """The pipeline of the command line: `--pass-pipeline` as mlir-opt reads it, or the pass
    flags and `-p` specs in command-line order, each nested by its anchor."""
    if line.pass_pipeline is not None:
        if line.steps:
            flag = line.steps[0].flag
            raise CommandLineError(
                f"'-pass-pipeline' can't be used with individual passes ({flag})"
            )
        pm = textual_pass_manager(ctx, line.pass_pipeline)
        instrument(pm, line)
        return pm
    elements = [
        step.text
        if step.kind == "pipeline" or not step.options
        else f"{step.text}{{{step.options}}}"
        for step in line.steps
    ]
    try:
        return build_pass_manager(ctx, ",".join(elements), flags=line, anchor=anchor)
    except PipelineError as exc:
        # MLIR names the element it does not know; a flag of that name is no option either.
        unknown = next(
            (
                s
                for s in line.steps
                if s.kind == "pass" and f"'{s.text}' does not refer" in str(exc)
            ),
            None,
        )
        if unknown is None:
            raise
        raise CommandLineError(
            f"unknown command line argument '{unknown.flag}' (no option or registered pass of "
            "that name; see 'tile-opt --help')"
        ) from None


def _drop_printed_op_notes(diags: list[Diagnostic]) -> list[Diagnostic]:
    # mlir-opt turns off "see current operation: ..." notes in --verify-diagnostics mode.
    for d in diags:
        d.notes = [n for n in d.notes if not n.message.startswith("see current operation")]
    return diags


def process_chunk(
    ctx: ir.Context, chunk: Chunk, line: CommandLine, from_file: str | None
) -> tuple[str | bytes | None, list[Diagnostic]]:
    """Parse, transform and print one buffer: (its output or None on failure, diagnostics)."""
    with binding.collect_diagnostics(ctx, chunk.name) as diags:
        owner = parse_root(chunk, not line.no_implicit_module, from_file)
        if owner is None:
            return None, diags
        root = owner.operation
        pm = pass_manager(ctx, line, root.name)
        if line.dump_pass_pipeline:
            print(f"Pass Manager:\n{pm}\n", file=sys.stderr)
        try:
            pm.run(root)
        except ir.MLIRError:
            if not any(d.severity == "error" for d in diags):
                diags.append(Diagnostic("error", "the pass pipeline failed", None))
            return None, diags
        if line.emit_bytecode:
            buffer = io.BytesIO()
            root.write_bytecode(buffer)
            return buffer.getvalue(), diags
        return root.get_asm(**asm_flags(line)), diags


def run(line: CommandLine) -> int:
    if len(line.inputs) > 1:
        raise CommandLineError(f"one input file at most, got {len(line.inputs)}: {line.inputs}")
    path = line.inputs[0] if line.inputs else "-"
    name = "<stdin>" if path == "-" else path
    try:
        source = sys.stdin.read() if path == "-" else Path(path).read_text(errors="replace")
    except OSError as exc:
        print(f"tile-opt: error: cannot read '{name}': {exc.strerror}", file=sys.stderr)
        return 1
    marker = line.split_input_file
    if marker == "":
        marker = "// -----"
    if marker is not None and len(marker) < 3:  # a near miss is the marker short of its last two
        raise CommandLineError(
            f"'--split-input-file={marker}': a split marker needs 3 characters or more "
            "(the default: // -----)"
        )
    chunks, near_misses = split_input(source, name, marker)
    for warning in near_misses:
        print(warning, file=sys.stderr)
    from_file = path if marker is None and path != "-" else None
    ctx = make_context(allow_unregistered=bool(line.allow_unregistered_dialect))
    ctx.enable_multithreading(not line.mlir_disable_threading)  # pass managers inherit it
    outputs: list[str | bytes] = []
    failed = False
    for chunk in chunks:
        with ctx:
            text, diags = process_chunk(ctx, chunk, line, from_file)
        if line.verify_diagnostics is not None:
            only_expected = line.verify_diagnostics == "only-expected"
            produced = _drop_printed_op_notes(diags)
            problems = verify_expected(chunk.text, chunk.name, produced, only_expected)
            if problems:
                print(render_all(problems, {chunk.name: chunk.text}), file=sys.stderr)
            failed = failed or bool(problems)
        else:
            if diags:
                print(render_all(diags, {chunk.name: chunk.text}), file=sys.stderr)
            failed = failed or text is None
        outputs.append(text if text is not None else "")
    if not (failed and line.o not in (None, "-")):  # mlir-opt keeps no output file on failure
        _write(outputs, line)
    return 1 if failed else 0


def _write(outputs: list[str | bytes], line: CommandLine) -> None:
    """The outputs of all buffers, joined by the output split marker as mlir-opt joins them."""
    if line.emit_bytecode:
        data = b"".join(o for o in outputs if isinstance(o, bytes))
    else:
        separator = f"{line.output_split_marker}\n" if line.split_input_file is not None else ""
        data = separator.join(o.rstrip("\n") + "\n" if o else "" for o in outputs).encode()
    if line.o in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        Path(line.o).write_bytes(data)
    except OSError as exc:
        folder = Path(line.o).parent
        why = exc.strerror or str(exc)
        if not folder.is_dir():
            why = f"its folder '{folder}' does not exist (tile-opt makes no folders)"
        raise CommandLineError(f"cannot write '-o {line.o}': {why}") from None


def _plugins(argv: list[str]) -> list[str]:
    """The plugin files named on the command line (loaded first: their passes are flags)."""
    found = []
    for i, arg in enumerate(argv):
        body = arg.lstrip("-")
        if not arg.startswith("-"):
            continue
        if body == "load-pass-plugin" and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif body.startswith("load-pass-plugin="):
            found.append(body.split("=", 1)[1])
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        for plugin in _plugins(argv):
            load_pass_plugin(plugin)
        line = read_command_line(argv, TILE_OPT)
        if line.help:
            passes = [(name, cls.summary()) for name, cls in sorted(PASSES.items())]
            print(help_text(TILE_OPT, USAGE, passes))
            return 0
        if line.version:
            from tilec import __version__

            print(f"tile-opt (tilec {__version__}) over MLIR 22's Python bindings")
            return 0
        if line.list_passes:
            print(list_passes())
            return 0
        return run(line)
    except DiagnosticError as exc:
        print(exc.render(None), file=sys.stderr)
        return 1
    except CommandLineError as exc:
        print(f"tile-opt: error: {exc}", file=sys.stderr)
        return 1
    except PipelineError as exc:
        print(f"tile-opt: error: invalid pass pipeline: {exc}", file=sys.stderr)
        return 1

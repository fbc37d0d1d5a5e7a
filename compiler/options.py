"""Every stage: the one table of options that `tile-opt` and `tilec compile` share, spelled as
mlir-opt spells them, and a command-line reader with mlir-opt's (LLVM cl's) rules.

mlir-opt's rules: a long option takes one dash or two (`-split-input-file` and
`--split-input-file`); a value follows `=` or, for options that need one, comes as the next
argument (`-o out.mlir`); a flag may be given `=true`/`=false`; every registered pass is a flag
of its own, in command-line order, with its options after `=` (`-convert-gpu-to-nvvm=has-redux=1`).
Reading this module needs no MLIR.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TILE_OPT = "tile-opt"
TILEC = "tilec"
BOTH = (TILE_OPT, TILEC)

_TRUE = ("", "true", "TRUE", "True", "1")
_FALSE = ("false", "FALSE", "False", "0")


@dataclass(frozen=True)
class Option:
    """One option. `kind`: "flag" (a bool), "value" (needs a value: `=V` or the next
    argument), "optional" (a flag that may take `=V`), "list" (a value; repeats append)."""

    name: str  # mlir-opt's spelling, without dashes
    kind: str
    help: str
    aliases: tuple[str, ...] = ()  # other spellings (tilec's older names, short forms)
    default: object = None
    metavar: str = "VALUE"
    tools: tuple[str, ...] = BOTH
    supported: bool = True  # False: accepted by name, then refused (the bindings lack it)
    integer: bool = False  # a "value" that must be a non-negative integer

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("o", "value", "output file ('-': stdout)", ("output",), "-", "FILE"),
    Option(
        "load-pass-plugin", "list", "import a Python file of @register'ed passes", (), (), "FILE.py"
    ),
    Option(
        "verify-diagnostics",
        "optional",
        "check diagnostics against the input's expected-* annotations "
        "(=only-expected: ignore diagnostics no annotation names)",
        (),
        None,
        "all",
    ),
    Option("allow-unregistered-dialect", "flag", "accept ops of unregistered dialects", (), False),
    Option("mlir-disable-threading", "flag", "run passes on one thread", (), False),
    Option(
        "verify-each",
        "flag",
        "verify the IR after each pass (=false: don't)",
        (),
        True,
        tools=(TILE_OPT,),
    ),
    # Printing the result.
    Option("mlir-print-op-generic", "flag", "print ops in the generic form", (), False),
    Option("mlir-print-debuginfo", "flag", "print locations", (), False),
    Option("mlir-pretty-debuginfo", "flag", "print locations in a readable form", (), False),
    Option(
        "mlir-print-local-scope",
        "flag",
        "print types and attributes inline (no aliases)",
        (),
        False,
    ),
    Option("mlir-print-assume-verified", "flag", "print without verifying first", (), False),
    Option("mlir-use-nameloc-as-prefix", "flag", "name SSA values after their NameLoc", (), False),
    Option("mlir-print-skip-regions", "flag", "print ops without their regions", (), False),
    Option(
        "mlir-elide-elementsattrs-if-larger",
        "value",
        "elide elements attributes with more elements than N",
        (),
        None,
        "N",
        integer=True,
    ),
    Option(
        "mlir-elide-resource-strings-if-larger",
        "value",
        "elide resource strings longer than N",
        (),
        None,
        "N",
        integer=True,
    ),
    # The pass manager's instruments.
    Option(
        "mlir-print-ir-after-all",
        "flag",
        "print the IR after each pass",
        ("print-ir-after-all",),
        False,
    ),
    Option("mlir-print-ir-before-all", "flag", "print the IR before each pass", (), False),
    Option("mlir-print-ir-after-change", "flag", "... only when the pass changed it", (), False),
    Option("mlir-print-ir-after-failure", "flag", "print the IR after a pass fails", (), False),
    Option(
        "mlir-print-ir-module-scope", "flag", "print the whole module, not the pass's op", (), False
    ),
    Option(
        "mlir-print-ir-tree-dir", "value", "write IR printed by passes into DIR", (), None, "DIR"
    ),
    Option("mlir-timing", "flag", "report pass timing", ("timing",), False),
    Option("mlir-pass-statistics", "flag", "report pass statistics", (), False),
    # tile-opt alone.
    Option(
        "p",
        "list",
        "tilec's pipeline shorthand: comma-separated passes, tilec and upstream "
        "mixed, anchors found as for pass flags ('tile-verify,canonicalize')",
        (),
        (),
        "PIPELINE",
        (TILE_OPT,),
    ),
    Option(
        "pass-pipeline",
        "value",
        "a textual pipeline, as mlir-opt takes it: 'builtin.module(func.func(cse))'",
        (),
        None,
        "PIPELINE",
        (TILE_OPT,),
    ),
    Option(
        "split-input-file",
        "optional",
        "process each chunk between '// -----' lines (=MARKER: another marker) on its own",
        (),
        None,
        "MARKER",
        (TILE_OPT,),
    ),
    Option(
        "output-split-marker",
        "value",
        "the separator between chunks in the output",
        (),
        "// -----",
        "MARKER",
        (TILE_OPT,),
    ),
    Option(
        "no-implicit-module",
        "flag",
        "the input's one top-level op is the root, not a module made around it",
        (),
        False,
        tools=(TILE_OPT,),
    ),
    Option(
        "dump-pass-pipeline",
        "flag",
        "print the pipeline before running it",
        (),
        False,
        tools=(TILE_OPT,),
    ),
    Option(
        "emit-bytecode", "flag", "write MLIR bytecode instead of text", (), False, tools=(TILE_OPT,)
    ),
    Option("list-passes", "flag", "list tilec passes and exit", (), False, tools=(TILE_OPT,)),
    Option(
        "help", "flag", "show this help and exit", ("h", "help-hidden"), False, tools=(TILE_OPT,)
    ),
    Option("version", "flag", "print the version and exit", (), False, tools=(TILE_OPT,)),
    # mlir-opt options the Python bindings cannot provide: named, so the error says so.
    *(
        Option(
            name,
            "optional",
            "not available through MLIR's Python bindings",
            (),
            None,
            tools=(TILE_OPT,),
            supported=False,
        )
        for name in (
            "mlir-print-ir-before",
            "mlir-print-ir-after",
            "mlir-print-value-users",
            "mlir-print-unique-ssa-ids",
            "mlir-print-stacktrace-on-diagnostic",
            "mlir-print-op-on-diagnostic",
            "mlir-print-elementsattrs-with-hex-if-larger",
            "mlir-pass-pipeline-crash-reproducer",
            "run-reproducer",
            "verify-roundtrip",
            "show-dialects",
            "irdl-file",
            "mlir-debug-counter",
            "debug",
            "debug-only",
        )
    ),
)


def options_for(tool: str) -> dict[str, Option]:
    """Every spelling (name and aliases) of the options `tool` takes."""
    table: dict[str, Option] = {}
    for opt in OPTIONS:
        if tool in opt.tools:
            for spelling in (opt.name, *opt.aliases):
                table[spelling] = opt
    return table


class CommandLineError(ValueError):
    """A command line that mlir-opt's rules reject (the message says what to change)."""


@dataclass(frozen=True)
class Step:
    """One piece of the pipeline, in command-line order: a `-p` spec or a pass flag."""

    kind: str  # "pipeline" (a -p value) or "pass" (a flag naming a pass)
    text: str  # the -p spec, or the pass name
    options: str = ""  # a pass flag's `=...` text
    flag: str = ""  # the argument as written, for errors


@dataclass
class CommandLine:
    values: dict[str, object]
    inputs: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    def __getattr__(self, name: str) -> object:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None


def _flag_value(opt: Option, value: str | None, arg: str) -> bool:
    if value is None or value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise CommandLineError(f"'{arg}': '{opt.name}' takes true or false, not '{value}'")


def parse_command_line(argv: list[str], tool: str) -> CommandLine:
    """Read `argv` by mlir-opt's rules. An argument that names no option of `tool` becomes a
    pass flag (`Step("pass", ...)`); whether such a pass exists is decided when the pipeline
    is built."""
    table = options_for(tool)
    line = CommandLine(
        {
            o.dest: (list(o.default) if o.kind == "list" else o.default)
            for o in OPTIONS
            if tool in o.tools
        }
    )
    args = iter(argv)
    for arg in args:
        if arg == "--":
            line.inputs.extend(args)
            break
        if arg == "-" or not arg.startswith("-"):
            line.inputs.append(arg)
            continue
        body = arg[2:] if arg.startswith("--") else arg[1:]
        name, eq, value = body.partition("=")
        opt = table.get(name)
        if opt is None:
            line.steps.append(Step("pass", name, value if eq else "", arg))
            continue
        if not opt.supported:
            raise CommandLineError(
                f"'{arg}': mlir-opt's '-{opt.name}' is not available in "
                f"{tool} (MLIR's Python bindings do not provide it)"
            )
        if opt.kind == "flag":
            line.values[opt.dest] = _flag_value(opt, value if eq else None, arg)
            continue
        if opt.kind == "optional":
            line.values[opt.dest] = value if eq else ""
            continue
        if not eq:
            value = next(args, None)
            if value is None:
                raise CommandLineError(f"'{arg}' needs a value: -{opt.name}={opt.metavar}")
        if opt.kind == "list":
            line.values[opt.dest].append(value)
            if opt.name == "p":
                line.steps.append(Step("pipeline", value, flag=arg))
        else:
            line.values[opt.dest] = count(opt, value) if opt.integer else value
    return line


def count(opt: Option, value: str) -> int:
    """The value of an integer option, or a CommandLineError saying what it takes."""
    if not value.strip().isdigit():
        raise CommandLineError(f"'-{opt.name}' takes a count ({opt.metavar} >= 0), not '{value}'")
    return int(value)


def flag(flags: object | None, dest: str) -> object:
    """The value of option `dest` in `flags` (a CommandLine or an argparse namespace); the
    option's default when `flags` is None or lacks it."""
    default = next((o.default for o in OPTIONS if o.dest == dest), None)
    return default if flags is None else getattr(flags, dest, default)


def asm_flags(flags: object | None) -> dict[str, object]:
    """`Operation.get_asm` keywords from the printing options (mlir-opt's `--mlir-print-*`)."""
    limit = flag(flags, "mlir_elide_elementsattrs_if_larger")
    resources = flag(flags, "mlir_elide_resource_strings_if_larger")
    pretty = bool(flag(flags, "mlir_pretty_debuginfo"))
    return {
        "large_elements_limit": int(limit) if limit is not None else None,
        "large_resource_limit": int(resources) if resources is not None else None,
        "enable_debug_info": bool(flag(flags, "mlir_print_debuginfo")) or pretty,
        "pretty_debug_info": pretty,
        "print_generic_op_form": bool(flag(flags, "mlir_print_op_generic")),
        "use_local_scope": bool(flag(flags, "mlir_print_local_scope")),
        "use_name_loc_as_prefix": bool(flag(flags, "mlir_use_nameloc_as_prefix")),
        "assume_verified": True,
        "skip_regions": bool(flag(flags, "mlir_print_skip_regions")),
    }


def help_text(tool: str, usage: str, passes: list[tuple[str, str]]) -> str:
    """`--help`: every option of `tool`, then the tilec passes (each is a flag too)."""
    lines = [usage, "", "options (one dash or two):"]
    for opt in OPTIONS:
        if tool not in opt.tools or not opt.supported:
            continue
        value = f"={opt.metavar}" if opt.kind in ("value", "list") else ""
        if opt.kind == "optional":
            value = f"[={opt.metavar}]"
        spelled = ", ".join(f"-{s}" for s in (opt.name, *opt.aliases))
        lines.append(f"  {spelled}{value}")
        lines.append(f"      {opt.help}")
    lines.append("")
    lines.append("passes (each registered pass is a flag: -NAME or -NAME='OPTIONS'):")
    for name, summary in passes:
        lines.append(f"  -{name:<28} {summary}")
    lines.append(
        "  ...and every upstream MLIR pass by its mlir-opt name (-canonicalize, -cse, ...)"
    )
    return "\n".join(lines)


def add_to_argparse(parser: object, tool: str = TILEC) -> None:
    """Register the shared options on an argparse parser (`tilec compile`), in both spellings.

    argparse cannot take a value only after `=`, so an "optional" option is a plain flag here
    (`--verify-diagnostics`; its `=only-expected` form is tile-opt's)."""
    for opt in OPTIONS:
        if tool not in opt.tools or not opt.supported or opt.name == "o":
            continue
        spellings = []
        for s in (opt.name, *opt.aliases):
            spellings += [f"--{s}", f"-{s}"]
        kwargs: dict[str, object] = {"dest": opt.dest, "help": opt.help}
        if opt.kind == "flag":
            kwargs.update(action="store_true")
        elif opt.kind == "optional":
            kwargs.update(action="store_const", const="", default=None)
        elif opt.kind == "list":
            kwargs.update(action="append", default=[], metavar=opt.metavar)
        else:
            kwargs.update(default=opt.default, metavar=opt.metavar)
        if opt.integer:
            kwargs.update(type=_argparse_count(opt))
        parser.add_argument(*spellings, **kwargs)


def _argparse_count(opt: Option) -> object:
    """An argparse `type` reading an integer option (argparse prints the error's text)."""
    import argparse

    def read(value: str) -> int:
        try:
            return count(opt, value)
        except CommandLineError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return read

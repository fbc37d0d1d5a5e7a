"""Every stage: runs the stage ladder from a `.tile` (or any stage's `.mlir`) up to `--emit`."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from mlir import ir

from tilec import backend, binding
from tilec.context import make_context
from tilec.contract import Collector, KernelContract, Passport, check, needs_banks
from tilec.diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError
from tilec.options import asm_flags, flag
from tilec.pipeline import PipelineError, run_pipeline
from tilec.stages import BY_KEY, STAGES, position, stage_of_input
from tilec.targets import TARGETS, has_clusters

ARCHES = TARGETS


@dataclass
class CompileOptions:
    emit: str = "ptx"
    arch: str | None = None  # None: the kernel's own target(...)
    params: dict[str, str] = field(default_factory=dict)  # -D NAME=VALUE overrides
    start: str | None = None  # the stage the input holds; None: from the file name
    dump_dir: Path | None = None
    pipelines: dict[str, str] = field(default_factory=dict)  # stage key -> replacement pipeline
    flags: object | None = None  # mlir-opt's options (tilec.options): instruments, printing
    opt_level: int = 3
    ptx_via: str = "llvmlite"  # "mlir": gpu-module-to-binary, the cross-check path
    contracts: bool = True  # check each kernel's contract(...) once the compile reaches ptx
    passport: bool = False  # collect every fact (tilec report), ptxas's and the banks' too
    need_ptxas: bool = False  # a contract term ptxas decides is an error without it (tilec check)


@dataclass
class Artifact:
    stage: str
    value: object  # str for text stages, bytes for cubin, ir.Module for MLIR stages
    arch: str | None
    warnings: list[Diagnostic] = field(default_factory=list)  # from the frontend's checks
    contracts: dict[str, KernelContract] | None = None  # from the frontend: kernel -> contract
    passports: list[Passport] = field(default_factory=list)  # what each kernel compiled to

    def as_bytes(self, flags: object | None = None) -> bytes:
        """The artifact as written out; MLIR stages printed as `flags` (`--mlir-print-*`) say."""
        if isinstance(self.value, bytes):
            return self.value
        if isinstance(self.value, ir.Module):
            op = self.value.operation
            text = str(op) if flags is None else op.get_asm(**asm_flags(flags))
            return (text + "\n").encode()
        text = str(self.value)
        return (text if text.endswith("\n") else text + "\n").encode()


def fail(message: str, notes: tuple[str, ...] = ()) -> DiagnosticError:
    return DiagnosticError(
        [Diagnostic("error", message, None, [Diagnostic("note", n, None) for n in notes])]
    )


_TARGET_ATTR = re.compile(r'tile\.target\s*=\s*"(sm_\w+)"')


def _target_in_ir(module: ir.Module) -> str | None:
    m = _TARGET_ATTR.search(str(module.operation))
    return m.group(1) if m else None


# PTX names its target in `.target sm_80`; LLVM IR in a function's "target-cpu"="sm_80".
_TARGET_TEXT = re.compile(r'^\s*\.target\s+(sm_\w+)|"target-cpu"="(sm_\w+)"', re.M)


def _target_in_text(text: str, path: str) -> str | None:
    m = _TARGET_TEXT.search(text)
    if m is None:
        return None
    arch = m.group(1) or m.group(2)
    if arch not in ARCHES:
        raise fail(
            f"'{path}' targets {arch}, which tilec does not build for",
            (f"targets: {', '.join(ARCHES)}; pass --arch to choose one",),
        )
    return arch


def _dump(options: CompileOptions, stem: str, artifact: Artifact) -> None:
    if options.dump_dir is None:
        return
    target = options.dump_dir / f"{stem}.{BY_KEY[artifact.stage].ext}"
    try:
        options.dump_dir.mkdir(parents=True, exist_ok=True)
        target.write_bytes(artifact.as_bytes(options.flags))
    except OSError as exc:
        is_file = options.dump_dir.exists() and not options.dump_dir.is_dir()
        why = "it is a file, not a directory" if is_file else (exc.strerror or str(exc))
        raise fail(
            f"--dump-dir '{options.dump_dir}': cannot write '{target.name}' there: {why}",
            ("name a directory (it is made if missing) or leave --dump-dir out",),
        ) from None


# The stages an input may hold (`--from`): `ast` is a printout, a `cubin` the last stage.
INPUT_STAGES = tuple(s.key for s in STAGES if s.kind in ("mlir", "llvm-ir", "ptx"))


def _read_input(path: str) -> bytes:
    """The input's bytes; a missing file, a directory or an unreadable one is an error."""
    file = Path(path)
    if not file.exists():
        raise fail(f"'{path}' does not exist", (f"relative paths start at {Path.cwd()}",))
    if file.is_dir():
        raise fail(
            f"'{path}' is a directory, not a file",
            ("name one file; 'tilec check' and 'tilec build' take folders of .tile files",),
        )
    try:
        return file.read_bytes()
    except OSError as exc:
        raise fail(f"cannot read '{path}': {exc.strerror or exc}") from None


def _start_stage(path: str, given: str | None) -> str:
    """The stage the input holds: `--from`'s (checked) or the one its name says."""
    if given is not None:
        if given not in INPUT_STAGES:
            why = (
                "unknown stage"
                if given not in BY_KEY
                else f"tilec cannot read the {given} stage back"
            )
            raise fail(
                f"--from {given}: {why}",
                (
                    f"--from takes {', '.join(INPUT_STAGES)}; "
                    "a .tile source needs no --from (name it k.tile)",
                ),
            )
        return given
    start = stage_of_input(path)
    if start is None:
        raise fail(
            f"cannot tell which stage '{path}' holds",
            ("name it k.tile, k.<stage>.mlir, k.ll or k.ptx, or pass --from STAGE",),
        )
    return start


# PTX opens with `.version` and names its `.target`; ptxas and the driver reject any other text.
_PTX_HEADER = (re.compile(r"^\s*\.version\s+\d+\.\d+", re.M), re.compile(r"^\s*\.target\s", re.M))


def _check_text_input(text: str, path: str, stage: str) -> None:
    """A `.ptx` input must be PTX: it is passed on as it is (to stdout, ptxas, a bundle)."""
    if stage == "ptx" and not all(p.search(text) for p in _PTX_HEADER):
        raise fail(
            f"'{path}' holds no PTX: it has no '.version' and '.target' directives",
            ("give PTX as tilec or LLVM's NVPTX backend writes it (tilec compile k.tile)",),
        )


def _frontend(source: bytes, file: str, options: CompileOptions, ctx: ir.Context) -> Artifact:
    from tilec import frontend  # imported on demand: `tilec layout` and tile-opt don't need it
    from tilec.frontend.lexer import decode_source

    text = decode_source(source, file)  # invalid UTF-8 is a located error
    tree = frontend.parse_source(text, file)
    checked = frontend.check(tree, options.params)
    _check_arch_override(checked, options.arch)
    if options.emit == "ast":
        return Artifact(
            "ast", frontend.dump_ast(tree), frontend.target_of(checked), checked.warnings
        )
    from tilec.frontend.irgen import irgen  # the generator itself, not the package attribute

    with ctx:
        module = irgen(checked, ctx)
    contracts = {
        k.node.name: KernelContract(k.node.name, k.target, math.prod(k.threads), k.contract)
        for k in checked.kernels
    }
    return Artifact("tile", module, frontend.target_of(checked), checked.warnings, contracts)


def _check_arch_override(checked: object, arch: str | None) -> None:
    """`--arch` may build a kernel for a newer target than its target(...), never an older
    one: an sm_90a kernel's TMA, mbarrier and wgmma do not exist on sm_80 (LLVM would abort).
    A kernel of `cluster(S)`, S > 1, needs a target with clusters (its own, or --arch's)."""
    diags = DiagnosticEngine()
    for k in checked.kernels:
        built = arch or k.target
        if k.cluster > 1 and not has_clusters(built):
            having = " or ".join(t for t in TARGETS if has_clusters(t))
            diags.error(
                f"cluster({k.cluster}) needs target {having}; kernel '{k.node.name}' is built "
                f"for {built}" + ("" if arch else " (pass --arch, or change its target(...))"),
                k.node.clause("cluster").span,
            )
        if arch is not None and TARGETS.index(arch) < TARGETS.index(k.target):
            clause = k.node.clause("target")
            diags.error(
                f"kernel '{k.node.name}' targets {k.target}, which --arch {arch} predates: "
                f"build it for {k.target} or newer",
                clause.span if clause is not None else k.node.span,
            )
    diags.raise_if_errors()


def _collector(artifact: Artifact, path: str, options: CompileOptions) -> Collector | None:
    """What reads each stage for the contracts: only a `.tile` compiled to ptx or past it."""
    if artifact.contracts is None or position(options.emit) < position("ptx"):
        return None
    arch = artifact.arch
    kernels = {n: replace(k, target=arch or k.target) for n, k in artifact.contracts.items()}
    return Collector(kernels, path, banks=options.passport or needs_banks(kernels))


def _mlir_step(artifact: Artifact, key: str, options: CompileOptions) -> Artifact:
    stage = BY_KEY[key]
    pipeline = options.pipelines.get(key, stage.pipeline) or ""
    module = artifact.value
    try:
        run_pipeline(module, pipeline, options.flags)
    except PipelineError as exc:
        raise fail(f"invalid pipeline for stage '{key}': {exc}") from None
    return Artifact(key, module, artifact.arch)


def _ptx_via_mlir(artifact: Artifact) -> Artifact:
    """gpu → ptx in one step through MLIR's gpu-module-to-binary{format=isa}."""
    if artifact.arch is None:
        raise fail("no target: the input names none; pass --arch sm_80 or --arch sm_90a")
    try:
        ptx = backend.ptx_via_mlir(artifact.value, artifact.arch)
    except backend.BackendError as exc:
        raise fail(str(exc)) from None
    return Artifact("ptx", ptx, artifact.arch, artifact.warnings)


def _step(artifact: Artifact, key: str, options: CompileOptions) -> Artifact:
    """Produce stage `key` from the artifact of the stage before it, as the stage table says:
    an `mlir` stage runs its pipeline; the others (below) need a target."""
    stage = BY_KEY[key]
    if stage.kind == "mlir":
        return _mlir_step(artifact, key, options)
    arch = artifact.arch
    if arch is None:
        raise fail("no target: the input names none; pass --arch sm_80 or --arch sm_90a")
    try:
        return Artifact(key, _PRODUCE[stage.kind](artifact, key, arch, options), arch)
    except backend.BackendError as exc:
        raise fail(str(exc)) from None


# How each non-MLIR kind of stage is made from the stage before it (the stage table's `kind`).
_PRODUCE: dict[str, Callable[[Artifact, str, str, CompileOptions], object]] = {
    # the stage's pipeline (to the LLVM dialect), then the translation to LLVM IR text
    "llvm-ir": lambda a, key, arch, o: backend.to_llvm_ir(_mlir_step(a, key, o).value, arch),
    "ptx": lambda a, key, arch, o: backend.emit_ptx(a.value, arch, o.opt_level),
    "binary": lambda a, key, arch, o: backend.assemble(a.value, arch),
}


def compile_file(
    path: str, options: CompileOptions, on_stage: Callable[[Artifact], None] | None = None
) -> Artifact:
    """Compile `path` up to `options.emit`; raises DiagnosticError for every user-facing error.

    `on_stage` sees every stage's artifact as it is produced (MLIR modules are changed in
    place by the next stage: copy what you keep).
    """
    if options.emit not in BY_KEY:
        raise fail(f"unknown stage '{options.emit}'", (f"stages: {', '.join(BY_KEY)}",))
    if options.arch is not None and options.arch not in ARCHES:
        raise fail(f"unknown --arch '{options.arch}'", (f"targets: {', '.join(ARCHES)}",))
    source = _read_input(path)
    start = _start_stage(path, options.start)
    stem = Path(path).name.split(".")[0]
    ctx = make_context(allow_unregistered=bool(flag(options.flags, "allow_unregistered_dialect")))
    ctx.enable_multithreading(not flag(options.flags, "mlir_disable_threading"))
    if start == "source":
        artifact = _frontend(source, path, options, ctx)
    elif BY_KEY[start].kind == "mlir":
        with ctx:
            try:
                module = ir.Module.parse(source.decode("utf-8", errors="replace"))
            except ir.MLIRError as exc:
                raise DiagnosticError(binding.error_diagnostics(exc, path)) from None
        artifact = Artifact(start, module, None)
        artifact.arch = _target_in_ir(module)
    else:
        text = source.decode("utf-8", errors="replace")
        _check_text_input(text, path, start)
        arch = None if options.arch is not None else _target_in_text(text, path)
        artifact = Artifact(start, text, arch)
    if options.arch is not None:
        artifact.arch = options.arch
    if position(artifact.stage) > position(options.emit):
        raise fail(f"the input already holds stage '{artifact.stage}', past --emit={options.emit}")
    _dump(options, stem, artifact)
    if on_stage is not None:
        on_stage(artifact)
    # Warnings and remarks of the passes (MLIR's and Python passes' alike) join the frontend's.
    warnings = artifact.warnings
    collector = _collector(artifact, path, options)
    with ctx, binding.collect_diagnostics(ctx, path, errors=False) as from_passes:
        try:
            while artifact.stage != options.emit:
                if options.ptx_via == "mlir" and artifact.stage == "gpu" and options.emit == "ptx":
                    artifact = _ptx_via_mlir(artifact)  # skips nvvm and llvm: MLIR does both
                else:
                    artifact = _step(artifact, STAGES[position(artifact.stage) + 1].key, options)
                _dump(options, stem, artifact)
                if on_stage is not None:
                    on_stage(artifact)
                if collector is not None:
                    collector(artifact)
        except ir.MLIRError as exc:
            errors = binding.error_diagnostics(exc, path)
            raise DiagnosticError([*warnings, *from_passes, *errors]) from None
    artifact.warnings = [*warnings, *from_passes]
    if collector is not None:
        try:
            artifact.passports, unchecked = check(
                collector, artifact.arch, options.contracts, options.passport, options.need_ptxas
            )
        except DiagnosticError as exc:
            exc.diagnostics[:0] = artifact.warnings
            raise
        artifact.warnings += unchecked
        artifact.contracts = collector.kernels
    return artifact

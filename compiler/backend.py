"""Stages nvvm → llvm → ptx → cubin: GPU-dialect lowering, LLVM IR translation, PTX and ptxas."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlir import ir, passmanager
from mlir.dialects import llvm as mlir_llvm

from tilec.stages import LLVM_PIPELINE, NVVM_PIPELINE
from tilec.targets import TABLE

if TYPE_CHECKING:
    import llvmlite.binding as llvm

STAGE_PIPELINES: dict[str, str] = {"nvvm": NVVM_PIPELINE, "llvm": LLVM_PIPELINE}
GPU_TO_LLVM_PIPELINE = f"builtin.module({NVVM_PIPELINE}, {LLVM_PIPELINE})"

TRIPLE = "nvptx64-nvidia-cuda"
ARCH_FEATURES: dict[str, str] = {name: t.ptx_features for name, t in TABLE.items()}


class BackendError(RuntimeError):
    """A failure below the MLIR pipeline: translation, LLVM verification, PTX or ptxas."""


def _check_arch(arch: str) -> str:
    if arch not in ARCH_FEATURES:
        raise ValueError(
            f"arch: unsupported target {arch!r}; expected one of {sorted(ARCH_FEATURES)}"
        )
    return ARCH_FEATURES[arch]


def lower(module: ir.Module, stage: str = "llvm") -> ir.Module:
    """Runs the gpu → `stage` pipeline ('nvvm' or 'llvm') on `module` in place and returns it."""
    if stage not in STAGE_PIPELINES:
        raise ValueError(f"stage: expected one of {list(STAGE_PIPELINES)}, got {stage!r}")
    parts = [NVVM_PIPELINE] if stage == "nvvm" else [NVVM_PIPELINE, LLVM_PIPELINE]
    with module.context:
        passmanager.PassManager.parse(f"builtin.module({', '.join(parts)})").run(module.operation)
    return module


def _gpu_modules(module: ir.Module) -> list[ir.Operation]:
    return [op.operation for op in module.body.operations if op.operation.name == "gpu.module"]


def _single_gpu_module(module: ir.Module, name: str | None) -> ir.Operation:
    found = _gpu_modules(module)
    if name is not None:
        found = [op for op in found if ir.StringAttr(op.attributes["sym_name"]).value == name]
    if len(found) != 1:
        what = f"named {name!r}" if name else "in the module"
        raise BackendError(f"expected exactly one gpu.module {what}, found {len(found)}")
    return found[0]


@cache
def _llvm() -> Any:
    """llvmlite's binding, imported when first needed: loading its LLVM takes 60-300 ms that
    a compile stopping before the `llvm` stage (most lit tests) does not need."""
    import llvmlite.binding

    return llvmlite.binding


def _target_machine(arch: str, opt_level: int = 3) -> llvm.TargetMachine:
    features = _check_arch(arch)
    llvm = _llvm()
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # 32-bit shared (and local, const) pointers: a shared address then takes one register, not
    # two, which is what lets a 64×64-per-warp mma.sync tile keep its fragments in registers.
    llvm.set_option("", "--nvptx-short-ptr")
    # SimplifyCFG would sink an instruction both arms of an if end with into the join: the edge
    # version of a load ends with the same vector load as the fast version's last chunk, and
    # sinking it split the fast version's loads over two blocks (softmax: 0.95 -> 0.84 of the
    # copy ceiling). Off, the PTX of every other configuration is unchanged (docs/passes.md).
    llvm.set_option("", "--simplifycfg-sink-common=false")
    # Loop strength reduction searches formulae for every address in a loop; with 32-bit shared
    # pointers the SM80 GEMM's main loop made it take 0.3 s of the compile. Bounded at 10000
    # (LLVM's default: 65535) code generation takes 0.12 s less and every kernel's PTX stays
    # byte-identical (bench/compile_time.py's 81 configurations; 5000 changed 13 of them).
    llvm.set_option("", "--lsr-complexity-limit=10000")
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=features, opt=opt_level)


def to_llvm_ir(module: ir.Module, arch: str, gpu_module: str | None = None) -> str:
    """LLVM IR text of the (single, or named) gpu.module of an `llvm`-stage module.

    Kernels keep their `ptx_kernel` calling convention from `nvvm.kernel`, so PTX gets `.entry`.
    """
    op = _single_gpu_module(module, gpu_module)
    notes: dict[str, list[tuple[str, int]]] = {}  # kernel -> its !nvvm.annotations
    with module.context:
        # "target-cpu" on each kernel names the target in the .ll, so it compiles on alone.
        for f in op.regions[0].blocks[0].operations:
            if f.operation.name == "llvm.func" and len(f.regions[0].blocks):
                f.attributes["target_cpu"] = ir.StringAttr.get(arch)
                name = ir.StringAttr(f.attributes["sym_name"]).value
                notes[name] = kernel_notes(f.attributes)
        try:
            text = mlir_llvm.translate_module_to_llvmir(op)
        except Exception as err:  # the binding raises a bare Exception with MLIR's diagnostic
            raise BackendError(f"translation to LLVM IR failed: {err}") from err
    layout = str(_target_machine(arch).target_data)
    header = f'target datalayout = "{layout}"\ntarget triple = "{TRIPLE}"\n'
    # Keep the ModuleID/source_filename lines first, as LLVM prints them.
    lines = text.splitlines(keepends=True)
    cut = next((i for i, line in enumerate(lines) if not line.startswith(("; ", "source_"))), 0)
    return "".join(lines[:cut]) + header + "".join(lines[cut:]) + annotations(text, notes)


def kernel_notes(attributes: Any) -> list[tuple[str, int]]:
    """A kernel's `!nvvm.annotations` from its `tile.*` attributes: `cluster(S)` its cluster
    shape (S, 1, 1), for `.reqnctapercluster S, 1, 1` in the PTX (launched as it is, its blocks
    form clusters); `blocks_per_sm(B)` "minctasm", for `.minnctapersm B` (ptxas keeps the
    registers a thread under what B blocks leave)."""
    notes: list[tuple[str, int]] = []
    if "tile.cluster" in attributes:
        size = ir.IntegerAttr(attributes["tile.cluster"]).value
        notes += [(f"cluster_dim_{axis}", e) for axis, e in zip("xyz", (size, 1, 1), strict=True)]
    if "tile.blocks_per_sm" in attributes:
        notes.append(("minctasm", ir.IntegerAttr(attributes["tile.blocks_per_sm"]).value))
    return notes


def annotations(text: str, notes: dict[str, list[tuple[str, int]]]) -> str:
    """The `!nvvm.annotations` metadata of `notes` (kernel -> (key, value) pairs), numbered past
    the LLVM IR's own metadata. MLIR's gpu-to-nvvm drops a gpu.func's `nvvm.cluster_dim`, and
    llvmlite's NVPTX backend reads these annotations, not the newer function attributes."""
    if not any(notes.values()):
        return ""
    if "!nvvm.annotations" in text:
        raise BackendError("the LLVM IR has nvvm.annotations already; kernel notes not added")
    first = max((int(n) for n in re.findall(r"^!(\d+) =", text, re.M)), default=-1) + 1
    nodes, lines = [], []
    for kernel, pairs in sorted(notes.items()):
        for key, value in pairs:
            n = first + len(nodes)
            nodes.append(f"!{n}")
            lines.append(f'!{n} = !{{ptr @{kernel}, !"{key}", i32 {value}}}\n')
    return f"!nvvm.annotations = !{{{', '.join(nodes)}}}\n" + "".join(lines)


def libdevice_path() -> Path | None:
    """libdevice.10.bc from $CUDA_HOME, or beside the ptxas on PATH; None if neither has one."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    ptxas = shutil.which("ptxas")
    if ptxas:
        roots.append(str(Path(ptxas).resolve().parent.parent))
    roots.append("/usr/local/cuda")
    for root in filter(None, roots):
        candidate = Path(root, "nvvm", "libdevice", "libdevice.10.bc")
        if candidate.is_file():
            return candidate
    return None


def _link_libdevice(mod: llvm.ModuleRef) -> None:
    """Links libdevice when math lowered to `__nv_*` calls, then internalises what it brought."""
    wanted = {f.name for f in mod.functions if f.is_declaration and f.name.startswith("__nv_")}
    if not wanted:
        return
    llvm = _llvm()
    path = libdevice_path()
    if path is None:
        raise BackendError(
            f"kernel calls {sorted(wanted)} but libdevice.10.bc was not found (set CUDA_HOME)"
        )
    lib = llvm.parse_bitcode(path.read_bytes())
    lib.triple, lib.data_layout = mod.triple, mod.data_layout
    mod.link_in(lib)
    # Internal linkage lets global DCE drop the ~500 libdevice functions the kernel does not use.
    for fn in mod.functions:
        if not fn.is_declaration and fn.name.startswith("__nv_"):
            fn.linkage = llvm.Linkage.internal


def emit_ptx(llvm_ir: str, arch: str, opt_level: int = 3) -> str:
    """PTX for `arch` from LLVM IR text: parse, verify, optimise (new pass manager), emit."""
    tm = _target_machine(arch, opt_level)
    llvm = _llvm()
    try:
        mod = llvm.parse_assembly(llvm_ir)
        mod.verify()
    except RuntimeError as err:
        raise BackendError(f"invalid LLVM IR: {err}") from err
    mod.triple = TRIPLE
    mod.data_layout = str(tm.target_data)
    _link_libdevice(mod)
    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    builder = llvm.create_pass_builder(tm, pto)
    builder.getModulePassManager().run(mod, builder)
    return tm.emit_assembly(mod)


def _unescape_mlir_string(text: str) -> str:
    """Undoes MLIR's string-attribute escaping (`\\0A`, `\\09`, `\\22`, `\\\\`)."""
    return re.sub(
        r"\\([0-9A-Fa-f]{2}|\\|\")",
        lambda m: m.group(1) if len(m.group(1)) == 1 else chr(int(m.group(1), 16)),
        text,
    )


def ptx_via_mlir(module: ir.Module, arch: str) -> str:
    """PTX through MLIR's own `gpu-module-to-binary{format=isa}`: the cross-check path.

    Works on a copy of `module` (any stage from gpu to llvm); attaches an `#nvvm.target` for
    `arch` when the gpu.module has none.
    """
    features = _check_arch(arch)
    with module.context:
        copy = ir.Module.parse(str(module))
        _single_gpu_module(copy, None)
        attach = ""
        if "targets" not in _gpu_modules(copy)[0].attributes:
            attach = f"nvvm-attach-target{{chip={arch} features={features} O=3}}, "
        spec = (
            f"builtin.module({attach}{NVVM_PIPELINE}, {LLVM_PIPELINE}, "
            "gpu-module-to-binary{format=isa})"
        )
        passmanager.PassManager.parse(spec).run(copy.operation)
        found = re.search(r'assembly = "((?:[^"\\]|\\.)*)"', str(copy))
    if not found:
        raise BackendError("gpu-module-to-binary produced no #gpu.object assembly")
    return _unescape_mlir_string(found.group(1))


@dataclass(frozen=True)
class ResourceUsage:
    """What `ptxas -v` reports for one entry (or the worst over all entries)."""

    name: str
    registers: int = 0
    spill_stores: int = 0  # bytes
    spill_loads: int = 0  # bytes
    shared_bytes: int = 0  # static shared memory
    stack_frame: int = 0  # bytes
    barriers: int = 0
    serialized: int = 0  # ptxas's C7520 notes: wgmma.mma_async serialized (a large slowdown)


def _ptxas(ptx: str, arch: str, extra: list[str]) -> tuple[bytes, str]:
    _check_arch(arch)
    exe = shutil.which("ptxas")
    if exe is None:
        raise BackendError("ptxas not found on PATH (install the CUDA toolkit or nvidia-cuda-nvcc)")
    with tempfile.TemporaryDirectory(prefix="tilec-ptxas-") as tmp:
        src, out = Path(tmp, "k.ptx"), Path(tmp, "k.cubin")
        src.write_text(ptx)
        proc = subprocess.run(
            [exe, f"-arch={arch}", *extra, str(src), "-o", str(out)], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise BackendError(f"ptxas failed for {arch}:\n{proc.stderr.strip()}")
        return out.read_bytes(), proc.stdout + proc.stderr


_FN_RE = re.compile(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?")
_NUM = {
    "stack_frame": re.compile(r"(\d+) bytes stack frame"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "registers": re.compile(r"Used (\d+) registers"),
    "barriers": re.compile(r"used (\d+) barriers"),
    "shared_bytes": re.compile(r"(\d+) bytes smem"),
}
# "(C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to ...
# in the function 'gemm90'": ptxas waits for each wgmma before the next (e.g. when a branch it
# cannot prove warp-uniform sits between them).
_SERIALIZED_RE = re.compile(r"wgmma\.mma_async instructions are serialized.* function '([\w$.]+)'")


def parse_ptxas_verbose(text: str) -> dict[str, ResourceUsage]:
    """Per-function resource usage from `ptxas -v` output."""
    found: dict[str, dict[str, int]] = {}
    current: str | None = None
    for line in text.splitlines():
        serialized = _SERIALIZED_RE.search(line)
        if serialized:
            counts = found.setdefault(serialized.group(1), {})
            counts["serialized"] = counts.get("serialized", 0) + 1
            continue
        head = _FN_RE.search(line)
        if head:
            current = head.group(1)
            found.setdefault(current, {})
        if current is None:
            continue
        for key, pattern in _NUM.items():
            m = pattern.search(line)
            if m:
                found[current][key] = int(m.group(1))
    return {name: ResourceUsage(name=name, **vals) for name, vals in found.items()}


def ptxas_reports(ptx: str, arch: str) -> dict[str, ResourceUsage]:
    """`ptxas -v` resource usage of every function in `ptx`, by name. Remembered for the
    process: a compile's contract and its `--resource-usage` ask about the same PTX."""
    key = (hashlib.sha256(ptx.encode()).hexdigest(), arch, shutil.which("ptxas"))
    if key[2] is None or key not in _REPORTS:  # no ptxas: _ptxas says so
        _, log = _ptxas(ptx, arch, ["-v"])
        _REPORTS[key] = parse_ptxas_verbose(log)
    return dict(_REPORTS[key])


# (PTX digest, arch, the ptxas that answered) -> its answer
_REPORTS: dict[tuple[str, str, str | None], dict[str, ResourceUsage]] = {}


RESOURCE_COLUMNS = (
    ("registers", "registers"),
    ("spill_stores", "spill stores B"),
    ("spill_loads", "spill loads B"),
    ("shared_bytes", "shared B"),
    ("stack_frame", "stack B"),
    ("barriers", "barriers"),
)


_ENTRY_RE = re.compile(r"\.entry\s+([\w$.]+)\s*\(")
_SETMAXNREG_RE = re.compile(r"setmaxnreg\.(inc|dec)\.sync\.aligned\.u32\s+(\d+)")


def setmaxnreg_counts(ptx: str) -> dict[str, list[str]]:
    """Per entry of `ptx`, the register counts its `setmaxnreg` instructions set, in order,
    each once (an SM90 warp-specialised kernel: one per role, e.g. ["dec 40", "inc 232"])."""
    found: dict[str, list[str]] = {}
    entries = list(_ENTRY_RE.finditer(ptx))
    for k, entry in enumerate(entries):
        end = entries[k + 1].start() if k + 1 < len(entries) else len(ptx)
        counts = [
            f"{m.group(1)} {m.group(2)}" for m in _SETMAXNREG_RE.finditer(ptx, entry.end(), end)
        ]
        counts = list(dict.fromkeys(counts))
        if counts:
            found[entry.group(1)] = counts
    return found


def resource_table(reports: dict[str, ResourceUsage], ptx: str = "") -> str:
    """`--resource-usage`: one row per kernel, a column per ptxas figure, numbers right-aligned;
    kernels whose warp groups re-size their registers (`setmaxnreg`) get a column of the counts
    they set (`registers` is what a thread holds at launch).

    kernel  registers  spill stores B  spill loads B  shared B  stack B  barriers
    vadd           16               0              0         0        0         0
    """
    per_group = setmaxnreg_counts(ptx)
    columns = list(RESOURCE_COLUMNS)
    if per_group:
        columns.append(("setmaxnreg", "registers per warp group (setmaxnreg)"))
    width = max([len("kernel"), *map(len, reports)])
    rows = [["kernel".ljust(width), *(title for _, title in columns)]]
    for name, usage in reports.items():
        figures = [str(getattr(usage, field)) for field, _ in RESOURCE_COLUMNS]
        if per_group:
            figures.append(", ".join(per_group.get(name, [])) or "-")
        rows.append([name.ljust(width), *figures])
    sizes = [len(title) for _, title in columns]
    return "\n".join(
        "  ".join([row[0], *(cell.rjust(n) for cell, n in zip(row[1:], sizes, strict=True))])
        for row in rows
    )


def ptxas_report(ptx: str, arch: str) -> ResourceUsage:
    """The worst (max) resource usage over all entries of `ptx`; `name` lists them."""
    reports = ptxas_reports(ptx, arch)
    if not reports:
        raise BackendError("ptxas -v reported no functions")
    counts = [f.name for f in fields(ResourceUsage) if f.name != "name"]
    worst = {f: max(getattr(r, f) for r in reports.values()) for f in counts}
    return ResourceUsage(name=",".join(sorted(reports)), **worst)


def assemble(ptx: str, arch: str) -> bytes:
    """A cubin for `arch` from `ptx` through ptxas."""
    cubin, _ = _ptxas(ptx, arch, [])
    return cubin


def compile_to_ptx(module: ir.Module, arch: str, opt_level: int = 3) -> str:
    """gpu-stage module → PTX through the llvmlite path (lowers `module` in place)."""
    lower(module, "llvm")
    return emit_ptx(to_llvm_ir(module, arch), arch, opt_level)


PTX_ENTRY_RE = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)", re.S)


def ptx_entries(ptx: str) -> dict[str, list[str]]:
    """`.entry` names of `ptx` with their parameter declarations (types only, names dropped)."""
    result = {}
    for m in PTX_ENTRY_RE.finditer(ptx):
        params = [" ".join(p.split()[:-1]) for p in m.group(2).split(",") if p.strip()]
        result[m.group(1)] = params
    return result

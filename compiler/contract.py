"""Stages lowered to ptx: each kernel's passport (what it compiled to) and its contract's check.

The facts come from what the compile emitted, each from the stage that decided it: pipeline
stages from the `tile.stages` / `tile.stages_requested` attributes tile-pipeline leaves on its
loops (stage `lowered`), dynamic shared memory and bank conflicts from the `gpu` stage,
registers, spills, local and static shared memory from `ptxas -v`, instruction counts from the
PTX text, CTAs per SM from those by tilec.targets.ctas_per_sm. Contracts only read: the PTX
is the same with or without them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilec.diagnostics import Diagnostic, DiagnosticError, note
from tilec.targets import ctas_per_sm

if TYPE_CHECKING:
    from mlir import ir

    from tilec.frontend.contract import Promise

# fact -> what decides it; `count("insn")` and `has("insn")` name a PTX instruction.
FACTS: dict[str, str] = {
    "stages": "tile-pipeline",
    "depth": "tile-pipeline",
    "registers": "ptxas",
    "spills": "ptxas",
    "local_memory": "ptxas",
    "shared_bytes": "ptxas + outline-tile-kernels",
    "ctas_per_sm": "occupancy",
    "serialized": "ptxas",
    "bank_conflicts": "bank analysis",
    "count": "PTX",
    "has": "PTX",
}
PATTERN_FACTS = ("count", "has")
PTXAS_FACTS = frozenset(
    {"registers", "spills", "local_memory", "shared_bytes", "ctas_per_sm", "serialized"}
)
PASSPORT = ("stages", "depth", *sorted(PTXAS_FACTS), "bank_conflicts")
# Instructions every passport counts, besides those a contract names.
LISTED = ("mma.sync", "wgmma.mma_async", "ldmatrix", "cp.async", "cp.async.bulk.tensor")
LISTED += ("ld.global.v4", "st.global.v4", "bar.sync")


class ContractError(DiagnosticError):
    """A broken contract (as opposed to a kernel that does not compile)."""


@dataclass
class KernelContract:
    """What the frontend knows of a kernel: its promises, target and block size."""

    name: str
    target: str
    threads: int
    promises: list[Promise]


@dataclass
class Fact:
    value: int | None  # None: not decided (no pipelined loop)
    source: str  # the stage that decided it, and why


@dataclass
class Passport:
    kernel: str
    target: str
    facts: dict[str, Fact]
    ptx: str  # the kernel's .entry, for count(...)

    def fact(self, promise: Promise) -> Fact:
        if promise.pattern is not None:
            return Fact(count_instructions(self.ptx, promise.pattern), "PTX")
        missing = Fact(None, f"{FACTS[promise.fact]} reported nothing for kernel {self.kernel}")
        return self.facts.get(promise.fact, missing)

    def as_json(self) -> dict[str, Any]:
        counts = {p: count_instructions(self.ptx, p) for p in LISTED}
        return {
            "kernel": self.kernel,
            "target": self.target,
            "facts": {k: {"value": f.value, "source": f.source} for k, f in self.facts.items()},
            "instructions": counts,
        }


@dataclass
class Collector:
    """Reads the stages of one compile as they go by (the next stage rewrites them in place)."""

    kernels: dict[str, KernelContract]
    file: str
    banks: bool = False  # run the bank analysis at the gpu stage
    pipelines: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    rings: dict[str, int] = field(default_factory=dict)  # SM90 kernels: their ring's stages
    dynamic_smem: dict[str, int] = field(default_factory=dict)
    conflicts: dict[str, int] = field(default_factory=dict)
    ptx: str | None = None

    def __call__(self, artifact: Any) -> None:  # noqa: ANN401 - a driver Artifact
        if artifact.stage == "lowered":
            self.pipelines = pipeline_stages(artifact.value)
            self.rings = ring_stages(artifact.value)
        elif artifact.stage == "gpu":
            self.dynamic_smem = dynamic_smem(artifact.value)
            if self.banks:
                self.conflicts = bank_conflicts(artifact.value, self.file)
        elif artifact.stage == "ptx":
            self.ptx = str(artifact.value)


def pipeline_stages(module: ir.Module) -> dict[str, tuple[int, int, int]]:
    """kernel -> (stages, stages requested, the shared-memory limit of a clamp, else 0) of its
    shallowest loop tile-pipeline pipelined."""
    from mlir import ir

    from tilec.binding import walk

    found: dict[str, tuple[int, int, int]] = {}

    def visit(op: ir.Operation) -> None:
        if "tile.stages" not in op.attributes:
            return
        func = op.parent
        while func is not None and func.name != "func.func":
            func = func.parent
        if func is None:
            return
        got = ir.IntegerAttr(op.attributes["tile.stages"]).value
        requested, limit = got, 0
        if "tile.stages_requested" in op.attributes:
            requested = ir.IntegerAttr(op.attributes["tile.stages_requested"]).value
            limit = ir.IntegerAttr(op.attributes["tile.stages_smem_limit"]).value
        name = ir.StringAttr(func.attributes["sym_name"]).value
        found[name] = min(found.get(name, (got, requested, limit)), (got, requested, limit))

    walk(module.operation, visit)
    return found


def ring_stages(module: ir.Module) -> dict[str, int]:
    """kernel -> the stages of its mbarrier ring (`tile.ring_stages`, tile-ring's)."""
    from mlir import ir

    found: dict[str, int] = {}
    for op in module.body.operations:
        attrs = op.operation.attributes
        if op.operation.name == "func.func" and "tile.ring_stages" in attrs:
            name = ir.StringAttr(attrs["sym_name"]).value
            found[name] = ir.IntegerAttr(attrs["tile.ring_stages"]).value
    return found


def dynamic_smem(gpu_module: ir.Module) -> dict[str, int]:
    """kernel name -> `tile.dynamic_smem` of its gpu.func (0 when absent)."""
    from mlir import ir

    from tilec.binding import walk

    found: dict[str, int] = {}

    def visit(op: ir.Operation) -> None:
        if op.name != "gpu.func":
            return
        smem = op.attributes["tile.dynamic_smem"] if "tile.dynamic_smem" in op.attributes else None
        found[ir.StringAttr(op.attributes["sym_name"]).value] = (
            ir.IntegerAttr(smem).value if smem is not None else 0
        )

    walk(gpu_module.operation, visit)
    return found


def bank_conflicts(gpu_module: ir.Module, file: str) -> dict[str, int]:
    """kernel -> its shared accesses (one per source access and width) with a known conflict."""
    from tilec.banks import group, shared_accesses

    found: dict[str, int] = {}
    for g in group(shared_accesses(gpu_module, file)):
        worst = g.worst()
        conflicted = worst is not None and worst.conflict.degree > 1
        found[g.kernel] = found.get(g.kernel, 0) + conflicted
    return found


_ENTRY = re.compile(r"^\.(?:visible\s+)?\.entry\s+([\w$]+)", re.M)
_GUARD = re.compile(r"^@!?%\w+\s+")


def ptx_entries(ptx: str) -> dict[str, str]:
    """entry name -> its text, up to the next entry."""
    marks = list(_ENTRY.finditer(ptx))
    ends = [m.start() for m in marks[1:]] + [len(ptx)]
    return {m.group(1): ptx[m.start() : end] for m, end in zip(marks, ends, strict=True)}


def count_instructions(ptx: str, pattern: str) -> int:
    """Instructions whose opcode is `pattern` or starts with it and a '.': `ldmatrix` counts
    `ldmatrix.sync.aligned.m8n8.x4.shared.b16`, `ld.global.v4` counts `ld.global.v4.u32`."""
    n = 0
    for line in ptx.splitlines():
        stmt = _GUARD.sub("", line.strip())
        opcode = stmt.split(None, 1)[0].rstrip(";") if stmt else ""
        n += opcode == pattern or opcode.startswith(pattern + ".")
    return n


def _depth_source(stages: int, requested: int, limit: int) -> str:
    if stages == requested:
        return f"tile-pipeline ({stages} stages, as requested)"
    return (
        f"tile-pipeline clamped the stages {requested} -> {stages} to fit {limit} bytes "
        f"({limit / 1024:g} KiB) of shared memory"
    )


def _pipeline_facts(c: Collector, k: KernelContract) -> dict[str, Fact]:
    if k.name in c.rings:  # every stage of the ring is a TMA load in flight
        ring = c.rings[k.name]
        source = f"tile-ring (an mbarrier ring of {ring} stages)"
        return {"stages": Fact(ring, source), "depth": Fact(ring, source)}
    if k.name not in c.pipelines:
        none = "tile-pipeline (no pipelined loop)"
        return {"stages": Fact(None, none), "depth": Fact(None, none)}
    stages, requested, limit = c.pipelines[k.name]
    source = _depth_source(stages, requested, limit)
    return {"stages": Fact(stages, source), "depth": Fact(stages - 1, source)}


def _ptxas_facts(usage: Any, k: KernelContract, dynamic: int) -> dict[str, Fact]:  # noqa: ANN401
    shared = usage.shared_bytes + dynamic
    occupancy = ctas_per_sm(k.target, k.threads, usage.registers, shared)
    return {
        "registers": Fact(usage.registers, "ptxas"),
        "spills": Fact(usage.spill_stores + usage.spill_loads, "ptxas (spill stores + loads, B)"),
        "local_memory": Fact(usage.stack_frame, "ptxas (stack frame, B)"),
        "shared_bytes": Fact(shared, f"ptxas {usage.shared_bytes} static + {dynamic} dynamic"),
        "ctas_per_sm": Fact(
            occupancy, f"occupancy of {k.threads} threads, {usage.registers} registers, {shared} B"
        ),
        "serialized": Fact(usage.serialized, "ptxas (C7520: wgmma.mma_async serialized)"),
    }


def passports(c: Collector, arch: str, with_ptxas: bool) -> list[Passport]:
    """Every kernel's facts; ptxas's only when `with_ptxas` (raises BackendError without it)."""
    from tilec.backend import ptxas_reports

    reports = ptxas_reports(c.ptx or "", arch) if with_ptxas else {}
    entries = ptx_entries(c.ptx or "")
    result = []
    for k in c.kernels.values():
        facts = _pipeline_facts(c, k)
        if k.name in reports:
            facts.update(_ptxas_facts(reports[k.name], k, c.dynamic_smem.get(k.name, 0)))
        if c.banks:
            facts["bank_conflicts"] = Fact(c.conflicts.get(k.name, 0), "bank analysis (gpu)")
        result.append(Passport(k.name, k.target, facts, entries.get(k.name, "")))
    return result


def broken(passport: Passport, promises: list[Promise]) -> list[Diagnostic]:
    """A located error at each promise the passport does not keep."""
    errors = []
    for p in promises:
        fact = passport.fact(p)
        if fact.value is None:
            errors.append(Diagnostic("error", f"contract: {p.text()}: {fact.source}", p.span))
        elif not p.holds(fact.value):
            message = f"contract broken: {p.text()} promised, found {fact.value}"
            errors.append(
                Diagnostic("error", message, p.span, [note(f"decided by {fact.source}", p.span)])
            )
    return errors


def check(
    c: Collector, arch: str, enforce: bool, full: bool, need_ptxas: bool = False
) -> tuple[list[Passport], list]:
    """The passports and the warnings of one compile; raises ContractError for a broken
    contract when `enforce`. `full`: every fact (the report), ptxas's and the banks' too.
    Without ptxas, terms that need it are an error when `need_ptxas` (tilec check, report) or
    `full`, else a warning and left unchecked (a plain compile works without the toolkit)."""
    from tilec.backend import BackendError

    promised = [p for k in c.kernels.values() for p in k.promises]
    if not enforce and promised and not full:
        first = promised[0].span
        return [], [Diagnostic("warning", "contracts not checked (--no-contracts)", first)]
    if not promised and not full:
        return [], []
    unchecked: list[Diagnostic] = []
    try:
        found = passports(c, arch, full or needs_ptxas(c.kernels))
    except BackendError as exc:
        span = next((p.span for p in promised if p.fact in PTXAS_FACTS), None)
        if full or need_ptxas:
            message = f"contract needs ptxas: {exc}"
            raise ContractError([Diagnostic("error", message, span)]) from None
        message = f"contract terms that need ptxas are not checked: {exc}"
        unchecked.append(Diagnostic("warning", message, span))
        found = passports(c, arch, False)
    if not enforce:
        return found, unchecked
    skip = PTXAS_FACTS if unchecked else ()
    errors = [
        e
        for pp in found
        for e in broken(pp, [p for p in c.kernels[pp.kernel].promises if p.fact not in skip])
    ]
    if errors:
        raise ContractError(errors)
    return found, unchecked


def needs_ptxas(kernels: dict[str, KernelContract]) -> bool:
    return any(p.fact in PTXAS_FACTS for k in kernels.values() for p in k.promises)


def needs_banks(kernels: dict[str, KernelContract]) -> bool:
    return any(p.fact == "bank_conflicts" for k in kernels.values() for p in k.promises)

"""Stages `lowered` and `gpu`: a static shared-memory bank-conflict report (`--report banks`)."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir

from tilec import binding
from tilec.bank_lanes import BlockLanes, Fallback
from tilec.bank_ops import ARRAY, BINARY, CMP, DIMS, PASS_THROUGH, type_bytes
from tilec.diagnostics import Span

BANKS = 32  # shared memory has 32 banks ...
WORD = 4  # ... each 4 bytes wide: bank = (byte address / 4) mod 32
WARP = 32
SHARED = 3  # the NVPTX address space of shared memory
LOOP_SAMPLES = 4  # an scf.for index is bound to each of its first iterations in turn
SHOWN_LANES = 8  # a conflict's report names the first lanes that hit the worst bank
MAX_DEPTH = 200  # deeper address expressions are reported as unknown, never a RecursionError


# Ops whose divisor must not be 0 (the analysis says unknown instead of dividing).
DIVISIONS = ("divui", "divsi", "remui", "remsi", "ceildivsi", "ceildivui")


@dataclass(frozen=True)
class Conflict:
    """The worst bank of one warp-wide access: `degree` distinct words share `bank`."""

    degree: int
    phase: int = 0
    bank: int = 0
    lanes: tuple[int, ...] = ()


def bank_conflict(addresses: Sequence[int], width: int) -> Conflict:
    """The conflict degree of a warp accessing byte `addresses[lane]`, `width` bytes per lane.

    The banks serve 128 bytes per pass, so wide accesses are split into phases of lanes, and
    only lanes of one phase can conflict:

        width 4:  | lanes 0-31 |                       one phase
        width 8:  | lanes 0-15 | lanes 16-31 |         two phases
        width 16: | 0-7 | 8-15 | 16-23 | 24-31 |       four phases

    In a phase, a bank serves one 4-byte word per pass; lanes reading the same word share it
    (a broadcast), so the degree is the most DISTINCT words any one bank holds.
    """
    per_phase = max(1, min(WARP, BANKS * WORD // max(width, 1)))
    worst = Conflict(0)
    for phase, start in enumerate(range(0, len(addresses), per_phase)):
        words: dict[int, dict[int, list[int]]] = {}  # bank -> word -> lanes touching it
        for lane in range(start, min(start + per_phase, len(addresses))):
            first, last = addresses[lane] // WORD, (addresses[lane] + max(width, 1) - 1) // WORD
            for word in range(first, last + 1):
                words.setdefault(word % BANKS, {}).setdefault(word, []).append(lane)
        for bank, held in sorted(words.items()):
            if len(held) > worst.degree:
                lanes = tuple(sorted(first[0] for first in held.values()))
                worst = Conflict(len(held), phase, bank, lanes)
    return worst


@functools.lru_cache(maxsize=4096)
def _relative_conflict(addresses: tuple[int, ...], width: int) -> Conflict:
    return bank_conflict(addresses, width)


def warp_conflict(addresses: Sequence[int], width: int) -> Conflict:
    """`bank_conflict`, remembered: moving every lane by the same multiple of 128 bytes moves
    each word by a multiple of 32 banks, which changes no bank, degree, phase or lane."""
    base = min(addresses, default=0) // (BANKS * WORD) * (BANKS * WORD)
    return _relative_conflict(tuple(a - base for a in addresses), width)


class Unknown(Exception):
    """The address cannot be evaluated statically; the message says what it depends on."""


class Evaluator:
    """Evaluates address expressions for one thread: its (x, y, z) and the bound loop indices."""

    def __init__(self, tid: tuple[int, int, int], ivs: dict[ir.Value, int]) -> None:
        self.tid, self.ivs = tid, ivs
        self.memo: dict[ir.Value, int] = {}

    def value(self, v: ir.Value, depth: int = 0) -> int:
        if v in self.memo:
            return self.memo[v]
        if depth > MAX_DEPTH:
            raise Unknown("an address expression deeper than the analysis follows")
        result = self._arg(v) if isinstance(v, ir.BlockArgument) else self._op(v, depth + 1)
        self.memo[v] = result
        return result

    def _arg(self, v: ir.BlockArgument) -> int:
        if v in self.ivs:
            return self.ivs[v]
        parent = v.owner.owner
        if parent is not None and parent.name == "scf.for":
            raise Unknown("a value carried around an scf.for")
        raise Unknown("a kernel argument (a runtime value)")

    def _op(self, v: ir.Value, depth: int) -> int:
        op = ir.OpResult(v).owner
        name = op.name
        args = op.operands
        if name in ("arith.constant", "llvm.mlir.constant"):
            attr = op.attributes["value"]
            if not isinstance(attr, ir.IntegerAttr):
                raise Unknown(f"a non-integer constant in '{name}'")
            return attr.value
        if name == "gpu.thread_id":
            return self.tid[DIMS[str(op.attributes["dimension"])[-2]]]
        if name == "llvm.inline_asm":  # convert-tile-to-gpu's fresh reads and opaque copies
            text = ir.StringAttr(op.attributes["asm_string"]).value
            if m := re.fullmatch(r"mov\.u32 \$0, %tid\.([xyz]);", text):
                return self.tid[DIMS[m.group(1)]]
            if re.fullmatch(r"mov\.\w+ \$0, \$1;", text):
                return self.value(args[0], depth)
            raise Unknown(f"inline asm '{text}'")
        if name == "llvm.mlir.addressof":
            # Every shared buffer starts on a 16-byte boundary; a uniform offset of the whole
            # warp moves every lane to the next bank alike, so it never changes a degree.
            return 0
        if name in PASS_THROUGH:
            return self.value(args[0], depth)
        if name == "arith.trunci":
            return self.value(args[0], depth) & ((1 << ir.IntegerType(v.type).width) - 1)
        if name == "arith.cmpi":
            pred = ir.IntegerAttr(op.attributes["predicate"]).value
            return int(CMP[pred](self.value(args[0], depth), self.value(args[1], depth)))
        if name in ("arith.select", "llvm.select"):
            chosen = args[1] if self.value(args[0], depth) else args[2]
            return self.value(chosen, depth)
        if name == "llvm.getelementptr":
            return self._gep(op, depth)
        if name in BINARY:
            lhs, rhs = self.value(args[0], depth), self.value(args[1], depth)
            if rhs == 0 and name.endswith(DIVISIONS):
                raise Unknown(f"a division by zero in '{name}'")
            return BINARY[name](lhs, rhs)
        raise Unknown(f"'{name}'")

    def _gep(self, op: ir.Operation, depth: int) -> int:
        """base + i0 * sizeof(T) + inner indices into nested `!llvm.array`s."""
        raw = list(ir.DenseI32ArrayAttr(op.attributes["rawConstantIndices"]))
        dynamic = iter(op.operands[1:])
        t = ir.TypeAttr(op.attributes["elem_type"]).value
        address = self.value(op.operands[0], depth)
        for k, index in enumerate(raw):
            i = self.value(next(dynamic), depth) if index == -(2**31) else index
            if k > 0:
                m = ARRAY.match(str(t))
                if m is None:
                    raise Unknown(f"a getelementptr into '{t}'")
                t = ir.Type.parse(m.group(2))
            size = type_bytes(t)
            if size is None:
                raise Unknown(f"a getelementptr over '{t}'")
            address += i * size
        return address


@dataclass
class Access:
    """One shared-memory load or store instruction and its worst conflict over warps."""

    kernel: str
    kind: str  # "load", "store", "ldmatrix" (a 16-byte row per lane) or "cp.async" (its write)
    width: int | None
    span: Span | None
    conflict: Conflict | None = None
    warp: int = 0
    unknown: str = ""


def _shared_pointer(v: ir.Value) -> bool:
    return str(v.type) == f"!llvm.ptr<{SHARED}>"


def _threads(kernel: ir.Operation) -> tuple[int, int, int]:
    """The block's (X, Y, Z): `known_block_size` at `gpu`, `tile.threads` at `lowered`."""
    for key in ("known_block_size", "tile.threads"):
        if key in kernel.attributes:
            dims = [int(d) for d in kernel.attributes[key]] + [1, 1]
            return dims[0], dims[1], dims[2]
    return WARP, 1, 1


def _loop_bindings(loops: list[ir.Operation]) -> list[dict[ir.Value, int]]:
    """Every combination of the first LOOP_SAMPLES iterations of the enclosing loops."""
    choices = []
    for loop in loops:
        lane0 = Evaluator((0, 0, 0), {})
        lb, step = lane0.value(loop.operands[0]), lane0.value(loop.operands[2])
        try:
            ub = lane0.value(loop.operands[1])
        except Unknown:  # a runtime trip count (a GEMM's k-tiles): sample as if it runs long
            ub = lb + LOOP_SAMPLES * step
        values = [lb + k * step for k in range(LOOP_SAMPLES) if lb + k * step < ub] or [lb]
        choices.append([(loop.regions[0].blocks[0].arguments[0], x) for x in values])
    return [dict(combo) for combo in itertools.product(*choices)]


def analyze_access(
    access: Access, op: ir.Operation, kernel: ir.Operation, lanes: BlockLanes | None = None
) -> None:
    """Fill in the worst conflict over every warp of the block (and sampled loop indices):
    all threads at once through `lanes` when given, thread by thread where it steps aside."""
    pointer = op.operands[1] if access.kind == "store" else op.operands[0]
    if access.width is None:
        access.unknown = "an access of a type whose size is not known"
        return
    if lanes is not None:
        try:
            _analyze_lanes(access, pointer, op, kernel, lanes)
            return
        except Fallback:
            access.conflict, access.warp = None, 0
    _analyze_threads(access, pointer, op, kernel)


def _keep_worst(access: Access, conflict: Conflict, warp: int) -> None:
    if access.conflict is None or conflict.degree > access.conflict.degree:
        access.conflict, access.warp = conflict, warp


def _analyze_lanes(
    access: Access, pointer: ir.Value, op: ir.Operation, kernel: ir.Operation, lanes: BlockLanes
) -> None:
    try:
        bindings = _loop_bindings(binding.enclosing_loops(op, kernel))
    except Unknown as exc:
        raise Fallback(str(exc)) from None
    for ivs in bindings:
        addresses = lanes.addresses(pointer, ivs).tolist()
        for warp in range(len(addresses) // WARP):
            chunk = addresses[warp * WARP : warp * WARP + WARP]
            _keep_worst(access, warp_conflict(chunk, access.width), warp)


def _analyze_threads(
    access: Access, pointer: ir.Value, op: ir.Operation, kernel: ir.Operation
) -> None:
    dims = _threads(kernel)
    threads = dims[0] * dims[1] * dims[2]
    try:
        for ivs in _loop_bindings(binding.enclosing_loops(op, kernel)):
            for warp in range(max(1, threads // WARP)):
                addresses = []
                for t in range(warp * WARP, warp * WARP + WARP):
                    tid = (t % dims[0], t // dims[0] % dims[1], t // (dims[0] * dims[1]))
                    addresses.append(Evaluator(tid, ivs).value(pointer))
                _keep_worst(access, bank_conflict(addresses, access.width), warp)
    except Unknown as exc:
        access.conflict, access.unknown = None, f"the address depends on {exc}"


def block_lanes(kernel: ir.Operation) -> BlockLanes:
    """The evaluator of every thread the report looks at: its warps' lanes."""
    dims = _threads(kernel)
    lanes = max(1, dims[0] * dims[1] * dims[2] // WARP) * WARP
    return BlockLanes(dims, lanes, MAX_DEPTH)


# ldmatrix: each lane names one 16-byte row, and each 8x8 matrix (8 lanes' rows, 128 bytes) is
# one phase, which is `bank_conflict`'s model of 16-byte accesses. cp.async: the shared side of
# the copy is a store of its `size` bytes per lane.
LDMATRIX_ROW = 16


def shared_accesses(module: ir.Module, default_file: str | None = None) -> list[Access]:
    """Every llvm.load/llvm.store, nvvm.ldmatrix and nvvm.cp.async.shared.global through a
    shared pointer, in program order, analyzed."""
    found: list[tuple[ir.Operation, ir.Operation]] = []
    kernel: list[ir.Operation] = []

    def visit(op: ir.Operation) -> None:
        if op.name in ("gpu.func", "func.func"):
            kernel[:] = [op]
        elif not kernel:
            return
        elif op.name in ("llvm.load", "nvvm.ldmatrix", "nvvm.cp.async.shared.global"):
            if _shared_pointer(op.operands[0]):
                found.append((op, kernel[0]))
        elif op.name == "llvm.store" and _shared_pointer(op.operands[1]):
            found.append((op, kernel[0]))

    binding.walk(module.operation, visit)
    accesses = []
    lanes: dict[str, BlockLanes] = {}
    for op, func in found:
        if op.name == "nvvm.ldmatrix":
            kind, width = "ldmatrix", LDMATRIX_ROW
        elif op.name == "nvvm.cp.async.shared.global":
            kind, width = "cp.async", ir.IntegerAttr(op.attributes["size"]).value
        else:
            kind = op.name.removeprefix("llvm.")
            width = type_bytes((op.results[0] if kind == "load" else op.operands[0]).type)
        name = ir.StringAttr(func.attributes["sym_name"]).value
        span = binding.location_span(op.location, default_file)
        access = Access(name, kind, width, span)
        if name not in lanes:
            lanes[name] = block_lanes(func)
        analyze_access(access, op, func, lanes[name])
        accesses.append(access)
    return accesses


@dataclass
class Group:
    """The instructions of one width one source access became (both paths, unrolled chunks)."""

    kernel: str
    kind: str
    width: int | None
    span: Span | None
    members: list[Access] = dataclasses.field(default_factory=list)

    def worst(self) -> Access | None:
        known = [a for a in self.members if a.conflict is not None]
        return max(known, key=lambda a: a.conflict.degree) if known else None


def group(accesses: list[Access]) -> list[Group]:
    groups: dict[tuple[str, str, int | None, Span | None], Group] = {}
    for a in accesses:
        key = (a.kernel, a.kind, a.width, a.span)
        groups.setdefault(key, Group(*key)).members.append(a)
    return list(groups.values())


def _verdict(degree: int) -> str:
    return "1-way (conflict-free)" if degree == 1 else f"{degree}-way bank conflict"


def render_group(g: Group, file: str) -> str:
    where = str(g.span) if g.span is not None else file
    n = len(g.members)
    head = f"{where}: shared {g.kind}, {g.width or '?'} bytes/lane, {n} instruction"
    head += "s" if n > 1 else ""
    worst = g.worst()
    unknown = [a for a in g.members if a.conflict is None]
    parts = []
    if worst is not None:
        c = worst.conflict
        text = _verdict(c.degree)
        if c.degree > 1:
            lanes = ", ".join(str(lane) for lane in c.lanes[:SHOWN_LANES])
            lanes += ", ..." if len(c.lanes) > SHOWN_LANES else ""
            text += f" (warp {worst.warp}, phase {c.phase}: bank {c.bank} <- lanes {lanes})"
        parts.append(text)
    if unknown:
        count = "" if worst is None else f"{len(unknown)} of {n} "
        parts.append(f"{count}unknown: {unknown[0].unknown}")
    return f"{head}: {'; '.join(parts)}"


def render(accesses: list[Access], file: str) -> list[str]:
    """Per kernel: one line per source access (and width), then a summary line."""
    groups = group(accesses)
    lines = []
    for kernel in dict.fromkeys(g.kernel for g in groups):
        mine = [g for g in groups if g.kernel == kernel]
        lines += [render_group(g, file) for g in mine]
        degrees = [w.conflict.degree for g in mine if (w := g.worst()) is not None]
        free = sum(1 for g in mine if g.worst() is not None and g.worst().conflict.degree == 1)
        unknown = sum(1 for g in mine if any(a.conflict is None for a in g.members))
        summary = f"{kernel}: {len(mine)} shared accesses, {free} conflict-free"
        summary += f", worst {max(degrees)}-way" if degrees else ""
        summary += f", {unknown} unknown" if unknown else ""
        lines.append(summary)
    return lines or [f"{file}: no shared-memory accesses"]


class BankReport:
    """Collects the report from the `gpu` stage of a compile (pass it as `on_stage`)."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: list[str] | None = None

    def __call__(self, artifact: object) -> None:
        if artifact.stage == "gpu":
            self.lines = render(shared_accesses(artifact.value, self.file), self.file)

    def finish(self, options: object) -> list[str]:
        """The report; compiles once more up to `gpu` when `--emit` stopped before it."""
        from tilec.driver import compile_file, fail
        from tilec.stages import position

        if self.lines is None and position(options.emit) < position("gpu"):
            compile_file(self.file, dataclasses.replace(options, emit="gpu", dump_dir=None), self)
        if self.lines is None:
            raise fail(
                "--report banks reads the 'gpu' stage, which this compile never produced",
                ("give it a .tile file or a stage at or before gpu (k.gpu.mlir)",),
            )
        return self.lines

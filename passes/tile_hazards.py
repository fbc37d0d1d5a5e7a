"""Passes (lowered stage, after tile-pipeline): `tile-hazards`, the shared-memory races the
compiler can see, refused at the source line.

A kernel's shared buffers are written and read by the whole block at once (`copy`, `store`,
`load`, `gemm`, `relayout`), and only a barrier orders one thread's access before another's.
This pass walks each kernel in program order and keeps, per shared memory, the accesses made
since the last barrier. A new access is an error when one of them is by other threads and at
least one of the two writes:

    "tile.copy"(%g, %s) {atom = "auto"}             // note: 's' is written here
    "tile.copy"(%s_t, %y) {atom = "auto"}           // error: reads 's' ... with no barrier
                                                    //   between (the missing barrier())

- a read of what other threads wrote (read after write), at the read, the write as a note;
- a write over what other threads may still read (write after read: `sC` declared
  `reuse = sB` and stored while warps may still be in their last k-step on sB), at the write;
- two writes by different threads (write after write), at the second.

Buffers joined by `reuse =` are one memory here. Loops are walked until what is pending at the
end of an iteration has met the next iteration's accesses (a read late in iteration i, a write
early in i + 1); `scf.if` joins its branches. What orders accesses, besides `barrier()`:

- a gemm outside a pipeline lowers between two barriers of its own (convert-tile-mma); a
  prefetching one (`tile.prefetch`) reads, waits and synchronises, and reads the next stage;
- `relayout` synchronises before its store and between its store and its load (tile-relayout);
  its load is then pending like any read;
- the buffers a pipelined loop copies into (`tile.pipelined`) are tile-pipeline's ring, and in
  a `warp_specialize` kernel those that `copy<tma>` fills are tile-ring's mbarrier
  ring: within such a loop (such a kernel) their accesses are synchronised by construction.
  Outside it they are accesses like any other (the reuse case above);
- the wait a cp.async copy needs before its own thread reads is tile-async-waits' (it runs
  later and places one before every barrier after such copies), so only the barrier is
  checked here.

An access is by "the same threads" as a pending one, needing no barrier, when both go through
the same view and spread its elements over the threads alike: a cp.async copy (not `narrow`)
partitions its tile as a load of that tile spreads it, so `copy<cp_async.cg.16>(g, s)` then
`load(s)` reads only what each thread copied (examples/softmax_persistent.tile); a store and a
load back of the same spread likewise. Spreads are tile-distribute's rules, evaluated here
(`Spreads`); where it cannot decide one, or for a synchronous copy, the access is taken to be
by other threads. Reduction scratch and cluster exchanges are their lowering's own memory,
synchronised there; no source op reaches another block's shared memory.

A copy, store or relayout whose shared destination view is non-injective (several coordinates
on one element, as `(64,64):(1,1)`) is an error too: the block's threads would write one
element at once. Such a view may be read (a broadcast).

It runs after tile-pipeline, so its waits and barriers are in the IR, and before
tile-ring and tile-async-waits, so warp-specialised kernels are still tile ops; it
changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from mlir import ir

from tilec.binding import emit, functions, op_id, walk
from tilec.dialects.layout import algebra as A
from tilec.dialects.tile.types import TensorType, view_root
from tilec.lowering import LoweringError
from tilec.lowering.tile_async import CP_ASYNC_BYTES, NARROW
from tilec.lowering.tile_fragments import Partition
from tilec.lowering.tile_mma import MmaPartition
from tilec.lowering.tile_modes import typed_modes, unit
from tilec.lowering.tile_views import elem_bytes, tensor_type
from tilec.passes.base import Pass, register
from tilec.passes.tile_distribute import Spreads
from tilec.passes.tile_pipeline import PIPELINED, PREFETCH, warp_specialized

READ, WRITE = "read", "write"
# (earlier, later) -> what the later access does, and how to fix it
WHAT = {
    (WRITE, READ): ("reads {buf} that other threads wrote{alias}", "the write and this read"),
    (READ, WRITE): (
        "overwrites {buf} while other threads may still read it{alias}",
        "that read and this write",
    ),
    (WRITE, WRITE): ("writes {buf} that other threads also write{alias}", "the two writes"),
}


@dataclass(frozen=True)
class Access:
    """One block-level access of a shared memory."""

    op: ir.Operation
    kind: str  # READ or WRITE
    memory: str  # the buffer's name, or the one it reuses
    buffer: str  # the buffer's own name
    owner: tuple[object, ir.Value] | None  # (spread, view): which thread has which element
    ring: int | None  # op_id of the pipeline (ring) whose synchronisation covers it

    @property
    def key(self) -> tuple[int, str, str]:
        return (op_id(self.op), self.kind, self.memory)

    def same_threads(self, other: Access) -> bool:
        if self.owner is None or other.owner is None:
            return False
        (mine, view), (theirs, seen) = self.owner, other.owner
        return mine == theirs and view == seen


@dataclass
class Kernel:
    """The pending accesses of one kernel while it is walked, and what it found."""

    func: ir.Operation
    threads: int
    spreads: dict[ir.Value, object]
    memory: dict[str, str]  # buffer name -> its memory's name (reuse chains resolved)
    rings: dict[int, tuple[int, set[str]]] = field(default_factory=dict)  # loop -> (ring, mems)
    found: dict[int, tuple[Access, Access]] = field(default_factory=dict)  # by the later op
    trace: list[Access] = field(default_factory=list)  # every access walked, in order

    def walk_block(self, block: ir.Block, pending: list[Access], ring: dict) -> list[Access]:
        for op in block.operations:
            pending = self.walk_op(op.operation, pending, ring)
        return pending

    def walk_op(self, op: ir.Operation, pending: list[Access], ring: dict) -> list[Access]:
        if op.name == "tile.barrier":
            return []
        if op.name == "scf.for":
            return self.loop(op, pending, ring)
        if op.name == "scf.if":
            ends = [self.walk_block(r.blocks[0], pending, ring) for r in op.regions if r.blocks]
            return union(pending if len(ends) < 2 else [], *ends)
        if "tile.warp_specialize" in op.attributes:
            return self.roles(op, pending, ring)
        if op.regions:
            for region in op.regions:
                for block in region.blocks:
                    pending = self.walk_block(block, pending, ring)
            return pending
        for access in self.accesses(op, ring):
            if access is None:  # a barrier inside the op's lowering
                pending = []
                continue
            self.check(access, pending)
            pending = [*pending, access]
            self.trace.append(access)
        return pending

    def roles(self, op: ir.Operation, pending: list[Access], ring: dict) -> list[Access]:
        """The roles of a warp_specialize region run at once, on their own warps: each is
        walked from what was pending before it, and an access of one role meets every access
        of the roles before it (only their ring orders them). The buffers its `copy<tma>`
        fill are tile-ring's everywhere in it, outside pipelined loops too (a tile's Q,
        loaded once: a ring of its own)."""
        ends, done = [], []
        if op_id(op) in self.rings:
            key, mems = self.rings[op_id(op)]
            ring = {**ring, **dict.fromkeys(mems, key)}
        for region in op.regions[0].blocks[0].operations:
            if "tile.role" not in region.attributes:
                continue
            start = len(self.trace)
            ends.append(self.walk_block(region.regions[0].blocks[0], pending, ring))
            mine = self.trace[start:]
            for access in mine:
                self.check(replace(access, owner=None), done)
            done += mine
        return union(pending, *ends)

    def loop(self, op: ir.Operation, pending: list[Access], ring: dict) -> list[Access]:
        """Twice through the body: the second time from what the first left pending too, so a
        late access of iteration i meets the early ones of iteration i + 1."""
        inner = dict(ring)
        if op_id(op) in self.rings:
            key, mems = self.rings[op_id(op)]
            inner.update(dict.fromkeys(mems, key))
        body = op.regions[0].blocks[0]
        once = self.walk_block(body, pending, inner)
        twice = self.walk_block(body, union(pending, once), inner)
        return union(pending, twice)

    def accesses(self, op: ir.Operation, ring: dict) -> list[Access | None]:
        """What `op` does to shared memory, in order (None: a barrier)."""
        name, operands = op.name, list(op.operands)
        if name == "tile.load":
            return self.access(op, READ, operands[0], self.spread(op.results[0]), ring)
        if name == "tile.store":
            check_injective(op, operands[1])
            return self.access(op, WRITE, operands[1], self.spread(operands[0]), ring)
        if name == "tile.copy":
            check_injective(op, operands[1])
            return [
                *self.access(op, READ, operands[0], None, ring),
                *self.access(op, WRITE, operands[1], self.copy_spread(op), ring),
            ]
        if name == "tile.relayout" and not warp_specialized(op):  # there: tile-ring's
            check_injective(op, operands[1])
            write = self.access(op, WRITE, operands[1], self.spread(operands[0]), ring)
            read = self.access(op, READ, operands[1], self.spread(op.results[0]), ring)
            return [None, *write, None, *read]
        if name == "tile.gemm":
            reads = [a for v in operands[1:3] for a in self.access(op, READ, v, None, ring)]
            if PREFETCH in op.attributes:  # reads, waits + barrier, reads the next stage
                return [*reads, None, *reads]
            if PIPELINED in op.attributes or warp_specialized(op):
                return reads
            return [None, *reads, None]  # convert-tile-mma brackets it with barriers
        return []

    def access(
        self, op: ir.Operation, kind: str, view: ir.Value, spread: object, ring: dict
    ) -> list[Access]:
        t = TensorType.of(view.type)
        if t is None or t.space != "shared":
            return []
        root = view_root(view)
        if root is None or "name" not in root.attributes:
            buffer = memory = "?"  # not traced to its buffer: one memory with every other
        else:
            buffer = ir.StringAttr(root.attributes["name"]).value
            memory = self.memory.get(buffer, buffer)
        owner = None if spread is None else (spread, view)
        key = ring.get(memory)
        if key is None and PIPELINED in op.attributes:  # a pipeline's prologue copy
            key = next((k for k, mems in self.rings.values() if memory in mems), None)
        return [Access(op, kind, memory, buffer, owner, key)]

    def check(self, access: Access, pending: list[Access]) -> None:
        seen = self.found.get(op_id(access.op))
        if seen is not None and not seen[1].kind == access.kind == WRITE:
            return
        for earlier in pending:
            if earlier.op == access.op or READ == earlier.kind == access.kind:
                continue
            if "?" not in (earlier.memory, access.memory) and earlier.memory != access.memory:
                continue
            if access.ring is not None and access.ring == earlier.ring:
                continue
            if access.same_threads(earlier):
                continue
            seen = self.found.get(op_id(access.op))
            if seen is None or earlier.kind == READ != seen[1].kind:  # WAW: if nothing else
                self.found[op_id(access.op)] = (access, earlier)

    def spread(self, value: ir.Value) -> object | None:
        s = self.spreads.get(value)
        return s if isinstance(s, Partition | MmaPartition) else None

    def copy_spread(self, op: ir.Operation) -> Partition | None:
        """Which thread copies which element of a cp.async copy's tile (tile_async.copy: 16-byte
        chunks along the source's unit-stride mode, chunk v for thread v mod T); None for the
        other atoms and for `narrow` copies, whose narrower pieces spread otherwise."""
        atom = ir.StringAttr(op.attributes["atom"]).value
        if atom not in CP_ASYNC_BYTES or NARROW in op.attributes:
            return None
        src = tensor_type(op.operands[0].type)
        modes = typed_modes(src.layout)  # a nested mode is one mode, as the copy sees it
        shape = tuple(size for size, _ in modes)
        if not all(isinstance(s, int) for s in shape):
            return None
        m = next((k for k, (_, d) in enumerate(modes) if unit(d)), len(shape) - 1)
        vec = CP_ASYNC_BYTES[atom] // elem_bytes(src.elem)
        return Partition(shape, m, vec, self.threads)


def union(*lists: list[Access]) -> list[Access]:
    """The accesses of every list, each once, in first-seen order."""
    out: dict[tuple[int, str, str], Access] = {}
    for accesses in lists:
        for a in accesses:
            out.setdefault(a.key, a)
    return list(out.values())


# Which memory each buffer is, and the rings ---------------------------------------------------


def memories(func: ir.Operation) -> dict[str, str]:
    """Each shared buffer's memory: its own name, or (through `reuse =` chains) the name of
    the buffer whose memory it takes."""
    reuse: dict[str, str] = {}

    def visit(op: ir.Operation) -> None:
        if op.name == "tile.alloc_shared" and "name" in op.attributes:
            name = ir.StringAttr(op.attributes["name"]).value
            if "reuse" in op.attributes:
                reuse[name] = ir.StringAttr(op.attributes["reuse"]).value

    walk(func, visit)
    out: dict[str, str] = {}
    for name in reuse:
        seen, m = {name}, reuse[name]
        while m in reuse and m not in seen:
            seen.add(m)
            m = reuse[m]
        out[name] = m
    return out


def ring_loops(func: ir.Operation, memory: dict[str, str]) -> dict[int, tuple[int, set[str]]]:
    """The loops whose accesses to some memories a ring synchronises: each pipelined loop
    (tile-pipeline's ring: the buffers its `tile.pipelined` copies fill), and every pipelined
    loop of a warp_specialize region and the region itself (tile-ring's ring: the buffers its
    `copy<tma>` fill), keyed by op_id, with the ring's key and those memories."""
    rings: dict[int, tuple[int, set[str]]] = {}

    def filled(root: ir.Operation, keep: Callable[[ir.Operation], bool]) -> set[str]:
        names: set[str] = set()

        def visit(op: ir.Operation) -> None:
            if op.name == "tile.copy" and keep(op):
                buf = view_root(op.operands[1])
                if buf is not None and "name" in buf.attributes:
                    name = ir.StringAttr(buf.attributes["name"]).value
                    names.add(memory.get(name, name))

        walk(root, visit)
        return names

    def is_tma(op: ir.Operation) -> bool:
        return ir.StringAttr(op.attributes["atom"]).value == "tma"

    def visit(op: ir.Operation) -> None:
        if "tile.warp_specialize" in op.attributes:
            mems = filled(op, is_tma)
            loops: list[ir.Operation] = []
            walk(op, lambda o: loops.append(o) if "tile.stages" in o.attributes else None)
            for loop in [op, *loops]:
                rings[op_id(loop)] = (op_id(op), mems)
        elif "tile.stages" in op.attributes and op_id(op) not in rings:
            mems = filled(op, lambda o: PIPELINED in o.attributes)
            if mems:
                rings[op_id(op)] = (op_id(op), mems)

    walk(func, visit)
    return rings


# Non-injective destinations -------------------------------------------------------------------


def check_injective(op: ir.Operation, view: ir.Value) -> None:
    """A shared destination view must put its coordinates on distinct elements."""
    t = TensorType.of(view.type)
    if t is None or t.space != "shared":
        return
    lay = t.layout_value()
    inner = lay.inner if isinstance(lay, A.ComposedLayout) else lay  # a swizzle is a bijection
    shape, stride = tuple(A.flatten(inner.shape)), tuple(A.flatten(inner.stride))
    if not all(isinstance(x, int) for x in (*shape, *stride)):
        return  # a runtime stride: not decided here
    distinct = offsets(shape, stride)
    if distinct is None:
        return
    size = A.product(shape)
    root = view_root(view)
    name = "?" if root is None else ir.StringAttr(root.attributes["name"]).value
    raise LoweringError(
        op,
        f"'{name}' is written through the non-injective layout {inner}: its {size} "
        f"coordinates fall on {distinct} elements, so threads would write one element at "
        "once (a destination needs a layout without repeated offsets, e.g. no stride 0)",
    )


def offsets(shape: tuple[int, ...], stride: tuple[int, ...]) -> int | None:
    """None when (shape):(stride) is injective, else how many distinct offsets it has.

    Sorted by stride, each mode stepping past the reach of the smaller ones is injective (the
    usual case, decided without enumerating); otherwise the offsets are counted."""
    modes = sorted((abs(d), s) for s, d in zip(shape, stride, strict=True) if s > 1)
    reach = 0
    for d, s in modes:
        if d <= reach:
            break
        reach += (s - 1) * d
    else:
        return None
    seen = {0}
    for s, d in zip(shape, stride, strict=True):
        seen = {o + k * d for o in seen for k in range(s)}
    return None if len(seen) == A.product(shape) else len(seen)


# The pass -------------------------------------------------------------------------------------


def decided_spreads(func: ir.Operation) -> dict[ir.Value, object]:
    """tile-distribute's spreads of the kernel's register tensors, as far as its rules decide
    them this early (up to the first op they do not take yet, e.g. in a warp-specialised
    kernel); the values after it stay unknown."""
    spreads = Spreads(func)
    ops: list[ir.Operation] = []
    walk(func, ops.append)
    try:
        for op in ops:
            spreads.visit(op)
    except LoweringError:
        pass
    return spreads.of


def hazards(func: ir.Operation) -> list[tuple[Access, Access]]:
    """The kernel's hazards: (the later access, the pending one it meets), in program order of
    the later one. A non-injective destination raises a LoweringError at its op."""
    threads = A.product(tuple(ir.DenseI64ArrayAttr(func.attributes["tile.threads"])))
    memory = memories(func)
    k = Kernel(func, threads, decided_spreads(func), memory, ring_loops(func, memory))
    k.walk_block(func.regions[0].blocks[0], [], {})
    return list(k.found.values())


VERB = {"tile.load": "load", "tile.store": "store", "tile.copy": "copy", "tile.gemm": "gemm"}


def message(later: Access, earlier: Access) -> str:
    """The error at the later access: what it does, to which buffer, and the fix."""
    what = VERB.get(later.op.name, "relayout")
    alias = ""
    if later.buffer != earlier.buffer:
        alias = f" as '{earlier.buffer}' (the two buffers share memory: reuse =)"
    done, between = WHAT[earlier.kind, later.kind]
    done = done.format(buf=f"shared buffer '{later.buffer}'", alias=alias)
    return f"this {what} {done}, with no barrier between: put a barrier() between {between}"


def note(earlier: Access) -> str:
    return f"'{earlier.buffer}' is {'written' if earlier.kind == WRITE else 'read'} here"


@register
class TileHazards(Pass):
    """Refuse shared-memory races: a read of other threads' writes, or a write over what they
    may still read, with no barrier between; and non-injective destinations.

        "tile.copy"(%g, %s) {atom = "auto"} ...
        "tile.copy"(%s, %y) {atom = "auto"} ...
      → error: this copy reads shared buffer 's' that other threads wrote, with no barrier
        between: put a barrier() between the write and this read
        note: 's' is written here

    See the module's docstring for what orders accesses and when threads are the same.
    """

    name = "tile-hazards"

    def run(self, module: ir.Operation) -> None:
        failed = False
        for func in functions(module):
            if "tile.kernel" not in func.attributes or "tile.threads" not in func.attributes:
                continue
            try:
                found = hazards(func)
            except LoweringError as err:
                self.error(err.op, str(err))
                failed = True
                continue
            for later, earlier in found:
                self.error(later.op, message(later, earlier))
                emit(earlier.op.location, "note", note(earlier))
                failed = True
        if failed:
            self.fail()

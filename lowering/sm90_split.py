"""Split tails: `persistent(..., split_tail = 1)` in a warp-specialised SM90 kernel.

T output tiles over P persistent blocks make T div P whole waves and r = T mod P tiles left,
on which P - r blocks would idle. With the tail split, each of those r tiles is cut along K
into s = min(P div r, KT, SLOTS div r) parts (KT: the pipelined loop's trip count), one unit
of work each, so the last wave takes about 1/s of a tile's time. The persistent loop walks
units instead of tiles:

    units 0 .. W-1, W = P·(T div P): whole tiles, k in [0, KT)
    units W + v, v < r·s:            tile W + v div s, part v mod s, k in [p·KT/s, (p+1)·KT/s)

Block c takes units c, c + P, ...: its whole tiles first, then at most one part (the tail's
r·s <= P units start at a multiple of P). So every pipelined loop but a block's last runs KT
iterations, and the ring's numbering stays `unit·KT + (k - k_begin)` (`sm90_loops.counter_of`
with `full`). With s = 1 (no tail, or a tail too wide to split) the units are the tiles.

Parts meet in a workspace: a zero-initialised global of SLOTS partial-sum slots and as many
flags, in the kernel's module. The consumers of a part p > 0 write their accumulators to slot
v (each thread its registers, 16 bytes at a time, coalesced), synchronise, and one thread
releases flag v; the owner (p = 0) has one thread acquire flags v+1 .. v+s-1 and reset them,
synchronises, adds those slots to its accumulators and stores the tile as usual. Every block
is resident (a persistent grid), and only owners wait, on parts that never wait: no
deadlock. Launches of one kernel module share its workspace, so they must not overlap
(launches on one stream do not).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, scf

from tilec.binding import defined_inside
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.sm90_epilogue import barrier
from tilec.lowering.sm90_loops import invariant
from tilec.lowering.sm90_wgmma import element
from tilec.lowering.tile_access import if_else, when
from tilec.lowering.tile_views import gep, global_names
from tilec.passes.layout_fold import constant_index

SLOTS = 160  # partial-sum slots: no fewer than the SMs of a GPU the kernel runs on
GLOBAL = 1  # the global address space


@dataclass
class Split:
    """One split persistent loop: its units' K ranges and, in the unit being lowered, which
    part of which tile it is."""

    full: ir.Value  # KT, the pipelined loops' whole trip count
    tail: ir.Value  # i1: this unit is a part of a split tile
    slot: ir.Value  # its workspace slot (v)
    part: ir.Value  # 0: the owner, which stores the tile
    parts: ir.Value  # s


def pipelined_loops(loop: ir.Operation) -> list[ir.Operation]:
    body = loop.regions[0].blocks[0]
    return [
        o.operation
        for o in body.operations
        if o.operation.name == "scf.for" and "tile.stages" in o.operation.attributes
    ]


def hoist(value: ir.Value, loop: ir.Operation) -> None:
    """Move the pure arith computing `value` (invariant in `loop`) before the loop."""
    if not defined_inside(value, loop):
        return
    op = value.owner.operation if isinstance(value.owner, ir.OpView) else value.owner
    for v in op.operands:
        hoist(v, loop)
    op.move_before(loop)


def plan(coord: ir.Operation, loop: ir.Operation, role: ir.Operation, b: IndexBuilder) -> tuple[
    ir.Value, Split
]:  # fmt: skip
    """The units of the split persistent `loop` (its bound rewritten), the tile index the
    unit at `coord` (its `tile_coord`) stands for, and its Split; the pipelined loops in
    `loop` then walk the unit's K range."""
    kloops = pipelined_loops(loop)
    if not kloops:
        raise LoweringError(loop, "split_tail splits a pipelined loop in the persistent one: none")
    full = kloops[0].operands[1]
    for k in kloops:
        lb, ub, step = list(k.operands)[:3]
        if constant_index(lb) != 0 or constant_index(step) != 1 or not invariant(ub, role):
            raise LoweringError(
                k, "split_tail needs the pipelined loop to run 0 .. n, n the same on every tile"
            )
        known = constant_index(ub)
        if ub != full and (known is None or known != constant_index(full)):
            raise LoweringError(k, "split_tail needs the pipelined loops to have one trip count")
    hoist(full, loop)
    total, step = list(loop.operands)[1:3]
    with ir.InsertionPoint(loop), loop.location:
        r = b.rem(total, step)
        r1 = arith.MaxUIOp(b.value(r), b.value(1)).result
        s = arith.MinUIOp(b.value(b.div(step, r1)), full).result
        s = arith.MinUIOp(s, b.value(b.div(SLOTS, r1))).result
        s = arith.MaxUIOp(s, b.value(1)).result  # never 0: it divides below
        split = arith.CmpIOp(arith.CmpIPredicate.ugt, s, b.value(1)).result
        whole = b.sub(total, arith.SelectOp(split, b.value(r), b.value(0)).result)
        tail_units = arith.SelectOp(split, b.value(b.mul(r, s)), b.value(0)).result
        units = b.add(whole, tail_units)
    loop.operands[1] = b.value(units)
    u = coord.operands[0]
    tail = arith.CmpIOp(arith.CmpIPredicate.uge, u, b.value(whole)).result
    v = arith.SelectOp(tail, b.value(b.sub(u, whole)), b.value(0)).result
    tile = arith.SelectOp(tail, b.value(b.add(whole, b.div(v, s))), u).result
    part = b.rem(v, s)
    begin = b.div(b.mul(part, full), s)
    end = arith.SelectOp(tail, b.value(b.div(b.mul(b.add(part, 1), full), s)), full).result
    for k in kloops:
        k.operands[0] = b.value(begin)
        k.operands[1] = end
    return tile, Split(full, tail, v, b.value(part), s)


def workspace(module: ir.Operation, name: str, slot_bytes: int) -> tuple[ir.Value, ir.Value]:
    """Pointers to the kernel's partial-sum slots and flags (globals made once a kernel)."""
    body = module.regions[0].blocks[0]
    found = global_names(module)
    pointers = []
    for what, size in (("partials", SLOTS * slot_bytes), ("flags", SLOTS * 4)):
        symbol = f"__tile_split_{name}_{what}"
        if symbol not in found:
            t = ir.Type.parse(f"!llvm.array<{size} x i8>")
            with ir.InsertionPoint.at_block_begin(body), module.location:
                g = llvm.GlobalOp(
                    t,
                    symbol,
                    ir.Attribute.parse("#llvm.linkage<internal>"),
                    alignment=16,
                    addr_space=GLOBAL,
                )
                with ir.InsertionPoint(g.initializer.blocks.append()):
                    llvm.ReturnOp(arg=llvm.ZeroOp(t).result)
        pointers.append(llvm.AddressOfOp(ir.Type.parse(f"!llvm.ptr<{GLOBAL}>"), symbol).result)
    return pointers[0], pointers[1]


@dataclass
class Parts:
    """A consumer thread's side of the sum: `accs` its accumulator structs of `regs` f32
    each, `thread` its index among `threads` consumer threads, `leader` thread 0 of them,
    `ident` a named barrier for them all."""

    accs: list[ir.Value]
    regs: int
    thread: Term
    threads: int
    leader: ir.Value
    ident: int

    @property
    def slot_bytes(self) -> int:
        return self.threads * len(self.accs) * self.regs * 4

    def address(self, base: ir.Value, slot: Term, b: IndexBuilder) -> ir.Value:
        offset = b.add(b.mul(slot, self.slot_bytes), b.mul(self.thread, 16))
        return gep(base, offset, ir.IntegerType.get_signless(8), b)

    def quads(self) -> range:
        return range(len(self.accs) * self.regs // 4)


def settle(split: Split, parts: Parts, pointers: tuple[ir.Value, ir.Value], store) -> None:  # noqa: ANN001
    """The store of a split unit's tile: a part p > 0 hands its sums to the owner; the
    owner (and every whole tile) stores, `store(accs)` with the parts added."""
    b = IndexBuilder()
    partials, flags = pointers
    peer = arith.AndIOp(
        split.tail, arith.CmpIOp(arith.CmpIPredicate.ne, split.part, b.value(0)).result
    ).result

    def hand_over() -> list:
        write(parts, parts.address(partials, split.slot, b), b)
        barrier(parts.ident, parts.threads, b)
        when(parts.leader, lambda: signal(gep(flags, b.mul(split.slot, 4), _i8(), b)))
        return []

    def own() -> list:
        types = [a.type for a in parts.accs]
        summed = if_else(
            split.tail, types, lambda: gather(split, parts, pointers), lambda: parts.accs
        )
        store(summed)
        return []

    if_else(peer, [], hand_over, own)


def _i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def floats(parts: Parts, accs: list[ir.Value]) -> list[ir.Value]:
    return [element(a, i) for a in accs for i in range(parts.regs)]


def write(parts: Parts, address: ir.Value, b: IndexBuilder) -> None:
    """This thread's accumulators at `address`, 16 bytes a step, the threads side by side."""
    values = floats(parts, parts.accs)
    for q in parts.quads():
        at = gep(address, q * parts.threads * 16, _i8(), b)
        asm = "st.global.v4.f32 [$0], {$1, $2, $3, $4};"
        llvm.InlineAsmOp(None, [at, *values[4 * q : 4 * q + 4]], asm, "l,f,f,f,f",
                         has_side_effects=True)  # fmt: skip


def signal(flag: ir.Value) -> None:
    """Release the slot's flag: the block's writes (ordered before by the barrier) first."""
    asm = "fence.acq_rel.gpu;\n\tst.relaxed.gpu.global.b32 [$0], 1;"
    llvm.InlineAsmOp(None, [flag], asm, "l", has_side_effects=True)


def wait(flag: ir.Value) -> None:
    """Acquire the slot's flag (spin until set), then clear it for the next launch."""
    asm = (
        "{\n\t.reg .pred %p;\n\t.reg .b32 %r;\n"
        "split_wait_${:uid}:\n\t"
        "ld.acquire.gpu.global.b32 %r, [$0];\n\t"
        "setp.eq.s32 %p, %r, 0;\n\t"
        "@%p bra split_wait_${:uid};\n\t"
        "st.relaxed.gpu.global.b32 [$0], 0;\n\t}"
    )
    llvm.InlineAsmOp(None, [flag], asm, "l", has_side_effects=True)


def gather(split: Split, parts: Parts, pointers: tuple[ir.Value, ir.Value]) -> list[ir.Value]:
    """The owner's accumulators plus parts 1 .. s-1 from their slots."""
    b = IndexBuilder()
    partials, flags = pointers

    def wait_all() -> None:
        loop = scf.ForOp(b.value(1), split.parts, b.value(1))
        with ir.InsertionPoint(loop.body):
            wait(gep(flags, b.mul(b.add(split.slot, loop.induction_variable), 4), _i8(), b))
            scf.YieldOp([])

    when(parts.leader, wait_all)
    barrier(parts.ident, parts.threads, b)
    loop = scf.ForOp(b.value(1), split.parts, b.value(1), parts.accs)
    with ir.InsertionPoint(loop.body):
        slot = b.add(split.slot, loop.induction_variable)
        address = parts.address(partials, slot, b)
        mine = floats(parts, list(loop.inner_iter_args))
        f32 = ir.F32Type.get()
        quad = llvm.StructType.get_literal([f32] * 4)
        added = []
        for q in parts.quads():
            at = gep(address, q * parts.threads * 16, _i8(), b)
            asm = "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4];"
            got = llvm.InlineAsmOp(quad, [at], asm, "=f,=f,=f,=f,l", has_side_effects=True)
            for j in range(4):
                theirs = llvm.ExtractValueOp(f32, got.result, [j]).result
                added.append(arith.AddFOp(mine[4 * q + j], theirs).result)
        accs = []
        for n, acc in enumerate(loop.inner_iter_args):
            for i in range(parts.regs):
                acc = llvm.InsertValueOp(acc, added[n * parts.regs + i], [i]).result
            accs.append(acc)
        scf.YieldOp(accs)
    return list(loop.results)


def refuse(loop: ir.Operation, cluster: int, pingpong: bool) -> None:
    if cluster > 1 or pingpong:
        what = "cluster(...)" if cluster > 1 else "pingpong consumers"
        raise LoweringError(loop, f"split_tail is not lowered with {what} yet")

"""Split tails: `persistent(..., split_tail = 1)` in a warp-specialised SM90 kernel.

T output tiles of KT k-tiles (KT: the pipelined loops' trip count) over P persistent blocks
make T div P whole waves and r = T mod P tiles left, on which P - r blocks would idle. The
persistent loop walks units of work instead of tiles, block c taking units c, c + P, ...,
in one of three plans chosen at launch (`Plan.make`):

- stream-K, where whole waves come first and it saves the busiest block enough (GAIN k-tiles,
  and a tenth of its work unless the partial wave fills more than half the blocks): units
  u < W are whole tiles, W = P·(T div P) where the partial wave fills more than half the
  blocks (each block then shares under one tile), else P·(T div P - 1) (the wave before it
  shared too); the last R = T - W tiles' I = R·KT iterations are shared out evenly, block
  c taking [a, b) = [c·I/P,
  (c+1)·I/P), its segments walked from its last tile down (unit W + c + q·P: tile
  (b - 1) div KT - q, k in [max(a - t·KT, 0), min(b - t·KT, KT))). A segment that does not
  reach KT is a peer of the tile's owner (the segment holding k = KT - 1);
- a split tail, where that gives two parts or more: units u < W = T - r whole, then the r
  tiles cut into s = min(P div r, max(KT div GAIN, 1), SLOTS div r) parts each (a part at
  least GAIN k-tiles where KT allows: the owner reads the others' sums), part 0 the owner;
- whole tiles otherwise.

Each unit carries the ring's count before its first k iteration (the block's earlier units'
iterations, in closed form), which `sm90_loops.counter_of` continues, so producer and
consumers number the same iterations. The plan's arithmetic folds to Python ints when given
ints (test/unit/test_split_plan.py walks every block's units with it).

Units meet in a workspace: a zero-initialised global of SLOTS partial-sum slots and as many
flags, in the kernel's module. The consumers of a peer write their accumulators to its slot
(each thread its registers, 16 bytes at a time, coalesced), synchronise, and one thread
releases the slot's flag; the owner has one thread acquire its peers' flags and reset them,
synchronises, adds those slots to its accumulators and stores the tile as usual. Every block
is resident (a persistent grid), and owners wait only on peers that never wait before
handing over (a stream-K block hands over its first segment walked and owns with a peer only
its last): no deadlock. In a kernel of clusters the units are clusters' tiles; every block of
a cluster runs the same units (so multicast halves stay in step), on its own tile, in slot
unit slot · width + rank. Launches of one kernel module share its workspace, so they must not
overlap: the bundle's manifest says `stateful`, and the runtime orders launches on different
streams one after another (launches on one stream do not overlap).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, scf

from tilec.binding import defined_inside
from tilec.lowering import Flag, IndexBuilder, LoweringError, Term
from tilec.lowering.sm90_loops import invariant
from tilec.lowering.tile_access import when
from tilec.lowering.tile_shared import global_names
from tilec.lowering.tile_views import gep
from tilec.passes.layout_fold import constant_index

SLOTS = 160  # partial-sum slots: no fewer than the SMs of a GPU the kernel runs on
GAIN = 16  # k-tiles: about three times what a fix-up costs a block (docs/performance.md)
GLOBAL = 1  # the global address space


@dataclass
class Split:
    """One split persistent loop, in the unit being lowered: the ring's count before its first
    K iteration, and whether it hands its sums over or stores the tile (adding its peers')."""

    start: Term  # iterations of the pipelined loops the block ran before this unit's
    peer: ir.Value  # i1: a part of a tile whose owner is another unit: hand the sums over
    slot: ir.Value  # where a peer hands them over
    first: ir.Value  # an owner's peers' slots, first .. last - 1 (none: first == last)
    last: ir.Value
    width: int = 1  # blocks a cluster: each walks the same units with its own tile
    rank: Term = 0  # the block's rank in it

    def block_slot(self, slot: Term, b: IndexBuilder) -> Term:
        """The workspace slot of the block's own tile in the cluster's unit slot."""
        return b.add(b.mul(slot, self.width), self.rank)


def unit_of(op: ir.Operation) -> Split:
    """The Split of the unit `op` is in: its persistent loop's `tile.work_unit` op."""
    loop = op.parent
    while loop.name != "func.func" and "tile.split_tail" not in loop.attributes:
        loop = loop.parent
    if loop.name == "func.func":
        raise LoweringError(op, "tile.unit_sum belongs in a split persistent loop")
    for o in loop.regions[0].blocks[0].operations:
        if o.operation.name == "tile.work_unit":
            unit = o.operation
            start, peer, slot, first, last, rank = unit.operands
            width = ir.IntegerAttr(unit.attributes["width"]).value
            return Split(start, peer, slot, first, last, width, rank)
    raise LoweringError(op, "a split persistent loop needs its tile.work_unit (tile-schedule)")


def around(op: ir.Operation) -> ir.Operation:
    """The op holding `op`, past `scf.if`s (a ping-pong group's turn guard): for `tile_coord`
    and a pipelined loop, their persistent loop."""
    parent = op.parent
    while parent.name == "scf.if":
        parent = parent.parent
    return parent


def pipelined_loops(loop: ir.Operation) -> list[ir.Operation]:
    """The pipelined loops in the persistent `loop`'s body, directly or under `scf.if`s (a
    ping-pong group's turn guard)."""
    found: list[ir.Operation] = []

    def visit(block: ir.Block) -> None:
        for o in block.operations:
            op = o.operation
            if op.name == "scf.for" and "tile.stages" in op.attributes:
                found.append(op)
            elif op.name == "scf.if":
                for region in op.regions:
                    for inner in region.blocks:
                        visit(inner)

    visit(loop.regions[0].blocks[0])
    return found


def hoist(value: ir.Value, loop: ir.Operation) -> None:
    """Move the pure arith computing `value` (invariant in `loop`) before the loop."""
    if not defined_inside(value, loop):
        return
    op = value.owner.operation if isinstance(value.owner, ir.OpView) else value.owner
    for v in op.operands:
        hoist(v, loop)
    op.move_before(loop)


def trip_count(loop: ir.Operation, role: ir.Operation) -> ir.Value:
    """KT: the one trip count, 0 .. KT, of the pipelined loops in the persistent `loop`."""
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
    return full


@dataclass
class Plan:
    """The block-invariant part of the split (computed before the persistent loop): block c
    of P, KT k-tiles a tile. With `stream`, stream-K over the last R = T - W tiles (the last
    partial wave, and one whole wave before it unless it fills more than half the blocks),
    block c taking iterations a .. b - 1 of their
    R·KT; else `whole` tiles, then the tail's tiles split s ways (s = 1: none). Its
    arithmetic is IndexBuilder's, which folds to Python ints and bools on static inputs."""

    c: Term
    p: Term
    full: Term
    whole: Term
    s: Term
    stream: Flag
    dp: Term  # W / P: each block's whole tiles before its stream-K share
    w: Term
    iters: Term  # R·KT, at least 1 (a divisor)
    a: Term
    b: Term
    t_last: Term

    @staticmethod
    def make(
        c: Term, total: Term, p: Term, full: Term, b: IndexBuilder, slots: int = SLOTS
    ) -> tuple[Plan, Term]:
        """The plan and the persistent loop's new upper bound (units c, c + P, ... below it),
        with `slots` workspace slots for the units (SLOTS over the blocks of a cluster)."""
        kt1 = b.umax(full, 1)  # divisors never 0, whichever plan the selects keep
        r = b.rem(total, p)
        r1 = b.umax(r, 1)
        # each part at least GAIN k-tiles: the owner reads s - 1 parts' sums, ~4 k-tiles each
        parts = b.umin(b.div(p, r1), b.umax(b.div(full, GAIN), 1))
        s = b.umax(b.umin(parts, b.div(slots, r1)), 1)
        waves = b.div(total, p)
        # stream-K where a partial wave follows whole ones: it and the wave before, R tiles;
        # where the partial wave fills more than half the blocks, it alone (each block a
        # share of under one tile, which no split tail can give)
        near = b.cmp("ugt", b.mul(r, 2), p)
        dp = b.select(near, waves, b.sub(b.umax(waves, 1), 1))
        w = b.mul(dp, p)
        iters = b.mul(b.sub(total, w), full)
        enough = b.both(b.cmp("ule", p, slots), b.cmp("uge", iters, p))  # a slot a block
        # the k-tiles it saves the busiest block, KT - ceil(r·KT / P): at least GAIN, and a
        # tenth of its whole tiles' where shares span more than a tile (blocks at different k
        # share less of A and B in L2: stream-K over two waves lost 13% at 4096×4096×11008;
        # over the partial wave alone, shares under a tile, it lost nothing there)
        saved = b.sub(full, b.div(b.add(b.mul(r, full), b.sub(p, 1)), p))
        busiest = b.mul(b.add(waves, 1), full)
        gain = b.cmp("uge", saved, GAIN)
        worth = b.both(gain, b.either(near, b.cmp("uge", b.mul(saved, 10), busiest)))
        worth = b.both(b.both(b.cmp("uge", waves, 1), b.cmp("ugt", r, 0)), worth)
        stream = b.both(worth, enough)
        split = b.both(b.cmp("ugt", s, 1), b.negate(stream))  # the tail's tiles s ways
        whole = b.sub(total, b.select(split, r, 0))
        units = b.add(whole, b.select(split, b.mul(r, s), 0))
        iters1 = b.umax(iters, 1)
        first = b.div(b.mul(c, iters), p)
        last = b.div(b.mul(b.add(c, 1), iters), p)  # > first: iters >= P
        t_first, t_last = b.div(first, kt1), b.div(b.sub(last, 1), kt1)
        segments = b.add(b.sub(t_last, t_first), 1)
        bound = b.add(b.add(w, b.add(c, 1)), b.mul(b.sub(segments, 1), p))
        plan = Plan(c, p, full, whole, s, stream, dp, w, iters1, first, last, t_last)
        return plan, b.select(stream, bound, units)

    def split_unit(self, u: Term, b: IndexBuilder) -> tuple[list[Term], Flag]:
        """A unit of the split tail: whole tile u, or part u - whole of the tail's parts,
        part 0 the owner; and whether it is a peer."""
        tail = b.cmp("uge", u, self.whole)
        v = b.select(tail, b.sub(u, self.whole), 0)
        part = b.rem(v, self.s)
        tile = b.select(tail, b.add(self.whole, b.div(v, self.s)), u)
        begin = b.div(b.mul(part, self.full), self.s)
        end = b.select(tail, b.div(b.mul(b.add(part, 1), self.full), self.s), self.full)
        peers = b.select(b.both(tail, b.cmp("eq", part, 0)), self.s, 1)
        j = b.div(b.sub(u, self.c), self.p)
        start = b.mul(j, self.full)
        peer = b.both(tail, b.cmp("ne", part, 0))
        return [tile, begin, end, start, v, b.add(v, 1), b.add(v, peers)], peer

    def stream_unit(self, u: Term, b: IndexBuilder) -> tuple[list[Term], Flag]:
        """A unit of stream-K: whole tile u (u < W), or the q-th segment of the block's
        share, walked from its last tile down (the segment it hands over first, the one it
        owns with a peer's sums last: owners wait only on segments their peers ran first)."""
        kt = self.full
        shared = b.cmp("uge", u, self.w)
        q = b.div(b.select(shared, b.sub(u, self.w), 0), self.p)
        t = b.sub(self.t_last, q)
        at = b.mul(t, kt)
        begin = b.smax(b.sub(self.a, at), 0)
        end = b.smin(b.sub(self.b, at), kt)
        # the block holding iteration `at`: the first of the tile's peers
        first = b.div(b.sub(b.mul(b.add(at, 1), self.p), 1), self.iters)
        done = b.sub(self.b, b.add(at, end))  # the segments walked before this one
        start = b.add(b.mul(self.dp, kt), done)
        j = b.div(b.sub(u, self.c), self.p)
        values = [b.add(self.w, t), begin, end, start, self.c, first, self.c]
        whole = [u, 0, kt, b.mul(j, kt), self.c, self.c, self.c]
        peer = b.both(shared, b.cmp("slt", end, kt))
        return [b.select(shared, x, y) for x, y in zip(values, whole, strict=True)], peer

    def unit(self, u: Term, b: IndexBuilder) -> tuple[list[Term], Flag]:
        """[tile, k begin, k end, ring start, slot, first peer slot, last + 1], peer."""
        split, peer_a = self.split_unit(u, b)
        stream, peer_b = self.stream_unit(u, b)
        values = [b.select(self.stream, x, y) for x, y in zip(stream, split, strict=True)]
        return values, b.select(self.stream, peer_b, peer_a)


def plan(
    coord: ir.Operation,
    loop: ir.Operation,
    role: ir.Operation,
    b: IndexBuilder,
    cluster: tuple[int, Term] = (1, 0),
) -> tuple[ir.Value, Split]:
    """The units of the split persistent `loop` (its bound rewritten), the tile index the
    unit at `coord` (its `tile_coord`) stands for, and its Split; the pipelined loops in
    `loop` then walk the unit's K range. In a kernel of clusters (`cluster`: its width and
    the block's rank) the loop walks clusters' tiles: every block of a cluster runs the same
    units, each on its own tile with its own slots."""
    full = trip_count(loop, role)
    c, total, p = list(loop.operands)[:3]
    width, rank = cluster
    with ir.InsertionPoint(loop), loop.location:
        units, bound = Plan.make(c, total, p, full, b, SLOTS // width)
    loop.operands[1] = b.value(bound)
    (tile, begin, end, start, slot, first, last), peer = units.unit(coord.operands[0], b)
    for k in pipelined_loops(loop):
        k.operands[0] = b.value(begin)
        k.operands[1] = b.value(end)
    return tile, Split(start, peer, slot, first, last, width, rank)


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
    """A consumer thread's side of the sum: `values` its accumulator's f32 values, `thread` its
    index among `threads` consumer threads, `leader` thread 0 of them. The consumers order
    their accesses with `gpu.barrier`, which tile-warp-roles makes the role's named barrier."""

    values: list[ir.Value]
    thread: Term
    threads: int
    leader: ir.Value

    @property
    def slot_bytes(self) -> int:
        return self.threads * len(self.values) * 4

    def address(self, base: ir.Value, slot: Term, b: IndexBuilder) -> ir.Value:
        offset = b.add(b.mul(slot, self.slot_bytes), b.mul(self.thread, 16))
        return gep(base, offset, ir.IntegerType.get_signless(8), b)

    def quads(self) -> range:
        if len(self.values) % 4:
            raise ValueError("a split accumulator is stored 16 bytes at a time")
        return range(len(self.values) // 4)


def hand_over(split: Split, parts: Parts, pointers: tuple[ir.Value, ir.Value]) -> None:
    """A peer's part into its slot, then its flag released for the owner."""
    b = IndexBuilder()
    partials, flags = pointers
    slot = split.block_slot(split.slot, b)
    write(parts, parts.address(partials, slot, b), b)
    gpu.BarrierOp()
    when(parts.leader, lambda: signal(gep(flags, b.mul(slot, 4), _i8(), b)))


def _i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def write(parts: Parts, address: ir.Value, b: IndexBuilder) -> None:
    """This thread's values at `address`, 16 bytes a step, the threads side by side."""
    values = parts.values
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
    """The owner's accumulator summed over the tile's units: its values plus its peers'
    (slots first .. last - 1) from their slots. A whole
    tile has none: the wait and the loop run no iteration, and only the barrier is left (under
    an `if` of its own, or one around it all, the fused f32-output GEMM spilled 16 bytes)."""
    b = IndexBuilder()
    partials, flags = pointers

    def wait_all() -> None:
        loop = scf.ForOp(split.first, split.last, b.value(1))
        with ir.InsertionPoint(loop.body):
            slot = split.block_slot(loop.induction_variable, b)
            wait(gep(flags, b.mul(slot, 4), _i8(), b))
            scf.YieldOp([])

    when(parts.leader, wait_all)
    gpu.BarrierOp()
    loop = scf.ForOp(split.first, split.last, b.value(1), parts.values)
    with ir.InsertionPoint(loop.body):
        address = parts.address(partials, split.block_slot(loop.induction_variable, b), b)
        mine = list(loop.inner_iter_args)
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
        scf.YieldOp(added)
    return list(loop.results)

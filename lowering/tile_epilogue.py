r"""Passes (lowered stage): `load(t, like = x)`, a tile read into another register tensor's
partition, and GEMM epilogues that load, combine and store chunk by chunk (convert-tile-memory).

A plain load spreads its tile over the threads as its own layout suits (`tile_fragments`);
with `like`, it takes the partition of `x` instead, so the two combine elementwise. For an MMA
accumulator that is the mma.sync C fragment (see `tile_mma`): chunk i = mi + TM*ni of a thread
holds c0..c3 of atom (mi, ni), c(2h+e) at row g + 8h, column 2t + e of the atom, so each
thread reads two adjacent pairs per atom, as the accumulator's store writes them:

    atom (mi, ni), lane = 4g + t:      columns 2t, 2t+1
        row g       [c0 c1]            one 2-element vector load each, when the whole tile is
        row g + 8   [c2 c3]            in bounds and aligned; else two predicated scalars

That is how an epilogue reads `beta * C` or a bias next to `alpha * acc`; a bias broadcast
along M is a view with a 0 row stride, so every row of a thread's pairs reads the same
addresses.

Loaded at the `load`, a 128×128 C tile would sit in registers beside the 128 accumulators of
each thread until the store, and spill. So when the loaded value only flows through
elementwise math into a `store` of the same block, with nothing between that writes memory or
orders threads, the load is `Deferred`: the store computes each chunk where it writes it
(load pair, math, store pair), and its fast path also asks the loads' bounds and alignment.
tile-distribute decides it once, on the tile ops (`mark_deferred`), and marks the load and the
elementwise ops on its way to the store `tile.deferred`; the rungs read the mark:

    c = load(gC, like = acc)                 store: if whole tile in bounds and aligned:
    b = load(gBias, like = acc)                       for each chunk: ld.v2 C, ld.v2 bias,
    store(relu(alpha * acc + beta * c + b), gC)          fma, max, st.v2
                                                    else: the same with predicated scalars
"""

from __future__ import annotations

from mlir import ir

from tilec.binding import walk
from tilec.lowering import IndexBuilder, LoweringError
from tilec.lowering.tile_access import Side, if_else, read_chunk
from tilec.lowering.tile_fragments import Deferred, Evaluation, Frag, Partition
from tilec.lowering.tile_memory import deferred_load
from tilec.lowering.tile_memory import load as load_tile
from tilec.lowering.tile_mma import MmaPartition, PairCoords
from tilec.lowering.tile_views import View

# What a deferred value may pass through on its way to the store, and what it may not move
# past: tile ops that write memory or order threads, ops that hold regions (which may do
# either), and, in hand-written IR, the lowered forms of those (stores, calls, barriers, any
# nvvm op, inline asm).
DEFERRED = "tile.deferred"
ELEMENTWISE = ("tile.binary", "tile.unary", "tile.convert")
ORDERED = (
    "tile.store",
    "tile.copy",
    "tile.gemm",
    "tile.barrier",
    "tile.relayout",
    "tile.reduce",
    "tile.cluster_reduce",
    "tile.unit_sum",
    "tile.unit_part",
    "tile.fill",
    "tile.async_commit",
    "tile.async_wait",
)
LOWERED_ORDERED = ("llvm.store", "llvm.call", "gpu.barrier", "llvm.inline_asm")


def ordered(op: ir.Operation) -> bool:
    """Whether a deferred load may not move past `op` (see ORDERED)."""
    name = op.name
    lowered = name in LOWERED_ORDERED or name.startswith("nvvm.")
    return name in ORDERED or lowered or bool(op.regions)


def mark_deferred(func: ir.Operation) -> None:
    """Mark each `load(t, like = x)` whose value is stored later (`stored_later`), and the
    elementwise ops between it and the store, `tile.deferred` (decided on the tile ops, before
    any rung lowers one)."""
    loads: list[ir.Operation] = []

    def visit(op: ir.Operation) -> None:
        if op.name == "tile.load" and len(op.operands) > 1:
            loads.append(op)

    walk(func, visit)
    for load in loads:
        if not stored_later(load):
            continue
        op = load
        while op.name != "tile.store":
            op.attributes[DEFERRED] = ir.UnitAttr.get()
            op = next(iter(op.results[0].uses)).owner.operation


def load(
    op: ir.Operation, view: View, other: ir.Value, like: Frag, tid: ir.Value, threads: int
) -> Frag | Deferred:
    """The tile of `view` in registers, partitioned as `like` (a load without `like` is spread
    as its type says: convert-tile-to-gpu calls tile_memory.load for it)."""
    shape = view.static_shape(op)
    if isinstance(like.part, MmaPartition):
        if shape != like.part.block:
            raise LoweringError(op, f"loading a {shape} tile like a {like.part.block} fragment")
        reader = FragmentReader(view, other, like.part, tid, threads)
        return reader.deferred() if DEFERRED in op.attributes else reader.now()
    if shape != like.part.shape:
        raise LoweringError(op, f"loading a {shape} tile like a {like.part.shape} tensor")
    if DEFERRED in op.attributes:
        return deferred_load(view, other, like.part, tid)
    return load_tile(op, view, other, tid, threads, like.part)


def stored_later(op: ir.Operation) -> bool:
    """Whether the value `op` loads reaches a `tile.store` (as the value stored) through
    elementwise ops alone, each the only use of the one before, all in `op`'s block, with no
    op between `op` and the store that writes memory, orders threads or holds regions."""
    value, block = op.results[0], op.block
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return False
        user = uses[0].owner.operation
        if user.block != block:
            return False
        if user.name == "tile.store":
            if uses[0].operand_number != 0:
                return False
            break
        if user.name not in ELEMENTWISE:
            return False
        value = user.results[0]
    between = False
    for other in block.operations:
        other = other.operation
        if other == user:
            return True
        if between and ordered(other):
            return False
        between = between or other == op
    return False


class FragmentReader:
    """Reads the tile at `view` as accumulator `part` lays it out: chunk i = mi + TM*ni holds
    the pairs (g, 2t..2t+1) and (g + 8, 2t..2t+1) of atom (mi, ni)."""

    def __init__(
        self, view: View, other: ir.Value, part: MmaPartition, tid: ir.Value, threads: int
    ) -> None:
        self.view, self.other, self.part = view, other, part
        self.b = IndexBuilder()
        self.coords = PairCoords(part, tid, self.b)
        # The block tile as chunks of two elements along N (what one pair spans), for `Side`
        # to size the accesses and to test the whole tile for the fast path.
        self.pairs = Partition(part.block, 1, 2, threads)
        self.side = Side.of(view, self.pairs)

    def pair(self, i: int, h: int, guarded: bool) -> list[ir.Value]:
        other = self.other if guarded else None
        return read_chunk(self.side, self.pairs, self.coords(i, h), other, self.b)

    def fast(self, b: IndexBuilder) -> ir.Value | bool:
        return self.side.fast(self.pairs, b)

    def now(self) -> Frag:
        """Every chunk, loaded here."""
        part = self.part

        def version(guarded: bool) -> list[ir.Value]:
            pairs = [self.pair(i, h, guarded) for i in range(part.iters) for h in range(2)]
            return [v for pair in pairs for v in pair]

        types = [self.view.elem] * (part.iters * part.vec)
        flat = if_else(self.fast(self.b), types, lambda: version(False), lambda: version(True))
        rows = [flat[i * part.vec : (i + 1) * part.vec] for i in range(part.iters)]
        return Frag(part, self.view.elem, rows)

    def deferred(self) -> Deferred:
        """Each chunk loaded where it is stored; a pair once per place (`Evaluation`)."""
        key = id(self)

        def value(i: int, j: int, ev: Evaluation) -> ir.Value:
            h, e = divmod(j, 2)
            if (key, i, h) not in ev.loaded:
                ev.loaded[(key, i, h)] = self.pair(i, h, ev.guarded)
            return ev.loaded[(key, i, h)][e]

        return Deferred(self.part, (self.fast,), value)

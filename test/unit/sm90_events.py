"""Test helpers: what one block of an SM90 kernel does to its mbarrier ring, read by running
its `gpu` stage (`sm90_ir.Run`): barrier inits, TMA loads, waits, arrivals, wgmmas and their
groups, named barriers; each event of one warp group (the producer's group 0, or a consumer
group), with the values of the enclosing loops' induction variables it ran under."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from mlir import ir
from sm90_ir import WARPGROUP, At, Build, Launch, Run, launches
from sm90_model import Descriptor, TensorMap, Wgmma

from tilec.bank_ops import PASS_THROUGH
from tilec.runtime.params import TmaDescriptor


@dataclass(frozen=True)
class Init:
    group: int
    barrier: int
    count: int


@dataclass(frozen=True)
class Load:
    """cp.async.bulk.tensor of `map`'s box at `coords` (innermost first) into `dst`, its bytes
    completing on `barrier` (in this block, or in every block `multicast` names)."""

    group: int
    loops: tuple[int, ...]
    map: TmaDescriptor
    coords: tuple[int, ...]
    dst: int
    barrier: int
    multicast: int  # the cluster's blocks as a bit mask, 0: this block alone


@dataclass(frozen=True)
class Wait:
    group: int
    loops: tuple[int, ...]
    barrier: int
    parity: int


@dataclass(frozen=True)
class Arrive:
    """`count` arrivals on `barrier` (`sm90_ir.REMOTE` + rank << 24 + address: in block rank of
    the cluster), announcing `tx` bytes first (arrive.expect_tx)."""

    group: int
    loops: tuple[int, ...]
    barrier: int
    count: int
    tx: int = 0


@dataclass(frozen=True)
class Mma:
    """One wgmma the group issues: its op and its two matrix descriptors (exact 64 bits)."""

    group: int
    loops: tuple[int, ...]
    op: ir.Operation
    a: int
    b: int


@dataclass(frozen=True)
class Commit:
    group: int


@dataclass(frozen=True)
class WaitGroup:
    group: int
    pending: int  # wgmma groups that may still run


@dataclass(frozen=True)
class NamedBarrier:
    group: int
    ident: int
    count: int  # threads
    threads: int  # of this group that arrive
    sync: bool  # bar.sync waits, bar.arrive does not


Event = Init | Load | Wait | Arrive | Mma | Commit | WaitGroup | NamedBarrier
NAMED_BARRIER = '"llvm.nvvm.barrier.cta.'
WANTED = {
    "nvvm.mbarrier.init",
    "nvvm.cp.async.bulk.tensor.shared.cluster.global",
    "nvvm.mbarrier.try_wait.parity",
    "nvvm.mbarrier.arrive",
    "nvvm.mbarrier.arrive.expect_tx",
    "nvvm.wgmma.mma_async",
    "nvvm.wgmma.commit.group.sync.aligned",
    "nvvm.wgmma.wait.group.sync.aligned",
    "llvm.call_intrinsic",
    "nvvm.barrier",
    "nvvm.barrier.arrive",
    "gpu.barrier",
}


def argument(v: ir.Value) -> ir.Value:
    """The kernel argument a pointer is cast from."""
    while not isinstance(v, ir.BlockArgument):
        op = ir.OpResult(v).owner
        assert op.name in PASS_THROUGH, op
        v = op.operands[0]
    return v


def groups_of(at: At) -> dict[int, np.ndarray]:
    """The warp groups running `at`, each with its threads' positions in `at.threads`."""
    wg = at.threads // WARPGROUP
    return {int(g): np.flatnonzero(wg == g) for g in np.unique(wg)}


def uniform(values: np.ndarray, at: At) -> int:
    assert (values == values[0]).all(), (at.op.name, values)
    return int(values[0])


def events(b: Build, launch: Launch) -> list[Event]:
    """The block's ring events in program order (each group's in its own order)."""
    found: list[Event] = []

    def visit(at: At) -> None:
        for g, where in groups_of(at).items():
            found.extend(read(b, at, g, where))

    Run(b, launch, lambda op: op.name in WANTED, visit)()
    return found


def read(b: Build, at: At, g: int, where: np.ndarray) -> list[Event]:
    """`at`'s op as the threads `where` of group `g` run it."""
    op, loops = at.op.opview, at.loops
    one = lambda v: uniform(at.values(v)[where], at)  # noqa: E731
    name = at.op.name
    if name == "nvvm.mbarrier.init":
        return [Init(g, one(op.addr), one(op.count))]
    if name == "nvvm.cp.async.bulk.tensor.shared.cluster.global":
        assert where.size == 1, "one thread issues a TMA load"
        mask = one(op.multicastMask) if op.multicastMask is not None else 0
        coords = tuple(one(c) for c in op.coordinates)
        tma = b.map_of(argument(op.tmaDescriptor))
        return [Load(g, loops, tma, coords, one(op.dstMem), one(op.mbar), mask)]
    if name == "nvvm.mbarrier.try_wait.parity":
        return [Wait(g, loops, one(op.addr), one(op.phase))]
    if name in ("nvvm.mbarrier.arrive", "nvvm.mbarrier.arrive.expect_tx"):
        assert name.endswith("expect_tx") or op.count is None, "one arrival a thread"
        tx = one(op.txcount) if name.endswith("expect_tx") else 0
        targets = at.values(op.addr)[where]  # each thread's barrier (a cluster: two blocks')
        return [Arrive(g, loops, int(t), int((targets == t).sum()), tx) for t in np.unique(targets)]
    if name == "nvvm.wgmma.mma_async":
        tid = int(at.threads[where[0]])
        return [Mma(g, loops, at.op, at.exact(op.descriptorA, tid), at.exact(op.descriptorB, tid))]
    if name == "nvvm.wgmma.commit.group.sync.aligned":
        return [Commit(g)]
    if name == "nvvm.wgmma.wait.group.sync.aligned":
        return [WaitGroup(g, ir.IntegerAttr(op.attributes["group"]).value)]
    if name == "gpu.barrier":  # bar.sync 0: the whole block
        return [NamedBarrier(g, 0, b.threads, where.size, True)]
    if name in ("nvvm.barrier", "nvvm.barrier.arrive"):  # bar.sync / bar.arrive
        ident = 0 if op.barrierId is None else one(op.barrierId)
        count = b.threads if op.numberOfThreads is None else one(op.numberOfThreads)
        return [NamedBarrier(g, ident, count, where.size, name == "nvvm.barrier")]
    intrinsic = str(op.attributes["intrin"])
    if intrinsic.startswith(NAMED_BARRIER):  # the same, called as the LLVM intrinsic
        ident, count = (one(v) for v in op.operands[:2])
        return [NamedBarrier(g, ident, count, where.size, ".sync." in intrinsic)]
    return []


def cluster_events(b: Build, sizes: dict[str, int] | None = None) -> list[list[Event]]:
    """The events of each block of one cluster (`sm90_ir.launches`, with other `sizes`)."""
    return [events(b, replace(x, sizes=sizes or x.sizes)) for x in launches(b)]


def slots(b: Build, blocks: list[list[Event]]) -> dict[tuple[str, int], int]:
    """(buffer, full barrier) -> where the stage of `buffer` that barrier completes starts:
    the lowest address any block's TMA load into it writes (a multicast share or an
    MN-major chunk covers a part)."""
    found: dict[tuple[str, int], int] = {}
    for evs in blocks:
        for e in evs:
            if isinstance(e, Load):
                key = (b.source.buffer_of(e.map.tensor), e.barrier)
                found[key] = min(found.get(key, e.dst), e.dst)
    return found


def operand_origin(b: Build, buffer: str, slot: int, desc: int, shape: tuple[int, int],
                   mn_major: bool) -> tuple[int, int]:  # fmt: skip
    """(row, col) of `buffer` where the wgmma operand `desc` starts, checked element by
    element: the descriptor's byte for operand element (r, k) is slot + layout(row + r, col + k)."""
    table = b.table(buffer)
    eb = b.source.elem_bytes[buffer]
    got = Descriptor.decode(desc).addresses(*shape, eb, mn_major)
    hits = np.argwhere(table == got[0, 0] - slot)
    assert len(hits) == 1, (buffer, hex(desc), got[0, 0] - slot)
    r, c = (int(x) for x in hits[0])
    rows, cols = table.shape
    assert r + shape[0] <= rows and c + shape[1] <= cols, (buffer, r, c, shape)
    want = slot + table[r : r + shape[0], c : c + shape[1]]
    wrong = np.argwhere(got != want)
    assert not wrong.size, (buffer, hex(desc), (r, c), wrong[:4].tolist(), got[tuple(wrong[0])])
    return r, c


def tile_of(b: Build, m: TensorMap, e: Load) -> tuple[int, ...]:
    """(outer modes..., tile index along the rows, k-tile) of the local_tile a load is part
    of (a multicast share or an MN-major chunk of it)."""
    index = [0] * len(m.modes)
    for d, mode in enumerate(m.modes):
        index[mode] = e.coords[d]
    rows, cols = b.source.tiles[e.map.tensor]
    return (*index[:-2], index[-2] // rows, index[-1] // cols)


def tensor_maps(b: Build, sizes: dict[str, int]) -> dict[str, TensorMap]:
    """Each TMA-loaded tensor's map as the runtime encodes it for `sizes`, by map name."""
    found = {}
    for d in b.maps:
        if d.tensor in b.source.fills:
            found[d.name] = TensorMap.of(d, *b.view(d.tensor, sizes), sizes)
    return found


@dataclass(frozen=True)
class Operands:
    """Where one wgmma's operands start in their buffers (rows, k), the stage it read."""

    block: int
    mma: Mma
    a: tuple[int, int]
    b: tuple[int, int]
    stage: int


def operands(b: Build, blocks: list[list[Event]]) -> list[Operands]:
    """Every wgmma of the blocks, its descriptors checked against the layouts of the stage
    its group last waited for (`operand_origin`)."""
    a_buf, b_buf = b.source.operands
    at = slots(b, blocks)
    full = {barrier for _, barrier in at}
    found = []
    for block, evs in enumerate(blocks):
        waited: dict[int, int] = {}
        for e in evs:
            if isinstance(e, Wait) and e.barrier in full:
                waited[e.group] = e.barrier
            if isinstance(e, Mma):
                w, stage = Wgmma.of(e.op), waited[e.group]
                a = operand_origin(b, a_buf, at[a_buf, stage], e.a, (w.m, w.k), w.a_mn_major)
                o = operand_origin(b, b_buf, at[b_buf, stage], e.b, (w.n, w.k), w.b_mn_major)
                found.append(Operands(block, e, a, o, stage))
    return found


def unit_tiles(b: Build, maps: dict[str, TensorMap], evs: list[Event]) -> dict[int, dict]:
    """unit (the persistent loop's index) -> tensor -> its tile there (`tile_of`, without k),
    from the producer's loads."""
    found: dict[int, dict[str, tuple]] = {}
    for e in evs:
        if isinstance(e, Load):
            found.setdefault(e.loops[0], {})[e.map.tensor] = tile_of(b, maps[e.map.name], e)[:-1]
    return found


def ring_spans(b: Build, blocks: list[list[Event]]) -> list[tuple[int, int]]:
    """The shared bytes [start, end) of every (buffer, stage) slot and every barrier."""
    spans = [(e.barrier, e.barrier + 8) for e in blocks[0] if isinstance(e, Init)]
    for (buffer, _), start in slots(b, blocks).items():
        spans.append((start, start + int(b.table(buffer).max()) + b.source.elem_bytes[buffer]))
    return sorted(spans)

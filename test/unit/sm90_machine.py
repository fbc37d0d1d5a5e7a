"""Test helper: a machine that runs the ring events of an SM90 kernel's warp groups
(`sm90_events`) as the hardware would, one event at a time in an order a scheduler picks, and
says what went wrong: mbarriers (PTX ISA: an expected arrival count and a transaction count
per phase; `try_wait.parity p` passes once the phase of parity p is complete, a fresh barrier
counting as having completed the phase before phase 0), TMA loads (bytes written into shared
memory and completed on a barrier, multicast into several blocks of a cluster), wgmma groups
(a wgmma reads its stage until `wgmma.wait_group` retires its group), named barriers
(`bar.sync` / `bar.arrive` with a thread count).

Each TMA load stamps what it writes with the producer's loop indices (unit, k); a wgmma must
read only bytes stamped with its own consumer's (unit, k), landed (their barrier's phase
complete). A TMA load must not write bytes a pending wgmma still reads."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sm90_events import (
    Arrive,
    Commit,
    Event,
    Init,
    Load,
    Mma,
    NamedBarrier,
    Wait,
    WaitGroup,
)
from sm90_ir import REMOTE, Build
from sm90_model import Descriptor, TensorMap, Wgmma


class Hazard(AssertionError):
    """The schedule reached a state the protocol must exclude."""


@dataclass
class Mbarrier:
    count: int
    pending: int
    phase: int = 0  # completed phases
    tx: int = 0

    def arrive(self, count: int, tx: int = 0) -> None:
        self.tx += tx
        self.pending -= count
        if self.pending < 0:
            raise Hazard(f"{-self.pending} arrivals more than the phase expects")
        self.settle()

    def complete(self, nbytes: int) -> None:
        self.tx -= nbytes
        self.settle()

    def settle(self) -> None:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def passes(self, parity: int) -> bool:
        return parity != self.phase % 2


@dataclass
class Written:
    """Bytes [start, end) of a block's shared memory, stamped with the producer's loop
    indices; landed once `barrier` has completed the phase after `phase`."""

    start: int
    end: int
    stamp: tuple[int, ...]
    barrier: tuple[int, int]
    phase: int


@dataclass
class Agent:
    """One warp group of one block, running its events in order."""

    block: int
    group: int
    events: list[Event]
    at: int = 0
    waiting_bar: tuple | None = None  # (barrier key, generation) a bar.sync waits for
    open_reads: list[tuple[int, int]] = field(default_factory=list)
    groups: list[list[tuple[int, int]]] = field(default_factory=list)  # committed, in flight

    @property
    def done(self) -> bool:
        return self.at == len(self.events)


@dataclass
class Machine:
    build: Build
    maps: dict[str, TensorMap]
    agents: list[Agent]
    barriers: dict[tuple[int, int], Mbarrier] = field(default_factory=dict)
    named: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # [arrived, gen]
    written: dict[int, list[Written]] = field(default_factory=dict)
    reads: int = 0

    @staticmethod
    def of(build: Build, maps: dict[str, TensorMap], blocks: list[list[Event]]) -> Machine:
        agents, m = [], Machine(build, maps, [])
        for block, evs in enumerate(blocks):
            for e in evs:
                if isinstance(e, Init):
                    m.barriers[block, e.barrier] = Mbarrier(e.count, e.count)
            for g in sorted({e.group for e in evs}):
                mine = [e for e in evs if e.group == g and not isinstance(e, Init)]
                agents.append(Agent(block, g, mine))
            m.written[block] = []
        m.agents = agents
        return m

    def barrier(self, block: int, address: int) -> Mbarrier:
        if address >= REMOTE:
            block, address = (address - REMOTE) >> 24, address & ((1 << 24) - 1)
        return self.barriers[block, address]

    def enabled(self, a: Agent) -> bool:
        if a.done:
            return False
        if a.waiting_bar is not None:
            key, generation = a.waiting_bar
            return self.named[key][1] > generation
        e = a.events[a.at]
        return not isinstance(e, Wait) or self.barrier(a.block, e.barrier).passes(e.parity)

    def step(self, a: Agent) -> None:
        if a.waiting_bar is not None:  # the bar.sync it waited on has completed
            a.waiting_bar = None
            a.at += 1
            return
        e = a.events[a.at]
        if isinstance(e, NamedBarrier):
            key = (a.block, e.ident)
            state = self.named.setdefault(key, [0, 0])
            state[0] += e.threads
            generation = state[1]
            if state[0] == e.count:
                state[0], state[1] = 0, state[1] + 1
            if e.sync:
                a.waiting_bar = (key, generation)
                return
        elif isinstance(e, Arrive):
            self.barrier(a.block, e.barrier).arrive(e.count, e.tx)
        elif isinstance(e, Load):
            self.load(a, e)
        elif isinstance(e, Mma):
            self.mma(a, e)
        elif isinstance(e, Commit):
            a.groups.append(a.open_reads)
            a.open_reads = []
        elif isinstance(e, WaitGroup):
            del a.groups[: max(0, len(a.groups) - e.pending)]
        a.at += 1

    def load(self, a: Agent, e: Load) -> None:
        size = self.maps[e.map.name].box_bytes
        targets = [r for r in range(len(self.written)) if e.multicast >> r & 1] or [a.block]
        for block in targets:
            for other in self.agents:
                for start, end in other.open_reads + sum(other.groups, []):
                    if other.block == block and start < e.dst + size and e.dst < end:
                        raise Hazard(
                            f"block {a.block}'s TMA load at {e.loops} overwrites bytes "
                            f"{e.dst}.. of block {block} that group {other.group}'s wgmma reads"
                        )
            barrier = self.barriers[block, e.barrier]
            kept = [w for w in self.written[block] if w.end <= e.dst or w.start >= e.dst + size]
            stamp = Written(e.dst, e.dst + size, e.loops, (block, e.barrier), barrier.phase)
            self.written[block] = [*kept, stamp]
            barrier.complete(size)

    def mma(self, a: Agent, e: Mma) -> None:
        w = Wgmma.of(e.op)
        ea, eb = (self.build.source.elem_bytes[x] for x in self.build.source.operands)
        for desc, rows, mn, size in ((e.a, w.m, w.a_mn_major, ea), (e.b, w.n, w.b_mn_major, eb)):
            addresses = Descriptor.decode(desc).addresses(rows, w.k, size, mn)
            span = (int(addresses.min()), int(addresses.max()) + size)
            self.check_read(a, e, span)
            a.open_reads.append(span)
        self.reads += 1

    def check_read(self, a: Agent, e: Mma, span: tuple[int, int]) -> None:
        found = [w for w in self.written[a.block] if w.start < span[1] and span[0] < w.end]
        if not found:
            raise Hazard(f"group {a.group} at {e.loops} reads bytes {span} nothing wrote")
        for w in found:
            if w.stamp != e.loops:
                raise Hazard(
                    f"block {a.block} group {a.group} at (unit, k) = {e.loops} reads bytes "
                    f"{span} the producer loaded at {w.stamp}"
                )
            if self.barriers[w.barrier].phase <= w.phase:
                raise Hazard(f"group {a.group} at {e.loops} reads bytes {span} not yet landed")

    def run(self, policy: str, seed: int = 0) -> None:
        """Every agent to its end, `policy` choosing among those that can go on: "producer"
        (producers first: they run as far ahead as the ring lets them), "consumer", or
        "random"; a Hazard where the protocol breaks, and where no agent can go on."""
        rng = random.Random(seed)
        while True:
            ready = [a for a in self.agents if self.enabled(a)]
            if not ready:
                stuck = [(a.block, a.group, a.events[a.at]) for a in self.agents if not a.done]
                if stuck:
                    raise Hazard(f"deadlock: {stuck}")
                return
            if policy == "random":
                a = rng.choice(ready)
            else:
                first = [x for x in ready if (x.group == 0) == (policy == "producer")]
                a = (first or ready)[0]
            self.step(a)

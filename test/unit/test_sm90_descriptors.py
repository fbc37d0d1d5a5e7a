"""Every wgmma of the SM90 GEMM reads the shared bytes where the layout algebra puts its
operands. Each consumer warp group's wgmmas are decoded (PTX ISA matrix descriptors: start,
leading and stride byte offsets, swizzle mode) for every k-step and m/n subtile, on every
iteration of its K loop through all stages of the ring (the stage it waited for); the bytes
each descriptor denotes for each (row, k) of its 64xNx16 step must be `slot + sA(row, col)`
of the source's declared layout, K-major or MN-major, at BK = 64, 32 and 16. Together the
steps of one K iteration must cover the group's part of the tile (the MMA's tiling over warp
groups) and all of BK exactly once, A and B at the same k, each accumulator chained from the
step before it along k."""

from __future__ import annotations

import pytest
from sm90_events import cluster_events, operands
from sm90_ir import Build, named
from sm90_model import Wgmma

from tilec.binding import op_id

BUILDS = [
    "BK=64",
    "BK=32",
    "BK=16",
    "MN",
    "MN,BK=32",
    "PP,MA,BK=16",
    "PP",
    "CM=2",
    "SW,BN=16",
    "SW,PP",
    "batched",
    "batched,MB",
    "batched,MN,PP",
]


def expected_steps(b: Build, place: int, groups: int, bk: int) -> set[tuple[int, int, int]]:
    """(A row, B row, k) of every 64xNx16 step of consumer group `place` in one K iteration:
    the MMA's tiling (wm, wn) splits the BM x BN tile over the groups (m first); a tiling of
    one group (ping-pong) gives each group the whole tile."""
    (wm, wn), (bm, bn), (am, an, ak) = b.source.tiling, b.source.block, b.source.atom
    if wm * wn == 1:
        wm = wn = 1
        place = 0
    assert wm * wn in (1, groups), (b.source.tiling, groups)
    m0, n0 = place % wm * (bm // wm), place // wm * (bn // wn)
    return {
        (m0 + mi, n0 + ni, k)
        for mi in range(0, bm // wm, am)
        for ni in range(0, bn // wn, an)
        for k in range(0, bk, ak)
    }


@pytest.fixture(scope="module", params=BUILDS)
def compiled(request: pytest.FixtureRequest) -> tuple[Build, list]:
    b = named(request.param)
    return b, cluster_events(b)


def test_every_wgmma_reads_the_algebra(compiled: tuple[Build, list]) -> None:
    b, blocks = compiled
    found = operands(b, blocks)  # checks each element's byte against the layouts
    bk = b.table(b.source.operands[0]).shape[1]
    steps: dict[tuple, dict[int, tuple]] = {}
    for o in found:
        w = Wgmma.of(o.mma.op)
        assert (w.m, w.n, w.k) == b.source.atom
        assert o.a[1] == o.b[1], ("A and B at different k", o.a, o.b)
        step = steps.setdefault((o.block, o.mma.group, o.mma.loops), {})
        step[op_id(o.mma.op)] = (o.a[0], o.b[0], o.a[1], o.mma.op)
    for (block, g, loops), done in steps.items():
        groups = sorted({o.mma.group for o in found if o.block == block})
        want = expected_steps(b, groups.index(g), len(groups), bk)
        got = [(ra, rb, k) for ra, rb, k, _ in done.values()]
        assert sorted(got) == sorted(want), (g, loops, sorted(got), sorted(want))
        check_chains(done)
    assert len({o.stage for o in found}) == int(b.params["STAGES"])  # through every stage
    assert len({o.mma.loops for o in found}) >= int(b.params["STAGES"]) + 1


def check_chains(done: dict[int, tuple]) -> None:
    """Each step accumulates into the result of the step before it along k on the same
    (A rows, B rows), the first step of an iteration into the loop's carried value."""
    for ra, rb, k, op in done.values():
        acc = op.opview.inouts
        before = done.get(op_id(acc.owner)) if not hasattr(acc, "arg_number") else None
        if k == 0:
            assert before is None, ("k = 0 accumulates onto a step of this iteration", ra, rb)
        else:
            assert before is not None and before[:3] == (ra, rb, k - 16), (ra, rb, k, before)

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

import numpy as np
import pytest
from sm90_events import Mma, Wait, cluster_events, slots
from sm90_ir import Build, named
from sm90_model import Descriptor, Wgmma

from tilec.binding import op_id

BUILDS = ["BK=64", "BK=32", "BK=16", "MN", "MN,BK=32", "PP,MA,BK=16", "PP", "CM=2", "SW,BN=16"]
BUILDS += ["SW,PP"]


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
    a_buf, b_buf = b.source.operands
    at = slots(b, blocks)
    full = {barrier for _, barrier in at}
    bk = b.table(a_buf).shape[1]
    stages_seen: set[int] = set()
    checked = 0
    for evs in blocks:
        groups = sorted({e.group for e in evs if isinstance(e, Mma)})
        waited: dict[int, int] = {}
        steps: dict[tuple[int, tuple], dict[int, tuple]] = {}
        for e in evs:
            if isinstance(e, Wait) and e.barrier in full:
                waited[e.group] = e.barrier
            if not isinstance(e, Mma):
                continue
            w = Wgmma.of(e.op)
            assert (w.m, w.n, w.k) == b.source.atom
            stage = waited[e.group]
            stages_seen.add(stage)
            ra, ka = operand_origin(b, a_buf, at[a_buf, stage], e.a, (w.m, w.k), w.a_mn_major)
            rb, kb = operand_origin(b, b_buf, at[b_buf, stage], e.b, (w.n, w.k), w.b_mn_major)
            assert ka == kb, ("A and B at different k", ka, kb)
            step = steps.setdefault((e.group, e.loops), {})
            step[op_id(e.op)] = (ra, rb, ka, e.op)
            checked += 1
        for (g, loops), done in steps.items():
            want = expected_steps(b, groups.index(g), len(groups), bk)
            got = [(ra, rb, k) for ra, rb, k, _ in done.values()]
            assert sorted(got) == sorted(want), (g, loops, sorted(got), sorted(want))
            check_chains(done)
    assert len(stages_seen) == int(b.params["STAGES"])  # the K loops went through every stage
    assert checked >= int(b.params["STAGES"]) + 1


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

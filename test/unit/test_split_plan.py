"""The split persistent loop's plan (lowering/sm90_split.py), walked with Python ints: the same
code that emits the kernel's index arithmetic folds to numbers when its inputs are numbers.

For T tiles of KT k-tiles over P blocks, every block's units (c, c + P, ... below its bound)
must cover each (tile, k) exactly once; each tile must have one owner (a unit that is not a
peer) whose peers' slots hold exactly the rest of the tile's K range; a peer's slot is used
once; the ring's count at each unit's start is the iterations the block ran before it; and
running the blocks side by side, owners waiting for their peers' slots, must finish (no
deadlock)."""

from __future__ import annotations

import random

import pytest
from mlir import ir

from tilec.lowering import IndexBuilder
from tilec.lowering.sm90_split import SLOTS, Plan


def units(total: int, p: int, kt: int, slots: int) -> tuple[bool, list[list[dict]]]:
    b = IndexBuilder()
    blocks = []
    for c in range(p):
        plan, bound = Plan.make(c, total, p, kt, b, slots)
        walk = []
        for u in range(c, bound, p):
            values, peer = plan.unit(u, b)
            keys = ("tile", "begin", "end", "start", "slot", "first", "last")
            walk.append({**dict(zip(keys, values, strict=True)), "peer": peer})
        blocks.append(walk)
    return plan.stream, blocks


def check(total: int, p: int, kt: int, slots: int = SLOTS) -> tuple[bool, int]:
    """`slots`: the units' workspace slots (SLOTS / the blocks of a cluster, whose units are
    clusters' tiles)."""
    stream, blocks = units(total, p, kt, slots)
    covered: set[tuple[int, int]] = set()
    room, slots = slots, {}
    owners: dict[int, dict] = {}
    for walk in blocks:
        ran = 0
        for x in walk:
            assert x["start"] == ran, (total, p, kt, x)
            for k in range(x["begin"], x["end"]):
                assert (x["tile"], k) not in covered, (total, p, kt, x)
                covered.add((x["tile"], k))
            ran += max(x["end"] - x["begin"], 0)
            if x["peer"]:
                assert x["slot"] not in slots and 0 <= x["slot"] < room, (total, p, kt, x)
                slots[x["slot"]] = x
            else:
                assert x["tile"] not in owners, (total, p, kt, x)
                owners[x["tile"]] = x
    assert covered == {(t, k) for t in range(total) for k in range(kt)}
    assert sorted(owners) == list(range(total))
    used = set()
    for t, x in owners.items():
        ks = set(range(x["begin"], x["end"]))
        for slot in range(x["first"], x["last"]):
            assert slots[slot]["tile"] == t, (total, p, kt, t, slot)
            ks |= set(range(slots[slot]["begin"], slots[slot]["end"]))
            used.add(slot)
        assert ks == set(range(kt)), (total, p, kt, t)
    assert used == set(slots)
    at, ready = [0] * p, set()
    while any(at[c] < len(blocks[c]) for c in range(p)):
        moved = False
        for c in range(p):
            if at[c] < len(blocks[c]):
                x = blocks[c][at[c]]
                if x["peer"] or all(s in ready for s in range(x["first"], x["last"])):
                    if x["peer"]:
                        ready.add(x["slot"])
                    at[c] += 1
                    moved = True
        assert moved, f"deadlock at T={total} P={p} KT={kt}"
    return stream, max(sum(x["end"] - x["begin"] for x in walk) for walk in blocks)


# (T, P, KT, unit slots, stream-K, the busiest block's k-tiles) in 128x256x64 tiles on 132
# SMs: 2560^3 (the partial wave alone: 68 of 132), 3072^3 and 5120^3 (it and the wave
# before) stream-K, within one k-tile of an even share; 4096^3 whole tiles (stream-K would
# save 7 k-tiles); 8192^3 and 4096 x 4096 x 11008 stream-K over the partial wave alone (68
# and 116 of 132 blocks: shares of under a tile); 32 x 512^3 (0.5 k-tiles saved) whole;
# 4096 x 11008 x 4096 (r = 56 of 132) the tail split 2 ways; 8 x 4096 x 4096 x 1024 (r = 4,
# 16 k-tiles) not split: parts keep 16 k-tiles or more; few tiles split s ways (16 tiles of
# 64 k-tiles: 4 ways); fewer tiles than blocks but more than half: whole tiles. Then
# clusters of two (66 of them, 80 unit slots), the units clusters' tiles: 3000^3 (144
# units, KT = 47) and 2560^3 (100) stream-K.
EXPECTED = [
    (200, 132, 40, SLOTS, True, 61),
    (288, 132, 48, SLOTS, True, 105),
    (800, 132, 80, SLOTS, True, 485),
    (512, 132, 64, SLOTS, False, 256),
    (2048, 132, 128, SLOTS, True, 1986),
    (512, 132, 172, SLOTS, True, 668),
    (256, 132, 8, SLOTS, False, 16),
    (1376, 132, 64, SLOTS, False, 672),
    (4096, 132, 16, SLOTS, False, 512),
    (16, 132, 64, SLOTS, False, 16),
    (43, 132, 64, SLOTS, False, 22),
    (128, 132, 32, SLOTS, False, 32),
    (264, 132, 64, SLOTS, False, 128),
    (144, 66, 47, SLOTS // 2, True, 103),
    (100, 66, 40, SLOTS // 2, True, 61),
]


@pytest.mark.parametrize(("total", "p", "kt", "slots", "stream", "busiest"), EXPECTED)
def test_split_plan_shares(
    total: int, p: int, kt: int, slots: int, stream: bool, busiest: int
) -> None:
    with ir.Context():
        assert check(total, p, kt, slots) == (stream, busiest)


def test_split_plan_random_shapes() -> None:
    rng = random.Random(15)
    with ir.Context():
        for _ in range(600):
            total, kt = rng.randint(1, 400), rng.randint(0, 40)
            p = rng.choice([1, 2, 3, 7, 66, 80, 81, 132, 160, 161])
            check(total, p, kt, SLOTS // rng.choice([1, 2, 4]))

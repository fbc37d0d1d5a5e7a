"""The mbarrier ring of the SM90 kernels, run: every block of small persistent launches (whole
tiles, a split tail, stream-K; trip counts that are no multiple of STAGES, rings of 4 to 8
stages wrapping many times) has its producer and consumer warp groups' events read off the
`gpu` stage for its launch values (stage and phase parity as the IR computes them) and run on
a model of the hardware (`sm90_machine`) under three schedules: producers as far ahead as the
ring lets them, consumers first, and random. Nothing may deadlock, every wgmma must read the
bytes its own (unit, k) iteration's TMA loads wrote, landed, and no TMA load may overwrite
bytes a wgmma still reads. Over all blocks, the producers load every (tile, k) of the problem
exactly once."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import pytest
from sm90_events import Load, Wait, events, tensor_maps, tile_of
from sm90_ir import Build, Launch, leading, named
from sm90_machine import Hazard, Machine

# (build, M, N, K in k-tiles, blocks); the plans the launches get (sm90_split.Plan):
CASES = [
    ("BK=64", 3 * 128, 3 * 256, 7, 4),  # whole tiles, 2 or 3 a block; S = 4
    ("BK=64", 128, 2 * 256, 37, 4),  # a split tail: 2 tiles over 4 blocks, halves along K
    ("BK=64", 5 * 128, 2 * 256, 37, 4),  # stream-K: whole tiles, then the last two waves' k
    ("BK=16", 2 * 128, 2 * 256, 11, 3),  # S = 8
    ("PP", 3 * 128, 3 * 128, 9, 4),  # ping-pong turns, S = 5
    ("PP,MA,BK=16", 128, 2 * 128, 37, 4),  # ping-pong with a split tail, S = 7
    ("CM=2", 3 * 128, 3 * 256, 7, 4),  # clusters of 2, an odd number of rows of tiles
    ("SW,BN=16", 16, 5 * 128, 10, 2),  # swapped, S = 8
    ("SW,PP", 100, 4 * 64, 13, 2),  # swapped ping-pong, S = 6
]


def case_id(case: tuple) -> str:
    key, m, n, k, blocks = case
    return f"{key}:{m}x{n}x{k}kt/{blocks}"


@pytest.fixture(scope="module", params=CASES, ids=case_id)
def launched(request: pytest.FixtureRequest) -> tuple[Build, dict, list[list]]:
    key, m, n, kt, grid = request.param
    b = named(key)
    sizes = leading(b, {"M": m, "N": n, "K": kt * int(b.params["BK"])})
    cluster = int(b.params.get("CM", 1))
    blocks = [events(b, Launch(sizes, grid, c, cluster)) for c in range(grid)]
    return b, sizes, blocks


@pytest.mark.parametrize("policy", ["producer", "consumer", "random"])
def test_the_ring_runs_without_hazards(launched: tuple, policy: str) -> None:
    b, sizes, blocks = launched
    cluster = int(b.params.get("CM", 1))
    stages = int(b.params["STAGES"])
    for first in range(0, len(blocks), cluster):
        mine = blocks[first : first + cluster]
        machine = Machine.of(b, tensor_maps(b, sizes), mine)
        machine.run(policy, seed=first)
        loads = sum(isinstance(e, Load) for evs in mine for e in evs)
        assert machine.reads and loads, "the block ran its main loops"
    iterations = max(len({e.loops for e in evs if isinstance(e, Load)}) for evs in blocks)
    assert iterations > 2 * stages, "a block's ring wraps more than twice"


def test_every_tile_and_k_is_loaded_once(launched: tuple) -> None:
    """The persistent schedule as the IR computes it (units of whole tiles, split tails,
    stream-K segments): over all blocks, each (output tile, k) of the problem is loaded once,
    A's and B's tiles in the same iteration of a producer."""
    b, sizes, blocks = launched
    encoded = tensor_maps(b, sizes)
    seen: Counter = Counter()
    for evs in blocks:
        iterations: dict[tuple, dict[str, tuple]] = {}
        for e in evs:
            if isinstance(e, Load):
                tile = tile_of(b, encoded[e.map.name], e)
                found = iterations.setdefault(e.loops, {}).setdefault(e.map.tensor, tile)
                assert found == tile, ("one tile a tensor an iteration", e.loops, found, tile)
        for loops, tiles in iterations.items():
            assert set(tiles) == set(b.source.fills), loops
            ks = {t[-1] for t in tiles.values()}
            assert len(ks) == 1, ("A and B at one k", loops, tiles)
            seen[tuple(sorted((n, t) for n, t in tiles.items()))] += 1
    # Every (A's row tile, B's row tile, k) inside the problem once; a cluster may also run
    # tiles wholly outside it (its last row of clusters past M: loads zero-filled, stores
    # clipped).
    extents = {}
    for tensor in b.source.fills:
        shape, _, _ = b.view(tensor, sizes)
        assert len(shape) == 2, "an unbatched GEMM"
        rows, cols = b.source.tiles[tensor]
        extents[tensor] = (-(-shape[0] // rows), -(-shape[1] // cols))
    inside = [n for key, n in seen.items() if all(t[0] < extents[name][0] for name, t in key)]
    want = math.prod(rows for rows, _ in extents.values()) * extents["A"][1]
    assert len(inside) == want and set(inside) == {1}, (len(inside), want, Counter(inside))


def test_a_wrong_phase_is_caught() -> None:
    """The machine can fail: with the parity of the consumers' waits on the full barriers
    flipped, they pass at once on stages not loaded yet; with the producer's on the empty
    ones flipped, it waits for a phase no one completes, or overwrites."""
    b = named("BK=64")
    sizes = leading(b, {"M": 128, "N": 256, "K": 9 * 64})
    evs = events(b, Launch(sizes, 1))
    full = {e.barrier for e in evs if isinstance(e, Load)}
    for consumers in (True, False):
        flipped = [
            replace(e, parity=1 - e.parity)
            if isinstance(e, Wait) and (e.barrier in full) == consumers
            else e
            for e in evs
        ]
        with pytest.raises(Hazard):
            Machine.of(b, tensor_maps(b, sizes), [flipped]).run("producer")

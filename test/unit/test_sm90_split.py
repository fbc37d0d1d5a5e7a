"""Split tails and stream-K of the SM90 GEMM, run over the whole grid: the partial sums a
tile's peers hand over (their consumers' stores into the workspace) are exactly what the
tile's owner reads back and adds, each byte once, by the consumer thread that wrote it (so
each register meets its own), and the owner waits on exactly the flags its peers signal."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from mlir import ir
from sm90_events import events, tensor_maps, unit_tiles
from sm90_ir import At, Launch, Run, leading, named

# (build, M, N, K in k-tiles, blocks): a split tail, stream-K, a ping-pong split tail and a
# split tail of clusters (each block of a cluster its own tile, its own slots)
CASES = [
    ("BK=64", 128, 2 * 256, 37, 4),
    ("BK=64", 5 * 128, 2 * 256, 37, 4),
    ("PP", 128, 2 * 128, 40, 4),
    ("CM=2", 2 * 128, 256, 37, 4),
]
# What the workspace's inline PTX does, by its first instruction of these: acquire a slot's
# flag (then clear it), release it, hand partial sums over, read them back.
KINDS = {
    "ld.acquire.gpu.global.b32": "wait",
    "st.relaxed.gpu.global.b32": "signal",
    "st.global.v4.f32": "write",
    "ld.global.cg.v4.f32": "read",
}


def kind(op: ir.Operation) -> str | None:
    if op.name != "llvm.inline_asm":
        return None
    text = ir.StringAttr(op.attributes["asm_string"]).value
    return next((k for pattern, k in KINDS.items() if pattern in text), None)


@pytest.mark.parametrize(("key", "m", "n", "kt", "grid"), CASES, ids=str)
def test_peers_hand_their_sums_to_the_owner(key: str, m: int, n: int, kt: int, grid: int) -> None:
    b = named(key)
    sizes = leading(b, {"M": m, "N": n, "K": kt * int(b.params["BK"])})
    cluster = int(b.params.get("CM", 1))
    seen: dict[str, dict[tuple, Counter]] = {k: defaultdict(Counter) for k in KINDS.values()}
    units: dict[tuple, set[str]] = defaultdict(set)  # (tile, block, unit) -> what it did
    for c in range(grid):
        launch = Launch(sizes, grid, c, cluster)
        tiles = unit_tiles(b, tensor_maps(b, sizes), events(b, launch))

        def visit(at: At, tiles: dict = tiles, c: int = c) -> None:
            what = kind(at.op)
            tile = tuple(sorted(tiles[at.loops[0]].items()))
            units[tile, c, at.loops[0]].add(what)
            for thread, address in zip(at.threads, at.values(at.op.operands[0]), strict=True):
                seen[what][tile][int(thread), int(address)] += 1

        Run(b, launch, lambda op: kind(op) is not None, visit)()
    peers = {unit for unit, did in units.items() if "write" in did}
    owners = {unit for unit, did in units.items() if "read" in did}
    assert peers and owners and not peers & owners
    assert {u[0] for u in peers} == {u[0] for u in owners}, "every handed-over tile has an owner"
    for tile, written in seen["write"].items():
        read = seen["read"][tile]
        assert set(written.values()) == {1}, "two peers write one slot"
        assert read == written, ("the owner reads what its peers wrote, thread by thread", tile)
        flags = {address for _, address in seen["signal"][tile]}
        waits = {address for _, address in seen["wait"][tile]}
        assert flags and waits == flags, ("the owner waits on its peers' flags", tile)
    assert set(seen["read"]) == set(seen["write"])

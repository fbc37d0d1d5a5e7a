"""TMA loads of the SM90 kernels against the source: each box, encoded as the runtime encodes
its tensor map from the manifest (`tma_encode_args`: dims, strides and box in the map's
dimension order, the swizzle), and placed where the hardware puts it (the box's elements in
order from the load's shared address, swizzled), fills the stage with exactly the source's
`local_tile` at (tile, k): every element of the tile once, at `slot + layout(row, col)` of
the buffer's declared layout, the tile's origin a multiple of its extent along M (N), k times
BK along K, the same tile on every k of a unit. Each stage's `mbarrier.arrive.expect_tx`
announces exactly the bytes of the boxes that complete on its barrier (a multicast box counts
in every block it lands in), and no two stages or buffers share a byte, nor a barrier."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from sm90_events import Arrive, Init, Load, cluster_events, ring_spans, slots, tensor_maps
from sm90_ir import REMOTE, Build, launches, named

from tilec import layout as L

BUILDS = [
    "BK=64",
    "BK=32",
    "BK=16",
    "MN",
    "PP,MA,BK=16",
    "CM=2",
    "CM=2,MB",
    "SW,BN=16",
    "batched",
    "batched,MB",
    "batched,MN,PP",
    "bias_act,PP",
]


@pytest.fixture(scope="module", params=BUILDS)
def compiled(request: pytest.FixtureRequest) -> tuple[Build, dict[str, int], list]:
    b = named(request.param)
    sizes = launches(b)[0].sizes
    return b, sizes, cluster_events(b, sizes)


def stage_contents(b: Build, blocks: list) -> dict[tuple, list[Load]]:
    """(block, producer iteration, full barrier) -> the loads that land in that block."""
    found: dict[tuple, list[Load]] = defaultdict(list)
    for rank, evs in enumerate(blocks):  # one cluster: a block's index is its rank
        for e in evs:
            if not isinstance(e, Load):
                continue
            targets = [r for r in range(len(blocks)) if e.multicast >> r & 1] or [rank]
            for target in targets:
                found[target, e.loops, e.barrier].append(e)
    return found


def test_every_box_fills_its_tile_on_the_algebra(compiled: tuple) -> None:
    b, sizes, blocks = compiled
    encoded = tensor_maps(b, sizes)
    at = slots(b, blocks)
    tiles: dict[tuple, set] = defaultdict(set)  # (block, unit, tensor) -> tile origins
    for (block, loops, barrier), loads in stage_contents(b, blocks).items():
        by_tensor: dict[str, list[Load]] = defaultdict(list)
        for e in loads:
            by_tensor[e.map.tensor].append(e)
        assert set(by_tensor) == set(b.source.fills), (loops, set(by_tensor))
        for tensor, mine in by_tensor.items():
            buffer = b.source.buffer_of(tensor)
            index, address = [], []
            for e in mine:
                i, a = encoded[e.map.name].writes(list(e.coords), e.dst)
                index.append(i)
                address.append(a)
            origin = check_tile(b, tensor, np.concatenate(index), np.concatenate(address),
                                at[buffer, barrier], loops[-1])  # fmt: skip
            tiles[block, loops[:-1], tensor].add(origin)
    assert tiles
    for key, origins in tiles.items():
        assert len(origins) == 1, ("one tile on every k of a unit", key, origins)


def check_tile(b: Build, tensor: str, index: np.ndarray, address: np.ndarray, slot: int,
               k: int) -> tuple[int, ...]:  # fmt: skip
    """The box elements one stage receives of `tensor` are its local_tile at (tile, k), each
    once, at slot + layout(row, col); returns the tile's origin (fixed modes, then rows)."""
    buffer = b.source.buffer_of(tensor)
    rows, cols = b.source.tiles[tensor]
    outer, (r, c) = index[:, :-2], (index[:, -2], index[:, -1])
    assert (outer == outer[0]).all(), "a tile lies in one batch"
    r0, c0 = int(r.min()), int(c.min())
    assert r0 % rows == 0, (tensor, "rows start at a multiple of the tile", r0, rows)
    assert c0 == k * cols, (tensor, "K starts at k * BK", c0, k, cols)
    local = (r - r0) * cols + (c - c0)
    assert ((r - r0) < rows).all() and ((c - c0) < cols).all(), (tensor, "beyond the tile")
    assert np.bincount(local, minlength=rows * cols).tolist() == [1] * (rows * cols), tensor
    want = slot + b.table(buffer)[r - r0, c - c0]
    wrong = np.flatnonzero(address != want)
    assert not wrong.size, (tensor, int(r[wrong[0]] - r0), int(c[wrong[0]]), address[wrong[0]])
    return (*(int(x) for x in outer[0]), r0)


def test_expect_tx_is_the_bytes_of_the_boxes(compiled: tuple) -> None:
    b, sizes, blocks = compiled
    encoded = tensor_maps(b, sizes)
    contents = stage_contents(b, blocks)
    announced = 0
    for block, evs in enumerate(blocks):
        for e in evs:
            if not isinstance(e, Arrive) or not e.tx:
                continue
            assert e.count == 1 and e.barrier < REMOTE
            boxes = sum(encoded[x.map.name].box_bytes for x in contents[block, e.loops, e.barrier])
            assert e.tx == boxes, (block, e.loops, e.tx, boxes)
            # ... which is the whole stage: every buffer's tile once
            tile_bytes = sum(
                np.prod(b.source.tiles[t]) * b.source.elem_bytes[buf]
                for t, buf in b.source.fills.items()
            )
            assert e.tx == tile_bytes
            announced += 1
    assert announced >= int(b.params["STAGES"]) + 1


def test_stages_and_barriers_do_not_overlap(compiled: tuple) -> None:
    """Each (buffer, stage) slot, each barrier, owns its bytes; the slots are aligned to the
    swizzle's repeat (8 rows of its width), which TMA and wgmma anchor at the address."""
    b, _, blocks = compiled
    for (buffer, _), start in slots(b, blocks).items():
        layout = b.source.buffers[buffer]
        assert isinstance(layout, L.ComposedLayout) and isinstance(layout.outer, L.Swizzle)
        assert start % (8 * 16 << layout.outer.bits) == 0, (buffer, start)
    inits = [e for e in blocks[0] if isinstance(e, Init)]
    assert len({e.barrier for e in inits}) == len(inits) == 2 * int(b.params["STAGES"])
    spans = ring_spans(b, blocks)
    assert len(spans) == len(inits) + len(b.source.fills) * int(b.params["STAGES"])
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start, spans


def test_the_model_refuses_boxes_the_hardware_faults_on() -> None:
    """A box whose innermost coordinate is not a multiple of 16 bytes faults on the GPU
    (illegal instruction) however aligned the map's base and strides are; the model refuses
    it, so an emulated kernel that issues one fails here, not first on a GPU. Rows 16-byte
    apart, boxes at element 8 (16 bytes) read; at 4, 12 or 1 refused."""
    from sm90_model import MisalignedBox, TensorMap

    from tilec.runtime.params import TmaDescriptor

    d = TmaDescriptor("t", "A", (8, 64), swizzle="128B")
    tmap = TensorMap.of(d, (64, 200), (200, 1), "f16", {})
    index, _ = tmap.writes([8, 0], 0)
    assert index[0].tolist() == [0, 8] and index[-1].tolist() == [7, 71]
    for inner in (4, 12, 1):
        with pytest.raises(MisalignedBox, match=f"innermost coordinate {inner} "):
            tmap.writes([inner, 0], 0)

"""The TV layouts tile-distribute writes into `!tile.frag` types (lowering/tile_spreads.py):
each is checked against the spread's own arithmetic, written out here from its definition
(a blocked chunk v = t + T i holds elements e = j + V v, e counted with mode m fastest), and
read back to the spread it came from."""

from __future__ import annotations

import math
import random

import pytest

from tilec.dialects.layout.text import parse_layout
from tilec.lowering.tile_fragments import Partition
from tilec.lowering.tile_mma import MmaPartition
from tilec.lowering.tile_spreads import PLAIN, decode, plain_tv, tv_text

EXTENTS = (1, 2, 3, 4, 5, 8, 16, 20, 64, 128)


def random_partition(rng: random.Random) -> Partition:
    while True:
        shape = tuple(rng.choice(EXTENTS) for _ in range(rng.randint(1, 3)))
        if math.prod(shape) <= 8192:
            break
    modes = [k for k, s in enumerate(shape) if s > 1] or [0]
    m = rng.choice(modes)
    vec = rng.choice([v for v in (1, 2, 4, 8) if shape[m] % v == 0])
    return Partition(shape, m, vec, rng.choice((32, 64, 128, 256)))


def colmajor(coords: list[int], shape: tuple[int, ...]) -> int:
    index, scale = 0, 1
    for c, s in zip(coords, shape, strict=True):
        index, scale = index + c * scale, scale * s
    return index


def element(part: Partition, t: int, j: int, i: int) -> list[int] | None:
    """The coordinates of element j of thread t's chunk i (None past the tile)."""
    e = j + part.vec * (t + part.threads * i)
    if e >= math.prod(part.shape):
        return None
    coords = [0] * len(part.shape)
    for k in part.order:
        coords[k], e = e % part.shape[k], e // part.shape[k]
    return coords


def pairs(part: Partition, rng: random.Random):  # noqa: ANN201
    """(thread, value index, coordinates) for a sample of the spread's active elements."""
    for _ in range(300):
        t, j, i = rng.randrange(part.threads), rng.randrange(part.vec), rng.randrange(part.iters)
        coords = element(part, t, j, i)
        if coords is not None:
            yield t, j + part.vec * i, coords


@pytest.mark.parametrize("seed", range(40))
def test_blocked_tv_is_the_chunk_arithmetic(seed: int) -> None:
    rng = random.Random(seed)
    part = random_partition(rng)
    text = tv_text(part, part.threads)
    tv = parse_layout(text)
    for t, v, coords in pairs(part, rng):
        assert tv(t, v) == colmajor(coords, part.shape), (part, text, t, v)
    assert decode(part.shape, text, part.threads) == part


@pytest.mark.parametrize("seed", range(40))
def test_reduced_tv_drops_the_mode(seed: int) -> None:
    """A reduction along mode k: every element's value lands on the reduced tile's index of
    its coordinates with mode k at 0 (the threads of one group hold the same value)."""
    rng = random.Random(1000 + seed)
    part = random_partition(rng)
    k = rng.randrange(len(part.shape))
    reduced = tuple(1 if n == k else s for n, s in enumerate(part.shape))
    if math.prod(reduced) == 1:
        assert tv_text((part, k), part.threads, single=True) == plain_tv(part.threads)
        return
    text = tv_text((part, k), part.threads)
    tv = parse_layout(text)
    for t, v, coords in pairs(part, rng):
        coords[k] = 0
        assert tv(t, v) == colmajor(coords, reduced), (part, k, text)
    assert decode(reduced, text, part.threads) == (part, k)


@pytest.mark.parametrize(
    ("block", "warps"),
    [
        ((64, 64), (2, 2)),
        ((128, 256), (2, 4)),
        ((64, 64), (4, 1)),
        ((128, 64), (4, 1)),
        ((32, 32), (1, 2)),
        ((64, 128), (1, 4)),
    ],
)
def test_mma_spreads_read_back(block: tuple[int, int], warps: tuple[int, int]) -> None:
    """An MMA's C (atoms.tiled_c, checked against the PTX ISA in test_tile_mma) and its row
    reductions decode to the tiled MMA they came from."""
    part = MmaPartition(block, warps)
    threads = 32 * warps[0] * warps[1]
    text = tv_text(part, threads)
    assert decode(block, text, threads) == part
    rows = tv_text((part, 1), threads)
    assert decode((block[0], 1), rows, threads) == (part, 1)


def test_plain_and_foreign_layouts() -> None:
    assert decode((1, 1), plain_tv(128), 128) == PLAIN
    with pytest.raises(ValueError, match="is not a blocked spread"):
        decode((64, 64), "((128),(4,8)):((1),(128,512))", 128)
    with pytest.raises(ValueError, match="not a reduced blocked or MMA spread"):
        decode((64, 1), "(64,64):(1,0) o 0 o ((128),(4,8)):((1),(128,512))", 128)

"""Skewed row accesses (lowering/tile_skew.py): a row whose start is not aligned for its
vectors (an odd row of f16) read and written as aligned blocks, the edge elements apart.

The module's word arithmetic folds Python integers, so its own functions (`funnel`,
`Skew.read`, `Skew.shares`, `write_blocks`) run here on numbers: a warp of lanes holding
consecutive chunks of a row reads a byte array and writes another, at every misalignment, every
element size and chunk shape, with rows that end inside a chunk. Each element must be read from
its own address, and each written exactly once, with nothing outside the row touched. The PTX
tests check that the lowering takes the skewed version: aligned vector accesses, one shuffle a
word, no scalar access outside the cut chunks.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tilec.driver import CompileOptions, compile_file
from tilec.lowering.tile_skew import Emitter, Flag, Skew, Word, funnel, write_blocks

WARP = 32


def as_words(data: bytes) -> list[int]:
    return [int.from_bytes(data[k : k + 4], "little") for k in range(0, len(data), 4)]


def as_bytes(words: list[Word]) -> bytes:
    return b"".join(int(w).to_bytes(4, "little") for w in words)


@pytest.mark.parametrize("offset", range(0, 17))
def test_funnel_takes_the_bytes_at_any_offset(offset: int) -> None:
    data = bytes(random.Random(offset).randrange(256) for _ in range(36))
    got = funnel(as_words(data), offset, 16, 4)
    assert as_bytes(got) == data[offset : offset + 16]


class Memory(Emitter):
    """One lane's writes into a shared byte array, counting the writes of each byte."""

    def __init__(self, mem: bytearray, counts: list[int], at: int, chunk: bytes, eb: int) -> None:
        self.mem, self.counts, self.at, self.chunk, self.eb = mem, counts, at, chunk, eb
        self.aligned = at

    def put(self, address: int, data: bytes) -> None:
        for k, byte in enumerate(data):
            self.mem[address + k] = byte
            self.counts[address + k] += 1

    def block(self, offset: Word, words: list[Word]) -> None:
        assert isinstance(offset, int)
        address = self.aligned + offset
        assert address % (4 * len(words)) == 0, "a block store must be aligned"
        self.put(address, as_bytes(words))

    def elements(self, which: range, keep: Callable[[int], Flag]) -> None:
        for e in which:
            if keep(e):
                self.put(self.at + e * self.eb, self.chunk[e * self.eb : (e + 1) * self.eb])

    def branch(self, cond: Flag, then: Callable[[], None], other: Callable[[], None]) -> None:
        assert isinstance(cond, bool)
        (then if cond else other)()


def run_warp(eb: int, width: int, vec: int, start: int, n: int, lanes: int, per_row: int) -> None:
    """`lanes` lanes with chunks of `vec` elements, tile rows of `per_row` chunks. Tile row k
    starts at byte `start + k * (n + 3) * eb` (each at its own misalignment) and holds `n`
    elements inside the bounds: past them the tile overlaps the next row, which must be left
    alone. Reads and writes go through the module's own functions."""
    block = width * eb
    skew = Skew(eb, block, vec // width)
    rng = random.Random(repr((eb, width, vec, start, n, lanes, per_row)))
    rows = -(-lanes // per_row)
    size = start + (rows + 1) * (per_row * vec + n + 3) * eb + 4 * block
    src = bytes(rng.randrange(256) for _ in range(size))
    dst, counts, expected = bytearray(size), [0] * size, [0] * size

    def place(lane: int) -> tuple[int, int]:
        """(the chunk's first byte, its first element's place in its row)"""
        row, c = divmod(lane, per_row)
        return start + row * (n + 3) * eb + c * vec * eb, c * vec

    def inside(lane: int, e: int) -> bool:
        return place(lane)[1] + e < n

    own: list[list[int]] = []
    for lane in range(lanes):
        at, col = place(lane)
        o = at % block
        count = max(0, min(vec, n - col))  # the chunk's elements inside the bounds
        for e in range(count):
            expected[at + e * eb : at + (e + 1) * eb] = [1] * eb
        own.append(as_words(src[at : at + vec * eb]))

        def load(
            off: Word, first: Word, aligned: int = at - o, at: int = at, count: int = count
        ) -> list[int]:
            """A block, as the lowering loads it: only where `first` (the chunk's first element
            in it) is inside; then it must hold an own element inside the bounds."""
            assert isinstance(off, int) and isinstance(first, int)
            lo = aligned + off
            assert at + first * eb == max(lo, at), "`first` is not the block's first element"
            if first >= count:
                return [0xDEADBEEF] * (block // 4)  # not loaded: undefined words
            assert lo < at + count * eb and lo + block > at, "a block with no own element"
            return as_words(src[lo : lo + block])

        got = as_bytes(skew.read(o, load))[: count * eb]
        assert got == src[at : at + count * eb], f"lane {lane}, o = {o}"
    # Writes: every lane's shuffle first (lane + 1's first block), then each lane's stores.
    for lane in range(lanes):
        at, col = place(lane)
        o = at % block
        nxt = own[lane + 1 if lane + 1 < lanes else lane][: skew.words]
        head = lane % WARP == 0 or col == 0
        tail = lane % WARP == WARP - 1 or col == (per_row - 1) * vec
        mem = Memory(dst, counts, at, as_bytes(own[lane]), eb)
        mem.aligned = at - o
        if inside(lane, vec - 1):
            whole_next = not tail and inside(lane, 2 * vec - 1)
            write_blocks(skew, own[lane], nxt, o, head, whole_next, mem)
        else:
            mem.elements(range(vec), lambda e, lane=lane: inside(lane, e))
    assert counts == expected, "a byte written twice, or not at all, or outside the rows"
    assert all(dst[k] == src[k] for k in range(size) if expected[k])


CASES = [
    # (element bytes, run width, chunk elements, tile row chunks)
    (2, 8, 8, 64),  # f16, one 16-byte run a chunk (examples/softmax.tile)
    (2, 8, 16, 32),  # two runs a chunk
    (2, 8, 8, 8),  # tile rows of 8 chunks: a warp spans 4 rows, each its own misalignment
    (4, 4, 4, 64),  # f32
    (1, 16, 16, 32),  # bytes
    (2, 2, 2, 64),  # 4-byte runs
]


@pytest.mark.parametrize(("eb", "width", "vec", "per_row"), CASES)
@pytest.mark.parametrize("shift", range(16))
def test_a_warp_reads_and_writes_a_skewed_row(
    eb: int, width: int, vec: int, per_row: int, shift: int
) -> None:
    start = 64 + shift * eb % (width * eb)
    full = per_row * vec
    for n in (full, full - 1, full - vec - 3, full + 5, 5):
        run_warp(eb, width, vec, start, n, 64, per_row)


ROWCOPY = """
kernel rowcopy<COLS: int = 1024, THREADS: int = 64, T: type = f16>(X: T[R, N], Y: T[R, N])
  grid(R) threads(THREADS) target(sm_80)
{
  let x = load(local_tile(X, (1, COLS), (block.x, 0)))
  store(x, local_tile(Y, (1, COLS), (block.x, 0)))
}
"""
MASKED = ROWCOPY.replace(
    "store(x, local_tile(Y, (1, COLS), (block.x, 0)))",
    "store(x, local_tile(Y, (1, COLS), (block.x, 0)), mask = coord(x, mode = 1) < 7)",
)


def ptx(tmp_path: Path, source: str, **params: int | str) -> str:
    path = tmp_path / "k.tile"
    path.write_text(source)
    options = CompileOptions(emit="ptx", params={k: str(v) for k, v in params.items()})
    return str(compile_file(str(path), options).value)


@pytest.mark.parametrize(
    ("elem", "threads", "chunks"), [("f16", 64, 2), ("f16", 128, 1), ("bf16", 32, 4)]
)
def test_an_unaligned_row_is_skewed(tmp_path: Path, elem: str, threads: int, chunks: int) -> None:
    # 1024 columns over `threads` threads: `chunks` 16-byte chunks a thread. The skewed store
    # shuffles each chunk's first block down one lane (4 words); the skewed load reads two
    # aligned blocks a chunk and shifts them with prmt, beside the fast version's vectors.
    text = ptx(tmp_path, ROWCOPY, THREADS=threads, T=elem)
    assert len(re.findall(r"shfl\.sync\.down\.b32", text)) == 4 * chunks
    assert len(re.findall(r"\bprmt\.b32\b", text)) >= 4 * chunks
    assert len(re.findall(r"st\.global\.v4\.b32", text)) >= 2 * chunks  # fast + skewed


def test_a_skewed_load_issues_every_chunk_before_shifting(tmp_path: Path) -> None:
    # Two chunks a thread: the skewed version's four block loads (predicated, no branch) all
    # come before its first shift, and none follows it: with a branch per chunk, the second
    # chunk's loads waited for the first chunk's data (its shifts) in the SASS.
    text = ptx(tmp_path, ROWCOPY, THREADS=64)
    first = text.index("prmt.b32")
    before = re.findall(r"ld\.global[^\n]*", text[:first])
    assert [bool(re.match(r"ld\.global\.v4", x)) for x in before[-4:]] == [True] * 4
    assert all("@%p" in x for x in text[:first].splitlines()[-40:] if "ld.global.v4" in x)
    version = text[first : text.index("bra.uni", first)]
    assert "ld.global" not in version, "a load after the first shift"


def test_many_skewed_chunks_a_thread_read_behind_a_branch_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Eight chunks a thread (past SKEW_BATCH): each reads behind its own branch (aligned blocks
    # inside the bounds, element by element at the edge), not with the 16 predicated block
    # loads up front that the few-chunk form issues: that form spilled 1.7 KB in softmax's
    # COLS = 32768 build.
    from tilec.lowering import tile_memory

    def predicated(text: str) -> int:
        return len(re.findall(r"@%p\d+ ld\.global\.v4", text))

    assert 4096 // 8 // 64 > tile_memory.SKEW_BATCH >= 1024 // 8 // 64
    many = predicated(ptx(tmp_path, ROWCOPY, COLS=4096, THREADS=64))
    monkeypatch.setattr(tile_memory, "SKEW_BATCH", 8)
    assert predicated(ptx(tmp_path, ROWCOPY, COLS=4096, THREADS=64)) >= many + 16


def test_a_masked_store_is_not_skewed(tmp_path: Path) -> None:
    text = ptx(tmp_path, MASKED)
    assert "shfl.sync" not in text
    assert "prmt.b32" in text, "the load is still skewed"


def test_partial_chunks_are_not_skewed_on_stores(tmp_path: Path) -> None:
    # 1024 columns over 96 threads: not every thread holds every chunk, so the shuffles of a
    # skewed store would run on some lanes only: the store stays element by element.
    text = ptx(tmp_path, ROWCOPY, THREADS=96)
    assert "shfl.sync" not in text

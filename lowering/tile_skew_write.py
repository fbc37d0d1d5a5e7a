"""Passes (lowered stage): the stores of a skewed row access (`tile_skew`: a chunk of V
elements o bytes past the aligned blocks Q0 .. QR it spans).

Writes: Q1 .. Q(R-1) hold the lane's own elements only; QR holds its last o / e elements and the
next lane's first (B - o) / e, which one shuffle a word brings, so each lane stores whole
aligned blocks. Where a tile row's chunks are a multiple of 32 (a warp's chunks lie in one
tile row, lane 0's first), the shuffle wraps around the warp (`shfl.idx` from lane
(j + 1) mod 32): lane 31's QR then holds its own last o bytes and lane 0's first B - o, and
lane 31 stores them as naturally aligned pieces (`split`), [0, o) at its own QR and [o, B) at
lane 0's Q0 (one piece a set bit of o or of B - o, each under its own condition, which
ptxas predicates: at most 3 + 3 for f16, a single 16-byte one where o = 0):

    lane 31's QR   | 31 31 31 | 0 0 0 0 0 |     o = 6: [0, 6) as 4 + 2 bytes at its QR,
                    0        o           B             [6, 16) as 2 + 8 bytes at lane 0's Q0

Elsewhere (`shfl.down`), the lane that starts a warp or a tile row (`head`) writes its part of
Q0 element by element, and the one that ends it (`tail`) its part of QR, since no lane before
or after it holds the rest of those blocks. A chunk that a bound cuts goes element by element,
and so does its neighbour's share of the block between them (lane 0 writes its own part of Q0
where lane 31's chunk is cut).

`write_blocks` and `split` run on numbers as well (`Emitter`), so test/unit/test_skew.py runs
a warp of lanes over a byte array with them.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, gpu, llvm

from tilec.lowering import IndexBuilder, Term
from tilec.lowering.tile_access import Run, Side, if_else, shifted, when, write_scalars
from tilec.lowering.tile_bands import as_words
from tilec.lowering.tile_fragments import Partition, constant, convert
from tilec.lowering.tile_skew import (
    WARP,
    Flag,
    Skew,
    Word,
    _choose,
    _has,
    _i32,
    _masked,
    _minus,
    _plus,
    _word,
    aligned_start,
    byte_gep,
    skew_of,
)


def store_block(base: ir.Value, offset: Word, words: list[Word]) -> None:
    vt = ir.VectorType.get([len(words)], _i32())
    vec = llvm.UndefOp(vt).result
    for k, w in enumerate(words):
        vec = llvm.InsertElementOp(vec, _word(w), constant(_i32(), k)).result
    llvm.StoreOp(vec, byte_gep(base, offset), alignment=len(words) * 4)


def store_piece(base: ir.Value, offset: Word, words: list[Word], size: int, p: Flag) -> None:
    """Where p holds, one store of the low `size` bytes of `words` `offset` bytes past `base`
    (a branch a piece: ptxas predicates each store)."""

    def store() -> None:
        if size >= 8:
            store_block(base, offset, words[: size // 4])
            return
        word = _word(words[0])
        if size < 4:
            word = arith.TruncIOp(ir.IntegerType.get_signless(8 * size), word).result
        llvm.StoreOp(word, byte_gep(base, offset), alignment=size)

    when(p, store)


class Emitter:
    """Where a skewed write goes: IR (`IrEmitter`) or, in the tests, a byte array."""

    def block(self, offset: Word, words: list[Word]) -> None:
        """Store whole aligned words `offset` bytes past the chunk's aligned start."""
        raise NotImplementedError

    def elements(self, which: range, keep: Callable[[int], Flag]) -> None:
        """Store the chunk's own elements `which` for which `keep(e)` holds, one by one."""
        raise NotImplementedError

    def piece(self, offset: Word, words: list[Word], size: int, p: Flag) -> None:
        """Where p holds, store the low `size` bytes (1 .. 16, `offset` a multiple of it) of
        `words` `offset` bytes past the chunk's aligned start."""
        raise NotImplementedError

    def branch(self, cond: Flag, then: Callable[[], None], other: Callable[[], None]) -> None:
        raise NotImplementedError


def write_blocks(
    skew: Skew,
    own: list[Word],
    nxt: list[Word],
    o: Word,
    head: Flag,
    whole_next: Flag,
    wrap: Flag,
    emit: Emitter,
) -> None:
    """A wholly-inside chunk's stores: Q1 .. Q(R-1) whole; QR split between the lane and
    lane 0 where the lane is the last of a wrapping warp (`wrap`: `nxt` is lane 0's, see
    `split`), else whole where the next lane's chunk is inside and in the same warp and tile
    row (`whole_next`), else the chunk's own part of it element by element; Q0's own part
    element by element by a `head` lane (the lane before it wrote the rest of Q0 as its QR, or
    nobody holds it)."""
    shares = skew.shares(own, nxt, o)
    for r, words in enumerate(shares[:-1], start=1):
        emit.block(r * skew.block, words)
    w = skew.per_block
    last = skew.runs * w
    qr = skew.runs * skew.block

    def to_next() -> None:
        emit.branch(
            whole_next,
            lambda: emit.block(qr, shares[-1]),
            lambda: emit.elements(range(last - w, last), lambda e: skew.in_tail(e, o)),
        )

    emit.branch(wrap, lambda: split(skew, shares[-1], o, emit), to_next)
    emit.branch(head, lambda: emit.elements(range(w), lambda e: skew.in_head(e, o)), _nothing)


def split(skew: Skew, words: list[Word], o: Word, emit: Emitter) -> None:
    """Lane 31's QR `words` in a wrapping warp: bytes [0, o) its own, at its QR; [o, B) lane
    0's first, at lane 0's Q0 (`warp_back`). Each part goes as naturally aligned pieces, one for
    each set bit s of its length:

        [0, o):  the piece of s bytes at o's bits above s          (the largest first)
        [o, B):  the piece of s bytes at o + ((B - o)'s bits below s)  (the smallest first)

    (B - o = B, one whole block, where o = 0.) A piece's words are selected by the bits of o
    (or B - o) above s: at most 2 candidates for f16's 4-byte piece, 4 for its 2-byte one."""
    block, qr = skew.block, skew.runs * skew.block
    m = _minus(block, o)
    sizes = [s for s in (block >> k for k in range(block.bit_length())) if s >= skew.elem_bytes]
    for s in sizes[1:]:  # [0, o): at 2s * q, q = (o / 2s) mod (B / 2s)
        at = [2 * s * q for q in range(block // (2 * s))]
        data = _choose([_bytes_at(words, a, s) for a in at], o, (2 * s).bit_length() - 1)
        emit.piece(_plus(_masked(o, block - 2 * s), qr), data, s, _has(o, s))
    for s in sizes:  # [o, B): at B - s - 2s * q, q = ((B - o) / 2s) mod (B / 2s)
        at = [block - s - 2 * s * q for q in range(max(block // (2 * s), 1))]
        data = _choose([_bytes_at(words, a, s) for a in at], m, (2 * s).bit_length() - 1)
        offset = _plus(_minus(block - s, _masked(m, max(block - 2 * s, 0))), skew.warp_back)
        emit.piece(offset, data, s, _has(m, s))


def _bytes_at(words: list[Word], at: int, size: int) -> list[Word]:
    """The words holding bytes [at, at + size) of `words` (at a multiple of size), the first
    shifted down so that a piece under 4 bytes is its low bytes."""
    if size >= 4:
        return words[at // 4 : (at + size) // 4]
    word, shift = words[at // 4], 8 * (at % 4)
    if shift == 0:
        return [word]
    return [word >> shift if isinstance(word, int) else arith.ShRUIOp(word, _word(shift)).result]


def _nothing() -> None:
    return None


class IrEmitter(Emitter):
    """A skewed write as llvm stores under scf.if."""

    def __init__(self, base: ir.Value, run: Run, values: list[ir.Value]) -> None:
        self.base, self.run, self.values = base, run, values

    def block(self, offset: Word, words: list[Word]) -> None:
        store_block(self.base, offset, words)

    def elements(self, which: range, keep: Callable[[int], Flag]) -> None:
        for e in which:

            def store(e: int = e) -> None:
                llvm.StoreOp(self.values[e], self.run.address(e))

            when(keep(e), store)

    def piece(self, offset: Word, words: list[Word], size: int, p: Flag) -> None:
        store_piece(self.base, offset, words, size, p)

    def branch(self, cond: Flag, then: Callable[[], None], other: Callable[[], None]) -> None:
        if_else(cond, [], lambda: then() or [], lambda: other() or [])


def write_skewed(
    side: Side,
    part: Partition,
    coords: list[Term],
    values: list[ir.Value],
    t: ir.Value,
    b: IndexBuilder,
) -> None:
    """Store the chunk at `coords` as aligned blocks (see the module docstring). Every lane
    runs this (its shuffles), so it must not sit under a branch that differs between lanes."""
    view, m, w = side.view, part.m, side.width
    skew = skew_of(side, part)
    values = [convert(v, view.elem) for v in values]
    own = as_words(values, view.elem)
    run = Run(view, coords, m, b)
    lane = b.rem(t, WARP)
    nxt = _next_lanes(own[: skew.words], lane, wraps(part), b)

    def aligned() -> list:
        o, base = aligned_start(run, skew)
        head, whole_next, wrap = roles(part, lane, coords[m], run.inside, b)
        write_blocks(skew, list(own), nxt, o, head, whole_next, wrap, IrEmitter(base, run, values))
        return []

    def scalars() -> list:
        for s in range(0, part.vec, w):
            write_scalars(Run(view, shifted(coords, m, s, b), m, b), values[s : s + w], True)
        return []

    if_else(run.inside(part.vec - 1), [], aligned, scalars)


def wraps(part: Partition) -> bool:
    """Whether a skewed store's shuffle wraps around the warp: a tile row of a multiple of 32
    chunks, so each warp's 32 chunks lie in one tile row, lane 0's first (whole warps, every
    thread every chunk: `skewable`; `Partition.chunk_coords`)."""
    return (part.shape[part.m] // part.vec) % WARP == 0


def roles(
    part: Partition, lane: Term, col: Term, inside: Callable[[int], Flag], b: IndexBuilder
) -> tuple[Flag, Flag, Flag]:
    """`write_blocks`' (head, whole_next, wrap) for a wholly-inside chunk: `lane` its lane,
    `col` its first element's place in its tile row, `inside(e)` whether its element e (and
    past it, the next lanes') lies inside the bounds. Wrapping (`wraps`): lane 31 splits its
    QR, lane 0 writes its own part of Q0 only where lane 31's chunk is cut (element by
    element then). Else a lane that starts a warp or a tile row writes its part of Q0, one
    that ends either its part of QR."""
    vec = part.vec
    if wraps(part):
        head = b.both(b.cmp("eq", lane, 0), b.negate(inside(WARP * vec - 1)))
        return head, inside(2 * vec - 1), b.cmp("eq", lane, WARP - 1)
    head = b.either(b.cmp("eq", lane, 0), b.cmp("eq", col, 0))
    last = part.shape[part.m] - vec
    tail = b.either(b.cmp("eq", lane, WARP - 1), b.cmp("eq", col, last))
    return head, b.both(b.negate(tail), inside(2 * vec - 1)), False


def _next_lanes(words: list[ir.Value], lane: Term, wraps: bool, b: IndexBuilder) -> list[Word]:
    """The next lane's `words`: `shfl.idx` from lane (j + 1) mod 32 where the warp wraps
    (lane 31 gets lane 0's), else `shfl.down` by one (lane 31 its own)."""
    if not wraps:
        down = gpu.ShuffleMode.DOWN
        one, width = constant(_i32(), 1), constant(_i32(), WARP)
        return [gpu.ShuffleOp(x, one, width, down).results[0] for x in words]
    source = arith.IndexCastOp(_i32(), b.value(b.rem(b.add(lane, 1), WARP))).result
    width, idx = constant(_i32(), WARP), gpu.ShuffleMode.IDX
    return [gpu.ShuffleOp(x, source, width, idx).results[0] for x in words]

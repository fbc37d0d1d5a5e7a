"""Passes (lowered stage): a row access whose start is not aligned for its vectors, as aligned
vectors with the edge elements apart (an odd-length row of f16 starts 2-byte aligned).

A thread's chunk of V elements starts o bytes past an aligned block of B bytes (B the run's
bytes, 16 for 8 f16; 0 <= o < B, the same for every chunk of a tile row), so it spans the
aligned blocks Q0 .. QR (R = V / w runs of w elements):

    memory      | Q0          | Q1          | ... | QR          |
    lane j          [o .... lane j's V elements ....]
    lane j + 1                                       [o .... lane j + 1's ...

Reads: the lane loads Q0 .. QR (QR only where o > 0) and shifts the words down by o bytes
(`funnel`: a barrel shifter of `prmt`s, then `fshr` a word), so a run costs one
more 16-byte load (an L1 hit: the next lane loads the same block) and no scalar access. A
chunk that a bound cuts reads the same way, each block under a predicate (an element of the
chunk inside it), its elements past the bound replaced; with no branch between them, a thread
issues all its chunks' loads before the first shift waits for one.

Writes: Q1 .. Q(R-1) hold the lane's own elements only; QR holds its last o / e elements and the
next lane's first (B - o) / e, which one `shfl.down` a word brings, so each lane stores whole
aligned blocks. The lane that starts a warp or a tile row (`head`) writes its part of Q0
element by element, and the one that ends it (`tail`) its part of QR, since no lane before or
after it holds the rest of those blocks. A chunk that a bound cuts goes element by element, and
so does its neighbour's share of the block between them.

Word arithmetic (`permute`, `fshr`, shifts) folds Python integers, so the same code runs on
numbers: test/unit/test_skew.py runs a warp of lanes over a byte array with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm

from tilec.lowering import IndexBuilder, Term
from tilec.lowering.tile_access import (
    Run,
    Side,
    if_else,
    read_scalars,
    shifted,
    when,
    write_scalars,
)
from tilec.lowering.tile_bands import as_words, from_words, ptx_words, vector_suffix
from tilec.lowering.tile_fragments import Partition, constant, convert
from tilec.lowering.tile_views import elem_bytes

Word = int | ir.Value  # a static 32-bit word or an SSA i32
Flag = bool | ir.Value
MASK32 = 0xFFFFFFFF
WARP = 32


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _word(x: Word) -> ir.Value:
    return constant(_i32(), x) if isinstance(x, int) else x


def permute(lo: Word, hi: Word, selector: Word) -> Word:
    """PTX `prmt.b32` (default mode): byte i of the result is byte (selector's nibble i) of the
    8 bytes hi:lo. Selects whole words with no predicate: selector 0x3210 is lo, 0x7654 hi."""
    if all(isinstance(v, int) for v in (lo, hi, selector)):
        pool = ((hi << 32) | lo).to_bytes(8, "little")
        picked = bytes(pool[(selector >> (4 * i)) & 7] for i in range(4))
        return int.from_bytes(picked, "little")
    mode = nvvm.PermuteMode.DEFAULT
    return nvvm.PermuteOp(_i32(), _word(lo), _word(selector), mode, hi=_word(hi)).result


def fshr(hi: Word, lo: Word, shift: Word) -> Word:
    """The low 32 bits of (hi:lo) >> shift, shift in [0, 32): PTX `shf.r` (or `prmt.f4e`)."""
    if all(isinstance(v, int) for v in (hi, lo, shift)):
        return (((hi << 32) | lo) >> shift) & MASK32
    if isinstance(shift, int) and shift == 0:
        return lo
    return llvm.intr_fshr(_word(hi), _word(lo), _word(shift))


def _bits(x: Word, shift: int, mask: int) -> Word:
    """(x >> shift) & mask."""
    if isinstance(x, int):
        return (x >> shift) & mask
    moved = arith.ShRUIOp(x, _word(shift)).result if shift else x
    return arith.AndIOp(moved, _word(mask)).result


def _times(x: Word, k: int) -> Word:
    return x * k if isinstance(x, int) else arith.MulIOp(x, _word(k)).result


def _plus(x: Word, k: int) -> Word:
    return x + k if isinstance(x, int) else arith.AddIOp(x, _word(k)).result


def funnel(words: Sequence[Word], offset: Word, largest: int, n: int) -> list[Word]:
    """The n words at byte `offset` (runtime, 0 .. `largest`) of the little-endian byte string
    `words` holds: out[k] = bytes [offset + 4k, offset + 4k + 4).

    A barrel shifter of whole words, one `prmt` a word a level (level k moves by 2^k words
    where bit k of offset / 4 is set: its selector is 0x3210 or 0x7654), then a byte shift
    between neighbours (`fshr`). No predicates: a select per candidate word held one per
    candidate, and ptxas spilled predicates in kernels with many such accesses."""
    levels = (largest >> 2).bit_length()
    cur = [*words, *([0] * (n + (1 << levels) - len(words)))]
    for k in range(levels):
        step = 1 << k
        selector = _plus(_times(_bits(offset, 2 + k, 1), 0x4444), 0x3210)
        cur = [permute(cur[i], cur[i + step], selector) for i in range(len(cur) - step)]
    shift = _times(_bits(offset, 0, 3), 8)
    return [fshr(cur[k + 1], cur[k], shift) for k in range(n)]


@dataclass(frozen=True)
class Skew:
    """The blocks of one chunk: `block` bytes each (a run's), `runs` of them in the chunk."""

    elem_bytes: int
    block: int
    runs: int

    @property
    def words(self) -> int:  # a block's 32-bit words
        return self.block // 4

    @property
    def per_block(self) -> int:  # a block's elements
        return self.block // self.elem_bytes

    def read(self, o: Word, load: Callable[[Word, Word], list[Word]]) -> list[Word]:
        """The chunk's words: `align(o, loads(o, load))`."""
        return self.align(o, self.loads(o, load))

    def loads(self, o: Word, load: Callable[[Word, Word], list[Word]]) -> list[Word]:
        """The words of each block the chunk touches, from `load(byte offset past the aligned
        start, first)`, `first` the chunk's first element inside that block (a load may be
        skipped where that element lies outside the bounds: none of its later ones are read):
        QR only where o > 0 (else Q(R-1) again: every load stays inside the chunk)."""
        some = min(o, 1) if isinstance(o, int) else arith.MinUIOp(o, _word(1)).result
        offsets = [r * self.block for r in range(self.runs)]
        offsets.append(_plus(_times(some, self.block), (self.runs - 1) * self.block))
        blocks = [load(off, self.first(off, o) if r else 0) for r, off in enumerate(offsets)]
        return [w for blk in blocks for w in blk]

    def align(self, o: Word, words: list[Word]) -> list[Word]:
        """The chunk's own words out of its blocks' (`loads`): shifted down by o bytes."""
        return funnel(words, o, self.block - 1, self.runs * self.words)

    def first(self, offset: Word, o: Word) -> Word:
        """The chunk's first element in the block `offset` bytes past its aligned start (one
        that starts at or after the chunk): (offset - o) / size."""
        if isinstance(offset, int) and isinstance(o, int):
            return (offset - o) // self.elem_bytes
        diff = arith.SubIOp(_word(offset), _word(o)).result
        shift = self.elem_bytes.bit_length() - 1
        return arith.ShRUIOp(diff, _word(shift)).result if shift else diff

    def shares(self, own: list[Word], nxt: list[Word], o: Word) -> list[list[Word]]:
        """Q1 .. QR as words: QR takes the next lane's first block `nxt` after the chunk's own.
        Qr starts (r * block - o) bytes into the chunk: Q(r - 1)'s words shifted by block - o."""
        moved = self.block - o if isinstance(o, int) else arith.SubIOp(_word(self.block), o).result
        stream = [*own, *nxt]
        out = []
        for r in range(1, self.runs + 1):
            first = (r - 1) * self.words
            out.append(funnel(stream[first:], moved, self.block, self.words))
        return out

    def in_head(self, e: int, o: Word) -> Flag:
        """Whether the chunk's element e (< w) lies in Q0: e * size + o < block."""
        return _less(e * self.elem_bytes, self.block, o)

    def in_tail(self, e: int, o: Word) -> Flag:
        """Whether the chunk's element e (in its last run) lies in QR: e * size >= R * block - o,
        i.e. R * block - e * size <= o."""
        return _not_greater(self.runs * self.block - e * self.elem_bytes, o)


def _less(x: int, bound: int, o: Word) -> Flag:
    """x + o < bound."""
    if isinstance(o, int):
        return x + o < bound
    return arith.CmpIOp(arith.CmpIPredicate.ult, o, _word(bound - x)).result


def _not_greater(x: int, o: Word) -> Flag:
    """x <= o."""
    if isinstance(o, int):
        return x <= o
    return arith.CmpIOp(arith.CmpIPredicate.ule, _word(x), o).result


def skewable(side: Side, part: Partition, writes: bool) -> bool:
    """Whether `side` can be accessed skewed: a global view, linear along the chunks' mode
    with unit stride, vectors of at least 4 bytes a run, every bound growing by at most one
    per element along it. Writes also need every thread to hold every chunk (the shuffles run
    on all lanes) and whole warps."""
    view, m = side.view, part.m
    eb = elem_bytes(view.elem)
    block = side.width * eb
    if view.space != "global" or view.swizzle is not None or view.stride[m] != 1:
        return False
    if side.width < 2 or block % 4 or part.vec % side.width or part.interleave != 1:
        return False
    for x in view.bounds:
        if (x.mode == m) + (x.outer[1] if x.outer is not None and x.outer[0] == m else 0) > 1:
            return False
    if writes:
        return part.chunks % part.threads == 0 and part.threads % WARP == 0
    return True


def skew_of(side: Side, part: Partition) -> Skew:
    eb = elem_bytes(side.view.elem)
    return Skew(eb, side.width * eb, part.vec // side.width)


def misalignment(address: ir.Value, block: int) -> ir.Value:
    """The address's bytes past a `block`-byte boundary, as an i32."""
    i64 = ir.IntegerType.get_signless(64)
    bits = llvm.PtrToIntOp(i64, address).result
    low = arith.TruncIOp(_i32(), bits).result
    return arith.AndIOp(low, _word(block - 1)).result


def byte_gep(base: ir.Value, offset: Word) -> ir.Value:
    """base + offset bytes (i32 offset, may be negative); not `inbounds`: an aligned block may
    start before the tensor's first element, within its allocation's 16-byte granule."""
    i8 = ir.IntegerType.get_signless(8)
    dynamic = -2147483648
    no_flags = ir.IntegerAttr.get(_i32(), 0)
    return llvm.GEPOp(
        base.type, base, [_word(offset)], ir.DenseI32ArrayAttr.get([dynamic]), i8, no_flags
    ).result


def load_block(base: ir.Value, offset: Word, words: int, p: Flag = True) -> list[Word]:
    """The aligned block `offset` bytes past `base`, as words: one `@p ld.global` where `p`
    is not surely true (inline PTX, see tile_bands.predicated_read; its words are undefined
    where p is false)."""
    address = byte_gep(base, offset)
    if p is True:
        vt = ir.VectorType.get([words], _i32())
        vec = llvm.LoadOp(vt, address, alignment=words * 4).result
        return [llvm.ExtractElementOp(vec, constant(_i32(), k)).result for k in range(words)]
    if p is False:
        return [llvm.UndefOp(_i32()).result for _ in range(words)]
    res = _i32() if words == 1 else llvm.StructType.get_literal([_i32()] * words)
    asm = f"@${words + 1} ld.global{vector_suffix(words)} {ptx_words(words, 0)}, [${words}];"
    constraints = ",".join(["=r"] * words + ["l", "b"])
    op = llvm.InlineAsmOp(res, [address, p], asm, constraints, has_side_effects=True)
    if words == 1:
        return [op.result]
    return [llvm.ExtractValueOp(_i32(), op.result, [k]).result for k in range(words)]


def store_block(base: ir.Value, offset: Word, words: list[Word]) -> None:
    vt = ir.VectorType.get([len(words)], _i32())
    vec = llvm.UndefOp(vt).result
    for k, w in enumerate(words):
        vec = llvm.InsertElementOp(vec, _word(w), constant(_i32(), k)).result
    llvm.StoreOp(vec, byte_gep(base, offset), alignment=len(words) * 4)


class Emitter:
    """Where a skewed write goes: IR (`IrEmitter`) or, in the tests, a byte array."""

    def block(self, offset: Word, words: list[Word]) -> None:
        """Store whole aligned words `offset` bytes past the chunk's aligned start."""
        raise NotImplementedError

    def elements(self, which: range, keep: Callable[[int], Flag]) -> None:
        """Store the chunk's own elements `which` for which `keep(e)` holds, one by one."""
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
    emit: Emitter,
) -> None:
    """A wholly-inside chunk's stores: Q1 .. Q(R-1) whole; QR whole where the next lane's
    chunk is inside and in the same warp and tile row (`whole_next`), else the chunk's own
    part of it element by element; Q0's own part element by element by a `head` lane (the
    lane before it wrote the rest of Q0 as its QR, or nobody holds it)."""
    shares = skew.shares(own, nxt, o)
    for r, words in enumerate(shares[:-1], start=1):
        emit.block(r * skew.block, words)
    w = skew.per_block
    last = skew.runs * w
    emit.branch(
        whole_next,
        lambda: emit.block(skew.runs * skew.block, shares[-1]),
        lambda: emit.elements(range(last - w, last), lambda e: skew.in_tail(e, o)),
    )
    emit.branch(head, lambda: emit.elements(range(w), lambda e: skew.in_head(e, o)), _nothing)


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

    def branch(self, cond: Flag, then: Callable[[], None], other: Callable[[], None]) -> None:
        if_else(cond, [], lambda: then() or [], lambda: other() or [])


def aligned_start(run: Run, skew: Skew) -> tuple[Word, ir.Value]:
    """(o, base): the chunk's misalignment in bytes and the aligned block it starts in."""
    start = run.address(0)
    o = misalignment(start, skew.block)
    return o, byte_gep(start, arith.SubIOp(_word(0), o).result)


def read_skewed(
    side: Side, part: Partition, coords: list[Term], other: ir.Value, b: IndexBuilder
) -> Callable[[], list[ir.Value]]:
    """Issue the loads of the chunk at `coords`; the function returned builds its V values
    from them (`other` outside the bounds). No branch: each block is one `@p ld.global` under
    "the chunk's first element in it is inside" (the bounds along the chunk cut it after some
    prefix, so a block with an element inside is loaded and no other), and each element is
    selected under its own bound. A thread issues every chunk's loads before it shifts any
    (`tile_memory.load`): with a branch per chunk (aligned blocks inside, element by element
    at the edge) and the shifts beside its loads, ptxas issued a chunk's loads only after the
    previous chunk's shifts had waited for its data: one chunk in flight a thread."""
    view, m = side.view, part.m
    skew = skew_of(side, part)
    run = Run(view, coords, m, b)
    o, base = aligned_start(run, skew)
    index = ir.IndexType.get()

    def load(off: Word, first: Word) -> list[Word]:
        at = first if isinstance(first, int) else arith.IndexCastUIOp(index, first).result
        return load_block(base, off, skew.words, run.inside(at))

    words = skew.loads(o, load)

    def values() -> list[ir.Value]:
        own = skew.align(o, words)

        def cut() -> list[Word]:  # the chunk's elements past a bound: `other`
            got = from_words(own, view.elem)
            return as_words([_pick(run.inside(e), v, other) for e, v in enumerate(got)], view.elem)

        # Selected only where a bound cuts the chunk: a select a 16-bit element costs an
        # unpack and a repack beside it (5 instructions an element in the SASS).
        whole = if_else(run.inside(part.vec - 1), [_i32()] * len(own), lambda: own, cut)
        return from_words(whole, view.elem)

    return values


def read_skewed_branch(
    side: Side, part: Partition, coords: list[Term], other: ir.Value, b: IndexBuilder
) -> list[ir.Value]:
    """The chunk at `coords` (V values) behind a branch: from the aligned blocks it spans
    where it lies wholly inside the bounds, else element by element (`other` outside). For
    threads of many chunks (tile_memory.SKEW_BATCH): `read_skewed`'s predicated loads of a
    wide tile spilled (softmax COLS = 32768: 1.7 KB), this form does not."""
    view, w, m = side.view, side.width, part.m
    skew = skew_of(side, part)
    run = Run(view, coords, m, b)

    def aligned() -> list[ir.Value]:
        o, base = aligned_start(run, skew)
        words = skew.read(o, lambda off, _first: load_block(base, off, skew.words))
        return from_words(words, view.elem)

    def scalars() -> list[ir.Value]:
        out: list[ir.Value] = []
        for s in range(0, part.vec, w):
            out += read_scalars(view, Run(view, shifted(coords, m, s, b), m, b), other, w)
        return out

    return if_else(run.inside(part.vec - 1), [view.elem] * part.vec, aligned, scalars)


def _pick(cond: Flag, x: ir.Value, y: ir.Value) -> ir.Value:
    if isinstance(cond, bool):
        return x if cond else y
    return arith.SelectOp(cond, x, y).result


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
    down = gpu.ShuffleMode.DOWN
    nxt: list[Word] = [
        gpu.ShuffleOp(x, constant(_i32(), 1), constant(_i32(), WARP), down).results[0]
        for x in own[: skew.words]
    ]
    run = Run(view, coords, m, b)
    lane = b.rem(t, WARP)
    head = b.either(b.cmp("eq", lane, 0), b.cmp("eq", coords[m], 0))
    tail = b.either(b.cmp("eq", lane, WARP - 1), b.cmp("eq", coords[m], part.shape[m] - part.vec))

    def aligned() -> list:
        o, base = aligned_start(run, skew)
        whole_next = b.both(b.negate(tail), run.inside(2 * part.vec - 1))
        write_blocks(skew, list(own), nxt, o, head, whole_next, IrEmitter(base, run, values))
        return []

    def scalars() -> list:
        for s in range(0, part.vec, w):
            write_scalars(Run(view, shifted(coords, m, s, b), m, b), values[s : s + w], True)
        return []

    if_else(run.inside(part.vec - 1), [], aligned, scalars)


def or_skewed(
    side: Side,
    part: Partition,
    b: IndexBuilder,
    types: list[ir.Type],
    plain: Callable[[], list],
    skewed: Callable[[], list],
    writes: bool,
) -> list:
    """The edge version of an access: `plain()` where the side is aligned for its vectors (or
    cannot be skewed), else `skewed()`."""
    if not skewable(side, part, writes):
        return plain()
    return if_else(side.vectors(part, b), types, plain, skewed)

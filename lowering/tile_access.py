"""Passes (lowered stage): one chunk's access to a view, as vectors or element by element.

A `Side` is a view accessed with a partition: its vector width comes from the layouts (how many
elements stay contiguous in memory along the chunk's order, capped by the swizzle's intact
groups and by 16 bytes) and its fast-path test from the bounds and the alignment of its runtime
parts. `read_chunk` / `write_chunk` move a chunk's runs of that width as vectors, or element by
element under the bounds (a `Run`); `if_else` / `when` build the uniform branches between the
versions of an access (`tile_memory`, `tile_bands`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, scf

from tilec.dialects.layout import algebra as A
from tilec.lowering import IndexBuilder, Term, assumed_aligned, known_multiple
from tilec.lowering.tile_fragments import Partition, constant, convert
from tilec.lowering.tile_modes import leaves, probe_layout, unit
from tilec.lowering.tile_views import (
    View,
    all_of,
    elem_bytes,
    element_address,
    gep,
    in_bounds,
    less_than,
    position,
)

VECTOR_BYTES = 16
# A `?` stride stands for a stride the algebra must treat as unrelated to every other mode:
# larger than any tile, so no mode ever coalesces with it.
PROBE = 1 << 40


def largest_pow2_dividing(n: int, cap: int) -> int:
    w = 1
    while w * 2 <= cap and n % (w * 2) == 0:
        w *= 2
    return w


def contiguity(view: View, part: Partition) -> int:
    """Elements of a chunk that are contiguous in the view's memory, from the chunk start."""
    order = part.order
    laid = probe_layout([part.shape[k] for k in order], [view.stride[k] for k in order], PROBE)
    n = A.max_common_vector(laid, A.Layout(laid.shape, A.compact_col_major(laid.shape)))
    if view.swizzle is not None:
        n = min(n, 1 << view.swizzle.base)
    return n


def choose_partition(view: View, shape: tuple[int, ...], threads: int) -> Partition:
    """Chunks run along the view's unit-stride mode, as wide as 16 bytes allow."""
    units = [k for k, d in enumerate(view.stride) if unit(d) and shape[k] > 1]
    m = units[0] if units else max(range(len(shape)), key=lambda k: shape[k])
    one = Partition(shape, m, 1, threads)
    cap = VECTOR_BYTES // elem_bytes(view.elem)
    vec = largest_pow2_dividing(math.gcd(contiguity(view, one), shape[m]), cap)
    return Partition(shape, m, vec, threads)


@dataclass(frozen=True)
class Side:
    """One view accessed with one partition: its vector width and its fast-path condition."""

    view: View
    width: int

    @staticmethod
    def of(view: View, part: Partition) -> Side:
        cap = VECTOR_BYTES // elem_bytes(view.elem)
        width = largest_pow2_dividing(contiguity(view, part), min(cap, part.vec))
        # Chunk starts step other modes by their strides: a static one must keep the width;
        # along a nested mode m, a step past its first leaf's reach too.
        for k, d in enumerate(view.stride):
            steps = leaves(d)[1:] if k == part.m else leaves(d) if part.shape[k] > 1 else ()
            for s in steps:
                width = largest_pow2_dividing(s, width) if isinstance(s, int) else width
        if isinstance(view.offset, int):
            width = largest_pow2_dividing(view.offset, width) if view.offset else width
        return Side(view, width)

    @property
    def guarded(self) -> bool:
        """Whether the edge path must check this side: global, or shared at a runtime offset."""
        view = self.view
        dynamic = not isinstance(view.offset, int) or any(
            not isinstance(s, int) for d in view.stride for s in leaves(d)
        )
        return view.space == "global" or dynamic

    def fast(self, part: Partition, b: IndexBuilder) -> ir.Value | bool:
        """Whole tile in bounds, and base, offset and `?` strides aligned for the width.

        A shared buffer's base is a 16-byte aligned global: only its runtime parts need a test.
        """
        last = [s - 1 for s in part.shape]
        return all_of([in_bounds(self.view, last, b), self.vectors(part, b)])

    def vectors(self, part: Partition, b: IndexBuilder) -> ir.Value | bool:
        """Whether runs may move as vectors of the width: base, offset and `?` strides aligned
        for it (tested for a global side or runtime parts; a static shared one is; a width of
        1 needs nothing)."""
        if self.width == 1:
            return True
        view = self.view
        dynamic = not isinstance(view.offset, int) or any(runtime_steps(view, part))
        return self.aligned(part, b) if view.space == "global" or dynamic else True

    def aligned(self, part: Partition, b: IndexBuilder) -> ir.Value | bool:
        i64 = ir.IntegerType.get_signless(64)
        nbytes = self.width * elem_bytes(self.view.elem)
        # A term that surely holds a multiple of the width (k * BK of a K-tile's offset, a
        # stride the kernel's assume(...) states) needs no test, so the test does not vary
        # with a loop over such tiles.
        terms = [
            term
            for term in [self.view.offset, *runtime_steps(self.view, part)]
            if not isinstance(term, int) and known_multiple(term) % self.width
        ]
        if not terms and assumed_aligned(self.view.base):
            return True
        bits = llvm.PtrToIntOp(i64, self.view.base).result
        for term in terms:
            scaled = b.mul(term, elem_bytes(self.view.elem))
            bits = arith.OrIOp(bits, arith.IndexCastOp(i64, b.value(scaled)).result).result
        low = arith.AndIOp(bits, constant(i64, nbytes - 1)).result
        return arith.CmpIOp(arith.CmpIPredicate.eq, low, constant(i64, 0)).result


def runtime_steps(view: View, part: Partition) -> list[ir.Value]:
    """The runtime strides a chunk start can step by: every mode's but the leading stride of
    the chunks' own mode (within a run), and none of a mode the tile spans one element of (a
    row of a ROWS = 1 tile, gemv's one row of A: no chunk steps along it; where the tile lies
    along it is the view's offset)."""
    steps = [
        s
        for k, d in enumerate(view.stride)
        if part.shape[k] > 1
        for s in leaves(d)[(k == part.m) :]
    ]
    return [s for s in steps if not isinstance(s, int)]


def if_else(
    cond: ir.Value | bool,
    types: list[ir.Type],
    then: Callable[[], list],
    other: Callable[[], list],
    mark: str | None = None,
    value: ir.Attribute | None = None,
) -> list[ir.Value]:
    """scf.if cond -> types { then() } else { other() }; folded when cond is static. `mark`
    names an attribute the scf.if carries (`value`, or a unit attribute), for a later pass to
    find it by."""
    if cond is True:
        return then()
    if cond is False:
        return other()
    op = scf.IfOp(cond, types, has_else=True)
    if mark is not None:
        op.operation.attributes[mark] = value if value is not None else ir.UnitAttr.get()
    with ir.InsertionPoint(op.then_block):
        scf.YieldOp(then())
    with ir.InsertionPoint(op.else_block):
        scf.YieldOp(other())
    return list(op.results)


def when(cond: ir.Value | bool, body: Callable[[], None]) -> None:
    """scf.if cond { body() }, folded when cond is static."""
    if cond is True:
        body()
    elif cond is not False:
        op = scf.IfOp(cond)
        with ir.InsertionPoint(op.then_block):
            body()
            scf.YieldOp([])


def shifted(coords: list[Term], m: int, s: int, b: IndexBuilder) -> list[Term]:
    return [b.add(c, s) if k == m else c for k, c in enumerate(coords)]


class Run:
    """The elements `at + e` (e = 0, 1, ...) along mode m of a view, accessed one by one.

    Each element's address and bounds test could be built from its own coordinates, but LLVM
    then sees one sign-extended index, one add and one compare per element, and loop strength
    reduction turns them into as many live induction pointers (16 f16 per thread cost 45
    registers a tensor in examples/layernorm.tile's loops). So where the view is linear along m
    (no swizzle, a static stride), element e lies a constant e * stride past the run's first
    element, and where each bound's position grows by exactly e, element e is inside when
    e < (extent - position of the first) for each such bound and the other bounds hold for the
    first: one address and one subtraction per bound per run, then constants."""

    def __init__(self, view: View, at: list[Term], m: int, b: IndexBuilder) -> None:
        self.view, self.at, self.m, self.b = view, at, m, b
        stride = view.stride[m]  # a Nest is no one step: each element is addressed alone
        self.step = stride if view.swizzle is None and isinstance(stride, int) else None
        self.first = element_address(view, at, b) if self.step is not None else None
        self.rest: list[ir.Value | bool] = []
        self.rooms: list[Term] = []
        self.linear = True
        for x in view.bounds:
            pos = position(x, at, b)
            grows = (x.mode == m) + (x.outer[1] if x.outer is not None and x.outer[0] == m else 0)
            if grows == 0:
                self.rest.append(less_than(b, pos, x.extent))
            elif grows == 1:
                self.rooms.append(b.sub(x.extent, pos))
            else:
                self.linear = False

    def address(self, e: int) -> ir.Value:
        if self.first is None:
            return element_address(self.view, shifted(self.at, self.m, e, self.b), self.b)
        return gep(self.first, e * self.step, self.view.elem, self.b)

    def inside(self, e: int) -> ir.Value | bool:
        if not self.linear:
            return in_bounds(self.view, shifted(self.at, self.m, e, self.b), self.b)
        return all_of([*self.rest, *(less_than(self.b, e, room) for room in self.rooms)])

    def whole(self, vectors: ir.Value | bool, w: int) -> ir.Value | bool:
        """Whether the run's w elements move as one vector in the edge version: the view
        aligned for it (`vectors`) and the run wholly inside the bounds."""
        if vectors is False or w == 1 or not self.linear:
            return False
        return all_of([vectors, self.inside(w - 1)])


def read_chunk(
    side: Side,
    part: Partition,
    coords: list[Term],
    other: ir.Value | None,
    b: IndexBuilder,
    aligned: ir.Value | bool = False,
    packed: bool = False,
) -> list[ir.Value]:
    """The V values of the chunk at `coords`: vectors of side.width, or predicated scalars.
    With `other` (the edge version) and `aligned` (the view is aligned for the width), a run
    wholly inside the bounds still loads as one vector: only the runs a bound cuts go element
    by element (a ragged row's last tile, not all of it). `packed`: each run's branch hands
    its values to the join as words (`joined`)."""
    view, w, out = side.view, side.width, []
    for s in range(0, part.vec, w):
        at = shifted(coords, part.m, s, b)
        if other is None and w > 1:
            out += read_vector(view, element_address(view, at, b), w)
            continue
        run = Run(view, at, part.m, b)
        out += joined(
            run.whole(aligned, w),
            Words.of(view.elem, w if packed else 1),
            w,
            lambda run=run: read_vector(view, run.address(0), w),
            lambda run=run: read_scalars(view, run, other, w),
        )
    return out


def joined(
    cond: ir.Value | bool,
    words: Words,
    n: int,
    then: Callable[[], list[ir.Value]],
    other: Callable[[], list[ir.Value]],
) -> list[ir.Value]:
    """`if_else` of two ways to read the same n values, which cross the join as `words`: a
    vector load unpacked inside its branch waits there for the load (a LayerNorm's weight
    chunk did, before its bias chunk's load could issue)."""
    if isinstance(cond, bool):
        return then() if cond else other()
    pack = words.pack
    return words.unpack(if_else(cond, words.types(n), lambda: pack(then()), lambda: pack(other())))


@dataclass(frozen=True)
class Words:
    """How a load's versions hand their values to the join: 16-bit elements two to an i32
    word. Joined one by one, each f16 took a 32-bit register of its own until it was used
    (examples/layernorm.tile at COLS = 8192: x, w and b as 96 such registers, 127 in all and
    two blocks an SM); joined as words they stay packed as they were loaded."""

    elem: ir.Type
    pairs: bool

    @staticmethod
    def of(elem: ir.Type, vec: int) -> Words:
        return Words(elem, elem_bytes(elem) == 2 and vec % 2 == 0)

    def types(self, n: int) -> list[ir.Type]:
        if not self.pairs:
            return [self.elem] * n
        return [ir.IntegerType.get_signless(32)] * (n // 2)

    def pack(self, values: list[ir.Value]) -> list[ir.Value]:
        if not self.pairs:
            return values
        i32, pair = ir.IntegerType.get_signless(32), ir.VectorType.get([2], self.elem)
        out = []
        for lo, hi in zip(values[0::2], values[1::2], strict=True):
            vec = llvm.UndefOp(pair).result
            vec = llvm.InsertElementOp(vec, lo, constant(i32, 0)).result
            vec = llvm.InsertElementOp(vec, hi, constant(i32, 1)).result
            out.append(llvm.BitcastOp(i32, vec).result)
        return out

    def unpack(self, words: list[ir.Value]) -> list[ir.Value]:
        if not self.pairs:
            return words
        i32, pair = ir.IntegerType.get_signless(32), ir.VectorType.get([2], self.elem)
        out = []
        for w in words:
            vec = llvm.BitcastOp(pair, w).result
            out += [llvm.ExtractElementOp(vec, constant(i32, e)).result for e in (0, 1)]
        return out


def read_vector(view: View, address: ir.Value, w: int) -> list[ir.Value]:
    nbytes = w * elem_bytes(view.elem)
    vt = ir.VectorType.get([w], view.elem)
    vec = llvm.LoadOp(vt, address, alignment=nbytes).result
    i32 = ir.IntegerType.get_signless(32)
    return [llvm.ExtractElementOp(vec, constant(i32, e)).result for e in range(w)]


def read_scalars(view: View, run: Run, other: ir.Value | None, w: int) -> list[ir.Value]:
    out = []
    for e in range(w):

        def load(e: int = e) -> list[ir.Value]:
            return [llvm.LoadOp(view.elem, run.address(e)).result]

        cond = True if other is None else run.inside(e)
        out += if_else(cond, [view.elem], load, lambda: [other])
    return out


def write_chunk(
    side: Side,
    part: Partition,
    coords: list[Term],
    values: list[ir.Value],
    guarded: bool,
    b: IndexBuilder,
    aligned: ir.Value | bool = False,
    mask: list[ir.Value] | None = None,
) -> None:
    """Store a chunk: vectors of side.width, or scalars (predicated when `guarded`); guarded
    and `aligned`, a run wholly inside the bounds still stores as one vector. With `mask` (an
    i1 per value), an element whose mask is false is not written; a run whose mask is all
    true (and, guarded, wholly inside) still stores as one vector."""
    view, w = side.view, side.width
    values = [convert(v, view.elem) for v in values]
    for s in range(0, part.vec, w):
        at = shifted(coords, part.m, s, b)
        run_values = values[s : s + w]
        run_mask = None if mask is None else mask[s : s + w]
        if not guarded and w > 1 and run_mask is None:
            write_vector(view, lambda at=at: element_address(view, at, b), run_values)
            continue
        run = Run(view, at, part.m, b)
        whole = run.whole(aligned, w) if guarded else w > 1
        whole = all_of([whole, *(run_mask or [])]) if whole is not False else False
        if_else(
            whole,
            [],
            lambda run=run, vals=run_values: write_vector(view, lambda: run.address(0), vals),
            lambda run=run, vals=run_values, m=run_mask: write_scalars(run, vals, guarded, m),
        )


def write_vector(view: View, address: Callable[[], ir.Value], values: list[ir.Value]) -> list:
    """One vector store of `values`; the address is built after the vector (the order the
    PTX of every kernel was checked in)."""
    vt = ir.VectorType.get([len(values)], view.elem)
    vec = llvm.UndefOp(vt).result
    i32 = ir.IntegerType.get_signless(32)
    for e, v in enumerate(values):
        vec = llvm.InsertElementOp(vec, v, constant(i32, e)).result
    llvm.StoreOp(vec, address(), alignment=len(values) * elem_bytes(view.elem))
    return []


def write_scalars(
    run: Run, values: list[ir.Value], guarded: bool, mask: list[ir.Value] | None = None
) -> list:
    for e, value in enumerate(values):

        def store(e: int = e, value: ir.Value = value) -> None:
            llvm.StoreOp(value, run.address(e))

        inside = run.inside(e) if guarded else True
        when(all_of([inside, mask[e]]) if mask is not None else inside, store)
    return []

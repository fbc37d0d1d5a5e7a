"""Passes (lowered stage): the edge version of an access as predicated vectors, no branches.

Where every run of a chunk lies wholly inside the view's bounds or wholly outside them (a
ragged row whose length and stride are multiples of the run), each run moves as one
`@p ld.global` / `@p st.global` (inline PTX, since LLVM has no predicated load or store) under
its own predicate, instead of a branch per run and element by element where a run is cut.
`edge` builds the test and the versions: the sides' own widths, then 4-byte runs, then the
plain edge version of `tile_access`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm

from tilec.lowering import IndexBuilder, Term
from tilec.lowering.tile_access import Run, Side, if_else, read_vector, shifted, write_vector
from tilec.lowering.tile_fragments import Partition, constant, convert
from tilec.lowering.tile_views import View, all_of, elem_bytes, position


@dataclass(frozen=True)
class Band:
    """A side of the edge version moved as predicated vectors of `side.width`, each run wholly
    inside the bounds or wholly outside: one `@p ld.global` / `@p st.global` a run, no branch
    (`cond`: that this holds at run time)."""

    side: Side
    cond: ir.Value | bool


def band(side: Side, part: Partition, b: IndexBuilder, narrow: bool) -> Band | None:
    """`side` in the edge version as whole-or-empty runs, at its own width or (`narrow`) at 4
    bytes. When the view is linear along the chunks' mode and every bound along it grows with
    that mode's coordinate, each run lies wholly inside the bounds or wholly outside them as
    soon as the view is aligned for the width and every such bound's room past the tile's
    origin is a multiple of it; `cond` tests that at run time. None where it does not apply
    (a shared side, a swizzle, a run under 4 bytes, a width the side does not have)."""
    view, m = side.view, part.m
    eb = elem_bytes(view.elem)
    width = max(1, 4 // eb) if narrow else side.width
    if view.space != "global" or width * eb < 4 or width > side.width:
        return None
    if view.swizzle is not None or not isinstance(view.stride[m], int):
        return None
    chosen = Side(view, width)
    conds = [chosen.vectors(part, b)]
    origin: list[Term] = [0] * len(view.shape)
    for x in view.bounds:
        grows = (x.mode == m) + (x.outer[1] if x.outer is not None and x.outer[0] == m else 0)
        if grows > 1:
            return None
        if grows == 1 and width > 1:
            room = b.value(b.sub(x.extent, position(x, origin, b)))
            low = arith.AndIOp(room, b.value(width - 1)).result
            conds.append(arith.CmpIOp(arith.CmpIPredicate.eq, low, b.value(0)).result)
    return Band(chosen, all_of(conds))


# The 4-byte band only where a thread's access has at most this many runs: each run's
# predicate lives until its load issues, and ptxas spills past its few predicate registers
# (examples/softmax.tile at COLS = 32768, 64 values a thread: no spills with 16-byte runs only,
# 104 B with 4-byte ones beside them).
MAX_PREDICATED_RUNS = 16


def edge(
    sides: list[Side],
    part: Partition,
    b: IndexBuilder,
    types: list[ir.Type],
    banded: Callable[[list[Side]], list],
    plain: Callable[[], list],
) -> list[ir.Value]:
    """The edge version: `banded(the sides at a band's widths)` under one uniform test, at the
    sides' own widths and then at 4 bytes (see `band`), else `plain()`: element by
    element, each under a branch. On the H200 a ragged row of 1000 f16 ran its edge version's
    branch per 16-byte run at 0.88-0.91 of the copy ceiling and 0.98 banded; a row of 1020
    (not 16-byte aligned) 0.30 element by element and 0.90 in 4-byte runs (docs/performance.md).
    An odd row of f16 stays element by element: one element a lane, 16 bytes apart, loads at
    0.27-0.30 whether predicated or branched."""

    def sides_of(bands: list[Band | None]) -> list[Side]:
        return [x.side for x in bands if x is not None]

    def banded_or(bands: list[Band], otherwise: Callable[[], list]) -> list[ir.Value]:
        chosen = sides_of(bands)
        cond = all_of([x.cond for x in bands])
        return if_else(cond, types, lambda: banded(chosen), otherwise)

    def narrow() -> list[ir.Value]:
        bands = [band(s, part, b, True) for s in sides]
        if None in bands or (None not in wide and sides_of(bands) == sides_of(wide)):
            return plain()
        if sum(part.vec * part.iters // x.side.width for x in bands) > MAX_PREDICATED_RUNS:
            return plain()
        return banded_or(bands, plain)

    wide = [band(s, part, b, False) for s in sides]
    return narrow() if None in wide else banded_or(wide, narrow)


def read_band(
    side: Side, part: Partition, coords: list[Term], other: ir.Value, b: IndexBuilder
) -> list[ir.Value]:
    """The chunk at `coords` in a band (see `Band`): each run one predicated load."""
    view, w, out = side.view, side.width, []
    for s in range(0, part.vec, w):
        run = Run(view, shifted(coords, part.m, s, b), part.m, b)
        out += predicated_read(view, run.address(0), w, run.inside(0), other)
    return out


def write_band(
    side: Side, part: Partition, coords: list[Term], values: list[ir.Value], b: IndexBuilder
) -> None:
    """Store the chunk at `coords` in a band (see `Band`): each run one predicated store."""
    view, w = side.view, side.width
    values = [convert(v, view.elem) for v in values]
    for s in range(0, part.vec, w):
        run = Run(view, shifted(coords, part.m, s, b), part.m, b)
        predicated_write(view, run.address(0), values[s : s + w], run.inside(0))


def predicated_read(
    view: View, address: ir.Value, w: int, p: ir.Value | bool, other: ir.Value
) -> list[ir.Value]:
    """w elements at `address` (4, 8 or 16 bytes) by one `@p ld.global` (inline PTX: LLVM
    has no predicated load), `other` where p is false. Volatile, so LLVM keeps it where it is
    among the kernel's other accesses."""
    if p is True or p is False:
        return read_vector(view, address, w) if p else [other] * w
    i32 = ir.IntegerType.get_signless(32)
    n = w * elem_bytes(view.elem) // 4
    res = i32 if n == 1 else llvm.StructType.get_literal([i32] * n)
    asm = f"@${n + 1} ld.global{vector_suffix(n)} {ptx_words(n, 0)}, [${n}];"
    constraints = ",".join(["=r"] * n + ["l", "b"])
    op = llvm.InlineAsmOp(res, [address, p], asm, constraints, has_side_effects=True)
    got = (
        [op.result]
        if n == 1
        else [llvm.ExtractValueOp(i32, op.result, [k]).result for k in range(n)]
    )
    fill = as_words([other] * w, view.elem)
    picked = [arith.SelectOp(p, g, f).result for g, f in zip(got, fill, strict=True)]
    return from_words(picked, view.elem)


def predicated_write(
    view: View, address: ir.Value, values: list[ir.Value], p: ir.Value | bool
) -> None:
    """One `@p st.global` of `values` (4, 8 or 16 bytes; inline PTX, volatile)."""
    if p is False:
        return
    if p is True:
        write_vector(view, lambda: address, values)
        return
    words = as_words(values, view.elem)
    n = len(words)
    asm = f"@${n + 1} st.global{vector_suffix(n)} [$0], {ptx_words(n, 1)};"
    constraints = ",".join(["l"] + ["r"] * n + ["b"])
    llvm.InlineAsmOp(None, [address, *words, p], asm, constraints, has_side_effects=True)


def as_words(values: list[ir.Value], elem: ir.Type) -> list[ir.Value]:
    """`values` (a multiple of 4 bytes) as the i32 words that hold them."""
    i32 = ir.IntegerType.get_signless(32)
    n = len(values) * elem_bytes(elem) // 4
    vec = llvm.UndefOp(ir.VectorType.get([len(values)], elem)).result
    for e, v in enumerate(values):
        vec = llvm.InsertElementOp(vec, v, constant(i32, e)).result
    words = llvm.BitcastOp(ir.VectorType.get([n], i32), vec).result
    return [llvm.ExtractElementOp(words, constant(i32, k)).result for k in range(n)]


def from_words(words: list[ir.Value], elem: ir.Type) -> list[ir.Value]:
    """The elements that the i32 `words` hold."""
    i32 = ir.IntegerType.get_signless(32)
    n = len(words) * 4 // elem_bytes(elem)
    vec = llvm.UndefOp(ir.VectorType.get([len(words)], i32)).result
    for k, word in enumerate(words):
        vec = llvm.InsertElementOp(vec, word, constant(i32, k)).result
    vals = llvm.BitcastOp(ir.VectorType.get([n], elem), vec).result
    return [llvm.ExtractElementOp(vals, constant(i32, e)).result for e in range(n)]


def vector_suffix(n: int) -> str:
    """The type of an inline PTX access of n 32-bit registers: `.b32`, `.v2.b32`, `.v4.b32`."""
    return ".b32" if n == 1 else f".v{n}.b32"


def ptx_words(n: int, first: int) -> str:
    """`$first` or `{$first, ..., $first+n-1}`: n registers of an inline PTX vector access."""
    regs = ", ".join(f"${first + k}" for k in range(n))
    return regs if n == 1 else "{" + regs + "}"

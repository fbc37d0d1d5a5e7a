"""Passes (lowered stage): block-level load/store/copy as vector accesses (convert-tile-to-gpu).

Each access is emitted in versions under uniform `scf.if`s: the fast version, taken when the
whole tile is in bounds and every global side is aligned for its vector width, moves each
chunk with 16-byte (or narrower) `llvm.load`/`llvm.store` of a vector; the edge version moves
whole-or-empty runs as predicated vectors where the bounds allow it (`tile_bands`), else
element by element, each one predicated on the view's bounds (loads read `other` out of
bounds, stores are skipped). How one chunk is accessed is `tile_access`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from mlir import ir
from mlir.dialects import arith

from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.tile_access import (
    Side,
    Words,
    choose_partition,
    if_else,
    read_chunk,
    when,
    write_chunk,
)
from tilec.lowering.tile_bands import edge, read_band, write_band
from tilec.lowering.tile_fragments import (
    Deferred,
    Evaluation,
    Frag,
    Partition,
    Reduced,
    chunk_values,
    constant,
    fast_path,
    group_key,
)
from tilec.lowering.tile_skew import or_skewed, read_skewed, read_skewed_branch, write_skewed
from tilec.lowering.tile_views import View, all_of

# Up to this many skewed chunks a thread, all their loads go first (predicated, no branch);
# past it (softmax COLS = 32768: 8) each chunk reads behind its own branch (tile_skew.py).
SKEW_BATCH = 4


def per_chunk(
    part: Partition,
    t: ir.Value,
    b: IndexBuilder,
    types: list[ir.Type],
    body: Callable[[list[Term]], list[ir.Value]],
    idle: Callable[[], list[ir.Value]],
    i: int,
) -> list[ir.Value]:
    """body(coords of chunk i), under `i < chunks of this thread` when not every thread has i."""
    active = part.active(i, t, b)
    coords = part.chunk_coords(i, t, b)
    return if_else(True if active is None else active, types, lambda: body(coords), idle)


def load(
    op: ir.Operation,
    view: View,
    other: ir.Value,
    t: ir.Value,
    threads: int,
    part: Partition | None = None,
) -> Frag:
    """The tile at `view` in registers, spread as `part` (by default as the view suits)."""
    b = IndexBuilder()
    part = part or choose_partition(view, view.static_shape(op), threads)
    side = Side.of(view, part)
    words = Words.of(view.elem, part.vec)

    def idle() -> list[ir.Value]:
        return words.pack([other] * part.vec)

    def version(
        fallback: ir.Value | None, band: Side | None = None, skew: bool = False
    ) -> list[ir.Value]:
        plain = fallback is not None and band is None and not skew  # the edge version
        aligned = side.vectors(part, b) if plain else False

        def chunk(c: list[Term]) -> list[ir.Value]:
            if band is not None:
                return words.pack(read_band(band, part, c, other, b))
            if skew and part.iters > SKEW_BATCH:
                return words.pack(read_skewed_branch(side, part, c, other, b))
            if skew:
                return words.pack(read_skewed(side, part, c, other, b)())
            return words.pack(read_chunk(side, part, c, fallback, b, aligned))

        every = part.iters * part.threads <= part.chunks  # every thread every chunk
        if skew and every and part.iters <= SKEW_BATCH:
            # every chunk's loads first, then their shifts (see read_skewed)
            coords = [part.chunk_coords(i, t, b) for i in range(part.iters)]
            pending = [read_skewed(side, part, c, other, b) for c in coords]
            return [w for values in pending for w in words.pack(values())]
        vals: list[ir.Value] = []
        for i in range(part.iters):
            vals += per_chunk(part, t, b, words.types(part.vec), chunk, idle, i)
        return vals

    types = words.types(part.vec * part.iters)
    flat = if_else(
        side.fast(part, b),
        types,
        lambda: version(None),
        lambda: edge(
            [side],
            part,
            b,
            types,
            lambda s: version(other, s[0]),
            lambda: or_skewed(
                side,
                part,
                b,
                types,
                lambda: version(other),
                lambda: version(other, None, True),
                False,
            ),
        ),
    )
    flat = words.unpack(flat)
    rows = [flat[i * part.vec : (i + 1) * part.vec] for i in range(part.iters)]
    return Frag(part, view.elem, rows)


def deferred_load(view: View, other: ir.Value, part: Partition, t: ir.Value) -> Deferred:
    """The tile at `view` spread as `part`, each chunk read where a store writes it (see
    tile_epilogue): loaded at the `load`, a LayerNorm's weights and biases were whole tiles
    live at once beside x (and, joined from two versions, all of them at the join)."""
    b = IndexBuilder()
    side = Side.of(view, part)
    key = id(side)

    def value(i: int, j: int, ev: Evaluation) -> ir.Value:
        if (key, i, 0) not in ev.loaded:
            coords = part.chunk_coords(i, t, b)
            fallback = other if ev.guarded else None
            aligned = side.vectors(part, b) if ev.guarded else False
            ev.loaded[(key, i, 0)] = read_chunk(
                side, part, coords, fallback, b, aligned, packed=True
            )
        return ev.loaded[(key, i, 0)][j]

    return Deferred(part, (lambda b: side.fast(part, b),), value)


def store(
    op: ir.Operation, frag: Frag | Deferred, view: View, t: ir.Value, mask: Frag | None = None
) -> None:
    """Store a register tensor; a deferred one is computed chunk by chunk as it is stored.
    With `mask` (a predicate tensor spread as `frag`), its false elements are not written."""
    b = IndexBuilder()
    part = frag.part
    if view.static_shape(op) != part.shape:
        raise LoweringError(op, f"storing a {part.shape} tile into a {tuple(view.shape)} view")
    side = Side.of(view, part)

    def version(guarded: bool, band: Side | None = None, skew: bool = False) -> list[ir.Value]:
        ev = Evaluation(guarded)
        aligned = side.vectors(part, b) if guarded and band is None and not skew else False
        for i in range(part.iters):

            def body(c: list[Term], i: int = i) -> list[ir.Value]:
                masks = None if mask is None else mask.values[i]
                values = chunk_values(frag, i, ev)
                if band is not None:
                    write_band(band, part, c, values, b)
                elif skew:
                    write_skewed(side, part, c, values, t, b)
                else:
                    write_chunk(side, part, c, values, guarded, b, aligned, masks)
                return []

            per_chunk(part, t, b, [], body, list, i)
        return []

    def unbanded() -> list[ir.Value]:
        # Rows not aligned for the vectors (an odd row of f16) go skewed: aligned blocks.
        skewed = lambda: version(True, None, True)  # noqa: E731
        return or_skewed(side, part, b, [], lambda: version(True), skewed, True)

    def guarded() -> list[ir.Value]:
        if mask is not None:  # its own predicates
            return version(True)
        if isinstance(frag, Deferred):  # its own loads
            return unbanded()
        return edge([side], part, b, [], lambda s: version(True, s[0]), unbanded)

    fast = fast_path(frag, side.fast(part, b), b)
    if_else(fast, [], lambda: version(False), guarded)


def store_reduced(op: ir.Operation, red: Reduced, view: View, t: ir.Value) -> None:
    """Store a tensor reduced along a mode (`store(reduce_sum(x, mode = 0), t)`) into a view of
    its shape, or of its shape without the size-1 mode. Every thread of a group holds the
    group's value, so each element is written once: by the thread and chunk whose coordinate
    along the reduced mode is 0, as wide a vector as the chunk's mode allows."""
    b = IndexBuilder()
    part, mode = red.part, red.mode
    shape = [*part.shape[:mode], 1, *part.shape[mode + 1 :]]
    dst = list(view.static_shape(op))
    drop = dst != shape
    if drop and (len(shape) == 1 or dst != shape[:mode] + shape[mode + 1 :]):
        raise LoweringError(op, f"storing a {tuple(shape)} tile into a {tuple(view.shape)} view")
    along = part.m != mode  # the chunks run along another mode: their vectors stay whole
    m = (part.m - (drop and part.m > mode)) if along else 0
    written = Partition(tuple(dst), m, part.vec if along else 1, part.threads)
    side = Side.of(view, written)
    tlo, thi = part.thread_bits(mode)  # the writing threads have these bits 0
    lead: ir.Value | bool = True
    if tlo < thi:
        bits = arith.AndIOp(t, b.value(((1 << thi) - 1) ^ ((1 << tlo) - 1))).result
        lead = arith.CmpIOp(arith.CmpIPredicate.eq, bits, b.value(0)).result
    firsts = [i for i in range(part.iters) if group_key(part, mode, i, 0)[0] == i]

    def version(guarded: bool) -> list[ir.Value]:
        for i in firsts:
            active = part.active(i, t, b)
            coords = part.chunk_coords(i, t, b)
            coords[mode] = 0
            if drop:
                del coords[mode]
            values = [red.groups[group_key(part, mode, i, j)] for j in range(written.vec)]

            def body(coords: list[Term] = coords, values: list[ir.Value] = values) -> None:
                write_chunk(side, written, coords, values, guarded, b)

            when(all_of([lead, True if active is None else active]), body)
        return []

    if_else(side.fast(written, b), [], lambda: version(False), lambda: version(True))


def interleave_for_banks(part: Partition, lead: View, src: View, dst: View) -> Partition:
    """Spread a warp over 4 rows when the shared side is read or written element by element.

    A transposed shared view (the second copy of a transpose) has no contiguity along the
    global side's chunks, so each 16-byte global chunk is 4 scalar shared accesses. With the
    plain order a warp covers 32 chunks of one or two global rows = one or two shared
    *columns*: 16+ lanes on a column can reach only 8 bank groups. Interleaving 4 rows, a
    warp covers 4 rows x 8 chunks: still four whole 128-byte global segments, and the shared
    side sees 4 columns x 8 row groups, which a swizzle that moves chunks by the row spreads
    over all 32 banks (`tilec compile --report banks` checks it).
    """
    other = dst if lead is src else src
    rows = 4
    per_row = part.shape[part.m] // part.vec
    if other.space != "shared" or lead.space != "global" or part.vec == 1:
        return part
    if Side.of(other, part).width >= part.vec or per_row < 32 // rows:
        return part
    second = [k for k in range(len(part.shape)) if k != part.m]
    if not second or part.shape[second[0]] % rows:
        return part
    return replace(part, interleave=rows)


def copy(op: ir.Operation, src: View, dst: View, t: ir.Value, threads: int) -> None:
    """Chunks follow the global side (coalesced); the shared side uses what its layout allows."""
    b = IndexBuilder()
    shape = src.static_shape(op)
    if dst.static_shape(op) != shape:
        raise LoweringError(op, f"copying a {shape} tile into a {tuple(dst.shape)} view")
    lead = dst if dst.space == "global" and src.space != "global" else src
    part = interleave_for_banks(choose_partition(lead, shape, threads), lead, src, dst)
    reader, writer = Side.of(src, part), Side.of(dst, part)
    fast = all_of([reader.fast(part, b), writer.fast(part, b)])
    zero = constant(src.elem, 0)

    def version(guarded: bool) -> list[ir.Value]:
        for i in range(part.iters):

            def body(c: list[Term]) -> list[ir.Value]:
                # Only the global side can be out of bounds or misaligned at run time; a
                # static shared tile keeps its vector accesses on the edge path too.
                vals = read_chunk(reader, part, c, zero if guarded and reader.guarded else None, b)
                write_chunk(writer, part, c, vals, guarded and writer.guarded, b)
                return []

            per_chunk(part, t, b, [], body, list, i)
        return []

    if_else(fast, [], lambda: version(False), lambda: version(True))

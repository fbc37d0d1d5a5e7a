"""Passes (lowered stage): an mma.sync accumulator stored into a global tile
(convert-tile-to-gpu; `write_pair` serves the SM90 consumers too).

c(2i) and c(2i+1) of a thread are adjacent columns (`tile_mma`'s fragment maps), so the
accumulator is stored a pair at a time: one 2-element vector where the view keeps pairs
aligned and the tile is wholly inside, else element by element under the bounds.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.tile_access import Side, if_else, when
from tilec.lowering.tile_fragments import (
    Deferred,
    Evaluation,
    Frag,
    Partition,
    Reduced,
    chunk_values,
    convert,
    fast_path,
)
from tilec.lowering.tile_mma import MmaPartition, PairCoords, pair
from tilec.lowering.tile_views import View, all_of, element_address, in_bounds


def store(
    op: ir.Operation,
    acc: Frag | Deferred,
    view: View,
    tid: ir.Value,
    threads: int,
    mask: Frag | None = None,
    pairwise: bool = False,
) -> None:
    """Store the accumulator (converted) into a global tile: pairs c(2i), c(2i+1) are adjacent.
    A deferred value (an epilogue's loads and math) is computed chunk by chunk as it is stored
    (`pairwise`: pair by pair, fewer registers beside a large accumulator, as a wgmma's is);
    with `mask` (a predicate tensor spread as the accumulator) its false elements are not."""
    part = acc.part
    assert isinstance(part, MmaPartition)
    if view.static_shape(op) != part.block:
        raise LoweringError(op, f"storing a {part.block} tile into a {tuple(view.shape)} view")
    b = IndexBuilder()
    coords = PairCoords(part, tid, b)
    whole = Partition(part.block, 1, 2, threads)
    side = Side.of(view, whole)  # pairs where the strides and offset keep them aligned

    def version(guarded: bool) -> list[ir.Value]:
        ev = Evaluation(guarded)
        for i in range(part.iters):
            values = None if pairwise else [convert(v, view.elem) for v in chunk_values(acc, i, ev)]
            for h in range(2):
                pair_mask = None if mask is None else mask.values[i][2 * h : 2 * h + 2]
                if values is None:  # a pair computed where it is written
                    vals = [convert(pair_value(acc, i, 2 * h + e, ev), view.elem) for e in (0, 1)]
                else:
                    vals = values[2 * h : 2 * h + 2]
                write_pair(view, coords(i, h), vals, side.width == 2, guarded, b, pair_mask)
        return []

    if_else(
        fast_path(acc, side.fast(whole, b), b),
        [],
        lambda: version(False),
        lambda: version(True),
    )


def pair_value(x: Frag | Deferred, i: int, j: int, ev: Evaluation) -> ir.Value:
    """Value j of chunk i, computed at `ev` if x is deferred."""
    return x.values[i][j] if isinstance(x, Frag) else x.value(i, j, ev)


def write_pair(
    view: View,
    at: list[Term],
    vals: list[ir.Value],
    paired: bool,
    guarded: bool,
    b: IndexBuilder,
    mask: list[ir.Value] | None = None,
) -> None:
    """One pair of the accumulator: a 2-element vector in the fast path (under both masks, if
    masked), else element by element, each under its bounds (guarded) and its mask."""

    def both() -> list:
        width = 2 * vals[0].type.width // 8  # the pair's bytes: the fast path checked them
        llvm.StoreOp(pair(vals[0], vals[1]), element_address(view, at, b), alignment=width)
        return []

    def each() -> list:
        for e, v in enumerate(vals):
            here = [at[0], b.add(at[1], e)]

            def put(here: list[Term] = here, v: ir.Value = v) -> None:
                llvm.StoreOp(v, element_address(view, here, b))

            inside = in_bounds(view, here, b) if guarded else True
            when(all_of([inside, mask[e]]) if mask is not None else inside, put)
        return []

    if not guarded and paired:
        if_else(True if mask is None else all_of(mask), [], both, each)
        return
    each()


def store_reduced(op: ir.Operation, red: Reduced, view: View, tid: ir.Value) -> None:
    """A row (mode 1) or column (mode 0) reduction of an accumulator, stored into a view of its
    shape or of its shape without the size-1 mode (`store(m, local_tile(LSE, (BM,), ...))`).
    Every lane of a row's quad, and every warp along the row, holds the row's value: the one at
    column 0 writes it (lane t = 0 of the first warp along N), a column's at row 0 likewise;
    each group (mi, h) is row g + 8h of m-atom mi, each (ni, e) column 2t + e of n-atom ni."""
    part, mode = red.part, red.mode
    assert isinstance(part, MmaPartition)
    shape = [part.block[0], 1] if mode == 1 else [1, part.block[1]]
    dst = list(view.static_shape(op))
    drop = dst != shape
    if drop and dst != [shape[1 - mode]]:
        raise LoweringError(op, f"storing a {tuple(shape)} tile into a {tuple(view.shape)} view")
    b = IndexBuilder()
    at = PairCoords(part, tid, b)
    first = at.n0 if mode == 1 else at.m0  # 0 on the writing lanes
    writer = b.cmp("eq", first, 0)
    tm = part.tiles[0]
    for key in sorted(red.groups):
        mi_or_ni, h_or_e = key
        if mode == 1:
            coords = [at(mi_or_ni, h_or_e)[0], 0]
        else:
            coords = [0, b.add(at(mi_or_ni * tm, 0)[1], h_or_e)]
        if drop:
            del coords[mode]
        value = convert(red.groups[key], view.elem)

        def put(coords: list[Term] = coords, value: ir.Value = value) -> None:
            llvm.StoreOp(value, element_address(view, coords, b))

        when(all_of([writer, in_bounds(view, coords, b)]), put)

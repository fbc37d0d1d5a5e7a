r"""Passes (lowered stage): `copy<cp_async.*>` as nvvm.cp.async.shared.global (convert-tile-to-gpu).

A global → shared copy is split into 16-byte chunks along the unit-stride mode, chunk v for
thread v mod T (as `tile_memory`'s partition). Each chunk is one `cp.async` whose source size
`src_elements` is the part of the chunk inside the tensor, so ragged edges read fewer bytes
and the hardware fills the rest with zeros:

    K = 45, chunk at k = 40:   src_elements = min(max(45 - 40, 0), 8) = 5
          [x x x x x 0 0 0]    (a row outside M: src_elements = 0, all zeros)

cp.async needs 16-byte aligned addresses for 16-byte copies. When the global base or a `?`
stride is not (e.g. f16 with K not a multiple of 8), the copy takes the widest narrower form
its alignment allows, chosen once per copy by uniform `scf.if`s: 8- or 4-byte `cp.async.ca`
(K a multiple of 4 or 2), still asynchronous and zero-filling, and for 2-byte alignment
`scalar_copy`. Copies only issue; `commit` closes a group and `wait` waits for groups, so a
caller decides how many copies are in flight.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, llvm, nvvm

from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.tile_access import Side, if_else
from tilec.lowering.tile_fragments import Partition, constant
from tilec.lowering.tile_modes import runs, unit
from tilec.lowering.tile_views import (
    View,
    all_of,
    elem_bytes,
    element_address,
    element_index,
    gep,
    in_bounds,
    row_below,
)

# On a copy's alignment test for cp.async of N bytes (`tile.unswitch = N`; its else-side holds
# the narrower copies): its condition reads only values from outside any loop around it.
UNSWITCH = "tile.unswitch"
# On a copy's test that its tile lies wholly inside the tensor (plain or zero-filling cp.async).
WHOLE = "tile.whole"

CP_ASYNC_BYTES = {"cp_async.cg.16": 16, "cp_async.ca.16": 16}
# The narrower cp.async (.ca only) a misaligned source falls back to, widest first, on a copy
# marked `tile.narrow` (the source's `copy<cp_async...>(src, dst, narrow = 1)`).
NARROW_BYTES = (8, 4)
NARROW = "tile.narrow"


def copy(
    op: ir.Operation,
    atom: str,
    src: View,
    dst: View,
    tid: ir.Value,
    threads: int,
    narrow: bool = False,
) -> None:
    """Issue the copy as cp.async chunks; for a misaligned source, narrower ones (`narrow`) or
    synchronous element copies."""
    if atom not in CP_ASYNC_BYTES:
        raise LoweringError(op, f"copy atom '{atom}': expected one of {sorted(CP_ASYNC_BYTES)}")
    if src.space != "global" or dst.space != "shared":
        raise LoweringError(op, f"copy<{atom}> moves global to shared memory")
    shape = src.static_shape(op)
    if dst.static_shape(op) != shape:
        raise LoweringError(op, f"copying a {shape} tile into a {tuple(dst.shape)} view")
    vec = CP_ASYNC_BYTES[atom] // elem_bytes(src.elem)
    # Chunks run along the source's unit-stride mode (the last one unless another is).
    m = next((k for k, d in enumerate(src.stride) if unit(d)), len(shape) - 1)
    part = Partition(shape, m, vec, threads)
    whole_rows = shape[m] % vec == 0 and runs(src.stride[m], vec) and runs(dst.stride[m], vec)
    if not whole_rows or Side.of(dst, part).width < vec:
        raise LoweringError(op, f"copy<{atom}> needs {vec}-element contiguous rows on both sides")
    b = IndexBuilder()
    cache = "cg" if ".cg." in atom else "ca"

    # A tile wholly inside the tensor (every tile but those on the edges) issues plain
    # cp.async: no source sizes, no selects, so the addresses reduce to pointer increments.
    # In a loop over tiles, pipeline-steady-state answers this test above the loop (WHOLE).
    def chunks(piece: Partition) -> Callable[[], list[ir.Value]]:
        def go() -> list[ir.Value]:
            whole = in_bounds(src, [s - 1 for s in shape], b)
            return if_else(
                whole,
                [],
                lambda: issue(op, src, dst, piece, vec, cache, tid, False, b),
                lambda: issue(op, src, dst, piece, vec, cache, tid, True, b),
                mark=WHOLE,
            )

        return go

    def elementwise() -> list[ir.Value]:
        scalar_copy(src, dst, part, tid, b)
        return []

    def tiers(widths: list[int]) -> Callable[[], list[ir.Value]]:
        """The copy in cp.async of widths[0] bytes when the source is aligned to them, else in
        the next width's; past the last, element by element."""
        if not widths:
            return elementwise
        piece = Partition(shape, m, widths[0] // elem_bytes(src.elem), threads)
        go = chunks(piece)
        if piece.vec == 1:  # as wide as an element: aligned as the element type is
            return go
        aligned = Side(src, piece.vec).aligned(piece, b)
        width = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), widths[0])
        return lambda: if_else(aligned, [], go, tiers(widths[1:]), mark=UNSWITCH, value=width)

    # Narrower pieces are still asynchronous and zero-filling; consecutive lanes take
    # consecutive pieces, so each instruction's writes stay conflict-free. The tests read the
    # bases and strides alone: pipeline-steady-state can hoist them.
    nbytes = CP_ASYNC_BYTES[atom]
    narrower = [w for w in NARROW_BYTES if narrow and elem_bytes(src.elem) <= w < nbytes]
    tiers([nbytes] + narrower)()


def issue(
    op: ir.Operation,
    src: View,
    dst: View,
    piece: Partition,
    full: int,
    cache: str,
    tid: ir.Value,
    ragged: bool,
    b: IndexBuilder,
) -> list[ir.Value]:
    """One cp.async per chunk of `piece` (`full` elements a chunk is the atom's own width,
    whose cache mode `cache` is; narrower ones exist only as .ca); zero-filling ones when
    `ragged`."""
    shape, m, threads = piece.shape, piece.m, piece.threads
    nbytes = piece.vec * elem_bytes(src.elem)
    how = cache if piece.vec == full else "ca"
    # Chunk i sits rows_per_iter * i rows below chunk 0: one swizzled address + immediates.
    per_iter = threads * piece.vec
    rows = len(shape) == 2 and m == 1 and per_iter % shape[m] == 0
    rows_per_iter = per_iter // shape[m] if rows else 0
    coords0 = piece.chunk_coords(0, tid, b)
    first = element_address(dst, coords0, b) if rows_per_iter else None
    for i in range(piece.iters):
        if piece.active(i, tid, b) is not None:
            raise LoweringError(op, f"{piece.chunks} chunks do not spread over {threads}")
        coords = piece.chunk_coords(i, tid, b)
        at, size = b.value(element_index(src, coords, b)), None
        if ragged:
            n = src_elements(src, coords, m, piece.vec, b)
            positive = arith.CmpIOp(arith.CmpIPredicate.sgt, n, b.value(0)).result
            at = arith.SelectOp(positive, at, b.value(0)).result
            scaled = b.value(b.mul(n, elem_bytes(src.elem)))
            size = arith.IndexCastOp(ir.IntegerType.get_signless(32), scaled).result
        if rows_per_iter:
            to = row_below(dst, first, coords0, rows_per_iter * i, b)
        else:
            to = element_address(dst, coords, b)
        nvvm.CpAsyncOp(
            to,
            gep(src.base, at, src.elem, b),
            nbytes,
            ir.Attribute.parse(f"#nvvm<load_cache_modifier {how}>"),
            cpSize=size,
        )
    return []


def scalar_copy(src: View, dst: View, part: Partition, tid: ir.Value, b: IndexBuilder) -> None:
    """The misaligned fallback, synchronous and element by element: element j of a chunk loads
    from the chunk's address + j and goes straight to shared memory when j < its
    `src_elements`, else 0 does. Addresses are the chunk's plus immediates and each value lives
    from its load to its store, so inside a pipelined loop with fragment prefetch this path
    keeps few registers (a chunk-wide 16-byte store spills there). Its 2-byte stores, 16 bytes
    apart across lanes, conflict 4 ways: the price of a path only misaligned tensors take.
    """
    zero = constant(src.elem, 0)
    for i in range(part.iters):
        coords = part.chunk_coords(i, tid, b)
        n = src_elements(src, coords, part.m, part.vec, b)
        first = gep(src.base, b.value(element_index(src, coords, b)), src.elem, b)
        to = element_address(dst, coords, b)
        for j in range(part.vec):
            inside = arith.CmpIOp(arith.CmpIPredicate.sgt, n, b.value(j)).result
            here = gep(to, j, dst.elem, b)

            def load_j(j: int = j, here: ir.Value = here, at: ir.Value = first) -> list[ir.Value]:
                llvm.StoreOp(llvm.LoadOp(src.elem, gep(at, j, src.elem, b)).result, here)
                return []

            def zero_j(here: ir.Value = here) -> list[ir.Value]:
                llvm.StoreOp(zero, here)
                return []

            if_else(inside, [], load_j, zero_j)


def src_elements(src: View, coords: list[Term], m: int, vec: int, b: IndexBuilder) -> ir.Value:
    """How many of the chunk's `vec` elements lie inside the tensor (0 when its row does not)."""
    inside: list[ir.Value | bool] = []
    count: Term = vec
    for x in src.bounds:
        pos = x.origin if x.mode is None else b.add(x.origin, coords[x.mode])
        if x.outer is not None:
            pos = b.add(pos, b.mul(coords[x.outer[0]], x.outer[1]))
        if x.mode == m:
            left = arith.SubIOp(b.value(x.extent), b.value(pos)).result
            left = arith.MaxSIOp(left, b.value(0)).result
            count = arith.MinSIOp(left, b.value(count)).result
        else:
            inside.append(
                True
                if isinstance(pos, int) and isinstance(x.extent, int) and pos < x.extent
                else arith.CmpIOp(arith.CmpIPredicate.slt, b.value(pos), b.value(x.extent)).result
            )
    cond = all_of(inside)
    if cond is True:
        return b.value(count)
    return arith.SelectOp(cond, b.value(count), b.value(0)).result


def commit() -> None:
    """Close the cp.async group of every copy this thread issued since the last commit."""
    nvvm.CpAsyncCommitGroupOp()


def wait(pending: int) -> None:
    """Wait until at most `pending` committed groups of this thread are still in flight."""
    nvvm.CpAsyncWaitGroupOp(pending)

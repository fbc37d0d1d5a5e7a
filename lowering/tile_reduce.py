"""Passes (lowered stage): `tile.reduce` along a mode, for `convert-tile-to-gpu`.

With every extent a power of two, the reduced mode's coordinate is a bit field of the element
number e = j + V*(t + T*i) (see `tile_fragments`), so the reduction splits by where its bits
lie:

    bits of e:  [ i ... | warp ... | lane ..... | j ... ]
                  in-thread  shared   shfl.bfly   in-thread
                             memory   (xor)

1. in the thread: combine the values whose (i, j) differ only in the mode's bits;
2. across lanes: `gpu.shuffle xor` by each lane bit of the mode (butterfly: every lane ends
   with the full warp result, so the broadcast is free);
3. across warps: every thread writes its partials to a shared scratch row, a barrier, then
   every thread reads the partials of the warps that differ in the mode's warp bits and
   combines them in the same order, so every thread holding the row gets the same bits.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, llvm

from tilec.binding import is_float_type
from tilec.lowering import IndexBuilder, LoweringError
from tilec.lowering.tile_fragments import (
    Frag,
    Reduced,
    check_reducible,
    combine,
    constant,
    group_key,
    identity,
)
from tilec.lowering.tile_shared import shared_global, shared_pointer
from tilec.lowering.tile_views import gep

LANES = 5  # log2 of the warp size


def reduce(
    op: ir.Operation,
    frag: Frag,
    t: ir.Value,
    module: ir.Operation,
    kernel: str,
    reuse_guard: bool,
) -> Reduced:
    """Reduce `frag` along the op's mode; `reuse_guard` adds a barrier after reading the
    scratch (needed when the op runs again, inside a loop)."""
    kind = ir.StringAttr(op.attributes["kind"]).value
    mode = ir.IntegerAttr(op.attributes["mode"]).value
    part = frag.part
    check_reducible(op, part, mode, kind)
    b = IndexBuilder()
    elem = frag.elem
    groups: dict[tuple[int, int], ir.Value] = {}
    for i in range(part.iters):
        active = part.active(i, t, b)
        for j in range(part.vec):
            v = frag.at(i, j)
            if active is not None:
                v = arith.SelectOp(active, v, identity(kind, elem)).result
            key = group_key(part, mode, i, j)
            groups[key] = combine(kind, groups[key], v) if key in groups else v

    tlo, thi = part.thread_bits(mode)
    lane_bits = list(range(tlo, min(thi, LANES)))
    warp_lo = max(tlo, LANES)
    if lane_bits and is_float_type(elem) and elem.width != 32:
        raise LoweringError(op, f"warp shuffles need 32-bit elements, got {elem}; convert first")
    i32 = ir.IntegerType.get_signless(32)
    for bit in lane_bits:
        for key, v in groups.items():
            other = gpu.ShuffleOp(
                v, constant(i32, 1 << bit), constant(i32, 32), gpu.ShuffleMode.XOR
            ).results[0]
            groups[key] = combine(kind, v, other)
    if warp_lo >= thi:
        return Reduced(part, mode, elem, groups)

    keys = sorted(groups)
    symbol = shared_global(module, f"__reduce_{kernel}", elem, len(keys) * part.threads)
    base = shared_pointer(symbol)
    for n, key in enumerate(keys):
        llvm.StoreOp(groups[key], gep(base, b.add(t, n * part.threads), elem, b))
    gpu.BarrierOp()
    warp_mask = ((1 << thi) - 1) ^ ((1 << warp_lo) - 1)
    others = arith.AndIOp(t, b.value(~warp_mask & (part.threads - 1))).result
    # One pointer to this thread's first partner, then constant offsets: built as one index
    # each, the slots became or-ed indices that LLVM hoists out of a loop as one register each
    # (8 warps: 8 registers a reduction, live across the whole loop).
    row = gep(base, others, elem, b)
    for n, key in enumerate(keys):
        acc = None
        for combo in range(1 << (thi - warp_lo)):
            slot = (combo << warp_lo) + n * part.threads
            v = llvm.LoadOp(elem, gep(row, slot, elem, b)).result
            acc = v if acc is None else combine(kind, acc, v)
        groups[key] = acc
    if reuse_guard:
        gpu.BarrierOp()
    return Reduced(part, mode, elem, groups)

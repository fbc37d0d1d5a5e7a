r"""Passes (lowered stage): `tile.reduce` of an mma.sync accumulator along a mode.

A thread's C fragment holds, per atom (mi, ni), pairs c(2h), c(2h+1) at row g + 8h and
columns 2t, 2t+1, where lane = 4g + t (`tile_mma.PairCoords`), in the warp (wm, wn) of the
tiling. A row of the block tile (mode 1 reduced) therefore lies in one thread as its values of
every ni and both of a pair, in the four lanes of one g (t = lane & 3), and in the WN warps of
one wm; a column (mode 0) in the values of every mi and both h, the eight lanes of one t
(lane >> 2) and the WM warps of one wn:

    mode 1 (rows):     thread: over ni, e     lanes: xor 1, 2     warps: over wn (shared)
    mode 0 (columns):  thread: over mi, h     lanes: xor 4, 8, 16 warps: over wm (shared)

The butterfly leaves every lane of the group with the whole warp's value; across warps each
thread writes its partials to a shared scratch row, a barrier, then reads those of the warps
that share its row (column) in one fixed order, so every thread holding a row gets the same
bits. The result is a `Reduced` over the MMA partition: it broadcasts back over the fragment
(`exp(s - reduce_max(s, mode = 1))`), the row max / row sum of attention's softmax.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, llvm

from tilec.binding import is_float_type
from tilec.dialects.tile.atoms import shuffle_masks, split, thread_mode
from tilec.lowering import IndexBuilder, LoweringError
from tilec.lowering.tile_fragments import REDUCE_OP, Frag, Reduced, combine, constant
from tilec.lowering.tile_mma import AM, ATOM, WARP, Lanes, MmaPartition, PairCoords
from tilec.lowering.tile_shared import shared_global, shared_pointer
from tilec.lowering.tile_views import gep

# xor distances of the lanes that share a row (mode 1 reduced) or a column (mode 0), read off
# the atom's C layout: (1, 2) and (4, 8, 16) for m16n8k16.
_C_LANES = split(thread_mode(ATOM.c), AM)
LANE_MASKS = {1: shuffle_masks(_C_LANES, "col"), 0: shuffle_masks(_C_LANES, "row")}


def reduce_mma(
    op: ir.Operation, frag: Frag, t: ir.Value, module: ir.Operation, kernel: str, guard: bool
) -> Reduced:
    """Reduce accumulator `frag` along the op's mode; `guard` adds a barrier after reading the
    scratch (needed when the op runs again, inside a loop)."""
    kind = ir.StringAttr(op.attributes["kind"]).value
    mode = ir.IntegerAttr(op.attributes["mode"]).value
    part = frag.part
    if kind not in REDUCE_OP or mode not in (0, 1):
        raise LoweringError(op, f"cannot reduce an accumulator by '{kind}' along mode {mode}")
    if not is_float_type(frag.elem) or frag.elem.width != 32:
        raise LoweringError(op, f"warp shuffles need 32-bit elements, got {frag.elem}")
    groups: dict[tuple[int, int], ir.Value] = {}
    for i in range(part.iters):
        for j in range(part.vec):
            key = part.group_key(mode, i, j)
            v = frag.at(i, j)
            groups[key] = combine(kind, groups[key], v) if key in groups else v
    i32 = ir.IntegerType.get_signless(32)
    for distance in LANE_MASKS[mode]:
        for key, v in groups.items():
            other = gpu.ShuffleOp(
                v, constant(i32, distance), constant(i32, WARP), gpu.ShuffleMode.XOR
            ).results[0]
            groups[key] = combine(kind, v, other)
    across = part.warps[1] if mode == 1 else part.warps[0]
    if across > 1:
        groups = across_warps(part, mode, kind, groups, t, module, kernel)
        if guard:
            gpu.BarrierOp()
    return Reduced(part, mode, frag.elem, groups)


def across_warps(
    part: MmaPartition,
    mode: int,
    kind: str,
    groups: dict[tuple[int, int], ir.Value],
    t: ir.Value,
    module: ir.Operation,
    kernel: str,
) -> dict[tuple[int, int], ir.Value]:
    """Combine the warps that share a row (mode 1: over wn) or a column (mode 0: over wm)."""
    b = IndexBuilder()
    keys = sorted(groups)
    elem = next(iter(groups.values())).type
    threads = part.warps[0] * part.warps[1] * WARP
    symbol = shared_global(module, f"__reduce_{kernel}", elem, len(keys) * threads)
    base = shared_pointer(symbol)
    for n, key in enumerate(keys):
        llvm.StoreOp(groups[key], gep(base, b.add(t, n * threads), elem, b))
    gpu.BarrierOp()
    # Thread t = lane + WARP * (wm + WM * wn): the warps sharing a row differ in wn (a step of
    # WM warps), those sharing a column in wm (a step of one warp).
    at = Lanes.of(t, part, b)
    wm_count = part.warps[0]
    if mode == 1:
        first, step, count = b.add(at.lane, b.mul(at.wm, WARP)), wm_count * WARP, part.warps[1]
    else:
        first, step, count = b.add(at.lane, b.mul(at.wn, wm_count * WARP)), WARP, wm_count
    out = {}
    for n, key in enumerate(keys):
        acc = None
        for w in range(count):
            slot = b.add(b.add(first, w * step), n * threads)
            v = llvm.LoadOp(elem, gep(base, slot, elem, b)).result
            acc = v if acc is None else combine(kind, acc, v)
        out[key] = acc
    return out


def mma_coords(frag: Frag, mode: int, t: ir.Value) -> Frag:
    """coord(x, mode) of an accumulator: each value's row (mode 0) or column (mode 1)."""
    b = IndexBuilder()
    pc = PairCoords(frag.part, t, b)
    i32 = ir.IntegerType.get_signless(32)
    rows = []
    for i in range(frag.part.iters):
        row = []
        for j in range(frag.part.vec):
            h, e = divmod(j, 2)
            at = pc(i, h)
            c = at[0] if mode == 0 else b.add(at[1], e)
            row.append(arith.IndexCastOp(i32, b.value(c)).result)
        rows.append(row)
    return Frag(frag.part, i32, rows)

r"""Passes (lowered stage): the sm90 MMA family, `tile.gemm` by wgmma from the stages of a TMA ring.

convert-tile-mma lowers a gemm whose tiled MMA's atom is `sm90.wgmma_64xNx16.*` here. Its A
and B are slots of the stage tile-ring made the gemm read (views of the swizzled shared rows
TMA wrote); its accumulator is a register tensor spread as the wgmma's C over the consumer's
warp groups (`tile_mma.wgmma_partition`: the mma.sync C over 4·GM × GN warps, the groups'
warps interleaved where a group holds several 64-row tiles). Per k-step of 16 and per 64×N
tile of its group, one `wgmma.mma_async` reads both operands through matrix descriptors
(sm90_wgmma) and accumulates into an `!llvm.struct` of the thread's N/2 values, which are the
fragment's values in the wgmma's register order:

    struct (mi, ni), register 4j + 2h + e   =   fragment chunk mi + TM·(ni·N/8 + j), value 2h + e

    wgmma.fence ; wgmma.mma_async × (k-steps × tiles) ; wgmma.commit_group ; wgmma.wait_group 1

A gemm leaves at most one group of wgmmas in flight: tile-ring releases the stage the
iteration before read right after it. After the gemm's loop, `wgmma.wait_group 0` before
anything reads the accumulator (and before tile-ring's release of the last stage there).
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import llvm, nvvm

from tilec.binding import op_id
from tilec.dialects.tile.types import MmaType
from tilec.lowering import IndexBuilder, LoweringError, Term, sm90_regs, sm90_tma, sm90_wgmma
from tilec.lowering.sm90_tma import SwizzledRows
from tilec.lowering.sm90_wgmma import WgmmaAtom
from tilec.lowering.tile_fragments import Frag
from tilec.lowering.tile_roles import WARPGROUP, Role
from tilec.lowering.tile_views import View, gep, tensor_type

RING = (
    "wgmma reads its operands from the stages of a TMA ring: a gemm of a warp_specialize "
    "consumer inside a pipelined loop, on buffers its producer fills by copy<tma> (tile-ring "
    "must run first)"
)


def operand_rows(op: ir.Operation, n: int, view: View) -> SwizzledRows:
    """The swizzled rows of the gemm's operand `n`, which must be a ring stage's slot."""
    if view.space != "shared" or not isinstance(view.offset, int) or view.offset != 0:
        raise LoweringError(op, RING)
    return sm90_tma.swizzled_rows(op, tensor_type(op.operands[n].type))


def mn_bytes(rows: SwizzledRows, elems: Term, b: IndexBuilder) -> Term:
    """`rows.mn_offset` of a run-time element count (a warp group's first row: a multiple of
    64, so of any swizzle's width)."""
    if rows.mn_major:
        return b.mul(b.div(elems, rows.width), rows.chunk_bytes)
    return b.mul(elems, rows.row_bytes)


class Wgmma:
    """One gemm's shape: the atom, the warp groups' tiling, tiles per group (mt, nt)."""

    def __init__(self, op: ir.Operation, acc: Frag) -> None:
        mma = MmaType.of(op.operands[0].type)
        self.atom = WgmmaAtom.parse(op, mma.atom)
        tiling = [int(x) for x in mma.tiling.strip("()").split(",")]
        self.gm, self.gn = tiling[0], tiling[1]
        bm, bn = acc.part.block
        self.mt, self.nt = bm // (64 * self.gm), bn // (self.atom.n * self.gn)
        self.blocks = self.atom.n // 8  # 8-column blocks of one wgmma tile

    def structs(self, acc: Frag) -> list[ir.Value]:
        """The fragment's values as the wgmmas' accumulator structs, (mi, ni) row-major."""
        out = []
        for mi in range(self.mt):
            for ni in range(self.nt):
                s = llvm.UndefOp(self.atom.struct()).result
                for r in range(self.atom.regs):
                    s = llvm.InsertValueOp(s, self.value(acc, mi, ni, r), [r]).result
                out.append(s)
        return out

    def value(self, acc: Frag, mi: int, ni: int, r: int) -> ir.Value:
        j, k = divmod(r, 4)
        return acc.values[mi + self.mt * (ni * self.blocks + j)][k]

    def fragment(self, acc: Frag, structs: list[ir.Value]) -> Frag:
        values = [list(row) for row in acc.values]
        f32 = ir.F32Type.get()
        for mi in range(self.mt):
            for ni in range(self.nt):
                s = structs[mi * self.nt + ni]
                for r in range(self.atom.regs):
                    j, k = divmod(r, 4)
                    value = llvm.ExtractValueOp(f32, s, [r]).result
                    values[mi + self.mt * (ni * self.blocks + j)][k] = value
        return Frag(acc.part, acc.elem, values)


def gemm(
    op: ir.Operation, a: View | Frag, bv: View, acc: Frag, tid: ir.Value, role: Role | None,
    pending: int = 1,
) -> Frag:  # fmt: skip
    """acc += A·Bᵀ over one ring stage by wgmma (see the module's docstring), A from shared
    memory or (a register tensor) from registers (sm90_regs); then at most `pending` groups
    in flight (0: the accumulator is read next, and comes back through `fenced`)."""
    if role is None or role.kind != "consumer" or "tile.stages" not in op.parent.attributes:
        raise LoweringError(op, RING)
    w = Wgmma(op, acc)
    rb = operand_rows(op, 2, bv)
    b = IndexBuilder()
    # the group's place among those that split a tile (from the kernel's thread index `tid`,
    # as its other role-wide values are, not the role's: one register fewer across the loop)
    place: Term = 0 if role.pingpong else b.sub(b.div(tid, WARPGROUP), role.first)
    a_rows = b.mul(b.rem(place, w.gm), w.mt * 64)
    b_rows = b.mul(b.div(place, w.gm), w.nt * w.atom.n)
    if isinstance(a, Frag):
        k = sm90_regs.check(op, a, acc, rb, w)
        # every register the wgmmas read written before their fence, and kept there (CUTLASS's
        # warpgroup_fence_operand): else LLVM sinks P's packing and O's rescaling between
        # the wgmmas, and ptxas injects a warpgroup.arrive before each (its C7519 note)
        operand_a = sm90_regs.ready(a, k // w.atom.k, w.mt)
        acc = fenced(acc)
        mma = sm90_regs.mma(rb)
    else:
        k, operand_a, mma = shared_a(op, a, rb, a_rows, b)
    i8 = ir.IntegerType.get_signless(8)
    desc_b = sm90_wgmma.descriptor(gep(bv.base, mn_bytes(rb, b_rows, b), i8, b), rb)
    # an accumulator filled with zeros right before (attention's S, each iteration): its
    # first k-step ignores it (scale-d 0) instead of 0 moved into every register
    fresh = zeroed(acc)
    accs = [llvm.UndefOp(w.atom.struct()).result] * (w.mt * w.nt) if fresh else w.structs(acc)
    step = w.atom.k
    nvvm.WgmmaFenceAlignedOp()
    for kk in range(k // step):
        for mi in range(w.mt):
            da = operand_a(kk * step, mi)
            for ni in range(w.nt):
                db = sm90_wgmma.advanced(
                    desc_b, rb.mn_offset(ni * w.atom.n) + rb.k_offset(kk * step)
                )
                at = mi * w.nt + ni
                accs[at] = mma(w.atom, accs[at], da, db, not (fresh and kk == 0))
    nvvm.WgmmaGroupSyncAlignedOp()
    nvvm.WgmmaWaitGroupSyncOp(pending)
    out = w.fragment(acc, accs)
    return fenced(out) if pending == 0 else out


def zeroed(acc: Frag) -> bool:
    """Whether every value of `acc` is the constant 0 (a fill just before)."""
    for row in acc.values:
        for v in row:
            owner = v.owner
            if isinstance(owner, ir.Block) or owner.name != "arith.constant":
                return False
            value = owner.attributes["value"]
            if not isinstance(value, ir.FloatAttr) or value.value != 0.0:
                return False
    return True


# An A operand of one k-step and 64-row tile: (K element, tile) -> descriptor or registers;
# one wgmma: (atom, accumulator, A, B's descriptor, whether it adds to the accumulator) ->
# accumulator.
OperandA = Callable[[int, int], object]
Mma = Callable[[WgmmaAtom, ir.Value, object, ir.Value, bool], ir.Value]


def shared_a(
    op: ir.Operation, a: View, rb: SwizzledRows, a_rows: Term, b: IndexBuilder
) -> tuple[int, OperandA, Mma]:
    """K, A's descriptors (the group's first row `a_rows`) and the wgmma, for A in shared
    memory (a ring stage's slot)."""
    ra = operand_rows(op, 1, a)
    if ra.cols != rb.cols or ra.elem_bytes != rb.elem_bytes:
        raise LoweringError(op, f"A and B tiles differ along K: {ra.cols} vs {rb.cols} elements")
    i8 = ir.IntegerType.get_signless(8)
    desc_a = sm90_wgmma.descriptor(gep(a.base, mn_bytes(ra, a_rows, b), i8, b), ra)

    def operand(ks: int, mi: int) -> object:
        return sm90_wgmma.advanced(desc_a, ra.mn_offset(mi * 64) + ra.k_offset(ks))

    def mma(atom: WgmmaAtom, acc: ir.Value, da: object, db: ir.Value, add: bool) -> ir.Value:
        return sm90_wgmma.mma(atom, acc, da, db, (ra.mn_major, rb.mn_major), add)

    return ra.cols, operand, mma


def drain_after(loop: ir.Operation, drained: set[int]) -> ir.Operation | None:
    """`wgmma.wait_group 0` right after the gemm's loop (once a loop: None the second time):
    the accumulators are whole from there on."""
    if op_id(loop) in drained:
        return None
    drained.add(op_id(loop))
    with ir.InsertionPoint(after_op(loop)), loop.location:
        return nvvm.WgmmaWaitGroupSyncOp(0).operation


def fenced(acc: Frag) -> Frag:
    """The accumulator's values through an empty `asm volatile` each ("+f"), as CUTLASS's
    warpgroup_fence_operand: whatever reads them is ordered after the `wait_group` before it.
    Without it LLVM may move an epilogue's first conversion of an accumulator register above
    the wait, and ptxas then serialises every wgmma of the kernel (its C7514 note)."""
    f32 = ir.F32Type.get()

    def fence(v: ir.Value) -> ir.Value:
        return llvm.InlineAsmOp(f32, [v], "", "=f,0", has_side_effects=True).result

    return Frag(acc.part, acc.elem, [[fence(v) for v in row] for row in acc.values])


def after_op(op: ir.Operation) -> ir.Operation:
    """The op after `op` in its block."""
    ops = [o.operation for o in op.block.operations]
    return ops[ops.index(op) + 1]

r"""Passes (lowered stage): `gemm(mma, p, b, acc)` with A in registers: the FA2 trick.

An mma.sync m16n8k16 A fragment is four registers of two 16-bit values each: rows g and g + 8
by k 2t, 2t+1 and 2t+8, 2t+9 (lane = 4g + t). An accumulator of m16n8 atoms holds, per atom,
c0 c1 at row g, columns 2t, 2t+1 and c2 c3 at row g + 8: two n-atoms side by side (columns
16j .. 16j+15) are exactly the A fragment of k-step j, so an accumulator P (converted to f16 or
bf16) feeds the next mma.sync as its A operand with no data movement, only packing:

    A regs of (m-atom mi, k-step j):  {P(mi, 2j)[c0 c1]}, {P(mi, 2j)[c2 c3]},
                                      {P(mi, 2j+1)[c0 c1]}, {P(mi, 2j+1)[c2 c3]}

This holds when a warp owns whole rows of P (its tiled MMA has one warp along N) and the
second MMA spreads M over the warps as the first did; B still comes from shared memory by
ldmatrix. Attention's P = softmax(Q Kᵀ) then multiplies V without a round trip through
shared memory.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from tilec.lowering import LoweringError
from tilec.lowering.tile_fragments import Frag, constant
from tilec.lowering.tile_mma import AK, MmaPartition, check_operand
from tilec.lowering.tile_mma_gemm import gemm_steps
from tilec.lowering.tile_views import View


def check_register_a(op: ir.Operation, p: Frag, bv: View, acc: Frag) -> tuple[int, bool]:
    """K, and whether B is K-major, once the register A operand `p` is checked against acc."""
    part, pp = acc.part, p.part
    if not isinstance(part, MmaPartition):
        raise LoweringError(op, "gemm accumulates into a fragment of its tiled MMA")
    if not isinstance(pp, MmaPartition):
        raise LoweringError(
            op, "a gemm operand a in registers must be an MMA accumulator (its C fragment)"
        )
    if pp.warps[1] != 1:
        raise LoweringError(
            op,
            f"operand a in registers: its MMA spreads N over {pp.warps[1]} warps; feeding the "
            "next mma.sync needs whole rows in each warp (atoms = (WM, 1, 1))",
        )
    if pp.warps[0] != part.warps[0] or pp.block[0] != part.block[0]:
        raise LoweringError(
            op, "operand a in registers: both MMAs must spread the same M rows over the warps"
        )
    if str(p.elem) != part.elem:
        raise LoweringError(
            op, f"operand a in registers holds {p.elem}, the atom takes {part.elem}: convert it"
        )
    k = pp.block[1]
    if k % AK or bv.static_shape(op)[1] != k:
        raise LoweringError(op, f"gemm operands a and b differ in K ({k} in registers)")
    return k, check_operand(op, bv, part.block[1], "b", part.elem)


def pack(lo: ir.Value, hi: ir.Value) -> ir.Value:
    """Two 16-bit values as one 32-bit register (lo in the low half), as mma.sync takes them."""
    pair = ir.VectorType.get([2], lo.type)
    vec = llvm.UndefOp(pair).result
    i32 = ir.IntegerType.get_signless(32)
    vec = llvm.InsertElementOp(vec, lo, constant(i32, 0)).result
    vec = llvm.InsertElementOp(vec, hi, constant(i32, 1)).result
    return llvm.BitcastOp(i32, vec).result


def a_registers(p: Frag, ks: int) -> list[ir.Value]:
    """The A fragments of k-step `ks` (a multiple of 16), four registers per m-atom."""
    return [r for mi in range(p.part.tiles[0]) for r in a_fragment(p, ks, mi)]


def a_fragment(p: Frag, ks: int, mi: int) -> list[ir.Value]:
    """The A fragment of k-step `ks` (a multiple of 16) and m-atom `mi`: four registers."""
    tm = p.part.tiles[0]
    j = ks // AK
    left, right = p.values[mi + tm * 2 * j], p.values[mi + tm * (2 * j + 1)]
    return [pack(*left[0:2]), pack(*left[2:4]), pack(*right[0:2]), pack(*right[2:4])]


def gemm_register_a(
    op: ir.Operation, p: Frag, bv: View, acc: Frag, tid: ir.Value, barriers: bool = True
) -> None:
    """acc += p @ bᵀ with p an accumulator in registers, b a shared tile (see the module)."""
    k, b_major = check_register_a(op, p, bv, acc)
    gemm_steps(acc, (True, b_major), tid, k, lambda feed, ks: a_registers(p, ks), bv, barriers)

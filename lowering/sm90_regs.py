r"""Passes (lowered stage): wgmma with A from registers (RS), attention's P·V on SM90.

A wgmma m64nNk16 whose A comes from registers takes, in each warp of the group, the mma.sync
m16n8k16 A fragment of the warp's 16 rows: four `.b32` of two 16-bit values. A wgmma
accumulator (C) holds, per 8-column block j, registers 4j, 4j+1 at row g and 4j+2, 4j+3 at
row g + 8 of the warp's rows (lane = 4g + t, columns 8j + 2t, 8j + 2t + 1), so blocks 2kk and
2kk + 1 of C are exactly the A fragment of k-step kk, as on SM80 (tile_mma_regs):

    C (64 x N, one warp's 16 rows)        A of k-step kk (64 x 16)
    | 2kk: c0 c1 / c2 c3 | 2kk+1: ... |   a0a1 = pack(c0,c1)(2kk), a2a3 = pack(c2,c3)(2kk),
                                          a4a5 = pack(c0,c1)(2kk+1), a6a7 = pack(c2,c3)(2kk+1)

So P = S converted (`p : T`, a register tensor spread as the first MMA's C) is the A operand
of O += P·V with no data movement: the two MMAs must spread the same rows over the same warp
groups (`warpgroups = (m, 1, 1)`: each group whole rows of P). B is a ring stage's slot, as
for any wgmma (V, MN-major: the permutation of a (BN, D) buffer). MLIR's
`nvvm.wgmma.mma_async` takes A only as a descriptor: sm90_wgmma.mma_register_a is inline PTX.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import llvm

from tilec.lowering import LoweringError, sm90_wgmma
from tilec.lowering.sm90_tma import SwizzledRows
from tilec.lowering.sm90_wgmma import WgmmaAtom
from tilec.lowering.tile_fragments import Frag
from tilec.lowering.tile_mma import AK, MmaPartition
from tilec.lowering.tile_mma_regs import a_fragment

if TYPE_CHECKING:
    from tilec.lowering.tile_mma_wgmma import Wgmma


def check(op: ir.Operation, p: Frag, acc: Frag, rb: SwizzledRows, w: Wgmma) -> int:
    """K, once the register A operand `p` is checked against the accumulator and B."""
    part, pp = acc.part, p.part
    if not isinstance(pp, MmaPartition):
        raise LoweringError(
            op, "a gemm operand a in registers must be an MMA accumulator (its C fragment)"
        )
    if pp.warps[1] != 1 or part.warps[1] != 1:
        raise LoweringError(
            op, "operand a in registers: each warp group must hold whole rows of it and of "
            "the accumulator (warpgroups = (m, 1, 1) in both MMAs)",
        )  # fmt: skip
    if (pp.warps[0], pp.block[0], pp.group) != (part.warps[0], part.block[0], part.group):
        raise LoweringError(
            op, "operand a in registers: both MMAs must spread the same M rows over the warps"
        )
    if str(p.elem) != w.atom.a:
        raise LoweringError(
            op, f"operand a in registers holds {p.elem}, the atom takes {w.atom.a}: convert it"
        )
    k = pp.block[1]
    if k % AK or rb.cols != k:
        raise LoweringError(
            op, f"gemm operands a and b differ in K ({k} in registers, {rb.cols} in b)"
        )
    return k


def ready(p: Frag, ksteps: int, tiles: int) -> Callable[[int, int], object]:
    """A's four registers at K element `ks` of 64-row tile `mi` (tile_mma_regs.a_fragment:
    the wgmma tiles of a group are its m-atoms), all packed now, before the gemm's fence, each
    through an empty `asm volatile` ("=r,0") that keeps it there."""
    i32 = ir.IntegerType.get_signless(32)

    def fence(v: ir.Value) -> ir.Value:
        return llvm.InlineAsmOp(i32, [v], "", "=r,0", has_side_effects=True).result

    regs = {
        (kk * AK, mi): [fence(r) for r in a_fragment(p, kk * AK, mi)]
        for kk in range(ksteps)
        for mi in range(tiles)
    }
    return lambda ks, mi: regs[ks, mi]


def mma(rb: SwizzledRows) -> Callable[[WgmmaAtom, ir.Value, object, ir.Value, bool], ir.Value]:
    def issue(atom: WgmmaAtom, acc: ir.Value, a: object, db: ir.Value, add: bool) -> ir.Value:
        return sm90_wgmma.mma_register_a(atom, acc, a, db, rb.mn_major, add)

    return issue

"""Passes (lowered stage): the f32 math the register lowerings emit where MLIR's default would
cost more: exp as one ex2.approx, tanh as tanh.approx, GELU's tanh form, and erf without a branch.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, math, nvvm

from tilec.binding import is_float_type


def constant(t: ir.Type, x: float) -> ir.Value:
    """A constant of type `t` (a float or an integer type) at the insertion point."""
    if is_float_type(t):
        return arith.ConstantOp(t, ir.FloatAttr.get(t, x)).result
    return arith.ConstantOp(t, ir.IntegerAttr.get(t, int(x))).result


LOG2_E = 1.4426950408889634


def fast_exp(x: ir.Value) -> ir.Value:
    """exp of an f32 as 2^(x log2 e): one multiply and one ex2.approx (what CUDA's __expf and
    Triton's exp do), relative error within ~2^-21 for |x| < 88. libdevice's accurate expf
    took ten instructions an element, which the row kernels could not afford (softmax's loop
    form runs two an element)."""
    return math.Exp2Op(arith.MulFOp(x, constant(x.type, LOG2_E)).result).result


GELU_C = 0.7978845608028654  # sqrt(2 / pi)
GELU_C3 = GELU_C * 0.044715


def fast_tanh(x: ir.Value) -> ir.Value:
    """tanh of an f32 as `tanh.approx.f32`, one MUFU instruction (maximum relative error about
    2^-11, CUDA's `tanhf` with --use_fast_math); other types through `math.tanh`."""
    if not isinstance(x.type, ir.F32Type):
        return math.TanhOp(x).result
    return nvvm.InlinePtxOp([x.type], [x], [], "tanh.approx.f32 $0, $1;").results[0]


def gelu_tanh(x: ir.Value) -> ir.Value:
    """GELU's tanh form (torch's `gelu(x, approximate="tanh")`): h + h · tanh(u), h = x / 2,
    u = x · (c + c3 · x²); a multiply, two fused multiply-adds, the tanh and one more."""
    f = x.type
    u = arith.MulFOp(
        x, math.FmaOp(arith.MulFOp(x, x).result, constant(f, GELU_C3), constant(f, GELU_C)).result
    ).result
    h = arith.MulFOp(x, constant(f, 0.5)).result
    return math.FmaOp(h, fast_tanh(u), h).result


# erf(x) for f32, the two-piece polynomial libdevice's erff evaluates (its coefficients, read
# from the PTX it compiles to): |x| below ERF_SPLIT, x + x · p(x²); above, 1 - 2^(-t - t · q(t))
# with t = |x| and x's sign. libdevice branches around the ex2 of the second piece, one branch
# an element, which cuts an unrolled epilogue into a basic block per element and keeps ptxas
# from interleaving their dependent chains; here both pieces are selected, no branch, the same
# values (within 1 ulp of erf over [-6, 6] in a float64 check: test_tile_math.py).
ERF_SPLIT = 0x3F8060FE  # 1.00296...
ERF_ABOVE = (0x38EB4C3A, 0xBAAE005B, 0x3C09919F, 0xBD24D99A, 0x3E235519, 0x3F69B4F9, 0x3F210A14)
ERF_BELOW = (0x38B1E96A, 0xBA574D20, 0x3BAAD5EA, 0xBCDC1BE7, 0x3DE718AF, 0xBEC093AC, 0x3E0375D3)


def bits(t: ir.Type, word: int) -> ir.Value:
    """The f32 constant whose IEEE bits are `word`."""
    i32 = ir.IntegerType.get_signless(32)
    as_int = arith.ConstantOp(i32, ir.IntegerAttr.get(i32, word - (1 << 32) * (word >> 31)))
    return arith.BitcastOp(t, as_int.result).result


def erf(x: ir.Value) -> ir.Value:
    """erf of `x`: branch-free for f32 (see ERF_ABOVE), `math.erf` for other types."""
    if not isinstance(x.type, ir.F32Type):
        return math.ErfOp(x).result
    f = x.type
    t = math.AbsFOp(x).result
    above = arith.CmpFOp(arith.CmpFPredicate.OGE, t, bits(f, ERF_SPLIT)).result
    u = arith.SelectOp(above, t, arith.MulFOp(x, x).result).result

    def coefficient(k: int) -> ir.Value:
        return arith.SelectOp(above, bits(f, ERF_ABOVE[k]), bits(f, ERF_BELOW[k])).result

    p = coefficient(0)
    for k in range(1, len(ERF_ABOVE)):
        p = math.FmaOp(p, u, coefficient(k)).result
    w = arith.SelectOp(above, arith.NegFOp(u).result, x).result
    r = math.FmaOp(p, w, w).result
    e2 = nvvm.InlinePtxOp([f], [r], [], "ex2.approx.ftz.f32 $0, $1;").results[0]
    tail = math.CopySignOp(arith.SubFOp(constant(f, 1.0), e2).result, x).result
    return arith.SelectOp(above, tail, r).result

"""Passes (lowered stage): the f32 math the register lowerings emit where MLIR's default would
cost more: exp as one ex2.approx, tanh as tanh.approx, GELU's tanh form, and GELU's erf form from
one exponential.
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


# GELU's erf form for f32, x · Φ(x) with Φ the standard normal CDF, from one exponential:
# Q(t) = Φ(-t) = 2^p(t) for t = |x|, p a degree-10 polynomial fitted (weighted least squares
# over [0, 6], f32 coefficients) to log2 Q; Φ(x) = 1 - Q for x >= 0, Q below. Past 6 p keeps
# falling with log2 Q (-39.5 at 7, -50.6 at 8, both within 0.1 of it) down to -inf, so Q
# underflows to 0 by itself: no cut-off (an infinite x makes p -inf, not NaN). Evaluated with fused
# multiply-adds and an exact 2^p it is within 2.2 ulp of GELU for x >= 0 and within
# 1.7 · 2^-24 · |x| everywhere (test_tile_math.py); Q keeps its relative accuracy (4e-6) in
# the tail, where 1 + erf(x / sqrt 2) cancels. Ten fused multiply-adds and one ex2.approx an
# element, no select of coefficients: the two-piece erf of libdevice's erff (its coefficients
# selected per element, both pieces evaluated to avoid a branch an element) took 28
# instructions where this takes 15, in epilogues that nothing overlaps (docs/performance.md).
GELU_Q = (
    0xB2B870A1, 0x3535E19D, 0xB7190357, 0x388B2FC9, 0xB981D54D, 0xB87C524F,
    0x3BE5C8CC, 0xBD56F5E1, 0xBEEB1D7B, 0xBF93576C, 0xBF800000,
)  # fmt: skip


def bits(t: ir.Type, word: int) -> ir.Value:
    """The f32 constant whose IEEE bits are `word`."""
    i32 = ir.IntegerType.get_signless(32)
    as_int = arith.ConstantOp(i32, ir.IntegerAttr.get(i32, word - (1 << 32) * (word >> 31)))
    return arith.BitcastOp(t, as_int.result).result


def gelu(x: ir.Value) -> ir.Value:
    """GELU's erf form, x · Φ(x): for f32 from one exponential (see GELU_Q), otherwise
    x/2 · (1 + erf(x / sqrt 2)) through `math.erf`."""
    f = x.type
    if not isinstance(f, ir.F32Type):
        scaled = arith.MulFOp(x, constant(f, 0.7071067811865476)).result
        one_plus = arith.AddFOp(constant(f, 1.0), math.ErfOp(scaled).result).result
        return arith.MulFOp(arith.MulFOp(x, constant(f, 0.5)).result, one_plus).result
    t = math.AbsFOp(x).result
    p = bits(f, GELU_Q[0])
    for word in GELU_Q[1:]:
        p = math.FmaOp(p, t, bits(f, word)).result
    q = nvvm.InlinePtxOp([f], [p], [], "ex2.approx.ftz.f32 $0, $1;").results[0]
    positive = arith.CmpFOp(arith.CmpFPredicate.OGE, x, constant(f, 0.0)).result
    phi = arith.SelectOp(positive, arith.SubFOp(constant(f, 1.0), q).result, q).result
    return arith.MulFOp(x, phi).result

"""lowering/tile_math.erf: the two-piece polynomial (libdevice erff's coefficients) without a
branch. Its constants evaluated as the emitted ops do (f32, fused multiply-adds through float64,
2^r exact) must stay within 1.5 ulp of erf over [-6, 6] and small arguments; the emitted ops
must hold no branch and one ex2 (the reason it exists: an unrolled GELU epilogue of 128 values
a thread was 128 basic blocks with libdevice's erff)."""

from __future__ import annotations

import math

import numpy as np
from mlir import ir
from mlir.dialects import func

from tilec.binding import walk
from tilec.context import make_context
from tilec.lowering.tile_math import ERF_ABOVE, ERF_BELOW, ERF_SPLIT, erf

f32 = np.float32


def word(w: int) -> np.float32:
    return np.array([w], dtype=np.uint32).view(np.float32)[0]


def fma(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    return f32(np.float64(a) * np.float64(b) + np.float64(c))


def model(x: np.float32) -> np.float32:
    t = abs(x)
    above = t >= word(ERF_SPLIT)
    u = t if above else f32(x * x)
    coefficients = ERF_ABOVE if above else ERF_BELOW
    p = word(coefficients[0])
    for c in coefficients[1:]:
        p = fma(p, u, word(c))
    w = -u if above else x
    r = fma(p, w, w)
    return f32(math.copysign(f32(1) - f32(2.0 ** float(r)), x)) if above else r


def test_the_polynomial_is_erf_within_an_ulp_and_a_half() -> None:
    xs = np.concatenate(
        [np.linspace(-6, 6, 60001, dtype=f32), f32(10) ** np.linspace(-8, 0.7, 4001).astype(f32)]
    )
    worst = 0.0
    for x in xs:
        ref = math.erf(float(x))
        ulp = float(np.spacing(f32(abs(ref)))) if ref else 1e-45
        worst = max(worst, abs(float(model(x)) - ref) / ulp)
    assert worst < 1.5, worst


def test_erf_emits_no_branch_and_one_ex2() -> None:
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("f", ([ir.F32Type.get()], [ir.F32Type.get()]))
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                func.ReturnOp([erf(block.arguments[0])])
        names: list[str] = []
        walk(module.operation, lambda op: names.append(op.name))
        asm = str(module)
    assert not any(n.startswith(("scf.", "cf.")) for n in names)
    assert "math.erf" not in names
    assert asm.count("ex2.approx.ftz.f32") == 1
    assert names.count("math.fma") == len(ERF_ABOVE)

"""convert-layout-to-arith on swizzle compositions with a nonzero offset (`Sw<b,m,s> o OFF o
layout`, what slicing a swizzled buffer at a row or stage leaves): the lowered arith, run for
every index and every coordinate, equals the algebra's `outer(offset + inner(c))`. The offset
must be added before the swizzle (after it, or dropped, the xor sees other bits)."""

from __future__ import annotations

import itertools

import pytest
from mlir import ir
from test_layout_passes import interpret

from tilec.context import make_context
from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.int_tuple import idx2crd
from tilec.dialects.layout.ir import layout_of
from tilec.pipeline import run_pipeline

INNERS = [
    "(8,64):(64,1)",  # the 128-byte f16 rows of the SM80/SM90 GEMMs
    "(8,32):(32,1)",  # 64-byte rows
    "(8,16):(16,1)",  # 32-byte rows
    "((8,2),32):((32,512),1)",  # two 8-row blocks, tile_to_shape's kind
    "(16,(8,4)):(8,(1,128))",  # nested, column-major outer mode
    "(3,40):(40,1)",  # not a power of two: div/rem, not shifts
]
SWIZZLES = ["Sw<3,3,3>", "Sw<2,3,3>", "Sw<1,3,3>", "Sw<3,4,3>", "Sw<2,2,3>"]
# One element, a 16-byte chunk, one 128-byte row, a stage of 64 rows, and values whose low
# bits land inside the swizzle's yyy and zzz fields.
OFFSETS = [1, 8, 40, 448, 4104, 12]


def lowered(spec: str, folded: bool) -> ir.Module:
    layout = layout_of(ir.Type.parse(f'!layout.layout<"{spec}">', make_context()))
    flat = len(A.flatten(layout.shape))
    ty = f'!layout.layout<"{spec}">'
    coords = ", ".join(f"%c{k}" for k in range(flat))
    params = ", ".join(["%i: index"] + [f"%c{k}: index" for k in range(flat)])
    text = f"""func.func @f({params}) -> (index, index) {{
      %l = "layout.make"() : () -> {ty}
      %a = "layout.apply"(%l, %i) : ({ty}, index) -> index
      %b = "layout.crd2idx"(%l, {coords}) : ({ty}{", index" * flat}) -> index
      return %a, %b : index, index
    }}"""
    module = ir.Module.parse(text)
    passes = "layout-fold,convert-layout-to-arith" if folded else "convert-layout-to-arith"
    run_pipeline(module, passes + ",canonicalize")
    return module  # the caller keeps it alive while it reads the function


def check_every_index(spec: str, folded: bool) -> int:
    with make_context() as ctx:
        layout = layout_of(ir.Type.parse(f'!layout.layout<"{spec}">', ctx))
        assert isinstance(layout, A.ComposedLayout) and layout.offset != 0
        module = lowered(spec, folded)
        func = module.body.operations[0]
        flat_shape = A.flatten(layout.shape)
        for i in range(A.size(layout)):
            crd = idx2crd(i, flat_shape)
            crd = crd if isinstance(crd, tuple) else (crd,)
            want = layout.outer(layout.offset + layout.inner(i))
            assert want == layout(i)
            assert interpret(func, [i, *crd]) == [want, want], (spec, i, crd)
        return A.size(layout)


# Every offset with every inner layout, the swizzles taken in turn (the full product is 5x
# slower and finds nothing more: the lowering treats every swizzle alike).
CASES = [
    f"{SWIZZLES[k % len(SWIZZLES)]} o {off} o {inner}"
    for k, (off, inner) in enumerate(itertools.product(OFFSETS, INNERS))
]


@pytest.mark.parametrize("spec", CASES)
def test_offset_inside_a_swizzle(spec: str) -> None:
    assert check_every_index(spec, folded=False) > 0


@pytest.mark.parametrize(
    "spec", ["Sw<3,3,3> o 40 o (8,64):(64,1)", "Sw<2,3,3> o 12 o (3,40):(40,1)"]
)
def test_after_layout_fold_too(spec: str) -> None:
    assert check_every_index(spec, folded=True) > 0


def test_the_offset_changes_the_swizzled_value() -> None:
    """The cases can fail: adding 40 after the xor instead of before gives other addresses."""
    sw, inner = A.Swizzle(3, 3, 3), A.Layout((8, 64), (64, 1))
    before = [sw(40 + inner(i)) for i in range(512)]
    after = [sw(inner(i)) + 40 for i in range(512)]
    dropped = [sw(inner(i)) for i in range(512)]
    assert sum(b != a for b, a in zip(before, after, strict=True)) > 100
    assert sum(b != d for b, d in zip(before, dropped, strict=True)) == 512


@pytest.mark.parametrize(
    "spec",
    [
        "(8,8):(8,1) o 3 o 64:1",
        "(4,(2,4)):(1,(16,4)) o 5 o 32:1",  # a nested outer, past its size at the top
        "(3,5):(5,1) o 0 o (5,3):(3,1)",  # not powers of two: div and rem
        "(16,4):(1,16) o 7 o (4,4):(4,1)",
    ],
)
def test_a_layout_outer_is_applied(spec: str) -> None:
    """A composition whose outer function is a layout: outer(offset + inner(i)) for every i
    (it was dropped, leaving offset + inner(i), before; that fails here)."""
    with make_context() as ctx:
        layout = layout_of(ir.Type.parse(f'!layout.layout<"{spec}">', ctx))
        module = lowered(spec, folded=False)
        flat_shape = A.flatten(layout.shape)
        for i in range(A.size(layout)):
            crd = idx2crd(i, flat_shape)
            crd = crd if isinstance(crd, tuple) else (crd,)
            got = interpret(module.body.operations[0], [i, *crd])
            assert got == [layout(i), layout(i)], (spec, i)

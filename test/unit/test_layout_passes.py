"""layout-fold and convert-layout-to-arith agree with the algebra on random layouts.

The lowered arith is run by a tiny interpreter of the index ops the pass emits, on every
coordinate of random (nested, dynamic, swizzled) layouts, and compared with `tilec.layout`.
"""

import random

import pytest
from mlir import ir

from tilec.context import make_context
from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.int_tuple import idx2crd
from tilec.pipeline import run_pipeline

ARITH = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.shli": lambda a, b: a << b,
    "arith.shrui": lambda a, b: a >> b,
    "arith.andi": lambda a, b: a & b,
    "arith.xori": lambda a, b: a ^ b,
    "arith.divui": lambda a, b: a // b,
    "arith.remui": lambda a, b: a % b,
}


def interpret(func: ir.Operation, args: list[int]) -> list[int]:
    """Evaluate a straight-line function of `index` arith ops."""
    env: dict[str, int] = {}
    block = func.regions[0].blocks[0]
    for arg, value in zip(block.arguments, args, strict=True):
        env[arg.get_name()] = value
    for op in block.operations:
        name = op.operation.name
        if name == "arith.constant":
            env[op.result.get_name()] = ir.IntegerAttr(op.attributes["value"]).value
        elif name in ARITH:
            a, b = (env[v.get_name()] for v in op.operands)
            env[op.result.get_name()] = ARITH[name](a, b)
        elif name == "func.return":
            return [env[v.get_name()] for v in op.operands]
        else:
            raise AssertionError(f"unexpected op after lowering: {name}")
    raise AssertionError("no return")


def random_shape(rng: random.Random, depth: int = 0) -> A.IntTuple:
    if depth < 2 and rng.random() < 0.3:
        return tuple(random_shape(rng, depth + 1) for _ in range(rng.randint(1, 3)))
    return rng.choice([1, 2, 3, 4, 5, 6, 8])


def random_layout(rng: random.Random) -> A.Layout:
    shape = tuple(random_shape(rng) for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.5:
        return A.Layout(shape)  # compact column-major
    stride = A.Layout(shape).stride

    def perturb(t: A.IntTuple) -> A.IntTuple:
        if isinstance(t, tuple):
            return tuple(perturb(x) for x in t)
        return rng.choice([0, 1, 2, 3, 4, 7, 8, 16, 64, t])

    return A.Layout(shape, perturb(stride))


def dynamic_spec(layout: A.Layout, rng: random.Random) -> tuple[str, list[int]]:
    """The layout's text with some entries replaced by `?`, and those entries' values."""
    values: list[int] = []

    def hide(t: A.IntTuple) -> str:
        if isinstance(t, tuple):
            return "(" + ",".join(hide(x) for x in t) + ")"
        if rng.random() < 0.4:
            values.append(t)
            return "?"
        return str(t)

    return f"{hide(layout.shape)}:{hide(layout.stride)}", values


@pytest.mark.parametrize("seed", range(60))
def test_lowered_apply_and_crd2idx_match_the_algebra(seed: int) -> None:
    rng = random.Random(seed)
    layout = random_layout(rng)
    spec, dyn_values = dynamic_spec(layout, rng)
    swizzle = rng.choice([None, A.Swizzle(2, 2, 3), A.Swizzle(3, 3, 3), A.Swizzle(1, 0, -2)])
    flat = len(A.flatten(layout.shape))
    n_dyn = len(dyn_values)
    params = ", ".join(
        [f"%d{k}: index" for k in range(n_dyn)]
        + ["%i: index"]
        + [f"%c{k}: index" for k in range(flat)]
    )
    dyn = ", ".join(f"%d{k}" for k in range(n_dyn))
    ty = f'!layout.layout<"{spec}">'
    lines = [f"func.func @f({params}) -> (index, index, index) {{"]
    lines.append(f'  %l = "layout.make"({dyn}) : ({", ".join(["index"] * n_dyn)}) -> {ty}')
    src, src_ty = "%l", ty
    if swizzle is not None:
        sw_ty = '!layout.layout<"?">'
        attrs = ", ".join(f"{k} = {getattr(swizzle, k)} : i32" for k in ("bits", "base", "shift"))
        lines.append(f'  %s = "layout.swizzle"(%l) {{{attrs}}} : ({ty}) -> {sw_ty}')
        src, src_ty = "%s", sw_ty
    coords = ", ".join(f"%c{k}" for k in range(flat))
    lines.append(f'  %a = "layout.apply"({src}, %i) : ({src_ty}, index) -> index')
    lines.append(
        f'  %b = "layout.crd2idx"({src}, {coords}) : ({src_ty}{", index" * flat}) -> index'
    )
    lines.append(f'  %n = "layout.size"(%l) : ({ty}) -> index')
    lines.append("  return %a, %b, %n : index, index, index\n}")
    ctx = make_context()
    with ctx:
        if swizzle is not None and n_dyn:
            # A swizzle of a dynamic layout cannot fold; the pass must say so, not miscompile.
            module = ir.Module.parse("\n".join(lines))
            with pytest.raises(ir.MLIRError, match="cannot be lowered"):
                run_pipeline(module, "layout-fold,convert-layout-to-arith")
            return
        module = ir.Module.parse("\n".join(lines))
        run_pipeline(module, "layout-fold,convert-layout-to-arith,canonicalize")
        func = module.body.operations[0]
        expected_fn = A.composition(swizzle, layout) if swizzle is not None else layout
        flat_shape = A.flatten(layout.shape)
        # Every index of a small layout; of a large one (seed 9: thousands, 15 s interpreted)
        # its first and last 64 and 512 drawn at random.
        size = A.size(layout)
        indices = range(size)
        if size > 1024:
            indices = sorted({*range(64), *range(size - 64, size), *rng.sample(range(size), 512)})
        for i in indices:
            crd = idx2crd(i, flat_shape)
            crd = crd if isinstance(crd, tuple) else (crd,)
            got = interpret(func, [*dyn_values, i, *crd])
            assert got == [expected_fn(i), expected_fn(i), A.size(layout)], (spec, swizzle, i)


def test_power_of_two_layouts_lower_without_division() -> None:
    ctx = make_context()
    with ctx:
        module = ir.Module.parse(
            """func.func @f(%i: index, %ld: index) -> index {
              %l = "layout.make"(%ld) : (index) -> !layout.layout<"((4,8),16):((1,?),256)">
              %a = "layout.apply"(%l, %i)
                : (!layout.layout<"((4,8),16):((1,?),256)">, index) -> index
              return %a : index }"""
        )
        run_pipeline(module, "convert-layout-to-arith,canonicalize")
        text = str(module)
    assert "divui" not in text and "remui" not in text
    assert "shrui" in text and "andi" in text

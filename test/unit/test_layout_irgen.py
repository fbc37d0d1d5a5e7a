"""Layout expressions written as layout ops (frontend/irgen_layout.py), on random programs.

Each program declares shared buffers from random layout expressions (literals, swizzles,
compositions, products, divides, tile_to_shape, slices with constant and runtime coordinates,
named and reused through `let`). The tile stage must hold layout ops beside every buffer, and
`layout-fold` then `tile-verify` must evaluate each back to exactly the layout the checker gave
the buffer's type: an op emitted with the wrong operands, attributes or pattern fails here.
"""

from __future__ import annotations

import random

import pytest

from tilec.context import make_context
from tilec.diagnostics import DiagnosticError
from tilec.frontend import check, irgen, parse_source
from tilec.pipeline import run_pipeline


def flat(rng: random.Random) -> str:
    """A static row- or column-major layout of rank 2."""
    a, b = rng.choice([2, 4, 8]), rng.choice([2, 4, 8, 16])
    return rng.choice([f"({a}, {b}):({b}, 1)", f"({a}, {b}):(1, {a})"])


def literal(rng: random.Random) -> str:
    """A rank-2 layout, sometimes with a nested first mode."""
    if rng.random() < 0.3:
        a, b = rng.choice([2, 4]), rng.choice([2, 8])
        return f"(({a}, 2), {b}):((1, {a}), {2 * a})"
    return flat(rng)


def expression(rng: random.Random, named: list[str], depth: int = 0) -> str:
    """A random layout expression, over literals and earlier `let`s."""
    base = rng.choice(named) if named and rng.random() < 0.4 else literal(rng)
    if depth > 1:
        return base
    kind = rng.randrange(8)
    inner = expression(rng, named, depth + 1)
    if kind == 0:
        bits = rng.randint(1, 3)
        return f"swizzle<{bits}, {rng.randint(0, 3)}, {rng.randint(bits, 4)}> o {literal(rng)}"
    if kind == 1:
        return f"composition({inner}, {literal(rng)})"
    if kind == 2:
        fn = rng.choice(["logical_product", "blocked_product", "raked_product"])
        return f"{fn}({inner}, {literal(rng)})"
    if kind == 3:
        return f"{rng.choice(['logical_divide', 'zipped_divide'])}({inner}, {literal(rng)})"
    if kind == 4:
        return f"tile_to_shape({literal(rng)}, ({rng.choice([16, 32])}, {rng.choice([16, 32])}))"
    if kind == 5:
        crd = rng.choice(["(_, 1)", "(1, _)", "(block.x, _)", "(_, block.y)"])
        return f"slice({crd}, {flat(rng)})"
    if kind == 6:
        return f"{rng.choice(['coalesce', 'filter'])}({inner})"
    return inner


def program(rng: random.Random) -> str:
    lines, named = [], []
    for k in range(rng.randint(2, 5)):
        name = f"l{k}"
        lines.append(f"  let {name} = {expression(rng, named)}")
        named.append(name)
        lines.append(f"  let s{k} = shared<f32>({rng.choice([name, expression(rng, named)])})")
    body = "\n".join(lines)
    return f"kernel k(x: f32[N]) grid(4, 4) threads(32) target(sm_80)\n{{\n{body}\n}}\n"


def accepted(seed: int) -> object:
    """The first program of the seed's draws that the checker accepts (it refuses some: an
    undefined composition, say), checked."""
    rng = random.Random(seed)
    for _ in range(50):
        try:
            return check(parse_source(program(rng), "k.tile"), {})
        except DiagnosticError:
            continue
    raise AssertionError(f"seed {seed}: the checker refused 50 draws in a row")


@pytest.mark.parametrize("seed", range(60))
def test_random_layout_programs_fold_back_to_their_types(seed: int) -> None:
    checked = accepted(seed)
    ctx = make_context()
    module = irgen(checked, ctx)
    with ctx:
        assert module.operation.verify()
        text = str(module)
        allocs = text.count('"tile.alloc_shared"(%')
        assert allocs == text.count('"tile.alloc_shared"'), "every buffer takes its layout"
        run_pipeline(module, "layout-fold,tile-verify")  # raises on any disagreement
        folded = str(module)
    for line in folded.splitlines():
        if '"tile.alloc_shared"' in line:
            declared = line.split('-> !tile.tensor<f32, "shared", "')[1].rstrip('">')
            assert f'!layout.layout<"{declared}">' in line, line
    assert not any(f'"layout.{op}"' in folded for op in ("composition", "swizzle", "slice"))


def test_some_draws_exercise_every_op() -> None:
    """The draws above are not all refused: most compile and hold the ops this file tests."""
    seen: set[str] = set()
    compiled = 0
    ctx = make_context()
    for seed in range(60):
        try:
            checked = check(parse_source(program(random.Random(seed)), "k.tile"), {})
        except DiagnosticError:
            continue
        compiled += 1
        text = str(irgen(checked, ctx))
        seen |= {op for op in ("swizzle", "composition", "slice", "tile_to_shape") if op in text}
    assert compiled >= 30
    assert seen == {"swizzle", "composition", "slice", "tile_to_shape"}

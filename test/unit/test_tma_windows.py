"""copy<tma> of a tile of a view bounded inside its tensor (a range `lo .. hi` of a mode), fuzzed:
kernels drawn at random (the range's ends static or runtime, through a slice or not, named or
inline, the copy in the pipelined loop or loaded once, `unbounded =` absent, 0 or 1, the copy
anywhere on its line) compile when the copy says `unbounded = 1` of a bounded view and when it
copies a whole tensor's tile without it, and otherwise fail with one located diagnostic at the
copy: `file:line:col: error: ...`, the line, a caret under the copy (docs/language.md, "copy<tma>
of a bounded view")."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from tilec.diagnostics import DiagnosticError
from tilec.driver import CompileOptions, compile_file

REFUSED = "copy<tma> of a tile of a view bounded inside its tensor (a range, lo .. hi)"
NEEDLESS = "unbounded = 1 on a copy<tma> whose view ends where its tensor does"

KERNEL = """\
kernel k(X: f16[(T, H, 64):(sxt, sxh, 1)], Y: f16[(N, 64):(sy, 1)], Z: f32[(M, 64):(sz, 1)],
         cu: i32[B1])
  grid(2, B1 - 1) threads(256) target(sm_90a)
{{
  let x0 = cu[block.y]
  let n = cu[block.y + 1] - x0
{lets}
  let sX = shared<f16>(tile_to_shape(swizzle<3, 3, 3> o (8, 64):(64, 1), (64, 64)))
  let sY = shared<f16>(tile_to_shape(swizzle<3, 3, 3> o (8, 64):(64, 1), (64, 64)))
  let mma = tiled_mma<sm90.wgmma_64xNx16.f32.f16.f16>(warpgroups = (1, 1, 1), n = 64)
  warp_specialize {{
    producer(warpgroup = 0, registers = 40) {{
{once}
      for k in pipeline(3, stages = 2) {{
{looped}
      }}
    }}
    consumer(warpgroups = 1..1, registers = 232) {{
      let acc = fragment<f32>(partition_c(mma, (64, 64))) = 0
      for k in pipeline(3, stages = 2) {{ gemm(mma, sX, sY, acc) }}
      store(acc, local_tile(Z, (64, 64), (block.x, 0)))
    }}
  }}
}}
"""

RANGES = ["x0 .. x0 + n - 1", "0 .. n - 1", "x0 .. 199", "8 .. 71", "x0 .. T - 1"]


@dataclass
class Case:
    source: str
    line: int  # 1-based line and column of the X copy
    col: int
    want: str | None  # the error expected, None: compiles


def draw(rng: random.Random) -> Case:
    """A kernel whose copy into sX reads a view of X, bounded inside it or not."""
    windowed = rng.random() < 0.6
    span = rng.choice(RANGES)
    if not windowed:
        view, lets = "X[_, 1, _]", []
    elif rng.random() < 0.5:  # the range and the head in one index
        view, lets = f"X[{span}, 1, _]", []
    else:  # a range of a slice
        view, lets = f"X[_, 1, _][{span}, _]", []
        if rng.random() < 0.5:
            lets = ["  let Xh = X[_, 1, _]"]
            view = f"Xh[{span}, _]"
    if rng.random() < 0.5:  # named
        lets.append(f"  let Xb = {view}")
        view = "Xb"
    flag = rng.choice([None, 0, 1])
    option = "" if flag is None else f",{' ' * rng.randint(0, 2)}unbounded = {flag}"
    coord = "(k, 0)"
    once = rng.random() < 0.5
    if once:
        coord = "(block.x, 0)"
    indent = " " * rng.randint(6 if once else 8, 14)
    copy_x = f"{indent}copy<tma>(local_tile({view}, (64, 64), {coord}), sX{option})"
    copy_y = f"{' ' * (6 if not once else 8)}copy<tma>(local_tile(Y, (64, 64), (k, 0)), sY)"
    if not once:
        copy_y = "      copy<tma>(local_tile(Y, (64, 64), (block.x, 0)), sY)"
    source = KERNEL.format(
        lets="\n".join(lets), once=copy_x if once else copy_y, looped=copy_y if once else copy_x
    )
    line = source.splitlines().index(copy_x) + 1
    want = REFUSED if windowed and flag != 1 else NEEDLESS if flag == 1 and not windowed else None
    return Case(source, line, len(indent) + 1, want)


@pytest.mark.parametrize("seed", range(24))
def test_bounded_tma_copies_are_refused_where_unmarked(seed: int, tmp_path: Path) -> None:
    case = draw(random.Random(seed))
    path = tmp_path / "k.tile"
    path.write_text(case.source)
    try:
        compile_file(str(path), CompileOptions(emit="lowered", contracts=False))
    except DiagnosticError as exc:
        text = exc.render(case.source)
        assert case.want is not None, f"unexpected failure:\n{text}\n{case.source}"
        lines = text.splitlines()
        assert len(exc.diagnostics) == 1, text
        assert lines[0].startswith(f"{path}:{case.line}:{case.col}: error: {case.want}"), text
        assert lines[1] == case.source.splitlines()[case.line - 1], text
        assert lines[2].rstrip() == " " * (case.col - 1) + "^", text
        return
    assert case.want is None, f"compiled, expected '{case.want}':\n{case.source}"

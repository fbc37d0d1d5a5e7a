"""Elementwise math broadcasts a register tile's size-1 modes towards the larger operand only:
(4,8) meets (4,1) and (1,8), but (4,1) and (1,8) make no (4,8) (that would be an outer
product, which the language spells otherwise), a located error at the operand; except where
both are reductions of one (4,8) tile (or of tiles spread alike): they broadcast over it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tilec.diagnostics import DiagnosticError
from tilec.driver import CompileOptions, compile_file

KERNEL = """kernel bc(X: f32[4, 8], Y: f32[{a}], Z: f32[{b}])
  grid(1) threads(32) target(sm_80)
{{
  let y = load(local_tile(Y, ({a}), (0, 0)))
  let z = load(local_tile(Z, ({b}), (0, 0)))
  store(y + z, local_tile(X, (4, 8), (0, 0)))
}}
"""


def compile_tile(tmp: Path, a: str, b: str) -> None:
    src = tmp / "bc.tile"
    src.write_text(KERNEL.format(a=a, b=b))
    compile_file(str(src), CompileOptions(emit="tile"))


@pytest.mark.parametrize(("a", "b"), [("4, 8", "4, 1"), ("4, 8", "1, 8"), ("1, 8", "4, 8")])
def test_size_one_modes_broadcast_to_the_larger_operand(a: str, b: str, tmp_path: Path) -> None:
    compile_tile(tmp_path, a, b)


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ("4, 1", "1, 8", "6:9: error: shapes (4,1) and (1,8) do not match"),
        ("1, 8", "4, 1", "6:13: error: shapes (4,1) and (1,8) do not match"),
        ("4, 8", "2, 8", "6:13: error: shapes (2,8) and (4,8) do not match"),
    ],
)
def test_no_broadcast_both_ways(a: str, b: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(DiagnosticError) as info:
        compile_tile(tmp_path, a, b)
    assert message in str(info.value)


REDUCED = """kernel rr(X: bf16[4, 8], Y: bf16[{y}])
  grid(1) threads(32) target(sm_80)
{{
  let x = load(local_tile(X, (4, 8), (0, 0))) : f32
  let y = load(local_tile(Y, ({y}), (0, 0)))
  var acc = fragment<f32>((4, 8)) = 0
  acc = acc + reduce_sum({a}, mode = 0) * reduce_sum({b}, mode = 1)
  store(acc, local_tile(X, (4, 8), (0, 0)))
}}
"""


def test_reductions_of_one_tile_along_two_modes_meet_as_that_tile(tmp_path: Path) -> None:
    # (1,8) and (4,1), each a reduction of a (4,8) tile spread alike, broadcast to (4,8): the
    # product is spread as the tile they reduced, x's bf16 load (examples/gemv.tile's A and B
    # rows): a row's 8 elements a thread, thread t at row t (4 of 32 with a chunk), not an f32
    # tile's 4-element chunks nor a reduction's `o 0 o` spread; the fresh fragment it meets
    # (a running sum) is spread so too
    src = tmp_path / "rr.tile"
    src.write_text(
        REDUCED.format(y="4, 8", a="x", b="load(local_tile(Y, (4, 8), (0, 0)), like = x) : f32")
    )
    distributed = {"lowered": "layout-fold,tile-verify,tile-distribute"}
    options = CompileOptions(emit="lowered", pipelines=distributed)
    ir = compile_file(str(src), options).as_bytes().decode()
    product = next(line for line in ir.splitlines() if '"tile.binary"' in line)
    assert product.endswith('-> !tile.frag<f32, "(4,8):(1,4)", "((32),(8,1)):((1),(4,32))">'), (
        product
    )


def test_reductions_of_tiles_of_two_shapes_do_not_meet(tmp_path: Path) -> None:
    # (1,8) of a (4,8) tile and (4,1) of a (4,4) one: no tile both broadcast over
    src = tmp_path / "rr.tile"
    src.write_text(REDUCED.format(y="4, 4", a="x", b="y"))
    with pytest.raises(DiagnosticError) as info:
        compile_file(str(src), CompileOptions(emit="tile"))
    assert "7:41: error: shapes (4,1) and (1,8) do not match" in str(info.value)

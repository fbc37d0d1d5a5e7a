"""Elementwise math broadcasts a register tile's size-1 modes towards the larger operand only:
(4,8) meets (4,1) and (1,8), but (4,1) and (1,8) make no (4,8) (that would be an outer
product, which the language spells otherwise), a located error at the operand."""

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

"""The edge version of a row access as predicated vectors (lowering/tile_bands.py).

examples/softmax.tile reads a ragged row's last tile and writes it back. Where every 16-byte
run lies wholly inside the row or wholly past it, each run is one `@p ld.global.v4` /
`@p st.global.v4` under its own predicate; where only 4-byte runs are whole, each is one
`@p ld.global.b32`; otherwise the plain edge version moves element by element under branches.
The GPU tier (test/gpu/test_rows.py) runs rows of each kind; these check the shape of the code.
"""

from __future__ import annotations

import re

import pytest

from tilec.driver import CompileOptions, compile_file

SOFTMAX = "examples/softmax.tile"
PREDICATED = re.compile(r"@%p\d+ (ld|st)\.global(\.v[24])?\.b32")


def ptx(cols: int, **params: str) -> str:
    options = CompileOptions(emit="ptx", params={"COLS": str(cols), **params}, contracts=False)
    return str(compile_file(SOFTMAX, options).value)


def accesses(text: str) -> dict[tuple[str, str], int]:
    """How many predicated global accesses of each (ld/st, vector suffix) the PTX holds."""
    out: dict[tuple[str, str], int] = {}
    for m in PREDICATED.finditer(text):
        key = (m.group(1), m.group(2) or "")
        out[key] = out.get(key, 0) + 1
    return out


def test_a_ragged_row_moves_whole_runs_as_predicated_vectors() -> None:
    # 1024 columns over 64 threads: 16 f16 a thread, two 16-byte runs per tile access. The
    # banded version of the last tile's load and of its store: one predicated vector a run.
    got = accesses(ptx(1024))
    assert got.get(("ld", ".v4"), 0) >= 2 and got.get(("st", ".v4"), 0) >= 2, got
    # ... and beside it, rows whose 4-byte runs only are whole: 8 words a thread.
    assert got.get(("ld", ""), 0) >= 8 and got.get(("st", ""), 0) >= 8, got


def test_the_band_is_taken_only_after_its_run_time_test() -> None:
    # The band's test: the row's room past the tile a multiple of the run (N & 7 == 0 for
    # 16-byte runs, N & 1 == 0 for 4-byte ones) and the base aligned for it; a fast version
    # without predicates stays for whole tiles.
    lowered = str(
        compile_file(SOFTMAX, CompileOptions(emit="lowered", params={"COLS": "1024"})).value
    )
    seven = re.findall(r"%(\w+) = arith.constant 7 : index", lowered)
    assert seven and any(re.search(rf"arith.andi %\w+, %{c} : index", lowered) for c in seven)
    text = ptx(1024)
    assert "ld.global.v4" in PREDICATED.sub("", text), "the fast version lost its plain vectors"


@pytest.mark.parametrize("cols", [16384, 32768])
def test_wide_rows_keep_no_four_byte_band(cols: int) -> None:
    # 32 or 64 values a thread are 16 or 32 four-byte runs: past MAX_PREDICATED_RUNS (16) each
    # predicate would outlive ptxas's predicate registers, so only 16-byte runs are banded.
    got = accesses(ptx(cols))
    assert got.get(("ld", ".v4"), 0) > 0, got
    if cols == 32768:
        assert got.get(("ld", ""), 0) == 0 and got.get(("st", ""), 0) == 0, got


def test_f32_rows_band_at_their_width_and_per_element() -> None:
    # f32: a 16-byte run is 4 elements and a 4-byte run is one; both bands exist.
    got = accesses(ptx(1024, T="f32"))
    assert got.get(("ld", ".v4"), 0) > 0 and got.get(("ld", ""), 0) > 0, got

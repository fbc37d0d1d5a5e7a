"""`blocks_per_sm(B)`: the check (a static count whose blocks' threads fit an SM; 0 is no
bound), the IR attribute, and the PTX's `.minnctapersm B`, under which ptxas keeps a thread's
registers low enough for B blocks (examples/gemm_skinny.tile's BLOCKS: 113 registers at 0, at
most 65536 / (5 x 128) = 102 at 5); beside `cluster(S)` both reach the PTX."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_cluster import BODY, compiled, diagnostics

from tilec.build import compile_tile

REPO = Path(__file__).resolve().parents[2]
HEAD = (
    "kernel k<COLS: int = 256, S: int = 2, B: int = 4>(X: f32[R, N], Y: f32[R, N])\n"
    "  grid(R * S) threads(64) {clause} target(sm_90a)\n"
)


def source(clause: str) -> str:
    return HEAD.format(clause=clause) + BODY


@pytest.mark.parametrize(
    ("clause", "message", "caret"),
    [
        ("blocks_per_sm(33)", "a static count from 0 to 32 (blocks of 64 threads", "^~"),
        ("blocks_per_sm(-1)", "a static count from 0 to 32", "^~"),
        (
            "blocks_per_sm(N)",
            "from 0 to 32 (blocks of 64 threads an SM holds), found a runtime",
            "^",
        ),
        ("blocks_per_sm(1, 2)", "takes one count", "^~~~~~~~~~~~~"),
        ("blocks_per_sm(B * 9)", "found 36", "^~~~~"),
        ("blocks(4)", "expected 'grid', 'threads', 'cluster', 'blocks_per_sm'", "^~~~~~"),
    ],
)
def test_bad_counts_are_located(tmp_path: Path, clause: str, message: str, caret: str) -> None:
    header, line, marks = diagnostics(tmp_path, source(clause))[0]
    assert message in header, header
    assert re.search(r"k\.tile:\d+:\d+: error:", header), header
    assert marks.strip() == caret, (line, marks)


def test_the_count_reaches_the_ptx_beside_a_cluster(tmp_path: Path) -> None:
    both = source("cluster(S) blocks_per_sm(B)")
    assert "tile.blocks_per_sm = 4 : i64" in compiled(tmp_path, both, "tile")
    ptx = compiled(tmp_path, both, "ptx")
    assert ".minnctapersm 4" in ptx and ".reqnctapercluster 2, 1, 1" in ptx, ptx[:2000]
    assert ".minnctapersm 7" in compiled(tmp_path, both, "ptx", B="7")
    for none in (source("cluster(S)"), source("cluster(S) blocks_per_sm(0)")):
        tile, ptx = compiled(tmp_path, none, "tile"), compiled(tmp_path, none, "ptx")
        assert "tile.blocks_per_sm" not in tile and "minnctapersm" not in ptx


def registers(ptx: str) -> int:
    out = subprocess.run(["ptxas", "-arch=sm_90", "-v", "-", "-o", "/dev/null"], input=ptx,
                         capture_output=True, text=True, check=True)  # fmt: skip
    return int(re.search(r"Used (\d+) registers", out.stderr).group(1))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
def test_ptxas_keeps_the_registers_under_the_count() -> None:
    ptx = {}
    for blocks in ("0", "5"):
        params = {"BN": "64", "BK": "32", "BLOCKS": blocks}
        ptx[blocks] = compile_tile(str(REPO / "examples/gemm_skinny.tile"), params, None).ptx
    assert registers(ptx["0"]) > 65536 // (5 * 128) >= registers(ptx["5"]), "no bound kept"

"""The compiler gives the same IR for the same source, run after run: each example below is
lowered in fresh processes (their memory laid out anew, so a table keyed by something that
varies between runs, e.g. an op's content hash, takes a different shape) and the `lowered`
stages must be identical. An op-keyed table that lost ops after they changed made
convert-tile-mma's output vary about one run in ten (test_tile_values.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAIN = "import sys; from tilec.cli import main; sys.exit(main(sys.argv[1:]))"


def lowered(example: str, arch: str) -> str:
    run = subprocess.run(
        [sys.executable, "-c", MAIN, "compile", str(ROOT / "examples" / example), "--arch", arch,
         "--emit", "lowered"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "tile.kernel" in run.stdout  # the lowered kernel, not nothing
    return run.stdout


@pytest.mark.parametrize(
    ("example", "arch"),
    [("gemm_sm80.tile", "sm_80"), ("gemm_sm90.tile", "sm_90a"), ("attention.tile", "sm_80")],
)
def test_lowering_is_the_same_every_run(example: str, arch: str) -> None:
    runs = {lowered(example, arch) for _ in range(3)}
    assert len(runs) == 1

"""Resource limits before work (issue 47): tiles too large for the machine are refused at once
with a located error naming the size and the limit, instead of a compile that runs for minutes.

The time bounds are hang guards (each case took 22 s to over 300 s before the checks), not
performance thresholds.
"""

import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tilec import targets
from tilec.frontend import check, parse_source, read_source
from tilec.frontend.limits import values_a_thread
from tilec.frontend.types import SCALAR_TYPES
from tilec.frontend.values import TensorV

REPO = Path(__file__).resolve().parents[2]
GUARD_S = 10.0  # far above the ~1 s a refused compile takes, far below the hangs

HUGE_LOAD = """\
kernel huge(x: f32[M, N], y: f32[M, N]) grid(1) threads(128) target(sm_80) {
  let a = load(local_tile(x, (65536, 65536), (0, 0)))
  store(a, local_tile(y, (65536, 65536), (0, 0)))
}
"""
HUGE_COPY = """\
kernel huge(y: f32[M, N]) grid(1) threads(128) target(sm_80) {
  let s = shared<f32>((65536, 65536):(0, 0))
  copy(s, local_tile(y, (65536, 65536), (0, 0)))
}
"""


def compile_timed(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "tilec.tools.tilec", "compile", *args],
        capture_output=True,
        text=True,
        timeout=120,  # a hang fails the test instead of holding the suite
        cwd=REPO,
    )
    return result, time.monotonic() - start


def refused(result: subprocess.CompletedProcess, elapsed: float, message: str) -> None:
    assert result.returncode == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert elapsed < GUARD_S, f"refused after {elapsed:.1f} s"


def test_a_register_tile_of_2_to_the_32_elements_is_refused_at_once(tmp_path: Path) -> None:
    src = tmp_path / "huge.tile"
    src.write_text(HUGE_LOAD)
    result, elapsed = compile_timed(str(src), "-o", str(tmp_path / "huge.ptx"))
    refused(
        result,
        elapsed,
        "huge.tile:2:11: error: register tile f32[(65536,65536)] holds 33554432 values a thread "
        "over 128 threads (134217728 bytes); a thread has at most 255 32-bit registers "
        "(1020 bytes)",
    )
    assert "  let a = load(local_tile(x, (65536, 65536), (0, 0)))\n          ^~~" in result.stderr


@pytest.mark.parametrize(
    "block, values", [(1048576, 4096), (65536, 256)], ids=["block-1048576", "block-65536"]
)
def test_vadd_with_a_block_too_large_for_registers_is_refused_at_once(
    tmp_path: Path, block: int, values: int
) -> None:
    result, elapsed = compile_timed(
        "examples/vadd.tile", "-D", f"BLOCK={block}", "--emit", "lowered", "-o", "/dev/null"
    )
    refused(
        result,
        elapsed,
        f"vadd.tile:8:11: error: register tile f32[({block})] holds {values} values a thread "
        f"over 256 threads ({values * 4} bytes)",
    )


def test_a_copy_out_of_a_broadcast_buffer_is_refused_at_once(tmp_path: Path) -> None:
    src = tmp_path / "copy.tile"
    src.write_text(HUGE_COPY)
    result, elapsed = compile_timed(str(src), "-o", str(tmp_path / "copy.ptx"))
    refused(
        result,
        elapsed,
        "copy.tile:3:3: error: copy of f32[(65536,65536)] moves 17179869184 bytes; a copy moves "
        "at most the shared memory of a block (166912 bytes on sm_80)",
    )


def test_the_register_rule_is_bytes_of_one_tensor_against_255_registers() -> None:
    assert targets.REGISTER_TILE_BYTES == 255 * 4
    assert targets.register_refusal("f32[(255)]", 4, 255, 1) is None
    assert targets.register_refusal("f16[(510)]", 2, 510, 1) is None
    why = targets.register_refusal("f16[(511)]", 2, 511, 1)
    assert why is not None and "holds 511 values a thread over 1 threads (1022 bytes)" in why


def largest_register_tensor(path: str, params: dict[str, str]) -> tuple[int, int]:
    """(bytes a thread, values a thread) of the largest register tensor of an example."""
    checked = check(parse_source(read_source(REPO / path), path), params)
    threads = math.prod(checked.kernels[0].threads)
    best = (0, 0)
    for v in checked.values.values():
        if isinstance(v, TensorV) and v.space == "register":
            counted = values_a_thread(v, threads)
            if counted is not None:
                best = max(best, (counted[0] * SCALAR_TYPES[v.elem][1], counted[0]))
    return best


@pytest.mark.parametrize(
    "path, params, values",
    [
        ("examples/gemm_sm90.tile", {"BN": "256"}, 128),  # wgmma accumulators, 128 f32
        ("examples/gemm_sm80.tile", {}, 128),
        ("examples/attention.tile", {}, 64),
    ],
)
def test_the_largest_examples_are_well_under_the_limit(
    path: str, params: dict[str, str], values: int
) -> None:
    nbytes, found = largest_register_tensor(path, params)
    assert (found, nbytes) == (values, 4 * values)  # f32 values
    assert nbytes < 0.6 * targets.REGISTER_TILE_BYTES  # room for the rest of the kernel

"""Each reduction combines with its own operation at every level (in a thread, across lanes
by shuffles, across warps through shared memory): the lowered kernel of a reduce_min holds
minima and no maxima, of a reduce_max maxima and no minima, of a reduce_sum additions only.
(A table entry mapping "min" to max compiled and passed every other CPU test.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from mlir import ir

from tilec import binding
from tilec.driver import CompileOptions, compile_file

# Row reductions of a (1, 1024) f32 row over 128 threads: in-thread, shuffles, shared memory.
KERNEL = """
kernel rows(X: f32[R, 1024], Y: f32[R, 1])
  grid(R) threads(128) target(sm_80)
{{
  let x = load(local_tile(X, (1, 1024), (block.x, 0)))
  store(reduce_{kind}(x, mode = 1), local_tile(Y, (1, 1), (block.x, 0)))
}}
"""
FAMILY = {
    "min": ("arith.minimumf", "arith.minnumf"),
    "max": ("arith.maximumf", "arith.maxnumf"),
    "sum": ("arith.addf",),
}


def combines(kind: str, tmp: Path) -> Counter[str]:
    src = tmp / f"rows_{kind}.tile"
    src.write_text(KERNEL.format(kind=kind))
    module = compile_file(str(src), CompileOptions(emit="lowered")).value
    seen: Counter[str] = Counter()
    wanted = {name for names in FAMILY.values() for name in names}
    binding.walk(module.operation, lambda op: seen.update([op.name]) if op.name in wanted else None)
    shuffles: list[ir.Operation] = []
    binding.walk(
        module.operation, lambda op: shuffles.append(op) if op.name == "gpu.shuffle" else None
    )
    seen["gpu.shuffle"] = len(shuffles)
    return seen


@pytest.mark.parametrize("kind", sorted(FAMILY))
def test_a_reduction_combines_with_its_own_op(kind: str, tmp_path: Path) -> None:
    seen = combines(kind, tmp_path)
    own = sum(seen[name] for name in FAMILY[kind])
    others = {n: seen[n] for k, names in FAMILY.items() if k != kind for n in names if seen[n]}
    # 1024 / 128 = 8 values a thread (7 combines), 5 shuffles (5 combines), 4 warps (3)
    assert seen["gpu.shuffle"] == 5
    assert own >= 7 + 5 + 3, seen
    assert others == {}, seen

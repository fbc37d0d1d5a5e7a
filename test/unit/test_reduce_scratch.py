"""Cross-warp reductions through shared scratch, checked per thread on the gpu stage: each
thread reads exactly the slots the threads of its group (those that differ from it in warp
bits only) wrote; and inside a loop a barrier separates one iteration's reads of the scratch
from the next iteration's writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlir import ir
from test_shared_extent import shared_base

from tilec import binding
from tilec.banks import Evaluator
from tilec.driver import CompileOptions, compile_file

REPO = Path(__file__).resolve().parents[2]
WORD = 4  # f32 slots

KERNEL = """
kernel rows(X: f32[R, 1024], Y: f32[R, 1])
  grid(R) threads({threads}) target(sm_80)
{{
  let x = load(local_tile(X, (1, 1024), (block.x, 0)))
  store(reduce_max(x, mode = 1), local_tile(Y, (1, 1), (block.x, 0)))
}}
"""


def gpu(path: Path) -> ir.Module:
    return compile_file(str(path), CompileOptions(emit="gpu")).value


def scratch_ops(module: ir.Operation) -> list[ir.Operation]:
    """Loads and stores of the reductions' scratch, and barriers, in program order."""
    ops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> None:
        if op.name == "gpu.barrier":
            ops.append(op)
        elif op.name in ("llvm.load", "llvm.store"):
            ptr = op.operands[1] if op.name == "llvm.store" else op.operands[0]
            base = shared_base(ptr)
            if base is not None and base.startswith("__reduce_"):
                ops.append(op)

    binding.walk(module, visit)
    return ops


@pytest.mark.parametrize("threads", [64, 128, 256])  # 16-byte loads: 256 cover the row
def test_each_thread_reads_its_groups_slots(threads: int, tmp_path: Path) -> None:
    src = tmp_path / "rows.tile"
    src.write_text(KERNEL.format(threads=threads))
    module = gpu(src)  # kept alive while its ops are read
    ops = [op for op in scratch_ops(module.operation) if op.name != "gpu.barrier"]
    stores = [op for op in ops if op.name == "llvm.store"]
    loads = [op for op in ops if op.name == "llvm.load"]
    assert stores and loads
    warps = threads // 32
    slot_of: dict[int, int] = {}  # slot -> the thread that wrote it
    for t in range(threads):
        ev = Evaluator((t, 0, 0), {})
        for op in stores:
            slot = ev.value(op.operands[1]) // WORD
            assert slot not in slot_of, (t, slot)
            slot_of[slot] = t
    for t in range(threads):
        ev = Evaluator((t, 0, 0), {})
        read = {slot_of[ev.value(op.operands[0]) // WORD] for op in loads}
        # the whole row is one group: the same lane in every warp
        assert read == {t % 32 + 32 * w for w in range(warps)}, (t, sorted(read))


def events(loop: ir.Operation) -> str:
    """The loop body's scratch accesses as a string: W store, R load, B barrier."""
    code = {"llvm.store": "W", "llvm.load": "R", "gpu.barrier": "B"}
    return "".join(code[op.name] for op in scratch_ops(loop))


def test_a_loop_separates_reads_from_the_next_writes() -> None:
    """examples/softmax.tile reduces inside its loop over the row's chunks: going round the
    loop from each read of the scratch to the next write, a barrier comes first."""
    module = gpu(REPO / "examples" / "softmax.tile")
    loops: list[ir.Operation] = []
    binding.walk(module.operation, lambda op: loops.append(op) if op.name == "scf.for" else None)
    checked = 0
    for loop in loops:
        seq = events(loop)
        if "R" not in seq or "W" not in seq:
            continue
        twice = seq + seq  # the body, then the next iteration's
        for i, e in enumerate(seq):
            if e != "R":
                continue
            following = twice[i + 1 :]
            next_write = following.find("W")
            assert "B" in following[:next_write], (seq, i)
        checked += 1
    assert checked >= 1

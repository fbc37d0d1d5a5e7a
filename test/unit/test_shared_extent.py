"""Shared buffers with negative strides: every access of the GPU tier's kernels
(test/gpu/negative_stride.tile) stays inside its buffer, for every thread of the block."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from mlir import ir

from tilec import binding
from tilec.bank_ops import type_bytes
from tilec.banks import Evaluator
from tilec.driver import CompileOptions, compile_file

SOURCE = Path(__file__).resolve().parents[2] / "test" / "gpu" / "negative_stride.tile"
BUFFER = 64 * 64 * 4  # every buffer of the file holds 64 x 64 f32
THREADS = 256


def shared_base(v: ir.Value) -> str | None:
    """The shared buffer a pointer is cut from (through getelementptrs), None for global."""
    op = v.owner
    while isinstance(op, ir.Operation | ir.OpView) and op.name == "llvm.getelementptr":
        op = op.operands[0].owner
    if isinstance(op, ir.Operation | ir.OpView) and op.name == "llvm.mlir.addressof":
        return ir.FlatSymbolRefAttr(op.attributes["global_name"]).value
    return None


def test_every_shared_access_stays_in_its_buffer() -> None:
    gpu = compile_file(str(SOURCE), CompileOptions(emit="gpu")).value
    ops: list[ir.Operation] = []
    binding.walk(gpu.operation, lambda o: ops.append(o) if o.name.startswith("llvm.") else None)
    sizes = [str(o.attributes["global_type"]) for o in ops if o.name == "llvm.mlir.global"]
    assert sizes == ["!llvm.array<4096 x f32>"] * 4  # s of each kernel, and flip_rows' guard
    accesses = 0
    for op in ops:
        if op.name not in ("llvm.load", "llvm.store"):
            continue
        store = op.name == "llvm.store"
        pointer = op.operands[1] if store else op.operands[0]
        if shared_base(pointer) is None:
            continue
        width = type_bytes(op.operands[0].type if store else op.results[0].type)
        touched: Counter[int] = Counter()
        for t in range(THREADS):  # the evaluator puts each buffer's start at 0
            start = Evaluator((t, 0, 0), {}).value(pointer)
            touched.update(range(start, start + width))
        assert 0 <= min(touched) and max(touched) < BUFFER, (op, min(touched), max(touched))
        assert max(touched.values()) == 1, op  # one thread per byte: a bijection onto the tile
        accesses += 1
    assert accesses >= 12  # stores into s, the transposed and the raw reads, in 3 kernels

"""The bank report's all-threads evaluator against the per-thread one it replaces."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlir import ir

from tilec import banks
from tilec.bank_lanes import Fallback
from tilec.context import make_context

ROOT = Path(__file__).resolve().parents[2]
CHECK = settings(max_examples=200, deadline=None, derandomize=True)


def kernels(module: ir.Module) -> list[ir.Operation]:
    body = module.body.operations[0].regions[0].blocks[0]
    return [op.operation for op in body.operations if op.operation.name == "gpu.func"]


def both_ways(text: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[banks.Access, ...]]:
    """Each access analysed all threads at once, and thread by thread (no `BlockLanes`)."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        fast = banks.shared_accesses(module)
        with monkeypatch.context() as m:
            m.setattr(banks, "block_lanes", lambda kernel: None)
            slow = banks.shared_accesses(module)
    return list(zip(fast, slow, strict=True))


def same(fast: banks.Access, slow: banks.Access) -> bool:
    return (fast.conflict, fast.warp, fast.unknown) == (slow.conflict, slow.warp, slow.unknown)


def test_lit_cases_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = both_ways((ROOT / "test" / "banks" / "cases.gpu.mlir").read_text(), monkeypatch)
    assert len(pairs) > 10
    assert all(same(f, s) for f, s in pairs)
    assert any(f.conflict is not None and f.conflict.degree == 32 for f, _ in pairs)
    assert any(f.unknown for f, _ in pairs)


KERNEL = """
gpu.module @m {
  llvm.mlir.global internal @smem() {addr_space = 3 : i32, alignment = 16 : i64}
    : !llvm.array<2048 x f32>
  gpu.func @k() kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %base = llvm.mlir.addressof @smem : !llvm.ptr<3>
    %t = gpu.thread_id x
    %c15 = arith.constant 15 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %low = arith.cmpi ult, %t, %c16 : index
    %twice = arith.addi %t, %t : index
    %d = arith.subi %t, %c15 : index
    %q = arith.divui %c64, %d : index
    %sel = arith.select %low, %twice, %q : index
    %i = arith.index_cast %sel : index to i64
    %p = llvm.getelementptr %base[%i] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    %v = llvm.load %p : !llvm.ptr<3> -> f32
    %big = arith.constant BIG : index
    %far = arith.muli %t, %big : index
    %j = arith.index_cast %far : index to i64
    %r = llvm.getelementptr %base[%j] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    %w = llvm.load %r : !llvm.ptr<3> -> f32
    %k = arith.index_cast %twice : index to i64
    %s = llvm.getelementptr %base[%k] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    %x = llvm.load %s : !llvm.ptr<3> -> f32
    gpu.return
  }
}
"""


@pytest.mark.parametrize("big", [33, 2**50])
def test_lanes_that_differ_step_aside_and_agree(big: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lane 15 takes the select's first way, so only the all-lanes evaluation divides by zero
    # there; 2**50 * t does not fit int64 lanes exactly. Both fall back, and agree.
    pairs = both_ways(KERNEL.replace("BIG", str(big)), monkeypatch)
    assert len(pairs) == 3
    assert all(same(f, s) for f, s in pairs)
    assert all(f.conflict is not None for f, _ in pairs)
    assert pairs[2][0].conflict.degree == 2  # 8-byte steps of 4-byte words: lanes 0 and 16


def test_addresses_raise_fallback_on_a_lane_only_division_by_zero() -> None:
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(KERNEL.replace("BIG", "33"))
        kernel = kernels(module)[0]
        loads: list[ir.Operation] = []
        banks.binding.walk(kernel, lambda op: loads.append(op) if op.name == "llvm.load" else None)
        lanes = banks.block_lanes(kernel)
        with pytest.raises(Fallback, match="division by zero"):
            lanes.addresses(loads[0].operands[0], {})
        got = lanes.addresses(loads[1].operands[0], {}).tolist()
        assert got == [4 * 33 * t for t in range(64)]
        want = [banks.Evaluator((t, 0, 0), {}).value(loads[2].operands[0]) for t in range(64)]
        assert (
            lanes.addresses(loads[2].operands[0], {}).tolist() == want == [8 * t for t in range(64)]
        )


@CHECK
@given(
    st.lists(st.integers(0, 4096), min_size=32, max_size=32),
    st.sampled_from([1, 2, 4, 8, 16]),
    st.integers(-8, 8),
)
def test_warp_conflict_is_bank_conflict(addresses: list[int], width: int, blocks: int) -> None:
    moved = [a + 128 * blocks for a in addresses]
    assert banks.warp_conflict(moved, width) == banks.bank_conflict(addresses, width)
    assert banks.warp_conflict(addresses, width) == banks.bank_conflict(moved, width)


def deep_kernel(links: int) -> str:
    chain = "\n".join(f"    %a{i + 1} = arith.addi %a{i}, %c4 : index" for i in range(links))
    return f"""
gpu.module @m {{
  llvm.mlir.global internal @smem() {{addr_space = 3 : i32, alignment = 16 : i64}}
    : !llvm.array<2048 x f32>
  gpu.func @k() kernel attributes {{known_block_size = array<i32: 32, 1, 1>}} {{
    %base = llvm.mlir.addressof @smem : !llvm.ptr<3>
    %a0 = gpu.thread_id x
    %c4 = arith.constant 4 : index
{chain}
    %i = arith.index_cast %a{links} : index to i64
    %p = llvm.getelementptr %base[%i] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, f32
    %v = llvm.load %p : !llvm.ptr<3> -> f32
    gpu.return
  }}
}}
"""


@pytest.mark.parametrize(("links", "unknown"), [(150, False), (300, True)])
def test_deep_chains_agree(links: int, unknown: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Past MAX_DEPTH the per-thread evaluator gives up; the all-threads one hands such an
    # expression to it rather than answering where it would not.
    [(fast, slow)] = both_ways(deep_kernel(links), monkeypatch)
    assert same(fast, slow)
    assert bool(fast.unknown) == unknown
    if unknown:
        assert "deeper than the analysis follows" in fast.unknown
    else:
        assert fast.conflict == banks.Conflict(1, 0, 0, (8,))  # word t + 600: bank 0 is lane 8

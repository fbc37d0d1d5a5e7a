"""A deferred epilogue load (passes/tile_epilogue.py) is computed where its store is, so it may
not move past an op that writes memory or orders threads. Since convert-tile-copies runs
before convert-tile-to-gpu, a copy between the load and the store is already lowered when the
deferral is decided: its stores, cp.async, barriers and predicated-store asm must still count
as ordered, and the register reads tile_remat emits as `mov.` asm must not."""

from __future__ import annotations

import pytest
from mlir import ir

from tilec.context import make_context
from tilec.passes.tile_epilogue import ordered

ORDERED_OPS = [
    "llvm.store %v, %p : f32, !llvm.ptr<1>",
    "gpu.barrier",
    "nvvm.cp.async.commit.group",
    'llvm.inline_asm has_side_effects "@$2 st.global.b32 [$0], $1;", "l,r,b" %p, %i, %b'
    " : (!llvm.ptr<1>, i32, i1) -> ()",
    "scf.if %b { scf.yield }",
    '"tile.barrier"() : () -> ()',
]
FREE_OPS = [
    "llvm.load %p : !llvm.ptr<1> -> f32",
    'llvm.inline_asm has_side_effects "mov.u32 $0, %ctaid.x;", "=r"  : () -> i32',
    "arith.addi %i, %i : i32",
]


def last_op(text: str) -> ir.Operation:
    module = ir.Module.parse(
        "func.func @f(%p: !llvm.ptr<1>, %v: f32, %i: i32, %b: i1) {\n" + text + "\nreturn\n}"
    )
    func = module.body.operations[0]
    ops = list(func.regions[0].blocks[0].operations)
    return ops[-2].operation


@pytest.mark.parametrize("text", ORDERED_OPS)
def test_what_writes_memory_or_orders_threads_stops_a_deferred_load(text: str) -> None:
    with make_context(allow_unregistered=True), ir.Location.unknown():
        assert ordered(last_op(text))


@pytest.mark.parametrize("text", FREE_OPS)
def test_reads_and_arithmetic_do_not(text: str) -> None:
    with make_context(allow_unregistered=True), ir.Location.unknown():
        assert not ordered(last_op(text))

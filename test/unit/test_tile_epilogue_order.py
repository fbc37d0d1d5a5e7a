"""A deferred epilogue load (lowering/tile_epilogue.py) is computed where its store is, so it may
not move past an op that writes memory or orders threads. tile-distribute decides it once, on
the tile ops, before any rung lowers one, and marks the load and the elementwise ops on its way
to the store `tile.deferred`: a store, copy, barrier, cp.async wait, reduction or anything
holding a region between them keeps the load where it is; reads and arithmetic do not."""

from __future__ import annotations

import pytest
from mlir import ir

from tilec.context import make_context
from tilec.lowering.tile_epilogue import DEFERRED, mark_deferred, ordered

FRAG = '!tile.tensor<f32, "register", "(4,2,4):(1,4,8)">'
VIEW = '!tile.tensor<f32, "global", "(64,64):(?,1)">'
SHARED = '!tile.tensor<f32, "shared", "(64,64):(64,1)">'
MMA = '!tile.mma<"sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)">'

ORDERED_OPS = [
    f'"tile.store"(%acc, %c) : ({FRAG}, {VIEW}) -> ()',
    f'"tile.copy"(%c, %s) {{atom = "auto"}} : ({VIEW}, {SHARED}) -> ()',
    '"tile.barrier"() : () -> ()',
    '"tile.async_wait"() {pending = 0 : i64} : () -> ()',
    "scf.if %b { scf.yield }",
    "llvm.store %v, %p : f32, !llvm.ptr<1>",
    "gpu.barrier",
    'llvm.inline_asm has_side_effects "@$2 st.global.b32 [$0], $1;", "l,r,b" %p, %i, %b'
    " : (!llvm.ptr<1>, i32, i1) -> ()",
]
FREE_OPS = [
    f'"tile.load"(%c) {{other = 0.0 : f32}} : ({VIEW}) -> {FRAG}',
    "llvm.load %p : !llvm.ptr<1> -> f32",
    "arith.addi %i, %i : i32",
]


def kernel(between: str) -> ir.Module:
    """An epilogue: c loaded like the accumulator, added to it and stored, `between` (one op)
    between the load and the add (the module; its func is the first op)."""
    module = ir.Module.parse(
        f"func.func @f(%p: !llvm.ptr<1>, %v: f32, %i: i32, %b: i1, %c: {VIEW}, %s: {SHARED})"
        " attributes {tile.kernel, tile.threads = array<i64: 128, 1, 1>} {\n"
        f'  %m = "tile.tiled_mma"() : () -> {MMA}\n'
        f'  %acc = "tile.fragment"(%m) {{block_shape = array<i64: 64, 64>}} : ({MMA}) -> {FRAG}\n'
        f'  %x = "tile.load"(%c, %acc) {{other = 0.0 : f32}} : ({VIEW}, {FRAG}) -> {FRAG}\n'
        f"  {between}\n"
        f'  %y = "tile.binary"(%acc, %x) {{op = "add"}} : ({FRAG}, {FRAG}) -> {FRAG}\n'
        f'  "tile.store"(%y, %c) : ({FRAG}, {VIEW}) -> ()\n'
        "  return\n}"
    )
    return module


def ops_of(module: ir.Module) -> list[ir.Operation]:
    func = module.body.operations[0]
    return [op.operation for op in func.regions[0].blocks[0].operations]


def marked(module: ir.Module) -> list[str]:
    mark_deferred(module.body.operations[0])
    ops = ops_of(module)
    return [op.name for op in ops if DEFERRED in op.attributes]


@pytest.mark.parametrize("text", ORDERED_OPS)
def test_what_writes_memory_or_orders_threads_keeps_the_load_in_place(text: str) -> None:
    with make_context(allow_unregistered=True), ir.Location.unknown():
        module = kernel(text)
        assert ordered(ops_of(module)[3])
        assert marked(module) == []


@pytest.mark.parametrize("text", FREE_OPS)
def test_reads_and_arithmetic_do_not(text: str) -> None:
    with make_context(allow_unregistered=True), ir.Location.unknown():
        assert marked(kernel(text)) == ["tile.load", "tile.binary"]


def test_a_value_used_twice_is_not_deferred() -> None:
    """The loaded value also read by another op: computed chunk by chunk at the store, the other
    reader would have nothing to read."""
    with make_context(allow_unregistered=True), ir.Location.unknown():
        again = f'%z = "tile.unary"(%x) {{op = "exp"}} : ({FRAG}) -> {FRAG}'
        assert marked(kernel(again)) == []

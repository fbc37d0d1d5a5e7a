"""Shared memory for the lowered stage: a buffer's extent by the algebra, the addrspace-3
globals that hold buffers (and the reductions' and clusters' scratch), and a `tile.alloc_shared`
buffer's view on its global (`convert-tile-views`; the planner is compiler/smem.py)."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm

from tilec import smem
from tilec.dialects.layout import algebra as A
from tilec.lowering import LoweringError
from tilec.lowering.tile_views import SHARED_SPACE, View, elem_bytes, modes, tensor_type


def buffer_extent(op: ir.Operation, layout: A.Layout | A.ComposedLayout) -> tuple[int, int]:
    """(floor, elements) of a shared buffer laid out by `layout`: it holds the offsets from
    floor (0, or below 0 where a stride is negative) to the largest, from the algebra
    (`smem.extent`, the planner's: a swizzle only moves offsets inside its aligned block)."""
    try:
        return smem.extent(layout)
    except A.LayoutError as exc:
        raise LoweringError(op, exc.message) from None


def global_names(module: ir.Operation) -> set[str]:
    """The symbols of the `llvm.mlir.global`s at the top of `module`."""
    return {
        ir.StringAttr(o.attributes["sym_name"]).value
        for o in module.regions[0].blocks[0].operations
        if o.operation.name == "llvm.mlir.global"
    }


def shared_global(module: ir.Operation, name: str, elem: ir.Type, count: int) -> str:
    """An addrspace-3 `llvm.mlir.global` of `count` elements (16-byte aligned); its symbol."""
    body = module.regions[0].blocks[0]
    taken = global_names(module)
    symbol, n = name, 0
    while symbol in taken:
        n += 1
        symbol = f"{name}_{n}"
    with ir.InsertionPoint.at_block_begin(body):
        llvm.GlobalOp(
            ir.Type.parse(f"!llvm.array<{count} x {elem}>"),
            symbol,
            ir.Attribute.parse("#llvm.linkage<internal>"),
            alignment=16,
            addr_space=SHARED_SPACE,
        )
    return symbol


def shared_pointer(symbol: str) -> ir.Value:
    return llvm.AddressOfOp(ir.Type.parse(f"!llvm.ptr<{SHARED_SPACE}>"), symbol).result


def alloc_shared(
    op: ir.Operation, module: ir.Operation, kernel: str, buffers: dict[str, tuple[str, int]]
) -> View:
    """A shared buffer's view on a new addrspace-3 global, or on the global of the buffer it
    reuses (`reuse = other`) when that one holds it. `buffers` maps the kernel's buffers by
    name to (symbol, bytes); this one is added. The view's offset starts -floor elements into
    the buffer, so a negative stride's offsets land inside it: (64,64):(-64,1) is based 4032
    elements in, and its row 63 is the buffer's first."""
    t = tensor_type(op.results[0].type)
    sizes, strides = modes(t.layout)
    floor, span = buffer_extent(op, t.layout)  # static, and at most a swizzle composed
    name = ir.StringAttr(op.attributes["name"]).value
    nbytes = span * elem_bytes(t.elem)
    reused = (
        buffers.get(ir.StringAttr(op.attributes["reuse"]).value)
        if "reuse" in op.attributes
        else None
    )
    if reused is not None and smem.aliased(smem.Buffer(name, nbytes), smem.Buffer("", reused[1])):
        symbol = reused[0]  # all of the other's stages count
    else:
        symbol = shared_global(module, f"__smem_{kernel}_{name}", t.elem, span)
    buffers[name] = (symbol, nbytes)
    swizzle, offset = None, -floor
    if isinstance(t.layout, A.ComposedLayout):  # floor is a multiple of the swizzle's period
        swizzle, offset = t.layout.outer, t.layout.offset - floor
    ptr = shared_pointer(symbol)
    return View(t.elem, "shared", ptr, offset, sizes, strides, swizzle, [], span)

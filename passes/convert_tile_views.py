"""Passes: `convert-tile-views`, tile views become pointer + index math in the IR.

The first rung of the SM80 lowering. Each view op (`make_tensor`, `local_tile`, `slice`,
`permute`, `prepend`, `append`, `alloc_shared`) becomes its base pointer and index arithmetic at
its place, and its result a `builtin.unrealized_conversion_cast` of them to its tensor type
whose `tile.view` attribute names each part (lowering/tile_values.py); `size` becomes the
extent, the special ids (`block_id`, `thread_id`, `grid_dim`) become gpu's. convert-tile-to-gpu
then reads each view from its cast. A slice's cast also keeps the view it was cut from and its
coordinates (`cut`): a prefetching gemm reads the other stages of the buffer its operand is a
stage of.

    %c = "tile.make_tensor"(%arg2, %m, %n) : (...) -> !tile.tensor<f32, "global", "(?,?):(?,1)">
    %t = "tile.local_tile"(%c, %bm, %bn) {coord = "(?,?)", tile = array<i64: 128, 128>} : ...
  →
    %p = llvm.addrspacecast %arg2 : !llvm.ptr to !llvm.ptr<1>
    %o = arith.muli ... ; %r = arith.shli %bm, %c7 ...
    %c = builtin.unrealized_conversion_cast %p, %m, %n : ... to !tile.tensor<...>
            {tile.view = {bounds = "[[0,\"%1\",0,null],[0,\"%2\",1,null]]", ...}}
    %t = builtin.unrealized_conversion_cast %p, %o, %n, %r, %m, ... {tile.view = {...}}

Past the loop that holds a GEMM the view ops' integer operands are computed again in front of
them (tile_remat.Epilogue), the thread index read afresh where the epilogue starts.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, llvm

from tilec.lowering import DIMS, ID_OPS, IndexBuilder, LoweringError, tile_shared, tile_views
from tilec.lowering.tile_access import if_else
from tilec.lowering.tile_refusals import VIEW_OPS
from tilec.lowering.tile_rungs import Rung, lower_kernel
from tilec.lowering.tile_views import View
from tilec.passes.base import Pass, register


class Views(Rung):
    """The views of one kernel, lowered in program order."""

    def __init__(self, func: ir.Operation, module: ir.Operation) -> None:
        super().__init__(func, module)
        self.buffers: dict[str, tuple[str, int]] = {}  # shared buffers: name -> (symbol, bytes)

    def lower(self, op: ir.Operation) -> None:
        self.enter(op)
        b = IndexBuilder()
        name = op.name
        if name in ID_OPS:
            dim = DIMS[ir.IntegerAttr(op.attributes["dim"]).value]
            op.results[0].replace_all_uses_with(ID_OPS[name](dim).result)
            return
        if name == "tile.size":
            view = self.view(op, op.operands[0])
            extent = view.shape[ir.IntegerAttr(op.attributes["mode"]).value]
            op.results[0].replace_all_uses_with(b.value(extent))
            return
        if name == "tile.read":
            element = read(op, self.view(op, op.operands[0]), b)
            op.results[0].replace_all_uses_with(element)
            return
        view = LOWERINGS[name](self, op, b)
        cut = None
        if name == "tile.slice":
            cut = (op.operands[0], tile_views.slice_coords(op, self.view(op, op.operands[0])))
        self.values.put(op, op.results[0], view, cut)

    def make_tensor(self, op: ir.Operation, b: IndexBuilder) -> View:
        ptr = llvm.AddrSpaceCastOp(ir.Type.parse("!llvm.ptr<1>"), op.operands[0]).result
        return tile_views.make_tensor(op, ptr)

    def local_tile(self, op: ir.Operation, b: IndexBuilder) -> View:
        return tile_views.local_tile(op, self.view(op, op.operands[0]), b)

    def slice(self, op: ir.Operation, b: IndexBuilder) -> View:
        return tile_views.slice_view(op, self.view(op, op.operands[0]), b)

    def window(self, op: ir.Operation, b: IndexBuilder) -> View:
        return tile_views.window(op, self.view(op, op.operands[0]), b)

    def permute(self, op: ir.Operation, b: IndexBuilder) -> View:
        return tile_views.permute(op, self.view(op, op.operands[0]))

    def alloc_shared(self, op: ir.Operation, b: IndexBuilder) -> View:
        return tile_shared.alloc_shared(op, self.module, self.name, self.buffers)

    def prepend(self, op: ir.Operation, b: IndexBuilder) -> View:
        return tile_views.add_mode(op, self.view(op, op.operands[0]))

    append = prepend  # the op's name says where the mode goes


LOWERINGS: dict[str, Callable[[Views, ir.Operation, IndexBuilder], View]] = {
    f"tile.{name}": getattr(Views, name)
    for name in (
        "make_tensor",
        "local_tile",
        "slice",
        "window",
        "permute",
        "prepend",
        "append",
        "alloc_shared",
    )
}
assert set(VIEW_OPS) == {
    *ID_OPS,
    "tile.size",
    "tile.read",
    *LOWERINGS,
}  # what convert-tile-to-gpu refuses


def read(op: ir.Operation, view: View, b: IndexBuilder) -> ir.Value:
    """`tile.read`: the element at the op's coordinate (every mode fixed) of a global integer
    tensor, as an index; 0 where the coordinate lies outside the tensor, below 0 included (a
    branch: the address may not be read there)."""
    if view.space != "global" or not isinstance(view.elem, ir.IntegerType):
        raise LoweringError(
            op,
            f"read takes an element of a global integer tensor, not of a "
            f"{view.space} tensor of {view.elem}",
        )
    coord = ir.StringAttr(op.attributes["coord"]).value
    items = tile_views.parse_coord(op, coord, len(view.shape))
    if "_" in items:
        raise LoweringError(op, f"read fixes every mode; '{coord}' keeps one")
    coords = tile_views.coord_terms(op, items, list(op.operands)[1:])

    def load() -> list[ir.Value]:
        return [llvm.LoadOp(view.elem, tile_views.element_address(view, coords, b)).result]

    zero = arith.ConstantOp(view.elem, 0).result
    # unsigned: a coordinate below 0 (block.z - 1 at block 0) is outside too
    inside = tile_views.all_of(
        [b.cmp("ult", tile_views.position(x, coords, b), x.extent) for x in view.bounds]
    )
    (element,) = if_else(inside, [view.elem], load, lambda: [zero])
    return arith.IndexCastOp(ir.IndexType.get(), element).result


@register
class ConvertTileViews(Pass):
    """Lower tile views to pointers + index math, each kept as a cast to its tensor type.

    See the module's docstring; convert-tile-to-gpu reads the casts and erases them.
    """

    name = "convert-tile-views"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lambda func: lower_views(func, module))


def lower_views(func: ir.Operation, module: ir.Operation) -> None:
    """Lower one kernel's views in place (a LoweringError says why it cannot be)."""
    lower_kernel(func, lambda op: op.name in VIEW_OPS, lambda: Views(func, module).lower)

"""copy<tma>: a global tile into one stage of a shared buffer with cp.async.bulk.tensor.

The kernel takes one tensor map per TMA-loaded tensor as an extra trailing `!llvm.ptr`
argument (the runtime encodes it at launch, `cuTensorMapEncodeTiled`, and passes its device
address); the function's `tile.tma` attribute describes each map for the manifest: the tensor
it covers, the box (the tile's shape, outermost first) and the swizzle, which this module reads
off the shared layout and checks against what TMA and wgmma can do together.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm, nvvm

from tilec.dialects.layout import algebra as A
from tilec.passes.convert_layout_to_arith import IndexBuilder, Term
from tilec.passes.tile_views import LoweringError, TensorType, elem_bytes

SWIZZLE_BYTES = {1: 32, 2: 64, 3: 128}  # a swizzle's bits -> the TMA/wgmma swizzle mode


@dataclass(frozen=True)
class SwizzledRows:
    """A shared tile of `rows` rows of `cols` contiguous elements, each row one swizzle width
    (`swizzle` bytes: 32, 64 or 128) as TMA writes it and a K-major wgmma operand reads it."""

    rows: int
    cols: int
    elem_bytes: int
    swizzle: int

    @property
    def bytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    @property
    def row_bytes(self) -> int:
        return self.cols * self.elem_bytes


def swizzled_rows(op: ir.Operation, t: TensorType) -> SwizzledRows:
    """The shared layout `t` as TMA rows, or a located error naming the form it must have:
    `Sw<B,M,3> o (R,C):(C,1)` with C elements = 16·2^B bytes per row, M = log2(16 / element
    bytes), R a multiple of 8 (the swizzle's period)."""
    eb = elem_bytes(t.elem)
    lay = t.layout
    want = (
        "a TMA destination must be a swizzled row-major tile, Sw<B,M,3> o (R,C):(C,1) with "
        f"C·{eb} = 32, 64 or 128 bytes (e.g. tile_to_shape(swizzle<3,{4 - eb.bit_length() + 1},"
        f"3> o (8,{128 // eb}):({128 // eb},1), (R,{128 // eb}))), got {lay}"
    )
    if not isinstance(lay, A.ComposedLayout) or lay.offset != 0:
        raise LoweringError(op, want)
    sw, inner = lay.outer, lay.inner
    if not isinstance(sw, A.Swizzle) or not A.is_tuple(inner.shape) or len(inner.shape) != 2:
        raise LoweringError(op, want)
    (rows, cols), (row_stride, col_stride) = inner.shape, inner.stride
    if not all(isinstance(x, int) for x in (rows, cols, row_stride, col_stride)):
        raise LoweringError(op, want)
    if sw.bits not in SWIZZLE_BYTES or 16 % eb or (1 << sw.base) * eb != 16 or sw.shift != 3:
        raise LoweringError(op, want)
    if col_stride != 1 or row_stride != cols or cols * eb != SWIZZLE_BYTES[sw.bits]:
        raise LoweringError(op, want)
    if rows % 8 or rows > 256:
        raise LoweringError(op, f"{want} (R a multiple of 8 up to 256)")
    return SwizzledRows(rows, cols, eb, SWIZZLE_BYTES[sw.bits])


def add_descriptor_argument(func: ir.Operation) -> ir.Value:
    """A new trailing `!llvm.ptr` argument of `func` (a tensor map's device address)."""
    ptr = ir.Type.parse("!llvm.ptr")
    entry = func.regions[0].blocks[0]
    arg = entry.add_argument(ptr, func.location)
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    func.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([*ftype.inputs, ptr], list(ftype.results))
    )
    return arg


def describe(
    name: str, tensor: str, box: list[int], swizzle: int, optional: bool = False
) -> ir.Attribute:
    """One entry of a kernel's `tile.tma` attribute (`optional`: the runtime passes a null
    pointer where the tensor's strides do not allow the map, and the kernel checks)."""
    entries = {
        "name": ir.StringAttr.get(name),
        "tensor": ir.StringAttr.get(tensor),
        "box": ir.DenseI64ArrayAttr.get(box),
        "swizzle": ir.StringAttr.get(f"{swizzle}B"),
    }
    if optional:
        entries["optional"] = ir.UnitAttr.get()
    return ir.DictAttr.get(entries)


def load(
    descriptor: ir.Value, dst: ir.Value, coords: list[Term], barrier: ir.Value, b: IndexBuilder
) -> None:
    """cp.async.bulk.tensor of the box at `coords` (elements, innermost first) into `dst`,
    completing (bytes) on `barrier`."""
    i32 = ir.IntegerType.get_signless(32)
    at = [arith.IndexCastOp(i32, b.value(c)).result for c in coords]
    cluster = llvm.AddrSpaceCastOp(ir.Type.parse("!llvm.ptr<7>"), dst).result
    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(cluster, descriptor, at, barrier, [])

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
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.tile_views import TensorType, elem_bytes

SWIZZLE_BYTES = {1: 32, 2: 64, 3: 128}  # a swizzle's bits -> the TMA/wgmma swizzle mode


@dataclass(frozen=True)
class SwizzledRows:
    """A shared operand tile of `rows` (M or N) × `cols` (K) elements as TMA writes it and
    wgmma reads it, in rows of one swizzle width (`swizzle` bytes: 32, 64 or 128).

    K-major: each of the `rows` rows holds the tile's K elements. MN-major (`mn_major`): the
    tile is `rows / width` chunks side by side along M (N), each `cols` rows of `width`
    contiguous M (N) elements, one TMA box per chunk."""

    rows: int
    cols: int
    elem_bytes: int
    swizzle: int
    mn_major: bool = False

    @property
    def bytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    @property
    def width(self) -> int:
        """Elements in one swizzle row."""
        return self.swizzle // self.elem_bytes

    @property
    def chunks(self) -> int:
        return self.rows // self.width if self.mn_major else 1

    @property
    def chunk_bytes(self) -> int:
        return self.bytes // self.chunks

    def mn_offset(self, elems: int) -> int:
        """Bytes from the tile's start to its M (N) element `elems` (a multiple of 8, or of
        the width for an MN-major tile)."""
        if self.mn_major:
            assert elems % self.width == 0, "MN-major offsets step whole chunks"
            return elems // self.width * self.chunk_bytes
        return elems * self.cols * self.elem_bytes

    def k_offset(self, elems: int) -> int:
        """Bytes from the tile's start to its K element `elems` (a multiple of 8)."""
        return elems * (self.swizzle if self.mn_major else self.elem_bytes)


def swizzled_rows(op: ir.Operation, t: TensorType) -> SwizzledRows:
    """The shared layout `t` as TMA rows, or a located error naming the forms it may have:
    K-major `Sw<B,M,3> o (R,C):(C,1)` with C elements = 16·2^B bytes per row, or MN-major
    `Sw<B,M,3> o ((W,n),C):((1,W·C),W)` (or `(W,C):(1,W)`) with W elements = 16·2^B bytes;
    M = log2(16 / element bytes), R = W·n a multiple of 8 up to 256."""
    eb = elem_bytes(t.elem)
    lay = t.layout
    w = 128 // eb
    want = (
        "a TMA destination must be a swizzled tile of rows, K-major Sw<B,M,3> o (R,C):(C,1) "
        f"with C·{eb} = 32, 64 or 128 bytes (e.g. tile_to_shape(swizzle<3,"
        f"{(16 // eb).bit_length() - 1},3> o (8,{w}):({w},1), (R,{w}))) or MN-major "
        f"Sw<B,M,3> o ((W,n),C):((1,W·C),W) with W·{eb} = 32, 64 or 128 bytes, got {lay}"
    )
    if not isinstance(lay, A.ComposedLayout) or lay.offset != 0:
        raise LoweringError(op, want)
    sw, inner = lay.outer, lay.inner
    if not isinstance(sw, A.Swizzle) or not A.is_tuple(inner.shape) or len(inner.shape) != 2:
        raise LoweringError(op, want)
    if sw.bits not in SWIZZLE_BYTES or 16 % eb or (1 << sw.base) * eb != 16 or sw.shift != 3:
        raise LoweringError(op, want)
    width = SWIZZLE_BYTES[sw.bits] // eb
    found = _k_major(inner, width) or _mn_major(inner, width)
    if found is None:
        raise LoweringError(op, want)
    rows, cols, mn_major = found
    if rows % 8 or rows > 256:
        raise LoweringError(op, f"{want} (R a multiple of 8 up to 256)")
    return SwizzledRows(rows, cols, eb, SWIZZLE_BYTES[sw.bits], mn_major)


def _k_major(inner: A.Layout, width: int) -> tuple[int, int, bool] | None:
    (rows, cols), (row_stride, col_stride) = inner.shape, inner.stride
    if all(isinstance(x, int) for x in (rows, cols, row_stride, col_stride)):
        if col_stride == 1 and row_stride == cols == width:
            return rows, cols, False
    return None


def _mn_major(inner: A.Layout, width: int) -> tuple[int, int, bool] | None:
    (mn, cols), (mn_stride, col_stride) = inner.shape, inner.stride
    if not isinstance(cols, int) or col_stride != width:
        return None
    if mn == width and mn_stride == 1:  # one chunk
        return width, cols, True
    if A.is_tuple(mn) and len(mn) == 2 and mn[0] == width and mn_stride == (1, width * cols):
        if isinstance(mn[1], int):
            return width * mn[1], cols, True
    return None


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
    name: str, tensor: str, box: list[int], swizzle: int, optional: bool = False,
    order: list[int] | None = None,
) -> ir.Attribute:  # fmt: skip
    """One entry of a kernel's `tile.tma` attribute (`optional`: the runtime passes a null
    pointer where the tensor's strides do not allow the map, and the kernel checks; `order`:
    the tensor's modes innermost first, when that is not the last mode first)."""
    entries = {
        "name": ir.StringAttr.get(name),
        "tensor": ir.StringAttr.get(tensor),
        "box": ir.DenseI64ArrayAttr.get(box),
        "swizzle": ir.StringAttr.get(f"{swizzle}B"),
    }
    if order is not None and order != list(range(len(box)))[::-1]:
        entries["order"] = ir.DenseI64ArrayAttr.get(order)
    if optional:
        entries["optional"] = ir.UnitAttr.get()
    return ir.DictAttr.get(entries)


def load(
    descriptor: ir.Value,
    dst: ir.Value,
    coords: list[Term],
    barrier: ir.Value,
    b: IndexBuilder,
    multicast: ir.Value | None = None,
) -> None:
    """cp.async.bulk.tensor of the box at `coords` (elements, innermost first) into `dst`,
    completing (bytes) on `barrier`; with a `multicast` mask (i16), into `dst` and onto
    `barrier` of every block of the cluster the mask names."""
    i32 = ir.IntegerType.get_signless(32)
    at = [arith.IndexCastOp(i32, b.value(c)).result for c in coords]
    cluster = llvm.AddrSpaceCastOp(ir.Type.parse("!llvm.ptr<7>"), dst).result
    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
        cluster, descriptor, at, barrier, [], multicastMask=multicast
    )

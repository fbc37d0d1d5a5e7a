"""copy<tma>: a global tile into one stage of a shared buffer with cp.async.bulk.tensor.

The kernel takes one tensor map per TMA-loaded tensor as an extra trailing `!llvm.ptr`
argument (the runtime encodes it at launch, `cuTensorMapEncodeTiled`, and passes its device
address); the function's `tile.tma` attribute describes each map for the manifest: the tensor
it covers, the box (the tile's shape, outermost first) and the swizzle, which this module reads
off the shared layout and checks against what TMA and wgmma can do together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, llvm, nvvm

from tilec.dialects.layout import algebra as A
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.sm90_sources import Box, box_origin, owner
from tilec.lowering.tile_views import TensorType, elem_bytes, gep, tensor_type

if TYPE_CHECKING:
    from tilec.lowering.sm90_cluster import Share

SWIZZLE_BYTES = {1: 32, 2: 64, 3: 128}  # a swizzle's bits -> the TMA/wgmma swizzle mode


@dataclass(frozen=True)
class SwizzledRows:
    """A shared operand tile of `rows` (M or N) × `cols` (K) elements as TMA writes it and
    wgmma reads it, in rows of one swizzle width (`swizzle` bytes: 32, 64 or 128).

    K-major: each of the `rows` rows holds the tile's K elements; where K is longer than one
    swizzle row (`k_chunks` > 1: attention's D = 128 tiles), the tile is `k_chunks` chunks
    along K, each `rows` rows of one width, one TMA box each. MN-major (`mn_major`): the tile
    is `rows / width` chunks side by side along M (N), each `cols` rows of `width` contiguous
    M (N) elements, one TMA box per chunk::

        K-major, k_chunks = 2 (R, (W, 2)):(W, (1, W·R))      MN-major ((W, 2), C):((1, W·C), W)
        chunk 0: R rows of W (K 0 .. W-1)                     chunk 0: C rows of W (M 0 .. W-1)
        chunk 1: R rows of W (K W .. 2W-1)                    chunk 1: C rows of W (M W .. 2W-1)
    """

    rows: int
    cols: int
    elem_bytes: int
    swizzle: int
    mn_major: bool = False
    k_chunks: int = 1

    @property
    def bytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    @property
    def width(self) -> int:
        """Elements in one swizzle row."""
        return self.swizzle // self.elem_bytes

    @property
    def chunks(self) -> int:
        return self.rows // self.width if self.mn_major else self.k_chunks

    @property
    def chunk_bytes(self) -> int:
        return self.bytes // self.chunks

    @property
    def row_bytes(self) -> int:
        """Bytes from one M (N) row of a K-major tile to the next (in its chunk)."""
        return self.cols // self.k_chunks * self.elem_bytes

    def mn_offset(self, elems: int) -> int:
        """Bytes from the tile's start to its M (N) element `elems` (a multiple of 8, or of
        the width for an MN-major tile)."""
        if self.mn_major:
            assert elems % self.width == 0, "MN-major offsets step whole chunks"
            return elems // self.width * self.chunk_bytes
        return elems * self.row_bytes

    def k_offset(self, elems: int) -> int:
        """Bytes from the tile's start to its K element `elems` (a multiple of 8)."""
        if self.mn_major:
            return elems * self.swizzle
        chunk, within = divmod(elems, self.cols // self.k_chunks)
        return chunk * self.chunk_bytes + within * self.elem_bytes


def swizzled_rows(op: ir.Operation, t: TensorType) -> SwizzledRows:
    """The shared layout `t` as TMA rows, or a located error naming the forms it may have:
    K-major `Sw<B,M,3> o (R,C):(C,1)` with C elements = 16·2^B bytes per row (or several
    such chunks along K, `(R,(C,n)):(C,(1,C·R))`: `tile_to_shape` of the row atom), or MN-major
    `Sw<B,M,3> o ((W,n),C):((1,W·C),W)` (or `(W,C):(1,W)`) with W elements = 16·2^B bytes;
    M = log2(16 / element bytes), R = W·n a multiple of 8 up to 256."""
    eb = elem_bytes(t.elem)
    lay = t.layout
    w = 128 // eb
    want = (
        "a TMA destination must be a swizzled tile of rows, K-major Sw<B,M,3> o (R,C):(C,1) "
        f"with C·{eb} = 32, 64 or 128 bytes (e.g. tile_to_shape(swizzle<3,"
        f"{(16 // eb).bit_length() - 1},3> o (8,{w}):({w},1), (R,{w}))), or n such chunks "
        f"along K (R,(C,n)):(C,(1,C·R)) (tile_to_shape(..., (R,{w}·n))), or MN-major "
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
    rows, cols, mn_major, k_chunks = found
    if rows % 8 or rows > 256:
        raise LoweringError(op, f"{want} (R a multiple of 8 up to 256)")
    return SwizzledRows(rows, cols, eb, SWIZZLE_BYTES[sw.bits], mn_major, k_chunks)


def _k_major(inner: A.Layout, width: int) -> tuple[int, int, bool, int] | None:
    (rows, cols), (row_stride, col_stride) = inner.shape, inner.stride
    if not isinstance(rows, int) or row_stride != width:
        return None
    if cols == width and col_stride == 1:
        return rows, cols, False, 1
    if A.is_tuple(cols) and len(cols) == 2 and cols[0] == width and isinstance(cols[1], int):
        if col_stride == (1, width * rows):  # n chunks of R rows along K
            return rows, width * cols[1], False, cols[1]
    return None


def _mn_major(inner: A.Layout, width: int) -> tuple[int, int, bool, int] | None:
    (mn, cols), (mn_stride, col_stride) = inner.shape, inner.stride
    if not isinstance(cols, int) or col_stride != width:
        return None
    if mn == width and mn_stride == 1:  # one chunk
        return width, cols, True, 1
    if A.is_tuple(mn) and len(mn) == 2 and mn[0] == width and mn_stride == (1, width * cols):
        if isinstance(mn[1], int):
            return width * mn[1], cols, True, 1
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


def load_tile(
    op: ir.Operation,
    rows: SwizzledRows,
    dst: ir.Value,
    full: ir.Value,
    share: Share,
    descriptors: dict[str, ir.Value],
    maps: list[ir.Attribute],
    b: IndexBuilder,
) -> None:
    """copy<tma> `op` (a global `local_tile` into a stage's slot at `dst`) as TMA loads
    completing on barrier `full`: one box of the tile (MN-major: one per chunk of the
    swizzle's width), this block's `share` of it in a cluster (multicast to every block).
    The tensor map is a kernel argument (`descriptors`, by tensor) described in `maps`."""
    tile = owner(op.operands[0])
    if tile is None or tile.name != "tile.local_tile":
        raise LoweringError(op, "copy<tma> reads local_tile(T, ...) of a kernel tensor T")
    shape = list(ir.DenseI64ArrayAttr(tile.attributes["tile"]))
    if shape != [rows.rows, rows.cols]:
        raise LoweringError(
            op, f"copy<tma> of a {shape} tile into a ({rows.rows},{rows.cols}) buffer"
        )
    found = box_origin(tile, b)
    check_bound(op, found)
    name, coords, box, (mn_mode, k_mode) = found.tensor, found.coords, found.box, found.walks
    stride = tensor_type(op.operands[0].type).layout.stride
    stride = list(stride) if A.is_tuple(stride) else [stride]
    if (stride[0] if rows.mn_major else stride[-1]) != 1:
        along = "M or N" if rows.mn_major else "K"
        raise LoweringError(
            op,
            f"copy<tma> into this {'MN' if rows.mn_major else 'K'}-major buffer reads rows "
            f"of contiguous elements along {along}: the tile's stride there must be 1, "
            f"got {[d if isinstance(d, int) else '?' for d in stride]}",
        )
    # The tensor map's modes innermost first: the contiguous one, then the others.
    inner = mn_mode if rows.mn_major else k_mode
    order = [inner] + [m for m in reversed(range(len(box))) if m != inner]
    if rows.mn_major:  # one box per chunk of `width` elements along M (N)
        box = [rows.width if m == mn_mode else e for m, e in enumerate(box)]
    else:  # one box per chunk of `width` elements along K
        box = [
            share.rows if m == mn_mode else rows.width if m == k_mode else e
            for m, e in enumerate(box)
        ]
    if name not in descriptors:
        descriptors[name] = add_descriptor_argument(tile_kernel(op))
        maps.append(describe(f"tma_{name}", name, box, rows.swizzle, order=order))
    # Multicast: this block loads its 1/C share of the tile, rows rank·R/C on, into every
    # block of the cluster (the same offset in each), completing on each one's barrier.
    coords[mn_mode] = b.add(coords[mn_mode], share.first_row)
    i8 = ir.IntegerType.get_signless(8)
    dst = gep(dst, share.first_byte, i8, b)
    along = mn_mode if rows.mn_major else k_mode
    for c in range(share.chunks):
        at = [b.add(x, c * rows.width) if m == along else x for m, x in enumerate(coords)]
        chunk = gep(dst, c * rows.chunk_bytes, i8, b)
        load(descriptors[name], chunk, [at[m] for m in order], full, b, share.mask)


# A copy<tma> the source marks `unbounded = 1`: its box may read past its view's bound.
UNBOUNDED = "tile.unbounded"


def check_bound(op: ir.Operation, found: Box) -> None:
    """A TMA box is bounded by its tensor map, which spans the whole tensor: a tile of a view
    cut inside the tensor (a window, `Q[q0 .. q1 - 1, h, _]`) would read the elements past
    the view's end (the next packed sequence) where the language reads zeros. Refused unless
    the copy says `unbounded = 1` (the kernel then masks what lies past the bound); and that
    on a copy with no such bound is refused too, as a promise about nothing."""
    unbounded = UNBOUNDED in op.attributes
    if found.window is not None and not unbounded:
        raise LoweringError(
            op,
            "copy<tma> of a tile of a view bounded inside its tensor (a range, lo .. hi): TMA "
            "reads past the bound (the tensor's next elements, not zeros); say "
            "copy<tma>(..., unbounded = 1) and mask what lies past the bound where it is read",
        )
    if found.window is None and unbounded:
        raise LoweringError(
            op,
            "unbounded = 1 on a copy<tma> whose view ends where its tensor does: nothing lies "
            "past its bound but the tensor's end, which TMA fills with zeros; drop it",
        )


def tile_kernel(op: ir.Operation) -> ir.Operation:
    p = op.parent
    while p.name != "func.func":
        p = p.parent
    return p

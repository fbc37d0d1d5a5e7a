"""Where a TMA box lies: a `local_tile` of a kernel tensor, or of a slice of one.

A tensor map covers a whole kernel tensor (every mode), so a box's coordinates are the tile's
first element in every mode: along a mode the tile walks, tile index × tile extent; along a
mode a slice fixes (`A[block.z, _, _]`, a batch), the fixed index, with a box extent of 1.
"""

from __future__ import annotations

from mlir import ir

from tilec.lowering import IndexBuilder, LoweringError, Term


def owner(value: ir.Value) -> ir.Operation | None:
    o = value.owner
    return o.operation if isinstance(o, ir.OpView) else o if isinstance(o, ir.Operation) else None


def tensor_of(tile: ir.Value) -> ir.Operation | None:
    """The `tile.make_tensor` a `local_tile` (of it, or of a slice of it) reads, else None."""
    op = owner(tile)
    if op is None or op.name != "tile.local_tile":
        return None
    src = owner(op.operands[0])
    if src is not None and src.name == "tile.slice":
        src = owner(src.operands[0])
    return src if src is not None and src.name == "tile.make_tensor" else None


def entries(op: ir.Operation) -> list[Term | None]:
    """A local_tile's or slice's coordinate: an SSA value per `?`, ints, None per `_`."""
    text = ir.StringAttr(op.attributes["coord"]).value
    rest = iter(list(op.operands)[1:])
    out: list[Term | None] = []
    for c in (c.strip() for c in text.strip("()").split(",")):
        out.append(next(rest) if c == "?" else None if c == "_" else int(c))
    return out


def box_origin(tile: ir.Operation, b: IndexBuilder) -> tuple[str, list[Term], list[int], list[int]]:
    """(tensor name, the box's first element in every mode, the box, the tensor's modes the
    tile walks in the tile's order), outermost first, of a `local_tile` op whose every tile
    coordinate is given."""
    sizes = list(ir.DenseI64ArrayAttr(tile.attributes["tile"]))
    walked = entries(tile)
    if any(c is None for c in walked):
        raise LoweringError(tile, "a TMA tile needs a tile coordinate in every mode")
    kept = iter([(b.mul(c, t), t) for c, t in zip(walked, sizes, strict=True)])
    src = owner(tile.operands[0])
    if src is not None and src.name == "tile.slice":
        coords, box, walks = [], [], []
        for mode, c in enumerate(entries(src)):
            if c is None:
                walks.append(mode)
            start, extent = next(kept) if c is None else (c, 1)
            coords.append(start)
            box.append(extent)
        src = owner(src.operands[0])
    else:
        coords, box, walks = [c for c, _ in kept], sizes, list(range(len(sizes)))
    if src is None or src.name != "tile.make_tensor":
        raise LoweringError(
            tile, "a TMA tile is local_tile(T, ...) of a kernel tensor T or of a slice of it"
        )
    return ir.StringAttr(src.attributes["name"]).value, coords, box, walks

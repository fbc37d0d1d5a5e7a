"""Where a TMA box lies: a `local_tile` of a kernel tensor, or of slices and windows of one.

A tensor map covers a whole kernel tensor (every mode), so a box's coordinates are the tile's
first element in every mode: along a mode the tile walks, tile index × tile extent; along a
mode a slice fixes (`A[block.z, _, _]`, a batch), the fixed index, with a box extent of 1;
along a mode a window cuts (`Q[q0 .. q1 - 1, h, _]`, a packed sequence), that plus the
window's first coordinate. The map bounds the box at the tensor's end only: a window's own
end is the copy's business (sm90_tma.check_bound).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from tilec.lowering import IndexBuilder, LoweringError, Term


def owner(value: ir.Value) -> ir.Operation | None:
    o = value.owner
    return o.operation if isinstance(o, ir.OpView) else o if isinstance(o, ir.Operation) else None


def tensor_of(tile: ir.Value) -> ir.Operation | None:
    """The `tile.make_tensor` a `local_tile` (of it, or of a slice of it) reads, else None:
    None for a tile of a window too, so that no TMA store (tile-ring's epilogue) writes past
    the window's bound up to the tensor's end (such a tile is stored from registers)."""
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


@dataclass
class Box:
    """Where a TMA box lies in its tensor map: the tensor, the box's first element in every
    mode, the box's extents, the tensor's modes the tile walks (in the tile's order), all
    outermost first; and the `tile.window` the tile was cut from, if any (a view bounded
    inside its tensor: the map knows only the tensor's end)."""

    tensor: str
    coords: list[Term]
    box: list[int]
    walks: list[int]
    window: ir.Operation | None = None


def box_origin(tile: ir.Operation, b: IndexBuilder) -> Box:
    """The box of a `local_tile` op whose every tile coordinate is given, of a kernel tensor
    seen through slices (a fixed mode: box extent 1 at the index) and windows (a cut mode:
    its coordinates start at the window's `lo`), outermost first::

        local_tile (64,64) at (j, 0) of slice (_, h, _) of window (k0..?, _, _) of K
        box [64, 1, 64] at [k0 + 64 j, h, 0], walks modes [0, 2]
    """
    sizes = list(ir.DenseI64ArrayAttr(tile.attributes["tile"]))
    walked = entries(tile)
    if any(c is None for c in walked):
        raise LoweringError(tile, "a TMA tile needs a tile coordinate in every mode")
    coords = [b.mul(c, t) for c, t in zip(walked, sizes, strict=True)]
    box, walks, window = list(sizes), list(range(len(sizes))), None
    src = owner(tile.operands[0])
    while src is not None and src.name in ("tile.slice", "tile.window"):
        if src.name == "tile.window":
            window = src
            coords = [b.add(c, lo) for c, lo in zip(coords, starts(src), strict=True)]
        else:
            coords, box, walks = unslice(entries(src), coords, box, walks)
        src = owner(src.operands[0])
    if src is None or src.name != "tile.make_tensor":
        raise LoweringError(
            tile, "a TMA tile is local_tile(T, ...) of a kernel tensor T or of a slice of it"
        )
    return Box(ir.StringAttr(src.attributes["name"]).value, coords, box, walks, window)


def unslice(
    fixed: list[Term | None], coords: list[Term], box: list[int], walks: list[int]
) -> tuple[list[Term], list[int], list[int]]:
    """A box seen in a slice's source: every mode the slice fixes comes back, at its index
    with extent 1; the kept modes are the slice's modes in order."""
    kept = iter(zip(coords, box, strict=True))
    out_c, out_box, where = [], [], []
    for mode, c in enumerate(fixed):
        if c is None:
            where.append(mode)
        start, extent = next(kept) if c is None else (c, 1)
        out_c.append(start)
        out_box.append(extent)
    return out_c, out_box, [where[w] for w in walks]


def starts(window: ir.Operation) -> list[Term]:
    """A `tile.window`'s first coordinate in each mode (0 where it keeps the whole mode)."""
    text = ir.StringAttr(window.attributes["window"]).value
    rest = iter(list(window.operands)[1:])
    out: list[Term] = []
    for c in (c.strip() for c in text.strip("()").split(",")):
        if c == "_":
            out.append(0)
            continue
        lo, hi = (x.strip() for x in c.split(".."))
        out.append(next(rest) if lo == "?" else int(lo))
        if hi == "?":
            next(rest)
    return out

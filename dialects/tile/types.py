"""The `tile` dialect's types as Python values: build them for irgen, read them in passes; and
where a view comes from (`view_root`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir

from tilec import layout as L

SPACES = ("global", "shared", "register")
# Any word as the space: `tile-verify` reports one that is not in SPACES.
_TENSOR = re.compile(r'!tile\.tensor<(.+), "(\w+)", "([^"]*)">')
_MMA = re.compile(r'!tile\.mma<"([^"]*)", "([^"]*)">')
# A register tensor spread over the threads (tile-distribute): its layout, then its TV layout.
_FRAG = re.compile(r'!tile\.frag<(.+), "([^"]*)", "([^"]*)">')


@dataclass(frozen=True)
class TensorType:
    """`!tile.tensor<ELEM, "SPACE", "LAYOUT">`: a view's element type, space and layout text;
    or `!tile.frag<ELEM, "LAYOUT", "TV">`, a register tensor whose thread–value layout
    tile-distribute decided (`tv`: thread × value → the tile's column-major index)."""

    elem: str  # the MLIR spelling: f16, bf16, f32, ...
    space: str
    layout: str  # CuTe text; `?` entries are runtime values
    tv: str | None = None  # register tensors after tile-distribute

    def get(self) -> ir.Type:
        """The MLIR type (needs a context with the tile dialect loaded)."""
        if self.tv is not None:
            return ir.Type.parse(f'!tile.frag<{self.elem}, "{self.layout}", "{self.tv}">')
        return ir.Type.parse(f'!tile.tensor<{self.elem}, "{self.space}", "{self.layout}">')

    def layout_value(self) -> L.Layout | L.ComposedLayout:
        """The layout as a `tilec.layout` value, `?` entries as `tilec.layout.DYN`."""
        return L.parse_layout(self.layout, allow_dynamic=True)

    @staticmethod
    def of(t: ir.Type) -> TensorType | None:
        """The tensor type `t` is, or None if it is another type."""
        text = str(t)
        m = _TENSOR.fullmatch(text)
        if m:
            return TensorType(m.group(1), m.group(2), m.group(3))
        m = _FRAG.fullmatch(text)
        return TensorType(m.group(1), "register", m.group(2), m.group(3)) if m else None


@dataclass(frozen=True)
class MmaType:
    """`!tile.mma<"ATOM", "(m,n,k)">`: an atom and how often it repeats over warps or groups."""

    atom: str
    tiling: str

    def get(self) -> ir.Type:
        return ir.Type.parse(f'!tile.mma<"{self.atom}", "{self.tiling}">')

    @staticmethod
    def of(t: ir.Type) -> MmaType | None:
        m = _MMA.fullmatch(str(t))
        return MmaType(m.group(1), m.group(2)) if m else None


# The ops a view chain starts at: a global tensor, a shared buffer.
VIEW_ROOTS = ("tile.make_tensor", "tile.alloc_shared")


def view_root(value: ir.Value) -> ir.Operation | None:
    """The `tile.make_tensor` or `tile.alloc_shared` a view comes from (views chain through
    operand 0: local_tile, slice, permute, ...); None when the chain leaves the tile ops (a
    block argument, another dialect's op)."""
    while True:
        owner = value.owner
        if not isinstance(owner, ir.Operation | ir.OpView):
            return None
        op = owner.operation
        if op.name in VIEW_ROOTS:
            return op
        if not op.name.startswith("tile.") or not op.operands:
            return None
        value = op.operands[0]

"""Frontend (irgen): indexing a tensor: slices, ranges (`tile.window`) and reads of an
element (`tile.read`), mixed into ExprGen."""

from __future__ import annotations

from mlir import ir

from tilec import layout as L
from tilec.frontend import ast
from tilec.frontend.shapes import top_modes, with_modes
from tilec.frontend.values import IntV, RangeV, TensorV, UnderscoreV, V


class IndexGen:
    """Mixed into ExprGen: needs `values`, `expr`, `op` and `result_type`."""

    values: dict[int, V]

    def index_view(self, node: ast.Index, result_type: ir.Type) -> ir.Value:
        """`t[...]`: a tile.window for its ranges (lo .. hi), then a tile.slice for the modes
        it fixes."""
        coords = [self.values[id(x)] for x in node.indices]
        src = self.expr(node.value)
        if any(isinstance(c, RangeV) for c in coords):
            src = self.window(node, src, coords)
            coords = [UnderscoreV() if isinstance(c, RangeV) else c for c in coords]
            if all(isinstance(c, UnderscoreV) for c in coords):
                return src
        operands = [
            self.expr(x)
            for x, c in zip(node.indices, coords, strict=True)
            if isinstance(c, IntV) and not c.static
        ]
        return self.op(
            "tile.slice",
            node.span,
            [src, *operands],
            [result_type],
            {"coord": ir.StringAttr.get(self.coord_spec(coords))},
        ).result

    def window(self, node: ast.Index, src: ir.Value, coords: list) -> ir.Value:
        """The tile.window of `t[..., lo .. hi, ...]`: the ranged modes cut, the others kept."""
        base = self.values[id(node.value)]
        modes, parts, operands = top_modes(base.layout), [], []
        for k, c in enumerate(coords):
            if not isinstance(c, RangeV):
                parts.append("_")
                continue
            ends = []
            for end, x in ((c.lo, node.indices[k].lo), (c.hi, node.indices[k].hi)):
                ends.append(str(end.value) if end.static else "?")
                if not end.static:
                    operands.append(self.expr(x))
            parts.append("..".join(ends))
            static = c.lo.static and c.hi.static
            extent = c.hi.value - c.lo.value + 1 if static else L.DYN
            modes[k] = L.Layout(extent, modes[k].stride)
        cut = TensorV(base.elem, base.space, with_modes(base.layout, modes), base.alloc)
        window = ir.StringAttr.get("(" + ",".join(parts) + ")")
        return self.op(
            "tile.window", node.span, [src, *operands], [self.result_type(cut)], {"window": window}
        ).result

    def read(self, node: ast.Index) -> ir.Value:
        """`t[i, j]`, every mode fixed: tile.read of the element, an index."""
        coords = [self.values[id(x)] for x in node.indices]
        operands = [self.expr(x) for x, c in zip(node.indices, coords, strict=True) if not c.static]
        return self.op(
            "tile.read",
            node.span,
            [self.expr(node.value), *operands],
            [ir.IndexType.get()],
            {"coord": ir.StringAttr.get(self.coord_spec(coords))},
        ).result

    def coord_spec(self, coords: object) -> str:
        parts = []
        for c in coords:
            if isinstance(c, UnderscoreV):
                parts.append("_")
            elif isinstance(c, IntV) and c.static:
                parts.append(str(c.value))
            else:
                parts.append("?")
        return "(" + ",".join(parts) + ")"

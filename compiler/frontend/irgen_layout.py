"""Frontend (tile stage): a kernel's layout expressions as `layout` dialect ops.

The checker has already evaluated every layout expression; irgen writes it down as the ops
that compute it, so the tile stage shows where a shared buffer's layout comes from:

    let swz = swizzle<3, 3, 3> o (8, 64):(64, 1)
    let sA = shared<f16>(tile_to_shape(swz, (128, 64)))
  →
    %0 = "layout.make"() : () -> !layout.layout<"(8,64):(64,1)">
    %1 = "layout.swizzle"(%0) {base = 3, bits = 3, shift = 3}
           : (...) -> !layout.layout<"Sw<3,3,3> o 0 o (8,64):(64,1)">
    %2 = "layout.make"() : () -> !layout.layout<"(128,64):(1,128)">        // the shape
    %3 = "layout.tile_to_shape"(%1, %2) : (...) -> !layout.layout<"Sw<3,3,3> o 0 o ...">
    %sA = "tile.alloc_shared"(%3) {name = "sA"} : (...) -> !tile.tensor<f16, "shared", "...">

`layout-fold` evaluates them back (checking each declared result against the algebra) and
`convert-layout-to-arith` turns what addresses need into index math. Each op is emitted only
where the dialect's op computes exactly the checker's value (`evaluate`, the fold's own
semantics); `slice(crd, L)` is a `layout.slice` whose fixed coordinates are index operands
(constants or the runtime values). Anything else (a by-mode tiler, a layout the SPEC text
cannot spell, a query) is a `layout.make` of the value, so the IR never disagrees with the
checked program.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec import layout as L
from tilec.dialects.layout.ir import (
    BINARY_OPS,
    INT_ATTRS,
    UNARY_OPS,
    evaluate,
    layout_type,
    slice_pattern,
)
from tilec.dialects.layout.text import parse_layout
from tilec.frontend import ast
from tilec.frontend.shapes import int_tuple
from tilec.frontend.values import IntV, LayoutV, SwizzleV, TupleV, UnderscoreV, V

Layoutish = L.Layout | L.ComposedLayout


def spellable(obj: object) -> bool:
    """Whether `obj` is a static layout the type's SPEC text gives back exactly."""
    if not isinstance(obj, Layoutish):
        return False
    inner = obj.inner if isinstance(obj, L.ComposedLayout) else obj
    if not (L.is_static(inner.shape) and L.is_static(inner.stride)):
        return False
    try:
        return parse_layout(str(obj), allow_dynamic=True) == obj
    except L.LayoutError:
        return False


def chosen(node: ast.Node, values: dict[int, V]) -> ast.Node:
    """The expression `choose(i, ...)` stands for (through nested choices); any other node."""
    while isinstance(node, ast.Call) and node.func == "choose":
        node = node.args[1 + values[id(node.args[0])].value]
    return node


class LayoutGen:
    """Mixed into KernelGen: needs `values`, `op`, `loc`, `bound`, `lookup`."""

    values: dict[int, V]

    def layout_value(self, node: ast.Node, expected: object = None) -> ir.Value | None:
        """The `!layout.layout` value of layout expression `node` (of `expected` when given:
        a shape argument, say, is the compact layout the checker made of it); None when the
        layout cannot be spelled as a static SPEC."""
        node = chosen(node, self.values)
        v = self.values[id(node)]
        obj = expected if expected is not None else getattr(v, "obj", None)
        if not spellable(obj):
            return None
        if isinstance(v, LayoutV) and v.obj == obj:
            built = self.layout_op(node, obj)
            if built is not None:
                return built
        return self.make_spec(obj, node)

    def make_spec(self, obj: Layoutish, node: ast.Node) -> ir.Value:
        return self.op("layout.make", node.span, [], [layout_type(str(obj))]).result

    def layout_op(self, node: ast.Node, obj: Layoutish) -> ir.Value | None:
        """The op computing `node` from its operands' layout values, or None (then a make)."""
        if isinstance(node, ast.Name):
            bound = self.lookup(node.id) if self.bound(node.id) else None
            return bound if isinstance(bound, ir.Value) else None
        if isinstance(node, ast.Call) and node.func == "slice" and len(node.args) == 2:
            return self.slice_op(node, obj)
        call = self.algebra_call(node)
        if call is None:
            return None
        name, operands, attrs, extra = call
        objs = [self.operand_obj(n, name, k) for k, n in enumerate(operands)]
        try:
            if evaluate(name, objs, attrs, extra) != obj:
                return None
        except (L.LayoutError, TypeError, ValueError, ArithmeticError, AttributeError, IndexError):
            return None
        values = []
        for n, operand in zip(operands, objs, strict=True):
            value = self.layout_value(n, operand)
            if value is None:
                return None
            values.append(value)
        if name == "complement":
            values.append(arith.ConstantOp(ir.IndexType.get(), extra, loc=self.loc(node.span)))
        int_attrs = {k: ir.IntegerAttr.get(ir.IntegerType.get_signless(64), x)
                     for k, x in attrs.items()}  # fmt: skip
        op = self.op(f"layout.{name}", node.span, values, [layout_type(str(obj))], int_attrs)
        return op.result

    def slice_op(self, node: ast.Call, obj: Layoutish) -> ir.Value | None:
        """`slice(crd, L)`: layout.slice of L, `_` modes kept, the others fixed by index
        operands (constants, or the runtime coordinates) in order: slice((_, 2), L) is
        "(_,?)" with a constant 2."""
        crd, of = node.args
        source = self.values[id(of)]
        parts: list[str] = []
        coords: list[ast.Node] = []

        def spell(n: ast.Node) -> bool:
            v = self.values[id(n)]
            if isinstance(v, UnderscoreV):
                parts.append("_")
            elif isinstance(v, IntV):
                parts.append("?")
                coords.append(n)
            elif isinstance(v, TupleV) and isinstance(n, ast.Tuple):
                parts.append("(")
                for k, item in enumerate(n.items):
                    parts.append("," if k else "")
                    if not spell(item):
                        return False
                parts.append(",)" if len(n.items) == 1 else ")")
            else:
                return False
            return True

        if not isinstance(source, LayoutV) or not spell(crd):
            return None
        pattern = "".join(parts)
        try:
            if L.slice(slice_pattern(pattern), source.obj) != obj:
                return None
        except (L.LayoutError, TypeError, ValueError, IndexError):
            return None
        layout = self.layout_value(of)
        if layout is None:
            return None
        values = [self.expr(n) for n in coords]
        attrs = {"pattern": ir.StringAttr.get(pattern)}
        return self.op(
            "layout.slice", node.span, [layout, *values], [layout_type(str(obj))], attrs
        ).result

    def operand_obj(self, node: ast.Node, name: str, k: int) -> object:
        """The layout an operand stands for: tile_to_shape's shape is the compact layout."""
        v = self.values[id(node)]
        if name == "tile_to_shape" and k == 1 and isinstance(v, (TupleV, IntV)):
            shape = int_tuple(v)
            return L.Layout(shape) if shape is not None else None
        return v.obj if isinstance(v, LayoutV) else None

    def algebra_call(
        self, node: ast.Node
    ) -> tuple[str, list[ast.Node], dict[str, int], int] | None:
        """(op name, layout operand nodes, integer attributes, cotarget) of an algebra node."""
        if isinstance(node, ast.Binary) and node.op == "o":
            return self.composition(node.lhs, node.rhs)
        if not isinstance(node, ast.Call) or node.kwargs:
            return None
        f, args = node.func, node.args
        if f == "composition" and len(args) == 2:
            return self.composition(*args)
        if (f in BINARY_OPS and len(args) == 2) or (f in UNARY_OPS and len(args) == 1):
            return f, list(args), {}, 0
        static = self.static_int(args[1]) if len(args) == 2 else None
        if f == "complement" and static is not None:
            return f, [args[0]], {}, static
        if f in ("upcast", "downcast") and static is not None:
            return f, [args[0]], {INT_ATTRS[f][0]: static}, 0
        return None

    def composition(
        self, lhs: ast.Node, rhs: ast.Node
    ) -> tuple[str, list[ast.Node], dict[str, int], int] | None:
        """`swizzle<B,M,S> o L` is layout.swizzle on L; a layout after a layout, composition."""
        outer = self.values[id(chosen(lhs, self.values))]
        if isinstance(outer, SwizzleV):
            sw = outer.obj
            return "swizzle", [rhs], {"bits": sw.bits, "base": sw.base, "shift": sw.shift}, 0
        return "composition", [lhs, rhs], {}, 0

    def static_int(self, node: ast.Node) -> int | None:
        v = self.values[id(node)]
        return v.value if isinstance(v, IntV) and v.static else None

"""Frontend (tile stage): expressions to `tile` and `arith` values; static values emit nothing."""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith

from tilec import layout as L
from tilec.binding import CONTRACTED, contract
from tilec.diagnostics import Span
from tilec.dialects.tile.types import MmaType, TensorType
from tilec.frontend import ast
from tilec.frontend.expr import result_elem
from tilec.frontend.irgen_index import IndexGen
from tilec.frontend.irgen_layout import LayoutGen, chosen
from tilec.frontend.shapes import int_tuple
from tilec.frontend.types import SCALAR_TYPES, is_float_type
from tilec.frontend.values import (
    FloatV,
    IntV,
    LayoutV,
    MmaV,
    SwizzleV,
    TensorV,
    TupleV,
    V,
)

BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem"}
INT_OPS = {
    "+": arith.AddIOp,
    "-": arith.SubIOp,
    "*": arith.MulIOp,
    "/": arith.FloorDivSIOp,
    "%": arith.RemSIOp,
}
FLOAT_OPS = {
    "+": arith.AddFOp,
    "-": arith.SubFOp,
    "*": arith.MulFOp,
    "/": arith.DivFOp,
    "%": arith.RemFOp,
}
PREDICATES = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
DIMS = {"x": 0, "y": 1, "z": 2}
# The index builtins: `block.x` is blockIdx.x, `thread.x` threadIdx.x, `grid.x` gridDim.x.
ID_OPS = {"block": "tile.block_id", "thread": "tile.thread_id", "grid": "tile.grid_dim"}
REDUCE = {"reduce_max": "max", "reduce_min": "min", "reduce_sum": "sum"}
CLUSTER_REDUCE = {"cluster_max": "max", "cluster_min": "min", "cluster_sum": "sum"}


class ExprGen(IndexGen, LayoutGen):
    """Mixed into KernelGen: needs `values`, `op`, `const`, `lookup`, `loc`, `tensor_type`."""

    values: dict[int, V]

    def expr(self, node: ast.Node) -> object:
        """The IR value of `node`: an ir.Value, a tuple of them (tile coordinates, tile counts,
        let-bound tuples), or None for what exists only at compile time."""
        if chosen(node, self.values) is not node:
            return self.expr(chosen(node, self.values))
        v = self.values[id(node)]
        if isinstance(v, (LayoutV, SwizzleV)):  # layouts are `layout_value`'s
            return None
        if isinstance(node, ast.Name) and not (isinstance(v, IntV) and v.static):
            # Compile-time parameters and builtin names are in no scope: they have no IR value.
            return self.lookup(node.id) if self.bound(node.id) else None
        if isinstance(v, IntV):
            return self.int_value(v, node.span, node)
        if isinstance(v, FloatV):
            return self.float_value(v, node)
        if isinstance(v, (TensorV, MmaV)):
            return self.tensor(node, v)
        if isinstance(node, ast.Call):
            self.action(node)
        return None

    # Scalars ------------------------------------------------------------------------------------

    def int_value(self, v: IntV, span: Span, node: ast.Node | None = None) -> ir.Value:
        if v.static:
            return self.const(v.value, span)
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Attr):
            return self.attr_index(node)
        if isinstance(node, ast.Binary):
            lhs, rhs = self.expr(node.lhs), self.expr(node.rhs)
            return INT_OPS[node.op](lhs, rhs, loc=self.loc(span)).result
        if isinstance(node, ast.Unary):
            return arith.SubIOp(
                self.const(0, span), self.expr(node.operand), loc=self.loc(span)
            ).result
        if isinstance(node, ast.Call):
            return self.int_call(node)
        if isinstance(node, ast.Cast):
            return self.expr(node.value)
        if isinstance(node, ast.Index):
            return self.read(node)
        raise AssertionError(f"no runtime value for {type(node).__name__}")

    def attr_index(self, node: ast.Attr) -> ir.Value:
        base = node.value
        # cluster.rank: block.x mod S (with cluster(1) it is the checker's static 0)
        if isinstance(base, ast.Name) and base.id == "cluster":
            block = self.op(
                "tile.block_id", node.span, [], [ir.IndexType.get()], {"dim": i64(0)}
            ).result
            size = self.const(self.k.cluster, node.span)
            return arith.RemUIOp(block, size, loc=self.loc(node.span)).result
        if isinstance(base, ast.Name) and base.id in ID_OPS:
            name = ID_OPS[base.id]
            return self.op(
                name, node.span, [], [ir.IndexType.get()], {"dim": i64(DIMS[node.attr])}
            ).result
        m, n = self.lookup(base.id)
        return m if node.attr == "m" else n

    def int_call(self, node: ast.Call) -> ir.Value:
        loc = self.loc(node.span)
        if node.func in ("cdiv", "ceil_div"):
            a, b = (self.expr(x) for x in node.args)
            return arith.CeilDivSIOp(a, b, loc=loc).result
        if node.func in ("min", "max"):
            a, b = (self.expr(x) for x in node.args)
            op = arith.MinSIOp if node.func == "min" else arith.MaxSIOp
            return op(a, b, loc=loc).result
        # size(tensor, mode): the only runtime query the checker lets through
        tensor = self.expr(node.args[0])
        mode = self.values[id(node.args[1])].value if len(node.args) > 1 else 0
        return self.op(
            "tile.size", node.span, [tensor], [ir.IndexType.get()], {"mode": i64(mode)}
        ).result

    def float_value(self, v: FloatV, node: ast.Node) -> ir.Value:
        if v.value is not None:
            return arith.ConstantOp(
                elem(v.elem), constant_attr(v, v.elem), loc=self.loc(node.span)
            ).result
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Binary):
            lhs = self.scalar(node.lhs, v.elem)
            rhs = self.scalar(node.rhs, v.elem)
            fused = {"fastmath": contract()} if BINARY[node.op] in CONTRACTED else {}
            return FLOAT_OPS[node.op](lhs, rhs, loc=self.loc(node.span), **fused).result
        if isinstance(node, ast.Unary):
            return arith.NegFOp(self.scalar(node.operand, v.elem), loc=self.loc(node.span)).result
        if isinstance(node, ast.Cast):
            return self.scalar(node.value, v.elem)
        raise AssertionError(f"no runtime value for {type(node).__name__}")

    def scalar(self, node: ast.Node, elem_name: str) -> ir.Value:
        """A scalar operand of elementwise math as a value of type `elem_name`."""
        v = self.values[id(node)]
        loc, target = self.loc(node.span), elem(elem_name)
        if isinstance(v, (IntV, FloatV)) and v.value is not None:
            return arith.ConstantOp(target, constant_attr(v, elem_name), loc=loc).result
        value = self.expr(node)
        if isinstance(v, IntV):  # an index
            if not is_float_type(elem_name):
                return arith.IndexCastOp(target, value, loc=loc).result
            wide = arith.IndexCastOp(ir.IntegerType.get_signless(64), value, loc=loc).result
            return arith.SIToFPOp(target, wide, loc=loc).result
        if v.elem == elem_name:
            return value
        if not is_float_type(elem_name):
            return arith.FPToSIOp(target, value, loc=loc).result
        src, dst = SCALAR_TYPES[v.elem][1], SCALAR_TYPES[elem_name][1]
        if src == dst:  # f16 <-> bf16: through f32, as neither is wider
            value = arith.ExtFOp(elem("f32"), value, loc=loc).result
            src = 4
        op = arith.ExtFOp if dst > src else arith.TruncFOp
        return op(target, value, loc=loc).result

    # Tensors ------------------------------------------------------------------------------------

    def tensor(self, node: ast.Node, v: TensorV | MmaV) -> ir.Value:
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        result_type = self.result_type(v)
        if isinstance(node, ast.Index):
            return self.index_view(node, result_type)
        if isinstance(node, ast.Binary) and node.op in PREDICATES:
            return self.compare(node, v)
        if isinstance(node, ast.Binary):
            return self.elementwise(
                "tile.binary", BINARY[node.op], [node.lhs, node.rhs], v, node.span
            )
        if isinstance(node, ast.Unary):
            return self.elementwise("tile.unary", "neg", [node.operand], v, node.span)
        if isinstance(node, ast.Cast):
            return self.op("tile.convert", node.span, [self.expr(node.value)], [result_type]).result
        return self.tensor_call(node, v, result_type)

    def result_type(self, v: TensorV | MmaV) -> ir.Type:
        return mma_type(v) if isinstance(v, MmaV) else tensor_type(v)

    def elementwise(
        self, name: str, op: str, nodes: list[ast.Node], v: TensorV, span: Span
    ) -> ir.Value:
        operands = []
        for n in nodes:
            nv = self.values[id(n)]
            operands.append(
                self.tensor_as(n, v) if isinstance(nv, TensorV) else self.scalar(n, v.elem)
            )
        if name == "tile.binary" and len(operands) == 1:
            name = "tile.unary"
        return self.op(
            name, span, operands, [self.result_type(v)], {"op": ir.StringAttr.get(op)}
        ).result

    def compare(self, node: ast.Binary, v: TensorV) -> ir.Value:
        """Both sides in the type elementwise math on them computes in, then compared."""
        sides = [node.lhs, node.rhs]
        like = TensorV(result_elem([self.values[id(n)] for n in sides]), "register", v.layout)
        operands = [self.operand_as(n, like) for n in sides]
        return self.op(
            "tile.compare",
            node.span,
            operands,
            [tensor_type(v)],
            {"pred": ir.StringAttr.get(PREDICATES[node.op])},
        ).result

    def operand_as(self, node: ast.Node, result: TensorV) -> ir.Value:
        """An operand of elementwise math: a tensor or a scalar, of the result's element type."""
        if isinstance(self.values[id(node)], TensorV):
            return self.tensor_as(node, result)
        return self.scalar(node, result.elem)

    def tensor_as(self, node: ast.Node, result: TensorV) -> ir.Value:
        """A tensor operand of elementwise math, converted to the result's element type."""
        value, v = self.expr(node), self.values[id(node)]
        if v.elem == result.elem:
            return value
        converted = TensorV(result.elem, "register", v.layout, None, v.block_shape, v.mma)
        return self.op("tile.convert", node.span, [value], [tensor_type(converted)]).result

    def tuple_values(self, node: ast.Node) -> list[ir.Value | None]:
        """Index values of a tuple's runtime top-level items (a literal, a let-bound name or one
        int); static and other items are None (their value is in `values`)."""
        node = chosen(node, self.values)
        if isinstance(node, ast.Name) and isinstance(self.values[id(node)], TupleV):
            return self.lookup(node.id)
        if isinstance(node, ast.Tuple):
            return [self.item_value(x) for x in node.items]
        return [self.item_value(node)]

    def item_value(self, node: ast.Node) -> ir.Value | None:
        v = self.values[id(node)]
        return self.expr(node) if isinstance(v, IntV) and not v.static else None

    def coord_operands(self, node: ast.Node) -> list[ir.Value]:
        """The runtime coordinates of a coordinate tuple, in order (one per `?` of its spec)."""
        items = _items(self.values[id(node)])
        values = self.tuple_values(node)
        return [
            val
            for v, val in zip(items, values, strict=True)
            if isinstance(v, IntV) and not v.static
        ]

    def tensor_call(self, node: ast.Call, v: TensorV | MmaV, rtype: ir.Type) -> ir.Value:
        f, span = node.func, node.span
        if f in ("local_tile", "partition", "permute", "prepend", "append"):
            return self.view_call(node, rtype)
        if f in REDUCE or f in CLUSTER_REDUCE:
            return self.reduce_call(node, rtype)
        if f == "shared":
            attrs = {"name": ir.StringAttr.get(v.alloc.name)}
            if v.alloc.reuse is not None:
                attrs["reuse"] = ir.StringAttr.get(v.alloc.reuse.name)
            layout = self.layout_value(node.args[0], v.layout)
            operands = [] if layout is None else [layout]
            return self.op("tile.alloc_shared", span, operands, [rtype], attrs).result
        if f == "fragment":
            return self.fragment(node, v, rtype)
        if f == "load":
            other = self.values.get(id(node.kwarg("other"))) if node.kwarg("other") else None
            src = self.values[id(node.args[0])]
            spread = node.kwarg("like") or node.kwarg("mask")
            like = [self.expr(spread)] if spread else []
            attrs = {"other": constant_attr(other, src.elem)}
            if node.kwarg("mask"):
                attrs["masked"] = ir.UnitAttr.get()  # the `like` operand is the mask
            return self.op(
                "tile.load", span, [self.expr(node.args[0]), *like], [rtype], attrs
            ).result
        if f == "relayout":
            like = [self.expr(node.kwarg("like"))] if node.kwarg("like") else []
            operands = [self.expr(node.args[0]), self.expr(node.kwarg("through")), *like]
            return self.op("tile.relayout", span, operands, [rtype]).result
        if f == "tiled_mma":
            return self.op("tile.tiled_mma", span, [], [rtype]).result
        if f in ("max", "min"):
            return self.elementwise("tile.binary", f, node.args, v, span)
        if f == "where":
            pred = self.expr(node.args[0])
            a, b = (self.operand_as(n, v) for n in node.args[1:])
            return self.op("tile.select", span, [pred, a, b], [rtype]).result
        if f == "coord":
            mode = self.values[id(node.kwarg("mode"))].value if node.kwarg("mode") else 0
            x = self.expr(node.args[0])
            return self.op("tile.coord", span, [x], [rtype], {"mode": i64(mode)}).result
        return self.elementwise("tile.unary", f, node.args, v, span)

    def view_call(self, node: ast.Call, rtype: ir.Type) -> ir.Value:
        """local_tile, partition, permute, prepend and append: a view of a tensor."""
        f, span = node.func, node.span
        if f == "local_tile":
            coord_node = node.args[2]
            coords = _items(self.values[id(coord_node)])
            tile = [x.value for x in _items(self.values[id(node.args[1])])]
            return self.op(
                "tile.local_tile",
                span,
                [self.expr(node.args[0]), *self.coord_operands(coord_node)],
                [rtype],
                {
                    "tile": ir.DenseI64ArrayAttr.get(tile),
                    "coord": ir.StringAttr.get(self.coord_spec(coords)),
                },
            ).result
        if f == "partition":
            threads = self.values[id(node.args[1])]
            # A layout, or a shape (the checker made sure), which spreads the threads compactly.
            spec = str(
                threads.obj if isinstance(threads, LayoutV) else L.Layout(int_tuple(threads))
            )
            return self.op(
                "tile.partition",
                span,
                [self.expr(node.args[0])],
                [rtype],
                {"threads": ir.StringAttr.get(spec)},
            ).result
        if f == "permute":
            perm = [x.value for x in _items(self.values[id(node.args[1])])]
            return self.op(
                "tile.permute",
                span,
                [self.expr(node.args[0])],
                [rtype],
                {"perm": ir.DenseI64ArrayAttr.get(perm)},
            ).result
        if f in ("prepend", "append"):  # the new mode's size: in the type, or an operand
            size = self.values[id(node.args[1])]
            dynamic = [] if size.static else [self.expr(node.args[1])]
            return self.op(f"tile.{f}", span, [self.expr(node.args[0]), *dynamic], [rtype]).result
        raise AssertionError(f"{f} is not a view builtin")

    def reduce_call(self, node: ast.Call, rtype: ir.Type) -> ir.Value:
        """reduce_max/min/sum along a mode, cluster_max/min/sum over a cluster."""
        f, span = node.func, node.span
        if f in REDUCE:
            mode = self.values[id(node.kwarg("mode"))].value if node.kwarg("mode") else 0
            attrs = {"kind": ir.StringAttr.get(REDUCE[f]), "mode": i64(mode)}
            group = node.kwarg("group")
            if group is not None:  # runs of `group` elements: tile.reduce_group
                attrs["group"] = i64(self.values[id(group)].value)
            name = "tile.reduce_group" if group is not None else "tile.reduce"
            return self.op(name, span, [self.expr(node.args[0])], [rtype], attrs).result
        kind = {"kind": ir.StringAttr.get(CLUSTER_REDUCE[f])}  # cluster_max/min/sum
        x = self.expr(node.args[0])
        if self.k.cluster == 1:
            return x
        return self.op("tile.cluster_reduce", span, [x], [rtype], kind).result

    def fragment(self, node: ast.Call, v: TensorV, rtype: ir.Type) -> ir.Value:
        operands = []
        shape = v.block_shape or tuple(L.flatten(L.shape(v.layout)))
        if v.mma is not None:  # the first argument of partition_c(mma, shape)
            operands.append(self.expr(chosen(node.args[0], self.values).args[0]))
        return self.op(
            "tile.fragment",
            node.span,
            operands,
            [rtype],
            {"block_shape": ir.DenseI64ArrayAttr.get(list(shape))},
        ).result

    # Actions ------------------------------------------------------------------------------------

    def action(self, node: ast.Call) -> None:
        f, span = node.func, node.span
        if f == "barrier":
            self.op("tile.barrier", span, [], [])
        elif f == "store":
            mask = [self.expr(node.kwarg("mask"))] if node.kwarg("mask") else []
            operands = [self.expr(node.args[0]), self.expr(node.args[1]), *mask]
            self.op("tile.store", span, operands, [])
        elif f == "copy":
            atom = node.targs[0] if node.targs else None
            name = (atom.text if isinstance(atom, ast.AtomName) else atom.id) if atom else "auto"
            attrs = {"atom": ir.StringAttr.get(name)}
            narrow = node.kwarg("narrow")
            if narrow is not None and self.values[id(narrow)].value:
                attrs["tile.narrow"] = ir.UnitAttr.get()
            unbounded = node.kwarg("unbounded")
            if unbounded is not None and self.values[id(unbounded)].value:
                attrs["tile.unbounded"] = ir.UnitAttr.get()
            self.op(
                "tile.copy",
                span,
                [self.expr(node.args[0]), self.expr(node.args[1])],
                [],
                attrs,
            )
        elif f == "gemm":
            self.op("tile.gemm", span, [self.expr(a) for a in node.args], [])


def _items(v: V) -> list[V]:
    return v.items if isinstance(v, TupleV) else [v]


def elem(name: str) -> ir.Type:
    return ir.Type.parse(SCALAR_TYPES[name][0])


def tensor_type(t: TensorV) -> ir.Type:
    return TensorType(SCALAR_TYPES[t.elem][0], t.space, str(t.layout)).get()


def mma_type(m: MmaV) -> ir.Type:
    """The tiled MMA's type; wgmma's N is filled into the atom's name (`64xNx16` -> `64x256x16`)."""
    atom = m.atom.replace("xNx", f"x{m.n}x") if m.n is not None else m.atom
    return MmaType(atom, L.tuple_str(m.tiling)).get()


def constant_attr(v: V | None, elem_name: str) -> ir.Attribute:
    """A static number (0 when absent) as an attribute of element type `elem_name`; integers
    wrap to the type's width, as a conversion to it would."""
    ty = elem(elem_name)
    number = v.value if isinstance(v, (IntV, FloatV)) and v.value is not None else 0
    if is_float_type(elem_name):
        return ir.FloatAttr.get(ty, float(number))
    bits = ir.IntegerType(ty).width
    value = int(number) % (1 << bits) if math.isfinite(number) else 0
    if not elem_name.startswith("u") and value >= 1 << (bits - 1) and bits > 1:
        value -= 1 << bits
    return ir.IntegerAttr.get(ty, value)


def i64(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)

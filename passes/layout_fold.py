"""Passes: `layout-fold`, evaluate the static parts of layout IR with the Python algebra.

Every layout op whose layout operands are static is replaced by its value:

    %a = "layout.make"() : () -> !layout.layout<"(4,8):(8,1)">
    %b = "layout.make"() : () -> !layout.layout<"(2,2):(1,4)">
    %c = "layout.composition"(%a, %b) : (...) -> !layout.layout<"(2,2):(8,4)">
    %n = "layout.size"(%c) : (...) -> index
  →
    %c = "layout.make"() : () -> !layout.layout<"(2,2):(8,4)">
    %n = arith.constant 4 : index

`layout.make` entries fed by `arith.constant` become static; `crd2idx`/`apply` with constant
coordinates become constants. Dynamic parts stay SSA values for `convert-layout-to-arith`.
An undefined operation (e.g. a composition whose shapes do not divide) is a located error, and
so is a declared static result type that disagrees with the algebra.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.binding import erase_dead, walk
from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.ir import (
    BINARY_OPS,
    INT_ATTRS,
    UNARY_OPS,
    evaluate,
    inner,
    is_static,
    layout_of,
    make,
    slice_pattern,
)
from tilec.passes.base import Pass, register


def constant_index(value: ir.Value) -> int | None:
    """The integer of an `arith.constant` index/integer value, else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


def substitute(layout: A.Layout, values: list[int]) -> A.Layout:
    """`layout` with its `?` entries (shape first, then stride, left to right) replaced."""
    it = iter(values)

    def fill(t: A.IntTuple) -> A.IntTuple:
        if isinstance(t, tuple):
            return tuple(fill(x) for x in t)
        return next(it) if t is A.DYN else t

    return A.Layout(fill(layout.shape), fill(layout.stride))


@register
class LayoutFold(Pass):
    """Evaluate static layout ops with the algebra; keep dynamic parts as SSA values."""

    name = "layout-fold"

    def run(self, module: ir.Operation) -> None:
        ops: list[ir.Operation] = []
        walk(module, lambda op: ops.append(op) if op.name.startswith("layout.") else None)
        failed = False
        for op in ops:  # pre-order: producers before their users within a block
            try:
                self.fold(op)
            except A.LayoutError as exc:
                self.error(op, str(exc))
                failed = True
        if failed:
            self.fail()
        erase_dead(module, "layout.")

    def fold(self, op: ir.Operation) -> None:
        name = op.name.removeprefix("layout.")
        if name == "make":
            self.fold_make(op)
            return
        if not op.operands or layout_of(op.operands[0].type) is None:
            return
        layouts = [layout_of(v.type) for v in op.operands if layout_of(v.type) is not None]
        if not all(is_static(x) for x in layouts):
            return
        attrs = {k: ir.IntegerAttr(op.attributes[k]).value for k in INT_ATTRS.get(name, ())}
        if name in BINARY_OPS or name in UNARY_OPS or name in INT_ATTRS:
            self.replace_layout(op, evaluate(name, layouts, attrs))
        elif name == "slice":
            pattern = ir.StringAttr(op.attributes["pattern"]).value
            self.replace_layout(op, A.slice(slice_pattern(pattern), layouts[0]))
        elif name == "complement":
            cotarget = constant_index(op.operands[1])
            if cotarget is not None:
                self.replace_layout(op, evaluate(name, layouts, attrs, cotarget))
        elif name == "max_common_vector":
            self.replace_index(op, A.max_common_vector(layouts[0], layouts[1]))
        elif name in ("size", "cosize"):
            self.replace_index(op, getattr(A, name)(layouts[0]))
        elif name in ("crd2idx", "apply"):
            consts = [constant_index(v) for v in list(op.operands)[1:]]
            if all(c is not None for c in consts):
                self.replace_index(op, self.index_value(name, layouts[0], consts))

    @staticmethod
    def index_value(name: str, layout: A.Layout | A.ComposedLayout, args: list[int]) -> int:
        if name == "apply":
            return layout(args[0])
        flat_shape = A.flatten(inner(layout).shape)
        if len(args) != len(flat_shape):
            raise A.LayoutError(
                f"crd2idx on {layout} takes {len(flat_shape)} coordinates, got {len(args)}"
            )
        index = A.crd2idx(tuple(args), A.flatten(inner(layout).shape), inner(layout).stride)
        return (
            layout.outer(layout.offset + index) if isinstance(layout, A.ComposedLayout) else index
        )

    def fold_make(self, op: ir.Operation) -> None:
        consts = [constant_index(v) for v in op.operands]
        if not consts or any(c is None for c in consts):
            return
        layout = layout_of(op.results[0].type)
        if len(consts) != str(op.results[0].type).count("?"):
            raise A.LayoutError(f"layout.make of {layout} needs one index operand per '?'")
        if isinstance(layout, A.ComposedLayout):
            folded = A.ComposedLayout(layout.outer, layout.offset, substitute(layout.inner, consts))
        else:
            folded = substitute(layout, consts)
        self.replace_layout(op, folded, check=False)

    def replace_layout(self, op: ir.Operation, value: object, check: bool = True) -> None:
        declared = layout_of(op.results[0].type)
        if check and declared is not None and is_static(declared) and declared != value:
            raise A.LayoutError(
                f"'{op.name}' declares result {declared} but the algebra gives {value}"
            )
        with ir.InsertionPoint(op), op.location:
            new = make(str(value))
        op.results[0].replace_all_uses_with(new.results[0])
        op.erase()

    def replace_index(self, op: ir.Operation, value: int) -> None:
        with ir.InsertionPoint(op), op.location:
            new = arith.ConstantOp(ir.IndexType.get(), value)
        op.results[0].replace_all_uses_with(new.result)
        op.erase()

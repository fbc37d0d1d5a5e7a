"""Passes: `convert-layout-to-arith`, what remains of layout IR becomes `arith` index math.

Each `crd2idx`/`apply`/`size`/`cosize` is expanded in terms of its `layout.make`'s entries
(static entries as constants, `?` entries as the make's SSA operands); swizzles become
xor/shift/and. Powers of two use shifts and masks, never div/rem:

    %l = "layout.make"(%ld) : (index) -> !layout.layout<"(8,?):(?,1)">   // hmm: (8,?) row-major
    %o = "layout.apply"(%l, %i) : (..., index) -> index
  →
    %r = arith.andi %i, %c7 ; %q = arith.shrui %i, %c3         // i mod 8, i div 8
    %o = arith.addi (arith.muli %r, %ld), %q

Run `layout-fold` first: ops between layouts (composition, divide, ...) must be static by now;
one that is not is a located error. `layout.make` ops die with their last use.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.binding import erase_unused, walk
from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.ir import layout_of
from tilec.lowering import IndexBuilder, Term
from tilec.passes.base import Pass, register


def entries(make: ir.Operation) -> tuple[list[Term], list[Term], A.Layout | A.ComposedLayout]:
    """The flattened shape and stride of a `layout.make`, `?` entries as its operands."""
    layout = layout_of(make.results[0].type)
    lay = layout.inner if isinstance(layout, A.ComposedLayout) else layout
    operands = iter(list(make.operands))
    shape = [next(operands) if s is A.DYN else s for s in A.flatten(lay.shape)]
    stride = [next(operands) if d is A.DYN else d for d in A.flatten(lay.stride)]
    return shape, stride, layout


@register
class ConvertLayoutToArith(Pass):
    """Lower layout.crd2idx/apply/size/cosize to arith index math; swizzles to xor/shift/and."""

    name = "convert-layout-to-arith"

    def run(self, module: ir.Operation) -> None:
        ops: list[ir.Operation] = []
        walk(module, lambda op: ops.append(op) if op.name.startswith("layout.") else None)
        makes = [op for op in ops if op.name == "layout.make"]
        failed = False
        for op in ops:
            if op.name != "layout.make":
                failed |= not self.lower(op)  # erases `op`
        if failed:
            self.fail()
        # The makes no op reads any more (the rest are lowered): no second walk of the module.
        erase_unused(makes)

    def lower(self, op: ir.Operation) -> bool:
        name = op.name.removeprefix("layout.")
        if name not in ("crd2idx", "apply", "size", "cosize"):
            self.error(
                op,
                f"'{op.name}' on a dynamic layout cannot be lowered to arith; "
                "only static layouts fold (run layout-fold first)",
            )
            return False
        source = op.operands[0].owner
        if not isinstance(source, ir.OpView) or source.operation.name != "layout.make":
            self.error(op, f"'{op.name}' needs its layout from a layout.make (run layout-fold)")
            return False
        wanted = str(source.results[0].type).count("?")
        if len(source.operands) != wanted:
            self.error(source, f"layout.make needs {wanted} index operand(s), one per '?'")
            return False
        shape, stride, layout = entries(source.operation)
        args = list(op.operands)[1:]
        with ir.InsertionPoint(op), op.location:
            b = IndexBuilder()
            if name == "size":
                result = self.product(b, shape)
            elif name == "cosize":
                # cosize = 1 + sum((s-1) * |d|); dynamic strides are taken as non-negative.
                last = 0
                for s, d in zip(shape, stride, strict=True):
                    last = b.add(
                        last,
                        b.mul(
                            b.add(s, -1)
                            if isinstance(s, int)
                            else arith.SubIOp(s, b.value(1)).result,
                            abs(d) if isinstance(d, int) else d,
                        ),
                    )
                result = b.add(last, 1)
            else:
                if name == "apply":
                    coords = self.idx2crd(b, args[0], shape)
                elif len(args) != len(shape):
                    self.error(
                        op,
                        f"crd2idx takes {len(shape)} coordinates (one per flattened "
                        f"mode of {layout}), got {len(args)}",
                    )
                    return False
                else:
                    coords = args
                result = 0
                for c, d in zip(coords, stride, strict=True):
                    result = b.add(result, b.mul(c, d))
                if isinstance(layout, A.ComposedLayout):
                    result = b.add(result, layout.offset)
                    outer = self.outer(op, b, layout.outer, result)
                    if outer is None:
                        return False
                    result = outer
            value = b.value(result)
        op.results[0].replace_all_uses_with(value)
        op.erase()
        return True

    def outer(self, op: ir.Operation, b: IndexBuilder, outer: object, index: Term) -> Term | None:
        """A composition's outer function applied to `index` (the inner layout's value plus
        the offset): a swizzle's xor, or a static layout's idx2crd and strides; else a located
        error (None)."""
        if isinstance(outer, A.Swizzle):
            return b.swizzle(outer, index)
        if isinstance(outer, A.Layout):
            shape, stride = A.flatten(outer.shape), A.flatten(outer.stride)
            if all(isinstance(x, int) and x is not A.DYN for x in (*shape, *stride)):
                result: Term = 0
                coords = self.idx2crd(b, b.value(index), list(shape))
                for c, d in zip(coords, stride, strict=True):
                    result = b.add(result, b.mul(c, d))
                return result
        self.error(op, f"the outer function {outer} of a composition cannot be lowered to arith")
        return None

    @staticmethod
    def product(b: IndexBuilder, shape: list[Term]) -> Term:
        total: Term = 1
        for s in shape:
            total = b.mul(total, s)
        return total

    @staticmethod
    def idx2crd(b: IndexBuilder, index: ir.Value, shape: list[Term]) -> list[Term]:
        """Column-major coordinates of a linear index; the last mode needs no remainder."""
        coords: list[Term] = []
        rest: Term = index
        for k, s in enumerate(shape):
            coords.append(rest if k == len(shape) - 1 else b.rem(rest, s))
            rest = b.div(rest, s) if k < len(shape) - 1 else rest
        return coords

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

import math

from mlir import ir
from mlir.dialects import arith

from tilec.binding import erase_dead, walk
from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.ir import layout_of
from tilec.passes.base import Pass, register

Term = int | ir.Value  # a static integer or an SSA index value


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class IndexBuilder:
    """Emits index arithmetic at the current insertion point, folding what is static."""

    def __init__(self) -> None:
        self.index = ir.IndexType.get()

    def value(self, t: Term) -> ir.Value:
        return arith.ConstantOp(self.index, t).result if isinstance(t, int) else t

    def add(self, a: Term, b: Term) -> Term:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0:
            return b
        if b == 0:
            return a
        return arith.AddIOp(self.value(a), self.value(b)).result

    def sub(self, a: Term, b: Term) -> Term:
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if b == 0:
            return a
        return arith.SubIOp(self.value(a), self.value(b)).result

    def mul(self, a: Term, b: Term) -> Term:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if isinstance(a, int):
            a, b = b, a
        if b == 0:
            return 0
        if b == 1:
            return a
        if isinstance(b, int) and is_pow2(b):
            return arith.ShLIOp(a, self.value(b.bit_length() - 1)).result
        return arith.MulIOp(self.value(a), self.value(b)).result

    def div(self, a: Term, b: Term) -> Term:
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        if b == 1:
            return a
        if isinstance(b, int) and is_pow2(b):
            return arith.ShRUIOp(self.value(a), self.value(b.bit_length() - 1)).result
        return arith.DivUIOp(self.value(a), self.value(b)).result

    def rem(self, a: Term, b: Term) -> Term:
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        if b == 1:
            return 0
        if isinstance(b, int) and is_pow2(b):
            return arith.AndIOp(self.value(a), self.value(b - 1)).result
        return arith.RemUIOp(self.value(a), self.value(b)).result

    def swizzle(self, sw: A.Swizzle, offset: Term) -> Term:
        """offset ^ ((offset & yyy_mask) >> S)   (<< -S when S < 0): see `algebra.Swizzle`."""
        if isinstance(offset, int):
            return sw(offset)
        if sw.bits == 0:
            return offset
        yyy = arith.AndIOp(offset, self.value(sw.yyy_mask)).result
        amount = self.value(abs(sw.shift))
        moved = arith.ShRUIOp(yyy, amount) if sw.shift >= 0 else arith.ShLIOp(yyy, amount)
        return arith.XOrIOp(offset, moved.result).result


def known_multiple(t: Term, depth: int = 16) -> int:
    """A number that surely divides `t` (the static factors of its arith expression; 1 when
    nothing is known). 0 divides by anything: it answers 2**62."""
    if isinstance(t, int):
        return abs(t) or 1 << 62
    if depth == 0 or not isinstance(t, ir.OpResult):
        return 1
    op = t.owner
    name = op.name
    args = list(op.operands)
    if name == "arith.constant":
        attr = op.attributes["value"]
        return known_multiple(ir.IntegerAttr(attr).value) if isinstance(attr, ir.IntegerAttr) else 1
    if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui"):
        return known_multiple(args[0], depth - 1)
    if name == "arith.muli":
        return min(known_multiple(args[0], depth - 1) * known_multiple(args[1], depth - 1), 1 << 62)
    if name in ("arith.addi", "arith.subi"):
        return math.gcd(known_multiple(args[0], depth - 1), known_multiple(args[1], depth - 1))
    if name == "arith.shli" and isinstance(args[1], ir.OpResult):
        shift = known_multiple(args[1], 1)
        if args[1].owner.name == "arith.constant" and shift < 62:
            return min(known_multiple(args[0], depth - 1) << shift, 1 << 62)
    return 1


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
        failed = False
        for op in ops:
            if op.name == "layout.make":
                continue
            failed |= not self.lower(op)
        if failed:
            self.fail()
        erase_dead(module, "layout.make")

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
                    if isinstance(layout.outer, A.Swizzle):
                        result = b.swizzle(layout.outer, result)
            value = b.value(result)
        op.results[0].replace_all_uses_with(value)
        op.erase()
        return True

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

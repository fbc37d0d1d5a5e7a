"""A tile-opt plugin (the docs/writing-a-pass.md tutorial): integer multiply by 2^k → shift."""

from mlir import ir
from mlir.dialects import arith

from tilec.binding import walk
from tilec.passes import Pass, register


def power_of_two_exponent(value: ir.Value) -> int | None:
    """k when `value` is an `arith.constant` equal to 2^k (k >= 1), else None."""
    owner = value.owner
    if not isinstance(owner, ir.OpView) or owner.operation.name != "arith.constant":
        return None
    attr = owner.attributes["value"]
    if not isinstance(attr, ir.IntegerAttr) or attr.value < 2 or attr.value & (attr.value - 1):
        return None
    return attr.value.bit_length() - 1


@register
class MulToShift(Pass):
    """Rewrite `arith.muli %x, 2^k` into `arith.shli %x, k`."""

    name = "mul-to-shift"

    def run(self, module: ir.Operation) -> None:
        muls: list[ir.Operation] = []
        walk(module, lambda op: muls.append(op) if op.name == "arith.muli" else None)
        for mul in muls:
            x, c = mul.operands
            k = power_of_two_exponent(c)
            if k is None:
                x, c = c, x  # the constant may come first
                k = power_of_two_exponent(c)
            if k is None:
                continue
            with ir.InsertionPoint(mul), mul.location:
                shift = arith.ConstantOp(x.type, k)
                shl = arith.ShLIOp(x, shift.result)
            mul.result.replace_all_uses_with(shl.result)
            mul.erase()

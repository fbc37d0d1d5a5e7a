"""What the lowering passes are built from (`tilec.lowering`): this module, the located error
a pass raises and the index arithmetic it emits; beside it, the `tile_*` modules of the SM80
rungs and the `sm90_*` modules of the SM90 passes (docs/architecture.md). None is a pass.

`LoweringError(op, message)` is what a pass raises for an op it cannot lower; `passes.base`
turns it into a diagnostic at the op's source location. `IndexBuilder` emits `index`
arithmetic at the insertion point and folds what is static (a `Term` is a static integer or
an SSA index value; selects, comparisons and min/max fold to Python ints and bools too);
`known_multiple` says what surely divides a term (a kernel's `assume(...)` facts included);
`ID_OPS` maps the tile special ids to
gpu's: convert-layout-to-arith, the SM80 and SM90 rungs and their helpers share
them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, gpu

from tilec.binding import sibling
from tilec.dialects.layout import algebra as A


class LoweringError(Exception):
    """A located failure: `op` cannot be lowered, for the reason in the message."""

    def __init__(self, op: ir.Operation | ir.OpView, message: str) -> None:
        super().__init__(message)
        self.op = op


Term = int | ir.Value  # a static integer or an SSA index value
Flag = bool | ir.Value  # a static truth or an SSA i1 value
_COMPARE = {
    "eq": operator.eq, "ne": operator.ne, "slt": operator.lt, "ult": operator.lt,
    "ugt": operator.gt, "uge": operator.ge, "ule": operator.le,
}  # fmt: skip

# The special ids: a tile op's `dim` attribute indexes DIMS; each becomes gpu's op.
DIMS = (gpu.Dimension.x, gpu.Dimension.y, gpu.Dimension.z)
ID_OPS = {
    "tile.block_id": gpu.BlockIdOp,
    "tile.thread_id": gpu.ThreadIdOp,
    "tile.grid_dim": gpu.GridDimOp,
}


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

    # Selects, comparisons and extremes fold too: with static operands they give Python ints
    # and bools (a `Flag` is a bool or an i1 value), so arithmetic written with them can be
    # run on numbers (sm90_split's plan, test/unit/test_split_plan.py).
    def flag(self, x: Term | bool) -> ir.Value:
        """An i1 (for a bool) or index value of `x`."""
        if isinstance(x, bool):
            return arith.ConstantOp(ir.IntegerType.get_signless(1), int(x)).result
        return self.value(x)

    def select(self, cond: Flag, x: Term | bool, y: Term | bool) -> Term | bool:
        if isinstance(cond, bool):
            return x if cond else y
        return arith.SelectOp(cond, self.flag(x), self.flag(y)).result

    def cmp(self, pred: str, x: Term, y: Term) -> Flag:
        """`arith.cmpi pred` (eq ne slt ult ugt uge ule)."""
        if isinstance(x, int) and isinstance(y, int):
            return _COMPARE[pred](x, y)
        return arith.CmpIOp(getattr(arith.CmpIPredicate, pred), self.value(x), self.value(y)).result

    def both(self, x: Flag, y: Flag) -> Flag:
        if isinstance(x, bool) or isinstance(y, bool):
            fixed, other = (x, y) if isinstance(x, bool) else (y, x)
            return other if fixed else False
        return arith.AndIOp(x, y).result

    def either(self, x: Flag, y: Flag) -> Flag:
        if isinstance(x, bool) or isinstance(y, bool):
            fixed, other = (x, y) if isinstance(x, bool) else (y, x)
            return True if fixed else other
        return arith.OrIOp(x, y).result

    def negate(self, x: Flag) -> Flag:
        return (not x) if isinstance(x, bool) else arith.XOrIOp(x, self.flag(True)).result

    def umax(self, x: Term, y: Term) -> Term:
        return self._extreme(arith.MaxUIOp, max, x, y)

    def umin(self, x: Term, y: Term) -> Term:
        return self._extreme(arith.MinUIOp, min, x, y)

    def smax(self, x: Term, y: Term) -> Term:
        return self._extreme(arith.MaxSIOp, max, x, y)

    def smin(self, x: Term, y: Term) -> Term:
        return self._extreme(arith.MinSIOp, min, x, y)

    def _extreme(self, op: type, pick: Callable[[int, int], int], x: Term, y: Term) -> Term:
        if isinstance(x, int) and isinstance(y, int):
            return pick(x, y)
        return op(self.value(x), self.value(y)).result

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


# A kernel's assume(skn % 8 == 0, ...) facts, on its function: {skn = 8}, by argument name.
ASSUME = "tile.assume"


def kernel_assumptions(v: ir.Value) -> tuple[ir.DictAttr, str] | None:
    """The assume(...) facts of the kernel whose argument `v` is (through an address space
    cast, for a tensor's pointer) and that argument's name; None for any other value or a
    kernel without the clause."""
    if isinstance(v, ir.OpResult) and v.owner.name == "llvm.addrspacecast":
        v = v.owner.operands[0]
    if not isinstance(v, ir.BlockArgument):
        return None
    func = v.owner.owner
    if (
        func is None
        or ASSUME not in func.attributes
        or "tile.arg_names" not in func.attributes
        or v.owner != func.regions[0].blocks[0]
    ):
        return None
    name = ir.StringAttr(ir.ArrayAttr(func.attributes["tile.arg_names"])[v.arg_number]).value
    return ir.DictAttr(func.attributes[ASSUME]), name


def assumed_multiple(v: ir.Value) -> int:
    """What the kernel's assume(...) clause says divides the argument `v` (1: nothing)."""
    found = kernel_assumptions(v)
    if found is None or found[1] not in found[0]:
        return 1
    return ir.IntegerAttr(found[0][found[1]]).value


def assumed_aligned(ptr: ir.Value) -> bool:
    """Whether `ptr` is a tensor argument of a kernel with assume(...) facts: such a build
    takes its bases as 16-byte aligned, which every launch checks (the manifest's `align`).
    Builds without the clause keep testing them."""
    return kernel_assumptions(ptr) is not None


def known_multiple(t: Term, depth: int = 16) -> int:
    """A number that surely divides `t` (the static factors of its arith expression, and what
    the kernel's assume(...) states of its arguments; 1 when nothing is known). 0 divides by
    anything: it answers 2**62."""
    if isinstance(t, int):
        return abs(t) or 1 << 62
    if depth == 0:
        return 1
    if not isinstance(t, ir.OpResult):
        return assumed_multiple(t)
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


def after(op: ir.Operation) -> ir.InsertionPoint:
    """The insertion point right after `op` in its block."""
    following = sibling(op, 1)
    return ir.InsertionPoint(op.block) if following is None else ir.InsertionPoint(following)

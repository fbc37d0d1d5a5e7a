"""Stages `lowered` and `gpu`: the bank report's address evaluator, every thread at once.

`banks.Evaluator` follows an address expression for one thread; the report needs it for every
thread of the block, every sampled loop index and every access. `BlockLanes` evaluates each
SSA value once per loop binding for all threads together, as a numpy vector (an int where all
threads agree), and shares those values between the accesses of a kernel. Each value's op is
read from MLIR once (`Expr`), not once per lane.

It is exact or it steps aside: anything the per-thread evaluator might answer differently,
an unknown value, a division by zero, a select that threads take different ways into an
unknown, an expression deeper than `MAX_DEPTH`, a value outside +-2^48 where int64 arithmetic
could wrap, raises `Fallback`, and the caller asks `banks.Evaluator` thread by thread.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from mlir import ir

from tilec.bank_ops import BINARY, CMP, Expr, expr_of

LIMIT = 1 << 48  # |value| below this: int64 arithmetic on two of them cannot wrap
Lanes = int | np.ndarray  # an int: every thread holds the same value


class Fallback(Exception):
    """The vectorised evaluation may differ from the per-thread one: use that instead."""


def _trunc_div(a: Lanes, b: Lanes) -> Lanes:
    """int(a / b) as Python computes it: exact for |a| < 2^48 in float64."""
    if isinstance(a, int) and isinstance(b, int):
        return int(a / b)
    return np.trunc(np.true_divide(a, b)).astype(np.int64)


_ARRAY_OPS: dict[str, Callable[[Lanes, Lanes], Lanes]] = {
    "addi": np.add,
    "subi": np.subtract,
    "muli": np.multiply,
    "divui": np.floor_divide,
    "divsi": _trunc_div,
    "floordivsi": np.floor_divide,
    "ceildivsi": lambda a, b: -np.floor_divide(-a, b),
    "remui": np.mod,
    "remsi": lambda a, b: a - b * _trunc_div(a, b),
    "andi": np.bitwise_and,
    "ori": np.bitwise_or,
    "xori": np.bitwise_xor,
    "shli": np.left_shift,
    "shrui": np.right_shift,
    "shrsi": np.right_shift,
    "maxsi": np.maximum,
    "maxui": np.maximum,
    "minsi": np.minimum,
    "minui": np.minimum,
}
_DIVISIONS = ("divui", "divsi", "remui", "remsi", "ceildivsi", "floordivsi")


def bound(x: Lanes) -> int:
    """The largest |value| over the lanes."""
    if isinstance(x, int):
        return abs(x)
    return int(np.abs(x).max()) if x.size else 0


def checked(x: Lanes) -> Lanes:
    if bound(x) >= LIMIT:
        raise Fallback("a value int64 lanes cannot hold exactly")
    return x


def array_binary(name: str, a: Lanes, b: Lanes) -> Lanes:
    """`arith.<name>` over lanes, where Python's and numpy's integers agree (else Fallback)."""
    if name in _DIVISIONS and (np.any(np.asarray(b) == 0)):
        raise Fallback("a division by zero")
    if name == "muli" and bound(a) * bound(b) >= LIMIT:
        raise Fallback("a product int64 lanes might not hold")
    if name in ("shli", "shrui", "shrsi"):
        low, high = int(np.min(b)), int(np.max(b))
        if low < 0 or high > 62 or (name == "shli" and bound(a) << high >= LIMIT):
            raise Fallback("a shift Python and numpy disagree on")
    return checked(_ARRAY_OPS[name](checked(a), checked(b)))


class BlockLanes:
    """Values of one kernel's SSA address expressions for threads 0..lanes-1 of its block.

    Values are memoised per loop binding and shared by every access that binds those loops.
    """

    def __init__(self, dims: tuple[int, int, int], lanes: int, max_depth: int) -> None:
        t = np.arange(lanes, dtype=np.int64)
        self.tid = (t % dims[0], t // dims[0] % dims[1], t // (dims[0] * dims[1]))
        self.max_depth = max_depth
        self.memos: dict[tuple, dict[ir.Value, Lanes]] = {}
        self.heights: dict[ir.Value, int] = {}
        self.exprs: dict[ir.Value, Expr] = {}

    def expr(self, v: ir.Value) -> Expr:
        e = self.exprs.get(v)
        if e is None:
            e = self.exprs[v] = expr_of(v)
        return e

    def height(self, root: ir.Value) -> int:
        """The longest operand chain below `root` (in ops; a leaf is 0), exact and memoised.

        The per-thread evaluator gives up on a value it first meets deeper than max_depth;
        it can only meet one that deep when some chain is that long. An explicit stack, so a
        chain of any length is measured without recursion.
        """
        stack = [root]
        while stack:
            v = stack[-1]
            if v in self.heights:
                stack.pop()
                continue
            args = self.expr(v).args
            todo = [a for a in args if a not in self.heights]
            if todo:
                stack.extend(todo)
                continue
            self.heights[v] = 1 + max((self.heights[a] for a in args), default=-1)
            stack.pop()
        return self.heights[root]

    def addresses(self, pointer: ir.Value, ivs: dict[ir.Value, int]) -> np.ndarray:
        """The pointer's value in every lane under the loop binding `ivs` (or Fallback)."""
        if self.height(pointer) > self.max_depth:
            raise Fallback("an expression as deep as the per-thread evaluator's limit")
        memo = self.memos.setdefault(tuple(ivs.items()), {})
        value = self.value(pointer, ivs, memo)
        return np.broadcast_to(np.asarray(value, dtype=np.int64), self.tid[0].shape)

    def value(self, v: ir.Value, ivs: dict[ir.Value, int], memo: dict[ir.Value, Lanes]) -> Lanes:
        if v in memo:
            return memo[v]
        e = self.expr(v)
        result = self._eval(e, v, ivs, memo)
        memo[v] = result
        return result

    def _eval(self, e: Expr, v: ir.Value, ivs: dict, memo: dict) -> Lanes:
        kind = e.kind
        if kind == "const":
            return e.data
        if kind == "tid":
            return self.tid[e.data]
        if kind == "iv":
            if v not in ivs:
                raise Fallback("an unbound block argument")
            return ivs[v]
        if kind == "pass":
            return self.value(e.args[0], ivs, memo)
        if kind == "trunc":
            x = self.value(e.args[0], ivs, memo)
            if isinstance(x, int):
                return x & ((1 << e.data) - 1)
            if e.data >= 63 and np.any(x < 0):
                raise Fallback("an unsigned 64-bit truncation")
            return x & ((1 << e.data) - 1) if e.data < 63 else x
        if kind == "cmp":
            a, b = (self.value(x, ivs, memo) for x in e.args)
            out = CMP[e.data](a, b)
            return int(out) if isinstance(out, bool) else np.asarray(out).astype(np.int64)
        if kind == "select":
            return self._select(e, ivs, memo)
        if kind == "gep":
            return self._gep(e, ivs, memo)
        if kind == "binary":
            a, b = (self.value(x, ivs, memo) for x in e.args)
            if isinstance(a, int) and isinstance(b, int):
                if b == 0 and e.data in _DIVISIONS:
                    raise Fallback("a division by zero")
                return BINARY[f"arith.{e.data}"](a, b)
            return array_binary(e.data, a, b)
        raise Fallback(str(e.data))

    def _select(self, e: Expr, ivs: dict, memo: dict) -> Lanes:
        cond = self.value(e.args[0], ivs, memo)
        if isinstance(cond, int):
            return self.value(e.args[1] if cond else e.args[2], ivs, memo)
        taken = cond != 0
        if taken.all():
            return self.value(e.args[1], ivs, memo)
        if not taken.any():
            return self.value(e.args[2], ivs, memo)
        # Both ways are taken: each is evaluated for every lane, which the per-thread
        # evaluator does for some lanes only; any doubt (an unknown, a zero divisor) on either
        # side is a Fallback, so what is kept equals what each lane computes.
        yes, no = self.value(e.args[1], ivs, memo), self.value(e.args[2], ivs, memo)
        return np.where(taken, yes, no)

    def _gep(self, e: Expr, ivs: dict, memo: dict) -> Lanes:
        steps = e.data  # [(dynamic?, constant index, element bytes)]; None: a size unknown
        if steps is None:
            raise Fallback("a getelementptr over a type of unknown size")
        address = self.value(e.args[0], ivs, memo)
        dynamic = iter(e.args[1:])
        for is_dynamic, index, size in steps:
            i = self.value(next(dynamic), ivs, memo) if is_dynamic else index
            if isinstance(address, int) and isinstance(i, int):
                address += i * size
            else:
                address = array_binary("addi", address, array_binary("muli", i, size))
        return address

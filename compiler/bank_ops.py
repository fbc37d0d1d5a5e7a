"""Stages `lowered` and `gpu`: what each op means to the bank report's address evaluators.

Both evaluators (`banks.Evaluator`, thread by thread, and `bank_lanes.BlockLanes`, every thread
at once) read integer arithmetic, thread ids, casts, selects and getelementptrs by these tables;
`expr_of` reads a value's op once into an `Expr` for the vectorised one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir

CMP: dict[int, Callable[[int, int], bool]] = {
    0: lambda a, b: a == b,
    1: lambda a, b: a != b,
    2: lambda a, b: a < b,
    3: lambda a, b: a <= b,
    4: lambda a, b: a > b,
    5: lambda a, b: a >= b,
    6: lambda a, b: a < b,  # unsigned predicates: addresses and ids are never negative
    7: lambda a, b: a <= b,
    8: lambda a, b: a > b,
    9: lambda a, b: a >= b,
}

BINARY_BY_NAME: dict[str, Callable[[int, int], int]] = {
    "addi": lambda a, b: a + b,
    "subi": lambda a, b: a - b,
    "muli": lambda a, b: a * b,
    "divui": lambda a, b: a // b,
    "divsi": lambda a, b: int(a / b),
    "floordivsi": lambda a, b: a // b,
    "ceildivsi": lambda a, b: -(-a // b),
    "ceildivui": lambda a, b: -(-a // b),  # tile-schedule's cluster rows
    "remui": lambda a, b: a % b,
    "remsi": lambda a, b: a - b * int(a / b),
    "andi": lambda a, b: a & b,
    "ori": lambda a, b: a | b,
    "xori": lambda a, b: a ^ b,
    "shli": lambda a, b: a << b,
    "shrui": lambda a, b: a >> b,
    "shrsi": lambda a, b: a >> b,
    "maxsi": max,
    "maxui": max,
    "minsi": min,
    "minui": min,
}
BINARY = {f"arith.{name}": f for name, f in BINARY_BY_NAME.items()}

# Ops whose result is their first operand, as far as an address is concerned.
PASS_THROUGH = {
    "arith.index_cast",
    "arith.index_castui",
    "arith.extsi",
    "arith.extui",
    "llvm.ptrtoint",
    "llvm.inttoptr",
    "llvm.addrspacecast",
    "llvm.bitcast",
    "builtin.unrealized_conversion_cast",
}
DIMS = {"x": 0, "y": 1, "z": 2}
ARRAY = re.compile(r"^!llvm\.array<(\d+)\s*x\s*(.+)>$")


def type_bytes(t: ir.Type) -> int | None:
    """Bytes of a scalar, vector or `!llvm.array` type; None for anything else."""
    if isinstance(t, ir.VectorType):
        inner = type_bytes(t.element_type)
        return inner * t.shape[0] if inner is not None and t.rank == 1 else None
    if isinstance(t, ir.IntegerType | ir.FloatType):
        return max(1, t.width // 8)
    m = ARRAY.match(str(t))
    if m is None:
        return None
    inner = type_bytes(ir.Type.parse(m.group(2)))
    return None if inner is None else int(m.group(1)) * inner


@dataclass(frozen=True)
class Expr:
    """One SSA value's op, read once: what to compute and from which operands."""

    kind: str = "unknown"  # const, tid, iv, pass, trunc, cmp, select, gep, binary, unknown
    args: tuple[ir.Value, ...] = ()
    data: object = None


def _gep_steps(op: ir.Operation) -> list[tuple[bool, int, int]] | None:
    """(dynamic?, constant index, element bytes) per index of a getelementptr, as
    `Evaluator._gep` walks them; None when a type on the way has no known size."""
    steps = []
    t = ir.TypeAttr(op.attributes["elem_type"]).value
    for k, index in enumerate(ir.DenseI32ArrayAttr(op.attributes["rawConstantIndices"])):
        if k > 0:
            m = ARRAY.match(str(t))
            if m is None:
                return None
            t = ir.Type.parse(m.group(2))
        size = type_bytes(t)
        if size is None:
            return None
        steps.append((index == -(2**31), index, size))
    return steps


def expr_of(v: ir.Value) -> Expr:
    """What `Evaluator.value` computes for `v`, read off its op once (for `BlockLanes`)."""
    if isinstance(v, ir.BlockArgument):
        return Expr("iv")
    op = ir.OpResult(v).owner
    name, args = op.name, tuple(op.operands)
    if name in ("arith.constant", "llvm.mlir.constant"):
        attr = op.attributes["value"]
        return Expr("const", data=attr.value) if isinstance(attr, ir.IntegerAttr) else Expr()
    if name == "gpu.thread_id":
        return Expr("tid", data=DIMS[str(op.attributes["dimension"])[-2]])
    if name == "llvm.inline_asm":
        text = ir.StringAttr(op.attributes["asm_string"]).value
        if m := re.fullmatch(r"mov\.u32 \$0, %tid\.([xyz]);", text):
            return Expr("tid", data=DIMS[m.group(1)])
        return Expr("pass", args[:1]) if re.fullmatch(r"mov\.\w+ \$0, \$1;", text) else Expr()
    if name == "llvm.mlir.addressof":
        return Expr("const", data=0)  # as in Evaluator: a uniform offset changes no degree
    if name in PASS_THROUGH:
        return Expr("pass", args[:1])
    if name == "arith.trunci":
        return Expr("trunc", args[:1], ir.IntegerType(v.type).width)
    if name == "arith.cmpi":
        return Expr("cmp", args[:2], ir.IntegerAttr(op.attributes["predicate"]).value)
    if name in ("arith.select", "llvm.select"):
        return Expr("select", args[:3])
    if name == "llvm.getelementptr":
        return Expr("gep", args, _gep_steps(op))
    if name in BINARY:
        return Expr("binary", args[:2], name.removeprefix("arith."))
    return Expr()

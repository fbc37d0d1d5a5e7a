"""Runtime: a tiny safe evaluator for the integer grid, block and shared-memory formulas."""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Iterable, Mapping


class FormulaError(ValueError):
    """A manifest formula that does not parse, names an unknown symbol or cannot be computed."""


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _cdiv(a, b) * b


FUNCTIONS: dict[str, Callable[..., int]] = {
    "cdiv": _cdiv,
    "round_up": _round_up,
    "min": min,
    "max": max,
}
_BINOPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
# A variant's condition (`variant(K % 16 == 8, ...)`): one comparison, 1 when it holds.
_COMPARE: dict[type, Callable[[int, int], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def evaluate(formula: int | str, symbols: Mapping[str, int]) -> int:
    """The integer value of `formula` (an int, or an expression over `symbols`).

    Grammar: integers, names, `+ - * // %`, unary `-`, and calls of cdiv, round_up, min, max;
    at the top, one comparison (`== != < <= > >=`: 1 when it holds, else 0).
    The expression is parsed with `ast` and interpreted here, so nothing else can run.
    """
    if isinstance(formula, bool) or not isinstance(formula, int | str):
        raise FormulaError(f"formula {formula!r}: expected an int or a string")
    if isinstance(formula, int):
        return formula
    if formula in symbols:  # a plain symbol: the common case, on every launch
        return int(symbols[formula])
    tree = _parse(formula)
    if isinstance(tree, ast.Compare) and len(tree.ops) == 1 and type(tree.ops[0]) in _COMPARE:
        left = _eval(tree.left, formula, symbols)
        right = _eval(tree.comparators[0], formula, symbols)
        return int(_COMPARE[type(tree.ops[0])](left, right))
    return _eval(tree, formula, symbols)


def all_hold(conditions: Iterable[int | str], symbols: Mapping[str, int]) -> bool:
    """Whether every condition (a comparison formula, 1 or 0) holds for `symbols`: a
    variant(...) clause's, which a launch runs when all of them do."""
    return all(evaluate(c, symbols) for c in conditions)


@functools.lru_cache(maxsize=1024)
def _parse(formula: str) -> ast.AST:
    """The expression tree of `formula`, parsed once per distinct text (launches repeat them)."""
    try:
        return ast.parse(formula.strip(), mode="eval").body
    except SyntaxError as err:
        raise FormulaError(f"formula {formula!r}: syntax error: {err.msg}") from None


def _eval(node: ast.AST, formula: str, symbols: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in symbols:
            known = ", ".join(sorted(symbols)) or "none"
            raise FormulaError(f"formula {formula!r}: unknown symbol {node.id!r} (known: {known})")
        return int(symbols[node.id])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand, formula, symbols)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _eval(node.left, formula, symbols)
        right = _eval(node.right, formula, symbols)
        if isinstance(node.op, ast.FloorDiv | ast.Mod) and right == 0:
            raise FormulaError(f"formula {formula!r}: division by zero")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        fn = FUNCTIONS.get(node.func.id)
        if fn is None:
            raise FormulaError(
                f"formula {formula!r}: unknown function {node.func.id!r} "
                f"(known: {', '.join(FUNCTIONS)})"
            )
        args = [_eval(arg, formula, symbols) for arg in node.args]
        if node.func.id in ("cdiv", "round_up"):
            if len(args) != 2:
                raise FormulaError(f"formula {formula!r}: {node.func.id} takes 2 arguments")
            if args[1] == 0:
                raise FormulaError(f"formula {formula!r}: division by zero")
        elif not args:
            raise FormulaError(f"formula {formula!r}: {node.func.id} needs arguments")
        elif len(args) == 1:  # min(x) is x (Python's min of one int would raise)
            return args[0]
        return fn(*args)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        raise FormulaError(f"formula {formula!r}: '/' is not integer division; use // or cdiv")
    raise FormulaError(f"formula {formula!r}: unsupported syntax {ast.unparse(node)!r}")


def symbols_of(formula: int | str) -> set[str]:
    """The symbol names `formula` refers to (function names excluded)."""
    if isinstance(formula, int):
        return set()
    try:
        tree = ast.parse(formula.strip(), mode="eval")
    except SyntaxError as err:
        raise FormulaError(f"formula {formula!r}: syntax error: {err.msg}") from None
    called = {
        n.func.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called

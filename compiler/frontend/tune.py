"""Frontend (check stage): a kernel's `tune(...)` clause, the candidate values of its
compile-time parameters and the constraints a candidate must meet (`tilec tune` searches them).

    tune(BM = (64, 128), STAGES = 3..5, BN = 128, BM * BN <= 32768)

Each `NAME = ...` is an `int` parameter of the kernel with its candidates: a tuple of static
integers, an inclusive range `lo..hi`, or one integer. Every other entry is a constraint, one
comparison of integer expressions over the parameters (`+ - * / %`, `min`, `max`, `cdiv`), kept
as a formula (runtime.formula's language) and evaluated for each candidate with the kernel's
other parameters at their build values. The space is the product of the candidates less those
that break a constraint; it must hold at least one and at most MAX_CANDIDATES.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tilec.frontend import ast
from tilec.frontend.expr import COMPARISONS
from tilec.frontend.values import ErrorV, IntV
from tilec.runtime.formula import FormulaError, evaluate

MAX_CANDIDATES = 4096
_ARITH = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%"}
_CALLS = ("min", "max", "cdiv")


@dataclass(frozen=True)
class Tune:
    """The candidates of each tuned parameter (in the clause's order) and the constraints."""

    space: dict[str, tuple[int, ...]]
    constraints: tuple[str, ...] = ()

    def candidates(self, base: Mapping[str, int | str]) -> list[dict[str, int]]:
        """Every assignment of the tuned parameters that meets the constraints, the others at
        `base` (the build's values), in the product's order."""
        return list(self._walk(base))

    def _walk(self, base: Mapping[str, int | str]) -> Iterator[dict[str, int]]:
        names = list(self.space)
        ints = {k: v for k, v in base.items() if isinstance(v, int)}
        for values in itertools.product(*(self.space[n] for n in names)):
            chosen = dict(zip(names, values, strict=True))
            try:
                if all(evaluate(c, {**ints, **chosen}) for c in self.constraints):
                    yield chosen
            except FormulaError:  # a zero divisor at this candidate: it does not qualify
                continue

    def to_json(self) -> dict[str, Any]:
        return {
            "space": {k: list(v) for k, v in self.space.items()},
            "constraints": list(self.constraints),
        }


def formula_of(node: ast.Node) -> str | None:
    """`node` as a formula over names (runtime.formula's syntax: `/` becomes `//`), or None
    where it uses anything else."""
    if isinstance(node, ast.IntLit):
        return str(node.value)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Unary) and node.op == "-":
        inner = formula_of(node.operand)
        return None if inner is None else f"(-{inner})"
    if isinstance(node, ast.Binary) and (node.op in _ARITH or node.op in COMPARISONS):
        lhs, rhs = formula_of(node.lhs), formula_of(node.rhs)
        if lhs is None or rhs is None:
            return None
        return f"({lhs} {_ARITH.get(node.op, node.op)} {rhs})"
    arity = range(2, 3) if getattr(node, "func", "") == "cdiv" else range(2, 64)
    if isinstance(node, ast.Call) and node.func in _CALLS and len(node.args) in arity:
        if node.kwargs:
            return None
        args = [formula_of(a) for a in node.args]
        return None if None in args else f"{node.func}({', '.join(args)})"  # type: ignore[arg-type]
    return None


class TuneChecker:
    """Checks a `tune(...)` clause against a KernelChecker's parameters (`k.params`), reporting
    located errors to `k.diags`."""

    def __init__(self, k: Any) -> None:
        self.k = k

    def error(self, message: str, node: ast.Node) -> None:
        self.k.diags.error(message, node.span)

    def check(self, cl: ast.Clause | None) -> Tune | None:
        if cl is None:
            return None
        errors = self.k.diags.error_count
        space: dict[str, tuple[int, ...]] = {}
        constraints: list[str] = []
        for item in cl.args:
            if isinstance(item, ast.Keyword):
                values = self.candidates(item, space)
                if values is not None:
                    space[item.name] = values
            else:
                formula = self.constraint(item)
                if formula is not None:
                    constraints.append(formula)
        if not space and self.k.diags.error_count == errors:
            self.error("tune(...) names at least one parameter and its candidates", cl)
        if self.k.diags.error_count > errors:
            return None
        return self.counted(Tune(space, tuple(constraints)), cl)

    def counted(self, tune: Tune, cl: ast.Clause) -> Tune | None:
        size = 1
        for values in tune.space.values():
            size *= len(values)
        if size > MAX_CANDIDATES:
            self.error(f"tune(...) spans {size} candidates; at most {MAX_CANDIDATES}", cl)
            return None
        if not tune.candidates(self.k.params):
            self.error("no candidate of tune(...) meets its constraints", cl)
            return None
        return tune

    def candidates(
        self, kw: ast.Keyword, seen: dict[str, tuple[int, ...]]
    ) -> tuple[int, ...] | None:
        params = self.k.params
        if kw.name not in params:
            names = ", ".join(n for n, v in params.items() if isinstance(v, int)) or "none"
            self.error(f"tune(...) names the kernel's int parameters (parameters: {names})", kw)
            return None
        if isinstance(params[kw.name], str):
            self.error(
                f"{kw.name} is a type parameter: tune(...) searches int parameters (a family "
                "picks builds by the arguments' dtypes)",
                kw,
            )
            return None
        if kw.name in seen:
            self.error(f"tune(...) names {kw.name} twice", kw)
            return None
        value = kw.value
        if isinstance(value, ast.RangeLit):
            lo, hi = self.static(value.lo), self.static(value.hi)
            if lo is None or hi is None:
                return None
            if lo > hi or hi - lo >= MAX_CANDIDATES:
                self.error(f"a range of candidates runs up: {lo}..{hi} is empty or too long", value)
                return None
            return tuple(range(lo, hi + 1))
        items = value.items if isinstance(value, ast.Tuple) else [value]
        found = [self.static(v) for v in items]
        if None in found:
            return None
        if not found or len(set(found)) != len(found):
            self.error(f"{kw.name}'s candidates must be distinct integers, at least one", value)
            return None
        return tuple(v for v in found if v is not None)

    def static(self, node: ast.Node) -> int | None:
        v = self.k.c.expr(node, self.k.scope)
        if isinstance(v, ErrorV):
            return None
        if not (isinstance(v, IntV) and v.static):
            self.error("a candidate is a static integer (e.g. 64, or a range 3..5)", node)
            return None
        return v.value

    def constraint(self, node: ast.Node) -> str | None:
        if not (isinstance(node, ast.Binary) and node.op in COMPARISONS):
            self.error(
                "a tune(...) entry is `NAME = candidates` or a constraint comparing parameters "
                "(e.g. BM * BN <= 32768)",
                node,
            )
            return None
        formula = formula_of(node)
        if formula is None:
            self.error("a constraint uses parameters, integers, + - * / %, min, max and cdiv", node)
            return None
        ints = {k: v for k, v in self.k.params.items() if isinstance(v, int)}
        try:
            evaluate(formula, ints)
        except FormulaError as err:
            self.error(f"a constraint names the kernel's int parameters: {err}", node)
            return None
        return formula

"""Frontend (parse and check stages): a kernel's `contract(...)` clause, parsed and checked.

    contract(depth == STAGES - 1, registers <= 255, spills == 0, has("ldmatrix"))

Each term compares one fact of the compiled kernel (tilec.contract.FACTS) with a bound, an
integer expression of the compile-time parameters; the comparison operators exist only here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tilec.contract import FACTS, PATTERN_FACTS
from tilec.diagnostics import Span, note
from tilec.frontend import ast
from tilec.frontend.values import ErrorV, IntV

if TYPE_CHECKING:
    from tilec.frontend.lexer import Token
    from tilec.frontend.parser import Parser
    from tilec.frontend.sema import KernelChecker

COMPARISONS = ("==", "<=", ">=", "<", ">")


@dataclass(frozen=True)
class Promise:
    """A checked term: `fact op bound`, the bound evaluated with the kernel's parameters."""

    fact: str
    pattern: str | None
    op: str
    bound: int
    span: Span

    def text(self) -> str:
        """`depth == 2`, `count("ldmatrix") >= 4`, `has("ldmatrix")`."""
        if self.fact == "has":
            return f'has("{self.pattern}")'
        name = self.fact if self.pattern is None else f'{self.fact}("{self.pattern}")'
        return f"{name} {self.op} {self.bound}"

    def holds(self, found: int) -> bool:
        return {
            "==": found == self.bound,
            "<=": found <= self.bound,
            ">=": found >= self.bound,
            "<": found < self.bound,
            ">": found > self.bound,
        }[self.op]


def parse_contract(p: Parser, name: Token) -> ast.Contract:
    """`contract "(" [ term { "," term } [ "," ] ] ")"` after the clause's name."""
    p.expect("(", "'(' after 'contract'")
    terms = p.comma_list(")", lambda: _term(p))
    return ast.Contract(name.span, "contract", [], terms)


def _term(p: Parser) -> ast.Term:
    start = p.tok.span
    fact = p.ident("a contract fact (e.g. 'registers', 'depth', 'has')")
    pattern = None
    if fact.text in PATTERN_FACTS:
        p.expect("(", f"'(' and an instruction after '{fact.text}'")
        s = p.expect("string", 'an instruction in quotes, e.g. "ldmatrix"')
        p.expect(")", "')'")
        pattern = s.text[1:-1].strip()
        if not pattern:
            p.fail("an empty instruction name", s.span)
        if fact.text == "has":
            return ast.Term(p.join(start), "has", pattern, ">=", ast.IntLit(s.span, 1))
    op = _comparison(p)
    bound = p.additive()
    return ast.Term(p.join(start), fact.text, pattern, op, bound)


def _comparison(p: Parser) -> str:
    """`==`, `<=`, `>=`, `<` or `>`: two-character ones are two adjacent tokens (`<` `=`)."""
    first = p.tok
    if first.kind not in ("<", ">", "="):
        p.fail(f"expected a comparison ({', '.join(COMPARISONS)}), found '{first.text}'")
    p.advance()
    second = p.tok
    adjacent = second.span.line == first.span.line and second.span.col == first.span.col + 1
    if second.kind == "=" and adjacent:
        p.advance()
        return first.kind + "="
    if first.kind == "=":
        p.fail("a contract compares with '==', not '='", first.span)
    return first.kind


def check_contract(kc: KernelChecker, cl: ast.Clause | None) -> list[Promise]:
    """The promises of the kernel's contract clause; unknown facts and bounds that are not
    static integers are located errors."""
    if not isinstance(cl, ast.Contract):
        return []
    promises = []
    for t in cl.terms:
        if t.fact not in FACTS:
            kc.diags.error(
                f"unknown contract fact '{t.fact}'",
                t.span,
                [note(f"facts: {', '.join(FACTS)}", t.span)],
            )
            continue
        v = kc.c.expr(t.bound, kc.scope)
        if isinstance(v, ErrorV):
            continue
        if not (isinstance(v, IntV) and v.static):
            kc.diags.error(
                f"a contract bound must be a static integer, found {v.describe()}", t.bound.span
            )
            continue
        promises.append(Promise(t.fact, t.pattern, t.op, v.value, t.span))
    return promises

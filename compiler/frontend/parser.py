"""Frontend (parse stage): a recursive-descent parser from tokens to the AST, with recovery.

Modules, kernels, clauses and statements here; the token cursor and the expressions are
`ExprParser`'s (tilec.frontend.parse_expr).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tilec.diagnostics import DiagnosticEngine
from tilec.frontend import ast
from tilec.frontend.contract import parse_contract
from tilec.frontend.lexer import lex
from tilec.frontend.parse_expr import (  # noqa: F401  (MAX_DEPTH, ParseError: this module's API)
    MAX_DEPTH,
    ExprParser,
    ParseError,
    describe,
)
from tilec.frontend.types import SCALAR_TYPES

T = TypeVar("T")


class Parser(ExprParser):
    # Module and kernel --------------------------------------------------------------------------

    def module(self) -> ast.Module:
        start = self.tok.span
        kernels = []
        while True:
            self.skip_newlines()
            if self.at("eof"):
                break
            if not self.at("kernel"):
                self.diags.error(f"expected 'kernel', found {describe(self.tok)}", self.tok.span)
                self.sync_to_kernel(skip_first=True)
                continue
            try:
                kernels.append(self.kernel())
            except ParseError:
                self.sync_to_kernel(skip_first=True)
        return ast.Module(start, kernels)

    def sync_to_kernel(self, skip_first: bool) -> None:
        if skip_first:
            self.advance()
        while not self.at("kernel", "eof"):
            self.advance()

    def kernel(self) -> ast.Kernel:
        self.expect("kernel")
        name = self.ident("a kernel name")
        self.type_params = set()
        cparams = self.cparams() if self.accept("<") else []
        self.skip_newlines()
        self.expect("(", "'(' before the kernel's arguments")
        args = self.comma_list(")", self.arg)
        clauses = []
        self.skip_newlines()
        while self.at("ident"):
            clauses.append(self.clause())
            self.skip_newlines()
        body = self.block()
        return ast.Kernel(name.span, name.text, cparams, args, clauses, body)

    def comma_list(self, close: str, item: Callable[[], T]) -> list[T]:
        """`item (, item)* [,]` up to and including `close`; newlines in between are ignored."""
        items = []
        self.skip_newlines()
        while not self.at(close):
            items.append(item())
            self.skip_newlines()
            if not self.accept(","):
                break
            self.skip_newlines()
        self.expect(close, f"',' or {close!r}")
        return items

    def cparams(self) -> list[ast.CParam]:
        return self.comma_list(">", self.cparam)

    def cparam(self) -> ast.CParam:
        name = self.ident("a parameter name")
        kind = None
        if self.accept(":"):
            kind_tok = self.ident("'int' or 'type'")
            if kind_tok.text not in ("int", "type"):
                self.fail(
                    f"parameter kind must be 'int' or 'type', found '{kind_tok.text}'",
                    kind_tok.span,
                )
            kind = kind_tok.text
        default = self.expr(compare=False) if self.accept("=") else None
        if kind is None and default is None:
            self.fail(f"parameter '{name.text}' needs a kind or a default", name.span)
        if kind is None and isinstance(default, ast.Name) and default.id in SCALAR_TYPES:
            kind = "type"
        if kind == "type":
            self.type_params.add(name.text)
        return ast.CParam(name.span, name.text, kind, default)

    def arg(self) -> ast.Arg:
        name = self.ident("an argument name")
        self.expect(":", "':' and the argument's type")
        elem_tok = self.ident("an element type")
        elem = ast.Name(elem_tok.span, elem_tok.text)
        if not self.accept("["):
            return ast.Arg(name.span, name.text, elem)
        first = self.expr()
        if isinstance(first, ast.LayoutLit):
            self.expect("]", "']'")
            return ast.Arg(name.span, name.text, elem, layout=first)
        dims = [first]
        while self.accept(","):
            dims.append(self.expr())
        self.expect("]", "',' or ']'")
        return ast.Arg(name.span, name.text, elem, dims=dims)

    def clause(self) -> ast.Clause:
        name = self.ident()
        if name.text == "contract":
            return parse_contract(self, name)
        if name.text == "variant":  # variant(K % 16 == 8, CM = 2), variant(K <= 4096, M < 512, ...)
            self.expect("(", "'('")
            self.skip_newlines()
            when: list[ast.Node] = [self.expr()]
            while True:  # conditions until the first `NAME =`
                self.skip_newlines()
                self.expect(",", "',' and the parameters the variant sets (e.g. CM = 2)")
                self.skip_newlines()
                if self.at("ident") and self.peek().kind == "=" and not self.adjacent(1, "="):
                    break  # `NAME =`, not `NAME ==`
                when.append(self.expr())
            return ast.Clause(name.span, name.text, when + self.comma_list(")", self.keyword))
        if name.text == "tune":  # tune(BM = (64, 128), STAGES = 3..5, BM * BN <= 32768)
            self.expect("(", "'('")
            return ast.Clause(name.span, name.text, self.comma_list(")", self.tune_item))
        known = ("grid", "threads", "cluster", "blocks_per_sm", "target", "specialize", "assume")
        if name.text not in known:
            self.fail(
                "expected 'grid', 'threads', 'cluster', 'blocks_per_sm', 'target', 'contract', "
                f"'specialize', 'variant', 'assume', 'tune' or '{{', found '{name.text}'",
                name.span,
            )
        self.expect("(", "'('")
        args = self.comma_list(")", self.expr)
        return ast.Clause(name.span, name.text, args)

    # Statements ---------------------------------------------------------------------------------

    def block(self) -> list[ast.Node]:
        self.skip_newlines()
        self.expect("{", "'{'")
        self.nest()
        base, chained = self.depth, self.chained
        stmts = []
        while True:
            while self.at("newline", ";"):
                self.advance()
            if self.at("}", "eof"):
                break
            try:
                stmts.append(self.stmt())
                if not self.at("}", "eof"):
                    self.expect_end()
            except ParseError:
                self.depth, self.chained = base, chained
                self.sync_stmt()
        self.expect("}", "'}'")
        self.depth -= 1
        return stmts

    def expect_end(self) -> None:
        if not self.accept("newline") and not self.accept(";"):
            self.fail(f"expected end of statement, found {describe(self.tok)}")

    def sync_stmt(self) -> None:
        """Skip to the end of the broken statement: a newline, `;` or the enclosing `}`."""
        level = 0
        while not self.at("eof"):
            if level == 0 and self.at("newline", ";", "}"):
                if not self.at("}"):
                    self.advance()
                return
            if self.at("kernel"):
                return
            level += {"{": 1, "}": -1}.get(self.tok.kind, 0)
            self.advance()

    def stmt(self) -> ast.Node:
        if self.at("let", "var"):
            return self.let()
        if self.at("ident") and self.peek().kind == "=" and not self.adjacent(1, "="):
            return self.assign()
        if self.at("for"):
            return self.for_stmt()
        if (
            self.at("ident")
            and self.tok.text == "warp_specialize"
            and self.peek().kind in ("{", "newline")
        ):
            return self.warp_specialize()
        expr = self.expr()
        return ast.ExprStmt(expr.span, expr)

    def let(self) -> ast.Let:
        keyword = self.advance()
        name = self.ident(f"a name after '{keyword.kind}'")
        self.expect("=", "'='")
        value = self.expr()
        init = self.expr() if self.accept("=") else None
        return ast.Let(keyword.span, name.text, name.span, value, init, keyword.kind == "var")

    def assign(self) -> ast.Assign:
        name = self.advance()
        self.advance()  # '='
        value = self.expr()
        return ast.Assign(name.span, name.text, name.span, value)

    def adjacent(self, n: int, kind: str) -> bool:
        """Whether token n ahead is followed, with no space between, by a `kind` token."""
        first, second = self.peek(n), self.peek(n + 1)
        return (
            second.kind == kind
            and second.span.line == first.span.line
            and second.span.col == first.span.col + len(first.text)
        )

    def for_stmt(self) -> ast.For:
        start = self.advance().span
        var = self.ident("a loop variable")
        self.expect("in", "'in'")
        it = self.expr()
        body = self.block()
        return ast.For(start, var.text, var.span, it, body)

    def warp_specialize(self) -> ast.WarpSpecialize:
        start = self.advance().span
        self.skip_newlines()
        self.expect("{", "'{'")
        roles = []
        while True:
            while self.at("newline", ";"):
                self.advance()
            if self.at("}", "eof"):
                break
            kind = self.ident("'producer' or 'consumer'")
            if kind.text not in ("producer", "consumer"):
                self.fail(f"expected 'producer' or 'consumer', found '{kind.text}'", kind.span)
            self.expect("(", "'('")
            kwargs = self.comma_list(")", self.keyword)
            roles.append(ast.Role(kind.span, kind.text, kwargs, self.block()))
        self.expect("}", "'}'")
        return ast.WarpSpecialize(start, roles)

    def tune_item(self) -> ast.Node:
        """A tune(...) entry: `NAME = candidates` (a Keyword) or a constraint (an expression)."""
        if self.at("ident") and self.peek().kind == "=" and not self.adjacent(1, "="):
            return self.keyword()
        return self.expr()

    def keyword(self) -> ast.Keyword:
        name = self.ident("a keyword argument")
        self.expect("=", "'='")
        value = self.expr()
        return ast.Keyword(name.span, name.text, value)


def parse(text: str, file: str, diags: DiagnosticEngine) -> ast.Module:
    """The AST of `text`; errors go to `diags` (the caller raises once parsing is done)."""
    tokens = lex(text, file, diags)
    return Parser(tokens, diags).module()

"""Frontend (parse stage): a recursive-descent parser from tokens to the AST, with recovery."""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn, TypeVar

from tilec.diagnostics import DiagnosticEngine, Span
from tilec.frontend import ast
from tilec.frontend.contract import parse_contract
from tilec.frontend.lexer import Token, lex
from tilec.frontend.types import SCALAR_TYPES

# Each level of nesting (or operator in a chain) costs the parser, the checker and irgen a few
# Python frames each; this keeps all of them far from the recursion limit.
MAX_DEPTH = 48
# Builtins whose name may be followed by template arguments `<...>`.
TEMPLATED = frozenset({"swizzle", "copy", "tiled_mma", "shared", "fragment"})
ADDITIVE = ("+", "-")
MULTIPLICATIVE = ("*", "/", "%")
# Comparisons of elementwise math; two-character ones are two adjacent tokens (`<` `=`).
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
T = TypeVar("T")


class ParseError(Exception):
    """Unwinds to the nearest statement or declaration, which then resynchronises."""


class Parser:
    def __init__(self, tokens: list[Token], diags: DiagnosticEngine) -> None:
        self.toks, self.diags = tokens, diags
        self.i = 0
        self.depth = 0
        self.type_params: set[str] = set()

    # Token helpers ----------------------------------------------------------------------------

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, n: int = 1) -> Token:
        return self.toks[min(self.i + n, len(self.toks) - 1)]

    def at(self, *kinds: str) -> bool:
        return self.tok.kind in kinds

    def advance(self) -> Token:
        tok = self.tok
        if tok.kind != "eof":
            self.i += 1
        return tok

    def accept(self, kind: str) -> Token | None:
        return self.advance() if self.at(kind) else None

    def expect(self, kind: str, what: str | None = None) -> Token:
        if self.at(kind):
            return self.advance()
        self.fail(f"expected {what or repr(kind)}, found {describe(self.tok)}")

    def fail(self, message: str, span: Span | None = None) -> NoReturn:
        self.diags.error(message, span or self.tok.span)
        raise ParseError

    def skip_newlines(self) -> None:
        while self.at("newline"):
            self.advance()

    def ident(self, what: str = "a name") -> Token:
        return self.expect("ident", what)

    def join(self, start: Span) -> Span:
        """The span from `start` to the end of the last consumed token (clipped to one line)."""
        end = self.toks[self.i - 1].span if self.i > 0 else start
        if end.line != start.line:
            return start
        return Span(start.file, start.line, start.col, max(1, end.col + end.length - start.col))

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH} levels")

    def link(self, links: int) -> int:
        """One more operator in a chain like `a + b + c`: the tree it builds deepens by one
        level per operator, so a chain counts against the nesting limit as parentheses do."""
        self.nest()
        return links + 1

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
        if name.text not in ("grid", "threads", "cluster", "target", "specialize"):
            self.fail(
                "expected 'grid', 'threads', 'cluster', 'target', 'contract', 'specialize' or "
                "'{', found "
                f"'{name.text}'",
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
        base = self.depth
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
                self.depth = base
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

    def keyword(self) -> ast.Keyword:
        name = self.ident("a keyword argument")
        self.expect("=", "'='")
        value = self.expr()
        return ast.Keyword(name.span, name.text, value)

    # Expressions: cast < comparison < `o` < .. < + - < * / % < unary < postfix < primary -----

    def expr(self, compare: bool = True) -> ast.Node:
        """An expression; `compare` False stops before a comparison (a parameter's default,
        which a `>` may close)."""
        self.nest()
        node = self.comparison() if compare else self.compose()
        links = 0
        while self.at(":") and self.is_type_name(self.peek()):
            links = self.link(links)
            self.advance()
            ty = self.advance()
            node = ast.Cast(self.join(node.span), node, ast.Name(ty.span, ty.text))
        self.depth -= 1 + links
        return node

    def is_type_name(self, tok: Token) -> bool:
        return tok.kind == "ident" and (tok.text in SCALAR_TYPES or tok.text in self.type_params)

    def comparison(self) -> ast.Node:
        """`a < b`, `a <= b`, ... (not chained: `a < b < c` is an error)."""
        node = self.compose()
        op = self.comparison_op()
        if op is None:
            return node
        self.nest()
        rhs = self.compose()
        self.depth -= 1
        node = ast.Binary(self.join(node.span), op, node, rhs)
        if self.comparison_op(peek=True) is not None:
            self.fail("comparisons do not chain: write (a < b) and (b < c) apart")
        return node

    def comparison_op(self, peek: bool = False) -> str | None:
        if not self.at("<", ">", "=", "!"):
            return None
        two = self.adjacent(0, "=")
        if self.tok.kind in ("=", "!") and not two:
            return None  # `=` of a keyword argument or statement; a lone `!` fails later
        op = self.tok.kind + ("=" if two else "")
        if not peek:
            self.advance()
            if two:
                self.advance()
        return op

    def compose(self) -> ast.Node:
        node = self.range_expr()
        links = 0
        while self.at("ident") and self.tok.text == "o":
            links = self.link(links)
            self.advance()
            rhs = self.range_expr()
            node = ast.Binary(self.join(node.span), "o", node, rhs)
        self.depth -= links
        return node

    def range_expr(self) -> ast.Node:
        node = self.additive()
        if self.at(".."):
            self.advance()
            hi = self.additive()
            node = ast.RangeLit(self.join(node.span), node, hi)
        return node

    def additive(self) -> ast.Node:
        node = self.multiplicative()
        links = 0
        while self.at(*ADDITIVE):
            links = self.link(links)
            op = self.advance()
            rhs = self.multiplicative()
            node = ast.Binary(self.join(node.span), op.kind, node, rhs)
        self.depth -= links
        return node

    def multiplicative(self) -> ast.Node:
        node = self.unary()
        links = 0
        while self.at(*MULTIPLICATIVE):
            links = self.link(links)
            op = self.advance()
            rhs = self.unary()
            node = ast.Binary(self.join(node.span), op.kind, node, rhs)
        self.depth -= links
        return node

    def unary(self) -> ast.Node:
        if self.at("-"):
            op = self.advance()
            self.nest()
            operand = self.unary()
            self.depth -= 1
            return ast.Unary(op.span, "-", operand)
        return self.postfix()

    def postfix(self) -> ast.Node:
        node = self.primary()
        links = 0
        while True:
            if self.at(".") and self.peek().kind == "ident":
                links = self.link(links)
                self.advance()
                attr = self.advance()
                node = ast.Attr(self.join(node.span), node, attr.text)
            elif self.at("["):
                links = self.link(links)
                self.advance()
                indices = self.comma_list("]", self.expr)
                node = ast.Index(self.join(node.span), node, indices)
            else:
                self.depth -= links
                return node

    def primary(self) -> ast.Node:
        tok = self.tok
        if tok.kind == "int":
            self.advance()
            return self.maybe_layout(ast.IntLit(tok.span, tok.value))
        if tok.kind == "float":
            self.advance()
            return ast.FloatLit(tok.span, tok.value)
        if tok.kind == "(":
            return self.maybe_layout(self.paren())
        if tok.kind != "ident":
            self.fail(f"expected an expression, found {describe(tok)}")
        self.advance()
        if tok.text == "_":
            return ast.Underscore(tok.span)
        if self.at("(") or (self.at("<") and tok.text in TEMPLATED):
            return self.call(tok)
        if self.is_type_name(tok):
            return ast.Name(tok.span, tok.text)
        return self.maybe_layout(ast.Name(tok.span, tok.text))

    def maybe_layout(self, shape: ast.Node) -> ast.Node:
        # `shape:stride`; a ':' before a type name is a cast, handled in expr().
        if not self.at(":") or self.is_type_name(self.peek()):
            return shape
        self.advance()
        tok = self.tok
        if tok.kind == "int":
            stride: ast.Node = ast.IntLit(self.advance().span, tok.value)
        elif tok.kind == "(":
            stride = self.paren()
        elif tok.kind == "ident":
            stride = ast.Name(self.advance().span, tok.text)
        else:
            self.fail(f"expected a stride after ':', found {describe(tok)}")
        return ast.LayoutLit(self.join(shape.span), shape, stride)

    def paren(self) -> ast.Node:
        start = self.advance().span
        self.nest()
        items = []
        trailing = False
        self.skip_newlines()
        while not self.at(")"):
            items.append(self.expr())
            trailing = bool(self.accept(","))
            if not trailing:
                break
        self.expect(")", "',' or ')'")
        self.depth -= 1
        if len(items) == 1 and not trailing:
            return items[0]  # `(x)` is x, as in CuTe: a rank-1 tuple is written `(x,)`
        return ast.Tuple(self.join(start), items)

    def call(self, name: Token) -> ast.Call:
        node = ast.Call(name.span, name.text, name.span)
        if self.accept("<"):
            node.targs = self.comma_list(">", self.targ)
        if not self.at("(") and name.text == "swizzle":
            node.span = self.join(name.span)
            return node
        self.expect("(", "'('")
        self.skip_newlines()
        while not self.at(")"):
            if self.at("ident") and self.peek().kind == "=" and not self.adjacent(1, "="):
                node.kwargs.append(self.keyword())
            elif node.kwargs:
                self.fail("positional argument after keyword argument")
            else:
                node.args.append(self.expr())
            self.skip_newlines()
            if not self.accept(","):
                break
            self.skip_newlines()
        self.expect(")", "',' or ')'")
        node.span = self.join(name.span)
        return node

    def targ(self) -> ast.Node:
        """A template argument: a dotted atom name, or an expression (types are names)."""
        if self.at("ident", "int") and self.peek().kind == ".":
            start = self.tok.span
            parts = [self.advance().text]
            while self.accept("."):
                if not self.at("ident", "int"):
                    self.fail(f"expected an atom name part after '.', found {describe(self.tok)}")
                parts.append(self.advance().text)
            return ast.AtomName(self.join(start), ".".join(parts))
        self.nest()
        node = self.additive()
        self.depth -= 1
        return node


def describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "end of file"
    if tok.kind == "newline":
        return "end of line"
    if tok.kind in ("ident", "int", "float"):
        return f"'{tok.text}'"
    if tok.kind == "string":
        return f"string {tok.text}"
    return f"'{tok.kind}'"


def parse(text: str, file: str, diags: DiagnosticEngine) -> ast.Module:
    """The AST of `text`; errors go to `diags` (the caller raises once parsing is done)."""
    tokens = lex(text, file, diags)
    return Parser(tokens, diags).module()

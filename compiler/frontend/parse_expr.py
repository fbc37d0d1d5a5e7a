"""Frontend (parse stage): the parser's token cursor and its expression grammar.

`ExprParser` walks the tokens (lookahead, expectations with located errors, the nesting
limit) and parses expressions: cast < comparison < `o` < range < + - < * / % < unary <
postfix < primary. `tilec.frontend.parser.Parser` adds modules, kernels and statements on
top; the contract clause and `tilec layout` parse expressions with it too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from tilec.diagnostics import DiagnosticEngine, Span
from tilec.frontend import ast
from tilec.frontend.lexer import Token
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


class ParseError(Exception):
    """Unwinds to the nearest statement or declaration, which then resynchronises."""


class ExprParser:
    def __init__(self, tokens: list[Token], diags: DiagnosticEngine) -> None:
        self.toks, self.diags = tokens, diags
        self.i = 0
        self.depth = 0
        self.chained = 0  # of `depth`, the levels that operators of chains (`a + b + c`) add
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
        """One level deeper; past MAX_DEPTH a located error that says what made the depth."""
        self.depth += 1
        if self.depth <= MAX_DEPTH:
            return
        if not self.chained:
            self.fail(f"nesting deeper than {MAX_DEPTH} levels")
        self.fail(
            f"expression deeper than {MAX_DEPTH} levels, {self.chained} of them operators of "
            "chains: each operator of a chain such as a + b + c adds a level to its tree, as "
            "each pair of parentheses does; split long chains into lets "
            "(let s = a + b + ..., then s + ...)"
        )

    def link(self, links: int, chained: bool = True) -> int:
        """One more operator in a chain like `a + b + c`: the tree it builds deepens by one
        level per operator, so a chain counts against the nesting limit as parentheses do
        (`chained` False: an index's brackets, which count as nesting)."""
        self.chained += chained
        self.nest()
        return links + 1

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
        self.chained -= links
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
        return self.chain(self.range_expr, lambda: self.at("ident") and self.tok.text == "o")

    def range_expr(self) -> ast.Node:
        node = self.additive()
        if self.at(".."):
            self.advance()
            hi = self.additive()
            node = ast.RangeLit(self.join(node.span), node, hi)
        return node

    def additive(self) -> ast.Node:
        return self.chain(self.multiplicative, lambda: self.at(*ADDITIVE))

    def multiplicative(self) -> ast.Node:
        return self.chain(self.unary, lambda: self.at(*MULTIPLICATIVE))

    def chain(self, operand: Callable[[], ast.Node], at_operator: Callable[[], bool]) -> ast.Node:
        """`operand (operator operand)*`, left-associative: `a - b - c` is `(a - b) - c`. The
        operator is its token's kind, or its text for a word (`o`)."""
        node = operand()
        links = 0
        while at_operator():
            links = self.link(links)
            tok = self.advance()
            rhs = operand()
            op = tok.text if tok.kind == "ident" else tok.kind
            node = ast.Binary(self.join(node.span), op, node, rhs, tok.span)
        self.depth -= links
        self.chained -= links
        return node

    def unary(self) -> ast.Node:
        if self.at("-"):
            op = self.advance()
            self.nest()
            operand = self.unary()
            self.depth -= 1
            return ast.Unary(self.join(op.span), "-", operand)
        return self.postfix()

    def postfix(self) -> ast.Node:
        node = self.primary()
        links = attrs = 0
        while True:
            if self.at(".") and self.peek().kind == "ident":
                links, attrs = self.link(links), attrs + 1
                self.advance()
                attr = self.advance()
                node = ast.Attr(self.join(node.span), node, attr.text)
            elif self.at("["):
                links = self.link(links, chained=False)
                self.advance()
                indices = self.comma_list("]", self.expr)
                node = ast.Index(self.join(node.span), node, indices)
            else:
                self.depth -= links
                self.chained -= attrs
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

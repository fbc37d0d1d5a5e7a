"""CuTe's text form of layouts: `((2,4),8):((1,16),2)`, `(4,8)`, `Sw<3,3,3> o 0 o (8,64):(64,1)`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tilec.dialects.layout.algebra import (
    DYN,
    ComposedLayout,
    IntTuple,
    Layout,
    LayoutError,
    Swizzle,
)

# `_8` is how CuTe C++ prints a static 8; accepting it lets C++ output be pasted in.
_TOKEN = re.compile(r"(?P<int>-?\d+|_\d+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[()<>,:?])")
SWIZZLE_NAMES = ("Sw", "swizzle", "Swizzle")


@dataclass(frozen=True)
class Token:
    kind: str  # "int", "name", "punct" or "end"
    text: str
    col: int  # 1-based


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise LayoutError(f"unexpected character {text[pos]!r}", pos + 1)
        tokens.append(Token(m.lastgroup, m.group(), pos + 1))
        pos = m.end()
    tokens.append(Token("end", "", len(text) + 1))
    return tokens


def _describe(tok: Token) -> str:
    return "end of input" if tok.kind == "end" else repr(tok.text)


class Parser:
    """Recursive descent over tokens; each error carries the column of the offending token.

    layout   := swizzle 'o' [INT 'o'] plain | plain ['o' [INT 'o'] plain]
    plain    := inttuple [':' inttuple]          (no stride: compact column-major)
    inttuple := INT | '?' | '(' [inttuple (',' inttuple)*] ')'
    swizzle  := ('Sw' | 'swizzle') '<' INT ',' INT ',' INT '>'
    """

    def __init__(self, text: str, allow_dynamic: bool = False) -> None:
        self.tokens = tokenize(text)
        self.pos = 0
        self.allow_dynamic = allow_dynamic

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.peek()
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return tok

    def error(self, message: str, tok: Token | None = None) -> LayoutError:
        return LayoutError(message, (tok or self.peek()).col)

    def expect(self, text: str, what: str | None = None) -> Token:
        tok = self.peek()
        if tok.text != text or tok.kind == "end":
            raise self.error(f"expected {what or repr(text)}, found {_describe(tok)}")
        return self.advance()

    def expect_end(self) -> None:
        if self.peek().kind != "end":
            raise self.error(f"unexpected {_describe(self.peek())} after the end")

    def integer(self) -> int:
        tok = self.peek()
        if tok.kind != "int":
            raise self.error(f"expected an integer, found {_describe(tok)}")
        self.advance()
        return int(tok.text.lstrip("_"))

    def int_tuple(self) -> IntTuple:
        tok = self.peek()
        if tok.kind == "int":
            return self.integer()
        if tok.text == "?":
            if not self.allow_dynamic:
                raise self.error("dynamic entry '?' is not allowed here")
            self.advance()
            return DYN
        if tok.text != "(":
            raise self.error(f"expected an integer, '?' or '(', found {_describe(tok)}")
        self.advance()
        items: list[IntTuple] = []
        if self.peek().text != ")":
            items.append(self.int_tuple())
            while self.peek().text == ",":
                self.advance()
                items.append(self.int_tuple())
        self.expect(")", "',' or ')'")
        return tuple(items)

    def is_swizzle_next(self) -> bool:
        return self.peek().text in SWIZZLE_NAMES and self.peek(1).text == "<"

    def swizzle(self) -> Swizzle:
        start = self.advance()
        self.expect("<")
        bits = self.integer()
        self.expect(",")
        base = self.integer()
        self.expect(",")
        shift = self.integer()
        self.expect(">")
        try:
            return Swizzle(bits, base, shift)
        except LayoutError as e:
            raise LayoutError(e.message, start.col) from None

    def plain_layout(self) -> Layout:
        start = self.peek()
        shape = self.int_tuple()
        stride = None
        if self.peek().text == ":":
            self.advance()
            stride = self.int_tuple()
        return self.make(shape, stride, start)

    def make(self, shape: IntTuple, stride: IntTuple | None, start: Token) -> Layout:
        try:
            return Layout(shape, stride)
        except LayoutError as e:
            raise LayoutError(e.message, start.col) from None

    def compose_rest(self, outer: Swizzle | Layout) -> ComposedLayout:
        """After `outer`, parse `o [offset o] inner`."""
        self.expect("o", "'o' after a swizzle")
        offset = 0
        if self.peek().kind == "int" and self.peek(1).text == "o":
            offset = self.integer()
            self.advance()
        return ComposedLayout(outer, offset, self.plain_layout())

    def layout(self) -> Layout | ComposedLayout:
        if self.is_swizzle_next():
            return self.compose_rest(self.swizzle())
        plain = self.plain_layout()
        if self.peek().text == "o":
            return self.compose_rest(plain)
        return plain


def parse_layout(text: str, allow_dynamic: bool = False) -> Layout | ComposedLayout:
    """Parse a layout; `?` entries (only with allow_dynamic) become `DYN`."""
    p = Parser(text, allow_dynamic)
    result = p.layout()
    p.expect_end()
    return result


def parse_int_tuple(text: str, allow_dynamic: bool = False) -> IntTuple:
    p = Parser(text, allow_dynamic)
    result = p.int_tuple()
    p.expect_end()
    return result

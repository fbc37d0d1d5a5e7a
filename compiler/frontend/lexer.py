"""Frontend (parse stage): the .tile lexer, source decoding and tokens with spans."""

from __future__ import annotations

from dataclasses import dataclass

from tilec.diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Span

KEYWORDS = frozenset({"kernel", "let", "var", "for", "in"})
# Two-character punctuation first, so `..` wins over `.`.
PUNCT = ("..", "(", ")", "[", "]", "{", "}", "<", ">", ",", ":", ";", ".", "=", "+", "-", "*")
PUNCT += ("/", "%", "!")
# A newline ends a statement only after a token that can end an expression (Go's rule), so an
# expression continues onto the next line after an operator or a comma.
ENDERS = frozenset({"ident", "int", "float", "string", ")", "]", "}", ">"})
MAX_INT = 2**63 - 1


@dataclass(frozen=True)
class Token:
    kind: str  # "ident" "int" "float" "string" "newline" "eof", a keyword, or the punctuation
    text: str
    span: Span
    value: int | float | None = None


def decode_source(data: bytes, file: str) -> str:
    """The text of a .tile file; invalid UTF-8 is a located error, not a traceback."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before[before.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        message = f"source is not valid UTF-8 (byte 0x{data[exc.start]:02x})"
        raise DiagnosticError([Diagnostic("error", message, Span(file, line, col))]) from None


class Lexer:
    def __init__(self, text: str, file: str, diags: DiagnosticEngine) -> None:
        self.text, self.file, self.diags = text, file, diags
        self.pos, self.line, self.line_start = 0, 1, 0
        self.depth = 0  # open ( and [: newlines inside them never end a statement
        self.tokens: list[Token] = []

    def span(self, start: int, length: int = 1) -> Span:
        return Span(self.file, self.line, start - self.line_start + 1, max(1, length))

    def add(self, kind: str, start: int, value: int | float | None = None) -> None:
        text = self.text[start : self.pos]
        self.tokens.append(Token(kind, text, self.span(start, len(text)), value))

    def run(self) -> list[Token]:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c == "\n":
                self.newline()
            elif c in " \t\r":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif c.isascii() and (c.isalpha() or c == "_"):
                self.ident()
            elif c.isascii() and c.isdigit():
                self.number()
            elif c == '"':
                self.string()
            else:
                self.punct(c)
        self.tokens.append(Token("eof", "", self.span(self.pos)))
        return self.tokens

    def newline(self) -> None:
        if self.depth == 0 and self.tokens and self.tokens[-1].kind in ENDERS:
            self.add("newline", self.pos)
        self.pos += 1
        self.line += 1
        self.line_start = self.pos

    def ident(self) -> None:
        start = self.pos
        while self.pos < len(self.text) and (
            self.text[self.pos].isascii()
            and (self.text[self.pos].isalnum() or self.text[self.pos] == "_")
        ):
            self.pos += 1
        word = self.text[start : self.pos]
        self.add(word if word in KEYWORDS else "ident", start)

    def number(self) -> None:
        start, text = self.pos, self.text
        self.digits()
        is_float = False
        # `1.5` is a float; `1..2` is a range and `x.16` an atom part, so a '.' needs a digit.
        if (
            text.startswith(".", self.pos)
            and self.pos + 1 < len(text)
            and text[self.pos + 1].isdigit()
        ):
            is_float = True
            self.pos += 1
            self.digits()
        if self.pos < len(text) and text[self.pos] in "eE":
            sign = 1 if self.pos + 1 < len(text) and text[self.pos + 1] in "+-" else 0
            if self.pos + 1 + sign < len(text) and text[self.pos + 1 + sign].isdigit():
                is_float = True
                self.pos += 1 + sign
                self.digits()
        literal = text[start : self.pos]
        if is_float:
            self.add("float", start, float(literal))
            return
        if len(literal) > 19 or int(literal) > MAX_INT:
            self.diags.error(
                f"integer literal {literal[:24]}{'...' if len(literal) > 24 else ''} does not "
                "fit in 64 bits",
                self.span(start, len(literal)),
            )
            self.add("int", start, 0)
            return
        self.add("int", start, int(literal))

    def string(self) -> None:
        """`"..."` on one line, no escapes: a PTX instruction name in a contract."""
        start = self.pos
        end = self.text.find('"', start + 1)
        newline = self.text.find("\n", start + 1)
        if end < 0 or 0 <= newline < end:
            self.pos = len(self.text) if newline < 0 else newline
            self.diags.error("unterminated string (it must end on its line)", self.span(start))
            return
        self.pos = end + 1
        self.add("string", start)

    def digits(self) -> None:
        while (
            self.pos < len(self.text)
            and self.text[self.pos].isascii()
            and self.text[self.pos].isdigit()
        ):
            self.pos += 1

    def punct(self, c: str) -> None:
        start = self.pos
        for p in PUNCT:
            if self.text.startswith(p, start):
                self.pos += len(p)
                self.depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(p, 0)
                # Braces never sit inside parentheses: an unclosed '(' stops at the next brace.
                self.depth = 0 if p in "{}" else max(0, self.depth)
                self.add(p, start)
                return
        self.pos += 1
        shown = repr(c) if c.isprintable() else f"U+{ord(c):04X}"
        self.diags.error(f"invalid character {shown}", self.span(start))


def lex(text: str, file: str, diags: DiagnosticEngine) -> list[Token]:
    """The tokens of `text`, ending with an `eof` token; bad characters become diagnostics."""
    return Lexer(text, file, diags).run()

"""`tilec layout EXPR`: evaluate a layout-algebra expression; print it, its table or an SVG."""

from __future__ import annotations

import argparse
import difflib
import inspect
import sys
from collections.abc import Callable

from tilec import layout as L
from tilec.diagnostics import Diagnostic, Span, render
from tilec.dialects.layout.algebra import tiler_str
from tilec.dialects.layout.text import Parser, Token

FUNCTIONS: dict[str, Callable[..., object]] = {
    f.__name__: f
    for f in (
        L.blocked_product,
        L.coalesce,
        L.complement,
        L.composition,
        L.cosize,
        L.crd2idx,
        L.depth,
        L.downcast,
        L.filter,
        L.flat_divide,
        L.flat_product,
        L.get,
        L.idx2crd,
        L.left_inverse,
        L.logical_divide,
        L.logical_product,
        L.make_layout,
        L.make_ordered_layout,
        L.max_common_layout,
        L.max_common_vector,
        L.raked_product,
        L.rank,
        L.right_inverse,
        L.select,
        L.shape,
        L.size,
        L.slice,
        L.slice_and_offset,
        L.stride,
        L.tile_to_shape,
        L.tiled_divide,
        L.tiled_product,
        L.upcast,
        L.zipped_divide,
        L.zipped_product,
    )
}

USAGE_EXAMPLES = """\
expressions: layout literals (8:1, (4,8), ((2,4),8):((1,16),2), swizzle<3,3,3> o (8,64):(64,1)),
int tuples ((2,4) is a by-mode tiler), `_`, and calls of the algebra by CuTe name:
  tilec layout "composition((4,8):(8,1), (2,2):(1,4))"
  tilec layout "logical_divide((8,8):(8,1), (2,4))" --table
  tilec layout "blocked_product((2,2):(1,2), (3,4))" --svg blocked.svg
  tilec layout "(32,4):(1,32)" --tv "(32,4)" --table

functions: """ + ", ".join(sorted(FUNCTIONS))


class ExprParser(Parser):
    """Layout text plus calls, evaluated as parsed so a failure points at its call.

    expr := NAME '(' [expr (',' expr)*] ')' | '_' | swizzle ['o' ...]
          | (INT | '(' [expr (',' expr)*] ')') [':' inttuple] ['o' [INT 'o'] plain]
    """

    def expr(self) -> object:
        tok = self.peek()
        if self.is_swizzle_next():
            sw = self.swizzle()
            return self.compose_rest(sw) if self.peek().text == "o" else sw
        if tok.kind == "name" and tok.text == "_":
            self.advance()
            return None
        if tok.kind == "name":
            return self.call()
        if tok.kind == "int" or tok.text == "(":
            return self.literal()
        raise self.error(f"expected an expression, found {_describe(tok)}")

    def literal(self) -> object:
        start = self.peek()
        value = self.integer() if start.kind == "int" else self.tuple()
        if self.peek().text != ":":
            return value
        if not _is_int_tuple(value):
            raise self.error("a layout's shape holds only integers", start)
        self.advance()
        layout = self.make(value, self.int_tuple(), start)
        return self.compose_rest(layout) if self.peek().text == "o" else layout

    def tuple(self) -> tuple:
        self.expect("(")
        items = []
        if self.peek().text != ")":
            items.append(self.expr())
            while self.peek().text == ",":
                self.advance()
                items.append(self.expr())
        self.expect(")", "',' or ')'")
        return tuple(items)

    def call(self) -> object:
        name = self.advance()
        fn = FUNCTIONS.get(name.text)
        if fn is None:
            close = difflib.get_close_matches(name.text, FUNCTIONS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise self.error(f"unknown function '{name.text}'{hint}", name)
        self.expect("(", f"'(' after '{name.text}'")
        args = [] if self.peek().text == ")" else [self.expr()]
        while self.peek().text == ",":
            self.advance()
            args.append(self.expr())
        self.expect(")", "',' or ')'")
        return _apply(fn, args, name)


def _describe(tok: Token) -> str:
    return "end of input" if tok.kind == "end" else repr(tok.text)


def _is_int_tuple(v: object) -> bool:
    if isinstance(v, tuple):
        return all(_is_int_tuple(x) for x in v)
    return isinstance(v, int)


def _apply(fn: Callable[..., object], args: list[object], name: Token) -> object:
    try:
        return fn(*args)
    except L.LayoutError as e:
        raise L.LayoutError(e.message, name.col) from None
    except (TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as e:
        # The algebra checks what CuTe checks; anything else is a call the user spelt wrong.
        params = ", ".join(inspect.signature(fn).parameters)
        raise L.LayoutError(f"bad arguments for {name.text}({params}): {e}", name.col) from None


def evaluate(text: str) -> object:
    """The value of EXPR; a bare int-tuple literal is read as a compact layout, like CuTe."""
    p = ExprParser(text)
    value = p.expr()
    p.expect_end()
    if p.tokens[0].kind != "name" and _is_int_tuple(value):
        return L.Layout(value)
    return value


def _report(text: str, err: L.LayoutError) -> None:
    span = Span("<expr>", 1, err.col) if err.col is not None else None
    print(render(Diagnostic("error", err.message, span), text), file=sys.stderr)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="tilec layout",
        description="Evaluate a CuTe layout-algebra expression and print the result.",
        epilog=USAGE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("expr", metavar="EXPR", help="a layout expression")
    parser.add_argument("--table", action="store_true", help="print CuTe's print_layout table")
    parser.add_argument("--svg", metavar="FILE", help="write an SVG picture to FILE")
    parser.add_argument(
        "--tv",
        metavar="TILE",
        help="read the result as a (thread, value) layout over the tile (M,N), e.g. '(8,8)'",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a usage error argparse has already reported
        return int(e.code or 0)

    try:
        value = evaluate(args.expr)
        tile = L.parse_int_tuple(args.tv) if args.tv else None
    except L.LayoutError as e:
        _report(args.expr, e)
        return 1
    if not args.table:  # the table's first line is the layout already
        print(tiler_str(value))
    if not (args.table or args.svg):
        return 0
    if not isinstance(value, (L.Layout, L.ComposedLayout)):
        print(
            f"<expr>: error: --table and --svg draw layouts, not {tiler_str(value)}",
            file=sys.stderr,
        )
        return 1
    try:
        if args.table:
            print(L.tv_table(value, tile) if tile is not None else L.layout_table(value))
        if args.svg:
            with open(args.svg, "w", encoding="utf-8") as f:
                f.write(L.to_svg(value, tile))
    except L.LayoutError as e:
        _report(args.expr, L.LayoutError(e.message))
        return 1
    except OSError as e:
        print(f"tilec layout: error: cannot write {args.svg}: {e.strerror}", file=sys.stderr)
        return 1
    return 0

"""`tilec layout EXPR`: evaluate a layout-algebra expression; print it, its table or an SVG."""

from __future__ import annotations

import argparse
import re
import sys

from tilec import layout as L
from tilec.diagnostics import Diagnostic, DiagnosticError, Span, render
from tilec.dialects.layout.int_tuple import tiler_str
from tilec.frontend import evaluate_expression
from tilec.frontend.builtins_scalar import ALGEBRA, to_algebra

USAGE_EXAMPLES = """\
EXPR is an expression of the kernel language (docs/language.md), evaluated as in a kernel:
layout literals (8:1, (4,8):(1,4), ((2,4),8):((1,16),2), swizzle<3,3,3> o (8,64):(64,1)),
int tuples ((2,4) is a by-mode tiler; alone it is read as the compact layout (2,4):(1,2)),
`_`, integer arithmetic, and the layout algebra by CuTe name; make_layout(shape, stride).
  tilec layout "composition((4,8):(8,1), (2,2):(1,4))"
  tilec layout "logical_divide((8,8):(8,1), (2,4))" --table
  tilec layout --svg blocked.svg "blocked_product((2,2):(1,2), (3,4))"
  tilec layout "(32,4):(1,32)" --tv "(32,4)" --table

functions: """ + ", ".join(sorted((*ALGEBRA, "make_layout")))

EXPR_FILE = "<expr>"


def evaluate(text: str) -> object:
    """The value of EXPR as the algebra's objects; a bare int-tuple is its compact layout.

    Raises DiagnosticError, located in EXPR, for anything the kernel language rejects and
    for values that are not layouts, int-tuples or `_` (a float, a runtime size, ...).
    """
    value = evaluate_expression(text, EXPR_FILE)
    try:
        result = to_algebra(value)
    except TypeError:
        result = L.DYN
    if result is L.DYN or (isinstance(result, tuple) and L.DYN in L.flatten(result)):
        span = Span(EXPR_FILE, 1, len(text) - len(text.lstrip()) + 1)
        message = f"tilec layout prints layouts, int-tuples and `_`, not a {value.describe()}"
        raise DiagnosticError([Diagnostic("error", message, span)])
    literal = re.match(r"\s*[A-Za-z_]", text) is None  # not a call's or a name's value
    if literal and (L.is_int(result) or _is_int_tuple(result)):
        return L.Layout(result)
    return result


def _is_int_tuple(v: object) -> bool:
    return isinstance(v, tuple) and all(L.is_int(x) or _is_int_tuple(x) for x in v)


def _report(text: str, diags: list[Diagnostic]) -> None:
    for diag in diags:
        print(render(diag, text), file=sys.stderr)


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
    # An expression may start with '-' (a negated layout): a word that is not one of the
    # options above is the expression, so argparse must not read it as an option.
    argv = list(sys.argv[1:] if argv is None else argv)
    options = ("-h", "--help", "--table", "--svg", "--tv", "--")
    shielded = {f" {a}" for a in argv if a.startswith("-") and a.split("=")[0] not in options}
    argv = [f" {a}" if f" {a}" in shielded else a for a in argv]
    try:
        args = parser.parse_args(argv)
        if args.expr in shielded:
            args.expr = args.expr[1:]
    except SystemExit as e:  # --help, or a usage error argparse has already reported
        return int(e.code or 0)

    try:
        value = evaluate(args.expr)
    except DiagnosticError as e:
        _report(args.expr, e.diagnostics)
        return 1
    try:
        tile = L.parse_int_tuple(args.tv) if args.tv else None
    except L.LayoutError as e:
        _report(args.tv, [Diagnostic("error", e.message, Span("<tv>", 1, e.col or 1))])
        return 1
    drawn = isinstance(value, (L.Layout, L.ComposedLayout))
    if drawn and (args.table or args.svg):
        try:
            _check_drawable(args.expr, value, tile, "--table" if args.table else "--svg")
        except DiagnosticError as e:
            _report(args.expr, e.diagnostics)
            return 1
    if not args.table:  # the table's first line is the layout already
        print(tiler_str(value))
    if not (args.table or args.svg):
        return 0
    if not drawn:
        print(
            f"<expr>: error: --table and --svg draw layouts, not {tiler_str(value)}",
            file=sys.stderr,
        )
        return 1
    try:
        table = ""
        if args.table:
            table = L.tv_table(value, tile) if tile is not None else L.layout_table(value)
        picture = L.to_svg(value, tile) if args.svg else ""
    except L.LayoutError as e:
        _report(args.expr, [Diagnostic("error", e.message, None)])
        return 1
    if args.table:
        print(table)  # a reader that left (`| head`) ends the command quietly: tilec.tools
    if args.svg:
        try:
            with open(args.svg, "w", encoding="utf-8") as f:
                f.write(picture)
        except OSError as e:
            print(f"tilec layout: error: cannot write {args.svg}: {e.strerror}", file=sys.stderr)
            return 1
    return 0


# The most cells --table or --svg draws: 256 x 256 (a 128 x 256 GEMM tile's TV picture fits);
# a table of 2^40 cells would take hours and terabytes.
MAX_CELLS = 1 << 16


def _check_drawable(text: str, value: object, tile: object, what: str) -> None:
    """Refuse a picture too large to draw, before drawing any of it."""
    cells = L.size(value)
    if tile is not None:
        cells = max(cells, L.size(tile))
    if cells <= MAX_CELLS:
        return
    span = Span(EXPR_FILE, 1, len(text) - len(text.lstrip()) + 1, len(text.strip()))
    message = (
        f"{what} of {tiler_str(value)} would draw {cells} cells, over the limit of {MAX_CELLS} "
        "(256 x 256)"
    )
    note = "draw a part of it (e.g. slice((_, 0), L) or a smaller shape), or print it alone"
    raise DiagnosticError([Diagnostic("error", message, span, [Diagnostic("note", note, None)])])

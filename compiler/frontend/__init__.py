"""Frontend: the .tile lexer, parser, AST, semantic checks and IR generation."""

from __future__ import annotations

from pathlib import Path

from tilec.diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError
from tilec.frontend import ast
from tilec.frontend.dump import dump_ast as _dump_node
from tilec.frontend.expr import ExprChecker

# Imported here so that `tilec.frontend.irgen` is the function, never the submodule that
# importing it later would otherwise put in its place.
from tilec.frontend.irgen import irgen
from tilec.frontend.lexer import decode_source, lex
from tilec.frontend.parser import ParseError, Parser, parse
from tilec.frontend.sema import Checked, check
from tilec.frontend.values import Scope, V

__all__ = [
    "Checked",
    "DiagnosticError",
    "ast",
    "check",
    "compile_to_ast_text",
    "dump_ast",
    "evaluate_expression",
    "irgen",
    "parse_source",
    "read_source",
    "target_of",
]


def read_source(path: str | Path) -> str:
    """The text of a .tile file; invalid UTF-8 raises a located DiagnosticError."""
    return decode_source(Path(path).read_bytes(), str(path))


def parse_source(text: str, file: str) -> ast.Module:
    """The AST of a .tile source; raises DiagnosticError with every syntax error found."""
    diags = DiagnosticEngine()
    try:
        module = parse(text, file, diags)
    except DiagnosticError as exc:  # too many errors: report them in source order too
        raise DiagnosticError(sorted_by_position(exc.diagnostics)) from None
    if diags.has_errors:
        raise DiagnosticError(sorted_by_position(diags.diagnostics))
    return module


def evaluate_expression(text: str, file: str) -> V:
    """The compile-time value of one kernel-language expression (`tilec layout EXPR`), checked
    as it would be in a kernel body with no names in scope; raises DiagnosticError."""
    diags = DiagnosticEngine()
    parser = Parser(lex(text, file, diags), diags)
    try:
        parser.skip_newlines()
        node = parser.expr(compare=False)  # layout algebra: `Sw<3,3,3>` is a typo, not `Sw < 3`
        parser.skip_newlines()
        parser.expect("eof", "the end of the expression")
    except ParseError:
        pass
    if not diags.has_errors:
        value = ExprChecker(diags, file).expr(node, Scope())
    if diags.has_errors:
        raise DiagnosticError(sorted_by_position(diags.diagnostics))
    return value


def dump_ast(tree: ast.Node | Checked) -> str:
    """`--emit ast`: the program as an indented S-expression; a checked one also shows the value
    of every expression."""
    if isinstance(tree, Checked):
        return _dump_node(tree.module, tree.values)
    return _dump_node(tree)


def compile_to_ast_text(text: str, file: str, params: dict[str, str] | None = None) -> str:
    """Parse and check `text`, then dump its AST; raises DiagnosticError."""
    return dump_ast(check(parse_source(text, file), params or {}))


def target_of(checked: Checked) -> str | None:
    """The target the module's kernels name (the first kernel's), or None without kernels."""
    return checked.kernels[0].target if checked.kernels else None


def sorted_by_position(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Lexer and parser errors interleaved in source order; unlocated ones last."""
    return sorted(diags, key=lambda d: (d.span is None, (d.span.line, d.span.col) if d.span else 0))

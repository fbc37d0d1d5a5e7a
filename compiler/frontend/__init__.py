"""Frontend: the .tile lexer, parser, AST, semantic checks and IR generation."""

from __future__ import annotations

from pathlib import Path

from tilec.diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError
from tilec.frontend import ast
from tilec.frontend.dump import dump_ast
from tilec.frontend.lexer import decode_source
from tilec.frontend.parser import parse
from tilec.frontend.sema import Checked, check

__all__ = [
    "Checked",
    "DiagnosticError",
    "ast",
    "check",
    "dump_ast",
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


def sorted_by_position(diags: list[Diagnostic]) -> list[Diagnostic]:
    """Lexer and parser errors interleaved in source order; unlocated ones last."""
    return sorted(
        diags,
        key=lambda d: (d.span is None, d.span.line if d.span else 0, d.span.col if d.span else 0),
    )


def target_of(checked: Checked) -> str | None:
    """The target the module's kernels name (the first kernel's), or None without kernels."""
    return checked.kernels[0].target if checked.kernels else None

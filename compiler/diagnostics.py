"""Every stage: located diagnostics, their rendering, and MLIR-style expected-diagnostic checks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SEVERITIES = ("error", "warning", "note", "remark")


@dataclass(frozen=True)
class Span:
    """A source range: 1-based line and column (in characters), and a length in characters."""

    file: str
    line: int
    col: int
    length: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass
class Diagnostic:
    severity: str  # one of SEVERITIES
    message: str
    span: Span | None
    notes: list[Diagnostic] = field(default_factory=list)

    def header(self) -> str:
        """The first line of the rendering: `file:line:col: severity: message`."""
        where = f"{self.span}: " if self.span is not None else ""
        return f"{where}{self.severity}: {self.message}"


def _printable(line: str) -> str:
    # Control bytes (NUL, ESC, ...) would garble a terminal; each stays one column wide.
    return "".join("\ufffd" if (ord(c) < 32 and c != "\t") or ord(c) == 127 else c for c in line)


def source_line(source: str, line: int) -> str | None:
    """Line `line` (1-based) of `source`, split on '\\n' only, as the lexer counts lines."""
    lines = source.split("\n")
    if not 1 <= line <= len(lines):
        return None
    return lines[line - 1].rstrip("\r")


def _render_one(diag: Diagnostic, source: str | None) -> str:
    out = diag.header()
    if diag.span is None or source is None:
        return out
    text = source_line(source, diag.span.line)
    if text is None:
        return out
    col = max(1, diag.span.col)
    # Keep tabs in the caret line so the caret lines up under the same character.
    pad = "".join("\t" if c == "\t" else " " for c in text[: col - 1])
    pad += " " * max(0, col - 1 - len(text))
    width = max(1, min(diag.span.length, len(text) - col + 1))
    return f"{out}\n{_printable(text)}\n{pad}^{'~' * (width - 1)}"


def render(diag: Diagnostic, source: str | None) -> str:
    """The diagnostic with its source line and caret, then each note the same way."""
    parts = [_render_one(diag, source)]
    parts.extend(render(note, source) for note in diag.notes)
    return "\n".join(parts)


def render_all(diags: Iterable[Diagnostic], sources: dict[str, str] | None = None) -> str:
    """Every diagnostic rendered with the line it points at: from `sources` (buffer name ->
    text) when it names the diagnostic's file, else read from that file (no line if neither)."""
    known: dict[str, str | None] = dict(sources or {})

    def source_for(diag: Diagnostic) -> str | None:
        if diag.span is None:
            return None
        file = diag.span.file
        if file not in known:
            try:
                known[file] = Path(file).read_text(errors="replace")
            except (OSError, ValueError):
                known[file] = None
        return known[file]

    return "\n".join(render(d, source_for(d)) for d in diags)


class DiagnosticError(Exception):
    """Raised by the frontend when a stage fails; carries every diagnostic it produced."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.header() for d in self.diagnostics))

    def render(self, source: str | None) -> str:
        return "\n".join(render(d, source) for d in self.diagnostics)


class DiagnosticEngine:
    """Collects diagnostics; raises DiagnosticError once `max_errors` errors have been emitted."""

    def __init__(self, max_errors: int = 20) -> None:
        self.diagnostics: list[Diagnostic] = []
        self.max_errors = max_errors
        self.error_count = 0

    @property
    def has_errors(self) -> bool:
        return self.error_count > 0

    def emit(
        self,
        severity: str,
        message: str,
        span: Span | None,
        notes: Iterable[Diagnostic] = (),
    ) -> Diagnostic:
        assert severity in SEVERITIES, severity
        diag = Diagnostic(severity, message, span, list(notes))
        self.diagnostics.append(diag)
        if severity != "error":
            return diag
        self.error_count += 1
        if self.error_count >= self.max_errors:
            self.diagnostics.append(
                Diagnostic("error", "too many errors emitted, stopping now", span)
            )
            raise DiagnosticError(self.diagnostics)
        return diag

    def error(
        self, message: str, span: Span | None, notes: Iterable[Diagnostic] = ()
    ) -> Diagnostic:
        return self.emit("error", message, span, notes)

    def warning(
        self, message: str, span: Span | None, notes: Iterable[Diagnostic] = ()
    ) -> Diagnostic:
        return self.emit("warning", message, span, notes)

    def raise_if_errors(self) -> None:
        if self.has_errors:
            raise DiagnosticError(self.diagnostics)


def note(message: str, span: Span | None = None) -> Diagnostic:
    """A note to attach to another diagnostic."""
    return Diagnostic("note", message, span)

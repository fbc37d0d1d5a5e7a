"""Every stage: located diagnostics, their rendering, and MLIR-style expected-diagnostic checks."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

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


# ---------------------------------------------------------------------------------------------
# Expected diagnostics, in MLIR's annotation syntax:
#   // expected-error {{text}}          on this line
#   // expected-error @+1 {{text}}      N lines below (@-N above, @N an absolute line)
#   // expected-note @above {{text}}    the nearest line above that carries no annotation
#   // expected-warning @below {{text}} the nearest line below that carries no annotation


@dataclass(frozen=True)
class Expected:
    severity: str
    line: int
    text: str
    file: str = ""


_EXPECTED = re.compile(
    r"expected-(error|warning|note|remark)\s*(?:@\s*([+-]\d+|\d+|above|below))?\s*\{\{(.*)\}\}"
)
_ANNOTATION_ONLY = re.compile(r"^\s*//.*expected-(error|warning|note|remark)")


def parse_expected(source: str, file: str) -> list[Expected]:
    """Every expected-* annotation in `source`, resolved to the line it expects a diagnostic on."""
    lines = source.split("\n")
    plain = [not _ANNOTATION_ONLY.match(text) for text in lines]
    found: list[Expected] = []
    for index, text in enumerate(lines):
        for m in _EXPECTED.finditer(text):
            severity, where, message = m.group(1), m.group(2), m.group(3)
            line = _resolve_line(index, where, plain)
            found.append(Expected(severity, line, message, file))
    return found


def _resolve_line(index: int, where: str | None, plain: list[bool]) -> int:
    """The 1-based line an annotation on 0-based line `index` refers to."""
    if where is None:
        return index + 1
    if where == "above":
        target = next((i for i in range(index - 1, -1, -1) if plain[i]), index)
        return target + 1
    if where == "below":
        target = next((i for i in range(index + 1, len(plain)) if plain[i]), index)
        return target + 1
    if where[0] in "+-":
        return index + 1 + int(where)
    return int(where)


def _flatten(diags: Iterable[Diagnostic], parent: Span | None = None) -> list[Diagnostic]:
    # MLIR reports notes as diagnostics of their own; a note without a location takes its
    # parent's, as MLIR's verifier does.
    flat = []
    for d in diags:
        span = d.span if d.span is not None else parent
        flat.append(Diagnostic(d.severity, d.message, span))
        flat.extend(_flatten(d.notes, span))
    return flat


def verify_expected(expected: list[Expected], produced: list[Diagnostic]) -> list[str]:
    """Mismatches between expected and produced diagnostics; an empty list means they agree."""
    remaining = _flatten(produced)
    problems: list[tuple[int, str]] = []
    for exp in expected:
        match = next(
            (
                d
                for d in remaining
                if d.severity == exp.severity
                and d.span is not None
                and d.span.line == exp.line
                and exp.text in d.message
            ),
            None,
        )
        if match is None:
            problems.append(
                (
                    exp.line,
                    f'{exp.file}:{exp.line}: expected {exp.severity} "{exp.text}" was not produced',
                )
            )
            continue
        remaining.remove(match)
    for d in remaining:
        where = f"{d.span}: " if d.span is not None else ""
        line = d.span.line if d.span is not None else 0
        problems.append((line, f"{where}unexpected {d.severity}: {d.message}"))
    problems.sort(key=lambda p: p[0])
    return [text for _, text in problems]

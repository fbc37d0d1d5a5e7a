"""Every stage: `--verify-diagnostics`, with the annotation syntax and rules of mlir-opt.

An annotation names a severity, an optional designator and the text to find in the message:

    // expected-error {{text}}            on this line
    // expected-error @+2 {{text}}        two lines below (@-N: N above)
    // expected-note @above {{text}}      the last line above that holds no annotation
    // expected-warning @below {{text}}   the next line below that holds no annotation
    // expected-remark @unknown {{text}}  a diagnostic with no file location
    // expected-error-re {{a {{[0-9]+}} b}}   regex pieces inside {{ }}

The rules are MLIR's (SourceMgrDiagnosticVerifierHandler): one annotation per line (the text
runs to the last `}}` of the line); a produced diagnostic matches an annotation of its file,
line and severity whose text it contains, and one annotation may match several diagnostics;
notes are matched like any diagnostic; a diagnostic that matches nothing is an error, and so is
an annotation that nothing matched. `file` is the name of the buffer the annotations are in.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tilec.diagnostics import Diagnostic, Span

_ANNOTATION = re.compile(
    r"expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))? *"
    r"\{\{(.*)\}\}$"
)


@dataclass
class Expected:
    """One annotation: what it expects, on which line (0 for @unknown), and where it is written."""

    severity: str
    line: int
    text: str
    at: Span  # the annotation itself: where 'not produced' is reported
    pattern: re.Pattern[str] | None = None  # for expected-*-re
    matched: bool = False

    def accepts(self, message: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message


def _regex(text: str) -> str:
    """An `-re` annotation's text as one regex: literal pieces escaped, `{{...}}` kept."""
    out, rest = [], text
    while rest:
        start = rest.find("{{")
        if start < 0:
            out.append(re.escape(rest))
            break
        out.append(re.escape(rest[:start]))
        rest = rest[start + 2 :]
        end = rest.find("}}")
        if end < 0:
            raise ValueError("found start of regex with no end '}}'")
        out.append(f"({rest[:end]})")
        rest = rest[end + 2 :]
    return "".join(out)


def parse_expected(source: str, file: str) -> tuple[list[Expected], list[Diagnostic]]:
    """Every annotation in `source` (line numbers resolved), and errors in the annotations."""
    lines = source.split("\n")
    found: list[Expected] = []
    errors: list[Diagnostic] = []
    last_plain = 0  # 0-based index of the last line without an annotation
    waiting_below: list[Expected] = []
    for index, line in enumerate(lines):
        m = _ANNOTATION.search(line.rstrip())
        if m is None:
            for exp in waiting_below:
                exp.line = index + 1
            waiting_below.clear()
            last_plain = index
            continue
        severity, is_re, where, text = m.group(1), m.group(2), m.group(4), m.group(5)
        exp = Expected(severity, index + 1, text, Span(file, index + 1, m.start() + 1, len(text)))
        if is_re:
            try:
                exp.pattern = re.compile(_regex(text))
            except (ValueError, re.error) as exc:
                message = str(exc) if isinstance(exc, ValueError) else f"invalid regex: {exc}"
                errors.append(Diagnostic("error", message, exp.at))
                continue
        if where is None:
            pass
        elif where[0] in "+-":
            exp.line += int(where)
        elif where == "unknown":
            exp.line = 0
        elif where == "above":
            exp.line = last_plain + 1
        else:  # below: the next plain line; the last line if none follows
            exp.line = len(lines)
            waiting_below.append(exp)
        found.append(exp)
    return found, errors


def _flatten(diags: list[Diagnostic], parent: Span | None = None) -> list[Diagnostic]:
    """Each diagnostic, then its notes, in the order a diagnostic handler sees them; a note
    without a location has its parent's, as MLIR's `attachNote` gives it."""
    flat: list[Diagnostic] = []
    for d in diags:
        span = d.span if d.span is not None else parent
        flat.append(Diagnostic(d.severity, d.message, span))
        flat.extend(_flatten(d.notes, span))
    return flat


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace")
    except (OSError, ValueError):
        return None


def verify_expected(
    source: str, file: str, produced: list[Diagnostic], only_expected: bool = False
) -> list[Diagnostic]:
    """The errors of verifying `produced` against the annotations of `source` (the buffer
    named `file`); [] when they agree. A diagnostic located in another file is checked against
    that file's annotations, read from disk, as mlir-opt does. Each error is located (at the
    diagnostic or at the annotation) for rendering. `only_expected` (mlir-opt's
    `--verify-diagnostics=only-expected`): a diagnostic that no annotation names is no error."""
    per_file: dict[str, list[Expected]] = {}
    problems: list[Diagnostic] = []

    def annotations(name: str) -> list[Expected]:
        if name not in per_file:
            text = source if name == file else _read(name)
            found, errors = parse_expected(text, name) if text is not None else ([], [])
            per_file[name] = found
            problems.extend(errors)
        return per_file[name]

    annotations(file)
    for diag in _flatten(produced):
        if diag.span is None:
            candidates = [e for exps in per_file.values() for e in exps if e.line == 0]
        else:
            line = diag.span.line
            candidates = [e for e in annotations(diag.span.file) if e.line == line != 0]
        near = None
        for exp in candidates:
            if not exp.accepts(diag.message):
                continue
            if exp.severity == diag.severity:
                exp.matched = True
                break
            near = exp
        else:
            if only_expected:
                continue
            if near is not None:
                message = f"'{diag.severity}' diagnostic emitted when expecting a '{near.severity}'"
                problems.append(Diagnostic("error", message, near.at))
            else:
                message = f"unexpected {diag.severity}: {diag.message}"
                problems.append(Diagnostic("error", message, diag.span))
    for exps in per_file.values():
        for exp in exps:
            if not exp.matched:
                message = f'expected {exp.severity} "{exp.text}" was not produced'
                problems.append(Diagnostic("error", message, exp.at))
    return problems

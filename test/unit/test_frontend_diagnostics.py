"""Unit tests of tilec.diagnostics: rendering, the engine, expected-diagnostic checks."""

import pytest

from tilec.diagnostics import (
    Diagnostic,
    DiagnosticEngine,
    DiagnosticError,
    Expected,
    Span,
    note,
    parse_expected,
    render,
    verify_expected,
)

SOURCE = "kernel k() {\n  let x = foo(1, 2)\n}\n"


def test_render_caret_under_span() -> None:
    diag = Diagnostic("error", "undefined name 'foo'", Span("k.tile", 2, 11, 3))
    assert render(diag, SOURCE) == (
        "k.tile:2:11: error: undefined name 'foo'\n  let x = foo(1, 2)\n          ^~~"
    )


def test_render_notes_and_no_source() -> None:
    diag = Diagnostic(
        "error", "bad", Span("k.tile", 1, 1), [note("here", Span("k.tile", 3, 1)), note("hint")]
    )
    assert render(diag, None) == "k.tile:1:1: error: bad\nk.tile:3:1: note: here\nnote: hint"
    assert render(diag, SOURCE).split("\n")[3:6] == ["k.tile:3:1: note: here", "}", "^"]


def test_render_clamps_length_keeps_tabs_and_hides_control_bytes() -> None:
    src = "\tab\x00c\n"
    diag = Diagnostic("warning", "w", Span("f", 1, 3, 99))
    assert render(diag, src) == "f:1:3: warning: w\n\tab\ufffdc\n\t ^~~"
    past_end = Diagnostic("error", "eof", Span("f", 1, 7))
    assert render(past_end, src).endswith("\n\t     ^")
    off_file = Diagnostic("error", "x", Span("f", 40, 1))
    assert render(off_file, src) == "f:40:1: error: x"


def test_engine_stops_after_max_errors() -> None:
    engine = DiagnosticEngine(max_errors=3)
    engine.warning("w", None)
    engine.error("e1", None)
    engine.error("e2", None)
    assert engine.has_errors and engine.error_count == 2
    with pytest.raises(DiagnosticError) as info:
        engine.error("e3", None)
    messages = [d.message for d in info.value.diagnostics]
    assert messages == ["w", "e1", "e2", "e3", "too many errors emitted, stopping now"]


def test_raise_if_errors() -> None:
    engine = DiagnosticEngine()
    engine.warning("only a warning", None)
    engine.raise_if_errors()
    engine.error("now an error", Span("f", 1, 1))
    with pytest.raises(DiagnosticError, match="f:1:1: error: now an error"):
        engine.raise_if_errors()


ANNOTATED = """\
let a = 1 // expected-error {{same line}}
// expected-warning @+1 {{next line}}
let b = 2
let c = 3
// expected-note@-1 {{previous line}}
let d = 4
// expected-error @above {{above skips annotations}}
// expected-remark @below {{below skips annotations}}
// expected-error @below {{two for one line}}
let e = 5 // expected-error@2 {{absolute}}
"""


def test_parse_expected_resolves_every_designator() -> None:
    got = parse_expected(ANNOTATED, "t.tile")
    assert got == [
        Expected("error", 1, "same line", "t.tile"),
        Expected("warning", 3, "next line", "t.tile"),
        Expected("note", 4, "previous line", "t.tile"),
        Expected("error", 6, "above skips annotations", "t.tile"),
        Expected("remark", 10, "below skips annotations", "t.tile"),
        Expected("error", 10, "two for one line", "t.tile"),
        Expected("error", 2, "absolute", "t.tile"),
    ]


def test_parse_expected_text_may_hold_braces() -> None:
    got = parse_expected("x // expected-error {{shape {{1}} vs (2,3)}}\n", "f")
    assert got == [Expected("error", 1, "shape {{1}} vs (2,3)", "f")]


def test_verify_expected_reports_missing_and_unexpected() -> None:
    expected = [
        Expected("error", 2, "undefined name", "k.tile"),
        Expected("error", 5, "never produced", "k.tile"),
    ]
    produced = [
        Diagnostic("error", "undefined name 'foo'", Span("k.tile", 2, 11)),
        Diagnostic("warning", "unused 'x'", Span("k.tile", 3, 7)),
    ]
    assert verify_expected(expected, produced) == [
        "k.tile:3:7: unexpected warning: unused 'x'",
        'k.tile:5: expected error "never produced" was not produced',
    ]


def test_verify_expected_matches_notes_and_needs_one_diag_each() -> None:
    produced = [
        Diagnostic("error", "dup 'x'", Span("f", 4, 1), [note("first 'x' here", Span("f", 2, 1))])
    ]
    ok = [Expected("error", 4, "dup", "f"), Expected("note", 2, "first", "f")]
    assert verify_expected(ok, produced) == []
    twice = [Expected("error", 4, "dup", "f"), Expected("error", 4, "dup", "f"), ok[1]]
    assert verify_expected(twice, produced) == ['f:4: expected error "dup" was not produced']
    wrong_severity = [Expected("warning", 4, "dup", "f"), ok[1]]
    assert verify_expected(wrong_severity, produced) == [
        'f:4: expected warning "dup" was not produced',
        "f:4:1: unexpected error: dup 'x'",
    ]

"""Unit tests of tilec.diagnostics: rendering, the engine, expected-diagnostic checks."""

import pytest

from tilec.diagnostics import Diagnostic, DiagnosticEngine, DiagnosticError, Span, note, render
from tilec.expected import parse_expected, verify_expected

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
let e = 5 // expected-error@2 {{no absolute lines in MLIR's syntax: not an annotation}}
// expected-warning @unknown {{nowhere}}
// expected-error-re {{shape {{[0-9]+}} of (2,3)}}
// expected-note @below {{dangling: the last line}}"""


def resolved(source: str, file: str = "t.tile") -> list[tuple[str, int, str]]:
    found, errors = parse_expected(source, file)
    assert errors == []
    return [(e.severity, e.line, e.text) for e in found]


def test_parse_expected_resolves_every_designator_as_mlir_does() -> None:
    assert resolved(ANNOTATED) == [
        ("error", 1, "same line"),
        ("warning", 3, "next line"),
        ("note", 4, "previous line"),
        ("error", 6, "above skips annotations"),
        ("remark", 10, "below skips annotations"),
        ("error", 10, "two for one line"),
        ("warning", 0, "nowhere"),
        ("error", 12, "shape {{[0-9]+}} of (2,3)"),
        ("note", 13, "dangling: the last line"),
    ]


def test_annotation_is_located_at_its_text() -> None:
    found, _ = parse_expected("x = 1  // expected-error @+1 {{boom}}\n", "f")
    assert found[0].at == Span("f", 1, 11, 4)


def test_annotation_text_runs_to_the_last_braces_of_its_line() -> None:
    assert resolved("x // expected-error {{shape {{1}} vs (2,3)}}\n", "f") == [
        ("error", 1, "shape {{1}} vs (2,3)")
    ]


def test_bad_regex_is_an_error_at_the_annotation() -> None:
    found, errors = parse_expected("// expected-error-re {{a {{[}} b}}", "f")
    assert found == [] and [e.message.split(":")[0] for e in errors] == ["invalid regex"]
    _, errors = parse_expected("// expected-error-re {{a {{b}}", "f")
    assert errors[0].message == "found start of regex with no end '}}'"


def messages(problems: list[Diagnostic]) -> list[str]:
    return [f"{p.span.line if p.span else 0}: {p.message}" for p in problems]


def test_verify_reports_unexpected_then_unmet() -> None:
    source = "\n// expected-error {{undefined name}}\n\n\n// expected-error {{never produced}}\n"
    produced = [
        Diagnostic("error", "undefined name 'foo'", Span("k.tile", 2, 11)),
        Diagnostic("warning", "unused 'x'", Span("k.tile", 3, 7)),
    ]
    assert messages(verify_expected(source, "k.tile", produced)) == [
        "3: unexpected warning: unused 'x'",
        '5: expected error "never produced" was not produced',
    ]
    only = verify_expected(source, "k.tile", produced, only_expected=True)
    assert messages(only) == ['5: expected error "never produced" was not produced']


def test_verify_matches_notes_regexes_unknown_and_one_annotation_takes_many() -> None:
    source = (
        "// expected-note @+2 {{first 'x' here}}\n"
        "// expected-error-re @+2 {{dup '{{[a-z]}}'}}\n"
        "a\n"
        "b\n"
        "// expected-error @unknown {{lost}}\n"
    )
    first = note("first 'x' here", Span("f", 3, 1))
    produced = [
        Diagnostic("error", "dup 'x'", Span("f", 4, 1), [first]),
        Diagnostic("error", "dup 'y'", Span("f", 4, 1)),  # the same annotation matches again
        Diagnostic("error", "lost", None),
    ]
    assert verify_expected(source, "f", produced) == []
    wrong_file = [Diagnostic("error", "dup 'x'", Span("g", 4, 1))]
    assert "unexpected error: dup 'x'" in messages(verify_expected(source, "f", wrong_file))[0]


def test_verify_reports_a_near_miss_of_severity_at_the_annotation() -> None:
    source = "x\n// expected-warning @-1 {{dup}}\n"
    produced = [Diagnostic("error", "dup 'x'", Span("f", 1, 1))]
    assert messages(verify_expected(source, "f", produced)) == [
        "2: 'error' diagnostic emitted when expecting a 'warning'",
        '2: expected warning "dup" was not produced',
    ]


def test_a_note_without_location_takes_its_parents() -> None:
    source = "x // expected-error {{bad}}\n// expected-note @-1 {{why}}\n"
    produced = [Diagnostic("error", "bad", Span("f", 1, 1), [note("why")])]
    assert verify_expected(source, "f", produced) == []

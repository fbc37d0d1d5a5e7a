"""Fuzz tests of the frontend: any input compiles or fails with located diagnostics only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilec.context import make_context
from tilec.diagnostics import DiagnosticError
from tilec.frontend import check, irgen, parse_source
from tilec.frontend.lexer import decode_source

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.tile"))
TOKEN = re.compile(r"\s+|//[^\n]*|[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|\.\.|.", re.S)
GARBAGE = [
    "\x00",
    "\xff",
    "((((",
    "}",
    "{",
    "<",
    ">",
    ":",
    "o",
    "_",
    "99999999999999999999999",
    "let",
    "kernel",
    "for",
    "\n",
    ";",
    "..",
    "swizzle<3,3,3>",
    "-",
    "é",
    "\t",
    "1e9",
]
SETTINGS = settings(
    max_examples=150, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck)
)


@pytest.fixture(scope="module")
def ctx():  # noqa: ANN201 - an mlir.ir.Context
    return make_context()


def compile_or_diagnose(text: str, ctx: object, file: str = "fuzz.tile") -> None:
    """Compile `text` fully; a failure must be a DiagnosticError located inside the text."""
    try:
        module = irgen(check(parse_source(text, file), {}), ctx)
    except DiagnosticError as exc:
        assert exc.diagnostics, "a DiagnosticError must carry at least one diagnostic"
        lines = text.split("\n")
        for d in exc.diagnostics:
            assert d.span is not None, d.header()
            assert 1 <= d.span.line <= len(lines), d.header()
            assert 1 <= d.span.col <= len(lines[d.span.line - 1]) + 1, d.header()
        return
    with ctx:
        assert module.operation.verify()


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes(ctx: object, data: bytes) -> None:
    try:
        text = decode_source(data, "fuzz.tile")
    except DiagnosticError as exc:
        (diag,) = exc.diagnostics
        assert diag.span is not None and diag.span.line >= 1 and diag.span.col >= 1
        return
    compile_or_diagnose(text, ctx)


def mutate(tokens: list[str], ops: list[tuple[int, int, int]]) -> str:
    toks = list(tokens)
    for kind, i, j in ops:
        if not toks:
            break
        i, j = i % len(toks), j % len(toks)
        if kind == 0:
            del toks[i]
        elif kind == 1:
            toks.insert(i, toks[i])
        elif kind == 2:
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == 3:
            toks = toks[:i]
        else:
            toks.insert(i, GARBAGE[j % len(GARBAGE)])
    return "".join(toks)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_mutations(ctx: object, path: Path) -> None:
    tokens = TOKEN.findall(path.read_text())

    @SETTINGS
    @given(
        st.lists(
            st.tuples(st.integers(0, 4), st.integers(0, 10**6), st.integers(0, 10**6)),
            min_size=1,
            max_size=4,
        )
    )
    def run(ops: list[tuple[int, int, int]]) -> None:
        compile_or_diagnose(mutate(tokens, ops), ctx)

    run()


def test_examples_compile_unchanged(ctx: object) -> None:
    assert len(EXAMPLES) == 5
    for path in EXAMPLES:
        module = irgen(check(parse_source(path.read_text(), str(path)), {}), ctx)
        with ctx:
            assert module.operation.verify()

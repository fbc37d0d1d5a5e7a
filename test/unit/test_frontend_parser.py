"""Unit tests of the .tile lexer and parser: tokens, spans, precedence, recovery, robustness."""

import pytest

from tilec.diagnostics import DiagnosticEngine, DiagnosticError
from tilec.frontend import ast, dump_ast, parse_source, read_source
from tilec.frontend.lexer import lex
from tilec.frontend.parser import MAX_DEPTH


def kinds(text: str) -> list[str]:
    return [t.kind for t in lex(text, "f", DiagnosticEngine())]


def body(text: str) -> list[ast.Node]:
    src = f"kernel k(x: f32[N]) grid(1) threads(32) target(sm_80) {{\n{text}\n}}"
    return parse_source(src, "f.tile").kernels[0].body


def expr(text: str) -> ast.Node:
    (stmt,) = body(f"let v = {text}")
    return stmt.value


def errors(src: str) -> list[str]:
    with pytest.raises(DiagnosticError) as info:
        parse_source(src, "f.tile")
    return [d.header() for d in info.value.diagnostics]


def test_lexer_numbers_ranges_and_atom_parts() -> None:
    assert kinds("1..2") == ["int", "..", "int", "eof"]
    assert kinds("1.5 2e-3 x.16") == ["float", "float", "ident", ".", "int", "eof"]
    toks = lex("let x = 0.5e1", "f", DiagnosticEngine())
    assert [t.value for t in toks if t.kind == "float"] == [5.0]


def test_newlines_end_statements_only_after_an_expression() -> None:
    assert kinds("a +\nb\nc") == ["ident", "+", "ident", "newline", "ident", "eof"]
    assert kinds("f(a,\nb)\n") == ["ident", "(", "ident", ",", "ident", ")", "newline", "eof"]


def test_spans_are_one_based_and_cover_the_token() -> None:
    tok = lex("\n  foo", "f", DiagnosticEngine())[0]
    assert (tok.span.line, tok.span.col, tok.span.length) == (2, 3, 3)


def test_precedence_cast_compose_sum_product() -> None:
    e = expr("a + b * c : f16")
    assert isinstance(e, ast.Cast) and e.type.id == "f16"
    assert e.value.op == "+" and e.value.rhs.op == "*"
    comp = expr("swizzle<3,3,3> o (8, 64):(64, 1)")
    assert comp.op == "o" and comp.lhs.func == "swizzle" and len(comp.lhs.targs) == 3
    assert isinstance(comp.rhs, ast.LayoutLit)
    assert [i.value for i in comp.rhs.stride.items] == [64, 1]


def test_tuples_parens_and_layouts() -> None:
    assert isinstance(expr("(3)"), ast.IntLit)
    one = expr("(3,)")
    assert isinstance(one, ast.Tuple) and len(one.items) == 1
    nested = expr("((2, 4), 8):((1, 16), 2)")
    assert isinstance(nested.shape.items[0], ast.Tuple)
    assert isinstance(expr("8:1"), ast.LayoutLit)


def test_calls_with_atoms_keywords_slices_and_attributes() -> None:
    c = expr("copy<sm80.mma_16x8x16.f32.f16.f16.f32>(a[_, 0, k], b.x, mode = 1..2)")
    assert c.targs[0].text == "sm80.mma_16x8x16.f32.f16.f16.f32"
    idx, attr = c.args
    assert isinstance(idx.indices[0], ast.Underscore) and idx.indices[2].id == "k"
    assert attr.attr == "x" and c.kwargs[0].name == "mode"
    assert isinstance(c.kwargs[0].value, ast.RangeLit)
    assert expr("copy<cp_async.cg.16>(a, b)").targs[0].text == "cp_async.cg.16"


def test_statements() -> None:
    stmts = body(
        "let a = fragment<f32>((4, 4)) = 0; barrier()\n"
        "for k in pipeline(8, stages = 3) { copy(a, a) }\n"
        "warp_specialize {\n producer(warpgroup = 0) { barrier() }\n consumer() { } }"
    )
    let, call, loop, ws = stmts
    assert isinstance(let, ast.Let) and let.init.value == 0
    assert isinstance(call, ast.ExprStmt) and call.expr.func == "barrier"
    assert isinstance(loop, ast.For) and loop.iter.kwarg("stages").value == 3
    assert [r.kind for r in ws.roles] == ["producer", "consumer"]


def test_kernel_header() -> None:
    src = (
        "kernel g<BM: int = 128, T: type = f16, S = 2>(\n"
        "  A: T[M, K], B: T[(M, K):(lda, 1)], alpha: f32)\n"
        "  grid(cdiv(M, BM)) threads(128) target(sm_90a)\n{\n}\n"
    )
    k = parse_source(src, "g.tile").kernels[0]
    assert [(p.name, p.kind) for p in k.cparams] == [("BM", "int"), ("T", "type"), ("S", None)]
    a, b, alpha = k.args
    assert [d.id for d in a.dims] == ["M", "K"] and b.layout is not None and not alpha.is_tensor
    assert [c.name for c in k.clauses] == ["grid", "threads", "target"]
    assert (k.span.line, k.span.col) == (1, 8)


def test_recovery_reports_every_broken_statement() -> None:
    src = "kernel k() grid(1) threads(1) target(sm_80) {\n let = 1\n let a = (1,,)\n barrier()\n}"
    assert errors(src) == [
        "f.tile:2:6: error: expected a name after 'let', found '='",
        "f.tile:3:13: error: expected an expression, found ','",
    ]


def test_lexer_and_parser_errors_come_in_source_order() -> None:
    src = (
        "kernel k() grid(1) threads(1) target(sm_80) {\n let = 1\n let b = 123456789012345678901\n}"
    )
    assert errors(src) == [
        "f.tile:2:6: error: expected a name after 'let', found '='",
        "f.tile:3:10: error: integer literal 123456789012345678901 does not fit in 64 bits",
    ]


@pytest.mark.parametrize(
    ("src", "first"),
    [
        ("", None),
        ("kernel", "f.tile:1:7: error: expected a kernel name, found end of file"),
        ("\x00", "f.tile:1:1: error: invalid character U+0000"),
        ("}}}", "f.tile:1:1: error: expected 'kernel', found '}'"),
        ("kernel k( {", "f.tile:1:11: error: expected an argument name, found '{'"),
    ],
)
def test_degenerate_inputs(src: str, first: str | None) -> None:
    if first is None:
        assert parse_source(src, "f.tile").kernels == []
        return
    assert errors(src)[0] == first


@pytest.mark.parametrize("opener", ["(", "-", "f(", "a[", "copy<"])
def test_deep_nesting_is_a_located_error(opener: str) -> None:
    src = "kernel k() grid(1) threads(1) target(sm_80) { let x = " + opener * 5000 + "1 }"
    (first, *_) = errors(src)
    assert first.startswith("f.tile:1:") and f"nesting deeper than {MAX_DEPTH} levels" in first


def test_deep_blocks_are_a_located_error() -> None:
    src = "kernel k() grid(1) threads(1) target(sm_80) {" + "for i in range(1) {" * 500
    assert any(f"nesting deeper than {MAX_DEPTH} levels" in e for e in errors(src))


def test_non_utf8_file_is_a_located_error(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "bad.tile"
    path.write_bytes(b"kernel k()\n  let \xff = 1\n")
    with pytest.raises(DiagnosticError) as info:
        read_source(path)
    (diag,) = info.value.diagnostics
    assert (diag.span.line, diag.span.col) == (2, 7)
    assert "not valid UTF-8 (byte 0xff)" in diag.message


def test_dump_ast_is_an_s_expression_with_positions() -> None:
    module = parse_source("kernel k<W = 4>() grid(1) threads(1) target(sm_80) { }", "f.tile")
    text = dump_ast(module)
    assert text.startswith("(Module @1:1\n  :kernels\n    (Kernel @1:8 name=k\n")
    assert "(CParam @1:10 name=W\n" in text and "(IntLit @1:14 value=4))" in text


@pytest.mark.parametrize(
    "chain", [" + 1", ".x", " : f32", " o swizzle<1,1,1>", "[0]", " * 2"], ids=repr
)
def test_long_operator_chains_are_located_errors(chain: str) -> None:
    src = "kernel k() grid(1) threads(1) target(sm_80) {\n let v = block" + chain * 3000 + "\n}"
    # an index's brackets nest; every other chain is operators of a chain
    said = "nesting deeper than" if chain == "[0]" else "expression deeper than"
    assert any(f"{said} {MAX_DEPTH} levels" in e for e in errors(src))


def test_a_flat_sum_past_the_limit_is_a_chain_not_nesting() -> None:
    terms = " + ".join(["1"] * MAX_DEPTH)
    (first, *_) = errors(f"kernel k() grid(1) threads(1) target(sm_80) {{\n  let v = {terms}\n}}")
    assert first.startswith("f.tile:2:") and "nesting" not in first
    assert f"expression deeper than {MAX_DEPTH} levels, {MAX_DEPTH - 1} of them operators" in first
    assert "split long chains into lets" in first
    fewer = " + ".join(["1"] * (MAX_DEPTH - 1))
    parse_source(f"kernel k() grid(1) threads(1) target(sm_80) {{\n  let v = {fewer}\n}}", "f.tile")


def test_programs_at_the_nesting_limit_go_all_the_way_through() -> None:
    from tilec.context import make_context
    from tilec.frontend import check, irgen

    def program(n: int) -> str:
        mixed = "-(" * n + "1" + " + 1" * n + ")" * n
        return f"kernel k() grid(1) threads(1) target(sm_80) {{\n  let v = {mixed}\n}}\n"

    deepest = None
    for n in range(MAX_DEPTH, 0, -1):  # the deepest mix of parens, signs and sums accepted
        try:
            deepest = parse_source(program(n), "f.tile")
            break
        except DiagnosticError:
            continue
    assert deepest is not None and n > MAX_DEPTH // 8
    checked = check(deepest, {})  # no RecursionError in the checker, the dump or irgen
    assert "(Binary" in dump_ast(checked)
    irgen(checked, make_context())

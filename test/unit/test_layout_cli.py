"""`tilec layout EXPR`: values, tables, SVGs and caret diagnostics (main() called directly)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilec import layout as L
from tilec.layout_cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("expr", "printed"),
    [
        # B(a,b) = a + 4b; in (4,8) that is coordinate (a,b), so index 8a + b.
        ("composition((4,8):(8,1), (2,2):(1,4))", "(2,2):(8,1)"),
        ("logical_divide((8,8):(8,1), (2,4))", "((2,4),(4,2)):((8,16),(1,4))"),
        ("zipped_divide((8,8):(8,1), (2:1, 4:2))", "((2,4),(4,2)):((8,2),(16,1))"),
        ("blocked_product((2,2):(1,2), (3,4))", "((2,3),(2,4)):((1,4),(2,12))"),
        ("raked_product((2,2):(1,2), (3,4))", "((3,2),(4,2)):((4,1),(12,2))"),
        ("swizzle<3,3,3> o (8,64):(64,1)", "Sw<3,3,3> o 0 o (8,64):(64,1)"),
        (
            "tile_to_shape(swizzle<3,3,3> o (8,64):(64,1), (128,64))",
            "Sw<3,3,3> o 0 o (128,64):(64,1)",
        ),
        ("(4,8)", "(4,8):(1,4)"),
        ("8", "8:1"),
        ("size((4,8))", "32"),
        ("shape(((2,4),8):((1,16),2))", "((2,4),8)"),
        ("complement(4:2, 24)", "(2,3):(1,8)"),
        ("slice_and_offset((_,2), (4,8):(8,1))", "((4):(8),2)"),
        ("coalesce(get(((2,4),8):((1,16),2), 0))", "(2,4):(1,16)"),
        ("  composition ( 20:2 , (5,4):(4,1) )  ", "(5,4):(8,2)"),
    ],
)
def test_prints_value(capsys: pytest.CaptureFixture[str], expr: str, printed: str) -> None:
    code, out, err = run(capsys, expr)
    assert (code, out, err) == (0, printed + "\n", "")


def test_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "(2,3):(3,1)", "--table")
    assert code == 0
    assert out.splitlines() == [
        "(2,3):(3,1)",
        "      0   1   2",
        "    +---+---+---+",
        " 0  | 0 | 1 | 2 |",
        "    +---+---+---+",
        " 1  | 3 | 4 | 5 |",
        "    +---+---+---+",
    ]


def test_tv_table_and_svg(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    svg = tmp_path / "tv.svg"
    code, out, _ = run(capsys, "(4,2):(1,4)", "--tv", "(4,2)", "--table", "--svg", str(svg))
    assert code == 0
    assert " 0  | T0V0 | T0V1 |" in out.splitlines()
    assert " 3  | T3V0 | T3V1 |" in out.splitlines()
    picture = svg.read_text()
    assert picture.startswith("<svg") and picture.count("<rect") == 8
    assert ">T2V1</text>" in picture


@pytest.mark.parametrize(
    ("expr", "col", "message"),
    [
        (
            "composition((8,32):(32,1), (3,4):(1,3))",
            1,
            "composition of (8,32):(32,1) with (3,4):(1,3) is not defined: shape 4",
        ),
        ("size(complement((2,2):(1,1)))", 6, "starts inside the span 2"),
        ("compositon(8:1, 2)", 1, "unknown function 'compositon' (did you mean 'composition'?)"),
        ("composition((4,8):(8,1), (2,2):(1,4)", 37, "expected ',' or ')', found end of file"),
        ("coalesce(8:1, 1, 2)", 1, "coalesce takes (x, profile?), got 3 arguments"),
        (
            "crd2idx((9,9), (4,8):(8,1))",
            1,
            "crd2idx takes (crd, shape, stride), got 2 arguments; for a layout L write "
            "crd2idx(crd, shape(L), stride(L))",
        ),
        ("(2,4):(1,(2,3))", 1, "shape (2,4) and stride (1,(2,3)) are not congruent"),
        ("8:1 $", 5, "invalid character '$'"),
        ("((2:1),4):(1,2)", 1, "a layout's shape and stride must be integers or tuples of them"),
        ("swizzle<3,3,2> o 8:1", 1, "|S| must be at least B"),
        ("(?,8)", 2, "invalid character '?'"),
        ("", 1, "expected an expression, found end of file"),
        ("logical_divide(8:1 4)", 20, "expected ',' or ')', found '4'"),
        ("Sw<3,3,3> o 0 o (8,64):(64,1)", 3, "expected the end of the expression, found '<'"),
        ("1.5", 1, "tilec layout prints layouts, int-tuples and `_`, not a float"),
        ("  M", 3, "undefined name 'M'"),
    ],
)
def test_errors_point_at_the_column(
    capsys: pytest.CaptureFixture[str], expr: str, col: int, message: str
) -> None:
    code, out, err = run(capsys, expr)
    assert (code, out) == (1, "")
    first, line, caret = err.splitlines()[:3]
    assert first.startswith(f"<expr>:1:{col}: error: ")
    assert message in first
    assert line == expr
    assert re.fullmatch(" " * (col - 1) + r"\^~*", caret)
    assert "Traceback" not in err


def test_make_layout_means_what_it_means_in_a_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    """One parser for both: make_layout(shape, stride), never "join two layouts"."""
    from tilec.frontend import check, parse_source

    assert run(capsys, "make_layout((4,8), (8,1))") == (0, "(4,8):(8,1)\n", "")
    src = "kernel k() grid(1) threads(32) target(sm_80) {\n  let l = make_layout((4,8), (8,1))\n}\n"
    checked = check(parse_source(src, "k.tile"), {})
    let = checked.module.kernels[0].body[0]
    assert str(checked.values[id(let.value)].obj) == "(4,8):(8,1)"
    # the layout CLI's own parser is gone: the printed form Sw<...> o 0 o ... is not input
    import tilec.layout_cli as cli

    assert not hasattr(cli, "ExprParser") and not hasattr(cli, "FUNCTIONS")


def test_options_before_the_expression(capsys: pytest.CaptureFixture[str]) -> None:
    from tilec.cli import main as tilec_main

    assert tilec_main(["layout", "--table", "(2,3):(3,1)"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["(2,3):(3,1)", "      0   1   2"]
    for flag in ("--help", "-h"):
        assert tilec_main(["layout", flag]) == 0
        out = capsys.readouterr().out
        assert out.startswith("usage: tilec layout") and "make_layout(shape, stride)" in out


def test_tv_tile_errors_point_into_the_tile(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "(4,2):(1,4)", "--tv", "(4,x)", "--table")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "<tv>:1:4: error: expected an integer, '?' or '(', found 'x'",
        "(4,x)",
        "   ^",
    ]


def test_drawing_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "(2,3,4)", "--table")
    assert code == 1 and "rank 3, pictures need rank 1 or 2" in err
    code, _, err = run(capsys, "size((4,8))", "--table")
    assert code == 1 and "draw layouts, not 32" in err
    code, _, err = run(capsys, "(4,2):(1,8)", "--tv", "(4,2)", "--table")
    assert code == 1 and "outside the 4x2 tile" in err
    code, _, err = run(capsys, "8:1", "--svg", str(tmp_path / "missing" / "x.svg"))
    assert code == 1 and "cannot write" in err


def test_usage_errors_return_a_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["--help"]) == 0
    assert "composition" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# The renderer itself
# ---------------------------------------------------------------------------------------------


def test_rank1_table_is_one_column() -> None:
    assert L.layout_table(L.Layout(3, 2)).splitlines() == [
        "3:2",
        "      0",
        "    +---+",
        " 0  | 0 |",
        "    +---+",
        " 1  | 2 |",
        "    +---+",
        " 2  | 4 |",
        "    +---+",
    ]


def test_swizzled_table_shows_swizzled_indices() -> None:
    rows = L.layout_table(L.parse_layout("Sw<1,0,1> o (2,2):(2,1)")).splitlines()
    assert rows[3] == " 0  | 0 | 1 |"
    assert rows[5] == " 1  | 3 | 2 |"  # row 1: bit 1 set, so bit 0 flips


def test_svg_plain_layout() -> None:
    svg = L.to_svg(L.parse_layout("Sw<3,3,3> o (2,4):(4,1)"))
    assert '<text x="4" y="14">Sw&lt;3,3,3&gt; o 0 o (2,4):(4,1)</text>' in svg
    assert svg.count("<rect") == 8
    # cells are coloured by index mod 8: indices 0..7, eight colours
    fills = re.findall(r'fill="(#[0-9a-f]{6})"', svg)
    assert len(set(fills)) == 8


def test_svg_tv_colours_by_thread() -> None:
    svg = L.to_svg(L.Layout((2, 2), (1, 2)), tv_tile=(2, 2))
    cells = re.findall(r'fill="(#[0-9a-f]{6})"[^>]*/>\n<text[^>]*>(T\dV\d)<', svg)
    by_label = {label: fill for fill, label in cells}
    assert set(by_label) == {"T0V0", "T0V1", "T1V0", "T1V1"}
    assert by_label["T0V0"] == by_label["T0V1"] != by_label["T1V0"] == by_label["T1V1"]


def test_tv_table_leaves_unowned_cells_empty() -> None:
    rows = L.tv_table(L.Layout((2, 1), (2, 0)), (4, 1)).splitlines()
    assert rows[0] == "(2,1):(2,0) over (4,1)"
    assert [r for r in rows if "|" in r] == [
        " 0  | T0V0 |",
        " 1  |      |",
        " 2  | T1V0 |",
        " 3  |      |",
    ]


DOC = Path(__file__).resolve().parents[2] / "docs" / "layout-algebra.md"


def _doc_examples() -> list[tuple[str, str]]:
    """Each `$ tilec layout ...` line of the doc's code blocks, with the lines printed after it."""
    examples: list[tuple[str, list[str]]] = []
    in_block = False
    for line in DOC.read_text().splitlines():
        if line.startswith("```"):
            in_block = not in_block
            current = None
        elif in_block and line.startswith("$ tilec layout "):
            current = (line, [])
            examples.append(current)
        elif in_block and current is not None:
            current[1].append(line)
    return [(cmd, "\n".join(out)) for cmd, out in examples]


@pytest.mark.parametrize(("command", "expected"), _doc_examples())
def test_doc_examples_are_true(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)  # examples with --svg write their picture here
    code = main(shlex.split(command)[3:])  # drop "$ tilec layout"
    out, err = capsys.readouterr()
    assert (out + err).rstrip("\n") == expected
    assert code == (1 if "error:" in expected else 0)


def test_doc_has_examples() -> None:
    assert len(_doc_examples()) >= 30


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    st.sampled_from(sorted({shlex.split(cmd)[3] for cmd, _ in _doc_examples()})),
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 999), st.sampled_from("(),:_o<>?-1 "))),
)
def test_mutated_expressions_are_values_or_located_errors(
    expr: str, edits: list[tuple[int, int, str]]
) -> None:
    """Any EXPR prints a value (exit 0) or located errors (exit 1), never a traceback."""
    text = expr
    for kind, i, ch in edits:
        i %= len(text) + 1
        text = text[:i] + ch + text[i:] if kind == 0 else text[:i] + text[i + 1 :]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([text])
    assert code in (0, 1)
    if code == 1:
        assert re.match(r"<expr>:1:\d+: error: ", err.getvalue()), err.getvalue()
    else:
        assert out.getvalue() and not err.getvalue()

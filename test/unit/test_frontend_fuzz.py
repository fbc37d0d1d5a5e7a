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
    "var",
    "=",
    "==",
    "<=",
    "!=",
    "!",
    "where",
    "coord",
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
    assert len(EXAMPLES) == 32
    for path in EXAMPLES:
        module = irgen(check(parse_source(path.read_text(), str(path)), {}), ctx)
        with ctx:
            assert module.operation.verify()


HEADER = (
    "kernel k<BM: int = 64, T: type = f16>(A: T[M, K], B: f32[(K, N):(ldb, 1)], s: f32,\n"
    "    h: bf16, I: i32[M])\n"
    "  grid(cdiv(M, BM)) threads(128) target({})\n{{\n"
)
# Scalars, shapes, layouts and tensors of every kind, to be passed where they do not belong.
VALUES = [
    *("A", "B", "s", "M", "BM", "0", "-3", "1", "2.5", "_", "block.x", "(4, 8)"),
    *("(8, 4):(4, 1)", "((2, 2), 4)", "(BM, 32)", "(block.x, _)", "f32", "T", "-inf"),
    "local_tile(A, (BM, 32), (block.x, 0))",
    "local_tile(B, (32, 16), (0, _))",
    "load(local_tile(A, (BM, 32), (0, 0)))",
    "shared<f16>((64, 32))",
    "fragment<f32>((4, 8))",
    "tiled_mma<sm80.mma_16x8x16.f32.f16.f16.f32>(atoms = (2, 2, 1))",
    "persistent((cdiv(M, BM), 4))",
    "persistent((cdiv(M, BM), 4), split_tail = 1)",
    "h",
    "fragment<i32>((4, 8))",
    "load(local_tile(I, (32,), block.x))",
    "fragment<u8>((BM, 32))",
    "local_tile(A, (BM, 32), (block.x, _))[_, _, 1]",
    "A[_, 0]",
    "permute(A, (1, 0))",
    "t.m",
    *("grid.x", "grid.y", "grid.w", "grid"),
]
ATOMS_USED = [
    "cp_async.cg.16",
    "tma",
    "ldmatrix.x4",
    "sm80.mma_16x8x16.f32.f16.f16.f32",
    "sm90.wgmma_64xNx16.f32.f16.f16",
    "vec.16",
]


def call_text(draw: st.DrawFn, names: list[str]) -> str:
    """A call of a random builtin with its declared arity and random, often ill-typed,
    arguments: the checker must reject every misuse with a located error."""
    from tilec.frontend.builtins import BUILTINS

    leaves = [*names, *VALUES, *(f"{n}[_, 0]" for n in names)]
    func = draw(st.sampled_from(sorted(BUILTINS)))
    spec = BUILTINS[func]
    targs = ""
    if spec.targs[1]:
        pool = ATOMS_USED if spec.atom_targs else ["f16", "T", "3", "0", "-1", "BM", "(2, 2)"]
        count = draw(st.integers(spec.targs[0], spec.targs[1]))
        targs = "<" + ", ".join(draw(st.sampled_from(pool)) for _ in range(count)) + ">"
    count = draw(st.integers(spec.min_args, spec.max_args))
    args = [draw(st.sampled_from(leaves)) for _ in range(count)]
    kwargs = [
        f"{k} = {draw(st.sampled_from([*VALUES[:19], 'grouped(2)', '1..2']))}"
        for k in spec.kwargs
        if draw(st.booleans())
    ]
    return f"{func}{targs}({', '.join(args + kwargs)})"


@st.composite
def random_kernels(draw: st.DrawFn) -> str:
    lines, names = [], []
    for i in range(draw(st.integers(1, 6))):
        text = call_text(draw, names)
        shape = draw(st.integers(0, 5))
        if shape == 0:
            text = f"{text} {draw(st.sampled_from(['+', '*', 'o', '-']))} {call_text(draw, names)}"
        elif shape == 1 and names:  # aliases and loops over whatever a name holds
            text = draw(st.sampled_from(names))
            if draw(st.booleans()):
                lines.append(
                    f"  for t in {text} {{ let w = t\n    {call_text(draw, ['t', 'w'])} }}"
                )
                continue
        if draw(st.booleans()):
            lines.append(f"  let v{i} = {text}")
            names.append(f"v{i}")
        else:
            lines.append(f"  {text}")
    target = draw(st.sampled_from(["sm_80", "sm_90a"]))
    return HEADER.format(target) + "\n".join(lines) + "\n}\n"


@SETTINGS
@given(random_kernels())
def test_random_builtin_calls(ctx: object, src: str) -> None:
    compile_or_diagnose(src, ctx)


CONTRACT_PIECES = [
    *("depth", "registers", "spills", "has", "count", "bank_conflicts", "ctas_per_sm", "regs"),
    *("==", "<=", ">=", "<", ">", "=", "= =", "!=", "(", ")", ",", '"ldmatrix"', '"', '""'),
    *("S", "S - 1", "N", "x", "1", "-1", "99999999999999999999", "f32", "block.x", "\n", "{"),
]


@SETTINGS
@given(st.lists(st.sampled_from(CONTRACT_PIECES), max_size=12))
def test_contract_clause_fuzz(ctx: object, pieces: list[str]) -> None:
    """Any contract(...) text: a checked contract or located errors, never a traceback."""
    text = (
        "kernel k<S: int = 3>(x: f32[N]) grid(1) threads(32) target(sm_80)\n"
        f"  contract({' '.join(pieces)})\n{{\n  barrier()\n}}\n"
    )
    compile_or_diagnose(text, ctx)


SPECIALIZE_PIECES = [
    *("N", "M", "S", "x", "S - 1", "2 * S", "cdiv(N, S)", "0", "1", "-1", "99999999999999999999"),
    *("<=", "<", ">", "==", "=", "< =", ",", "(", ")", "f32", "block.x", "\n", "{"),
]


@SETTINGS
@given(st.lists(st.sampled_from(SPECIALIZE_PIECES), max_size=10))
def test_specialize_clause_fuzz(ctx: object, pieces: list[str]) -> None:
    """Any specialize(...) text: a specialised build or located errors, never a traceback."""
    text = (
        "kernel k<S: int = 64>(x: f32[N]) grid(1) threads(32) target(sm_80)\n"
        f"  specialize({' '.join(pieces)})\n{{\n"
        "  for k in range(cdiv(N, S) - 1) {\n"
        "    store(load(local_tile(x, S, k)) * 2.0, local_tile(x, S, k))\n  }\n}\n"
    )
    compile_or_diagnose(text, ctx)


VARIANT_PIECES = [
    *("K", "N", "S", "T", "x", "K % 16", "S - 1", "2 * S", "cdiv(N, S)", "0", "8", "-1", "f16"),
    *("99999999999999999999", "==", "!=", "<", "<=", "=", ",", "(", ")", "S = 2", "T = bf16"),
    *("S = K", "T = 2", "block.x", "\n", "{", "num_sms", ") variant(", "3 * num_sms"),
    *("sizeof(T)", "sizeof(", "sizeof(f16) == 2"),
]


@SETTINGS
@given(st.lists(st.sampled_from(VARIANT_PIECES), max_size=10))
def test_variant_clause_fuzz(ctx: object, pieces: list[str]) -> None:
    """Any variant(...) text: a kernel with a variant or located errors, never a traceback."""
    text = (
        "kernel k<S: int = 64, T: type = f32>(x: T[N], y: f16[M, K]) grid(1) threads(32)\n"
        f"  target(sm_80) variant({' '.join(pieces)})\n{{\n"
        "  store(load(local_tile(x, S, 0)) * 2.0, local_tile(x, S, 0))\n}\n"
    )
    compile_or_diagnose(text, ctx)


TUNE_PIECES = [
    *("S", "B", "T", "N", "x", "S = (64, 128)", "B = 1..3", "S = 64", "B = 3..1", "(", ")"),
    *("S * B <= 512", "cdiv(S, B) > 2", "min(S, B)", "S / 0 < 1", "64", "..", "=", "==", ","),
    *("<=", "%", "-1", "99999999999999999999", "1..99999", "T = f16", "\n", "{", "block.x"),
]


@SETTINGS
@given(st.lists(st.sampled_from(TUNE_PIECES), max_size=10))
def test_tune_clause_fuzz(ctx: object, pieces: list[str]) -> None:
    """Any tune(...) text: a kernel with a tuning space or located errors, never a traceback."""
    text = (
        "kernel k<S: int = 64, B: int = 2, T: type = f32>(x: T[N]) grid(1) threads(32)\n"
        f"  target(sm_80) tune({' '.join(pieces)})\n{{\n"
        "  store(load(local_tile(x, S, 0)) * 2.0, local_tile(x, S, 0))\n}\n"
    )
    compile_or_diagnose(text, ctx)


CLUSTER_PIECES = [
    *("2", "4", "3", "0", "16", "S", "N", "S * 2", "x", "-1", ",", "(", ")", "\n", "{"),
    *("cluster.rank", "cluster.x", "cluster", "block.x", "cluster_sum(", "cluster_max(", "t"),
    *("reduce_sum(t, mode = 0)", "1.5", "t < 0.0", "+", "*"),
]


@SETTINGS
@given(
    st.lists(st.sampled_from(CLUSTER_PIECES), max_size=6),
    st.lists(st.sampled_from(CLUSTER_PIECES), max_size=8),
)
def test_cluster_fuzz(ctx: object, clause: list[str], body: list[str]) -> None:
    """Any cluster(...) clause and any use of cluster.rank and cluster_sum/max in a body: a
    kernel or located errors, never a traceback."""
    text = (
        "kernel k<S: int = 2>(x: f32[N]) grid(N) threads(32)\n"
        f"  cluster({' '.join(clause)}) target(sm_90a)\n{{\n"
        "  let t = load(local_tile(x, 256, cluster.rank))\n"
        f"  let u = {' '.join(body) or 't'}\n"
        "  store(t, local_tile(x, 256, 0))\n}\n"
    )
    compile_or_diagnose(text, ctx)


BLOCKS_PIECES = [
    *("0", "1", "4", "16", "17", "B", "B * 8", "N", "x", "-1", "-", "99999999999999999999", ","),
    *("(", ")", "\n", "{", "cluster(2)", ") blocks_per_sm(", "num_sms", "2.5", "f32", "block.x"),
]


@SETTINGS
@given(st.lists(st.sampled_from(BLOCKS_PIECES), max_size=8))
def test_blocks_per_sm_fuzz(ctx: object, pieces: list[str]) -> None:
    """Any blocks_per_sm(...) clause (beside a cluster, twice, at any count): a kernel whose PTX
    bounds its blocks or located errors, never a traceback."""
    text = (
        "kernel k<B: int = 2>(x: f32[N]) grid(N) threads(128)\n"
        f"  blocks_per_sm({' '.join(pieces)}) target(sm_90a)\n{{\n"
        "  store(load(local_tile(x, 256, block.x)) * 2.0, local_tile(x, 256, block.x))\n}\n"
    )
    compile_or_diagnose(text, ctx)


INDEX_PIECES = [
    *("X[", "cu[", "F[", "sh[", "]", "..", " .. ", ",", "_", "q0", "n", "block.z", "0", "1"),
    *("-1", "63", "64", "99999999999999999999", "s", "(", ")", "+", "- 1", "X", "2.5", "\n"),
    *("cu[block.z + 1]", "load(", "local_tile(", "(BM, 64)", "(block.x, 0)", "{"),
]


@SETTINGS
@given(st.lists(st.sampled_from(INDEX_PIECES), max_size=12))
def test_index_fuzz(ctx: object, pieces: list[str]) -> None:
    """Any indexing: reads of an element (`cu[block.z]`), ranges (`X[q0 .. q1 - 1, h, _]`),
    integer scalars, mixed with anything: a kernel or located errors, never a traceback."""
    text = (
        "kernel k<BM: int = 64>(X: f16[(T, H, 64):(st, sh, 1)], cu: i32[B1], F: f32[N], n: i32,\n"
        "    s: f32) grid(cdiv(n, BM), H, B1 - 1) threads(128) target(sm_80)\n{\n"
        "  let q0 = cu[block.z]\n"
        "  let sh = shared<f16>((64, 64))\n"
        f"  let v = {' '.join(pieces) or 'q0'}\n"
        "  let x = load(local_tile(X[q0 .. q0 + n - 1, block.y, _], (BM, 64), (block.x, 0)))\n"
        "  store(x, local_tile(X[0 .. BM - 1, 0, _], (BM, 64), (0, 0)))\n}\n"
    )
    compile_or_diagnose(text, ctx)

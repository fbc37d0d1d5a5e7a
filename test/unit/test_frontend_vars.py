"""Register state in the language: `var`, assignment, loop-carried values, comparisons,
`where` and `coord`, from the checker's values and errors to the IR each stage holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tilec.diagnostics import DiagnosticError
from tilec.driver import CompileOptions, compile_file
from tilec.frontend import check, parse_source
from tilec.frontend.values import FloatV, IntV, TensorV

HEAD = (
    "kernel k<COLS: int = 256>(X: f16[R, N], Y: f16[R, N], s: f32) grid(R) threads(64) "
    "target(sm_80)"
)
ROW = "let x = load(local_tile(X, (1, COLS), (block.x, 0))) : f32\n"


def checked(body: str):  # noqa: ANN201
    src = HEAD + " {\n" + body + "\n}\n"
    return check(parse_source(src, "k.tile"), {})


def errors(body: str) -> list[str]:
    with pytest.raises(DiagnosticError) as info:
        checked(body)
    return [d.header() for d in info.value.diagnostics]


def compiled(tmp_path: Path, body: str, emit: str) -> str:
    path = tmp_path / "k.tile"
    path.write_text(HEAD + " {\n" + body + "\n}\n")
    return str(compile_file(str(path), CompileOptions(emit=emit)).value)


def test_a_var_is_a_runtime_value_of_its_kind() -> None:
    c = checked("var i = 0\nvar f = 1.5\nvar t = fragment<f32>((1, COLS)) = 0")
    lets = {s.name: s for s in c.module.kernels[0].body}
    binding = {n: c.values[id(s.value)] for n, s in lets.items()}
    assert isinstance(binding["t"], TensorV) and binding["t"].space == "register"
    assert isinstance(binding["i"], IntV) and isinstance(binding["f"], FloatV)


def test_only_a_loop_that_assigns_an_outer_var_carries_it() -> None:
    c = checked(
        "var a = fragment<f32>((1, COLS)) = 0\nvar b = 0.0\nvar u = 0\n"
        "for k in range(4) {\n  let x = load(local_tile(X, (1, COLS), (block.x, k))) : f32\n"
        "  var inner = x\n  inner = inner * 2.0\n  a = a + inner\n  b = b + 1.0\n  a = a * 0.5\n}"
    )
    loop = c.module.kernels[0].body[3]
    assert c.carried[id(loop)] == ["a", "b"]  # in order of first assignment; not `inner`, `u`


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("let a = 1.0\na = 2.0", "'a' is not a var"),
        ("b = 2.0", "undefined name 'b' (declare it first: var b = ...)"),
        (ROW + "var t = x\nt = 1.0", "a var keeps its kind (a register tensor)"),
        (ROW + "var t = x\nt = load(local_tile(X, (1, COLS), (block.x, 1)))", "convert with"),
        (ROW + "var t = x\nt = reduce_sum(x, mode = 1)", "a var keeps its shape"),
        ("var i = 0\ni = 1.5", "a var keeps its kind (an integer)"),
        ("var l = local_tile(X, (1, COLS), (block.x, 0))", "a var holds a register tensor"),
        (
            "var i = 0\nfor t in persistent((4, 4)) {\n  i = i + 1\n}",
            "a persistent(...) loop cannot carry 'i' yet",
        ),
    ],
)
def test_var_errors(body: str, message: str) -> None:
    assert any(message in e for e in errors(body)), errors(body)


def test_a_pipeline_loop_carries_too(tmp_path: Path) -> None:
    body = (
        "let sX = shared<f16>((1, 512))\nvar m = fragment<f32>((1, 1)) = -inf\n"
        "for k in pipeline(cdiv(N, 512), stages = 3) {\n"  # 64 threads: a 16-byte chunk each
        "  copy<cp_async.cg.16>(local_tile(X, (1, 512), (block.x, k)), sX)\n"
        "  m = max(m, reduce_max(load(sX) : f32, mode = 1))\n}\n"
        "store(load(local_tile(X, (1, COLS), (block.x, 0))) - m, "
        "local_tile(Y, (1, COLS), (block.x, 0)))"
    )
    lowered = compiled(tmp_path, body, "lowered")
    # tile-pipeline keeps the loop's iter_arg (each thread's max) and stages its copy 3 deep:
    # the prologue's two groups, then one a trip, each waited for down to one pending.
    loop = re.search(r"scf\.for .* iter_args\((.*)\) -> \((.*)\) \{", lowered)
    assert loop is not None and loop.group(2) == "f32", lowered
    assert lowered.count("nvvm.cp.async.commit.group") == 3
    assert "nvvm.cp.async.wait.group 1" in lowered


def test_comparisons_and_where() -> None:
    c = checked(ROW + "let p = coord(x, mode = 1) < N\nlet y = where(p, x, 0.0)\nlet z = 3 <= 2")
    body = {s.name: c.values[id(s.value)] for s in c.module.kernels[0].body}
    assert body["p"].elem == "bool" and body["y"].elem == "f32"
    assert isinstance(body["z"], IntV) and body["z"].value == 0


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (ROW + "let p = x < 1.0 < 2.0", "comparisons do not chain"),
        (ROW + "let p = s < 1.0", "a comparison of runtime scalars is not supported"),
        (ROW + "let y = where(x, x, 0.0)", "where takes a predicate tensor first"),
        (ROW + "let y = (x < 0.0) + x", "a predicate tensor only selects"),
        (ROW + "let c = coord(x, mode = 2)", "mode must be a static mode number below the rank 2"),
        ("let c = coord(X, mode = 1)", "coord takes a register tensor"),
        (
            ROW + "store(x < 0.0, local_tile(Y, (1, COLS), (block.x, 0)))",
            "storing a predicate tensor into f16: make numbers of it first",
        ),
    ],
)
def test_predicate_errors(body: str, message: str) -> None:
    assert any(message in e for e in errors(body)), errors(body)


LOOP = (
    "var m = fragment<f32>((1, 1)) = -inf\nvar e = fragment<f32>((1, COLS)) = 0\n"
    "for k in range(cdiv(N, COLS)) {\n"
    "  let x = load(local_tile(X, (1, COLS), (block.x, k)), other = -inf) : f32\n"
    "  m = max(m, reduce_max(x, mode = 1))\n"
    "  e = where(k * COLS + coord(x, mode = 1) < N, x, 0.0)\n"
    "}\nstore(e - m, local_tile(Y, (1, COLS), (block.x, 0)))"
)


def test_tile_stage_carries_register_tensors_as_iter_args(tmp_path: Path) -> None:
    ir = compiled(tmp_path, LOOP, "tile")
    loop = re.search(r"scf\.for .* iter_args\((.*)\) -> \((.*)\) \{", ir)
    assert loop is not None, ir
    assert loop.group(2).count('!tile.tensor<f32, "register"') == 2
    assert '"tile.compare"' in ir and '"tile.select"' in ir and '"tile.coord"' in ir


def test_gpu_stage_carries_each_threads_scalars(tmp_path: Path) -> None:
    # 256 columns in 16-byte chunks of 8 (the f16 loads): e is one chunk of 8 f32 per thread
    # (32 of the 64 threads hold one), m one scalar that every thread holds.
    ir = compiled(tmp_path, LOOP, "lowered")
    loop = re.search(r"scf\.for .* iter_args\((.*)\) -> \((.*)\) \{", ir)
    assert loop is not None, ir
    assert loop.group(2).split(", ").count("f32") == 9, loop.group(2)
    assert "tile." not in ir.split("gpu.module")[0] or '"tile.' not in ir
    assert "arith.cmpi slt" in ir and "arith.select" in ir
    assert "unrealized_conversion_cast" not in ir


def test_accumulator_rows_reduce_over_their_lanes_and_warps() -> None:
    # test/gpu/scores_softmax.tile: a row of the 64x64 accumulator lies in 4 lanes (xor 1, 2)
    # of one warp with WN = 1, and also across the 2 warps of a row with WN = 2 (shared memory).
    tile = Path(__file__).resolve().parents[2] / "test/gpu/scores_softmax.tile"
    for params, rows_per_thread, scratch in (({}, 2, 0), ({"WM": "2", "WN": "2"}, 4, 2)):
        opts = CompileOptions(emit="lowered", params=params)
        ir = str(compile_file(str(tile), opts).value)
        shuffles = re.findall(r"gpu\.shuffle +xor %\S+, %(\S+),", ir)
        # max and sum, each over rows_per_thread rows, each by two butterfly steps
        assert len(shuffles) == 2 * rows_per_thread * 2, len(shuffles)
        assert all(s.startswith(("c1_i32", "c2_i32")) for s in shuffles), shuffles  # lanes t
        assert ir.count("__reduce_scores") >= scratch
        assert "unrealized_conversion_cast" not in ir


def test_accumulator_reductions_broadcast_over_it_in_the_checker() -> None:
    src = (
        "kernel k(Q: f16[M, 64], K: f16[N, 64], P: f32[M, N]) grid(1) threads(128)\n"
        "  target(sm_80) {\n"
        "  let mma = tiled_mma<sm80.mma_16x8x16.f32.f16.f16.f32>(atoms = (4, 1, 1))\n"
        "  let s = fragment<f32>(partition_c(mma, (64, 64))) = 0\n"
        "  let r = reduce_max(s, mode = 1)\n  let e = exp(s - r)\n"
        "  let c = coord(s, mode = 0)\n}\n"
    )
    c = check(parse_source(src, "k.tile"), {})
    body = {s.name: c.values[id(s.value)] for s in c.module.kernels[0].body}
    assert body["r"].block_shape == (64, 1) and body["r"].mma is not None
    assert body["e"].block_shape == (64, 64) and body["c"].elem == "i32"


def test_gemm_a_in_registers_must_be_an_accumulator() -> None:
    src = (
        "kernel k(Q: f16[M, 64], V: f16[N, 64]) grid(1) threads(128) target(sm_80) {\n"
        "  let sV = shared<f16>((64, 64):(64, 1))\n"
        "  let mma = tiled_mma<sm80.mma_16x8x16.f32.f16.f16.f32>(atoms = (4, 1, 1))\n"
        "  let o = fragment<f32>(partition_c(mma, (64, 64))) = 0\n"
        "  let q = load(local_tile(Q, (64, 64), (0, 0)))\n"
        "  gemm(mma, q, permute(sV, (1, 0)), o)\n}\n"
    )
    with pytest.raises(DiagnosticError) as info:
        check(parse_source(src, "k.tile"), {})
    (d,) = info.value.diagnostics
    assert "gemm's a in registers must be an MMA accumulator" in d.header()
    assert d.span.line == 6 and d.span.col == 13


TILE = "local_tile(Y, (1, COLS), (block.x, 0))"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (ROW + f"let z = load({TILE}, mask = x)", "mask = takes a predicate tensor (a comparison)"),
        (ROW + f"store(x, {TILE}, mask = 1)", "3:57: error: expected a tensor, found int"),
        (
            ROW + f"let z = load({TILE}, like = x, mask = x < 0.0)",
            "load takes like = or mask =",
        ),
        (
            ROW + "let z = load(local_tile(Y, (1, 128), (block.x, 0)), mask = x < 0.0)",
            "a (1,256) mask for a (1,128) tile: the shapes must be equal",
        ),
    ],
)
def test_mask_errors(body: str, message: str) -> None:
    assert any(message in e for e in errors(body)), errors(body)


def test_masked_load_and_store_lower_to_selects_and_predicated_stores(tmp_path: Path) -> None:
    body = (
        ROW + "let c = coord(x, mode = 1)\n"
        f"let z = load({TILE}, mask = c >= 3, other = 7.0)\n"
        f"store(z, {TILE}, mask = c < N - 5)"
    )
    tile = compiled(tmp_path, body, "tile")
    assert re.search(r'"tile.load"\(%\w+, %\w+\) \{masked, other = 7', tile), tile
    assert re.search(r'"tile.store"\(%\w+, %\w+, %\w+\)', tile), tile
    lowered = compiled(tmp_path, body, "lowered")
    # 256 columns in chunks of 8 (16 bytes of f16) over 32 of the 64 threads: 8 values each,
    # kept or replaced by 7 (a select each), each stored under its mask; where a chunk's mask is
    # all true the store is still one vector.
    assert lowered.count("arith.select") >= 8
    assert lowered.count("llvm.store") > lowered.count("vector<8xf16>, !llvm.ptr<1>") > 0
    # The mask adds a scalar store per value to the fast version (each under its mask).
    unmasked = compiled(tmp_path, ROW + f"store(x, {TILE})", "lowered")
    scalar = re.compile(r"llvm.store %\w+, %\w+ : f16, !llvm.ptr<1>")
    assert len(scalar.findall(lowered)) >= len(scalar.findall(unmasked)) + 8


def test_a_running_value_per_row_is_carried_as_a_reduction() -> None:
    # examples/softmax.tile two rows a block: `fragment<f32>((ROWS, 1))` meets reduce_max's
    # result, so it is spread as that result: 2 x 1024 over 128 threads in 8-wide chunks puts
    # one chunk of each row in every thread, so m and l are a value per row, 4 scalars in all.
    src = str(Path(__file__).resolve().parents[2] / "examples/softmax.tile")
    options = CompileOptions(emit="lowered", params={"COLS": "1024", "ROWS": "2"})
    lowered = str(compile_file(src, options).value)
    loops = re.findall(r"scf\.for .* iter_args\(.*\) -> \((.*)\) \{", lowered)
    assert loops == ["f32, f32, f32, f32"], loops

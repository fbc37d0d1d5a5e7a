"""Unit tests of the .tile checker: values, runtime sizes, parameters, atoms, budgets."""

import re
from pathlib import Path

import pytest

from tilec import layout as L
from tilec.diagnostics import DiagnosticError, render
from tilec.frontend import check, dump_ast, parse_source
from tilec.frontend.values import TensorV

ROOT = Path(__file__).resolve().parents[2]
HEAD = "kernel k<BM: int = 64, T: type = f16>(A: T[M, K], s: f32) grid(1) threads(128) target({})"


def checked(body: str, target: str = "sm_80", params: dict | None = None):  # noqa: ANN201
    src = HEAD.format(target) + " {\n" + body + "\n}\n"
    return check(parse_source(src, "k.tile"), params or {}), src


def value_of(body: str, name: str, target: str = "sm_80"):  # noqa: ANN201
    c, _ = checked(body, target)
    lets = [s for s in c.module.kernels[0].body if getattr(s, "name", None) == name]
    return c.values[id(lets[-1].value)]


def errors(body: str, target: str = "sm_80", params: dict | None = None) -> list[str]:
    with pytest.raises(DiagnosticError) as info:
        checked(body, target, params)
    return [d.header() for d in info.value.diagnostics]


def test_local_tile_keeps_strides_and_adds_tile_modes() -> None:
    t = value_of("let g = local_tile(A, (BM, 32), (block.x, _))", "g")
    assert isinstance(t, TensorV) and t.space == "global" and t.elem == "f16"
    assert str(t.layout) == "(64,32,?):(?,1,32)"
    s = value_of("let g = local_tile(A, (BM, 32), (block.x, _))[_, _, 3]", "g")
    assert str(s.layout) == "(64,32):(?,1)"


def test_static_algebra_results() -> None:
    t = value_of(
        "let t = shared<f16>(tile_to_shape(swizzle<3,3,3> o (8, 64):(64, 1), (128, 64)))", "t"
    )
    assert isinstance(t.layout, L.ComposedLayout) and str(t.layout.inner) == "(128,64):(64,1)"
    assert t.alloc.elems == 128 * 64
    assert value_of("let n = cosize((4, 8):(8, 1))", "n").value == 32
    assert value_of("let n = size(local_tile(A, (BM, 32), (0, 0)))", "n").value == 64 * 32


def test_integer_folding_and_runtime_formulas() -> None:
    assert value_of("let n = cdiv(100, BM) * 2 - 1", "n").value == 3
    dyn = value_of("let n = cdiv(M, BM)", "n")
    assert dyn.value is None and dyn.text == "cdiv(M, 64)"


def test_partition_c_shapes_per_thread_fragments() -> None:
    body = (
        "let mma = tiled_mma<sm80.mma_16x8x16.f32.f16.f16.f32>(atoms = (2, 2, 1))\n"
        "let acc = fragment<f32>(partition_c(mma, (128, 128)))"
    )
    acc = value_of(body, "acc")
    assert str(acc.layout) == "(4,4,8):(1,4,16)" and acc.block_shape == (128, 128)
    body90 = (
        "let mma = tiled_mma<sm90.wgmma_64xNx16.f32.f16.f16>(warpgroups = (1, 1, 1), "
        "n = 64)\nlet acc = fragment<f32>(partition_c(mma, (128, 64)))"
    )
    assert str(value_of(body90, "acc", "sm_90a").layout) == "(32,2,1):(1,32,64)"


def test_elementwise_broadcasts_size_one_modes() -> None:
    body = (
        "let x = load(local_tile(A, (1, 128), (0, 0))) : f32\nlet y = x - reduce_max(x, mode = 1)"
    )
    y = value_of(body, "y")
    assert y.elem == "f32" and y.logical_shape == (1, 128)
    assert errors(
        "let x = load(local_tile(A, (2, 128), (0, 0)))\n"
        "let y = x + load(local_tile(A, (4, 128), (0, 0)))"
    ) == ["k.tile:3:9: error: shapes (2,128) and (4,128) do not match"]


def test_runtime_sizes_and_bindings() -> None:
    src = "kernel k(A: f16[M, K], B: f16[(K, N):(ldb, 1)]) grid(M) threads(32) target(sm_80) { }"
    (k,) = check(parse_source(src, "k.tile"), {}).kernels
    assert {n: s.bindings for n, s in k.sizes.items()} == {
        "M": ["A.shape[0]"],
        "K": ["A.shape[1]", "B.shape[0]"],
        "N": ["B.shape[1]"],
        "ldb": ["B.stride[0]"],
    }
    assert k.dynamic_entries["B"] == [["K"], ["N"], ["ldb"]]
    assert [g.text for g in k.grid] == ["M"]


def test_parameter_overrides() -> None:
    c, _ = checked("", params={"BM": "0x20", "T": "bf16"})
    assert c.kernels[0].params == {"BM": 32, "T": "bf16"}
    assert errors("", params={"BM": "f16"}) == [
        "k.tile:1:10: error: -D BM=f16: 'BM' is an int parameter and 'f16' is not a 64-bit integer"
    ]
    assert errors("", params={"BM": str(2**64)}) == [
        f"k.tile:1:10: error: -D BM={2**64}: 'BM' is an int parameter and '{2**64}' is not a "
        "64-bit integer"
    ]
    assert errors("", params={"X": "1"}) == [
        "error: -D X: no compile-time parameter named 'X' (parameters: BM, T)"
    ]


def test_a_type_parameter_defaults_to_an_earlier_one() -> None:
    def kernel(head: str, params: dict) -> object:
        src = f"kernel k<{head}>(A: T[M, K], C: O[M, N]) grid(1) threads(128) target(sm_80) {{}}\n"
        return check(parse_source(src, "k.tile"), params)

    head = "T: type = f16, O: type = T"
    assert kernel(head, {}).kernels[0].params == {"T": "f16", "O": "f16"}
    assert kernel(head, {"T": "bf16"}).kernels[0].params == {"T": "bf16", "O": "bf16"}
    assert kernel(head, {"O": "f32"}).kernels[0].params == {"T": "f16", "O": "f32"}
    assert kernel("T = bf16, O = T", {}).kernels[0].params == {"T": "bf16", "O": "bf16"}
    # a later parameter, an int parameter, an unknown name: located at the default
    for bad, name, col in (
        ("O: type = T, T: type = f16", "O", 20),
        ("N: int = 4, T: type = N, O: type = T", "T", 32),
        ("T: type = f16, O: type = U", "O", 35),
    ):
        with pytest.raises(DiagnosticError) as info:
            kernel(bad, {})
        assert info.value.diagnostics[0].header() == (
            f"k.tile:1:{col}: error: default of type parameter '{name}' must be a type or an "
            "earlier type parameter"
        )


def test_atom_target_error_points_at_the_atom() -> None:
    body = "let m = tiled_mma<sm90.wgmma_64xNx16.f32.f16.f16>(warpgroups = (1, 1, 1), n = 64)"
    with pytest.raises(DiagnosticError) as info:
        checked(body)
    (diag,) = info.value.diagnostics
    src = HEAD.format("sm_80") + " {\n" + body + "\n}\n"
    assert render(diag, src) == (
        "k.tile:2:19: error: atom 'sm90.wgmma_64xNx16.f32.f16.f16' needs target sm_90a, "
        "kernel targets sm_80\n" + body + "\n" + " " * 18 + "^" + "~" * 29
    )


def test_layout_error_is_located_at_the_call() -> None:
    (err,) = errors("let c = composition((8, 32):(32, 1), (3, 4):(1, 3))")
    assert re.match(
        r"k\.tile:2:9: error: composition of \(8,32\):\(32,1\) with \(3,4\):\(1,3\) "
        r"is not defined",
        err,
    )


def test_shared_memory_budget_suggests_stages() -> None:
    src = (ROOT / "examples" / "gemm_sm80.tile").read_text()
    ok = check(
        parse_source(src, "g.tile"), {"STAGES": "5", "BK": "64", "BN": "128", "WN": "2"}
    ).kernels[0]
    assert ok.smem_bytes == 5 * 2 * 128 * 64 * 2
    with pytest.raises(DiagnosticError) as info:
        check(parse_source(src, "g.tile"), {"STAGES": "6", "BK": "64", "BN": "128", "WN": "2"})
    (diag,) = info.value.diagnostics
    assert diag.message == (
        "shared memory needs 196608 bytes (sA 6 stages × 16384 + sB 6 stages "
        "× 16384), the target sm_80 allows 166912"
    )
    assert [n.message for n in diag.notes] == ["STAGES = 5 fits (163840 bytes)"]


def test_checking_continues_after_errors() -> None:
    assert errors("let a = nope\nlet b = also_nope(1)\nlet c = A[0]") == [
        "k.tile:2:9: error: undefined name 'nope'",
        "k.tile:3:9: error: unknown function 'also_nope'",
        "k.tile:4:9: error: slice has 1 coordinates, the tensor has rank 2",
    ]


def test_examples_check_with_expected_budgets() -> None:
    budgets = {
        "vadd": 0,
        "transpose": 64 * 64 * 4,
        "softmax": 0,
        "gemm_sm80": 3 * (128 + 256) * 64 * 2,
        "gemm_sm90": 4 * (128 + 256) * 64 * 2,
    }
    for stem, smem in budgets.items():
        path = ROOT / "examples" / f"{stem}.tile"
        (k,) = check(parse_source(path.read_text(), str(path)), {}).kernels
        assert k.smem_bytes == smem, stem


@pytest.mark.parametrize("src", ["", "// only a comment\n", "\n\n"])
def test_a_file_without_kernels_is_an_error_at_its_start(src: str) -> None:
    with pytest.raises(DiagnosticError) as info:
        check(parse_source(src, "e.tile"), {})
    assert [d.header() for d in info.value.diagnostics] == [
        "e.tile:1:1: error: no kernel in this file: it needs at least one 'kernel NAME(...) {...}'"
    ]


def test_checked_ast_dump_shows_values() -> None:
    c, _ = checked("let g = local_tile(A, (BM, 32), (block.x, _))")
    text = dump_ast(c)
    assert "(Call @2:9 func=local_tile : global tensor f16[(64,32,?):(?,1,32)]" in text
    assert "(Name @2:24 id=BM : int 64)" in text and "(Attr @2:34 attr=x : int block.x" in text


def test_frontend_irgen_stays_the_function() -> None:
    import tilec.frontend
    import tilec.frontend.irgen  # noqa: F401 - importing the submodule must not shadow it

    assert callable(tilec.frontend.irgen) and tilec.frontend.irgen.__name__ == "irgen"


def test_warnings_of_a_successful_check_are_kept() -> None:
    c, _ = checked("load(local_tile(A, (BM, 32), (0, 0)))")
    assert [d.header() for d in c.warnings] == [
        "k.tile:2:1: warning: result of this expression (register tensor f16[(64,32):(1,64)]) "
        "is unused"
    ]


def test_algebra_results_beyond_64_bits_are_errors() -> None:
    assert errors(f"let n = size(({2**62}, 4))") == [
        "k.tile:2:9: error: size here gives an integer beyond 64 bits"
    ]


def test_negative_strides_in_tensor_arguments_are_located_errors() -> None:
    src = "kernel k(A: f16[(M, K):(K, -1)]) grid(1) threads(128) target(sm_80) {\n}\n"
    with pytest.raises(DiagnosticError) as info:
        check(parse_source(src, "k.tile"), {})
    assert [d.header() for d in info.value.diagnostics] == [
        "k.tile:1:24: error: a tensor argument's layout cannot have a negative stride: "
        "(?,?):(?,-1) has stride -1, and kernels address a tensor upwards from its base pointer"
    ]


def test_shared_buffers_span_their_offsets() -> None:
    """A buffer holds its layout's offsets from the lowest to the highest (measure.extent), the
    size the lowering allocates: (64,64):(-64,1) runs -4032 .. 63, 4096 elements, not 64."""
    assert value_of("let b = shared<f16>((64, 64):(-64, 1))", "b").alloc.elems == 4096
    assert value_of("let b = shared<f16>((64, 64):(1, 64))", "b").alloc.elems == 4096
    assert value_of("let b = shared<f16>((4, 64):(0, 1))", "b").alloc.elems == 64
    assert value_of("let b = shared<f16>((4, 64):(0, -1))", "b").alloc.elems == 64
    sw = "let b = shared<f16>(swizzle<3,3,3> o (64, 64):(-64, 1))"
    assert value_of(sw, "b").alloc.elems == 4160  # the floor rounds down to the period, -4096
    # the budget counts the true span: 256 x 256 f32 is 256 KiB however its strides point
    assert errors("let b = shared<f32>((256, 256):(-256, 1))") == [
        "k.tile:1:8: error: shared memory needs 262144 bytes (b 262144), "
        "the target sm_80 allows 166912"
    ]

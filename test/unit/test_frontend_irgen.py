"""Unit tests of irgen: verified modules, source locations, kernel attributes, docs examples."""

import re
from pathlib import Path

import pytest
from mlir import ir

from tilec import layout as L
from tilec.context import make_context
from tilec.dialects.tile.types import MmaType, TensorType
from tilec.frontend import check, irgen, parse_source
from tilec.runtime.formula import evaluate

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ctx():  # noqa: ANN201 - an mlir.ir.Context
    return make_context()


def generate(ctx, src: str, file: str = "k.tile", params: dict | None = None) -> str:  # noqa: ANN001
    module = irgen(check(parse_source(src, file), params or {}), ctx)
    with ctx:
        assert module.operation.verify()
        return str(module)


def located_ops(ctx, src: str, file: str) -> list[tuple[str, str]]:  # noqa: ANN001
    """(op name, location) of every op, in order."""
    module = irgen(check(parse_source(src, file), {}), ctx)
    found = []

    def walk(op) -> None:  # noqa: ANN001
        found.append((op.name, str(op.location)))
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    with ctx:
        walk(module.operation)
    return found


def test_every_op_is_located_in_the_source(ctx) -> None:  # noqa: ANN001
    src = (ROOT / "examples" / "gemm_sm80.tile").read_text()
    lines = src.split("\n")
    ops = located_ops(ctx, src, "gemm_sm80.tile")
    # Every op is located in the file, and that line:col holds the construct it came from.
    found = [re.fullmatch(r'loc\("gemm_sm80.tile":(\d+):(\d+)\)', loc) for _, loc in ops]
    assert all(found), [op for op, m in zip(ops, found, strict=True) if not m]
    found = [(name, m.group(1), m.group(2)) for (name, _), m in zip(ops, found, strict=True)]
    assert len(found) > 20
    starts = {
        "tile.copy": "copy",
        "tile.gemm": "gemm",
        "tile.store": "store",
        "tile.alloc_shared": "shared",
        "tile.tiled_mma": "tiled_mma",
        "tile.local_tile": "local_tile",
        "tile.fragment": "fragment",
    }
    for op, line, col in found:
        if op in starts:
            assert lines[int(line) - 1][int(col) - 1 :].startswith(starts[op]), (op, line, col)


def test_kernel_signature_and_attributes(ctx) -> None:  # noqa: ANN001
    src = (ROOT / "examples" / "gemm_sm90.tile").read_text()
    asm = generate(ctx, src, "g.tile", {"BN": "128"})
    assert (
        "func.func @gemm90(%arg0: !llvm.ptr, %arg1: !llvm.ptr, %arg2: !llvm.ptr, "
        "%arg3: index, %arg4: index, %arg5: index, %arg6: index, %arg7: index)"
    ) in asm  # M, K, lda, N, ldb (lda, ldb: leading dimensions bound from the tensors)
    assert 'tile.grid = ["num_sms"]' in asm and 'tile.target = "sm_90a"' in asm
    assert (
        "tile.params = {BK = 64 : i64, BM = 128 : i64, BN = 128 : i64, CM = 1 : i64, "
        "G = 16 : i64, MA = 0 : i64, MB = 0 : i64, MX = 0 : i64, MY = 0 : i64, O = bf16, "
        "PP = 0 : i64, SK = 1 : i64, STAGES = 4 : i64, SW = 0 : i64, T = bf16}" in asm
    )
    assert '!tile.mma<"sm90.wgmma_64x128x16.f32.bf16.bf16", "(2,1,1)">' in asm
    assert asm.count("tile.stages = 4 : i64") == 2


def test_grid_formula_divides_as_the_kernel_does(ctx) -> None:  # noqa: ANN001
    """A runtime grid with `/` (floor division in the language) is a formula the runtime
    evaluates to the same floor quotient (it refuses Python's true division `/`)."""
    src = (
        "kernel k(X: f32[R, N]) grid(min(R, num_sms / 2) * 2, (R + 3) / 4) threads(128)\n"
        "  target(sm_80) {\n"
        "  let t = local_tile(X, (1, 128), (block.x, 0))\n"
        "  store(load(t), t)\n"
        "}\n"
    )
    asm = generate(ctx, src)
    grid = re.search(r"tile.grid = \[(.*?)\]", asm).group(1)
    formulas = [f.strip().strip('"') for f in grid.split('", "')]
    for r, sms in ((1, 132), (7, 132), (1000, 132), (1000, 133)):
        got = [evaluate(f, {"R": r, "num_sms": sms}) for f in formulas]
        assert got == [min(r, sms // 2) * 2, (r + 3) // 4], (formulas, r, sms)


def language_doc_kernels() -> list[str]:
    doc = (ROOT / "docs" / "language.md").read_text()
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", doc, re.S | re.M)
    return [text for lang, text in blocks if lang == "tile"]


def test_language_doc_kernels_compile(ctx) -> None:  # noqa: ANN001
    kernels = language_doc_kernels()
    assert kernels, "docs/language.md shows at least one complete kernel"
    for src in kernels:
        assert "func.func" in generate(ctx, src, "doc.tile")


def test_statement_location_is_its_first_token(ctx) -> None:  # noqa: ANN001
    src = "kernel k(x: f32[N]) grid(1) threads(32) target(sm_80) {\n  barrier()\n}\n"
    assert ("tile.barrier", 'loc("k.tile":2:3)') in located_ops(ctx, src, "k.tile")


def test_tile_types_round_trip_through_mlir(ctx) -> None:  # noqa: ANN001
    src = (ROOT / "examples" / "gemm_sm80.tile").read_text()
    module = irgen(check(parse_source(src, "g.tile"), {}), ctx)
    with ctx:
        types = [
            op.result.type
            for op in module.body.operations[0].regions[0].blocks[0]
            if op.operation.name == "tile.alloc_shared"
        ]
        shared = TensorType.of(types[0])
        assert shared == TensorType("f16", "shared", "Sw<3,3,3> o 0 o (128,64):(64,1)")
        assert shared.get() == types[0]
        value = shared.layout_value()
        assert isinstance(value, L.ComposedLayout) and value.inner == L.Layout((128, 64), (64, 1))
        assert TensorType.of(ir.IndexType.get()) is None
        mma = MmaType("sm80.mma_16x8x16.f32.f16.f16.f32", "(2,2,1)")
        assert MmaType.of(mma.get()) == mma


def test_partition_by_a_nested_thread_shape(ctx) -> None:  # noqa: ANN001
    src = (
        "kernel k(A: f16[M, K]) grid(1) threads(16) target(sm_80) {\n"
        "  let p = partition(local_tile(A, (8, 8), (0, 0)), ((2, 2), 4))\n}\n"
    )
    asm = generate(ctx, src)
    assert '{threads = "((2,2),4):((1,2),4)"}' in asm
    assert '-> !tile.tensor<f16, "global", "(2,2):(?,4)">' in asm


def test_language_doc_names_every_builtin_and_atom() -> None:
    from tilec.frontend.atoms import ATOMS
    from tilec.frontend.builtins import BUILTINS

    doc = (ROOT / "docs" / "language.md").read_text()
    assert [name for name in sorted(BUILTINS) if f"`{name}" not in doc] == []
    assert [atom for atom in ATOMS if f"`{atom}`" not in doc] == []

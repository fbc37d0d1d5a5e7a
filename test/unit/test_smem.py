"""The shared-memory planner (tilec.smem): its rules against the algebra evaluated index by
index, and the frontend's budget against what the lowering allocates, kernel by kernel."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from mlir import ir

from tilec import binding, smem
from tilec.dialects.layout import algebra as A
from tilec.driver import CompileOptions, compile_file

ROOT = Path(__file__).resolve().parents[2]
ARRAY = re.compile(r"^!llvm\.array<(\d+) x (\w+)>$")
BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "i32": 4, "f64": 8}


def random_swizzled(rng: random.Random) -> A.ComposedLayout | A.Layout:
    """A compact row-major tile of 8..128 rows and 8..64 columns, maybe swizzled."""
    rows, cols = rng.choice([8, 16, 24, 64, 128]), rng.choice([8, 16, 32, 40, 64])
    layout = A.Layout((rows, cols), (cols, 1))
    if rng.random() < 0.2:
        return layout
    bits, base = rng.randint(1, 3), rng.randint(0, 3)
    return A.composition(A.Swizzle(bits, base, rng.randint(bits, 4)), layout)


@pytest.mark.parametrize("seed", range(40))
def test_stage_stride_passes_through_the_swizzle(seed: int) -> None:
    rng = random.Random(seed)
    layout = random_swizzled(rng)
    elem = rng.choice([1, 2, 4])
    floor, elems = smem.extent(layout)
    offsets = [layout(i) for i in range(A.size(layout))]
    assert floor == 0 and elems == max(offsets) + 1  # the algebra's extent, by enumeration
    stride = smem.stage_stride(layout, elem)
    assert stride >= elems and (stride * elem) % smem.STAGE_ALIGN == 0
    sw = layout.outer if isinstance(layout, A.ComposedLayout) else None
    stages = rng.randint(2, 5)
    staged = A.Layout((*layout_shape(layout), stages), (*layout_stride(layout), stride))
    if sw is not None:
        staged = A.ComposedLayout(sw, 0, staged)
    every = [staged(i) for i in range(A.size(staged))]
    # stage k's offsets are stage 0's plus k * stride (so the lowering adds it to a pointer)
    per = len(offsets)
    for k in range(stages):
        assert every[k * per : (k + 1) * per] == [o + k * stride for o in offsets]
    assert smem.staged_elems(elems, stride, stages) == max(every) + 1 == smem.extent(staged)[1]


def layout_shape(x: A.Layout | A.ComposedLayout) -> tuple:
    return (x.inner if isinstance(x, A.ComposedLayout) else x).shape


def layout_stride(x: A.Layout | A.ComposedLayout) -> tuple:
    return (x.inner if isinstance(x, A.ComposedLayout) else x).stride


def test_reuse_aliases_only_what_fits() -> None:
    a = smem.Buffer("a", 4096)
    fits = smem.Buffer("c", 4096, reuse="a")
    too_big = smem.Buffer("d", 4097, reuse="a")
    assert smem.kernel_bytes([a, fits]) == 4096
    assert smem.kernel_bytes([a, too_big]) == 4096 + 4097
    assert smem.kernel_bytes([a, fits, too_big]) == 4096 + 4097


def test_dynamic_offsets_align_every_buffer() -> None:
    offsets, end = smem.dynamic_offsets([("a", 100), ("b", 128), ("c", 1)])
    assert offsets == {"a": 0, "b": 128, "c": 256} and end == 384


def test_bad_layouts_are_errors() -> None:
    with pytest.raises(A.LayoutError, match="must be static"):
        smem.extent(A.Layout((4, A.DYN), (1, 4)))


# The frontend's figure (`tile.smem_bytes`, what its budget check compares with the target's
# limit) must be what the lowering allocates: the bytes of the kernel's addrspace-3 globals at
# the `lowered` stage (pipelined buffers with their stages, buffers that reuse another's memory
# inside it). SM90 warp-specialised kernels plan a TMA ring instead and are not listed.
KERNELS = [
    ("examples/gemm_sm80.tile", {}),
    ("examples/gemm_sm80.tile", {"MA": "1", "MB": "1"}),
    ("examples/gemm_sm80.tile", {"BK": "16", "STAGES": "4"}),
    ("examples/gemm_sm80_bias_relu.tile", {}),
    ("examples/gemm_sm80_batched.tile", {}),
    ("examples/gemm_sm80_splitk.tile", {}),
    ("examples/attention_step.tile", {}),
    ("examples/layernorm_persistent.tile", {}),
    ("examples/softmax_persistent.tile", {}),
    ("examples/transpose.tile", {}),
    ("test/gpu/negative_stride.tile", {}),
    ("test/gpu/pipelined_rows.tile", {}),
    ("test/gpu/scores_softmax.tile", {}),
]


# A pipelined buffer whose span (20 x 64 halves = 1280) is not a multiple of its swizzle's
# period (512): its stages sit 1536 apart, the last needs only 1280 (4352 in all); the f32
# buffer that reuses it (5120 bytes) fits in those 8704 bytes.
ODD = """
kernel odd(A: f16[M, K], C: f32[20, 64]) grid(1) threads(32) target(sm_80) {
  let sA = shared<f16>(swizzle<3,3,3> o (20, 64):(64, 1))
  var acc = fragment<f32>((20, 64)) = 0
  for k in pipeline(cdiv(K, 64), stages = 3) {
    copy<cp_async.cg.16>(local_tile(A, (20, 64), (0, k)), sA)
    acc = acc + load(sA)
  }
  let sC = shared<f32>((20, 64):(64, 1), reuse = sA)
  barrier()                                 // sA may still be read (tile-hazards)
  store(acc, sC)
  barrier()
  copy(sC, C)
}
"""


def test_odd_stages_budget(tmp_path: Path) -> None:
    source = tmp_path / "odd.tile"
    source.write_text(ODD)
    assert smem_budgets(str(source), {}) == {"odd": 8704}
    test_frontend_budget_is_what_the_lowering_allocates(str(source), {})


def smem_budgets(path: str, params: dict) -> dict[str, int]:
    tile = compile_file(path, CompileOptions(emit="tile", params=params)).value
    return {
        ir.StringAttr(op.attributes["sym_name"]).value: ir.IntegerAttr(
            op.attributes["tile.smem_bytes"]
        ).value
        for op in tile.body.operations
        if op.operation.name == "func.func"
    }


@pytest.mark.parametrize(("path", "params"), KERNELS)
def test_frontend_budget_is_what_the_lowering_allocates(path: str, params: dict) -> None:
    budget = smem_budgets(str(ROOT / path), params)
    lowered = compile_file(str(ROOT / path), CompileOptions(emit="lowered", params=params)).value
    allocated = dict.fromkeys(budget, 0)
    globals_: list[ir.Operation] = []
    binding.walk(
        lowered.operation, lambda o: globals_.append(o) if o.name == "llvm.mlir.global" else None
    )
    for g in globals_:
        symbol = ir.StringAttr(g.attributes["sym_name"]).value
        m = ARRAY.match(str(ir.TypeAttr(g.attributes["global_type"]).value))
        kernel = next((k for k in budget if symbol.startswith(f"__smem_{k}_")), None)
        if m is None or kernel is None:
            continue
        allocated[kernel] += int(m.group(1)) * BYTES[m.group(2)]
    assert budget and any(v > 0 for v in allocated.values()), allocated
    assert allocated == budget

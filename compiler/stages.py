"""Every stage: the ordered ladder `ast → tile → lowered → gpu → nvvm → llvm → ptx → cubin`.

A stage's key is its `--emit` value and names its dump file (`k.tile.mlir`, `k.ll`, ...). The
MLIR-to-MLIR stages are pipeline strings of registered pass names, so
`tilec compile --emit=nvvm k.gpu.mlir` equals `tile-opt -p "<nvvm pipeline>" k.gpu.mlir`, and
"how far to lower" is one comparison of positions in `STAGES`.
"""

from __future__ import annotations

from dataclasses import dataclass

# The upstream part of the ladder, one string per stage, each valid inside
# `builtin.module(...)`. They live here, not in tilec.backend, so that reading the ladder (the
# CLI's help, `tilec run` on a machine without MLIR) imports no MLIR.
#
# nvvm: the gpu.module in the NVVM + LLVM dialects. convert-vector-to-scf unrolls what
# convert-gpu-to-nvvm cannot lower in one step (transfer ops); expand-strided-metadata must run
# before it so `memref.view` of dynamic shared memory lowers.
NVVM_PIPELINE = (
    "gpu.module(convert-nvgpu-to-nvvm, expand-strided-metadata, lower-affine, "
    "convert-vector-to-scf, convert-scf-to-cf, "
    "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1})"
)
# llvm: only LLVM dialect ops remain. convert-nvvm-to-llvm turns NVVM ops without a direct LLVM
# translation (e.g. nvvm.mbarrier.try_wait.parity) into inline PTX.
LLVM_PIPELINE = "gpu.module(convert-nvvm-to-llvm, canonicalize, cse), reconcile-unrealized-casts"


@dataclass(frozen=True)
class Stage:
    key: str  # the --emit value
    ext: str  # the dump-file extension (after the kernel's stem)
    kind: str  # "text" (AST dump), "mlir", "llvm-ir", "ptx" or "binary"
    pipeline: str | None = None  # MLIR-to-MLIR stages: the pipeline that produces this stage
    summary: str = ""


# `lowered` expands tile ops in place (views to pointer math, block-level copies partitioned
# over threads); `gpu` outlines each kernel into a gpu.module for the upstream conversions.
# Their canonicalize seeds its worklist bottom-up: the same IR as the default top-down order on
# every example and GPU-tier bundle (bench/compile_time.py), and on the GEMM's unrolled
# kernel 0.09 s instead of 0.92 s (measured on 2026-12-01, docs/performance.md).
CANONICALIZE = "canonicalize{top-down=false}"
GPU_PIPELINE = f"outline-tile-kernels,{CANONICALIZE},cse"
# The `gpu` stage of a bundle's wide variant: 64-bit `index`, for tensors of 2^31 elements or
# more (the runtime launches it only then; docs/runtime.md).
WIDE_GPU_PIPELINE = f"outline-tile-kernels{{index-bitwidth=64}},{CANONICALIZE},cse"
# The `lowered` stage of a kernel's specialised variant (`specialize(N <= B)`): its sizes
# clamped to their ranges, and what the ranges decide folded, before the tile ops lower.
SPECIALIZE_PREFIX = f"tile-specialize,func.func(int-range-optimizations),{CANONICALIZE},cse,"
STAGES: tuple[Stage, ...] = (
    Stage("ast", "ast", "text", summary="the parsed and checked program, as a tree"),
    Stage("tile", "tile.mlir", "mlir", summary="tile + layout dialects, straight from the source"),
    Stage(
        "lowered",
        "lowered.mlir",
        "mlir",
        "layout-fold,tile-verify,tile-pipeline,tile-hazards,tile-schedule,tile-ring,"
        "tile-async-waits,tile-carry-accumulators,tile-distribute,tile-relayout,convert-tile-views,"
        "convert-tile-sync,convert-tile-reductions,convert-tile-elementwise,convert-tile-memory,"
        "convert-tile-copies,convert-tile-mma,convert-tile-to-gpu,tile-warp-roles,"
        "convert-layout-to-arith,pipeline-steady-state,"
        f"{CANONICALIZE},cse",
        "layouts folded, tile ops lowered",
    ),
    Stage(
        "gpu",
        "gpu.mlir",
        "mlir",
        GPU_PIPELINE,
        "gpu/nvgpu/scf/memref/arith kernels",
    ),
    Stage("nvvm", "nvvm.mlir", "mlir", NVVM_PIPELINE, "the gpu.module in NVVM + LLVM dialects"),
    Stage("llvm", "ll", "llvm-ir", LLVM_PIPELINE, "LLVM IR of the gpu.module"),
    Stage("ptx", "ptx", "ptx", summary="PTX text from llvmlite's NVPTX backend"),
    Stage("cubin", "cubin", "binary", summary="machine code from ptxas (needs ptxas)"),
)
STAGE_KEYS: tuple[str, ...] = tuple(s.key for s in STAGES)
BY_KEY: dict[str, Stage] = {s.key: s for s in STAGES}


def position(key: str) -> int:
    return STAGE_KEYS.index(key)


def stage_of_input(path: str) -> str | None:
    """The stage a file's name says it holds: `k.tile` → ast's input, `k.gpu.mlir` → gpu."""
    if path.endswith(".tile"):
        return "source"
    for stage in STAGES:
        if stage.kind == "mlir" and path.endswith("." + stage.ext):
            return stage.key
    if path.endswith(".ll"):
        return "llvm"
    if path.endswith(".ptx"):
        return "ptx"
    return None

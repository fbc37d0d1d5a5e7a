"""Every stage: the ordered ladder `ast → tile → lowered → gpu → nvvm → llvm → ptx → cubin`.

A stage's key is its `--emit` value and names its dump file (`k.tile.mlir`, `k.ll`, ...). The
MLIR-to-MLIR stages are pipeline strings of registered pass names, so
`tilec compile --emit=nvvm k.gpu.mlir` equals `tile-opt -p "<nvvm pipeline>" k.gpu.mlir`, and
"how far to lower" is one comparison of positions in `STAGES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.backend import LLVM_PIPELINE, NVVM_PIPELINE


@dataclass(frozen=True)
class Stage:
    key: str  # the --emit value
    ext: str  # the dump-file extension (after the kernel's stem)
    kind: str  # "text" (AST dump), "mlir", "llvm-ir", "ptx" or "binary"
    pipeline: str | None = None  # MLIR-to-MLIR stages: the pipeline that produces this stage
    summary: str = ""


# `lowered` expands tile ops in place (views to pointer math, block-level copies partitioned
# over threads); `gpu` outlines each kernel into a gpu.module for the upstream conversions.
STAGES: tuple[Stage, ...] = (
    Stage("ast", "ast", "text", summary="the parsed and checked program, as a tree"),
    Stage("tile", "tile.mlir", "mlir", summary="tile + layout dialects, straight from the source"),
    Stage(
        "lowered",
        "lowered.mlir",
        "mlir",
        "tile-verify,convert-tile-to-gpu,canonicalize,cse",
        "layouts folded, tile ops lowered",
    ),
    Stage(
        "gpu",
        "gpu.mlir",
        "mlir",
        "outline-tile-kernels,canonicalize,cse",
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

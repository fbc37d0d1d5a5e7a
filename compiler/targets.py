"""Every stage: the one table of target facts (limits, PTX features, what each target has).

The frontend checks kernels against it, tile-pipeline and outline-tile-kernels plan shared
memory by it, the backend picks PTX features from it and the runtime launches by it. Pure
Python, no MLIR: the CLI's help and the GPU machine's runtime read it too.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    ptx_features: str  # llvmlite's NVPTX feature string (the PTX ISA version)
    smem_optin: int  # shared memory per block a kernel may opt into (bytes)
    setmaxnreg: bool = False  # per-warp-group register budgets (`registers = N` of a role)


# PTX ISA 8.0 is what MLIR's NVVM target declares too; driver 580 and ptxas 13 accept it. The
# shared-memory figures are cudaDevAttrMaxSharedMemoryPerBlockOptin.
TABLE: dict[str, Target] = {
    t.name: t
    for t in (
        Target("sm_80", "+ptx80", 163 * 1024),
        Target("sm_86", "+ptx80", 99 * 1024),
        Target("sm_89", "+ptx80", 99 * 1024),
        Target("sm_90", "+ptx80", 227 * 1024),
        Target("sm_90a", "+ptx80", 227 * 1024, setmaxnreg=True),
    )
}
# What `target(...)` and `--arch` accept: the targets the compiler is tested for.
TARGETS: tuple[str, ...] = ("sm_80", "sm_90a")
# Static shared memory every target allows, and the dynamic shared memory a launch gets
# without opting in: a kernel that needs more takes it as dynamic shared memory.
STATIC_SMEM = 48 * 1024
MAX_THREADS = 1024  # threads per block


def smem_optin(target: str | None) -> int:
    """The opt-in shared-memory limit of `target`; STATIC_SMEM for one not in the table."""
    known = TABLE.get(target or "")
    return known.smem_optin if known is not None else STATIC_SMEM


def has_setmaxnreg(target: str | None) -> bool:
    known = TABLE.get(target or "")
    return known is not None and known.setmaxnreg

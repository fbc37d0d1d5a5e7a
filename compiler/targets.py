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
    # Per SM, for occupancy (CUDA C Programming Guide, "Technical Specifications per Compute
    # Capability"): resident threads and blocks, and the most shared memory of the carveout.
    max_threads_sm: int = 2048
    max_blocks_sm: int = 32
    smem_sm: int = 164 * 1024
    setmaxnreg: bool = False  # per-warp-group register budgets (`registers = N` of a role)
    clusters: bool = False  # thread-block clusters and distributed shared memory (cluster(S))


# PTX ISA 8.0 is what MLIR's NVVM target declares too; driver 580 and ptxas 13 accept it. The
# shared-memory figures are cudaDevAttrMaxSharedMemoryPerBlockOptin.
TABLE: dict[str, Target] = {
    t.name: t
    for t in (
        Target("sm_80", "+ptx80", 163 * 1024),
        Target("sm_86", "+ptx80", 99 * 1024, 1536, 16, 100 * 1024),
        Target("sm_89", "+ptx80", 99 * 1024, 1536, 24, 100 * 1024),
        Target("sm_90", "+ptx80", 227 * 1024, smem_sm=228 * 1024, clusters=True),
        Target("sm_90a", "+ptx80", 227 * 1024, setmaxnreg=True, smem_sm=228 * 1024, clusters=True),
    )
}
# What `target(...)` and `--arch` accept: the targets the compiler is tested for.
TARGETS: tuple[str, ...] = ("sm_80", "sm_90a")
# Static shared memory every target allows, and the dynamic shared memory a launch gets
# without opting in: a kernel that needs more takes it as dynamic shared memory.
STATIC_SMEM = 48 * 1024
MAX_THREADS = 1024  # threads per block
MAX_THREADS_SM = 2048  # resident threads an SM holds (SM 8.0 and 9.0; 8.6 and 8.9 hold 1536)


def smem_optin(target: str | None) -> int:
    """The opt-in shared-memory limit of `target`; STATIC_SMEM for one not in the table."""
    known = TABLE.get(target or "")
    return known.smem_optin if known is not None else STATIC_SMEM


# Blocks a cluster may hold on every SM90 part without opting in (cudaFuncAttribute
# NonPortableClusterSizeAllowed would allow 16 on some).
MAX_CLUSTER = 8


def has_clusters(target: str | None) -> bool:
    known = TABLE.get(target or "")
    return known is not None and known.clusters


def has_setmaxnreg(target: str | None) -> bool:
    known = TABLE.get(target or "")
    return known is not None and known.setmaxnreg


# The 32-bit registers one thread may have on every SM80/SM90 part (PTX's .maxnreg bound; the
# register file is REGISTERS_SM below). One register tensor of more bytes a thread than these
# hold cannot live in registers at all: the frontend and tile-distribute refuse it before any
# lowering spells its values out one by one.
REGISTERS_THREAD = 255
REGISTER_BYTES = 4
REGISTER_TILE_BYTES = REGISTERS_THREAD * REGISTER_BYTES


def register_refusal(tile: str, elem_bytes: int, values: int, threads: int) -> str | None:
    """Why one register tensor (`tile`, e.g. `f32[(128,64)]`) holding `values` values of
    `elem_bytes` each in every one of `threads` threads cannot live in registers; None if it
    can. The frontend's and tile-distribute's one rule and words."""
    nbytes = values * elem_bytes
    if nbytes <= REGISTER_TILE_BYTES:
        return None
    return (
        f"register tile {tile} holds {values} values a thread over {threads} threads "
        f"({nbytes} bytes); a thread has at most {REGISTERS_THREAD} 32-bit registers "
        f"({REGISTER_TILE_BYTES} bytes): use a smaller tile or more threads"
    )


# CUDA's grid limits: blocks along x, y and z of one launch.
MAX_GRID = (2**31 - 1, 65535, 65535)


# Occupancy constants every SM80/SM90 part shares: a 64K-register file split over 4 warp
# schedulers, registers allocated per warp in units of 256, shared memory in units of 128 bytes
# with 1 KiB per block reserved by the system.
REGISTERS_SM = 65536
REGISTER_UNIT = 256
SCHEDULERS = 4
SMEM_UNIT = 128
SMEM_RESERVED = 1024


def ctas_per_sm(target: str, threads: int, registers: int, smem: int) -> int:
    """Resident blocks per SM (CUDA's occupancy calculator): the least of the thread, block,
    register and shared-memory limits; 0 when one block does not fit at all."""
    t = TABLE[target]
    warps = -(-threads // 32)
    limits = [t.max_threads_sm // 32 // warps, t.max_blocks_sm]
    if registers > 0:
        per_warp = -(-registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
        warps_sm = REGISTERS_SM // SCHEDULERS // per_warp * SCHEDULERS
        limits.append(warps_sm // warps)
    per_block = -(-(smem + SMEM_RESERVED) // SMEM_UNIT) * SMEM_UNIT
    limits.append(t.smem_sm // per_block)
    return min(limits)

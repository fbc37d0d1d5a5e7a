"""How tilec.ops.gemm lays out its operands for the GEMM families (pure Python: shapes,
strides and pointer alignment only, no torch, no data).

The kernels take C = A @ B^T with A of M x K and B of N x K (tilec/ops/gemm_specs.py), each
operand K-major, strides exactly (K, 1), or MN-major, strides exactly (1, M) / (1, N), its base
16-byte aligned, and TMA wants whole 16-byte chunks along the contiguous dimension's stride:

    K-major   [r0: k0 k1 k2 ... K-1][r1: k0 ...]      row stride K: K % 8 == 0 (f16/bf16)
    MN-major  [k0: r0 r1 ... R-1][k1: r0 ...]         column stride R: R % 8 == 0

`plan` says what becomes of each operand (`keep` it, copy it `contiguous` (K-major), copy it
`transposed` (MN-major), or `pad` it: a K-major copy zero-filled up to K' = round_up(K, 8)
columns, zeros in K adding nothing to the product), so that exactly one layout rule of the
family holds:

1. K % 8 == 0: an operand already in a layout TMA takes is kept; any other (another leading
   dimension, a misaligned base, an MN-major one whose M or N is not a multiple of 8, no unit
   stride at all) is copied K-major. With up to 192 rows (M <= 192, decode) an MN-major A is
   copied K-major too where B is K-major: A is small, and the K-major pair runs the swapped
   few-row builds (gemm_sm90.tile's variants).
2. K % 8 != 0 and M % 8 == N % 8 == 0: rows of K cannot be TMA rows, but columns of M and N
   can: each operand is kept MN-major, or copied transposed.
3. Otherwise: both operands padded to K' (each copied once; the padded columns are zeros).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

FEW_ROWS = 192  # the largest M the swapped builds of gemm_sm90.tile take (its variant clauses)
CHUNK = 8  # f16/bf16 elements in TMA's 16 bytes


@dataclass(frozen=True)
class Operand:
    """One operand as the kernels read it: R x K (R is M for A, N for B)."""

    rows: int
    k: int
    strides: tuple[int, int]  # in elements, along R and along K
    aligned: bool = True  # base address a multiple of 16 bytes


@dataclass(frozen=True)
class Plan:
    a: str  # keep | contiguous | transposed | pad
    b: str
    k: int  # the K the kernel runs: K, or K' when padded
    layout: str  # kk | mk | km | mm (A's majorness, then B's)


def k_major(op: Operand) -> bool:
    """Whether the operand is exactly K-major. A dim of extent 1 takes any stride in a build's
    manifest, but TMA still wants it a whole number of 16-byte chunks."""
    sr, sk = op.strides
    return (sk == 1 or op.k == 1) and (sr == op.k or op.rows == 1 and sr % CHUNK == 0)


def mn_major(op: Operand) -> bool:
    """Whether the operand is exactly MN-major (extent-1 dims as in `k_major`)."""
    sr, sk = op.strides
    return (sr == 1 or op.rows == 1) and (sk == op.rows or op.k == 1 and sk % CHUNK == 0)


def takes(op: Operand, major: str) -> bool:
    """Whether TMA takes the operand as it is, read `major` ("k" or "mn")."""
    if not op.aligned:
        return False
    if major == "k":
        return k_major(op) and op.k % CHUNK == 0
    return mn_major(op) and op.rows % CHUNK == 0


@functools.lru_cache(maxsize=1024)
def plan(a: Operand, b: Operand) -> Plan:
    """What becomes of A (M x K) and B (N x K): see the module's docstring. Cached per pair of
    operands (their extents, strides and alignment): every tilec.ops.gemm call asks (~3 us)."""
    if a.k != b.k:
        raise ValueError(f"A has K = {a.k}, B has K = {b.k}")
    k = a.k
    if k % CHUNK == 0:
        how = []
        for op in (a, b):
            how.append("keep" if takes(op, "k") or takes(op, "mn") else "contiguous")
        majors = [_major(op, h) for op, h in zip((a, b), how, strict=True)]
        if a.rows <= FEW_ROWS and majors == ["m", "k"]:  # small A: the swapped few-row builds
            how[0], majors[0] = "contiguous", "k"
        return Plan(how[0], how[1], k, "".join(majors))
    if a.rows % CHUNK == 0 and b.rows % CHUNK == 0:
        ha = "keep" if takes(a, "mn") else "transposed"
        hb = "keep" if takes(b, "mn") else "transposed"
        return Plan(ha, hb, k, "mm")
    return Plan("pad", "pad", -(-k // CHUNK) * CHUNK, "kk")


def _major(op: Operand, how: str) -> str:
    """The layout letter of an operand after `how` (K % 8 == 0): k, or m for MN-major."""
    if how == "keep" and not takes(op, "k"):
        return "m"
    return "k"


def canonical_strides(op_rows: int, k: int, major: str) -> tuple[int, int]:
    """The exact strides of a layout (what the kernels' manifests and the rules expect)."""
    return (k, 1) if major == "k" else (1, op_rows)

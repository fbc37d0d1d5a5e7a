"""How tilec.ops.gemm lays out its operands for the GEMM families (pure Python: shapes,
strides and pointer alignment only, no torch, no data).

The kernels take C = A @ B^T with A of M x K and B of N x K (tilec/ops/gemm_specs.py), each
operand K-major (K contiguous) or MN-major (M or N contiguous), its base 16-byte aligned, and
TMA wants the other stride, the leading dimension, a whole number of 16-byte chunks:

    K-major   [r0: k0 k1 ... K-1 (pad)][r1: k0 ...]   strides (ld, 1), ld % 8 == 0 (f16/bf16)
    MN-major  [k0: r0 r1 ... R-1 (pad)][k1: r0 ...]   strides (1, ld)

The SM90 `gemm` builds take any such ld (`lead=True`: the kernel reads K from the operands'
extents, TMA zero-fills each box past them); the others (the fused epilogues, SM 8.x) take
exactly ld = K, or R (`lead=False`). `plan` says what becomes of each operand: `keep` it,
`view` it (the same memory, the stride of a dim of extent 1 set to a multiple of 8: one
row of an odd K), copy it `contiguous` (K-major, its rows round_up(K, 8) elements apart: the
gap never read), copy it `transposed` (MN-major), or `pad` it (a K-major copy zero-filled up to
K' = round_up(K, 8) columns: zeros in K add nothing to the product, and the kernel runs K').

With a leading dimension (`lead=True`):

1. An operand TMA takes as it is (K-major or MN-major; K-major preferred) is kept, or viewed;
   any other (an odd leading dimension, a misaligned base, no unit stride) is copied K-major.
   The weight B is copied only where TMA cannot read it (an nn.Linear weight W of odd K: W's
   rows are not 16-byte chunks); a row-major B (MN-major B^T) is kept at any K.
2. Up to 192 rows (M <= 192, decode) an MN-major A is copied K-major (A is small): the
   swapped few-row builds (gemm_sm90.tile's variants) take a K-major A.

Exact layouts (`lead=False`):

1. K % 8 == 0: an operand already in an exact layout TMA takes is kept; any other is copied
   K-major. Up to 192 rows an MN-major A beside a K-major B is copied K-major too.
2. K % 8 != 0 and M % 8 == N % 8 == 0: each operand is kept MN-major, or copied transposed.
3. Otherwise: both operands padded to K'.

Few rows where TMA cannot read B (`row_plan`): up to SKINNY_ROWS (32) rows of A and a B whose K is
contiguous but whose rows TMA cannot read as they lie (an nn.Linear weight of odd K: rows 2-byte
aligned) read B where it lies (its base 16-byte aligned, its rows anywhere): up to
ROW_KERNEL_ROWS rows examples/gemv.tile (the `gemv` family: M rows of A in registers, M
multiply-adds per element of B), past that examples/gemm_skinny.tile (the `gemm_skinny`
family: B's tiles into shared memory, mma.sync, K split `splits` ways over the grid into f32
partial sums that the `colsum` family adds up). B is kept, A kept where its K is contiguous and
its base aligned (else copied K-major). Copying B instead (the `pad_rows` family, ~3 TB/s, then
the SM90 GEMM) moves 2 N K bytes and reads N K more before the product reads it again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

FEW_ROWS = 192  # the largest M the swapped builds of gemm_sm90.tile take (its variant clauses)
ROW_KERNEL_ROWS = 4  # the largest M examples/gemv.tile's builds take (gemm_specs.GEMV_ROWS)
SKINNY_ROWS = 32  # the largest M examples/gemm_skinny.tile's builds take (gemm_specs.SKINNY)
# gemm_skinny's blocks per SM that `splits` aims at, and its most splits: on the H100 (5-16 rows
# x 4097, BN 64) 8 splits beat 4 at N = 4096 (64 column tiles: 30 us against 48) and at N = 11008
# (172 tiles: 87-92 us against 103-116); more than 8 not yet timed
SKINNY_WAVES = 10
SKINNY_SPLITS = 8
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
    a: str  # keep | view | contiguous | transposed | pad
    b: str
    k: int  # the K the kernel runs: K, or K' when padded
    layout: str  # kk | mk | km | mm (A's majorness, then B's)
    kernel: str = "gemm"  # gemm: the GEMM families; gemv, gemm_skinny: few rows


def round_up(n: int) -> int:
    return -(-n // CHUNK) * CHUNK


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
    """Whether TMA and an exact build take the operand as it is, read `major` ("k" or "mn")."""
    if not op.aligned:
        return False
    if major == "k":
        return k_major(op) and op.k % CHUNK == 0
    return mn_major(op) and op.rows % CHUNK == 0


def viewed(op: Operand, major: str) -> tuple[int, int] | None:
    """The strides under which a build with a leading dimension reads the operand `major` ("k"
    or "mn") with no copy: its own, or with the stride of a dim of extent 1 (which no element
    uses) made what the build's rule names (a unit stride; a leading dimension that is a
    multiple of 8 and spans the other dim). None where TMA cannot read it so."""
    if not op.aligned:
        return None
    inner, outer = (1, 0) if major == "k" else (0, 1)
    extents = (op.rows, op.k)
    strides = list(op.strides)
    if strides[inner] != 1:
        if extents[inner] != 1:
            return None
        strides[inner] = 1
    ld = strides[outer]
    if ld % CHUNK or ld < extents[inner]:
        if extents[outer] != 1:
            return None
        strides[outer] = round_up(extents[inner])
    return strides[0], strides[1]


def strides_after(op: Operand, how: str, major: str, k: int) -> tuple[int, int]:
    """The operand's strides once laid out as `how` says (`major` its layout letter, k or m;
    `k` the kernel's K): what tilec.ops.gemm.laid_out makes."""
    if how == "keep":
        return op.strides
    if how == "view":
        view = viewed(op, "k" if major == "k" else "mn")
        assert view is not None, (op, how)
        return view
    if how == "transposed":
        return 1, op.rows
    return round_up(k), 1  # contiguous (rows round_up(K, 8) apart), pad (K' = round_up(K))


@functools.lru_cache(maxsize=1024)
def row_plan(a: Operand, b: Operand) -> Plan | None:
    """The few-row kernels' plan (the module's docstring): `gemv` up to ROW_KERNEL_ROWS rows,
    `gemm_skinny` up to SKINNY_ROWS; None where the GEMM families take the product: more rows, B's
    K not contiguous or its base not 16-byte aligned (every build's pointers are: its rows may
    start anywhere), or B read by TMA as it lies (K-major or MN-major, with a leading
    dimension). A is copied where its K is not contiguous or its base not aligned."""
    if a.k != b.k:
        raise ValueError(f"A has K = {a.k}, B has K = {b.k}")
    if a.rows > SKINNY_ROWS or b.strides[1] != 1 or not b.aligned:
        return None
    if viewed(b, "k") is not None or viewed(b, "mn") is not None:
        return None
    keep = a.strides[1] == 1 and a.aligned
    kernel = "gemv" if a.rows <= ROW_KERNEL_ROWS else "gemm_skinny"
    return Plan("keep" if keep else "contiguous", "keep", a.k, "kk", kernel)


def splits(n: int, k: int, bn: int, bk: int, sms: int) -> int:
    """How many ways gemm_skinny splits K (W's first extent S; block.y takes k-tiles block.y,
    block.y + S, ...): enough that its cdiv(N, BN) x S blocks make SKINNY_WAVES per SM, at most
    SKINNY_SPLITS and the k-tiles (a split with none writes zeros, which colsum adds for
    nothing)."""
    tiles, k_tiles = -(-n // bn), -(-k // bk)
    return max(1, min(k_tiles, SKINNY_SPLITS, round(SKINNY_WAVES * sms / tiles)))


@functools.lru_cache(maxsize=1024)
def plan(a: Operand, b: Operand, lead: bool = True) -> Plan:
    """What becomes of A (M x K) and B (N x K): see the module's docstring; `lead`: the builds
    take a leading dimension (the SM90 `gemm` family). Cached per pair of operands (their
    extents, strides and alignment): every tilec.ops.gemm call asks (~3 us)."""
    if a.k != b.k:
        raise ValueError(f"A has K = {a.k}, B has K = {b.k}")
    if lead:
        return _with_lead(a, b)
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
    return Plan("pad", "pad", round_up(k), "kk")


def _with_lead(a: Operand, b: Operand) -> Plan:
    """The plan for builds with a leading dimension: each operand kept (or viewed) where TMA
    reads it, K-major where it reads both, else copied K-major; a few-row A K-major."""
    how, majors = [], []
    for op in (a, b):
        for major, letter in (("k", "k"), ("mn", "m")):
            view = viewed(op, major)
            if view is not None:
                how.append("keep" if view == op.strides else "view")
                majors.append(letter)
                break
        else:
            how.append("contiguous")
            majors.append("k")
    if a.rows <= FEW_ROWS and majors[0] == "m":  # small A: the swapped few-row builds
        how[0], majors[0] = "contiguous", "k"
    return Plan(how[0], how[1], a.k, "".join(majors))


def _major(op: Operand, how: str) -> str:
    """The layout letter of an operand after `how` (K % 8 == 0): k, or m for MN-major."""
    if how == "keep" and not takes(op, "k"):
        return "m"
    return "k"

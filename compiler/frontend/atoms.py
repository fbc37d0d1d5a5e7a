"""Frontend (check stage): the atoms each target has (its limits: tilec.targets)."""

from __future__ import annotations

from dataclasses import dataclass

from tilec.targets import TARGETS

BOTH = frozenset(TARGETS)
SM90 = frozenset({"sm_90a"})


@dataclass(frozen=True)
class Atom:
    name: str
    kind: str  # copy | mma
    targets: frozenset[str]
    # mma only: (M, N, K) of one atom (N = 0: chosen by `n =`), A/B and C element types, and
    # the threads that execute one atom together (a warp, or a warp group).
    mnk: tuple[int, int, int] = (0, 0, 0)
    ab: str = ""
    c: str = ""
    threads: int = 32


def _mma(
    name: str, mnk: tuple[int, int, int], ab: str, c: str, targets: frozenset[str], threads: int
) -> Atom:
    return Atom(name, "mma", targets, mnk, ab, c, threads)


ATOMS: dict[str, Atom] = {
    a.name: a
    for a in (
        _mma("sm80.mma_16x8x16.f32.f16.f16.f32", (16, 8, 16), "f16", "f32", BOTH, 32),
        _mma("sm80.mma_16x8x16.f32.bf16.bf16.f32", (16, 8, 16), "bf16", "f32", BOTH, 32),
        _mma("sm80.mma_16x8x16.f16.f16.f16.f16", (16, 8, 16), "f16", "f16", BOTH, 32),
        _mma("sm80.mma_16x8x8.f32.tf32.tf32.f32", (16, 8, 8), "tf32", "f32", BOTH, 32),
        _mma("sm90.wgmma_64xNx16.f32.f16.f16", (64, 0, 16), "f16", "f32", SM90, 128),
        _mma("sm90.wgmma_64xNx16.f32.bf16.bf16", (64, 0, 16), "bf16", "f32", SM90, 128),
        _mma("sm90.wgmma_64xNx16.f16.f16.f16", (64, 0, 16), "f16", "f16", SM90, 128),
        Atom("cp_async.cg.16", "copy", BOTH),
        Atom("cp_async.ca.16", "copy", BOTH),
        Atom("cp_async.ca.8", "copy", BOTH),
        Atom("cp_async.ca.4", "copy", BOTH),
        Atom("ldmatrix.x1", "copy", BOTH),
        Atom("ldmatrix.x2", "copy", BOTH),
        Atom("ldmatrix.x4", "copy", BOTH),
        Atom("ldmatrix.x4.trans", "copy", BOTH),
        Atom("stmatrix.x4", "copy", SM90),
        Atom("tma", "copy", SM90),
        Atom("vec.4", "copy", BOTH),
        Atom("vec.8", "copy", BOTH),
        Atom("vec.16", "copy", BOTH),
        Atom("universal", "copy", BOTH),
    )
}

# wgmma's N: a multiple of 8 from 8 to 256.
WGMMA_N = range(8, 257, 8)
# setmaxnreg's register counts.
REGISTER_COUNTS = range(24, 257, 8)

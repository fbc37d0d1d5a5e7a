"""Test helper (sm90_emu): the SM80 warp-level matrix ops, as the PTX ISA places their
fragments, so that sm90_emu runs mma.sync kernels (examples/gemm_sm80.tile, ...) on the CPU
too: `ldmatrix` (x1/x2/x4, with .trans), `mma.sync.m16n8k16` (f16/bf16 in, f32 accumulate),
and the opaque register moves tilec wraps values in. Each op acts on the 32 lanes of every warp
of a group at once (a warp's lanes take part together, as the hardware requires).

Placements (PTX ISA, "Matrix fragments for mma.m16n8k16" and "ldmatrix"), for a lane of a warp
with g = lane / 4 and t = lane % 4:
- ldmatrix, matrix j: lanes 8j..8j+7 give the addresses of its rows 0..7 (16 bytes each); the
  lane receives the 32-bit word of row g, columns 2t and 2t + 1; with .trans, elements (row 2t,
  column g) and (row 2t + 1, column g), the first in the low half.
- mma A (16 x 16, row): register i holds (row g + 8 (i % 2), columns 2t + 8 (i // 2) + {0, 1});
  B (16 x 8, col): register i holds (rows 2t + 8 i + {0, 1}, column g); C and D (16 x 8, f32):
  register i is (row g + 8 (i // 2), column 2t + i % 2).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
from mlir import ir
from sm90_emu_model import WARPGROUP, from_bits16, wrap
from sm90_emu_ops import ASM, op

if TYPE_CHECKING:
    from sm90_emu import Group

LANE = np.arange(WARPGROUP) % 32
WARP_BASE = np.arange(WARPGROUP) - LANE  # a lane's warp's first lane in the group
G, T = LANE // 4, LANE % 4


def _lanes(x: object) -> np.ndarray:
    return np.broadcast_to(np.asarray(x, dtype=np.int64), (WARPGROUP,))


def _read_u16(g: Group, address: int) -> int:
    return int.from_bytes(g.block.memory.read(address, 2), "little")


@op("nvvm.ldmatrix")
def ldmatrix(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    if "b16" not in str(o.attributes["eltType"]) or "m = 8, n = 8" not in str(
        o.attributes["shape"]
    ):
        raise NotImplementedError(f"ldmatrix of {o.attributes['eltType']} {o.attributes['shape']}")
    num = ir.IntegerAttr(o.attributes["num"]).value
    trans = "col" in str(o.attributes["layout"])
    rows = _lanes(g.value(o.operands[0]))
    out = []
    for j in range(num):
        word = np.zeros(WARPGROUP, dtype=np.int64)
        for lane in np.flatnonzero(mask):
            base = WARP_BASE[lane] + 8 * j
            if trans:  # (row 2t, column g) low, (row 2t + 1, column g) high
                lo = _read_u16(g, int(rows[base + 2 * T[lane]]) + 2 * G[lane])
                hi = _read_u16(g, int(rows[base + 2 * T[lane] + 1]) + 2 * G[lane])
                word[lane] = lo | hi << 16
            else:  # row g, columns 2t and 2t + 1
                data = g.block.memory.read(int(rows[base + G[lane]]) + 4 * T[lane], 4)
                word[lane] = int.from_bytes(data, "little")
        out.append(wrap(word, "i32"))
    return out if num > 1 else out[0]


def _halves(regs: list[object], elem: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each register's two 16-bit elements (low, high) as float32, per lane: from an i32's
    bits, or a vector<2 x f16> register's two values (lanes x 2)."""
    out = []
    for r in regs:
        x = np.asarray(r)
        if x.ndim == 2:
            out.append((x[:, 0].astype(np.float32), x[:, 1].astype(np.float32)))
            continue
        bits = _lanes(x)
        out.append((from_bits16(bits, elem), from_bits16(bits >> 16, elem)))
    return out


@op("nvvm.mma.sync")
def mma_sync(g: Group, o: ir.Operation, mask: np.ndarray) -> object:
    shape = str(o.attributes["shape"])
    elem = re.search(r"<(\w+)>", str(o.attributes["multiplicandAPtxType"])).group(1)
    row_col = ("row" in str(o.attributes["layoutA"]), "col" in str(o.attributes["layoutB"]))
    operands = list(o.operands)
    if "m = 16, n = 8, k = 16" not in shape or elem not in ("f16", "bf16") or not all(row_col):
        raise NotImplementedError(f"mma.sync {shape} {elem} {o.attributes['layoutA']}")
    if len(operands) != 10 or str(operands[6].type) != "f32":
        raise NotImplementedError("mma.sync: only four A, two B and four f32 C registers")
    a = _halves([g.value(v) for v in operands[0:4]], elem)
    b = _halves([g.value(v) for v in operands[4:6]], elem)
    c = [np.broadcast_to(np.asarray(g.value(v), np.float32), (WARPGROUP,)) for v in operands[6:]]
    d = [np.zeros(WARPGROUP, dtype=np.float32) for _ in range(4)]
    for warp in range(WARPGROUP // 32):
        lanes = np.arange(32 * warp, 32 * warp + 32)
        if not mask[lanes].any():
            continue
        am = np.full((16, 16), np.nan)
        bm = np.full((16, 8), np.nan)
        for i, (lo, hi) in enumerate(a):
            r, k = G + 8 * (i % 2), 2 * T + 8 * (i // 2)
            am[r[lanes], k[lanes]], am[r[lanes], k[lanes] + 1] = lo[lanes], hi[lanes]
        for i, (lo, hi) in enumerate(b):
            k = 2 * T + 8 * i
            bm[k[lanes], G[lanes]], bm[k[lanes] + 1, G[lanes]] = lo[lanes], hi[lanes]
        assert not np.isnan(am).any() and not np.isnan(bm).any(), "a fragment element unset"
        prod = am @ bm
        for i in range(4):
            r, col = G + 8 * (i // 2), 2 * T + i % 2
            d[i][lanes] = (c[i][lanes].astype(np.float64) + prod[r[lanes], col[lanes]]).astype(
                np.float32
            )
    return d


# tilec hides values from LLVM's folding behind register moves: the value as it is
_MOVES = re.compile(r"mov\.(b32|b64|u32|f32) \$0, \$1;")
_SPECIAL = re.compile(r"mov\.u32 \$0, %(tid|ctaid)\.([xyz]);")


def register_move(g: Group, o: ir.Operation, text: str) -> object | None:
    """The result of an inline-asm register move tilec emits (`mov.b64 $0, $1;`, `mov.u32 $0,
    %tid.x;`), or None where `text` is none."""
    if _MOVES.fullmatch(text):
        return g.get(o.operands[0])
    m = _SPECIAL.fullmatch(text)
    if m is None:
        return None
    d = "xyz".index(m.group(2))
    if m.group(1) == "tid":
        return g.tid if d == 0 else np.int64(0)
    return np.int64(g.block.block_id[d])


ASM.append(register_move)

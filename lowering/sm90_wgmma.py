"""wgmma: the SM90 warp-group MMA over shared-memory operands, and its accumulator.

An accumulator of one `wgmma.m64nNk16` is an `!llvm.struct` of N/2 f32 per thread, carried as
one SSA value (loop-carried through `scf.for` iter_args); the 128 threads of the warp group
hold it in the layout the PTX ISA gives for the D fragment: thread `t` (warp `w = t / 32`,
lane `l`) holds, for each 8-column block `j`, the elements (r, c) and (r + 8, c) for
`r = 16·w + l / 4` and `c = 8·j + 2·(l mod 4) + {0, 1}`, as registers 4j+{0,1} and 4j+{2,3}.

Operands come from shared memory through 64-bit matrix descriptors: the start address, the
stride between 8-row core-matrix groups (8 rows of the swizzle width), and the swizzle mode,
all read off the shared layout (`sm90_tma.SwizzledRows`): a K-major operand whose rows are
one swizzle width long. A k16 step moves 32 bytes along the row; 64 rows further on is
64 rows × the row's bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, llvm

from tilec.lowering import LoweringError
from tilec.lowering.sm90_tma import SwizzledRows
from tilec.lowering.tile_fragments import constant

_ATOM = re.compile(r"sm90\.wgmma_(\d+)x(\d+)x(\d+)\.(\w+)\.(\w+)\.(\w+)")
LAYOUT_TYPE = {128: 1, 64: 2, 32: 3}  # the descriptor's swizzle mode, bits 62-63


@dataclass(frozen=True)
class WgmmaAtom:
    m: int
    n: int
    k: int
    d: str
    a: str
    b: str

    @staticmethod
    def parse(op: ir.Operation, atom: str) -> WgmmaAtom:
        found = _ATOM.fullmatch(atom)
        if found is None:
            raise LoweringError(op, f"'{atom}' is not an SM90 wgmma atom")
        m, n, k = (int(found.group(i)) for i in (1, 2, 3))
        atom_ = WgmmaAtom(m, n, k, found.group(4), found.group(5), found.group(6))
        if atom_.d != "f32" or atom_.a != atom_.b or atom_.a not in ("f16", "bf16"):
            raise LoweringError(
                op, f"wgmma {atom} is not lowered yet (lowered: f32 += f16·f16, bf16·bf16)"
            )
        if m != 64 or k != 16 or n % 8 or not 8 <= n <= 256:
            raise LoweringError(
                op, f"wgmma {atom}: the shape must be 64xNx16, N a multiple of 8 up to 256"
            )
        return atom_

    @property
    def regs(self) -> int:
        """f32 accumulator registers per thread."""
        return self.m * self.n // 128

    def struct(self) -> ir.Type:
        return ir.Type.parse("!llvm.struct<(" + ", ".join(["f32"] * self.regs) + ")>")


def descriptor(base: ir.Value, rows: SwizzledRows) -> ir.Value:
    """The matrix descriptor of the operand tile whose first row starts at `base`: 8 rows of
    the swizzle width between core-matrix groups along K (the stride byte offset); for an
    MN-major tile, one chunk between swizzle-wide column blocks along M or N (the leading byte
    offset; a K-major tile's rows hold all of K, its leading offset is unused)."""
    i32, i64 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(64)
    addr = arith.ExtUIOp(i64, llvm.PtrToIntOp(i32, base).result).result
    start = arith.ShRUIOp(arith.AndIOp(addr, constant(i64, 0x3FFFF)).result, constant(i64, 4))
    stride_groups = 8 * rows.swizzle >> 4  # bytes between 8-row groups, in 16-byte units
    leading = rows.chunk_bytes >> 4 if rows.mn_major else 1
    fixed = (leading << 16) | (stride_groups << 32) | (LAYOUT_TYPE[rows.swizzle] << 62)
    if fixed >= 1 << 63:  # the 64- and 32-byte modes set bit 63: as a signed i64 constant
        fixed -= 1 << 64
    return arith.OrIOp(start.result, constant(i64, fixed)).result


def advanced(desc: ir.Value, nbytes: int) -> ir.Value:
    """The descriptor `nbytes` (a multiple of 16) further on: the address field moves alone
    (shared addresses stay below 2^18, so it cannot carry into the next field)."""
    if nbytes == 0:
        return desc
    return arith.AddIOp(desc, constant(ir.IntegerType.get_signless(64), nbytes >> 4)).result


def mma(
    atom: WgmmaAtom, acc: ir.Value, desc_a: ir.Value, desc_b: ir.Value,
    mn_major: tuple[bool, bool] = (False, False), add: bool = True,
) -> ir.Value:  # fmt: skip
    """acc += A·Bᵀ (`add`; else acc = A·Bᵀ, scale-d 0) for one 64×N×16 step, both operands in
    shared memory: K-major, or (per operand, `mn_major`) MN-major, the transpose bit of
    wgmma."""
    attrs = {
        "layoutA": f"#nvvm.mma_layout<{'col' if mn_major[0] else 'row'}>",
        "layoutB": f"#nvvm.mma_layout<{'row' if mn_major[1] else 'col'}>",
        "satfinite": "#nvvm.mma_int_overflow<wrapped>",
        "scaleA": "#nvvm.wgmma_scale_in<one>",
        "scaleB": "#nvvm.wgmma_scale_in<one>",
        "scaleD": f"#nvvm.wgmma_scale_out<{'one' if add else 'zero'}>",
        "shape": f"#nvvm.shape<m = {atom.m}, n = {atom.n}, k = {atom.k}>",
        "typeA": f"#nvvm.wgmma_type<{atom.a}>",
        "typeB": f"#nvvm.wgmma_type<{atom.b}>",
        "typeD": f"#nvvm.wgmma_type<{atom.d}>",
    }
    op = ir.Operation.create(
        "nvvm.wgmma.mma_async",
        results=[atom.struct()],
        operands=[acc, desc_a, desc_b],
        attributes={k: ir.Attribute.parse(v) for k, v in attrs.items()},
    )
    return op.results[0]


def mma_register_a(
    atom: WgmmaAtom, acc: ir.Value, a: list[ir.Value], desc_b: ir.Value, b_mn_major: bool,
    add: bool = True,
) -> ir.Value:  # fmt: skip
    """acc += A·Bᵀ (`add`; else acc = A·Bᵀ, scale-d 0) for one 64×N×16 step with A from
    registers (four `.b32` of two 16-bit
    values each: the thread's m16n8k16 A fragment in its warp's 16 rows) and B in shared
    memory. MLIR's `nvvm.wgmma.mma_async` takes A only as a descriptor, so this is inline
    PTX, the accumulators tied in and out ("+f") as the NVVM op's own lowering writes them."""
    n = atom.regs
    f32 = ir.F32Type.get()
    values = [llvm.ExtractValueOp(f32, acc, [r]).result for r in range(n)]
    d = ", ".join(f"${i}" for i in range(n))
    # operands: n outputs, the n inputs tied to them, A's four registers, B's descriptor
    regs = ", ".join(f"${2 * n + i}" for i in range(4))
    asm = (
        f"{{\n.reg .pred p;\nsetp.ne.b32 p, {int(add)}, 0;\n"
        f"wgmma.mma_async.sync.aligned.m{atom.m}n{atom.n}k{atom.k}.{atom.d}.{atom.a}.{atom.b} "
        f"{{{d}}}, {{{regs}}}, ${2 * n + 4}, p, 1, 1, {int(b_mn_major)};\n}}\n"
    )
    constraints = ",".join(["=f"] * n + [str(i) for i in range(n)] + ["r"] * 4 + ["l"])
    return llvm.InlineAsmOp(
        atom.struct(), [*values, *a, desc_b], asm, constraints, has_side_effects=True
    ).result

"""The SM90 GEMM at every K-major swizzle width: BK = 64 (128-byte rows), 32 (64-byte) and 16
(32-byte) compile to PTX keeping the example's contract, and the TMA boxes, the TMA swizzle
modes and every wgmma's matrix descriptors (swizzle mode, stride byte offset, the k-step's
start advance) agree with the shared layout the source declares, evaluated by the algebra."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlir import ir

from tilec import binding
from tilec import layout as L
from tilec.driver import CompileOptions, compile_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gemm_sm90.tile"
ELEMENT = 2  # bf16
MODE = {128: 1, 64: 2, 32: 3}  # the PTX ISA's descriptor swizzle modes (bits 62-63)
BUILDS = [
    {"BK": 64},
    {"BK": 32},
    {"BK": 16},
    {"BK": 32, "PP": 1, "BN": 128},
    {"BK": 16, "PP": 1, "BN": 128},
]


def rows_layout(bk: int, rows: int) -> L.AnyLayout:
    """The example's K-major buffer: swizzle<log2(BK / 8) - 0, 3, 3> o (8, BK):(BK, 1), tiled."""
    bits = {64: 3, 32: 2, 16: 1}[bk]
    atom = L.composition(L.Swizzle(bits, 3, 3), L.Layout((8, bk), (bk, 1)))
    return L.tile_to_shape(atom, (rows, bk))


def defines(build: dict[str, int]) -> dict[str, str]:
    return {k: str(v) for k, v in build.items()}


def constant_of(v: ir.Value) -> int | None:
    op = v.owner
    if isinstance(op, ir.Operation | ir.OpView) and op.name == "arith.constant":
        return ir.IntegerAttr(op.attributes["value"]).value
    return None


def decode(desc: ir.Value) -> tuple[int, int]:
    """(fixed fields, start advance in 16-byte units) of a descriptor built as
    `(start >> 4) | fixed`, then `+ advance`."""
    advance = 0
    op = desc.owner
    if op.name == "arith.addi":
        step = constant_of(op.operands[1])
        assert step is not None, op
        advance, op = step, op.operands[0].owner
    assert op.name == "arith.ori", op
    fixed = constant_of(op.operands[1])
    assert fixed is not None, op
    return fixed % (1 << 64), advance


def field(fixed: int, lo: int, bits: int) -> int:
    return (fixed >> lo) & ((1 << bits) - 1)


def kernel_attr(module: ir.Module, name: str) -> ir.Attribute:
    found: list[ir.Attribute] = []
    binding.walk(
        module.operation,
        lambda op: found.append(op.attributes[name]) if name in op.attributes else None,
    )
    assert found, name
    return found[0]


@pytest.mark.parametrize("build", BUILDS, ids=lambda b: ",".join(f"{k}={v}" for k, v in b.items()))
def test_descriptors_follow_the_layout(build: dict[str, int]) -> None:
    bk, bm, bn = build["BK"], 128, build.get("BN", 256)
    module = compile_file(str(EXAMPLE), CompileOptions(emit="gpu", params=defines(build))).value
    # TMA: one box of the tile's rows by BK, in the swizzle of the row's width.
    tma = {str(d["tensor"]).strip('"'): d for d in kernel_attr(module, "tile.tma")}
    width = bk * ELEMENT
    for tensor, rows in (("A", bm), ("B", bn)):
        box = list(ir.DenseI64ArrayAttr(tma[tensor]["box"]))
        assert box == [rows, bk], (tensor, box)
        assert ir.StringAttr(tma[tensor]["swizzle"]).value == f"{width}B"
    wgmmas: list[ir.Operation] = []
    binding.walk(
        module.operation,
        lambda op: wgmmas.append(op) if op.name == "nvvm.wgmma.mma_async" else None,
    )
    # One k16 step after another over the BK columns (the ping-pong build has a loop per turn).
    assert wgmmas and len(wgmmas) % (bk // 16) == 0
    # A ping-pong group holds all BM rows, two m64 atoms (the second 64 rows on), a cooperative
    # group 64 of them, which its address gives; B's BN rows are one wgmma's n.
    atoms = 2 if build.get("PP") else 1
    for operand, rows, m_atoms in ((1, bm, atoms), (2, bn, 1)):  # A's descriptor, B's
        layout = rows_layout(bk, rows)
        group = layout(8, 0) * ELEMENT  # bytes from row 0 to row 8: the stride byte offset
        steps = {
            layout(64 * i, 16 * j) * ELEMENT >> 4 for i in range(m_atoms) for j in range(bk // 16)
        }
        decoded = [decode(op.operands[operand]) for op in wgmmas]
        assert {advance for _, advance in decoded} == steps
        for fixed, _ in decoded:
            assert field(fixed, 62, 2) == MODE[width], hex(fixed)
            assert field(fixed, 32, 14) == group >> 4, hex(fixed)
            assert field(fixed, 16, 14) == 1, hex(fixed)  # K-major: leading offset unused
            assert field(fixed, 0, 14) == 0, hex(fixed)  # the start comes from the address


@pytest.mark.parametrize("bk", [32, 16])
def test_narrow_swizzles_compile_to_ptx_with_their_contract(bk: int) -> None:
    """Contracts checked (depth == STAGES, no spills, wgmma, TMA, setmaxnreg): ptxas runs."""
    ptx = compile_file(str(EXAMPLE), CompileOptions(emit="ptx", params={"BK": str(bk)})).value
    assert isinstance(ptx, str) and ".target sm_90a" in ptx
    count = ptx.count("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16")
    assert count >= bk // 16 and count % (bk // 16) == 0  # k16 steps, in each copy of the loop
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx

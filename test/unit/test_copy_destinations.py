"""Global-to-shared copies land where the layout algebra puts each element, for every thread:
cp.async (whole, masked and narrow paths) and the element-by-element fallback, into swizzled
buffers of one-warp tiles (one 16-byte chunk a thread, or a few each) and multi-warp
tiles. Each copy's source address names the element (row, col) of A it reads; its shared
destination must be `sA(row, col)` of the buffer's layout, and every element of the tile must
be written exactly once on each path."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlir import ir

from tilec import binding
from tilec import layout as L
from tilec.banks import Evaluator
from tilec.driver import CompileOptions, compile_file

KERNEL = """
kernel cpa<R: int = 8, C: int = 64, B: int = 3, W: int = 1, N: int = 0>(
    A: f16[M, K], O: f16[M, K])
  grid(1) threads(32 * W) target(sm_80)
{
  let sA = shared<f16>(tile_to_shape(swizzle<B, 3, 3> o (8, C):(C, 1), (R, C)))
  copy<cp_async.cg.16>(local_tile(A, (R, C), (block.x, 0)), sA, narrow = N)
  barrier()
  copy(sA, local_tile(O, (R, C), (block.x, 0)))
}
"""
ELEMENT = 2  # f16
COPY = "nvvm.cp.async.shared.global"

# (R, C, B, W): rows, columns (elements), swizzle bits (2^B 16-byte chunks a swizzled row), warps
CONFIGS = [
    (16, 16, 1, 1),  # 32-byte rows (fewer chunks than threads is refused at the copy)
    (8, 32, 2, 1),  # one chunk a thread
    (8, 64, 3, 1),  # two chunks a thread
    (16, 64, 3, 1),  # four
    (16, 64, 3, 4),  # one chunk a thread over four warps
    (32, 32, 2, 4),
    (64, 64, 3, 4),  # four chunks a thread over four warps
    (128, 64, 3, 8),  # the SM80 GEMM's A tile shape
]


def algebra(r: int, c: int, b: int) -> L.AnyLayout:
    atom = L.composition(L.Swizzle(b, 3, 3), L.Layout((8, c), (c, 1)))
    return L.tile_to_shape(atom, (r, c))


def compiled(tmp: Path, r: int, c: int, b: int, w: int, narrow: int = 0) -> ir.Module:
    src = tmp / "cpa.tile"
    src.write_text(KERNEL)
    defines = {"R": r, "C": c, "B": b, "W": w, "N": narrow}
    options = CompileOptions(emit="gpu", params={k: str(v) for k, v in defines.items()})
    return compile_file(str(src), options).value


def kernel_values(module: ir.Module, m: int, k: int) -> dict[ir.Value, int]:
    """The kernel's arguments (A at address 0, O elsewhere, M, K) and block 0."""
    seeded: dict[ir.Value, int] = {}

    def visit(op: ir.Operation) -> None:
        if op.name == "gpu.func":
            args = op.regions[0].blocks[0].arguments
            for arg, value in zip(args, (0, 1 << 40, m, k), strict=True):
                seeded[arg] = value
        elif op.name == "gpu.block_id":
            seeded[op.results[0]] = 0

    binding.walk(module.operation, visit)
    return seeded


def evaluator(t: int, seeded: dict[ir.Value, int]) -> Evaluator:
    ev = Evaluator((t, 0, 0), {})
    ev.memo.update(seeded)  # values the evaluator takes as given (it reads memo first)
    return ev


def element_copies(
    op: ir.Operation, ev: Evaluator, k: int
) -> list[tuple[tuple[int, int], int]] | None:
    """((row, col) of A, shared element index) of each element `op` copies for this thread;
    None where it copies nothing from A (a masked-off cp.async, a zero fill)."""
    if op.name == COPY:
        width = ir.IntegerAttr(op.attributes["size"]).value
        if len(op.operands) > 2:  # src-size: bytes read, the rest zero-filled
            width = ev.value(op.operands[2])
            if width == 0:
                return None
        dst, src = ev.value(op.operands[0]), ev.value(op.operands[1])
    else:  # llvm.store of an llvm.load from global into shared
        stored = op.operands[0].owner
        if not (isinstance(stored, ir.Operation | ir.OpView) and stored.name == "llvm.load"):
            return None
        load_ptr = stored.operands[0]
        if str(load_ptr.type) != "!llvm.ptr<1>":
            return None
        dst, src = ev.value(op.operands[1]), ev.value(load_ptr)
        width = ELEMENT
    assert dst % ELEMENT == 0 and src % ELEMENT == 0 and width % ELEMENT == 0
    out = []
    for e in range(width // ELEMENT):
        flat = src // ELEMENT + e
        out.append(((flat // k, flat % k), dst // ELEMENT + e))
    return out


def writers(module: ir.Module) -> list[list[ir.Operation]]:
    """The copies into shared memory by path: the cp.asyncs of one block (the whole tile, the
    masked tile, a narrow width), and the element-by-element stores together (each sits in
    an scf.if of its own mask)."""
    groups: list[tuple[ir.Block | None, list[ir.Operation]]] = [(None, [])]

    def visit(op: ir.Operation) -> None:
        if op.name == "llvm.store" and str(op.operands[1].type) == "!llvm.ptr<3>":
            groups[0][1].append(op)
        if op.name != COPY:
            return
        for block, ops in groups[1:]:
            if block == op.block:
                ops.append(op)
                return
        groups.append((op.block, [op]))

    binding.walk(module.operation, visit)
    return [ops for _, ops in groups if ops]


def check_paths(module: ir.Module, layout: L.AnyLayout, r: int, c: int, w: int, k: int) -> int:
    """Every path's copies put A's (row, col) at layout(row, col), each element once."""
    seeded = kernel_values(module, m=r, k=k)
    paths = 0
    for ops in writers(module):
        written: dict[int, tuple[int, int]] = {}
        for t in range(32 * w):
            ev = evaluator(t, seeded)
            for op in ops:
                for (row, col), dst in element_copies(op, ev, k) or []:
                    assert 0 <= row < r and 0 <= col < c, (op.name, t, row, col)
                    assert dst == layout(row, col), (op.name, t, (row, col), dst)
                    assert dst not in written, (op.name, t, dst, written[dst], (row, col))
                    written[dst] = (row, col)
        if written:
            assert len(written) == r * c, (len(written), r * c)
            paths += 1
    return paths


@pytest.mark.parametrize(("r", "c", "b", "w"), CONFIGS, ids=lambda v: str(v))
def test_cp_async_lands_on_the_swizzled_layout(
    r: int, c: int, b: int, w: int, tmp_path: Path
) -> None:
    module = compiled(tmp_path, r, c, b, w)
    copies = [op for ops in writers(module) for op in ops if op.name == COPY]
    assert copies, "no cp.async in the kernel"
    # K = C + 8: A's rows longer than the tile's, so a row stride of C (or K) in the wrong
    # place shows; still 16-byte aligned, so every path (whole, masked, narrow) is reachable.
    paths = check_paths(module, algebra(r, c, b), r, c, w, k=c + 8)
    assert paths >= 3  # the whole tile, the masked tile and the element-by-element fallback


@pytest.mark.parametrize(("r", "c", "b", "w"), [(8, 32, 2, 1), (64, 64, 3, 4)], ids=str)
def test_narrow_copies_land_on_the_swizzled_layout(
    r: int, c: int, b: int, w: int, tmp_path: Path
) -> None:
    """narrow = 1: rows only 8- or 4-byte aligned are copied 8 or 4 bytes at a time."""
    module = compiled(tmp_path, r, c, b, w, narrow=1)
    widths = {
        ir.IntegerAttr(op.attributes["size"]).value
        for ops in writers(module)
        for op in ops
        if op.name == COPY
    }
    assert {4, 8, 16} <= widths
    assert check_paths(module, algebra(r, c, b), r, c, w, k=c + 8) >= 4


def executed(op: ir.Operation, ev: Evaluator) -> bool:
    """Whether this thread reaches `op`: every scf.if around it takes the branch holding it."""
    inner, parent = op, op.parent
    while parent is not None and parent.name != "gpu.func":
        if parent.name == "scf.if":
            taken = bool(ev.value(parent.operands[0]))
            in_then = inner.block == parent.regions[0].blocks[0]
            if taken != in_then:
                return False
        inner, parent = parent, parent.parent
    return True


@pytest.mark.parametrize("narrow", [0, 1])
@pytest.mark.parametrize("pad", [8, 4, 2, 1])  # A's rows 16-, 8-, 4-, 2-byte aligned
def test_the_path_taken_fits_the_alignment(narrow: int, pad: int, tmp_path: Path) -> None:
    """Following each thread's branches: every copy it runs reads and writes addresses aligned
    to its width (a 16-byte cp.async from an 8-byte aligned row is a fault), and what the block
    runs writes every element of the tile once, at the layout's offset."""
    r, c, b, w = 16, 64, 3, 2
    module = compiled(tmp_path, r, c, b, w, narrow=narrow)
    k = c + pad
    seeded = kernel_values(module, m=r, k=k)
    layout = algebra(r, c, b)
    written: dict[int, tuple[int, int]] = {}
    widths: set[int] = set()
    for t in range(32 * w):
        ev = evaluator(t, seeded)
        for op in (op for ops in writers(module) for op in ops):
            if not executed(op, ev):
                continue
            if op.name == COPY:
                width = ir.IntegerAttr(op.attributes["size"]).value
                src, dst = ev.value(op.operands[1]), ev.value(op.operands[0])
                assert src % width == 0 and dst % width == 0, (pad, t, width, src, dst)
                widths.add(width)
            for (row, col), dst in element_copies(op, ev, k) or []:
                assert dst == layout(row, col) and dst not in written, (pad, t, row, col)
                written[dst] = (row, col)
    assert len(written) == r * c
    if narrow:  # the widest copy the rows allow
        assert max(widths, default=2) == min(16, 2 * pad)
    elif pad < 8:
        assert widths == set()  # element by element


def test_a_wrong_layout_is_caught(tmp_path: Path) -> None:
    """The check can fail: the same copies against an unswizzled or other-swizzled layout."""
    module = compiled(tmp_path, 8, 64, 3, 1)
    for wrong in (L.Layout((8, 64), (64, 1)), algebra(8, 64, 2)):
        with pytest.raises(AssertionError):
            check_paths(module, wrong, 8, 64, 1, k=72)

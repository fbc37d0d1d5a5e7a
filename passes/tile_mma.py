r"""Passes (lowered stage): mma.sync m16n8k16 fragments, ldmatrix and gemm (convert-tile-to-gpu).

A tiled MMA of atoms (WM, WN, 1) gives each warp one contiguous (BM/WM)×(BN/WN) piece of the
block tile; warp w = tid / 32 sits at (w mod WM, w div WM) (column-major, as CuTe's atom
layout). Inside its piece the warp repeats the 16×8 atom TM×TN times. The register
fragments are those of the PTX ISA "mma.m16n8k16" figures, with g = lane / 4, t = lane mod 4:

    A 16×16 (.f16, row)           B 16×8 (.f16, col)       C/D 16×8 (.f32)
          k: 0..7    8..15               n: 0..7                 n: 0..7
    m 0..7 [a0 a1]  [a4 a5]       k 0..7  [b0 b1]          m 0..7  [c0 c1]
    m 8..15[a2 a3]  [a6 a7]       k 8..15 [b2 b3]          m 8..15 [c2 c3]
    a(2i+e) at (g + 8(i&1), 2t + e + 8(i>>1))   b(2i+e) at (k = 2t + e + 8i, n = g)
    c(2i+e) at (g + 8i, 2t + e)

`ldmatrix.x4` loads four 8×8 b16 matrices; lanes 8q..8q+7 give the row addresses of matrix q
and lane l receives row l/4, columns 2(l mod 4)+{0,1} of matrix q in register q. With K-major
shared tiles (sA[m][k], sB[n][k]) that is exactly an A fragment when lane l points at row
l mod 8 + 8((l/8) mod 2), column 8(l/16) of a 16×16 block, and two B fragments (n-atoms
2p and 2p+1) when it points at row l mod 8 + 8(l/16), column 8((l/8) mod 2); no `.trans`.

The accumulator of `partition_c` is (4, TM, TN):(1, 4, 4TM) per thread, held as a `Frag`
whose chunk i = mi + TM*ni holds c0..c3 of atom (mi, ni).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import builtin, gpu, llvm, nvgpu, scf

from tilec.dialects.layout import algebra as A
from tilec.dialects.tile.types import MmaType
from tilec.passes.convert_layout_to_arith import IndexBuilder, Term
from tilec.passes.tile_fragments import (
    Deferred,
    Evaluation,
    Frag,
    Partition,
    chunk_values,
    constant,
    convert,
    fast_path,
)
from tilec.passes.tile_memory import Side, if_else, when
from tilec.passes.tile_views import (
    LoweringError,
    View,
    element_address,
    element_index,
    in_bounds,
    tensor_type,
)

ATOM = "sm80.mma_16x8x16.f32.f16.f16.f32"
AM, AN, AK = 16, 8, 16
WARP = 32


# Index maps of one atom, as pure functions (the unit test runs them against numpy).
def a_elem(lane: int, r: int) -> tuple[int, int]:
    """(m, k) in the 16×16 A block of register half r (0..7) of `lane`."""
    i, e = divmod(r, 2)
    return lane // 4 + 8 * (i & 1), 2 * (lane % 4) + e + 8 * (i >> 1)


def b_elem(lane: int, r: int) -> tuple[int, int]:
    """(k, n) in the 16×8 B block of register half r (0..3) of `lane`."""
    i, e = divmod(r, 2)
    return 2 * (lane % 4) + e + 8 * i, lane // 4


def c_elem(lane: int, r: int) -> tuple[int, int]:
    """(m, n) in the 16×8 C block of accumulator r (0..3) of `lane`."""
    i, e = divmod(r, 2)
    return lane // 4 + 8 * i, 2 * (lane % 4) + e


def a_row(lane: int) -> tuple[int, int]:
    """(m, k) of the 8-element row whose address `lane` gives to ldmatrix.x4 for A."""
    return lane % 8 + 8 * ((lane // 8) % 2), 8 * (lane // 16)


def b_row(lane: int) -> tuple[int, int]:
    """(n, k) of the row `lane` gives to ldmatrix.x4 for the B blocks of n-atoms 2p, 2p+1."""
    return lane % 8 + 8 * (lane // 16), 8 * ((lane // 8) % 2)


@dataclass(frozen=True)
class MmaPartition:
    """The C partition of a tiled mma.sync: a `Frag` with this part is an accumulator."""

    block: tuple[int, int]  # (BM, BN)
    warps: tuple[int, int]  # (WM, WN)

    @property
    def piece(self) -> tuple[int, int]:
        return self.block[0] // self.warps[0], self.block[1] // self.warps[1]

    @property
    def tiles(self) -> tuple[int, int]:
        return self.piece[0] // AM, self.piece[1] // AN

    @property
    def iters(self) -> int:  # chunks per thread, as elementwise ops count them
        return self.tiles[0] * self.tiles[1]

    vec = 4  # values per chunk: c0..c3


def mma_partition(op: ir.Operation, mma: ir.Type, block: tuple[int, ...]) -> MmaPartition:
    t = MmaType.of(mma)
    if t is None or t.atom != ATOM:
        raise LoweringError(op, f"only the {ATOM} atom is lowered, got {mma}")
    tiling = [int(x) for x in t.tiling.strip("()").split(",")]
    if len(tiling) != 3 or tiling[2] != 1:
        raise LoweringError(op, f"atoms {t.tiling}: expected (WM, WN, 1)")
    if len(block) != 2:
        raise LoweringError(op, f"block_shape {list(block)} must have two modes")
    part = MmaPartition((block[0], block[1]), (tiling[0], tiling[1]))
    pm, pn = part.piece
    if pm * tiling[0] != block[0] or pn * tiling[1] != block[1] or pm % AM or pn % (2 * AN):
        raise LoweringError(
            op, f"block {list(block)} over warps {tiling[:2]} is not whole 16x16 pieces"
        )
    return part


def fragment(op: ir.Operation, mma: ir.Type, threads: int) -> Frag:
    block = tuple(ir.DenseI64ArrayAttr(op.attributes["block_shape"]))
    part = mma_partition(op, mma, block)
    t = tensor_type(op.results[0].type)
    if A.size(t.layout) != part.iters * part.vec:
        raise LoweringError(op, f"fragment layout {t.layout} is not this MMA's C partition")
    if part.warps[0] * part.warps[1] * WARP != threads:
        raise LoweringError(op, f"{part.warps} warps need {WARP * part.warps[0] * part.warps[1]}")
    # Undefined until a `fill`; llvm.undef keeps the values out of local memory.
    undef = llvm.UndefOp(t.elem).result
    return Frag(part, t.elem, [[undef] * part.vec for _ in range(part.iters)])  # type: ignore[arg-type]


def fill(frag: Frag, value: float) -> None:
    c = constant(frag.elem, value)
    frag.values = [[c] * len(row) for row in frag.values]


@dataclass
class Lanes:
    """The warp coordinates of this thread, as index terms."""

    lane: Term
    wm: Term
    wn: Term

    @staticmethod
    def of(tid: ir.Value, part: MmaPartition, b: IndexBuilder) -> Lanes:
        warp = b.div(tid, WARP)
        return Lanes(b.rem(tid, WARP), b.rem(warp, part.warps[0]), b.div(warp, part.warps[0]))


def memref_of(ptr: ir.Value, elem: ir.Type, shared: bool) -> ir.Value:
    """A rank-1 identity memref over `ptr`, for the nvgpu ops (only the pointer is read)."""
    space = 3 if shared else 1
    i64 = ir.IntegerType.get_signless(64)
    desc = ir.Type.parse(
        f"!llvm.struct<(ptr<{space}>, ptr<{space}>, i64, array<1 x i64>, array<1 x i64>)>"
    )
    # The descriptor the memref-to-LLVM conversion would build; reconcile-unrealized-casts
    # folds the cast pair back to it after convert-nvgpu-to-nvvm.
    d = llvm.UndefOp(desc).result
    d = llvm.InsertValueOp(d, ptr, [0]).result
    d = llvm.InsertValueOp(d, ptr, [1]).result
    d = llvm.InsertValueOp(d, constant(i64, 0), [2]).result
    d = llvm.InsertValueOp(d, constant(i64, 1 << 62), [3, 0]).result
    d = llvm.InsertValueOp(d, constant(i64, 1), [4, 0]).result
    where = "#gpu.address_space<workgroup>" if shared else "1"
    mt = ir.Type.parse(f"memref<?x{elem}, {where}>")
    return builtin.UnrealizedConversionCastOp([mt], [d]).result


def cast(value: ir.Value, to: str) -> ir.Value:
    return builtin.UnrealizedConversionCastOp([ir.Type.parse(to)], [value]).result


def ldmatrix_x4(mem: ir.Value, index: Term, b: IndexBuilder) -> list[ir.Value]:
    """The four vector<2xf16> registers of one ldmatrix.x4 (row address at `index`)."""
    res = ir.Type.parse("vector<4x2xf16>")
    v = nvgpu.LdMatrixOp(res, mem, [b.value(index)], False, 4).result
    regs = cast(v, "!llvm.array<4 x vector<2xf16>>")
    return [llvm.ExtractValueOp(ir.Type.parse("vector<2xf16>"), regs, [q]).result for q in range(4)]


def pack(regs: list[ir.Value], elem: str) -> ir.Value:
    """regs (vector<2xELEM> each) as the 2-D vector nvgpu.mma.sync takes."""
    arr = f"!llvm.array<{len(regs)} x vector<2x{elem}>>"
    a = llvm.UndefOp(ir.Type.parse(arr)).result
    for q, r in enumerate(regs):
        a = llvm.InsertValueOp(a, r, [q]).result
    return cast(a, f"vector<{len(regs)}x2x{elem}>")


def pair(x: ir.Value, y: ir.Value) -> ir.Value:
    i32 = ir.IntegerType.get_signless(32)
    v = llvm.UndefOp(ir.VectorType.get([2], x.type)).result
    v = llvm.InsertElementOp(v, x, constant(i32, 0)).result
    return llvm.InsertElementOp(v, y, constant(i32, 1)).result


def mma_sync(a: ir.Value, bregs: list[ir.Value], acc: list[ir.Value]) -> list[ir.Value]:
    c = pack([pair(acc[0], acc[1]), pair(acc[2], acc[3])], "f32")
    d = nvgpu.MmaSyncOp(
        ir.Type.parse("vector<2x2xf32>"), a, pack(bregs, "f16"), c, [AM, AN, AK]
    ).result
    arr = cast(d, "!llvm.array<2 x vector<2xf32>>")
    i32 = ir.IntegerType.get_signless(32)
    out = []
    for q in range(2):
        row = llvm.ExtractValueOp(ir.Type.parse("vector<2xf32>"), arr, [q]).result
        out += [llvm.ExtractElementOp(row, constant(i32, e)).result for e in range(2)]
    return out


def check_operand(op: ir.Operation, view: View, rows: int, name: str) -> int:
    """A K-major f16 shared tile of `rows` rows with whole 8-element ldmatrix rows; its K."""
    shape = view.static_shape(op)
    if view.space != "shared" or len(shape) != 2 or shape[0] != rows or shape[1] % AK:
        raise LoweringError(op, f"gemm operand {name}: expected a shared ({rows}, 16k) tile")
    if str(view.elem) != "f16":
        raise LoweringError(op, f"gemm operand {name}: expected f16, got {view.elem}")
    if view.stride[1] != 1 or not isinstance(view.stride[0], int) or view.stride[0] % 8:
        raise LoweringError(op, f"gemm operand {name}: only K-major tiles (no ldmatrix.trans)")
    if view.swizzle is not None and view.swizzle.base < 3:
        raise LoweringError(op, f"gemm operand {name}: the swizzle splits 16-byte rows")
    if not isinstance(view.offset, int) or view.offset % 8:
        raise LoweringError(op, f"gemm operand {name}: the tile must start on 16 bytes")
    return shape[1]


def shifted(view: View, base: Term, coords: list[Term], rows: int, b: IndexBuilder) -> Term:
    """element_index(view, coords) for coords `rows` rows below those of `base`.

    A swizzle only reads and writes bits below the top of its yyy field: a static step that
    is a multiple of that span passes through it, so the address is base + step (an immediate
    offset) instead of a second xor chain that keeps one more 64-bit address alive.
    """
    step = rows * view.stride[0]
    sw = view.swizzle
    if sw is None or step % (1 << (sw.base + abs(sw.shift) + sw.bits)) == 0:
        return b.add(base, step)
    return element_index(view, coords, b)


def gemm(
    op: ir.Operation, a: View, bv: View, acc: Frag, tid: ir.Value, barriers: bool = True
) -> None:
    """acc += a @ bᵀ, between two barriers (the copies before, the next copies after) unless
    a pipelined loop's wait + barrier orders the shared tiles already."""
    part = acc.part
    if not isinstance(part, MmaPartition):
        raise LoweringError(op, "gemm accumulates into a fragment of its tiled MMA")
    k = check_operand(op, a, part.block[0], "a")
    if check_operand(op, bv, part.block[1], "b") != k:
        raise LoweringError(op, "gemm operands a and b differ in K")
    b = IndexBuilder()
    if barriers:
        gpu.BarrierOp()
    at = Lanes.of(tid, part, b)
    amem, bmem = memref_of(a.base, a.elem, True), memref_of(bv.base, bv.elem, True)
    lane = at.lane
    l8, q = b.rem(lane, 8), b.rem(b.div(lane, 8), 2)
    hi = b.div(lane, 16)
    a_r, a_c = b.add(l8, b.mul(q, 8)), b.mul(hi, 8)
    b_r, b_c = b.add(l8, b.mul(hi, 8)), b.mul(q, 8)
    pm, pn = part.piece
    tm, tn = part.tiles
    m0, n0 = b.mul(at.wm, pm), b.mul(at.wn, pn)
    values = [list(row) for row in acc.values]
    for ks in range(0, k, AK):
        a0 = element_index(a, [b.add(m0, a_r), b.add(a_c, ks)], b)
        afr = []
        for mi in range(tm):
            at_ = shifted(a, a0, [b.add(b.add(m0, mi * AM), a_r), b.add(a_c, ks)], mi * AM, b)
            afr.append(pack(ldmatrix_x4(amem, at_, b), "f16"))
        b0 = element_index(bv, [b.add(n0, b_r), b.add(b_c, ks)], b)
        # One B load feeds two n-atoms of every m-atom: 16 A + 4 B registers live at a time.
        for p in range(tn // 2):
            row = p * 2 * AN
            at_ = shifted(bv, b0, [b.add(b.add(n0, row), b_r), b.add(b_c, ks)], row, b)
            regs = ldmatrix_x4(bmem, at_, b)
            for ni, bregs in ((2 * p, regs[0:2]), (2 * p + 1, regs[2:4])):
                for mi in range(tm):
                    i = mi + tm * ni
                    values[i] = mma_sync(afr[mi], bregs, values[i])
    acc.values = values
    if barriers:
        gpu.BarrierOp()


def store(op: ir.Operation, acc: Frag | Deferred, view: View, tid: ir.Value, threads: int) -> None:
    """Store the accumulator (converted) into a global tile: pairs c(2i), c(2i+1) are adjacent.
    A deferred value (an epilogue's loads and math) is computed chunk by chunk as it is stored."""
    part = acc.part
    assert isinstance(part, MmaPartition)
    if view.static_shape(op) != part.block:
        raise LoweringError(op, f"storing a {part.block} tile into a {tuple(view.shape)} view")
    b = IndexBuilder()
    at = Lanes.of(tid, part, b)
    g, t2 = b.div(at.lane, 4), b.mul(b.rem(at.lane, 4), 2)
    pm, pn = part.piece
    tm, tn = part.tiles
    m0, n0 = b.add(b.mul(at.wm, pm), g), b.add(b.mul(at.wn, pn), t2)
    whole = Partition(part.block, 1, 2, threads)
    side = Side.of(view, whole)  # pairs where the strides and offset keep them aligned

    def version(guarded: bool) -> list[ir.Value]:
        ev = Evaluation(guarded)
        for ni in range(tn):
            for mi in range(tm):
                values = [convert(v, view.elem) for v in chunk_values(acc, mi + tm * ni, ev)]
                for h in range(2):
                    at_ = [b.add(m0, mi * AM + 8 * h), b.add(n0, ni * AN)]
                    vals = values[2 * h : 2 * h + 2]
                    write_pair(view, at_, vals, side.width == 2, guarded, b)
        return []

    if_else(
        fast_path(acc, side.fast(whole, b), b),
        [],
        lambda: version(False),
        lambda: version(True),
    )


def write_pair(
    view: View, at: list[Term], vals: list[ir.Value], paired: bool, guarded: bool, b: IndexBuilder
) -> None:
    if not guarded and paired:
        width = 2 * vals[0].type.width // 8  # the pair's bytes: the fast path checked them
        llvm.StoreOp(pair(vals[0], vals[1]), element_address(view, at, b), alignment=width)
        return
    for e, v in enumerate(vals):
        here = [at[0], b.add(at[1], e)]

        def put(here: list[Term] = here, v: ir.Value = v) -> None:
            llvm.StoreOp(v, element_address(view, here, b))

        when(in_bounds(view, here, b) if guarded else True, put)


class CarriedLoops:
    """scf.for loops whose gemm accumulates into a fragment made outside: the fragment's
    values become iter_args (the loop is rebuilt at its first tile op, yields after its last).
    """

    def __init__(self, ops: list[ir.Operation]) -> None:
        self.loops: list[ir.Operation] = []
        self.of: list[list[int]] = []  # per op (by position): enclosing loops, outermost first
        self.accs: dict[int, list[ir.Value]] = {}
        self.last: dict[int, int] = {}
        self.open: dict[int, tuple[ir.Operation, list[Frag]]] = {}
        for n, op in enumerate(ops):
            chain, p = [], op.parent
            while p is not None and p.name != "func.func":
                if p.name == "scf.for":
                    chain.append(self.number(p))
                p = p.parent
            self.of.append(chain[::-1])
            for loop in chain:
                self.last[loop] = n
            if op.name == "tile.gemm":
                acc = op.operands[3]
                for loop in chain:
                    if not self.inside(acc, self.loops[loop]):
                        self.accs.setdefault(loop, []).append(acc)

    def number(self, loop: ir.Operation) -> int:
        for k, known in enumerate(self.loops):
            if known == loop:
                return k
        self.loops.append(loop)
        return len(self.loops) - 1

    @staticmethod
    def inside(value: ir.Value, loop: ir.Operation) -> bool:
        owner = value.owner
        p = owner.parent if isinstance(owner, ir.Operation | ir.OpView) else owner.owner
        while p is not None and p.name != "func.func":
            if p == loop:
                return True
            p = p.parent
        return False

    def enter(self, n: int, frags: dict[ir.Value, object]) -> None:
        """Before op n: rebuild each loop around it that carries an accumulator, once."""
        for loop in self.of[n]:
            if loop not in self.accs or loop in self.open:
                continue
            carried = [frags.get(v) for v in dict.fromkeys(self.accs[loop])]
            if not all(isinstance(f, Frag) for f in carried):
                raise LoweringError(self.loops[loop], "gemm accumulator is not a lowered fragment")
            self.open[loop] = (rebuild(self.loops[loop], carried), carried)

    def leave(self, n: int) -> None:
        """After op n: yield the accumulators of every loop whose last tile op it was."""
        for loop in reversed(self.of[n]):
            if self.last[loop] != n or loop not in self.open:
                continue
            new, carried = self.open.pop(loop)
            body = new.regions[0].blocks[0]
            list(body.operations)[-1].erase()
            with ir.InsertionPoint(body), new.location:
                scf.YieldOp([v for f in carried for row in f.values for v in row])
            results = iter(new.results)
            for f in carried:
                f.values = [[next(results) for _ in row] for row in f.values]


def rebuild(loop: ir.Operation, carried: list[Frag]) -> ir.Operation:
    """The same loop with the fragments' values as iter_args; the old loop is erased."""
    if len(loop.operands) != 3:
        raise LoweringError(loop, "a loop around gemm cannot carry values of its own yet")
    inits = [v for f in carried for row in f.values for v in row]
    with ir.InsertionPoint(loop), loop.location:
        new = scf.ForOp(loop.operands[0], loop.operands[1], loop.operands[2], inits)
    with ir.InsertionPoint(new.body), loop.location:
        placeholder = scf.YieldOp([])
    old = loop.regions[0].blocks[0]
    for o in list(old.operations)[:-1]:
        o.move_before(placeholder)
    old.arguments[0].replace_all_uses_with(new.induction_variable)
    for name in list(loop.attributes):
        new.operation.attributes[name] = loop.attributes[name]
    loop.erase()
    args = iter(new.inner_iter_args)
    for f in carried:
        f.values = [[next(args) for _ in row] for row in f.values]
    return new.operation

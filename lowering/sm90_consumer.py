"""The consumers' side of a warp-specialised SM90 kernel: accumulators, wgmma over the ring's
stages, epilogue values and the store (methods of `convert_tile_sm90.Sm90Kernel`).

A consumer's pipelined loop waits for each stage, issues its wgmmas as one group, keeps that
group in flight and releases the stage the group before read (`gemm`); the accumulators are
the loop's iter_args (`carry`), drained and released after it (`drain`). Register tensors
computed from them (`load(..., like = acc)`, elementwise math) are `sm90_values` functions
evaluated where `store` writes them, through the `sm90_epilogue` chunks.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm

from tilec import smem
from tilec.binding import attr_number
from tilec.lowering import (
    IndexBuilder,
    LoweringError,
    Term,
    sm90_epilogue,
    sm90_split,
    sm90_values,
    sm90_wgmma,
)
from tilec.lowering.sm90_loops import index, trips
from tilec.lowering.sm90_sources import box_origin, tensor_of
from tilec.lowering.sm90_tma import SwizzledRows
from tilec.lowering.tile_access import if_else
from tilec.lowering.tile_fragments import constant
from tilec.lowering.tile_views import View, elem_bytes, gep, tensor_type


class ConsumerOps:
    """The consumers' lowerings; `Sm90Kernel` holds the state they read."""

    def fragment(self, op: ir.Operation, b: IndexBuilder) -> None:
        block = tuple(ir.DenseI64ArrayAttr(op.attributes["block_shape"]))
        wm, wn = self.tiling
        if len(block) != 2 or block[0] % (64 * wm) or block[1] % (self.atom.n * wn):
            raise LoweringError(
                op,
                f"a {block} accumulator does not tile by {wm}x{wn} warp groups of 64x{self.atom.n}",
            )
        self.block = block
        frag = op.results[0]
        self.accs[frag] = []
        self.values[frag] = sm90_values.of_accumulators(lambda: self.accs[frag])

    def fill(self, op: ir.Operation, b: IndexBuilder) -> None:
        value = ir.FloatAttr(op.attributes["value"]).value
        mt, nt = self.subtiles()
        count = mt * nt
        self.accs[op.operands[0]] = [sm90_wgmma.filled(self.atom, value) for _ in range(count)]

    def consumer_index(self, b: IndexBuilder) -> ir.Value:
        first = min(self.warpgroups(self.roles["consumer"]))
        return arith.SubIOp(b.value(self.warpgroup), b.value(first)).result

    def uniform_index(self, b: IndexBuilder) -> ir.Value:
        """consumer_index, broadcast from lane 0 (`shfl.sync.idx`, as CUTLASS does): the same
        number, but one ptxas knows every lane of the warp holds. A branch on a value computed
        from the thread index is divergent to ptxas, and one between wgmmas that share
        accumulators makes it serialise them (its C7520 note, about half the speed measured)."""
        i32 = ir.IntegerType.get_signless(32)
        lane0, width = constant(i32, 0), constant(i32, 32)
        mine = arith.IndexCastOp(i32, self.consumer_index(b)).result
        shuffled = gpu.ShuffleOp(mine, lane0, width, gpu.ShuffleMode.IDX).shuffleResult
        return arith.IndexCastOp(ir.IndexType.get(), shuffled).result

    def place(self, b: IndexBuilder) -> Term:
        """The consumer group's place among those that split a tile (0 with ping-pong: each
        group holds whole tiles)."""
        return 0 if self.pingpong else self.consumer_index(b)

    def gemm(self, op: ir.Operation, b: IndexBuilder) -> None:
        """Wait for the stage, issue its wgmmas as one group, keep it in flight, release the
        stage the group before read."""
        loop = self.loops.pipelined(op)
        frag = op.operands[3]
        counter = self.counter(loop, "consumer", b)
        stage = self.ring.wait_full(counter, b)
        (oa, ra), (ob, rb) = self.slots_of(op, 1), self.slots_of(op, 2)
        if ra.cols != rb.cols or ra.elem_bytes != rb.elem_bytes:
            raise LoweringError(
                op, f"A and B tiles differ along K: {ra.cols} vs {rb.cols} elements"
            )
        wm, _ = self.tiling
        mt, nt = self.subtiles()
        cw = self.place(b)
        here = b.mul(stage, self.stage_bytes)
        i8 = ir.IntegerType.get_signless(8)
        a_rows, b_rows = b.mul(b.rem(cw, wm), mt * 64), b.mul(b.div(cw, wm), nt * self.atom.n)
        base_a = gep(self.base, b.add(b.add(here, oa), mn_bytes(ra, a_rows, b)), i8, b)
        base_b = gep(self.base, b.add(b.add(here, ob), mn_bytes(rb, b_rows, b)), i8, b)
        desc_a, desc_b = sm90_wgmma.descriptor(base_a, ra), sm90_wgmma.descriptor(base_b, rb)
        accs = self.accs[frag]
        step = self.atom.k  # K elements per wgmma
        nvvm.WgmmaFenceAlignedOp()
        for kk in range(ra.cols // self.atom.k):
            for mi in range(mt):
                da = sm90_wgmma.advanced(desc_a, ra.mn_offset(mi * 64) + ra.k_offset(kk * step))
                for ni in range(nt):
                    db = sm90_wgmma.advanced(
                        desc_b, rb.mn_offset(ni * self.atom.n) + rb.k_offset(kk * step)
                    )
                    accs[mi * nt + ni] = sm90_wgmma.mma(
                        self.atom, accs[mi * nt + ni], da, db, (ra.mn_major, rb.mn_major)
                    )
        nvvm.WgmmaGroupSyncAlignedOp()
        nvvm.WgmmaWaitGroupSyncOp(1)
        later = arith.CmpIOp(arith.CmpIPredicate.ugt, b.value(index(loop, b)), b.value(0)).result
        self.release_if(later, arith.SubIOp(b.value(counter), b.value(1)).result)
        self.loops.after_loop(loop, lambda: self.drain(loop))

    def carry(self, gemm: ir.Operation) -> None:
        """The gemm's loop rebuilt with its accumulator as iter_args."""
        frag = gemm.operands[3]
        if frag not in self.accs or not self.accs[frag]:
            raise LoweringError(gemm, "gemm accumulates into a fragment filled before its loop")
        self.loops.carry(self.loops.pipelined(gemm), [frag], self.accs)

    def release_if(self, cond: ir.Value, counter: ir.Value) -> None:
        def release() -> list:
            self.ring.release(counter, IndexBuilder())
            return []

        if_else(cond, [], release, lambda: [])

    def drain(self, loop: ir.Operation) -> None:
        """After a consumer loop: wait for its last wgmma group, release the last stage."""
        b = IndexBuilder()
        if self.turns is not None:  # the wgmmas are issued: the other group's turn
            self.turns.hand_over()
        nvvm.WgmmaWaitGroupSyncOp(0)
        end = self.counter(loop, "consumer", b, at_end=True)
        ran = arith.CmpIOp(arith.CmpIPredicate.sgt, b.value(trips(loop, b)), b.value(0)).result
        self.release_if(ran, arith.SubIOp(b.value(end), b.value(1)).result)

    def subtiles(self) -> tuple[int, int]:
        """wgmma tiles per consumer warp group: (along M, along N)."""
        wm, wn = self.tiling
        return self.block[0] // (64 * wm), self.block[1] // (self.atom.n * wn)

    def slots_of(self, op: ir.Operation, operand: int) -> tuple[int, SwizzledRows]:
        value = op.operands[operand]
        if value not in self.slots:
            raise LoweringError(op, "a wgmma operand must be a buffer the producer fills by TMA")
        return self.slots[value]

    def store(self, op: ir.Operation, b: IndexBuilder) -> None:
        """The accumulators into a global tile, converted: through shared chunks and TMA
        stores (`epilogue=tma`, a 16-bit tile of a kernel tensor), else pairs of adjacent
        columns stored from registers."""
        if op.operands[0] not in self.values:
            raise LoweringError(op, "store of a register tensor not in the accumulator's layout")
        view = self.view(op, op.operands[1])
        if tuple(view.shape) != self.block:
            raise LoweringError(
                op, f"storing a {self.block} accumulator into a {tuple(view.shape)} tile"
            )
        split = self.split_around(op)
        if split is None:
            self.store_tile(op, view, b)
            return
        if len(self.accs) != 1:
            raise LoweringError(op, "split_tail sums one accumulator over a tile's parts")
        frag, groups = next(iter(self.accs)), self.warpgroups(self.roles["consumer"])
        before = self.accs[frag]
        if self.pingpong:  # a group holds the unit: its 128 threads, its epilogue barrier
            thread, threads, ident = b.rem(self.tid, 128), 128, b.add(self.consumer_index(b), 1)
        else:  # the consumer groups share it: all their threads, the barrier after theirs
            thread, threads = b.sub(self.tid, min(groups) * 128), len(groups) * 128
            ident = 1 + len(groups)
        first = arith.CmpIOp(arith.CmpIPredicate.eq, b.value(thread), b.value(0)).result
        parts = sm90_split.Parts(before, self.atom.regs, thread, threads, first, ident)

        def store(summed: list[ir.Value]) -> None:
            self.accs[frag] = summed
            self.store_tile(op, view, IndexBuilder())

        pointers = sm90_split.workspace(self.module, self.name, parts.slot_bytes)
        sm90_split.settle(split, parts, pointers, store)
        self.accs[frag] = before

    def store_tile(self, op: ir.Operation, view: View, b: IndexBuilder) -> None:
        wm, _ = self.tiling
        mt, nt = self.subtiles()
        cw = self.place(b)
        rows, cols = b.mul(b.rem(cw, wm), mt * 64), b.mul(b.div(cw, wm), nt * self.atom.n)
        value = self.values[op.operands[0]]
        if self.tma_store is None:
            sm90_epilogue.direct(view, value, self.atom, (mt, nt), (rows, cols), self.tid)
            return
        chunk = 128 // elem_bytes(view.elem)  # columns of a 128-byte chunk row
        if elem_bytes(view.elem) != 2 or self.atom.n % chunk:
            raise LoweringError(
                op,
                f"a TMA-stored output goes out in chunks of 128-byte rows: 16-bit elements "
                f"and a wgmma n that is a multiple of {chunk} (got {view.elem}, n = {self.atom.n})",
            )
        _, origin, _, _ = box_origin(self.tile_ops[op.operands[1]], b)
        outer, first = origin[:-2], origin[-2:]
        at = (b.add(first[0], rows), b.add(first[1], cols))
        # The map is optional: rows whose stride is not a multiple of 16 bytes get none, and
        # the chunks are copied out by the threads instead.
        i64 = ir.IntegerType.get_signless(64)
        address = llvm.PtrToIntOp(i64, self.store_descriptor).result
        made = arith.CmpIOp(arith.CmpIPredicate.ne, address, constant(i64, 0)).result
        epilogue = sm90_epilogue.Epilogue(
            self.atom, self.epilogue_base, self.consumer_index(b), self.tid, self.leader(b),
            self.store_descriptor, made, view, (rows, cols), outer,
        )  # fmt: skip
        epilogue.store(value, (mt, nt), at, view.elem, self.loading.get(op.operands[0]))

    def register(self, op: ir.Operation, value: ir.Value) -> sm90_values.Value:
        """A register operand (in the accumulator's layout), or a scalar broadcast."""
        if value in self.loading:
            views = self.loading.setdefault(op.results[0], [])
            views.extend(v for v in self.loading[value] if v not in views)
        if tensor_type(value.type) is None:
            return sm90_values.scalar(value)
        if value not in self.values:
            raise LoweringError(op, "a register tensor here must be in the accumulator's layout")
        return self.values[value]

    def load(self, op: ir.Operation, b: IndexBuilder) -> None:
        """load(tile, like = acc): each element where the accumulator holds it."""
        if len(op.operands) != 2 or op.operands[1] not in self.values:
            raise LoweringError(op, "a load in a consumer needs like = <the accumulator>")
        view = self.view(op, op.operands[0])
        if tuple(view.shape) != self.block:
            raise LoweringError(op, f"loading a {tuple(view.shape)} tile like a {self.block} one")
        attr = op.attributes["other"]
        other = attr_number(attr)
        loaded = sm90_values.load(view, other, b)
        elem = tensor_type(op.results[0].type).elem
        self.values[op.results[0]] = sm90_values.converted(loaded, elem)
        self.loading[op.results[0]] = [view]

    def convert(self, op: ir.Operation, b: IndexBuilder) -> None:
        elem = tensor_type(op.results[0].type).elem
        self.values[op.results[0]] = sm90_values.converted(self.register(op, op.operands[0]), elem)

    def unary(self, op: ir.Operation, b: IndexBuilder) -> None:
        kind = ir.StringAttr(op.attributes["op"]).value
        self.values[op.results[0]] = sm90_values.unary(op, kind, self.register(op, op.operands[0]))

    def binary(self, op: ir.Operation, b: IndexBuilder) -> None:
        kind = ir.StringAttr(op.attributes["op"]).value
        x, y = (self.register(op, v) for v in op.operands)
        rhs = op.operands[1]
        scalar = rhs if tensor_type(rhs.type) is None else None
        self.values[op.results[0]] = sm90_values.binary_of(op, kind, x, y, scalar)

    def plan_epilogue(self, ops: list[ir.Operation]) -> None:
        """Whether the tile store goes through TMA (`epilogue=tma` and a 16-bit tile of a
        kernel tensor), and its tensor map."""
        stores = [o for o in ops if o.name == "tile.store"]
        self.epilogue_bytes, self.tma_store = 0, None
        if self.mode != "tma" or len(stores) != 1:
            return
        t = tensor_type(stores[0].operands[1].type)
        tensor = tensor_of(stores[0].operands[1])
        if tensor is None or elem_bytes(t.elem) != 2:
            return
        groups = len(self.warpgroups(self.roles["consumer"]))
        self.epilogue_bytes = smem.epilogue_bytes(groups)
        self.tma_store = ir.StringAttr(tensor.attributes["name"]).value
        self.store_rank = len(tensor_type(tensor.results[0].type).layout.shape)


def mn_bytes(rows: SwizzledRows, elems: Term, b: IndexBuilder) -> Term:
    """`rows.mn_offset` of a run-time element count (a warp group's first row: a multiple of
    64, so of any swizzle's width)."""
    if rows.mn_major:
        return b.mul(b.div(elems, rows.width), rows.chunk_bytes)
    return b.mul(elems, rows.cols * rows.elem_bytes)

r"""Passes: `convert-tile-mma`, MMA fragments and gemms become mma.sync or wgmma, by atom family.

A rung of the lowering (after convert-tile-views, whose casts it reads; before
convert-tile-to-gpu, which carries register tensors through loops). It lowers a kernel's
`tile.tiled_mma` (its type says it all), the accumulators an MMA partitions (`tile.fragment`
with an MMA operand, and the `tile.fill` of any tensor spread as an MMA's C), and each
`tile.gemm` by its atom's family (the name up to its first dot) from `FAMILIES`:

    sm80    ldmatrix.x4 + mma.sync m16n8k16 (tile_mma), A from registers when it is a
            register tensor (tile_mma_regs: attention's P), a prefetching gemm loading each
            k-step's fragments one k-step early
    sm90    wgmma from the stage of a TMA ring tile-ring made the gemm read, in a
            warp_specialize consumer (tile_mma_wgmma); `wait_group 0` after its loop

An atom of another family is a located error. The accumulator is each thread's scalars as a cast
(tile_values); a gemm in its value form is a new cast, an in-place one (outside loops) a new
cast its later readers read, and an accumulator that a loop carries is read as a pending cast of
its iter_arg, which convert-tile-to-gpu reconciles when it rebuilds the loop:

    %c = "tile.gemm"(%mma, %a, %b, %acc) : (...) -> !tile.frag<f32, "(4,2,4):(1,4,8)", TV>
  →
    %f0, %f1, %f2, %f3 = nvvm.ldmatrix %p {num = 4 : i32, layout = #nvvm.mma_layout<row>} ...
    %d = nvvm.mma.sync A[%f0, ...] B[...] C[...] {shape = #nvvm.shape<m = 16, n = 8, k = 16>} ...
    %c = builtin.unrealized_conversion_cast %d0, ... : f32, ... to !tile.frag<...>

A prefetching gemm (tile-pipeline's `tile.prefetch`) reads k-step 0 of its first stage before
its loop; the loop is rebuilt here to carry those fragments (i32 iter_args after its own) and
each iteration loads the next stage's k-step 0 before its last mma.sync
(tile_mma_gemm.gemm_prefetch), which its yield passes on.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from mlir import ir
from mlir.dialects import nvvm, scf

from tilec.binding import attr_number, op_id
from tilec.dialects.tile.types import MmaType
from tilec.lowering import (
    IndexBuilder,
    LoweringError,
    Term,
    sm90_waits,
    tile_carry,
    tile_mma,
    tile_mma_gemm,
    tile_mma_regs,
    tile_mma_wgmma,
    tile_views,
)
from tilec.lowering.tile_carry import CARRY_FIRST
from tilec.lowering.tile_fragments import Frag
from tilec.lowering.tile_loops import moved_loop
from tilec.lowering.tile_rungs import Rung, lower_kernel
from tilec.lowering.tile_spreads import spread_of_type
from tilec.lowering.tile_values import cut_of
from tilec.lowering.tile_views import View
from tilec.passes import tile_pipeline
from tilec.passes.base import Pass, register


class Mma(Rung):
    """The MMA ops of one kernel, lowered in program order."""

    def __init__(self, func: ir.Operation) -> None:
        super().__init__(func)
        # Each prefetching gemm's next k-step fragments and the rebuilt loop that carries them;
        # how many of a loop's prefetching gemms are still to lower.
        # (Keyed by binding.op_id: an op's hash follows its operands, which change.)
        self.ahead: dict[int, tuple[Frag, ir.Operation]] = {}
        self.waiting: dict[int, int] = {}
        self.drained: set[int] = set()  # loops of wgmma gemms, waited for after them
        self.deferred = sm90_waits.deferred_gemms(func)  # waited for where they are read

    def lower(self, op: ir.Operation) -> None:
        self.enter(op)
        if op.name == "scf.for":
            self.prefetching_loop(op)
        elif op.name == "tile.fragment":
            self.put(op, tile_mma.fragment(op, op.operands[0].type, self.threads))
        elif op.name == "tile.fill":
            self.fill(op)
        elif op.name == "tile.gemm":
            self.gemm(op)
        # tile.tiled_mma: its type says it all (the fragments and gemms read it)

    def fill(self, op: ir.Operation) -> None:
        target = op.operands[0]
        value = self.frag(op, target)  # built afresh from its cast: fill may replace its values
        tile_mma.fill(value, attr_number(op.attributes["value"]))
        self.values.update(op, target, value)

    def gemm(self, op: ir.Operation) -> None:
        family = MmaType.of(op.operands[0].type)
        lowering = FAMILIES.get(family.atom.split(".")[0]) if family else None
        if lowering is None:
            atom = family.atom if family else str(op.operands[0].type)
            raise LoweringError(op, f"mma atom '{atom}' {UNLOWERED}")
        acc = lowering(self, op)
        if acc is None:  # put where it is waited for (sm90, a deferred wait)
            return
        if op.results:
            self.put(op, acc)
        else:  # in place: what it reads from here on
            self.values.update(op, op.operands[3], acc)

    def sm80(self, op: ir.Operation) -> Frag:
        """acc += a @ bᵀ by mma.sync: A and B by ldmatrix (A from registers when it is a
        register tensor), or, prefetching, each k-step's fragments one k-step early."""
        acc = self.accumulator(op, op.operands[3])
        if tile_pipeline.PREFETCH in op.attributes:
            frags, loop = self.ahead.get(op_id(op), (None, None))
            if not op.results or frags is None:
                raise LoweringError(op, CARRY_FIRST)
            tiles = (self.view(op, op.operands[1]), self.view(op, op.operands[2]))
            following = (self.stage_view(op, 1, 1), self.stage_view(op, 2, 1))
            pending = ir.IntegerAttr(op.attributes[tile_pipeline.PREFETCH]).value
            tile_mma_gemm.gemm_prefetch(op, tiles, following, acc, frags, self.tid, pending)
            self.waiting[op_id(loop)] -= 1
            if not self.waiting[op_id(loop)]:
                self.pass_on(loop)
            return acc
        if not op.results and tile_carry.updated_across_loop(op):
            raise LoweringError(op, CARRY_FIRST)
        barriers = tile_pipeline.PIPELINED not in op.attributes
        a, bv = self.operand(op, op.operands[1]), self.view(op, op.operands[2])
        if isinstance(a, Frag):  # an accumulator as A: the FA2 trick
            tile_mma_regs.gemm_register_a(op, a, bv, acc, self.tid, barriers)
        else:
            tile_mma_gemm.gemm(op, self.view(op, op.operands[1]), bv, acc, self.tid, barriers)
        return acc

    def sm90(self, op: ir.Operation) -> Frag | None:
        """acc += a @ bᵀ by wgmma from a TMA ring's stage (tile_mma_wgmma), A from registers
        when it is a register tensor (sm90_regs: attention's P); waited for at once when
        something but a gemm reads the result next (sm90_waits.read_next), right before
        that read where gemms overlap it (sm90_waits.deferred_gemms: its value is put there,
        and None returned), else the loop's last group after it. A loop-carried accumulator
        that the next iteration reads before its gemms is waited for there (`carried_reads`,
        once the kernel's gemms are lowered)."""
        acc = self.accumulator(op, op.operands[3])
        a = self.operand(op, op.operands[1])
        a = a if isinstance(a, Frag) else self.view(op, op.operands[1])
        bv = self.view(op, op.operands[2])
        later = op_id(op) in self.deferred and sm90_waits.deferred_wait(op)
        pending = 0 if sm90_waits.read_next(op) and not later else 1
        out = tile_mma_wgmma.gemm(op, a, bv, acc, self.first_tid, self.role, pending)
        if later:  # waited for (and fenced) right before its first reader
            reader, groups = later
            with ir.InsertionPoint(reader), op.location:
                nvvm.WgmmaWaitGroupSyncOp(groups)
                if op.results:
                    self.put(op, tile_mma_wgmma.fenced(out))
                else:
                    self.values.update(op, op.operands[3], tile_mma_wgmma.fenced(out))
            out = None
        loop = op.parent
        wait = tile_mma_wgmma.drain_after(loop, self.drained)
        if wait is not None:  # what reads the loop's accumulators reads them after the wait
            for result in loop.results:
                if not mma_spread(result, self.threads):
                    continue
                with ir.InsertionPoint(tile_mma_wgmma.after_op(wait)), loop.location:
                    whole = self.frag(wait, result)
                    before = list(result.uses)[-1].owner  # the pending cast just made
                    self.values.update(before, result, tile_mma_wgmma.fenced(whole))
        return out

    def accumulator(self, gemm: ir.Operation, value: ir.Value) -> Frag:
        """A gemm's accumulator `value`, its partition naming the atom of the gemm's tiled MMA
        (operand 0: the A/B element type, which the accumulator's type does not hold), its
        values a list of their own for the gemm to replace."""
        acc = self.frag(gemm, value)
        block = acc.part.block if isinstance(acc.part, tile_mma.MmaPartition) else ()
        part = tile_mma.mma_partition(gemm, gemm.operands[0].type, block)
        if part != acc.part:
            raise LoweringError(gemm, "the accumulator is not spread as this gemm's MMA's C")
        return Frag(part, acc.elem, [list(row) for row in acc.values])

    def stage_view(self, gemm: ir.Operation, operand: int, step: int | None) -> View:
        """Of a prefetching gemm's operand (one stage of a pipelined buffer, as tile-pipeline
        slices it): stage 0 (`step` None), or the stage `step` after the one it reads."""
        cut = cut_of(gemm.operands[operand])
        index = next((c for c in cut[1] if not isinstance(c, int | None)), None) if cut else None
        if index is None:
            raise LoweringError(gemm, "a prefetching gemm reads stages of pipelined buffers")
        staged = self.view(gemm, cut[0])
        b, stages = IndexBuilder(), staged.shape[-1]
        stage: Term = 0 if step is None else b.rem(b.add(index, step), stages)
        return tile_views.slice_at(staged, [None] * (len(staged.shape) - 1) + [stage], b)

    def prefetching_loop(self, loop: ir.Operation) -> None:
        """Before a loop that holds prefetching gemms: k-step 0 of each one's first stage; the
        loop rebuilt to carry those fragments after its own iter_args (the gemm passes on the
        next stage's through its yield, `finish`)."""
        preloads = []
        for gemm in tile_carry.prefetching(loop):
            acc = gemm.operands[3]
            if not (
                isinstance(acc, ir.BlockArgument) and acc.owner.owner.operation == loop.operation
            ):
                raise LoweringError(gemm, CARRY_FIRST)
            init = self.accumulator(gemm, loop.operands[3 + acc.arg_number - 1])
            a, bv = self.stage_view(gemm, 1, None), self.stage_view(gemm, 2, None)
            with ir.InsertionPoint(loop), gemm.location:
                preloads.append((gemm, tile_mma_gemm.preload(gemm, a, bv, init, self.tid)))
        own = list(loop.operands)[3:]
        extra = [v for _, f in preloads for row in f.values for v in row]
        new = moved_loop(loop, own + extra, keep_yield=True)
        inner = list(new.inner_iter_args)
        for old, arg in zip(list(loop.regions[0].blocks[0].arguments)[1:], inner, strict=False):
            old.replace_all_uses_with(arg)
        rest = iter(inner[len(own) :])
        for gemm, f in preloads:
            f.values = [[next(rest) for _ in row] for row in f.values]
            self.ahead[op_id(gemm)] = (f, new.operation)
        self.waiting[op_id(new)] = len(preloads)
        for old, result in zip(loop.results, new.results, strict=False):
            old.replace_all_uses_with(result)

    def pass_on(self, loop: ir.Operation) -> None:
        """A rebuilt loop's yield, once its prefetching gemms are lowered: it passes on their
        next stage's fragments after its own values."""
        terminator = list(loop.regions[0].blocks[0].operations)[-1]
        extra = [v for f, at in self.ahead.values() if at == loop for row in f.values for v in row]
        with ir.InsertionPoint(terminator), terminator.location:
            scf.YieldOp([*terminator.operands, *extra])
        terminator.erase()


Gemm = Callable[[Mma, ir.Operation], Frag]
# Gemm lowerings by the atom's family; any other is refused (UNLOWERED).
FAMILIES: dict[str, Gemm] = {"sm80": Mma.sm80, "sm90": Mma.sm90}
UNLOWERED = "is not lowered by convert-tile-mma (lowered: sm80.*, sm90.*)"


def mma_spread(value: ir.Value, threads: int) -> bool:
    """Whether a register tensor's type spreads it as an MMA's C (its TV layout)."""
    try:
        return isinstance(spread_of_type(None, value, threads), tile_mma.MmaPartition)
    except LoweringError:  # no TV layout yet, or none that is a spread
        return False


def lowered_here(op: ir.Operation, threads: int) -> bool:
    """Tiled MMAs, gemms, MMA fragments and their fills, loops holding a prefetching gemm."""
    name = op.name
    if name in ("tile.tiled_mma", "tile.gemm"):
        return True
    if name == "tile.fragment":
        return len(op.operands) > 0
    if name == "tile.fill":
        return mma_spread(op.operands[0], threads)
    return name == "scf.for" and bool(tile_carry.prefetching(op))


@register
class ConvertTileMma(Pass):
    """Lower MMA fragments and gemms to ldmatrix + mma.sync, by atom family.

    See the module's docstring; convert-tile-views must run first, convert-tile-to-gpu after.
    """

    name = "convert-tile-mma"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, lower_mma)


def lower_mma(func: ir.Operation) -> None:
    """Lower one kernel's MMA ops in place (a LoweringError says why one cannot be)."""
    dims = func.attributes["tile.threads"] if "tile.threads" in func.attributes else None
    threads = prod(ir.DenseI64ArrayAttr(dims)) if dims is not None else 0

    def rung() -> Callable[[ir.Operation], None]:
        return Mma(func).lower

    select = lambda op: lowered_here(op, threads)  # noqa: E731
    carried = sm90_waits.carried_casts(func)  # read by other rungs: before the gemms lower
    lower_kernel(func, select, rung, distributed=True)
    sm90_waits.carried_reads(carried)

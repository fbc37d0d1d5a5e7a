"""Passes (lowered stage): `tile-pipeline`, multistage cp.async software pipelining of loops."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, nvvm

from tilec import smem
from tilec.binding import inside, op_id, walk
from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.ir import make
from tilec.lowering import LoweringError, after
from tilec.lowering.tile_access import when
from tilec.lowering.tile_shared import buffer_extent
from tilec.lowering.tile_views import elem_bytes, tensor_type
from tilec.passes.base import Pass, register
from tilec.targets import smem_optin

# Marks copies that only issue (no wait before the next memory op) and gemms that need no
# barriers of their own: the pipeline's wait + barrier at the top of each iteration covers both.
PIPELINED = "tile.pipelined"
# On a tile.gemm the pass lets own the loop's wait + barrier: the cp.async groups that wait
# may leave pending (`tile_mma_gemm.gemm_prefetch` lowers it).
PREFETCH = "tile.prefetch"


def is_async_copy(op: ir.Operation) -> bool:
    return op.name == "tile.copy" and ir.StringAttr(op.attributes["atom"]).value.startswith(
        "cp_async"
    )


def staged_type(op: ir.Operation, stages: int) -> tuple[ir.Type, int]:
    """The type of `stages` copies of a shared buffer, stage s at s * stride; and that stride.

    The stride is the planner's (`smem.stage_stride`: the buffer's span rounded up to the
    swizzle's period and 128 bytes), so a stage offset passes through the swizzle untouched
    and becomes a base-pointer offset:

        Sw<2,3,3> o 0 o (128,32):(32,1)  →  Sw<2,3,3> o 0 o (128,32,4):(32,1,4096)
    """
    t = tensor_type(op.results[0].type)
    lay = t.layout
    inner = lay.inner if isinstance(lay, A.ComposedLayout) else lay
    if not A.is_static(inner.shape) or not A.is_static(inner.stride):
        raise LoweringError(op, f"a pipelined shared buffer needs a static layout, got {lay}")
    buffer_extent(op, lay)  # a located error for what the planner cannot size
    stride = smem.stage_stride(lay, elem_bytes(t.elem))
    shape = inner.shape if A.is_tuple(inner.shape) else (inner.shape,)
    strides = inner.stride if A.is_tuple(inner.stride) else (inner.stride,)
    staged = A.Layout((*shape, stages), (*strides, stride))
    if isinstance(lay, A.ComposedLayout):
        staged = A.ComposedLayout(lay.outer, lay.offset, staged)
    text = f'!tile.tensor<{t.elem}, "shared", "{staged}">'
    return ir.Type.parse(text), stride


def index(value: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), value).result


class Pipeline:
    """One `scf.for {tile.stages = S}` loop whose body issues cp.async copies into buffers."""

    def __init__(self, loop: ir.Operation, stages: int) -> None:
        self.loop, self.stages = loop, stages
        self.body = loop.regions[0].blocks[0]
        self.iv = self.body.arguments[0]
        ops = list(self.body.operations)
        self.copies = [op for op in ops if is_async_copy(op)]
        self.buffers: list[ir.Operation] = []
        for c in self.copies:
            dst = c.operands[1].owner
            if not isinstance(dst, ir.Operation | ir.OpView) or dst.name != "tile.alloc_shared":
                raise LoweringError(c, "a pipelined copy must fill a tile.alloc_shared buffer")
            if inside(dst.operation, self.loop):
                raise LoweringError(c, "a pipelined buffer must be allocated before the loop")
            if dst.operation not in self.buffers:
                self.buffers.append(dst.operation)
        for buf in self.buffers:
            for use in buf.results[0].uses:
                if not inside(use.owner, self.loop):
                    raise LoweringError(
                        use.owner, f"shared buffer is pipelined by {stages} stages in a loop"
                    )

    def fitting_stages(self, limit: int) -> int:
        """The most stages (at most the requested, at least 2) whose buffers fit `limit` bytes,
        as the planner counts them (`smem.kernel_bytes`: the frontend's budget check too)."""
        func = self.loop.parent
        while func.name != "func.func":
            func = func.parent
        allocs: list[ir.Operation] = []
        walk(func, lambda op: allocs.append(op) if op.name == "tile.alloc_shared" else None)

        # (name, reused name, elements, stage stride or None when not pipelined here, bytes)
        facts = []
        for a in allocs:
            t = tensor_type(a.results[0].type)
            elems = buffer_extent(a, t.layout)[1]
            size = elem_bytes(t.elem)
            stride = smem.stage_stride(t.layout, size) if a in self.buffers else None
            reuse = ir.StringAttr(a.attributes["reuse"]).value if "reuse" in a.attributes else None
            facts.append((ir.StringAttr(a.attributes["name"]).value, reuse, elems, stride, size))

        def buffers(stages: int) -> list[smem.Buffer]:
            return [
                smem.Buffer(
                    name,
                    size * (elems if stride is None else smem.staged_elems(elems, stride, stages)),
                    reuse,
                )
                for name, reuse, elems, stride, size in facts
            ]

        stages = self.stages
        while stages > 2 and smem.kernel_bytes(buffers(stages)) > limit:
            stages -= 1
        return stages

    def chain(self, op: ir.Operation) -> list[ir.Operation]:
        """The ops of the body that `op`'s source operand depends on, in body order."""
        need: set[int] = set()  # binding.op_id of each
        todo = [op.operands[0]]
        while todo:
            v = todo.pop()
            owner = v.owner
            if isinstance(owner, ir.Operation | ir.OpView) and owner.operation.parent == self.loop:
                if op_id(owner) not in need:
                    need.add(op_id(owner))
                    todo.extend(owner.operation.operands)
        return [o for o in self.body.operations if op_id(o) in need]

    def prefetchable(self) -> ir.Operation | None:
        """The loop's one tile.gemm when it reads two pipelined buffers as its A and B and
        nothing else reads them: it can then own the wait + barrier (`tile_mma_gemm.gemm_prefetch`).
        """
        readers = [
            (use.owner, use.operand_number)
            for buf in self.buffers
            for use in buf.results[0].uses
            if not any(use.owner == c for c in self.copies)
        ]
        if len(self.buffers) != 2 or len(readers) != 2:
            return None
        (op, i), (other, j) = readers
        if op.name != "tile.gemm" or op != other or {i, j} != {1, 2}:
            return None
        if op.parent != self.loop:
            return None
        return op

    def guard(self, tile: ir.Value) -> ir.Value:
        return arith.CmpIOp(arith.CmpIPredicate.slt, tile, self.loop.operands[1]).result

    def clamped(self, tile: ir.Value) -> ir.Value | None:
        """min(tile, ub - 1) for a loop of step 1 (None for other steps): inside the loop, a
        tile past the last one may copy the last one again instead of branching around its
        copies, since the stage it fills is never read (docs/passes.md, tile-pipeline)."""
        if not unit_step(self.loop):
            return None
        last = arith.SubIOp(self.loop.operands[1], index(1)).result
        return arith.MinSIOp(tile, last).result

    def issue(
        self,
        tile: ir.Value,
        cond: ir.Value | bool,
        it: ir.Value,
        staged: dict[int, ir.Value],
    ) -> None:
        """Copies of tile `tile` (iteration `it`) into stage it mod S, only when `cond`."""
        when(cond, lambda: self.clone_copies(tile, it, staged))

    def clone_copies(self, tile: ir.Value, it: ir.Value, staged: dict[int, ir.Value]) -> None:
        """The loop's copies of tile `tile` into stage `it` mod S."""
        stage = arith.RemUIOp(it, index(self.stages)).result
        slot = {op_id(buf): self.slice(buf, staged[op_id(buf)], stage) for buf in self.buffers}
        for c in self.copies:
            mapping: dict[ir.Value, ir.Value] = {self.iv: tile}
            for o in [*self.chain(c), c]:
                new = o.clone()
                for i, v in enumerate(new.operands):
                    if v in mapping:
                        new.operands[i] = mapping[v]
                if o == c:
                    new.operands[1] = slot[op_id(c.operands[1].owner)]
                    new.attributes[PIPELINED] = ir.UnitAttr.get()
                for old, r in zip(o.results, new.results, strict=True):
                    mapping[old] = r

    @staticmethod
    def slice(buf: ir.Operation, staged: ir.Value, stage: ir.Value) -> ir.Value:
        """One stage of `staged`, typed as the original buffer."""
        t = buf.results[0].type
        rank = len(tensor_type(staged.type).layout.shape)
        coord = "(" + ",".join(["_"] * (rank - 1) + ["?"]) + ")"
        return ir.Operation.create(
            "tile.slice",
            results=[t],
            operands=[staged, stage],
            attributes={"coord": ir.StringAttr.get(coord)},
        ).result

    def run(self, prefetch: bool = False) -> None:
        s, loop = self.stages, self.loop
        lb, step = loop.operands[0], loop.operands[2]
        staged: dict[int, ir.Value] = {}  # by binding.op_id of the buffer's op
        for buf in self.buffers:
            typ, _ = staged_type(buf, s)
            with ir.InsertionPoint(buf), buf.location:
                layout = make(str(tensor_type(typ).layout)).result  # the staged layout
                new = ir.Operation.create(
                    "tile.alloc_shared",
                    results=[typ],
                    operands=[layout],
                    attributes=dict(buf.attributes),
                )
            staged[op_id(buf)] = new.result
        # Prologue: tiles 0..S-2, one group each (empty when the tile is past the trip count).
        with ir.InsertionPoint(loop), loop.location:
            tiles = [
                arith.AddIOp(lb, arith.MulIOp(step, index(p)).result).result for p in range(s - 1)
            ]
            conds = [self.guard(t) for t in tiles]
            for p in range(s - 1):
                self.issue(tiles[p], conds[p], index(p), staged)
                nvvm.CpAsyncCommitGroupOp()
        # Steady state: tile `it` has landed once at most S-2 younger groups are pending. A
        # prefetching gemm waits inside its last k-step for the next iteration's tile instead,
        # so tile 0's wait goes before the loop.
        gemm = self.prefetchable() if prefetch else None
        if gemm is not None:
            with ir.InsertionPoint(loop), loop.location:
                nvvm.CpAsyncWaitGroupOp(s - 2)
                ir.Operation.create("tile.barrier")
            gemm.attributes[PREFETCH] = ir.IntegerAttr.get(i64(), s - 2)
        first = list(self.body.operations)[0]
        with ir.InsertionPoint(first), loop.location:
            if gemm is None:
                nvvm.CpAsyncWaitGroupOp(s - 2)
                ir.Operation.create("tile.barrier")
            it = arith.DivUIOp(arith.SubIOp(self.iv, lb).result, step).result
            ahead = arith.AddIOp(self.iv, arith.MulIOp(step, index(s - 1)).result).result
            clamped = self.clamped(ahead)
            tile, cond = (ahead, self.guard(ahead)) if clamped is None else (clamped, True)
            self.issue(tile, cond, arith.AddIOp(it, index(s - 1)).result, staged)
            nvvm.CpAsyncCommitGroupOp()
            stage = arith.RemUIOp(it, index(s)).result
            reads = {op_id(b): self.slice(b, staged[op_id(b)], stage) for b in self.buffers}
        for c in self.copies:
            dead = [*self.chain(c)][::-1]
            c.erase()
            for o in dead:
                if all(not list(r.uses) for r in o.results):
                    o.erase()
        for buf in self.buffers:
            buf.results[0].replace_all_uses_with(reads[op_id(buf)])
            buf.erase()
        walk(loop, mark_gemm)
        # Drain: no copy may still be writing shared memory after the loop.
        with after(loop), loop.location:
            nvvm.CpAsyncWaitGroupOp(0)


def warp_specialized(op: ir.Operation) -> bool:
    """Whether `op` sits in a kernel's `warp_specialize` region (put on a TMA ring by tile-ring)."""
    parent = op.parent
    while parent is not None:
        if "tile.warp_specialize" in parent.attributes:
            return True
        parent = parent.parent
    return False


def target_smem_limit(loop: ir.Operation) -> int:
    """The opt-in shared memory limit (tilec.targets) of the target of the func.func around
    `loop`; targets not in the table, or kernels without one, keep to what every one allows."""
    func = loop.parent
    while func is not None and func.name != "func.func":
        func = func.parent
    if func is None or "tile.target" not in func.attributes:
        return smem_optin(None)
    return smem_optin(ir.StringAttr(func.attributes["tile.target"]).value)


def unit_step(loop: ir.Operation) -> bool:
    """Whether an scf.for steps by a constant 1."""
    step = loop.operands[2]
    return (
        isinstance(step, ir.OpResult)
        and step.owner.name == "arith.constant"
        and ir.IntegerAttr(step.owner.attributes["value"]).value == 1
    )


def mark_gemm(op: ir.Operation) -> None:
    if op.name == "tile.gemm":
        op.attributes[PIPELINED] = ir.UnitAttr.get()


def i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


@register
class TilePipeline(Pass):
    """Software-pipeline `scf.for {tile.stages = S}` loops that fill shared tiles by cp.async.

    Each buffer the loop copies into gets S stages; tiles 0..S-2 are issued before the loop,
    tile k+S-1 inside iteration k (guarded by k+S-1 < ub, committed as a group either way),
    and iteration k waits for all but S-2 groups before reading stage k mod S:

        scf.for %k = %c0 to %n step %c1 {
          "tile.copy"(%g, %sA) {atom = "cp_async.cg.16"} ...
          "tile.gemm"(%mma, %sA, %sB, %acc) ...
        } {tile.stages = 3 : i64}
      →
        %sA3 = "tile.alloc_shared"() ... "Sw<2,3,3> o 0 o (128,32,3):(32,1,4096)"
        scf.if (0 < %n) { "tile.copy"(%g0, stage 0) {tile.pipelined} } ; commit   (x S-1)
        scf.for %k ... {
          nvgpu.device_async_wait 1 ; "tile.barrier"
          scf.if (%k + 2 < %n) { "tile.copy"(%g, stage (k+2) mod 3) {tile.pipelined} }
          commit ; "tile.gemm"(%mma, stage k mod 3, ...) {tile.pipelined}
        }
        nvgpu.device_async_wait 0

    Loops with `tile.stages` of 1 or without cp.async copies are left alone.
    """

    name = "tile-pipeline"
    # Shared memory per block the stages may fill; 0: the kernel's `tile.target`'s opt-in
    # dynamic limit (outline-tile-kernels moves buffers past 48 KiB to dynamic shared memory).
    smem_limit: int = 0
    # Let a loop's lone gemm own the wait + barrier and load its fragments a k-step early; a
    # loop's `tile.prefetch_fragments` (the source's `pipeline(..., prefetch = 0 | 1)`) wins.
    # Off by default: measured neutral at BK = 32 and spilling at BK = 64 (docs/performance.md).
    prefetch: bool = False

    def run(self, module: ir.Operation) -> None:
        loops: list[ir.Operation] = []
        walk(module, lambda op: loops.append(op) if "tile.stages" in op.attributes else None)
        try:
            for loop in loops:
                self.pipeline(loop, self.smem_limit or target_smem_limit(loop), self.prefetch)
        except LoweringError as err:
            self.error(err.op, str(err))
            self.fail()

    @staticmethod
    def pipeline(loop: ir.Operation, smem_limit: int, prefetch: bool = False) -> None:
        attr = loop.attributes["tile.stages"]
        if loop.name != "scf.for" or not isinstance(attr, ir.IntegerAttr):
            raise LoweringError(loop, "tile.stages belongs on an scf.for, as an integer")
        stages = ir.IntegerAttr(attr).value
        if stages < 1:
            raise LoweringError(loop, f"tile.stages = {stages}: a pipeline needs at least 1 stage")
        if stages == 1 or len(loop.operands) < 3:  # lb, ub, step, then any loop-carried values
            return
        p = Pipeline(loop, stages)
        if not p.copies:
            if warp_specialized(loop):  # its roles' loops are tile-ring's mbarrier ring
                return
            raise LoweringError(
                loop,
                f"pipeline(..., stages = {stages}) multi-buffers the cp.async copies into shared "
                "buffers in its body, and this loop has none: copy(...) without an atom is "
                "synchronous (write copy<cp_async.cg.16>(...))",
            )
        if "tile.prefetch_fragments" in loop.attributes:  # the source's pipeline(prefetch = ...)
            prefetch = ir.IntegerAttr(loop.attributes["tile.prefetch_fragments"]).value != 0
        fits = p.fitting_stages(smem_limit)
        if fits < stages:
            # More stages than the target's shared memory holds: the launch would fail, so
            # pipeline as deep as fits and say so in the IR and in a warning.
            TilePipeline.warning(
                loop,
                f"tile-pipeline clamped the stages {stages} -> {fits}: {stages} do not fit "
                f"{smem_limit} bytes of shared memory",
            )
            loop.attributes["tile.stages_requested"] = attr
            loop.attributes["tile.stages_smem_limit"] = ir.IntegerAttr.get(attr.type, smem_limit)
            loop.attributes["tile.stages"] = ir.IntegerAttr.get(attr.type, fits)
            p.stages = fits
        if p.stages > 1:
            p.run(prefetch)

"""Passes (lowered stage): `pipeline-steady-state`, a pipelined loop's body as one basic block.

After convert-tile-to-gpu, the body of a loop that tile-pipeline pipelined still branches
twice around each copy: its alignment test (cp.async or the synchronous fallback) and, inside,
whether the tile lies wholly inside the tensor (plain cp.async or the zero-filling form).
Branches end ptxas's basic blocks, so a warp issues its copies as one burst between the
barrier and its first ldmatrix while the tensor pipe idles (ncu: ~14% of the warps' time in
that burst, 12% more at the barrier; docs/performance.md). This pass versions the loop once:

    scf.if %aligned_and_whole -> (...) { fast copy of the loop } else { the loop as it was }

- an alignment test (`tile.unswitch`, from tile_async) reads only bases and strides: its
  arithmetic moves above the loop;
- a whole-tile test (`tile.whole`) holds for every iteration of a step-1 loop when it holds
  for the first and the last: a tile's position is affine in the tile index, which grows with
  the induction variable (tile-pipeline clamps the tiles it prefetches to the last), so it is
  largest at one end whichever way the tiles run. The test's arithmetic is cloned above the
  loop twice, with the induction variable at lb and at ub - 1.

The fast copy takes the then-side of every test: plain cp.async, no branches, one block with the
ldmatrix and mma.sync for ptxas to schedule together. When copies are `tile.narrow` (their
fallback tests 8- and 4-byte alignment in turn), the general loop is versioned again, once per
width, so that each loop holds one width's copies (and the last the element-by-element ones).
Blocks on the edges of the output and misaligned tensors run the general loop. So does every
block when the ragged tile (a K that is not a multiple of BK) is copied inside the loop; a
kernel that walks its k-tiles from the last to the first, as examples/gemm_sm80.tile does,
copies that tile in the prologue only. With `interleave`, the fast body's cp.async also move
evenly among the mma.sync after them (never past a wait or a barrier; the commit after the
last).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from tilec.binding import defined_inside, walk
from tilec.lowering.tile_async import UNSWITCH, WHOLE
from tilec.passes.base import Pass, register
from tilec.passes.tile_pipeline import index, unit_step

CP_ASYNC = "nvvm.cp.async.shared.global"
MMA = "nvvm.mma.sync"
COMMIT = "nvvm.cp.async.commit.group"
# Ops the copies may not move past: they order shared memory or count cp.async groups.
FENCES = ("nvvm.cp.async.wait.group", "gpu.barrier", "nvvm.barrier0", "nvvm.barrier")
# Ops whose results depend on their operands alone: safe to move above the loop.
PURE_PREFIXES = ("arith.", "llvm.ptrtoint", "llvm.getelementptr", "llvm.mlir.constant")


def pure_slice(
    value: ir.Value, loop: ir.Operation, leaves: set[ir.Value], out: list[ir.Operation]
) -> bool:
    """Whether `value` is computed in `loop` by pure ops alone from values outside it (or in
    `leaves`); those ops are appended to `out`, each after the ones it uses."""
    if value in leaves or not defined_inside(value, loop):
        return True
    if isinstance(value, ir.BlockArgument):
        return False
    op = value.owner.operation
    if not op.name.startswith(PURE_PREFIXES) or len(op.regions):
        return False
    if any(o == op for o in out):
        return True
    if not all(pure_slice(v, loop, leaves, out) for v in op.operands):
        return False
    out.append(op)
    return True


def clone_slice(
    value: ir.Value, ops: list[ir.Operation], mapping: dict[ir.Value, ir.Value]
) -> ir.Value:
    """`value` recomputed at the insertion point by clones of `ops` (a `pure_slice`), with
    `mapping`'s values in place of the leaves."""
    for op in ops:
        new = op.clone()
        for i, v in enumerate(op.operands):
            if v in mapping:
                new.operands[i] = mapping[v]
        for old, r in zip(op.results, new.results, strict=True):
            mapping[old] = r
    return mapping.get(value, value)


def marked(root: ir.Operation, attr: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []
    walk(root, lambda op: found.append(op) if attr in op.attributes else None)
    return [op for op in found if op != root]


def outermost(ops: list[ir.Operation]) -> list[ir.Operation]:
    """Those of `ops` that no other of them encloses."""

    def enclosed(op: ir.Operation) -> bool:
        parent = op.parent
        while parent is not None:
            if any(parent == o for o in ops):
                return True
            parent = parent.parent
        return False

    return [op for op in ops if not enclosed(op)]


def width(test: ir.Operation) -> int:
    """The cp.async bytes an alignment test (`tile.unswitch = N`) chooses."""
    return ir.IntegerAttr(test.attributes[UNSWITCH]).value


def all_true(conds: list[ir.Value]) -> ir.Value:
    cond = conds[0]
    for c in conds[1:]:
        cond = arith.AndIOp(cond, c).result
    return cond


def resolve(loop: ir.Operation, chosen: int | None) -> None:
    """Answer the loop's copy tests, outermost first: 0 takes every then-side (alignment and
    whole tile); a width takes the alignment tests' else-sides down to that width's test and
    its then-side; None every alignment test's else-side (the narrowest copy)."""
    marks = (UNSWITCH, WHOLE) if chosen == 0 else (UNSWITCH,)
    while tops := outermost([t for m in marks for t in marked(loop, m)]):
        for t in tops:
            inline_then(t, side=0 if chosen == 0 or width(t) == chosen else 1)


def version(loop: ir.Operation, cond: ir.Value, chosen: int) -> ir.Operation:
    """`scf.if cond { copy of loop, tests resolved for `chosen` } else { loop }` in the loop's
    place; the copy."""
    versions = scf.IfOp(cond, [r.type for r in loop.results], has_else=True)
    with ir.InsertionPoint(versions.then_block), loop.location:
        copy = loop.clone()
        scf.YieldOp(list(copy.results))
    with ir.InsertionPoint(versions.else_block), loop.location:
        other = scf.YieldOp(list(loop.results))
    for r, v in zip(loop.results, versions.results, strict=True):
        r.replace_all_uses_with(v)
    # replace_all_uses_with also rewired the else-yield: point it back at the loop.
    for i, r in enumerate(loop.results):
        other.operation.operands[i] = r
    loop.move_before(other.operation)
    resolve(copy, chosen)
    return copy


def inline_then(op: ir.Operation, side: int = 0) -> None:
    """Replace a result-less scf.if by its then-block (side 0) or else-block (side 1)."""
    block = op.regions[side].blocks[0]
    for o in list(block.operations)[:-1]:
        o.move_before(op)
    op.erase()


@register
class PipelineSteadyState(Pass):
    """Make a pipelined loop's steady state one basic block: version it on its copies' tests."""

    name = "pipeline-steady-state"
    # Spread the fast body's copies among its mma.sync; off leaves them where tile-pipeline put
    # them (measured better at the BK = 64 default, docs/passes.md).
    interleave: bool = False

    def run(self, module: ir.Operation) -> None:
        loops: list[ir.Operation] = []
        walk(module, lambda op: loops.append(op) if self.pipelined(op) else None)
        for loop in loops:
            fast = self.unswitch(loop)
            if fast is not None and self.interleave:
                self.spread(fast)

    @staticmethod
    def pipelined(op: ir.Operation) -> bool:
        if op.name != "scf.for" or "tile.stages" not in op.attributes:
            return False
        return ir.IntegerAttr(op.attributes["tile.stages"]).value > 1

    @staticmethod
    def unswitch(loop: ir.Operation) -> ir.Operation | None:
        """The fast copy of the loop (the loop itself when it has no tests), or None when a
        test cannot be answered above the loop."""
        tests = [t for t in marked(loop, UNSWITCH) if t.name == "scf.if"]
        wholes = [t for t in marked(loop, WHOLE) if t.name == "scf.if"]
        if not tests and not wholes:
            return loop
        hoist: list[ir.Operation] = []
        if not all(pure_slice(t.operands[0], loop, set(), hoist) for t in tests):
            return None
        if wholes and not unit_step(loop):
            return None
        iv = loop.regions[0].blocks[0].arguments[0]
        slices: list[list[ir.Operation]] = [[] for _ in wholes]
        for t, ops in zip(wholes, slices, strict=True):
            if not pure_slice(t.operands[0], loop, {iv}, ops):
                return None
        for op in hoist:
            op.move_before(loop)
        widths = sorted({width(t) for t in tests}, reverse=True)
        with ir.InsertionPoint(loop), loop.location:
            last = arith.SubIOp(loop.operands[1], index(1)).result
            conds = [t.operands[0] for t in tests if width(t) == widths[0]]
            for t, ops in zip(wholes, slices, strict=True):
                for end in (loop.operands[0], last):
                    conds.append(clone_slice(t.operands[0], ops, {iv: end}))
            fast = version(loop, all_true(conds), 0)
        # The general loops always zero-fill at the edges: one copy path instead of two.
        for t in marked(loop, WHOLE):
            inline_then(t, side=1)
        # With narrower copies (`tile.narrow`: cp.async of 8 or 4 bytes): one general loop per
        # width, each holding that width's copies alone, the widest all sources are aligned
        # for, else element by element. One loop holding every width's copies kept more values
        # live than the registers hold.
        if len(widths) > 1:
            for w in widths:
                with ir.InsertionPoint(loop), loop.location:
                    version(loop, all_true([t.operands[0] for t in tests if width(t) == w]), w)
            resolve(loop, None)
        return fast

    @staticmethod
    def spread(loop: ir.Operation) -> None:
        """Move the body's top-level cp.async evenly among the mma.sync after them."""
        block = loop.regions[0].blocks[0]
        ops = list(block.operations)
        copies = [i for i, o in enumerate(ops) if o.name == CP_ASYNC]
        if not copies:
            return
        last = copies[-1]
        mmas: list[int] = []
        for i in range(last + 1, len(ops)):
            if ops[i].name in FENCES:
                break
            if ops[i].name == MMA:
                mmas.append(i)
        commits = [i for i in range(copies[0], len(ops)) if ops[i].name == COMMIT]
        if not mmas or len(commits) != 1 or not copies[-1] < commits[0] < mmas[0]:
            return
        n = len(copies)
        for j, c in enumerate(copies):
            ops[c].move_before(ops[mmas[(j + 1) * len(mmas) // (n + 1)]])
        ops[commits[0]].move_after(ops[copies[-1]])

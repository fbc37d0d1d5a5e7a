r"""Passes (lowered stage): when a wgmma accumulator may be read (the sm90 MMA family's waits).

wgmma runs asynchronously: its accumulator registers are being written until a
`wgmma.wait_group` retires its group, and LLVM, which sees the asm's results as ready when the
asm "returns", must not move a read above that wait (each value read passes through an empty
`asm volatile` after it: `tile_mma_wgmma.fenced`, CUTLASS's warpgroup_fence_operand). Three
places read an accumulator:

- a gemm (as its accumulator): no wait, wgmma chains on its own registers;
- what follows the gemm in its block (attention's softmax of S = Q Kᵀ): the gemm waits for
  every group (`wait_group 0`) and fences its results (`read_next` says when);
- the next iteration of a loop that carries it (O, rescaled before O += P V): that read needs
  the previous iteration's groups complete: a `wait_group 0` before it in the loop's body with
  no commit between (the wait of a gemm before it that is read next), else one put right
  before it, and its values fenced (`carried_reads`).

After the loop (the epilogue) the family waits for every group itself (`drain_after`).

    scf.for ... iter_args(%o = ...) {                 scf.for ... iter_args(%o = ...) {
      S = gemm(Q, K)        ; read next       →         wgmma ... commit ; wait_group 0 ; fence S
      ... softmax(S) ...                                ... softmax(S) ...
      o2 = %o * alpha       ; carried read    →         fence %o (after the wait above) ; mul
      gemm(P, V, o2)        ; yielded                   wgmma ... commit ; wait_group 1
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import llvm, nvvm

from tilec.binding import before, op_id, walk
from tilec.dialects.tile.types import MmaType
from tilec.lowering.tile_values import CAST, PENDING

WAIT = "nvvm.wgmma.wait.group.sync.aligned"
COMMIT = "nvvm.wgmma.commit.group.sync.aligned"


def read_next(op: ir.Operation) -> bool:
    """Whether anything but a gemm (as its accumulator) or its block's terminator (a loop's
    yield) reads the value gemm `op` makes, after it."""
    value = op.results[0] if op.results else op.operands[3]
    for use in value.uses:
        user = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
        if user == op.operation or (not op.results and not before(op, user)):
            continue
        if user.name == "tile.gemm" and use.operand_number == 3:
            continue
        if user.name == "scf.yield" and user.block == op.block:
            continue
        return True
    return False


def carried_casts(func: ir.Operation) -> list[ir.Operation]:
    """Before the MMA ops lower: the reads by other rungs (their pending casts) of the values
    that loops holding sm90 gemms carry, in the loops' bodies."""
    loops: dict[int, ir.Operation] = {}

    def visit(op: ir.Operation) -> None:
        mma = MmaType.of(op.operands[0].type) if op.name == "tile.gemm" else None
        parent = op.parent
        if mma is not None and mma.atom.startswith("sm90") and parent.name == "scf.for":
            loops[op_id(parent)] = parent

    walk(func, visit)
    casts = []
    for loop in loops.values():
        for arg in list(loop.regions[0].blocks[0].arguments)[1:]:
            for use in arg.uses:
                user = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
                if user.name == CAST and PENDING in user.attributes:
                    casts.append(user)
    return casts


def carried_reads(casts: list[ir.Operation]) -> None:
    """Each of `casts` (carried_casts) after a `wait_group 0` of its iteration, and its
    values fenced (see the module's docstring)."""
    for cast in casts:
        at = outermost(cast)
        if not waited(at):
            with ir.InsertionPoint(at), at.location:
                nvvm.WgmmaWaitGroupSyncOp(0)
        fence_results(cast)


def outermost(op: ir.Operation) -> ir.Operation:
    """`op`, or the op holding it in the body of the loop whose iter_arg it reads."""
    loop = op.operands[0].owner.owner
    while op.parent != loop:
        op = op.parent
    return op


def waited(op: ir.Operation) -> bool:
    """Whether a `wait_group 0` comes before `op` in its block with no commit between."""
    ops = [o.operation for o in op.block.operations]
    for o in reversed(ops[: ops.index(op)]):
        if o.name == WAIT:
            return ir.IntegerAttr(o.attributes["group"]).value == 0
        if o.name == COMMIT or commits(o):
            return False
    return False


def commits(op: ir.Operation) -> bool:
    found: list[ir.Operation] = []
    walk(op, lambda o: found.append(o) if o.name == COMMIT else None)
    return bool(found)


def fence_results(cast: ir.Operation) -> None:
    """Every value `cast` gives through an empty `asm volatile` ("=f,0") right after it."""
    after = cast.block.operations
    ops = [o.operation for o in after]
    nxt = ops[ops.index(cast) + 1]
    with ir.InsertionPoint(nxt), cast.location:
        for r in cast.results:
            f = llvm.InlineAsmOp(r.type, [r], "", "=f,0", has_side_effects=True)
            r.replace_all_uses_except(f.result, f.operation)

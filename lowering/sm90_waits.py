r"""Passes (lowered stage): when a wgmma accumulator may be read (the sm90 MMA family's waits).

wgmma runs asynchronously: its accumulator registers are being written until a
`wgmma.wait_group` retires its group, and LLVM, which sees the asm's results as ready when the
asm "returns", must not move a read above that wait (each value read passes through an empty
`asm volatile` after it: `tile_mma_wgmma.fenced`, CUTLASS's warpgroup_fence_operand). Three
places read an accumulator:

- a gemm (as its accumulator): no wait, wgmma chains on its own registers;
- what follows the gemm in its block (attention's softmax of S = Q Kᵀ): the gemm waits for
  every group (`wait_group 0`) and fences its results (`read_next` says when); but where
  another gemm is issued before that read, or the gemm is issued between another and its
  read (`deferred_gemms`: FlashAttention-3's intra-warpgroup overlap), the wait goes right
  before the first read, for all but the groups committed since (`deferred_wait`), so the
  later gemm runs under what reads the first;
- the next iteration of a loop that carries it (O, rescaled before O += P V) when the loop
  yields a gemm's result (`from_gemm`): that read needs the previous iteration's groups
  complete: a `wait_group 0` before it in the loop's body with no commit between (the wait
  of a gemm before it that is read next), else one put right before it, and its values
  fenced (`carried_reads`).

After the loop (the epilogue) the family waits for every group itself (`drain_after`).

    scf.for ... iter_args(%o = ...) {                 scf.for ... iter_args(%o = ...) {
      S = gemm(Q, K)        ; read next       →         wgmma ... commit ; wait_group 0 ; fence S
      ... softmax(S) ...                                ... softmax(S) ...
      o2 = %o * alpha       ; carried read    →         fence %o (after the wait above) ; mul
      gemm(P, V, o2)        ; yielded                   wgmma ... commit ; wait_group 1

    deferred (back to back):
      S = gemm(Q, K)                          →         wgmma ... commit ; wait_group 1
      gemm(P, V, %o)                                    wgmma ... commit ; wait_group 1
      ... softmax(S) ...                                wait_group 1 ; fence S ; softmax(S)
      o2 = o * alpha                                    wait_group 0 ; fence o ; mul
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


def first_use(op: ir.Operation) -> ir.Operation | None:
    """The op of gemm `op`'s block that first uses the value `op` makes (or holds that use),
    after `op`; None if nothing in the block does."""
    value = op.results[0] if op.results else op.operands[3]
    ops = [o.operation for o in op.block.operations]
    start = ops.index(op.operation) + 1
    users = set()
    for use in value.uses:
        user = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
        while user.name != "func.func" and user.block != op.block:
            user = user.parent
        users.add(op_id(user))
    return next((o for o in ops[start:] if op_id(o) in users), None)


def deferred_gemms(func: ir.Operation) -> set[int]:
    """The sm90 gemms whose wait goes right before the first read of their result instead of
    right after them (`deferred_wait`): those whose result is read after another gemm is
    issued, and those issued between another gemm and its read (FlashAttention-3's
    intra-warpgroup overlap: S_j = Q K_jᵀ, then O += P_{j-1} V_{j-1}, then the softmax of S_j
    while P V runs)."""
    blocks: dict[int, list[ir.Operation]] = {}

    def visit(op: ir.Operation) -> None:
        mma = MmaType.of(op.operands[0].type) if op.name == "tile.gemm" else None
        if mma is not None and mma.atom.startswith("sm90"):
            blocks.setdefault(op_id(op.parent), []).append(op)

    walk(func, visit)
    out: set[int] = set()
    for gemms in blocks.values():
        ops = [o.operation for o in gemms[0].block.operations]
        at = {op_id(g): ops.index(g.operation) for g in gemms}
        for g in gemms:
            use = first_use(g) if read_next(g) else None
            if use is None:
                continue
            inside = [h for h in gemms if at[op_id(g)] < at[op_id(h)] < ops.index(use)]
            if inside:
                out.add(op_id(g))
                out.update(op_id(h) for h in inside)
    return out


def deferred_wait(op: ir.Operation) -> tuple[ir.Operation, int] | None:
    """Where a deferred gemm's (deferred_gemms) result is waited for: the first op that reads
    it, and the groups committed between (the gemms lowered after it by then: `wait_group`
    of that many)."""
    use = first_use(op)
    if use is None or not read_next(op):
        return None
    ops = [o.operation for o in op.block.operations]
    between = ops[ops.index(op.operation) + 1 : ops.index(use)]
    later = [o for o in between if o.name == "tile.gemm"]
    return use, len(later)


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
        body = loop.regions[0].blocks[0]
        yielded = list(list(body.operations)[-1].operands)
        for arg, value in zip(list(body.arguments)[1:], yielded, strict=True):
            if not from_gemm(value):  # made by other ops, after their own waits
                continue
            for use in arg.uses:
                user = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
                if user.name == CAST and PENDING in user.attributes:
                    casts.append(user)
    return casts


def from_gemm(value: ir.Value) -> bool:
    """Whether `value` is a gemm's result or accumulates one in place: wgmmas may still be
    writing it when the loop yields it."""
    owner = value.owner
    if not isinstance(owner, ir.Block) and owner.name == "tile.gemm":
        return True
    for use in value.uses:
        user = use.owner.operation if isinstance(use.owner, ir.OpView) else use.owner
        if user.name == "tile.gemm" and use.operand_number == 3 and not user.results:
            return True
    return False


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

r"""Staggered consumers (`consumer(..., stagger = 1)`): the two consumer warp groups that split
each tile take turns issuing their gemms, so that one group's softmax runs while the other's
wgmmas keep the tensor cores busy (FlashAttention-3's ping-pong between warp groups; the
whole-tile turns of `pingpong = 1` are CUTLASS's GEMM schedule).

A consumer pipelined loop holds two gemms an iteration: S_j = Q K_jᵀ, which the softmax
reads, and O += P_j V_j (attention's loop; or its two loops, over the unmasked tiles and the
diagonal ones, each balanced on its own). A group issues its wgmmas in blocks, P_j V_j with
S_{j+1}, each block
started by a wait on the group's named barrier and ended by an arrival on the other group's;
group 0 goes first (group 1 arrives once before its loop), so the blocks alternate and a
group's softmax of S_{j+1} overlaps the other group's block:

    group 0                               group 1
                                          bar.arrive A              (if the loop runs)
    S_0 ; softmax                         S_0 ; softmax
    bar.sync A ; P_0 V_0 | S_1 ;          bar.sync B ...
      bar.arrive B                          ... P_0 V_0 | S_1 ; bar.arrive A
    softmax ; bar.sync A ; P_1 V_1 | ...  softmax ; bar.sync B ; ...
    bar.arrive B                          (after the loop: its first arrival was the extra one)

Each barrier (A = 2 + groups for group 0, B the next) counts 256 threads, 128 arriving and
128 waiting; each group arrives on the other's as often as the other waits (T times for T
iterations: after S_j for j >= 1, plus the extra one), so none is left half-passed. The
branches are on the loop's index and on the group's index broadcast from lane 0
(sm90_pingpong.uniform_group): uniform, so ptxas keeps the wgmmas asynchronous.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from tilec.binding import walk
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.sm90_loops import index, trips
from tilec.lowering.sm90_pingpong import uniform_group
from tilec.lowering.sm90_waits import COMMIT, WAIT
from tilec.lowering.tile_access import when
from tilec.lowering.tile_roles import WARPGROUP, Role, named_barrier

FENCE = "nvvm.wgmma.fence.aligned"
GROUPS = 2
KEY = "tile.stagger"


def requested(role: ir.Operation) -> bool:
    return KEY in role.attributes and bool(ir.IntegerAttr(role.attributes[KEY]).value)


def stagger(consumer: ir.Operation) -> None:
    """The turns of the consumers' gemm blocks (see the module's docstring)."""
    role = Role.of(consumer)
    if role.pingpong or len(role.groups) != GROUPS:
        raise LoweringError(
            consumer, f"stagger takes turns between the {GROUPS} consumer warp groups that "
            "split each tile (not with pingpong)",
        )  # fmt: skip
    first = 2 + len(role.groups)  # after the groups' own barriers and the consumers' one
    for loop, ops in two_gemm_loops(consumer):
        if overlapped(ops):
            adjacent(loop, ops, role, first)
        else:
            alternate(loop, ops[1], ops[2], role, first)


def alternate(
    loop: ir.Operation, first_commit: ir.Operation, second_fence: ir.Operation, role: Role,
    first: int,
) -> None:  # fmt: skip
    """One loop's turns; each loop's arrivals balance its waits on its own."""
    b = IndexBuilder()
    group, ran, own, other = opening(loop, role, first, b)
    after = next_op(first_commit)
    with ir.InsertionPoint(after), loop.location:
        later = arith.CmpIOp(arith.CmpIPredicate.ugt, b.value(index(loop, b)), b.value(0)).result
        when(later, lambda: turn(other, b, arrive=True))
    with ir.InsertionPoint(second_fence), loop.location:
        turn(own, b)
    with ir.InsertionPoint(next_op(loop)), loop.location:
        leads = arith.CmpIOp(arith.CmpIPredicate.eq, group, b.value(0)).result
        when(arith.AndIOp(ran, leads).result, lambda: turn(first + 1, b, arrive=True))


def opening(
    loop: ir.Operation, role: Role, first: int, b: IndexBuilder
) -> tuple[ir.Value, ir.Value, Term, Term]:
    """Before `loop`: the consumer's group, whether the loop runs at all, group 1's opening
    arrival on group 0's barrier, and the group's own barrier and the other's."""
    with ir.InsertionPoint(loop), loop.location:
        group = uniform_group(role.first)
        ran = arith.CmpIOp(arith.CmpIPredicate.sgt, b.value(trips(loop, b)), b.value(0)).result
        second = arith.CmpIOp(arith.CmpIPredicate.eq, group, b.value(1)).result
        when(arith.AndIOp(ran, second).result, lambda: turn(first, b, arrive=True))
        return group, ran, b.add(group, first), b.sub(first + 1, group)


def adjacent(loop: ir.Operation, ops: tuple, role: Role, first: int) -> None:
    """One loop's turns where its two gemms are issued back to back (the intra-warpgroup
    overlap: S_j, then P_{j-1} V_{j-1}, then the softmax of S_j): a turn is both gemms, the
    wait right before the first's fence, the arrival on the other's barrier right after the
    second's commit (group 0 every iteration, group 1 but the last: its extra arrival is
    the one before the loop)."""
    first_fence, _, _, second_commit = ops
    b = IndexBuilder()
    group, _, own, other = opening(loop, role, first, b)
    with ir.InsertionPoint(loop), loop.location:
        last = b.value(b.add(trips(loop, b), -1))
        leads = arith.CmpIOp(arith.CmpIPredicate.eq, group, b.value(0)).result
    with ir.InsertionPoint(first_fence), loop.location:
        turn(own, b)
    with ir.InsertionPoint(next_op(second_commit)), loop.location:
        more = arith.CmpIOp(arith.CmpIPredicate.ult, b.value(index(loop, b)), last).result
        when(arith.OrIOp(leads, more).result, lambda: turn(other, b, arrive=True))


def overlapped(ops: tuple) -> bool:
    """Whether a loop's first gemm is left in flight under its second (no `wait_group 0`
    between the first's commit and the second's fence)."""
    _, first_commit, second_fence, _ = ops
    body = [o.operation for o in first_commit.block.operations]
    between = body[body.index(first_commit) : body.index(second_fence)]
    return not any(o.name == WAIT and ir.IntegerAttr(o.attributes["group"]).value == 0
                   for o in between)  # fmt: skip


def turn(ident: Term, b: IndexBuilder, arrive: bool = False) -> None:
    named_barrier(ident, GROUPS * WARPGROUP, b, arrive=arrive)


def two_gemm_loops(consumer: ir.Operation) -> list[tuple]:
    """The consumers' pipelined loops whose body commits two wgmma groups: each with the fence
    that opens its first gemm, its first commit, the fence that opens its second gemm and its
    second commit (a located error if there is none)."""
    found = []
    loops: list[ir.Operation] = []
    walk(consumer, lambda o: loops.append(o) if "tile.stages" in o.attributes else None)
    for loop in loops:
        ops = [o.operation for o in loop.regions[0].blocks[0].operations]
        commits = [k for k, o in enumerate(ops) if o.name == COMMIT]
        if len(commits) == GROUPS:
            fences = [o for o in ops[: commits[1]] if o.name == FENCE]
            second = next(o for o in ops[commits[0] :] if o.name == FENCE)
            found.append((loop, (fences[0], ops[commits[0]], second, ops[commits[1]])))
    if not found:
        raise LoweringError(
            consumer, "stagger alternates the consumers' gemms in pipelined loops holding two "
            "gemms an iteration: there is none",
        )  # fmt: skip
    return found


def next_op(op: ir.Operation) -> ir.Operation:
    ops = [o.operation for o in op.block.operations]
    return ops[ops.index(op) + 1]

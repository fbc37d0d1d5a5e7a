r"""Passes: `tile-warp-roles`, each role of a warp_specialize block on its warp groups.

The last SM90 rung: once the rungs have lowered what the roles do (their register tensors
spread over the role's threads, tile_roles), each role becomes one branch of an if / else-if
chain on the thread's warp group (sm90_roles): `setmaxnreg` at the top of a body that names a
register budget (`.dec` for the producer, `.inc` for consumers), the producer's body on one
thread of its group (one thread issues every TMA load). Ping-pong consumers
(`consumer(..., pingpong = 1)`, sm90_pingpong) take the persistent loop's tiles in turns:
each group skips the other's turns, waits on its named barrier before its main loop (the
pipelined loop, from its second turn on) and, once it has issued that loop's last wgmma (right
after the loop, before the wgmma family's `wait_group 0`), lets the other group start its own.
Staggered consumers (`consumer(..., stagger = 1)`, sm90_stagger) split each tile but take
turns issuing their gemms (attention: one group's softmax under the other's wgmmas).

    scf.execute_region {                                  %wg = tid / 128
      scf.execute_region { ... }                    →     scf.if %wg == 0 {
        {tile.role = "producer", ...}                       nvvm.setmaxregister decrease 40
      scf.execute_region { ... }                            scf.if %tid mod 128 == 0 { ... } }
        {tile.role = "consumer", ...}                     else { scf.if %wg == 1 || %wg == 2 {
    } {tile.warp_specialize, tile.ring}                     nvvm.setmaxregister increase 232
                                                            ... } }

In the `lowered` stage, after convert-tile-to-gpu.
"""

from __future__ import annotations

from functools import partial

from mlir import ir
from mlir.dialects import arith, gpu

from tilec.binding import walk
from tilec.lowering import IndexBuilder, LoweringError, sm90_pingpong, sm90_roles, sm90_stagger
from tilec.lowering.sm90_roles import roles_of
from tilec.lowering.tile_roles import WARPGROUP, Role, named_barrier
from tilec.passes.base import Pass, register


def leader(tid: ir.Value, b: IndexBuilder) -> ir.Value:
    """Thread 0 of its warp group."""
    lane = b.rem(tid, WARPGROUP)
    return arith.CmpIOp(arith.CmpIPredicate.eq, b.value(lane), b.value(0)).result


def take_turns(consumer: ir.Operation) -> None:
    """Ping-pong: the consumers' turns (sm90_pingpong), the hand-over after each main loop."""
    role = Role.of(consumer)
    first = 1 + len(role.groups)  # after the groups' own named barriers and the consumers'
    group = partial(sm90_pingpong.uniform_group, role.first)
    turns = sm90_pingpong.alternate(consumer, list(role.groups), group, first)
    loops: list[ir.Operation] = []
    walk(turns.loop, lambda o: loops.append(o) if "tile.stages" in o.attributes else None)
    for loop in loops:
        ops = list(loop.block.operations)
        following = ops[[o.operation for o in ops].index(loop.operation) + 1].operation
        with ir.InsertionPoint(following), loop.location:
            turns.hand_over()


def name_barriers(roles: dict[str, ir.Operation]) -> None:
    """Each block barrier the rungs put in a role (`gpu.barrier`: reductions, relayouts,
    split sums, `barrier()`) becomes the role's named barrier: the block's would wait for the
    other role's threads forever. In the producer, which one thread runs, it is an error."""
    found: list[ir.Operation] = []
    for role in roles.values():
        walk(role, lambda o: found.append(o) if o.name == "gpu.barrier" else None)
    for op in found:
        role = Role.of(op)
        if role.kind != "consumer":
            raise LoweringError(op, "a barrier in the producer, which one thread runs")
        b = IndexBuilder()
        with ir.InsertionPoint(op), op.location:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            named_barrier(role.barrier_id(b, tid), role.threads, b)
        op.erase()


def place_roles(func: ir.Operation) -> None:
    roles = roles_of(func)
    if roles is None:
        return
    ws = roles["consumer"].parent
    if "tile.ring" not in ws.attributes:
        raise LoweringError(ws, "warp_specialize needs tile-ring first (its loops' ring)")
    b = IndexBuilder()
    name_barriers(roles)
    order = list(roles.values())  # in program order
    groups = [list(ir.DenseI64ArrayAttr(r.attributes["tile.warpgroups"])) for r in order]
    if sm90_pingpong.requested(roles["consumer"]):
        take_turns(roles["consumer"])
    if sm90_stagger.requested(roles["consumer"]):
        sm90_stagger.stagger(roles["consumer"])
    for role in order:
        if sm90_roles.kind(role) == "producer":
            with ir.InsertionPoint(role), role.location:
                single = leader(gpu.ThreadIdOp(gpu.Dimension.x).result, b)
            sm90_roles.prepare(role, single=single)
        else:
            sm90_roles.prepare(role)

    def condition(groups: list[int]) -> ir.Value:
        warpgroup = b.value(b.div(gpu.ThreadIdOp(gpu.Dimension.x).result, WARPGROUP))
        return sm90_roles.condition(groups, warpgroup, b)

    sm90_roles.chain([(r, partial(condition, g)) for r, g in zip(order, groups, strict=True)])
    for key in ("tile.warp_specialize", "tile.ring"):
        del ws.attributes[key]


@register
class TileWarpRoles(Pass):
    """Put each role of a warp_specialize block on its warp groups: setmaxnreg, ping-pong.

    See the module's docstring; after convert-tile-to-gpu.
    """

    name = "tile-warp-roles"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, place_roles)

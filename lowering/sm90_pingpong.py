"""Ping-pong consumers (`consumer(..., pingpong = 1)`): two consumer warp groups take the
persistent loop's output tiles in turns, each holding a whole tile, so that one group's
epilogue runs while the other's wgmmas keep the tensor cores busy.

The cooperative form splits every tile over the consumer groups; they finish their main
loops together and then both run the epilogue while the tensor cores idle. Here turn `i` of
the block's tile loop belongs to group `i mod 2`: each group skips the other's turns
(`scf.if`), and the main loops take turns in order through two named barriers: before its
main loop a group waits on its own barrier (from its second turn on), and once it has issued
its last wgmma it arrives on the other group's, when there is a next turn. Both counts are
256 threads: 128 arrive, 128 wait, and every wait has its arrival, so no barrier is left
half-passed at the exit.

The order is also what keeps the ring's phases right: the producer fills the stages in turn
order, and a group waiting on a stage's full barrier by parity must not be more than one
phase ahead of it, which it would be if it started its main loop while the other group's
stages of the turn before were still unread.

    scf.for %t = %block to %tiles step %grid {          // the consumers' tile loop
      scf.if %turn mod 2 == %group {
        scf.if %turn > 0 { bar.sync 3 + group, 256 }
        scf.for %k ... { wait full ; wgmma ; release }  // the ring's counter: all turns'
        scf.if %turn + 1 < %turns { bar.arrive 3 + (1 - group), 256 }
        wgmma.wait_group 0 ; release ; epilogue
      }
    }
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, scf

from tilec.binding import walk
from tilec.lowering import IndexBuilder, LoweringError
from tilec.lowering.sm90_loops import index, trips
from tilec.lowering.sm90_roles import WARPGROUP
from tilec.lowering.tile_access import when
from tilec.lowering.tile_math import constant
from tilec.lowering.tile_roles import named_barrier as barrier

GROUPS = 2  # the consumer warp groups that take turns


def requested(role: ir.Operation) -> bool:
    return "tile.pingpong" in role.attributes and bool(
        ir.IntegerAttr(role.attributes["tile.pingpong"]).value
    )


@dataclass
class Turns:
    """The consumers' persistent loop, the group's index among the consumers (warp-uniform,
    defined at the top of each turn) and the named barriers `first`, `first + 1` on which
    consumer group 0, 1 waits for its turn at the main loop."""

    loop: ir.Operation
    group: ir.Value
    first: int

    def hand_over(self) -> None:
        """After a group's main loop: let the other group start its own, if a turn follows."""
        b = IndexBuilder()
        group = self.group
        following = arith.CmpIOp(
            arith.CmpIPredicate.ult,
            b.value(b.add(index(self.loop, b), 1)),
            b.value(trips(self.loop, b)),
        ).result
        other = arith.SubIOp(b.value(self.first + 1), group).result
        when(following, lambda: barrier(other, GROUPS * WARPGROUP, b, arrive=True))


def alternate(
    role: ir.Operation, groups: list[int], group_of: Callable[[], ir.Value], first: int
) -> Turns:
    """Put each turn of the consumers' persistent loop under `turn mod 2 == group` (the
    group's index among the consumers, built once by `group_of()` at the top of the turn),
    and the wait for the group's turn before its pipelined loop."""
    if len(groups) != GROUPS:
        raise LoweringError(
            role, f"pingpong takes turns between {GROUPS} consumer warp groups, got {len(groups)}"
        )
    loops: list[ir.Operation] = []
    walk(role, lambda o: loops.append(o) if "tile.persistent" in o.attributes else None)
    if len(loops) != 1:
        raise LoweringError(
            role, "a pingpong consumer walks one persistent tile loop: its turns alternate"
        )
    loop = loops[0]
    pipelined: list[ir.Operation] = []
    walk(loop, lambda o: pipelined.append(o) if "tile.stages" in o.attributes else None)
    if len(pipelined) != 1:
        raise LoweringError(
            loop,
            f"a pingpong consumer's tile holds one pipelined main loop (the turns hand over "
            f"after it), got {len(pipelined)}",
        )
    body = loop.regions[0].blocks[0]
    ops = list(body.operations)
    b = IndexBuilder()
    with ir.InsertionPoint(ops[0]), loop.location:
        turn = b.value(index(loop, b))
        group = group_of()
        mine = arith.CmpIOp(arith.CmpIPredicate.eq, b.value(b.rem(turn, 2)), group).result
        guard = scf.IfOp(mine)
        with ir.InsertionPoint(guard.then_block):
            end = scf.YieldOp([])
    for o in ops[:-1]:
        o.move_before(end)
    main = pipelined[0]
    with ir.InsertionPoint(main), main.location:
        later = arith.CmpIOp(arith.CmpIPredicate.ugt, turn, b.value(0)).result
        when(later, lambda: barrier(b.add(group, first), GROUPS * WARPGROUP, b))
    return Turns(loop, group, first)


def uniform_group(first: int) -> ir.Value:
    """The consumer group's index (warp group - `first`), broadcast from lane 0
    (`shfl.sync.idx`, as CUTLASS does): the same number, but one ptxas knows every lane of the
    warp holds. A branch on a value computed from the thread index is divergent to ptxas, and
    one between wgmmas that share accumulators makes it serialise them (its C7520 note, about
    half the speed measured)."""
    b = IndexBuilder()
    i32 = ir.IntegerType.get_signless(32)
    tid = gpu.ThreadIdOp(gpu.Dimension.x).result
    index = arith.SubIOp(b.value(b.div(tid, WARPGROUP)), b.value(first)).result
    mine = arith.IndexCastOp(i32, index).result
    lane0, width = constant(i32, 0), constant(i32, 32)
    shuffled = gpu.ShuffleOp(mine, lane0, width, gpu.ShuffleMode.IDX).shuffleResult
    return arith.IndexCastOp(ir.IndexType.get(), shuffled).result

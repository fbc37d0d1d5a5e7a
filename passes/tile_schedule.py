r"""Passes: `tile-schedule`, persistent tile loops: which output tile each iteration takes.

A persistent loop (`for t in persistent((TM, TN), raster =, split_tail =)`, an `scf.for
{tile.persistent}` over linear tile indices block, block + grid, ...) names its tile with
`tile.tile_coord`. This pass writes the schedule out:

- the raster: `grouped(G)` walks G rows of tiles column by column (the rows of A stay in L2
  while B's columns pass), else row by row; in a kernel of clusters (`cluster(C)`) the walk is
  over blocks of C tiles along m and m adds the block's rank in its cluster;
- a split tail (`tile.split_tail`, sm90_split): the loop walks units of work instead of tiles
  (whole tiles, then the last wave's tiles split along K, or stream-K over the last one or two
  waves, chosen at launch), the pipelined loops in it run over the unit's K range, and a
  `tile.work_unit` op at the top of the body records what the unit is for the passes after:
  where the ring's count stands before it (tile-ring) and whether it hands its sums over or
  owns the tile and adds its peers' (the rung that stores the tile).

    scf.for %u = %c to %units step %p {tile.persistent = "grouped", tile.split_tail} {
      %t:2 = "tile.tile_coord"(%u, %tm, %tn) {raster = "grouped", group = 16}
  →
    scf.for %u = %c to %bound step %p {tile.persistent = "grouped", tile.split_tail} {
      ... the unit's tile, k range, ring start, slots ...
      "tile.work_unit"(%start, %peer, %slot, %first, %last, %rank) {width = 1}
      %m = ... ; %n = ...                      (the grouped raster of the unit's tile)

Each role of a warp-specialised kernel walks its own copy of the loop; both get the same
schedule (it is computed from the same values), so producer and consumers meet on the same
tiles and ring positions. In the `lowered` stage, before tile-ring.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from tilec.binding import inside, walk
from tilec.lowering import IndexBuilder, LoweringError, Term, sm90_cluster, sm90_split
from tilec.lowering.tile_roles import role_of
from tilec.passes.base import Pass, register

UNIT = "tile.work_unit"
SUM = "tile.unit_sum"
PART = "tile.unit_part"


def cluster_width(func: ir.Operation) -> int:
    attrs = func.attributes
    return ir.IntegerAttr(attrs["tile.cluster"]).value if "tile.cluster" in attrs else 1


def raster(op: ir.Operation, t: Term, cluster: int, rank: Term, b: IndexBuilder) -> tuple:
    """(m, n) of linear tile index `t` in the raster `op` (a tile_coord) names."""
    _, tiles_m, tiles_n = op.operands
    if cluster > 1:  # the walk is over blocks of `cluster` tiles along m
        tiles_m = arith.CeilDivUIOp(tiles_m, b.value(cluster)).result
    if "raster" in op.attributes and ir.StringAttr(op.attributes["raster"]).value == "grouped":
        group = ir.IntegerAttr(op.attributes["group"]).value
        width = b.mul(tiles_n, group)
        first = b.mul(b.div(t, width), group)
        rest = arith.SubIOp(b.value(tiles_m), b.value(first)).result
        size = arith.MinUIOp(rest, b.value(group)).result
        within = b.rem(t, width)
        m, n = b.add(first, b.rem(within, size)), b.div(within, size)
    else:
        m, n = b.div(t, tiles_n), b.rem(t, tiles_n)
    if cluster > 1:
        m = b.add(b.mul(m, cluster), rank)
    return m, n


def work_unit(split: sm90_split.Split, b: IndexBuilder) -> None:
    """The unit's facts as a `tile.work_unit` op where the insertion point is."""
    peer = split.peer
    if isinstance(peer, bool):
        peer = arith.ConstantOp(ir.IntegerType.get_signless(1), int(peer)).result
    values = [split.start, peer, split.slot, split.first, split.last, split.rank]
    ir.Operation.create(
        UNIT,
        operands=[v if isinstance(v, ir.Value) else b.value(v) for v in values],
        attributes={"width": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), split.width)},
    )


def lower_coord(op: ir.Operation, func: ir.Operation) -> None:
    """One tile_coord (and, in a split loop, its unit) written out where it is."""
    b = IndexBuilder()
    cluster = cluster_width(func)
    rank: Term = sm90_cluster.rank() if cluster > 1 else 0
    loop = sm90_split.around(op)
    if "tile.persistent" not in loop.attributes:
        raise LoweringError(op, "tile_coord belongs at the top of a persistent loop")
    t: Term = op.operands[0]
    if "tile.split_tail" in loop.attributes:
        role = role_of(op) or func
        t, split = sm90_split.plan(op, loop, role, b, (cluster, rank))
        work_unit(split, b)
        peer = split.peer if isinstance(split.peer, ir.Value) else None
        if peer is not None:
            sum_units(loop, peer)
    m, n = raster(op, t, cluster, rank, b)
    op.results[0].replace_all_uses_with(b.value(m))
    op.results[1].replace_all_uses_with(b.value(n))
    op.erase()


def accumulators(loop: ir.Operation) -> list[ir.Value]:
    """The accumulators the gemms in `loop` add into, in order."""
    gemms: list[ir.Operation] = []
    walk(loop, lambda o: gemms.append(o) if o.name == "tile.gemm" else None)
    return list(dict.fromkeys(g.operands[3] for g in gemms))


def sum_units(loop: ir.Operation, peer: ir.Value) -> None:
    """After each main loop of a split unit, under `scf.if` the unit owns the tile: its
    accumulators summed over the tile's units (`tile.unit_sum`, which every later use reads)
    and what follows in the loop's body (the tile's epilogue); else its part handed over
    (`tile.unit_part`): a peer stores nothing."""
    body = loop.regions[0].blocks[0]
    for k in sm90_split.pipelined_loops(loop):
        accs = accumulators(k)
        if not accs or k.parent != loop:
            continue
        ops = [o.operation for o in body.operations]
        rest = ops[ops.index(k.operation) + 1 : -1]
        with ir.InsertionPoint(ops[-1]), k.location:
            owner = arith.XOrIOp(peer, arith.ConstantOp(peer.type, 1).result).result
            guard = scf.IfOp(owner, has_else=True)
            with ir.InsertionPoint(guard.then_block):
                sums = [ir.Operation.create(SUM, [acc.type], [acc]).results[0] for acc in accs]
                end = scf.YieldOp([])
            with ir.InsertionPoint(guard.else_block):
                for acc in accs:
                    ir.Operation.create(PART, [], [acc])
                scf.YieldOp([])
        for o in rest:
            o.move_before(end)
        for acc, total in zip(accs, sums, strict=True):
            for use in list(acc.uses):
                user = use.owner
                if inside(user, guard.operation) and user.name not in (SUM, PART):
                    user.operands[use.operand_number] = total


@register
class TileSchedule(Pass):
    """Write out persistent tile loops' schedules: rasters, clusters, split tails.

    See the module's docstring; before tile-ring.
    """

    name = "tile-schedule"

    def run(self, module: ir.Operation) -> None:
        def lower(func: ir.Operation) -> None:
            coords: list[ir.Operation] = []
            walk(func, lambda o: coords.append(o) if o.name == "tile.tile_coord" else None)
            for op in coords:
                with ir.InsertionPoint(op), op.location:
                    lower_coord(op, func)

        self.each_kernel(module, lower)

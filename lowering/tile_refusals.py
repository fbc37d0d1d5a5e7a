"""Passes (lowered stage): what the SM80 lowering passes refuse, and the words they refuse with.

Copy atoms by family, region attributes an earlier pass must have lowered, and cp.async copies
nothing waits for: each a located error naming what would lower it, never other code.
"""

from __future__ import annotations

from mlir import ir

# Copy atoms by family (the name up to its first dot): convert-tile-copies lowers `auto` (a copy
# without an atom) as vector loads and stores, `cp_async.*` as cp.async (tile_async checks the
# width). Any other atom is refused: lowering it as one of these would silently emit something
# else.
NOT_YET = {
    "vec": "the copy lowering picks its own vector width",
    "universal": "the copy lowering picks its own vector width",
}
# copy<tma> completes on the mbarrier ring between a warp_specialize producer and its consumers,
# which tile-ring builds; outside such a kernel there is no ring to complete on.
TMA_OUTSIDE = (
    "copy<tma> is lowered only in the producer of a warp_specialize kernel (tile-ring), "
    "whose mbarrier ring its loads complete on"
)
# A cp.async copy outside tile-pipeline is waited for where tile-async-waits says (its
# tile.async_commit / tile.async_wait ops); without them nothing would wait for it.
UNWAITED = (
    "a cp.async copy outside tile-pipeline needs tile-async-waits first, which places its "
    "commit and the waits for it"
)
# The ops convert-tile-views lowers (views, their extents, the special ids); convert-tile-to-gpu
# reads their casts and refuses the ops themselves.
VIEW_OPS = (
    "tile.block_id",
    "tile.thread_id",
    "tile.grid_dim",
    "tile.size",
    "tile.make_tensor",
    "tile.local_tile",
    "tile.slice",
    "tile.window",
    "tile.read",
    "tile.permute",
    "tile.prepend",
    "tile.append",
    "tile.alloc_shared",
)
# What the rungs before convert-tile-to-gpu lower, by op name: why it refuses them.
ELEMENTWISE = ("tile.binary", "tile.unary", "tile.convert", "tile.compare", "tile.select")
RUNGS = {  # the SM80 rung that lowers each op
    **dict.fromkeys(VIEW_OPS, "convert-tile-views"),
    **dict.fromkeys(("tile.barrier", "tile.async_commit", "tile.async_wait"), "convert-tile-sync"),
    **dict.fromkeys(
        (
            "tile.reduce",
            "tile.reduce_group",
            "tile.cluster_reduce",
            "tile.unit_sum",
            "tile.unit_part",
        ),
        "convert-tile-reductions",
    ),
    **dict.fromkeys((*ELEMENTWISE, "tile.coord"), "convert-tile-elementwise"),
    **dict.fromkeys(("tile.load", "tile.store"), "convert-tile-memory"),
    "tile.copy": "convert-tile-copies",
    "tile.relayout": "tile-relayout",
    **dict.fromkeys(("tile.tiled_mma", "tile.gemm"), "convert-tile-mma"),
}
EARLIER = {name: f"is lowered by {rung}, which must run first" for name, rung in RUNGS.items()}
for name in ELEMENTWISE:
    EARLIER[name] += " (convert-tile-memory those on an epilogue value computed where it is stored)"
# Region attributes from the source that an earlier pass must have lowered (and removed).
UNLOWERED_REGIONS: dict[str, str] = {}
# A warp_specialize block's roles are lowered by the rungs once tile-ring has put its loops on
# a ring (marking the block `tile.ring`); tile-warp-roles then puts each role on its warp
# groups.
RING_FIRST = (
    "warp_specialize needs tile-schedule and tile-ring first: they put its roles' pipelined "
    "loops on an mbarrier ring the rungs lower them with"
)
ROLES_FIRST = (
    "warp_specialize is lowered by tile-warp-roles, which must run first: here its roles "
    "would run on every thread, one after the other, without setmaxnreg"
)


def unlowered_copy(atom: str) -> str:
    family = atom.split(".")[0]
    why = TMA_OUTSIDE if family == "tma" else f"copy<{atom}> is not lowered yet"
    if family in NOT_YET:
        why += f": {NOT_YET[family]}"
    return f"{why} (lowered: copy without an atom, copy<cp_async.*>)"


def region_refusal(op: ir.Operation) -> list[tuple[ir.Operation, str]]:
    """`op` and why, if it holds a region attribute nothing lowers (an empty list if not)."""
    if not op.regions:
        return []
    found = [(op, why) for key, why in UNLOWERED_REGIONS.items() if key in op.attributes]
    if "tile.warp_specialize" in op.attributes and "tile.ring" not in op.attributes:
        found.append((op, RING_FIRST))
    return found

"""The shape of a warp-specialised kernel's TMA ring (tile-ring): which buffer takes which slot.

Two rings share one shared array. The **stage ring** holds the buffers the producer's
pipelined loops fill, S stages of them (S the loops' `stages`), a slot per buffer in each
stage. The **once ring** holds the buffers a `copy<tma>` outside the pipelined loops fills
once per run of the loops around it (attention's Q: loaded once a tile, read by every
iteration of the consumers' pipelined loop): one stage, or one per consumer group with
ping-pong (each group holds its own tile's). Both count their iterations the same way on both
sides (sm90_loops.counter_of), so each has its own full and empty barriers::

    | stage 0 .. S-1 | tile stage(s) | epilogue chunks | full[S] empty[S] | full[T] empty[T] |

A kernel without copies outside its pipelined loops has no once ring: its array is laid out as
it was before the once ring existed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from tilec import smem
from tilec.binding import op_id, walk
from tilec.dialects.layout import algebra as A
from tilec.dialects.tile.types import MmaType
from tilec.lowering import LoweringError, sm90_cluster, sm90_tma
from tilec.lowering.sm90_sources import tensor_of
from tilec.lowering.sm90_tma import SwizzledRows
from tilec.lowering.tile_roles import Role
from tilec.lowering.tile_views import elem_bytes, tensor_type


def pipelined_or_none(op: ir.Operation) -> ir.Operation | None:
    """The pipelined loop (`scf.for {tile.stages}`) holding `op`, else None."""
    p = op.parent
    while p is not None and p.name != "func.func":
        if p.name == "scf.for" and "tile.stages" in p.attributes:
            return p
        p = p.parent
    return None


def pipelined(op: ir.Operation) -> ir.Operation:
    """The pipelined loop holding `op` (a located error where there is none)."""
    loop = pipelined_or_none(op)
    if loop is None:
        raise LoweringError(
            op, f"'{op.name}' of a warp-specialised kernel belongs in a pipelined loop"
        )
    return loop


@dataclass
class Plan:
    """The ring's shape: each TMA-filled buffer's slot (offset in a stage, rows), a stage's
    bytes, the bytes each producer loop's stage loads, S, the copies every block of a cluster
    makes alike (multicast), the epilogue's chunks; and the once ring's buffers (`once`), its
    stage's bytes, the bytes it loads and its stage count."""

    slots: dict[ir.Value, tuple[int, SwizzledRows]] = field(default_factory=dict)
    stage_bytes: int = 0
    loop_bytes: dict[int, int] = field(default_factory=dict)
    stages: int = 0
    multicast: set[int] = field(default_factory=set)
    store: ir.Operation | None = None  # the store through the TMA epilogue
    epilogue_bytes: int = 0
    once: dict[ir.Value, tuple[int, SwizzledRows]] = field(default_factory=dict)
    once_bytes: int = 0  # a tile stage's bytes (its slots)
    once_tx: int = 0  # the bytes its loads deliver
    once_stages: int = 0
    once_block: ir.Block | None = None  # the producer's block that holds those copies

    def add_copy(self, op: ir.Operation, cluster: int) -> None:
        dst = op.operands[1]
        rows = sm90_tma.swizzled_rows(op, tensor_type(dst.type))
        key = op_id(pipelined(op))
        self.loop_bytes[key] = self.loop_bytes.get(key, 0) + rows.bytes
        if cluster > 1 and not sm90_cluster.varies(op.operands[0], cluster):
            sm90_cluster.check_split(op, rows, cluster)
            self.multicast.add(op_id(op))
        if dst not in self.slots:
            self.slots[dst] = (self.stage_bytes, rows)
            self.stage_bytes += smem.ring_slot_bytes(rows.bytes)

    def add_once(self, op: ir.Operation, cluster: int) -> None:
        """A copy outside the pipelined loops: a slot of the once ring. Such copies sit
        together in one block of the producer, in no `scf.if` (both sides count them)."""
        dst = op.operands[1]
        rows = sm90_tma.swizzled_rows(op, tensor_type(dst.type))
        if cluster > 1:
            raise LoweringError(
                op, "copy<tma> outside a pipelined loop in a kernel of clusters is not lowered"
            )
        if self.once_block is not None and op.block != self.once_block:
            raise LoweringError(
                op, "the copies outside the pipelined loops (loaded once a tile) must sit "
                "together, in one block of the producer",
            )  # fmt: skip
        self.once_block = op.block
        p = op.parent
        while p.name == "scf.for":
            p = p.parent
        if "tile.role" not in p.attributes:
            raise LoweringError(
                op, "a copy outside the pipelined loops runs once per run of the loops around "
                f"it: it cannot sit in '{p.name}'",
            )  # fmt: skip
        if dst in self.once or dst in self.slots:
            raise LoweringError(op, "a buffer is filled once, in a pipelined loop or outside")
        self.once[dst] = (self.once_bytes, rows)
        self.once_bytes += smem.ring_slot_bytes(rows.bytes)
        self.once_tx += rows.bytes

    @property
    def once_offset(self) -> int:
        """Where the once ring's stages start in the array."""
        return self.stages * self.stage_bytes

    @property
    def chunks_offset(self) -> int:
        """Where the epilogue's chunks start."""
        return self.once_offset + self.once_stages * self.once_bytes

    @property
    def barriers_offset(self) -> int:
        return self.chunks_offset + self.epilogue_bytes

    @property
    def total(self) -> int:
        """The array's bytes (smem.ring_bytes)."""
        once = (self.once_stages, self.once_bytes)
        return smem.ring_bytes(self.stages, self.stage_bytes, self.epilogue_bytes, once)


def make_plan(
    func: ir.Operation, roles: dict[str, ir.Operation], epilogue: str, cluster: int
) -> Plan:
    """The ring of `func` (its roles; `epilogue`: tile-ring's option; `cluster`: the blocks
    of a cluster)."""
    plan, stages = Plan(), set()
    ops: list[ir.Operation] = []
    walk(func, lambda o: ops.append(o) if o.name in ("tile.copy", "tile.gemm") else None)
    for op in ops:
        if op.name == "tile.copy":
            atom = ir.StringAttr(op.attributes["atom"]).value
            if atom != "tma":
                raise LoweringError(
                    op, f"copy<{atom}> in a warp-specialised kernel: only copy<tma> is lowered"
                )
            if pipelined_or_none(op) is None:
                plan.add_once(op, cluster)
                continue
            plan.add_copy(op, cluster)
        stages.add(ir.IntegerAttr(pipelined(op).attributes["tile.stages"]).value)
    if len(stages) > 1:
        raise LoweringError(
            func,
            f"the producer's and consumers' pipelined loops share one ring: they need one "
            f"stage count, got {sorted(stages)}",
        )
    plan.stages = stages.pop() if stages else 0
    if plan.once:  # with ping-pong each consumer group holds its own tile's
        plan.once_stages = 2 if Role.of(roles["consumer"]).pingpong else 1
    plan_epilogue(plan, roles["consumer"], epilogue)
    return plan


def plan_epilogue(plan: Plan, consumer: ir.Operation, mode: str) -> None:
    """The consumers' store goes out through TMA (`epilogue=tma`) when it is the one store of
    a 16-bit tile of a kernel tensor from a register tensor spread as a wgmma's C."""
    stores: list[ir.Operation] = []
    walk(consumer, lambda o: stores.append(o) if o.name == "tile.store" else None)
    if mode != "tma" or len(stores) != 1 or len(stores[0].operands) != 2:
        return
    t = tensor_type(stores[0].operands[1].type)
    if tensor_of(stores[0].operands[1]) is None or elem_bytes(t.elem) != 2:
        return
    if not whole_chunks(stores[0], consumer):
        return
    plan.store = stores[0]
    role = Role.of(consumer)
    plan.epilogue_bytes = smem.epilogue_bytes(len(role.groups))


def whole_chunks(store: ir.Operation, consumer: ir.Operation) -> bool:
    """Whether each consumer group's piece of the stored tile is whole epilogue chunks (64
    rows of 128 bytes): the tile over the wgmma's (GM, GN) warp groups (the consumers' one
    tiled MMA)."""
    mmas = {g.operands[0].type for g in gemms_in(consumer)}
    if len(mmas) != 1:
        return False
    tiling = MmaType.of(mmas.pop()).tiling
    gm, gn = (int(x) for x in tiling.strip("()").split(",")[:2])
    shape = A.flatten(A.shape(tensor_type(store.operands[1].type).layout))
    if len(shape) != 2 or not all(isinstance(e, int) for e in shape):
        return False
    return shape[0] % (gm * smem.EPILOGUE_CHUNK_BYTES // 128) == 0 and shape[1] % (gn * 64) == 0


def gemms_in(op: ir.Operation) -> list[ir.Operation]:
    found: list[ir.Operation] = []
    walk(op, lambda o: found.append(o) if o.name == "tile.gemm" else None)
    return found

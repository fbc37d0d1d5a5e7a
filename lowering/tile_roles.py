"""Passes (lowered stage): the warp-group roles of a warp-specialised kernel, as the rungs see them.

A `warp_specialize` block holds role regions (`scf.execute_region {tile.role = "producer" |
"consumer", tile.warpgroups = array<i64: ...>, tile.registers, tile.pingpong}`) until
tile-warp-roles puts each on its warp groups at the end of the ladder. Until then every rung
that spreads or lowers a register tensor asks here which threads run the op it lowers: a
consumer's register tensors are spread over the consumer threads (all its warp groups, or, with
ping-pong, the 128 threads of one group, each holding its own tiles), numbered from 0 at the
role's first thread, not over the whole block; a barrier inside a role orders only the role's
threads (a named barrier: `bar.sync` on the whole block would wait for the producer forever).

    role                       threads   index                 barrier
    consumer(1..2)             256       tid - 128             bar.sync 3, 256
    consumer(1..2, pingpong)   128       tid mod 128           bar.sync 1 + group, 128
    outside warp_specialize    T         tid                   bar.sync 0 (the block's)
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from tilec.binding import walk
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.lowering.tile_math import constant

ROLE = "tile.role"
WARPGROUP = 128  # threads
# On the op defining a role's thread index (in the role's entry block), as tile_remat tags
# the kernel's: read once, shared by the rungs.
TAG = "tile.thread_index"


def role_of(op: ir.Operation) -> ir.Operation | None:
    """The role region holding `op` (or `op` itself if it is one), None outside roles."""
    p: ir.Operation | None = op
    while p is not None and p.name != "func.func":
        if ROLE in p.attributes:
            return p
        p = p.parent
    return None


def kind(role: ir.Operation) -> str:
    return ir.StringAttr(role.attributes[ROLE]).value


def warpgroups(role: ir.Operation) -> list[int]:
    return list(ir.DenseI64ArrayAttr(role.attributes["tile.warpgroups"]))


def pingpong(role: ir.Operation) -> bool:
    return "tile.pingpong" in role.attributes and bool(
        ir.IntegerAttr(role.attributes["tile.pingpong"]).value
    )


@dataclass(frozen=True)
class Role:
    """Who runs a role: its warp groups, whether they take tiles in turns (ping-pong), and so
    the threads its register tensors are spread over."""

    op: ir.Operation
    kind: str
    groups: tuple[int, ...]
    pingpong: bool

    @staticmethod
    def of(op: ir.Operation) -> Role | None:
        role = role_of(op)
        if role is None:
            return None
        return Role(role, kind(role), tuple(warpgroups(role)), pingpong(role))

    @property
    def threads(self) -> int:
        """The threads a register tensor of the role is spread over."""
        return WARPGROUP if self.pingpong else WARPGROUP * len(self.groups)

    @property
    def first(self) -> int:
        return min(self.groups)

    def barrier_id(self, b: IndexBuilder, tid: ir.Value) -> Term:
        """The named barrier of the threads that share the role's register tensors: one for
        all consumer groups (1 + groups: the ids below are the groups' own), or, with
        ping-pong, the group's own (1 + its index among the consumers)."""
        if self.pingpong:
            return b.add(b.sub(b.div(tid, WARPGROUP), self.first), 1)
        return 1 + len(self.groups)


def spread_threads(op: ir.Operation, kernel_threads: int) -> int:
    """The threads a register tensor made by `op` is spread over: its role's, else all."""
    role = Role.of(op)
    if role is None:
        return kernel_threads
    if role.kind != "consumer":
        raise LoweringError(
            op, "register tensors belong in a consumer role: a producer runs on one thread"
        )
    return role.threads


def thread_index(role: Role, kernel_tid: ir.Value) -> ir.Value:
    """The role's thread index (0 at its first thread; with ping-pong, in its group), read
    once at the top of the role's body: the tagged op there, or built there now from the
    kernel's index."""
    body = role.op.regions[0].blocks[0]
    for o in body.operations:
        if TAG in o.operation.attributes:
            return o.operation.results[0]
    b = IndexBuilder()
    with ir.InsertionPoint.at_block_begin(body), role.op.location:
        if role.pingpong:
            tid = b.value(b.rem(kernel_tid, WARPGROUP))
        else:
            tid = b.value(b.sub(kernel_tid, role.first * WARPGROUP))
    tid.owner.attributes[TAG] = ir.StringAttr.get("role")
    return tid


def untag(func: ir.Operation) -> None:
    """Drop the roles' thread-index tags (the last rung that reads them)."""

    def visit(op: ir.Operation) -> None:
        if ROLE in op.attributes:
            for o in op.regions[0].blocks[0].operations:
                if TAG in o.operation.attributes:
                    del o.operation.attributes[TAG]

    walk(func, visit)


def i32(v: Term, b: IndexBuilder) -> ir.Value:
    return arith.IndexCastOp(ir.IntegerType.get_signless(32), b.value(v)).result


def named_barrier(ident: Term, count: int, b: IndexBuilder, arrive: bool = False) -> None:
    """bar.sync (or, `arrive`, bar.arrive) on named barrier `ident` for `count` threads.
    Called as the intrinsic: MLIR 22's `nvvm.barrier` prints a trailing `loc(...)` its parser
    rejects, so a `lowered` module holding one would not parse back (`tilec build`'s wide
    variant does)."""
    kind = "arrive" if arrive else "sync"
    _call(
        "llvm.call_intrinsic",
        [i32(ident, b), constant(ir.IntegerType.get_signless(32), count)],
        {
            "intrin": f'"llvm.nvvm.barrier.cta.{kind}.aligned.count"',
            "fastmathFlags": "#llvm.fastmath<none>",
            "op_bundle_sizes": "array<i32>",
            "operandSegmentSizes": "array<i32: 2, 0>",
        },
    )


def _call(name: str, operands: list[ir.Value], attrs: dict[str, str]) -> None:
    ir.Operation.create(
        name, operands=operands, attributes={k: ir.Attribute.parse(v) for k, v in attrs.items()}
    )

"""The roles of a `warp_specialize` region: which warp groups run which body.

Each role becomes a branch of one if / else-if chain on the thread's warp group, so a value
only one role uses is not live in another's registers (a producer released to 40 registers
must not carry the consumers' epilogue operands through its loop); `setmaxnreg` opens each
body that names a register budget (`.inc` for consumers, `.dec` for producers), and a body
that one thread runs (the producer's: one thread issues every TMA load) sits under `scf.if`
on that thread after it.

    scf.if %wg == 0 {                     // producer(warpgroup = 0, registers = 40)
      nvvm.setmaxregister decrease 40
      scf.if %tid mod 128 == 0 { ... }
    } else {
      scf.if %wg == 1 || %wg == 2 {       // consumer(warpgroups = 1..2, registers = 232)
        nvvm.setmaxregister increase 232
        ...
      }
    }
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith, nvvm, scf

from tilec.binding import walk
from tilec.lowering import IndexBuilder, LoweringError

WS = "tile.warp_specialize"
KEYS = ("tile.role", "tile.warpgroups", "tile.registers", "tile.pingpong", "tile.stagger")
WARPGROUP = 128  # threads


def kind(role: ir.Operation) -> str:
    return ir.StringAttr(role.attributes["tile.role"]).value


def prepare(
    role: ir.Operation,
    single: ir.Value | None = None,
    at_end: Callable[[], None] | None = None,
) -> None:
    """`setmaxnreg` at the top of `role`'s body (its `tile.registers`); the rest of the body
    under `scf.if single` when given; `at_end()` emitted last in the body. The role's tile
    attributes are dropped."""
    body = role.regions[0].blocks[0]
    ops = list(body.operations)
    end = ops[-1]
    if single is not None:
        with ir.InsertionPoint(end), role.location:
            guard = scf.IfOp(single)
            with ir.InsertionPoint(guard.then_block):
                inner_end = scf.YieldOp([])
        for o in ops[:-1]:
            o.move_before(inner_end)
    if at_end is not None:
        with ir.InsertionPoint(end), role.location:
            at_end()
    if "tile.registers" in role.attributes:
        count = ir.IntegerAttr(role.attributes["tile.registers"]).value
        action = "increase" if kind(role) == "consumer" else "decrease"
        with ir.InsertionPoint(list(body.operations)[0]), role.location:
            nvvm.SetMaxRegisterOp(count, ir.Attribute.parse(f"#nvvm<action {action}>"))
    for key in KEYS:
        if key in role.attributes:
            del role.attributes[key]


def condition(groups: list[int], warpgroup: ir.Value, b: IndexBuilder) -> ir.Value:
    """warpgroup ∈ groups."""
    cond: ir.Value | None = None
    for g in groups:
        eq = arith.CmpIOp(arith.CmpIPredicate.eq, warpgroup, b.value(g)).result
        cond = eq if cond is None else arith.OrIOp(cond, eq).result
    assert cond is not None, "a role runs on at least one warp group"
    return cond


def chain(roles: list[tuple[ir.Operation, Callable[[], ir.Value]]]) -> None:
    """Each (role, condition) under `if condition` in turn, the later ones in the else branch
    of the earlier: at most one role runs on a thread. The conditions are built where they
    are tested (`condition()` is called at that insertion point)."""
    where = roles[0][0]
    for k, (role, cond) in enumerate(roles):
        with ir.InsertionPoint(where), role.location:
            branch = scf.IfOp(cond(), has_else=k + 1 < len(roles))
            with ir.InsertionPoint(branch.then_block):
                then_end = scf.YieldOp([])
            if k + 1 < len(roles):
                with ir.InsertionPoint(branch.else_block):
                    where = scf.YieldOp([])
        role.move_before(then_end)


def is_region(op: ir.Operation, key: str) -> bool:
    return op.name == "scf.execute_region" and key in op.attributes


def roles_of(func: ir.Operation) -> dict[str, ir.Operation] | None:
    """The kernel's producer and consumer role regions (None: no warp_specialize), checked:
    one warp_specialize at the kernel's top level, one producer and one consumer, threads(N)
    of whole warp groups that the roles' groups lie in."""
    regions: list[ir.Operation] = []
    walk(func, lambda o: regions.append(o) if is_region(o, WS) else None)
    if not regions:
        return None
    if len(regions) != 1 or regions[0].parent.name != "func.func":
        raise LoweringError(regions[-1], "a kernel holds one warp_specialize, at its top level")
    threads = list(ir.DenseI64ArrayAttr(func.attributes["tile.threads"]))
    if len([t for t in threads if t > 1]) > 1 or threads[0] % WARPGROUP:
        raise LoweringError(func, "a warp-specialised kernel takes threads(N), N a multiple of 128")
    body = regions[0].regions[0].blocks[0]
    roles = [o.operation for o in body.operations if is_region(o.operation, "tile.role")]
    found = {ir.StringAttr(r.attributes["tile.role"]).value: r for r in roles}
    if sorted(found) != ["consumer", "producer"] or len(roles) != 2:
        raise LoweringError(regions[0], "warp_specialize lowers one producer and one consumer role")
    for role in roles:
        groups = list(ir.DenseI64ArrayAttr(role.attributes["tile.warpgroups"]))
        if any(not 0 <= g < threads[0] // WARPGROUP for g in groups):
            raise LoweringError(role, f"warp groups {groups} beyond threads({threads[0]})")
    return found

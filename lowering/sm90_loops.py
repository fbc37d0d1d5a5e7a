"""Loops of a warp-specialised kernel: iteration numbers shared by producer and consumers.

Producer and consumers walk the same loops (the persistent tile loop, the pipelined K loop in
it), so numbering every iteration of a pipelined loop across the whole kernel,
`((i_1 · n_2 + i_2) · n_3 + ...)` with `i_j` the iteration index and `n_j` the trip count of
the j-th loop, gives both sides the same ring position. That needs the inner trip counts to be
the same on every outer iteration: they must be computed from values defined outside the role
(kernel sizes), which is checked.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import arith

from tilec.binding import defined_inside, enclosing_loops
from tilec.lowering import IndexBuilder, LoweringError, Term
from tilec.passes.layout_fold import constant_index


def invariant(value: ir.Value, region_op: ir.Operation) -> bool:
    """Whether `value` is the same on every iteration of loops inside `region_op`: defined
    outside it, or pure arith of such values."""
    if not defined_inside(value, region_op):
        return True
    owner = value.owner
    if isinstance(owner, ir.Block):
        return False  # a block argument inside: a loop's induction variable or iter_arg
    op = owner.operation if isinstance(owner, ir.OpView) else owner
    return op.name.startswith("arith.") and all(invariant(v, region_op) for v in op.operands)


def index(loop: ir.Operation, b: IndexBuilder) -> Term:
    """The iteration index (iv - lb) / step of `loop`, inside it."""
    lb, _, step = list(loop.operands)[:3]
    iv = loop.regions[0].blocks[0].arguments[0]
    return b.div(arith.SubIOp(iv, lb).result, step_term(step))


def trips(loop: ir.Operation, b: IndexBuilder) -> Term:
    lb, ub, step = list(loop.operands)[:3]
    span = arith.SubIOp(ub, lb).result
    s = step_term(step)
    # ceil((ub - lb) / step), 0 when ub <= lb
    positive = arith.MaxSIOp(span, b.value(0)).result
    return b.div(
        b.add(positive, b.add(s, -1) if isinstance(s, int) else arith.SubIOp(s, b.value(1)).result),
        s,
    )


def step_term(step: ir.Value) -> Term:
    found = constant_index(step)
    return step if found is None else found


def siblings(loop: ir.Operation) -> list[ir.Operation]:
    """The pipelined loops of `loop`'s block in order, `loop` among them (a block may run
    several one after the other: attention's unmasked tiles, then its diagonal ones); just
    `loop` when it is not pipelined."""
    if "tile.stages" not in loop.attributes:
        return [loop]
    ops = [o.operation for o in loop.block.operations]
    return [o for o in ops if o.name == "scf.for" and "tile.stages" in o.attributes]


def counter_of(
    loop: ir.Operation,
    role: ir.Operation,
    b: IndexBuilder,
    at_end: bool = False,
    start: Callable[[ir.Operation], Term | None] = lambda lp: None,
) -> Term:
    """The kernel-wide number of the current iteration of `loop` (or, `at_end`, just after
    the loop: of the iteration that would follow its last). Pipelined loops one after the
    other in a block number their iterations on from the earlier ones' (`siblings`): the
    roles may split the same iterations into loops differently (one producer loop over a
    tile's K/V blocks, two consumer loops over its unmasked and its diagonal blocks) as long
    as each block's loops run as many in all.

    `start(lp)`, where not None, is the number of iterations of `lp` the block ran before
    this run of it (`sm90_split`: units of work whose share of K differs): the numbering
    goes on from there."""
    chain = [*enclosing_loops(loop, role), loop]
    for inner in chain[1:]:
        if start(inner) is not None:
            if len(siblings(inner)) > 1:
                raise LoweringError(inner, "a split unit runs one pipelined loop")
            continue
        for later in siblings(inner)[1:]:  # their counts are needed where the first starts
            if any(defined_after(v, siblings(inner)[0]) for v in list(later.operands)[:3]):
                raise LoweringError(
                    later, "pipelined loops one after the other inside another loop take "
                    "bounds computed before the first of them",
                )  # fmt: skip
        for v in [x for lp in siblings(inner) for x in list(lp.operands)[:3]]:
            if not invariant(v, role):
                raise LoweringError(
                    inner,
                    "a loop inside a persistent one needs bounds that are the same on every tile",
                )
    count: Term = 0
    for k, lp in enumerate(chain):
        last = k == len(chain) - 1
        group = siblings(lp)
        own = trips(lp, b)
        n = own if len(group) == 1 or not k else total([trips(s, b) for s in group], b)
        base = start(lp)
        i = own if last and at_end else index(lp, b)
        if len(group) > 1:  # after the iterations of the loops before it in its block
            i = b.add(total([trips(s, b) for s in group[: group.index(lp)]], b), i)
        if base is not None:
            count = b.add(base, i)
        else:
            count = b.add(b.mul(count, n), i) if k else i
    return count


def defined_after(v: ir.Value, op: ir.Operation) -> bool:
    """Whether `v` is made by an op of `op`'s block that comes after `op`."""
    owner = v.owner
    if isinstance(owner, ir.Block):
        return False
    o = owner.operation
    return o.block == op.block and op.is_before_in_block(o)


def total(terms: list[Term], b: IndexBuilder) -> Term:
    out: Term = 0
    for t in terms:
        out = b.add(out, t)
    return out

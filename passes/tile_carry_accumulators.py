r"""Passes: `tile-carry-accumulators`, a gemm's accumulator as a value the loops carry.

In the tile stage `tile.gemm(mma, a, b, acc)` adds into `acc` in place, as the language's
`gemm` does. This pass writes every such gemm in its value form, `%acc2 = tile.gemm(mma, a, b,
%acc)`, and threads the accumulator through the loops around it as `scf.for` iter_args, so a
register tensor that lives across a loop is a loop-carried value whether a `var` or a gemm
updates it:

    %acc = "tile.fragment"(%mma) ...
    scf.for %k = %c0 to %n step %c1 {
      "tile.gemm"(%mma, %a, %b, %acc) : (...) -> ()
    }
    "tile.store"(%acc, %c)
  →
    %r = scf.for %k = %c0 to %n step %c1 iter_args(%x = %acc) -> (...) {
      %y = "tile.gemm"(%mma, %a, %b, %x) : (...) -> (...)
      scf.yield %y
    }
    "tile.store"(%r, %c)

Every use after a gemm reads its result; a `fill` of the accumulator in its own block stays in
place. A prefetching gemm (tile-pipeline's `tile.prefetch`) is carried alike: convert-tile-mma
loads its next k-step's fragments before the loop and carries them after the loop's own
iter_args. An accumulator that a gemm updates inside another region than a loop (an `scf.if`)
is a located error: nothing there would carry it out. In the `lowered` stage, before
tile-distribute.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import scf

from tilec.binding import op_id, walk
from tilec.lowering import LoweringError
from tilec.lowering.tile_loops import moved_loop
from tilec.passes.base import Pass, register


def mutators(acc: ir.Value) -> list[ir.Operation]:
    """The ops that change `acc` in place: gemms into it, fills of it."""
    out = []
    for use in acc.uses:
        op = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if (op.name, use.operand_number) in (("tile.gemm", 3), ("tile.fill", 0)):
            out.append(op)
    return out


def carried(acc: ir.Value, home: ir.Block) -> bool:
    """Whether `acc` (made in `home`) is to be threaded: a gemm updates it inside a loop, none
    in its value form yet, and fills stay in `home` (else a located error or left alone)."""
    ops = mutators(acc)
    gemms = [op for op in ops if op.name == "tile.gemm"]
    if any(op.results for op in gemms):
        return False
    if any(op.name == "tile.fill" and op.block != home for op in ops):
        return False
    for op in gemms:
        block, holder = op.block, op.parent
        while block != home:
            if holder.name != "scf.for":
                raise LoweringError(
                    op,
                    f"'tile.gemm' accumulates into a fragment made outside this '{holder.name}':"
                    " only loops carry accumulators",
                )
            block, holder = holder.block, holder.parent
    return any(op.block != home for op in gemms)


def holds(op: ir.Operation, targets: set[int]) -> bool:
    found: list[ir.Operation] = []
    walk(op, lambda o: found.append(o) if op_id(o) in targets else None)
    return bool(found)


def thread(ops: list[ir.Operation], acc: ir.Value, current: ir.Value, targets: set) -> ir.Value:
    """Rewrite `ops` (one block's, in order) to read `current` where they read `acc`, each
    gemm into it to its value form and each loop holding one to carry it; the value at the end."""
    for op in ops:
        if op.name == "tile.gemm" and op_id(op) in targets:
            operands = [*list(op.operands)[:3], current]
            with ir.InsertionPoint(op), op.location:
                new = ir.Operation.create(
                    "tile.gemm",
                    results=[current.type],
                    operands=operands,
                    attributes={name: op.attributes[name] for name in op.attributes},
                )
            op.erase()
            current = new.results[0]
        elif op.name == "scf.for" and holds(op, targets):
            current = carry_through(op, acc, current, targets)
        else:
            replace_inside(op, acc, current)
    return current


def replace_inside(op: ir.Operation, acc: ir.Value, current: ir.Value) -> None:
    """`op` and the ops nested in it read `current` where they read `acc`."""
    if acc == current:
        return

    def visit(o: ir.Operation) -> None:
        for i, v in enumerate(o.operands):
            if v == acc:
                o.operands[i] = current

    walk(op, visit)


def carry_through(loop: ir.Operation, acc: ir.Value, current: ir.Value, targets: set) -> ir.Value:
    """`loop` rebuilt to carry the accumulator (initially `current`) as its last iter_arg."""
    inits = [*list(loop.operands)[3:], current]
    new = moved_loop(loop, inits, keep_yield=True)
    old_args = list(loop.regions[0].blocks[0].arguments)[1:]
    new_args = list(new.inner_iter_args)
    for old, arg in zip(old_args, new_args, strict=False):
        old.replace_all_uses_with(arg)
    body = list(new.body.operations)
    end = thread(body[:-1], acc, new_args[-1], targets)
    yielded = body[-1]
    with ir.InsertionPoint(yielded), yielded.location:
        scf.YieldOp([*list(yielded.operands), end])
    yielded.erase()
    for old, result in zip(loop.results, new.results, strict=False):
        old.replace_all_uses_with(result)
    loop.erase()
    return new.results[len(inits) - 1]


@register
class TileCarryAccumulators(Pass):
    """Write gemms in their value form and carry their accumulators through loops as iter_args."""

    name = "tile-carry-accumulators"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, carry)


def carry(func: ir.Operation) -> None:
    """Every accumulator of `func` that a gemm updates inside a loop, threaded through it."""
    gemms: list[ir.Operation] = []
    walk(func, lambda op: gemms.append(op) if op.name == "tile.gemm" else None)
    for acc in dict.fromkeys(op.operands[3] for op in gemms):
        home = defining_block(acc)
        if carried(acc, home):
            # by binding.op_id: a gemm's hash follows its operands, which threading changes
            targets = {op_id(op) for op in mutators(acc) if op.name == "tile.gemm"}
            thread(ops_after(acc, home), acc, acc, targets)


def defining_block(value: ir.Value) -> ir.Block:
    owner = value.owner
    return owner if isinstance(owner, ir.Block) else owner.operation.block


def ops_after(value: ir.Value, block: ir.Block) -> list[ir.Operation]:
    """The ops of `block` after `value`'s definition (all of them for a block argument)."""
    ops = [o.operation for o in block.operations]
    owner = value.owner
    if isinstance(owner, ir.Block):
        return ops
    start = ops.index(owner.operation)
    return ops[start + 1 :]

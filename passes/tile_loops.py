"""Passes (lowered stage): loops that carry register values across their iterations.

convert-tile-to-gpu lowers a register tensor to per-thread scalars, so a loop whose body
updates one made outside it is rebuilt as an `scf.for` carrying those scalars as iter_args.
A `var` and (after tile-carry-accumulators) a gemm's accumulator are iter_args already, and
tile_carry rebuilds their loops; `CarriedLoops` is for what the IR does not carry: a
prefetching gemm's accumulator and next k-step fragments (loaded before the loop), and an
in-place accumulator where tile-carry-accumulators did not run. It rebuilds the loops around
each such gemm at their first tile op and yields after their last; `with_iter_args` and
`moved_loop` rebuild one loop.
"""

from __future__ import annotations

from collections.abc import Callable

from mlir import ir
from mlir.dialects import scf

from tilec.binding import defined_inside
from tilec.lowering import LoweringError
from tilec.passes.tile_fragments import Frag
from tilec.passes.tile_pipeline import PREFETCH


class CarriedLoops:
    """scf.for loops whose gemm accumulates into a fragment made outside: the fragment's
    values become iter_args (the loop is rebuilt at its first tile op, yields after its last).
    """

    def __init__(
        self, ops: list[ir.Operation], preload: Callable[[ir.Operation], Frag] | None = None
    ) -> None:
        self.loops: list[ir.Operation] = []
        # Prefetching gemms (`gemm_prefetch`): their innermost loop also carries the next
        # k-step's fragments, which `preload(gemm)` loads before the loop.
        self.preload = preload
        self.prefetching: dict[int, list[ir.Operation]] = {}
        self.ahead: list[tuple[ir.Operation, Frag]] = []
        self.of: list[list[int]] = []  # per op (by position): enclosing loops, outermost first
        self.accs: dict[int, list[ir.Value]] = {}
        self.last: dict[int, int] = {}
        self.open: dict[int, tuple[ir.Operation, list[Frag]]] = {}
        for n, op in enumerate(ops):
            chain, p = [], op.parent
            while p is not None and p.name != "func.func":
                if p.name == "scf.for":
                    chain.append(self.number(p))
                p = p.parent
            self.of.append(chain[::-1])
            for loop in chain:
                self.last[loop] = n
            if op.name == "tile.gemm":
                acc = op.operands[3]
                for loop in chain:
                    if not defined_inside(acc, self.loops[loop]):
                        self.accs.setdefault(loop, []).append(acc)
                if PREFETCH in op.attributes and chain:
                    self.prefetching.setdefault(chain[-1], []).append(op)

    def number(self, loop: ir.Operation) -> int:
        for k, known in enumerate(self.loops):
            if known == loop:
                return k
        self.loops.append(loop)
        return len(self.loops) - 1

    def rebuilds(self, loop: ir.Operation) -> bool:
        """Whether this loop carries accumulators made outside it, or prefetched fragments
        (then it is rebuilt here, and cannot also carry a `var` of its own)."""
        k = next((k for k, known in enumerate(self.loops) if known == loop), None)
        return k is not None and (k in self.accs or k in self.prefetching)

    def enter(self, n: int, frags: dict[ir.Value, object]) -> None:
        """Before op n: rebuild each loop around it that carries an accumulator, once."""
        for loop in self.of[n]:
            if loop not in self.accs or loop in self.open:
                continue
            carried = [frags.get(v) for v in dict.fromkeys(self.accs[loop])]
            if not all(isinstance(f, Frag) for f in carried):
                raise LoweringError(self.loops[loop], "gemm accumulator is not a lowered fragment")
            for gemm in self.prefetching.get(loop, []):
                assert self.preload is not None, "prefetching gemms need a preload"
                with ir.InsertionPoint(self.loops[loop]), gemm.location:
                    ahead = self.preload(gemm)
                self.ahead.append((gemm, ahead))
                carried.append(ahead)
            self.open[loop] = (rebuild(self.loops[loop], carried), carried)

    def fragments_ahead(self, gemm: ir.Operation) -> Frag:
        """The carried next-k-step fragments of a prefetching gemm."""
        for op, frag in self.ahead:
            if op == gemm:
                return frag
        raise LoweringError(gemm, "a prefetching gemm must sit in the loop that carries it")

    def leave(self, n: int) -> None:
        """After op n: yield the accumulators of every loop whose last tile op it was."""
        for loop in reversed(self.of[n]):
            if self.last[loop] != n or loop not in self.open:
                continue
            new, carried = self.open.pop(loop)
            body = new.regions[0].blocks[0]
            list(body.operations)[-1].erase()
            with ir.InsertionPoint(body), new.location:
                scf.YieldOp([v for f in carried for row in f.values for v in row])
            results = iter(new.results)
            for f in carried:
                f.values = [[next(results) for _ in row] for row in f.values]


def rebuild(loop: ir.Operation, carried: list[Frag]) -> ir.Operation:
    """The same loop with the fragments' values as iter_args; the old loop is erased."""
    new, inner = with_iter_args(loop, [v for f in carried for row in f.values for v in row])
    args = iter(inner)
    for f in carried:
        f.values = [[next(args) for _ in row] for row in f.values]
    return new


def with_iter_args(loop: ir.Operation, inits: list[ir.Value]) -> tuple[ir.Operation, list]:
    """`loop` (an scf.for without iter_args) rebuilt to carry `inits`, its body and attributes
    moved over, the old loop erased: (the new loop, its iter_args inside the body). The body
    still yields nothing; the caller yields the carried values."""
    if len(loop.operands) != 3:
        raise LoweringError(loop, "a loop around gemm cannot carry values of its own yet")
    new = moved_loop(loop, inits, keep_yield=False)
    loop.erase()
    return new.operation, list(new.inner_iter_args)


def moved_loop(loop: ir.Operation, inits: list[ir.Value], keep_yield: bool) -> scf.ForOp:
    """A new scf.for before `loop` with its bounds, `inits` as iter_args, its attributes and
    its body's ops (its yield too when `keep_yield`, else the new body has no terminator yet);
    the induction variable is replaced, the old loop (its iter_args and results still in use)
    left for the caller to erase."""
    with ir.InsertionPoint(loop), loop.location:
        new = scf.ForOp(loop.operands[0], loop.operands[1], loop.operands[2], inits)
    with ir.InsertionPoint(new.body), loop.location:
        placeholder = scf.YieldOp([])
    old = loop.regions[0].blocks[0]
    ops = list(old.operations)
    for o in ops if keep_yield else ops[:-1]:
        o.move_before(placeholder)
    if keep_yield:
        placeholder.operation.erase()
    old.arguments[0].replace_all_uses_with(new.induction_variable)
    for name in list(loop.attributes):
        new.operation.attributes[name] = loop.attributes[name]
    return new

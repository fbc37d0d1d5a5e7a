r"""Passes (lowered stage): register tensors as per-thread SSA values, for convert-tile-to-gpu.

A block-level tile of static shape S is spread over the block's T threads in chunks of V
contiguous elements (V elements of mode `m`, the mode contiguous in global memory; 16 bytes
where the layouts allow). Elements are numbered with mode m fastest, then the other modes in
order; chunk v holds elements v*V .. v*V+V-1 and belongs to thread v mod T, as its chunk
number v div T. So one instruction of all threads touches T consecutive chunks (coalesced):

    e = j + V * (t + T * i)        j: element in chunk, t: thread, i: chunk of the thread

    bits of e:  [ i ........ | warp | lane  | j  ]      (powers of two)
                              \____ t ____/

Each thread keeps its chunks fully unrolled as scalars (`values[i][j]`), so nothing is
indexed dynamically and nothing goes to local memory. Every register tensor made from the
same tile by the same thread count has the same partition, so elementwise ops line up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir
from mlir.dialects import arith, math

from tilec.binding import CONTRACTED, contract, is_float_type
from tilec.dialects.layout import algebra as A
from tilec.lowering import IndexBuilder, LoweringError, Term, is_pow2, tile_math
from tilec.lowering.tile_math import constant
from tilec.lowering.tile_views import all_of


@dataclass(frozen=True)
class Partition:
    shape: tuple[int, ...]
    m: int  # the mode a chunk runs along
    vec: int  # V
    threads: int  # T
    # G > 1: consecutive chunk numbers go down G rows (the next mode in `order`) before moving
    # along m. Copies use it when their shared side is read element by element; see
    # `tile_memory.copy`. Register tensors always use G = 1 (`bits` relies on it).
    interleave: int = 1

    @property
    def order(self) -> list[int]:
        return [self.m] + [k for k in range(len(self.shape)) if k != self.m]

    @property
    def chunks(self) -> int:
        return A.product(self.shape) // self.vec

    @property
    def iters(self) -> int:
        return -(-self.chunks // self.threads)

    def active(self, i: int, t: ir.Value, b: IndexBuilder) -> ir.Value | None:
        """Whether thread t has chunk i (None: every thread has it)."""
        if (i + 1) * self.threads <= self.chunks:
            return None
        v = b.add(t, i * self.threads)
        return arith.CmpIOp(arith.CmpIPredicate.ult, b.value(v), b.value(self.chunks)).result

    def chunk_coords(self, i: int, t: ir.Value, b: IndexBuilder) -> list[Term]:
        """Coordinates of element 0 of thread t's chunk i (column-major in `order`).

        With G = interleave, chunk v = g + G * (c + C * q) (C chunks per row of m) starts at
        m-coordinate c * V of row q * G + g:

            v bits:  [ q ........ | c (C) | g (G) ]
        """
        v: Term = b.add(t, i * self.threads)
        coords: list[Term] = [0] * len(self.shape)
        order = self.order
        if self.interleave > 1:
            per_row = self.shape[self.m] // self.vec
            g, rest = b.rem(v, self.interleave), b.div(v, self.interleave)
            coords[self.m] = b.mul(b.rem(rest, per_row), self.vec)
            row = b.add(b.mul(b.div(rest, per_row), self.interleave), g)
            for n, k in enumerate(order[1:]):
                last = n == len(order) - 2
                coords[k] = row if last else b.rem(row, self.shape[k])
                row = row if last else b.div(row, self.shape[k])
            return coords
        rest: Term = b.mul(v, self.vec)
        for n, k in enumerate(order):
            last = n == len(order) - 1
            coords[k] = rest if last else b.rem(rest, self.shape[k])
            rest = rest if last else b.div(rest, self.shape[k])
        return coords

    def group_key(self, mode: int, i: int, j: int) -> tuple[int, int]:
        """The group of element j of chunk i when `mode` is reduced (see `group_key`)."""
        return group_key(self, mode, i, j)

    def under(self, mode: int, part: object) -> bool:
        """Whether a reduction of this along `mode` broadcasts over a tensor spread as `part`
        (its groups are `part`'s elements' groups): when `part` is this spread."""
        return self == part

    def describe(self) -> str:
        """The spread in the words of the language: tile shape, vector width, mode, threads."""
        return (
            f"a {'x'.join(map(str, self.shape))} tile in {self.vec}-element chunks along mode "
            f"{self.m} over {self.threads} threads"
        )

    def thread_bits(self, mode: int) -> tuple[int, int]:
        """The bit range [lo, hi) of the thread number t that holds part of `mode`'s
        coordinate (empty when the mode lies in the chunk number or the vector alone)."""
        lo, hi = self.bits(mode)
        vb = self.vec.bit_length() - 1
        return max(lo - vb, 0), min(hi - vb, self.threads.bit_length() - 1)

    def bits(self, mode: int) -> tuple[int, int]:
        """The bit range [lo, hi) of e that holds the coordinate of `mode` (powers of two)."""
        assert self.interleave == 1, "register tensors are never interleaved"
        lo = 0
        for k in self.order:
            width = self.shape[k].bit_length() - 1
            if k == mode:
                return lo, lo + width
            lo += width
        raise ValueError(mode)


@dataclass
class Frag:
    """One thread's part of a register tensor: values[i][j] for chunk i, element j."""

    part: Partition
    elem: ir.Type
    values: list[list[ir.Value]]

    def at(self, i: int, j: int) -> ir.Value:
        return self.values[i][j]


@dataclass
class Reduced:
    """A tensor reduced along `mode` to extent 1: one value per group of elements that share
    every other coordinate, already combined over all threads; broadcasts back over `part`."""

    part: Partition
    mode: int
    elem: ir.Type
    groups: dict[tuple[int, int], ir.Value]

    def at(self, i: int, j: int) -> ir.Value:
        return self.groups[self.part.group_key(self.mode, i, j)]  # a Partition or MMA's own


@dataclass
class Evaluation:
    """One place where deferred values are computed: whether their loads check bounds there,
    and the pairs they loaded (by load, chunk, pair), each read once per place."""

    guarded: bool
    loaded: dict[tuple[int, int, int], list[ir.Value]] = field(default_factory=dict)


@dataclass
class Deferred:
    """A register tensor computed where it is stored, chunk by chunk, not where it is defined.

    An epilogue such as `store(relu(alpha * acc + load(C, like = acc)), C)` would otherwise load
    the whole C tile before storing anything, beside the live accumulator; deferred, each chunk
    is loaded, combined and stored in turn (see `tile_epilogue`). `ready` are the conditions
    under which its loads may skip their bounds checks (built where it is stored)."""

    part: object
    ready: tuple[Callable[[IndexBuilder], ir.Value | bool], ...]
    value: Callable[[int, int, Evaluation], ir.Value]  # element j of chunk i


def chunk_values(x: Frag | Deferred, i: int, ev: Evaluation) -> list[ir.Value]:
    """The values of chunk i, computed at `ev` if x is deferred."""
    if isinstance(x, Frag):
        return x.values[i]
    return [x.value(i, j, ev) for j in range(x.part.vec)]


def fast_path(x: Frag | Deferred, cond: ir.Value | bool, b: IndexBuilder) -> ir.Value | bool:
    """`cond`, and if x is deferred, that its loads may skip their bounds checks."""
    if isinstance(x, Frag):
        return cond
    return all_of([cond, *(ready(b) for ready in x.ready)])


def group_key(part: Partition, mode: int, i: int, j: int) -> tuple[int, int]:
    """(i, j) with the bits that address `mode` cleared: equal keys share a reduced value."""
    lo, hi = part.bits(mode)
    vb = part.vec.bit_length() - 1
    ib = vb + part.threads.bit_length() - 1
    mask = ((1 << hi) - 1) ^ ((1 << lo) - 1)
    return i & ~(mask >> ib), j & ~(mask & ((1 << vb) - 1))


def is_float(t: ir.Type) -> bool:
    return is_float_type(t)


def convert(v: ir.Value, to: ir.Type) -> ir.Value:
    """Element type conversion (float widths, int widths, int <-> float, signed)."""
    src = v.type
    if src == to:
        return v
    if is_float(src) and is_float(to):
        wider = to.width > src.width
        return (arith.ExtFOp if wider else arith.TruncFOp)(to, v).result
    if is_float(to):
        return arith.SIToFPOp(to, v).result
    if is_float(src):
        return arith.FPToSIOp(to, v).result
    wider = to.width > src.width
    return (arith.ExtSIOp if wider else arith.TruncIOp)(to, v).result


FLOAT_BINARY = {
    "add": arith.AddFOp,
    "sub": arith.SubFOp,
    "mul": arith.MulFOp,
    "div": arith.DivFOp,
    "rem": arith.RemFOp,
    "max": arith.MaximumFOp,
    "min": arith.MinimumFOp,
}
INT_BINARY = {
    "add": arith.AddIOp,
    "sub": arith.SubIOp,
    "mul": arith.MulIOp,
    "div": arith.DivSIOp,
    "rem": arith.RemSIOp,
    "max": arith.MaxSIOp,
    "min": arith.MinSIOp,
}
REDUCE_OP = {"max": "max", "min": "min", "sum": "add"}


def binary(op: ir.Operation | None, kind: str, x: ir.Value, y: ir.Value) -> ir.Value:
    table = FLOAT_BINARY if is_float(x.type) else INT_BINARY
    if kind not in table:
        raise LoweringError(op, f"unknown binary op '{kind}'")
    if table is FLOAT_BINARY and kind in CONTRACTED:
        return table[kind](x, y, fastmath=contract()).result
    return table[kind](x, y).result


def unary(op: ir.Operation, kind: str, x: ir.Value) -> ir.Value:
    if not is_float(x.type):
        if kind == "neg":
            return arith.SubIOp(constant(x.type, 0), x).result
        if kind == "abs":
            return math.AbsIOp(x).result
        raise LoweringError(op, f"'{kind}' needs a float operand, got {x.type}")
    simple = {
        "exp": math.ExpOp,
        "exp2": math.Exp2Op,
        "log": math.LogOp,
        "sqrt": math.SqrtOp,
        "rsqrt": math.RsqrtOp,
        "tanh": math.TanhOp,
        "abs": math.AbsFOp,
        "neg": arith.NegFOp,
    }
    if kind == "exp" and isinstance(x.type, ir.F32Type):
        return tile_math.fast_exp(x)
    if kind in simple:
        return simple[kind](x).result
    one = constant(x.type, 1.0)
    if kind == "relu":
        return arith.MaximumFOp(x, constant(x.type, 0.0)).result
    if kind == "sigmoid":  # 1 / (1 + exp(-x))
        e = unary(op, "exp", arith.NegFOp(x).result)
        return arith.DivFOp(one, arith.AddFOp(one, e).result).result
    if kind == "gelu":  # x/2 * (1 + erf(x / sqrt 2)) = x * Phi(x)
        return tile_math.gelu(x)
    if kind == "gelu_tanh":  # x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
        return tile_math.gelu_tanh(x)
    raise LoweringError(op, f"unknown unary op '{kind}'")


Value = Frag | Reduced | Deferred | ir.Value


def combined_spread(
    op: ir.Operation, spreads: list[tuple[object, int | None]]
) -> tuple[object, int | None]:
    """The spread of elementwise math on operands spread as `spreads` (plain ones left out):
    (partition, None) of a full tensor, (partition, mode) of a reduction along `mode`. The
    result takes the full operands' partition, over which the reductions broadcast (`under`),
    and is a reduction when all operands are, along one mode. Operands that do not line up are
    a located error. tile-distribute decides types with this, convert-tile-to-gpu lowers."""
    full = [p for p, mode in spreads if mode is None]
    part = full[0] if full else spreads[0][0]
    for p, mode in spreads:
        if not (p == part if mode is None else p.under(mode, part)):  # type: ignore[attr-defined]
            raise LoweringError(
                op,
                f"operands are spread over the threads differently: {part.describe()} and "  # type: ignore[attr-defined]
                f"{p.describe()} (hint: give both operands the same tile shape and layout, or "  # type: ignore[attr-defined]
                "load one like the other: load(t, like = other))",
            )
    modes = {mode for _, mode in spreads}
    return (part, modes.pop()) if not full and len(modes) == 1 else (part, None)


def elementwise(op: ir.Operation, operands: list[Value], fn) -> Frag | Deferred | Reduced:  # noqa: ANN001
    """Apply fn(*scalars) element by element; scalars and reduced tensors broadcast. With a
    deferred operand the result is deferred too: fn runs where it is stored. Reduced tensors
    (along one mode) with scalars stay reduced: fn runs once per group."""
    frags = [x for x in operands if isinstance(x, Frag | Reduced | Deferred)]
    if not frags:  # one-element tensors are plain values every thread holds
        return fn(*operands)
    spreads = [(x.part, x.mode if isinstance(x, Reduced) else None) for x in frags]
    part, mode = combined_spread(op, spreads)
    if mode is not None:
        groups = {
            key: fn(*[x.groups[key] if isinstance(x, Reduced) else x for x in operands])
            for key in frags[0].groups
        }
        return Reduced(part, mode, next(iter(groups.values())).type, groups)
    deferred = [x for x in operands if isinstance(x, Deferred)]
    if deferred:

        def value(i: int, j: int, ev: Evaluation) -> ir.Value:
            args = [
                x.value(i, j, ev)
                if isinstance(x, Deferred)
                else x.at(i, j)
                if isinstance(x, Frag | Reduced)
                else x
                for x in operands
            ]
            return fn(*args)

        return Deferred(part, tuple(r for x in deferred for r in x.ready), value)
    out: list[list[ir.Value]] = []
    for i in range(part.iters):
        row = []
        for j in range(part.vec):
            args = [x.at(i, j) if isinstance(x, Frag | Reduced) else x for x in operands]
            row.append(fn(*args))
        out.append(row)
    return Frag(part, out[0][0].type, out)


FLOAT_PREDICATES = {"lt": "OLT", "le": "OLE", "gt": "OGT", "ge": "OGE", "eq": "OEQ", "ne": "UNE"}
INT_PREDICATES = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}


def compare(op: ir.Operation, pred: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """x PRED y as an i1: ordered for floats (NaN compares false, except `!=`), signed ints."""
    if pred not in FLOAT_PREDICATES:
        raise LoweringError(op, f"unknown comparison '{pred}'")
    if is_float(x.type):
        kind = getattr(arith.CmpFPredicate, FLOAT_PREDICATES[pred])
        return arith.CmpFOp(kind, x, y).result
    return arith.CmpIOp(getattr(arith.CmpIPredicate, INT_PREDICATES[pred]), x, y).result


def coordinates(op: ir.Operation, x: Value, mode: int, t: ir.Value) -> Frag | ir.Value:
    """Each element's coordinate along `mode` of x's tile, as i32, spread as x."""
    i32 = ir.IntegerType.get_signless(32)
    if isinstance(x, ir.Value):
        return constant(i32, 0)
    if not isinstance(x, Frag) or not isinstance(x.part, Partition):
        raise LoweringError(op, "coord of this register tensor is not lowered yet")
    part, b = x.part, IndexBuilder()
    if not 0 <= mode < len(part.shape):
        raise LoweringError(op, f"mode {mode} is out of range for shape {part.shape}")
    rows = []
    for i in range(part.iters):
        origin = part.chunk_coords(i, t, b)[mode]
        steps = range(part.vec) if mode == part.m else [0] * part.vec
        rows.append([arith.IndexCastOp(i32, b.value(b.add(origin, j))).result for j in steps])
    return Frag(part, i32, rows)


def reciprocal(y: Reduced | ir.Value) -> Reduced | ir.Value:
    """1 / y, once per distinct value: `x / y` over a broadcast y becomes `x * (1 / y)`.

    A full-precision `div.rn.f32` is a dozen instructions with a slow path; one reciprocal
    per row and a multiply per element keep softmax memory-bound (error <= 1.5 ulp).
    """
    if isinstance(y, Reduced):
        one = constant(y.elem, 1.0)
        groups = {k: arith.DivFOp(one, v).result for k, v in y.groups.items()}
        return Reduced(y.part, y.mode, y.elem, groups)
    return arith.DivFOp(constant(y.type, 1.0), y).result


def combine(kind: str, x: ir.Value, y: ir.Value) -> ir.Value:
    return binary(None, REDUCE_OP[kind], x, y)


def identity(kind: str, t: ir.Type) -> ir.Value:
    if kind == "sum":
        return constant(t, 0)
    if is_float(t):
        return constant(t, float("-inf") if kind == "max" else float("inf"))
    width = t.width
    return constant(t, -(1 << (width - 1)) if kind == "max" else (1 << (width - 1)) - 1)


def grouped(op: ir.Operation, part: object, mode: int, group: int) -> Partition:
    """The spread of `part`'s tile with each run of `group` elements along `mode` combined
    (tile.reduce_group): chunk i of thread t holds the runs its chunk held, V / group of them,
    so the runs never cross threads. A run that is not inside one chunk is a located error."""
    if not isinstance(part, Partition) or part.m != mode or part.vec % group:
        what = part.describe() if isinstance(part, Partition) else "an MMA fragment"
        raise LoweringError(
            op,
            f"a group of {group} along mode {mode} must lie in one thread's chunk, but the "
            f"operand is {what}",
        )
    shape = tuple(e // group if k == mode else e for k, e in enumerate(part.shape))
    return Partition(shape, mode, part.vec // group, part.threads)


def reduce_group(op: ir.Operation, frag: Frag) -> Frag:
    """tile.reduce_group in each thread's own values: run r of chunk i combines values[i][j]
    for j in `run(G, r)`, in order (a sum of products contracts to a chain of fma)."""
    kind = ir.StringAttr(op.attributes["kind"]).value
    mode = ir.IntegerAttr(op.attributes["mode"]).value
    group = ir.IntegerAttr(op.attributes["group"]).value
    if kind not in REDUCE_OP:
        raise LoweringError(op, f"unknown reduction '{kind}'")
    part = grouped(op, frag.part, mode, group)
    rows = []
    for chunk in frag.values:
        runs = []
        for r in range(part.vec):
            first, *rest = (chunk[j] for j in run(group, r))
            for v in rest:
                first = combine(kind, first, v)
            runs.append(first)
        rows.append(runs)
    return Frag(part, frag.elem, rows)


def run(group: int, r: int) -> range:
    """The elements of a chunk that run r of a grouped spread combines (reduce_group)."""
    return range(r * group, (r + 1) * group)


def check_reducible(op: ir.Operation, part: Partition, mode: int, kind: str) -> None:
    if kind not in REDUCE_OP:
        raise LoweringError(op, f"unknown reduction '{kind}'")
    if not 0 <= mode < len(part.shape):
        raise LoweringError(op, f"mode {mode} is out of range for shape {part.shape}")
    sizes = [*part.shape, part.threads, part.vec]
    if not all(is_pow2(s) for s in sizes):
        raise LoweringError(
            op,
            f"a reduction needs power-of-two extents and threads, got {part.shape} over "
            f"{part.threads} threads",
        )

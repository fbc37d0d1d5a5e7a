"""Frontend (check stage): expressions and statements of kernel bodies, value by value."""

from __future__ import annotations

import math

from tilec import layout as L
from tilec.diagnostics import DiagnosticEngine, Span
from tilec.frontend import ast
from tilec.frontend.limits import check_register
from tilec.frontend.shapes import (
    broadcastable,
    dyn,
    int_tuple,
    spread,
    top_modes,
    with_modes,
)
from tilec.frontend.stmt_check import StatementChecker
from tilec.frontend.types import SCALAR_TYPES, SIGNED_INTEGERS, is_float_type
from tilec.frontend.values import (
    Alloc,
    BuiltinNamespaceV,
    ErrorV,
    FloatV,
    IntV,
    IterV,
    LayoutV,
    RangeV,
    Scope,
    TensorV,
    TileCoordV,
    TupleV,
    TypeV,
    UnderscoreV,
    V,
)

NAMESPACES = ("block", "thread", "grid", "cluster")
MAX_RANGE = 64  # `lo..hi` lists warp groups and the like, never a loop
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
STATIC_COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


class ExprChecker(StatementChecker):
    """Checks a kernel body: each expression's value (`expr`), each statement's effect
    (`StatementChecker`), located errors for what is wrong."""

    def __init__(self, diags: DiagnosticEngine, file: str) -> None:
        self.diags, self.file = diags, file
        self.values: dict[int, V] = {}
        self.target: str | None = None
        self.threads: tuple[int, ...] = (1,)
        self.cluster = 1  # the kernel's cluster(S)
        self.header = True
        self.allocs: list[Alloc] = []
        self.pipelines: list[IterV] = []
        # A warp-specialised kernel's consumer warp groups (None: no warp_specialize), and the
        # tensors its stores write: what the SM90 ring's shared memory depends on besides allocs.
        self.consumer_groups: int | None = None
        self.consumer_pingpong = False
        self.stores: list[TensorV] = []
        self.let_name: str | None = None
        # The `for` loops being checked, outermost first: (loop, its scope, what it runs over).
        self.loops: list[tuple[ast.For, Scope, str]] = []
        # Per `for` loop (by node id): the vars its body assigns that live outside it, in order.
        self.carried: dict[int, list[str]] = {}
        # `type` parameters by name, so an atom name may spell its element types with them.
        self.type_params: dict[str, str] = {}

    def begin_kernel(self) -> None:
        self.header, self.allocs, self.pipelines = True, [], []
        self.consumer_groups, self.stores, self.consumer_pingpong = None, [], False
        self.type_params = {}
        self.target, self.threads, self.cluster = None, (1,), 1

    def error(self, message: str, span: Span, notes: list | None = None) -> ErrorV:
        self.diags.error(message, span, notes or [])
        return ErrorV()

    # Statements -----------------------------------------------------------------------------

    def expr(self, node: ast.Node, scope: Scope) -> V:
        # A register tensor no thread's registers hold stops here, before irgen (frontend.limits).
        value = check_register(self, self._expr(node, scope), node.span)
        self.values[id(node)] = value
        return value

    def _expr(self, node: ast.Node, scope: Scope) -> V:
        if isinstance(node, ast.IntLit):
            return IntV(node.value, str(node.value))
        if isinstance(node, ast.FloatLit):
            return FloatV(node.value)
        if isinstance(node, ast.Underscore):
            return UnderscoreV()
        if isinstance(node, ast.Name):
            return self.name(node, scope)
        if isinstance(node, ast.Tuple):
            return TupleV([self.expr(x, scope) for x in node.items])
        if isinstance(node, ast.LayoutLit):
            return self.layout_lit(node, scope)
        if isinstance(node, ast.Attr):
            return self.attr(node, scope)
        if isinstance(node, ast.Index):
            return self.index(node, scope)
        if isinstance(node, ast.Unary):
            return self.unary(node, scope)
        if isinstance(node, ast.Binary):
            return self.binary(node, scope)
        if isinstance(node, ast.Cast):
            return self.cast(node, scope)
        if isinstance(node, ast.RangeLit):
            lo, hi = self.expr(node.lo, scope), self.expr(node.hi, scope)
            if not (isinstance(lo, IntV) and isinstance(hi, IntV) and lo.static and hi.static):
                return self.error("a range lo..hi needs static integers", node.span)
            if not 0 <= hi.value - lo.value < MAX_RANGE:
                return self.error(f"a range lo..hi holds 1 to {MAX_RANGE} integers", node.span)
            return TupleV([IntV(i, str(i)) for i in range(lo.value, hi.value + 1)])
        if isinstance(node, ast.Call):
            # The builtins' checks are built on this module, so it reaches them at call time.
            from tilec.frontend.builtins import call

            return call(self, node, scope)
        if isinstance(node, ast.AtomName):
            return self.error("an atom name belongs in <...> after copy or tiled_mma", node.span)
        return self.error("unexpected expression", node.span)

    def name(self, node: ast.Name, scope: Scope) -> V:
        b = scope.lookup(node.id)
        if b is not None:
            return b.value
        if node.id in SCALAR_TYPES:
            return TypeV(node.id)
        if node.id in NAMESPACES:
            if self.header:
                return self.error(
                    f"'{node.id}' is not available outside the kernel body", node.span
                )
            return BuiltinNamespaceV(node.id)
        if node.id == "inf":
            return FloatV(math.inf)
        if node.id == "num_sms":
            if not self.header:
                return self.error("'num_sms' is only available in grid(...)", node.span)
            return IntV(None, "num_sms")
        return self.error(f"undefined name '{node.id}'", node.span)

    def attr(self, node: ast.Attr, scope: Scope) -> V:
        base = self.expr(node.value, scope)
        if isinstance(base, BuiltinNamespaceV) and base.name == "cluster":
            if node.attr == "rank":  # the block's place in its cluster: block.x mod S
                return IntV(None, "cluster.rank") if self.cluster > 1 else IntV(0, "0")
            return self.error(f"cluster has 'rank', not '{node.attr}'", node.span)
        if isinstance(base, BuiltinNamespaceV) and node.attr in ("x", "y", "z"):
            return IntV(None, f"{base.name}.{node.attr}")
        if isinstance(base, TileCoordV) and node.attr in ("m", "n"):
            return IntV(None, node.attr)
        if isinstance(base, ErrorV):
            return base
        return self.error(f"{base.describe()} has no field '{node.attr}'", node.span)

    def make_layout(self, shape: object, stride: object, span: Span) -> L.Layout | None:
        """A layout from entries that are ints or runtime names (lists), as `?`."""
        try:
            return L.Layout(dyn(shape), dyn(stride))
        except L.LayoutError as exc:
            self.error(f"invalid layout: {exc.message}", span)
            return None

    def layout_lit(self, node: ast.LayoutLit, scope: Scope) -> V:
        shape = int_tuple(self.expr(node.shape, scope))
        stride = int_tuple(self.expr(node.stride, scope))
        if shape is None or stride is None:
            return self.error(
                "a layout's shape and stride must be integers or tuples of them", node.span
            )
        layout = self.make_layout(shape, stride, node.span)
        return ErrorV() if layout is None else LayoutV(layout)

    def index(self, node: ast.Index, scope: Scope) -> V:
        base = self.expr(node.value, scope)
        coords = [
            self.slice_range(i, scope) if isinstance(i, ast.RangeLit) else self.expr(i, scope)
            for i in node.indices
        ]
        if isinstance(base, ErrorV) or any(isinstance(c, ErrorV) for c in coords):
            return ErrorV()
        if not isinstance(base, TensorV):
            return self.error(f"only a tensor can be sliced, not a {base.describe()}", node.span)
        modes = top_modes(base.layout)
        if len(coords) != len(modes):
            return self.error(
                f"slice has {len(coords)} coordinates, the tensor has rank {len(modes)}", node.span
            )
        kept = []
        for c, m, i in zip(coords, modes, node.indices, strict=True):
            if isinstance(c, UnderscoreV):
                kept.append(m)
            elif isinstance(c, RangeV):
                cut = self.cut_mode(base, m, c, i)
                if cut is None:
                    return ErrorV()
                kept.append(cut)
            elif not isinstance(c, IntV):
                return self.error(
                    f"a slice coordinate is an integer, a range lo .. hi or '_', not a "
                    f"{c.describe()}",
                    i.span,
                )
        if not kept:
            return read_element(self, node, base, coords, modes)
        return TensorV(base.elem, base.space, with_modes(base.layout, kept), base.alloc)

    def slice_range(self, node: ast.RangeLit, scope: Scope) -> V:
        """`lo .. hi` in a slice: both integers, static or runtime (a window of the mode)."""
        lo, hi = self.expr(node.lo, scope), self.expr(node.hi, scope)
        if isinstance(lo, ErrorV) or isinstance(hi, ErrorV):
            return ErrorV()
        if not (isinstance(lo, IntV) and isinstance(hi, IntV)):
            return self.error("a range lo .. hi in a slice takes integers", node.span)
        v = RangeV(lo, hi)
        self.values[id(node)] = v
        return v

    def cut_mode(self, base: TensorV, m: L.Layout, r: RangeV, node: ast.Node) -> L.Layout | None:
        """Mode m of `base` cut to coordinates r.lo through r.hi (inclusive): its extent
        hi - lo + 1 (`?` unless both are static), its stride as it was."""
        if isinstance(m.shape, tuple):
            self.error(
                f"a range of a nested mode ({m}) is not a layout: slice a flat mode", node.span
            )
            return None
        static = r.lo.static and r.hi.static
        if base.space != "global" and not static:
            self.error(f"a range of a {base.space} tensor must be static", node.span)
            return None
        extent = r.hi.value - r.lo.value + 1 if static else L.DYN
        outside = static and m.shape is not L.DYN and r.hi.value >= m.shape
        if static and (extent < 1 or r.lo.value < 0 or outside):
            self.error(
                f"range {r.lo.value} .. {r.hi.value} is not inside the mode of extent "
                f"{L.tuple_str(m.shape)}",
                node.span,
            )
            return None
        return L.Layout(extent, m.stride)

    def unary(self, node: ast.Unary, scope: Scope) -> V:
        v = self.expr(node.operand, scope)
        if isinstance(v, IntV):
            return IntV(None if v.value is None else -v.value, f"-{v.text}")
        if isinstance(v, FloatV):
            return FloatV(None if v.value is None else -v.value, v.elem)
        return self.elementwise(node.span, [v], [node.operand])

    def binary(self, node: ast.Binary, scope: Scope) -> V:
        lhs, rhs = self.expr(node.lhs, scope), self.expr(node.rhs, scope)
        if isinstance(lhs, ErrorV) or isinstance(rhs, ErrorV):
            return ErrorV()
        if node.op == "o":
            from tilec.frontend.builtins_scalar import algebra  # imports this module

            return algebra(self, "composition", [lhs, rhs], node.span)
        if node.op in COMPARISONS:
            return self.compare(node, lhs, rhs)
        if node.op in "/%" and isinstance(rhs, IntV) and rhs.value == 0:
            if isinstance(lhs, IntV) or not is_float_type(result_elem([lhs, rhs])):
                return self.zero_divisor(node)
        if isinstance(lhs, IntV) and isinstance(rhs, IntV):
            return self.int_arith(node, lhs, rhs)
        if isinstance(lhs, (IntV, FloatV)) and isinstance(rhs, (IntV, FloatV)):
            return FloatV(None, "f32")
        return self.elementwise(node.span, [lhs, rhs], [node.lhs, node.rhs])

    def zero_divisor(self, node: ast.Binary) -> V:
        """An integer `/` or `%` whose divisor is 0 once parameters are substituted and folded
        (`block.x / (GROUP * tiles_n)` at GROUP = 0): refused at the operator, since LLVM
        would take the division as undefined and delete the code around it."""
        what = "division" if node.op == "/" else "modulus"
        return self.error(
            f"integer {what} by zero: the divisor is 0 with this build's parameters",
            node.op_span or node.span,
        )

    def compare(self, node: ast.Binary, lhs: V, rhs: V) -> V:
        """A static comparison is 0 or 1; on register tensors, a predicate (bool) tensor."""
        if isinstance(lhs, IntV | FloatV) and isinstance(rhs, IntV | FloatV):
            if lhs.value is not None and rhs.value is not None:
                held = int(STATIC_COMPARE[node.op](lhs.value, rhs.value))
                return IntV(held, str(held))
            return self.error(
                "a comparison of runtime scalars is not supported: compare register tensors "
                "(e.g. coord(x, mode = 1) < N)",
                node.span,
            )
        r = self.elementwise(node.span, [lhs, rhs], [node.lhs, node.rhs])
        if not isinstance(r, TensorV):
            return r
        return TensorV("bool", "register", r.layout, None, r.block_shape, r.mma)

    def int_arith(self, node: ast.Binary, lhs: IntV, rhs: IntV) -> V:
        # `/` on integers is floor division; the manifest's formulas (runtime/formula.py) spell
        # it `//`, as Python does.
        op = "//" if node.op == "/" else node.op
        text = f"({lhs.text} {op} {rhs.text})"
        if node.op == "*" and 0 in (lhs.value, rhs.value):
            return IntV(0, "0")  # whatever the other factor is at run time
        if not (lhs.static and rhs.static):
            # x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 are x: a grid of `cdiv(R, ROWS) * SPLIT`
            # at SPLIT = 1 reads R in the manifest, as it did before SPLIT.
            unit = {"*": 1, "/": 1, "+": 0, "-": 0}.get(node.op)
            if rhs.static and rhs.value == unit:
                return IntV(None, lhs.text)
            if lhs.static and lhs.value == unit and node.op in "*+":
                return IntV(None, rhs.text)
            return IntV(None, text)
        a, b = lhs.value, rhs.value
        value = {"+": a + b, "-": a - b, "*": a * b}.get(node.op)
        if value is None:
            value = a // b if node.op == "/" else a % b
        if abs(value) >= 2**63:
            return self.error("integer overflow in a compile-time expression", node.span)
        return IntV(value, str(value))

    def elementwise(
        self, span: Span, operands: list[V], nodes: list[ast.Node], predicate: int = -1
    ) -> V:
        """Elementwise math on register values; scalars broadcast, size-1 modes broadcast.
        Only operand number `predicate` (where's first) may be a predicate tensor."""
        tensors = [v for v in operands if isinstance(v, TensorV)]
        for k, (v, n) in enumerate(zip(operands, nodes, strict=True)):
            if isinstance(v, ErrorV):
                return v
            if isinstance(v, TensorV) and v.elem == "bool" and k != predicate:
                return self.error("a predicate tensor only selects: where(pred, a, b)", n.span)
            if isinstance(v, TensorV) and v.space != "register":
                return self.error(
                    f"elementwise math needs values in registers: load(...) this "
                    f"{v.space} tensor first",
                    n.span,
                )
            if not isinstance(v, (TensorV, IntV, FloatV)):
                return self.error(f"elementwise math on a {v.describe()}", n.span)
        if not tensors:
            return self.error(
                "this math applies to register values; on scalars only + - * / are supported", span
            )
        result = max(tensors, key=lambda t: (L.product(t.logical_shape), t.mma is not None))
        if not all(broadcastable(t.logical_shape, result.logical_shape) for t in tensors):
            result = mutual_broadcast(tensors) or result
        # An MMA fragment holds one thread's part of its tile: it meets only its own kind.
        frag = next((t for t in tensors if t.mma is not None), None)
        for t, n in zip(operands, nodes, strict=True):
            if frag is None or not isinstance(t, TensorV):
                continue
            shape = t.block_shape if t.mma is not None else t.logical_shape
            if not t.meets(frag) or not broadcastable(shape, frag.block_shape):
                return self.error(
                    f"this register tensor ({spread(t)}) is spread over the threads differently "
                    f"from the MMA fragment it meets ({spread(frag)}): load it with "
                    "load(t, like = fragment), or move it with "
                    "relayout(x, through = buffer, like = fragment)",
                    n.span,
                )
        for t, n in zip(operands, nodes, strict=True):
            if isinstance(t, TensorV) and not broadcastable(t.logical_shape, result.logical_shape):
                return self.error(
                    f"shapes {L.tuple_str(t.logical_shape)} and "
                    f"{L.tuple_str(result.logical_shape)} do not match",
                    n.span,
                )
        elem = result_elem(operands)
        # Math on fresh fragments alone (`max(l, 1.0)` of a running sum) is spread as they are:
        # as what they meet.
        fresh = all(t.fresh and t.mma is None for t in tensors)
        return TensorV(elem, "register", result.layout, None, result.block_shape, result.mma, fresh)

    def cast(self, node: ast.Cast, scope: Scope) -> V:
        v = self.expr(node.value, scope)
        ty = self.expr(node.type, scope)
        if not isinstance(ty, TypeV):
            return ErrorV()
        if isinstance(v, TensorV):
            if v.space != "register":
                return self.error("only register values convert: load(...) first", node.span)
            return TensorV(ty.name, "register", v.layout, None, v.block_shape, v.mma)
        if isinstance(v, (IntV, FloatV)) and is_float_type(ty.name):
            return FloatV(None if v.value is None else float(v.value), ty.name)
        if isinstance(v, IntV):
            return v  # integers and indices are one kind of scalar here
        if isinstance(v, ErrorV):
            return v
        return self.error(f"cannot convert a {v.describe()} to {ty.name}", node.span)


# Helpers on values ------------------------------------------------------------------------------


def read_element(
    c: ExprChecker, node: ast.Index, t: TensorV, coords: list[V], modes: list[L.Layout]
) -> V:
    """`t[i, j]` with every mode fixed: the element of a global tensor of signed integers, a
    runtime integer of the body (`cu_seqlens[block.z]`); 0 outside the tensor."""
    if c.header:
        return c.error("a tensor's element is read in the kernel body, not in a clause", node.span)
    if t.space != "global" or t.elem not in SIGNED_INTEGERS:
        return c.error(
            f"indexing every mode reads an element of a global tensor of "
            f"{'/'.join(SIGNED_INTEGERS)}, not of a {t.space} tensor of {t.elem}: keep a mode "
            "with '_' for a view",
            node.span,
        )
    for x, m, i in zip(coords, modes, node.indices, strict=True):
        extent = L.size(m)
        if (
            isinstance(x, IntV)
            and x.static
            and (x.value < 0 or extent is not L.DYN and x.value >= extent)
        ):
            return c.error(f"coordinate {x.value} is outside the mode of extent {extent}", i.span)
    return IntV(None, "read")


def result_elem(operands: list[V]) -> str:
    """The element type elementwise math on `operands` computes in: f32 wins; integers meeting
    a float become f32, as in C; else the largest tensor's type. Predicates (bool) only select.
    """
    tensors = [v for v in operands if isinstance(v, TensorV) and v.elem != "bool"]
    # A FloatV is a number or a scalar argument; an `i32`/`i64` argument is an integer.
    float_scalar = any(isinstance(v, FloatV) and is_float_type(v.elem) for v in operands)
    if not tensors:
        return "f32" if float_scalar else "i32"
    result = max(tensors, key=lambda t: L.product(t.logical_shape))
    floats = any(is_float_type(t.elem) for t in tensors)
    widen = float_scalar and not floats
    return "f32" if widen or any(t.elem == "f32" for t in tensors) else result.elem


def mutual_broadcast(tensors: list[TensorV]) -> TensorV | None:
    """The tile that reductions of one tile shape along different modes broadcast to together:
    `reduce_sum(a, mode = 0) * reduce_sum(b, mode = 1)` of two (N, R, C) tiles, of shapes
    (1, R, C) and (N, 1, C), is (N, R, C) (each reduction broadcasts over the tile it reduced,
    spread as that tile: examples/gemv.tile); asked only where no operand's shape holds the
    others'. None where an operand is no reduction of a tile of that shape: (4, 1) and (1, 8)
    loaded as they are make no (4, 8), an outer product."""
    sources = {t.reduced_from for t in tensors if t.reduced_from is not None}
    if len(sources) != 1:
        return None
    shape = sources.pop()
    if any(t.reduced_from != shape for t in tensors):
        return None
    return TensorV(tensors[0].elem, "register", L.Layout(shape))

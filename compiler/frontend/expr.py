"""Frontend (check stage): expressions and statements of kernel bodies, value by value."""

from __future__ import annotations

import math

from tilec import layout as L
from tilec.diagnostics import DiagnosticEngine, Span, note
from tilec.frontend import ast
from tilec.frontend.atoms import REGISTER_COUNTS
from tilec.frontend.types import SCALAR_TYPES, is_float_type
from tilec.frontend.values import (
    Alloc,
    Binding,
    BuiltinNamespaceV,
    ErrorV,
    FloatV,
    IntV,
    IterV,
    LayoutV,
    Scope,
    TensorV,
    TileCoordV,
    TupleV,
    TypeV,
    UnderscoreV,
    UnitV,
    V,
)
from tilec.targets import TARGETS, has_setmaxnreg

NAMESPACES = ("block", "thread", "cluster")
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


class ExprChecker:
    def __init__(self, diags: DiagnosticEngine, file: str) -> None:
        self.diags, self.file = diags, file
        self.values: dict[int, V] = {}
        self.target: str | None = None
        self.threads: tuple[int, ...] = (1,)
        self.cluster = 1  # the kernel's cluster(S)
        self.header = True
        self.allocs: list[Alloc] = []
        self.pipelines: list[IterV] = []
        self.let_name: str | None = None
        # The `for` loops being checked, outermost first: (loop, its scope, what it runs over).
        self.loops: list[tuple[ast.For, Scope, str]] = []
        # Per `for` loop (by node id): the vars its body assigns that live outside it, in order.
        self.carried: dict[int, list[str]] = {}
        # `type` parameters by name, so an atom name may spell its element types with them.
        self.type_params: dict[str, str] = {}

    def begin_kernel(self) -> None:
        self.header, self.allocs, self.pipelines = True, [], []
        self.type_params = {}
        self.target, self.threads, self.cluster = None, (1,), 1

    def error(self, message: str, span: Span, notes: list | None = None) -> ErrorV:
        self.diags.error(message, span, notes or [])
        return ErrorV()

    # Statements -----------------------------------------------------------------------------

    def block(self, stmts: list[ast.Node], scope: Scope) -> None:
        for stmt in stmts:
            self.stmt(stmt, scope)

    def stmt(self, stmt: ast.Node, scope: Scope) -> None:
        if isinstance(stmt, ast.Let):
            self.let(stmt, scope)
        elif isinstance(stmt, ast.ExprStmt):
            value = self.expr(stmt.expr, scope)
            if not isinstance(value, (UnitV, ErrorV)):
                self.diags.warning(
                    f"result of this expression ({value.describe()}) is unused", stmt.expr.span
                )
        elif isinstance(stmt, ast.Assign):
            self.assign(stmt, scope)
        elif isinstance(stmt, ast.For):
            self.for_stmt(stmt, scope)
        elif isinstance(stmt, ast.WarpSpecialize):
            self.warp_specialize(stmt, scope)

    def define(
        self, scope: Scope, name: str, value: V, span: Span, node: ast.Node, mutable: bool = False
    ) -> None:
        prev = scope.names.get(name)
        if prev is not None:
            self.diags.error(
                f"'{name}' is already defined",
                span,
                [note(f"'{name}' was defined here", prev.span)],
            )
            return
        scope.names[name] = Binding(value, span, node, mutable)

    def let(self, stmt: ast.Let, scope: Scope) -> None:
        self.let_name = stmt.name
        value = self.expr(stmt.value, scope)
        self.let_name = None
        if stmt.init is not None:
            init = self.expr(stmt.init, scope)
            if isinstance(value, TensorV) and value.space != "register":
                value = self.error(
                    "only a fragment (registers) can be given an initial value", stmt.init.span
                )
            elif not isinstance(value, (TensorV, ErrorV)):
                value = self.error(f"cannot initialise a {value.describe()}", stmt.init.span)
            if not isinstance(init, (IntV, FloatV, ErrorV)) or getattr(init, "value", 0) is None:
                self.error("an initial value must be a static number", stmt.init.span)
        if isinstance(value, UnitV):
            value = self.error("this expression has no value to bind", stmt.value.span)
        if isinstance(value, IterV) and value.how != "persistent":
            value = self.error(
                f"{value.how}(...) belongs directly after 'for ... in'", stmt.value.span
            )
        if stmt.mutable:
            value = self.var_value(stmt, value)
        self.define(scope, stmt.name, value, stmt.name_span, stmt, stmt.mutable)

    def var_value(self, stmt: ast.Let, value: V) -> V:
        """What a `var` holds: a register tensor, or a scalar that is no longer static."""
        if isinstance(value, ErrorV):
            return value
        if isinstance(value, TensorV) and value.space == "register":
            return value
        if isinstance(value, IntV):
            return IntV(None, stmt.name)
        if isinstance(value, FloatV):
            return FloatV(None, value.elem)
        return self.error(
            f"a var holds a register tensor or a number, not a {value.describe()}",
            stmt.value.span,
        )

    def assign(self, stmt: ast.Assign, scope: Scope) -> None:
        value = self.expr(stmt.value, scope)
        owner = scope
        while owner is not None and stmt.name not in owner.names:
            owner = owner.parent
        if owner is None:
            self.error(
                f"undefined name '{stmt.name}' (declare it first: var {stmt.name} = ...)",
                stmt.name_span,
            )
            return
        b = owner.names[stmt.name]
        self.values[id(stmt)] = b.value
        if not b.mutable:
            self.error(
                f"'{stmt.name}' is not a var: only a name declared with 'var' can be assigned",
                stmt.name_span,
                [note(f"'{stmt.name}' was defined here", b.span)],
            )
            return
        if isinstance(value, ErrorV) or isinstance(b.value, ErrorV):
            return
        why = assignable(b.value, value)
        if why is not None:
            self.error(
                f"cannot assign {value.describe()} to var '{stmt.name}', {b.value.describe()}: "
                f"{why}",
                stmt.value.span,
                [note(f"'{stmt.name}' was declared here", b.span)],
            )
            return
        for loop, inner, how in self.loops:
            if inside(owner, inner):
                continue
            if how not in ("range", "pipeline"):
                self.error(
                    f"a {how}(...) loop cannot carry '{stmt.name}' yet: only a range(...) or "
                    "pipeline(...) loop updates a var declared outside it",
                    stmt.span,
                )
                return
            names = self.carried.setdefault(id(loop), [])
            if stmt.name not in names:
                names.append(stmt.name)

    def for_stmt(self, stmt: ast.For, scope: Scope) -> None:
        it = self.expr(stmt.iter, scope)
        inner = Scope(parent=scope)
        if isinstance(it, IterV):
            var: V = TileCoordV() if it.how == "persistent" else IntV(None, stmt.var)
        else:
            if not isinstance(it, ErrorV):
                self.error(
                    f"a for loop runs over range(...), pipeline(...) or persistent tiles, "
                    f"not a {it.describe()}",
                    stmt.iter.span,
                )
            var = ErrorV()
        self.define(inner, stmt.var, var, stmt.var_span, stmt)
        pipelined = isinstance(it, IterV) and it.how == "pipeline"
        if pipelined:
            self.pipelines.append(it)
        self.loops.append((stmt, inner, it.how if isinstance(it, IterV) else "range"))
        self.block(stmt.body, inner)
        self.loops.pop()
        if pipelined:
            self.pipelines.pop()

    def warp_specialize(self, stmt: ast.WarpSpecialize, scope: Scope) -> None:
        groups = max(1, math.prod(self.threads) // 128)
        kinds = {r.kind for r in stmt.roles}
        if kinds != {"producer", "consumer"}:
            self.error("warp_specialize needs a producer and a consumer", stmt.span)
        for role in stmt.roles:
            for kw in role.kwargs:
                self.role_kwarg(role, kw, groups, scope)
            self.block(role.body, Scope(parent=scope))

    def role_kwarg(self, role: ast.Role, kw: ast.Keyword, groups: int, scope: Scope) -> None:
        value = self.expr(kw.value, scope)
        if kw.name in ("warpgroup", "warpgroups"):
            ids = static_ints(value)
            if ids is None:
                self.error(
                    f"{kw.name} takes static warp-group numbers, e.g. 0 or 1..2", kw.value.span
                )
            elif any(not 0 <= i < groups for i in ids):
                self.error(
                    f"warp group {max(ids)} does not exist: {math.prod(self.threads)} "
                    f"threads make {groups} warp groups",
                    kw.value.span,
                )
        elif kw.name == "registers":
            if not (isinstance(value, IntV) and value.value in REGISTER_COUNTS):
                self.error("registers must be a multiple of 8 from 24 to 256", kw.value.span)
            elif not has_setmaxnreg(self.target):
                having = " or ".join(t for t in TARGETS if has_setmaxnreg(t))
                self.error(
                    f"registers = ... (setmaxnreg) needs target {having}, kernel targets "
                    f"{self.target}",
                    kw.span,
                )
        else:
            self.error(
                f"{role.kind}(...) takes warpgroup(s) = and registers =, not '{kw.name}'", kw.span
            )

    # Expressions ------------------------------------------------------------------------------

    def expr(self, node: ast.Node, scope: Scope) -> V:
        value = self._expr(node, scope)
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
        coords = [self.expr(i, scope) for i in node.indices]
        if isinstance(base, ErrorV):
            return base
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
            elif not isinstance(c, (IntV, ErrorV)):
                return self.error(
                    f"a slice coordinate is an integer or '_', not a {c.describe()}", i.span
                )
        if not kept:
            return self.error("slicing every mode leaves no tensor: keep one with '_'", node.span)
        return TensorV(base.elem, base.space, with_modes(base.layout, kept), base.alloc)

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
        if isinstance(lhs, IntV) and isinstance(rhs, IntV):
            return self.int_arith(node, lhs, rhs)
        if isinstance(lhs, (IntV, FloatV)) and isinstance(rhs, (IntV, FloatV)):
            return FloatV(None, "f32")
        return self.elementwise(node.span, [lhs, rhs], [node.lhs, node.rhs])

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
        text = f"({lhs.text} {node.op} {rhs.text})"
        if not (lhs.static and rhs.static):
            # x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 are x: a grid of `cdiv(R, ROWS) * SPLIT`
            # at SPLIT = 1 reads R in the manifest, as it did before SPLIT.
            unit = {"*": 1, "/": 1, "+": 0, "-": 0}.get(node.op)
            if rhs.static and rhs.value == unit:
                return IntV(None, lhs.text)
            if lhs.static and lhs.value == unit and node.op in "*+":
                return IntV(None, rhs.text)
            return IntV(None, text)
        if node.op in "/%" and rhs.value == 0:
            return self.error("division by zero", node.span)
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
        # An MMA fragment holds one thread's part of its tile: it meets only its own kind.
        frag = next((t for t in tensors if t.mma is not None), None)
        for t, n in zip(operands, nodes, strict=True):
            if frag is None or not isinstance(t, TensorV):
                continue
            if t.mma != frag.mma or not broadcastable(t.block_shape, frag.block_shape):
                return self.error(
                    f"this register tensor ({spread(t)}) is spread over the threads differently "
                    f"from the MMA fragment it meets ({spread(frag)}): load it with "
                    "load(t, like = fragment)",
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
        return TensorV(elem, "register", result.layout, None, result.block_shape, result.mma)

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


def assignable(var: V, value: V) -> str | None:
    """Why `value` cannot be assigned to a var holding `var` (None: it can)."""
    if isinstance(var, TensorV):
        if not isinstance(value, TensorV) or value.space != "register":
            return "a var keeps its kind (a register tensor)"
        if value.elem != var.elem:
            return f"its elements are {var.elem} (convert with ': {var.elem}')"
        if L.tuple_str(value.logical_shape) != L.tuple_str(var.logical_shape):
            return "a var keeps its shape"
        if (value.mma, value.block_shape) != (var.mma, var.block_shape):
            return "it is spread over the threads differently"
        return None
    if isinstance(var, IntV):
        return None if isinstance(value, IntV) else "a var keeps its kind (an integer)"
    if isinstance(value, IntV | FloatV):
        return None
    return "a var keeps its kind (a number)"


def inside(scope: Scope | None, outer: Scope) -> bool:
    """Whether `scope` is `outer` or nested in it."""
    while scope is not None:
        if scope is outer:
            return True
        scope = scope.parent
    return False


# Helpers on int-tuples and layouts -------------------------------------------------------------


def dyn(t: object) -> object:
    """Entries that are runtime names (lists of factors) become `?`."""
    if isinstance(t, tuple):
        return tuple(dyn(x) for x in t)
    return L.DYN if isinstance(t, list) else t


def int_tuple(v: V) -> object | None:
    """A static int-tuple (runtime entries as `?`) from a value, or None if it is not one."""
    if isinstance(v, IntV):
        return v.value if v.static else L.DYN
    if isinstance(v, TupleV) and v.items:
        items = [int_tuple(x) for x in v.items]
        return None if any(x is None for x in items) else tuple(items)
    return None


def static_ints(v: V) -> list[int] | None:
    if isinstance(v, IntV) and v.static:
        return [v.value]
    if isinstance(v, TupleV) and all(isinstance(x, IntV) and x.static for x in v.items):
        return [x.value for x in v.items]
    return None


def inner(layout: object) -> L.Layout:
    return layout.inner if isinstance(layout, L.ComposedLayout) else layout


def negative_stride(layout: object) -> int | None:
    """The first static negative stride of a layout, if any.

    A tensor argument's layout refuses them: a kernel addresses a tensor upwards from its
    pointer, so `(M,K):(-1,M)` would read below it (a shared buffer holds its lowest offset).
    """
    return next((d for d in L.flatten(inner(layout).stride) if L.is_int(d) and d < 0), None)


def spread(t: TensorV) -> str:
    """How a register tensor lies over the threads, for messages: its tile, layout and MMA."""
    shape = L.tuple_str(t.logical_shape)
    if t.mma is None:
        return f"a {shape} tile {t.layout}, spread over the threads by the compiler"
    tiling = L.tuple_str(t.mma.tiling)
    return f"a {shape} tile of {t.mma.atom} atoms {tiling}, one thread's part {t.layout}"


def top_modes(layout: object) -> list[L.Layout]:
    return list(inner(layout))


def with_modes(layout: object, modes: list[L.Layout]) -> object:
    """`layout` with its top-level modes replaced; a swizzle stays on the outside."""
    new = L.make_layout(*modes) if len(modes) > 1 else modes[0]
    if isinstance(layout, L.ComposedLayout):
        return L.ComposedLayout(layout.outer, layout.offset, new)
    return new


def mode_sizes(shape: object) -> list[object]:
    """The size of each top-level mode of a shape (`?` if dynamic)."""
    return [L.product(m) for m in shape] if isinstance(shape, tuple) else [L.product(shape)]


def broadcastable(a: object, b: object) -> bool:
    """Whether shape `a` broadcasts to shape `b`: equal modes, or modes of size 1."""
    sa, sb = mode_sizes(a), mode_sizes(b)
    if len(sa) != len(sb):
        return L.product(a) == L.product(b) and L.DYN not in sa
    return all(x == y or x == 1 for x, y in zip(sa, sb, strict=True))

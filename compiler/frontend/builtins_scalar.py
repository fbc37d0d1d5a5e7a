"""Frontend (check stage): builtins on compile-time values: layout algebra, integers, math,
reductions and iteration spaces."""

from __future__ import annotations

import inspect
from dataclasses import replace

from tilec import layout as L
from tilec.frontend import ast
from tilec.frontend.builtin import Builtin, Handler, ints_arg, items, registrar
from tilec.frontend.expr import ExprChecker, result_elem
from tilec.frontend.lexer import MAX_INT
from tilec.frontend.shapes import int_tuple, mode_sizes
from tilec.frontend.types import SCALAR_TYPES
from tilec.frontend.values import (
    ErrorV,
    IntV,
    IterV,
    LayoutV,
    RasterV,
    SwizzleV,
    TensorV,
    TupleV,
    TypeV,
    UnderscoreV,
    V,
)

SCALAR_BUILTINS: dict[str, Builtin] = {}
builtin = registrar(SCALAR_BUILTINS)


# Layout algebra --------------------------------------------------------------------------------

ALGEBRA = (
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "coalesce",
    "filter",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
    "make_ordered_layout",
    "max_common_layout",
    "max_common_vector",
    "upcast",
    "downcast",
    "size",
    "rank",
    "depth",
    "cosize",
    "shape",
    "stride",
    "get",
    "select",
    "crd2idx",
    "idx2crd",
    "slice",
    "slice_and_offset",
)


def to_algebra(v: V) -> object:
    if isinstance(v, (LayoutV, SwizzleV)):
        return v.obj
    if isinstance(v, TensorV):
        return v.layout
    if isinstance(v, UnderscoreV):
        return None
    if isinstance(v, TupleV):
        return tuple(to_algebra(x) for x in v.items)
    if isinstance(v, IntV):
        return v.value if v.static else L.DYN
    raise TypeError(f"a {v.describe()} is not a layout, shape or integer")


def from_algebra(x: object) -> V:
    if isinstance(x, (L.Layout, L.ComposedLayout)):
        return LayoutV(x)
    if isinstance(x, L.Swizzle):
        return SwizzleV(x)
    if isinstance(x, bool) or x is None:
        return ErrorV()
    if isinstance(x, int):
        return IntV(x, str(x))
    if x is L.DYN:
        return IntV(None, "?")
    if isinstance(x, tuple):
        return TupleV([from_algebra(i) for i in x])
    return ErrorV()


def arity_error(name: str, args: list[V]) -> str | None:
    """What algebra function `name` takes, when `args` are too few or too many for it."""
    signature = inspect.signature(getattr(L, name))
    try:
        signature.bind(*args)
    except TypeError:
        pass
    else:
        return None
    params = [
        f"{p.name}..."
        if p.kind is p.VAR_POSITIONAL
        else p.name + ("?" if p.default is not p.empty else "")
        for p in signature.parameters.values()
    ]
    message = f"{name} takes ({', '.join(params)}), got {len(args)} argument"
    message += "" if len(args) == 1 else "s"
    if name == "crd2idx" and any(isinstance(a, LayoutV) for a in args):
        message += "; for a layout L write crd2idx(crd, shape(L), stride(L))"
    return message


def algebra(c: ExprChecker, name: str, args: list[V], span: ast.Span) -> V:
    """Evaluate a layout-algebra function at compile time; its errors are located at the call."""
    if (wrong := arity_error(name, args)) is not None:
        return c.error(wrong, span)
    try:
        result = getattr(L, name)(*(to_algebra(a) for a in args))
    except L.LayoutError as exc:
        return c.error(exc.message, span)
    except (
        TypeError,
        ValueError,
        ArithmeticError,
        AttributeError,
        IndexError,
        RecursionError,
    ) as exc:
        return c.error(f"{name}: invalid arguments: {exc}", span)
    runtime_query = (
        name == "size"
        and len(args) == 2
        and isinstance(args[0], TensorV)
        and isinstance(args[1], IntV)
        and args[1].static
    )
    dynamic = result is L.DYN or (isinstance(result, tuple) and L.DYN in L.flatten(result))
    if dynamic and not runtime_query:
        return c.error(
            f"{name} here is only known at run time; of the queries only size(tensor, mode) may be",
            span,
        )
    leaves = L.flatten(result) if isinstance(result, (int, tuple)) else ()
    if any(isinstance(x, int) and abs(x) > MAX_INT for x in leaves):
        return c.error(f"{name} here gives an integer beyond 64 bits", span)
    return from_algebra(result)


def _algebra_handler(name: str) -> Handler:
    return lambda c, node, args, kw: algebra(c, name, args, node.span)


for _name in ALGEBRA:
    builtin(_name, 1, 3)(_algebra_handler(_name))


@builtin("make_layout", 1, 2)
def make_layout(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    shape = int_tuple(args[0])
    stride = int_tuple(args[1]) if len(args) == 2 else None
    if shape is None or (len(args) == 2 and stride is None):
        return c.error("make_layout(shape[, stride]) takes int-tuples", node.span)
    try:
        return LayoutV(L.Layout(shape, stride))
    except L.LayoutError as exc:
        return c.error(exc.message, node.span)


@builtin("swizzle", 0, 0, targs=(3, 3))
def swizzle(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    bms = [c.values[id(t)] for t in node.targs]
    if not all(isinstance(v, IntV) and v.static for v in bms):
        return c.error("swizzle<B,M,S> takes three static integers", node.span)
    try:
        return SwizzleV(L.Swizzle(*(v.value for v in bms)))
    except L.LayoutError as exc:
        return c.error(exc.message, node.span)


# Integers --------------------------------------------------------------------------------------


@builtin("cdiv", 2, 2)
@builtin("ceil_div", 2, 2)
def cdiv(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    ints = ints_arg(c, node, args)
    if ints is None:
        return ErrorV()
    a, b = ints
    if b.static and b.value <= 0:
        return c.error(f"cdiv by {b.value}", node.args[1].span)
    if a.static and b.static:
        return IntV(-(-a.value // b.value), str(-(-a.value // b.value)))
    if b.static and b.value == 1:  # grid(cdiv(R, ROWS)) at ROWS = 1: the manifest reads R
        return IntV(None, a.text)
    return IntV(None, f"cdiv({a.text}, {b.text})")


@builtin("sizeof", 1, 1)
def sizeof(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    """`sizeof(T)`: the bytes of an element type, a static integer (`sizeof(O) == 2` in a
    variant's condition picks the builds whose output is 16-bit)."""
    (t,) = args
    if not isinstance(t, TypeV):
        return c.error("sizeof(...) takes an element type (e.g. sizeof(T))", node.args[0].span)
    size = SCALAR_TYPES[t.name][1]
    return IntV(size, str(size))


@builtin("max", 2, 2)
@builtin("min", 2, 2)
def min_max(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    a, b = args
    if isinstance(a, IntV) and isinstance(b, IntV):
        if a.static and b.static:
            v = max(a.value, b.value) if node.func == "max" else min(a.value, b.value)
            return IntV(v, str(v))
        return IntV(None, f"{node.func}({a.text}, {b.text})")
    return c.elementwise(node.span, args, node.args)


# Elementwise math and reductions ---------------------------------------------------------------

UNARY_MATH = (
    "exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "relu", "gelu", "gelu_tanh", "sigmoid", "abs",
)  # fmt: skip


def _unary(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    return c.elementwise(node.span, args, node.args)


for _name in UNARY_MATH:
    builtin(_name, 1, 1)(_unary)


def mode_arg(c: ExprChecker, node: ast.Call, kw: dict[str, V], rank: int) -> int | None:
    """The call's `mode =` (0 when absent): a static mode number below `rank`, else None after
    a located error."""
    mode = kw.get("mode", IntV(0, "0"))
    if isinstance(mode, IntV) and mode.static and 0 <= mode.value < rank:
        return mode.value
    span = node.kwarg("mode").span if node.kwarg("mode") else node.span
    c.error(f"mode must be a static mode number below the rank {rank}", span)
    return None


@builtin("reduce_max", 1, 1, ("mode", "group"))
@builtin("reduce_min", 1, 1, ("mode", "group"))
@builtin("reduce_sum", 1, 1, ("mode", "group"))
def reduce(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    x = args[0]
    if not isinstance(x, TensorV) or x.space != "register":
        return c.error(f"{node.func} reduces register values: load(...) first", node.args[0].span)
    sizes = mode_sizes(x.logical_shape)
    mode = mode_arg(c, node, kw, len(sizes))
    if mode is None:
        return ErrorV()
    if "group" in kw:
        return reduce_group(c, node, x, sizes, mode, kw["group"])
    sizes[mode] = 1
    shape = tuple(sizes) if len(sizes) > 1 else sizes[0]
    if x.mma is not None:  # rows (columns) of an accumulator: spread as its rows (columns) are
        if len(sizes) != 2:
            return c.error(f"{node.func} of an MMA fragment takes a 2-d tile", node.span)
        return TensorV(x.elem, "register", L.Layout(shape), None, tuple(sizes), x.mma)
    if x.block_shape is not None:
        return c.error(f"{node.func} of an MMA fragment is not supported yet", node.span)
    source = tuple(mode_sizes(x.logical_shape))
    return TensorV(x.elem, "register", L.Layout(shape), reduced_from=source)


def reduce_group(c: ExprChecker, node: ast.Call, x: TensorV, sizes: list, mode: int, group: V) -> V:
    """`reduce_sum(x, mode = m, group = G)`: each run of G consecutive elements along mode m
    combined into one, so the mode's extent becomes extent / G (a new tile: it does not
    broadcast back). G is a static power of two dividing the extent; the lowering keeps each
    run in one thread's values (tile-distribute refuses a spread that does not)."""
    span = node.kwarg("group").span
    extent = sizes[mode]
    if not (isinstance(group, IntV) and group.static and group.value > 0):
        return c.error("group must be a static positive integer", span)
    g = group.value
    if g & (g - 1) or not isinstance(extent, int) or extent % g:
        return c.error(f"group {g} must be a power of two dividing mode {mode}'s {extent}", span)
    if x.mma is not None or x.block_shape is not None:
        return c.error(f"{node.func} of an MMA fragment takes no group", span)
    sizes[mode] = extent // g
    shape = tuple(sizes) if len(sizes) > 1 else sizes[0]
    return TensorV(x.elem, "register", L.Layout(shape))


@builtin("cluster_max", 1, 1)
@builtin("cluster_min", 1, 1)
@builtin("cluster_sum", 1, 1)
def cluster_reduce(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    """`cluster_sum(x)`: x combined over the blocks of the kernel's `cluster(S)`, element by
    element, through distributed shared memory; every block of the cluster gets the same
    values. Each block holds its own x (the same tile shape, spread alike); with cluster(1)
    it is x."""
    x = args[0]
    if not isinstance(x, TensorV) or x.space != "register":
        what = x.describe()
        return c.error(f"{node.func} combines register tensors, not a {what}", node.args[0].span)
    if x.elem == "bool":
        return c.error(f"{node.func} combines numbers, not predicates", node.args[0].span)
    return replace(x)


@builtin("where", 3, 3)
def where(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    """`where(pred, a, b)`: a where the predicate holds, b elsewhere, element by element."""
    pred = args[0]
    if not (isinstance(pred, TensorV) and pred.space == "register" and pred.elem == "bool"):
        return c.error(
            f"where takes a predicate tensor first (a comparison such as coord(x, mode = 1) < N), "
            f"not a {pred.describe()}",
            node.args[0].span,
        )
    r = c.elementwise(node.span, args, node.args, predicate=0)
    if not isinstance(r, TensorV):
        return r
    return TensorV(result_elem(args[1:]), "register", r.layout, None, r.block_shape, r.mma)


@builtin("coord", 1, 1, ("mode",))
def coord(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    """`coord(x, mode = m)`: each element's coordinate along mode m of x's tile (i32), spread
    over the threads as x is (CuTe's identity tensor partitioned like x)."""
    x = args[0]
    if not isinstance(x, TensorV) or x.space != "register":
        return c.error(
            f"coord takes a register tensor, not a {x.describe()}: load(...) first",
            node.args[0].span,
        )
    if mode_arg(c, node, kw, len(mode_sizes(x.logical_shape))) is None:
        return ErrorV()
    return TensorV("i32", "register", x.layout, None, x.block_shape, x.mma)


# Compile-time choice ---------------------------------------------------------------------------


@builtin("choose", 2, 64)
def choose(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    """`choose(i, v0, v1, ...)`: the value v_i for a static i. Every choice is checked; only the
    chosen one becomes IR, so a parameter picks, say, an epilogue's activation."""
    i = args[0]
    if not (isinstance(i, IntV) and i.static):
        return c.error("choose takes a static integer first (a parameter)", node.args[0].span)
    if not 0 <= i.value < len(args) - 1:
        return c.error(
            f"choose({i.value}, ...) picks past its {len(args) - 1} choices (0 to {len(args) - 2})",
            node.args[0].span,
        )
    picked = args[1 + i.value]
    if isinstance(picked, IterV):
        return c.error("choose cannot pick an iteration space", node.args[1 + i.value].span)
    return picked


# Iteration -------------------------------------------------------------------------------------


@builtin("range", 1, 3)
def range_(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    ints = ints_arg(c, node, args)
    if ints is None:
        return ErrorV()
    if len(ints) == 1:
        ints = [IntV(0, "0"), ints[0]]
    if len(ints) == 2:
        ints = [*ints, IntV(1, "1")]
    if ints[2].static and ints[2].value <= 0:
        return c.error("the step of range must be positive", node.args[2].span)
    return IterV("range", ints)


@builtin("pipeline", 1, 1, ("stages", "prefetch"))
def pipeline(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    ints = ints_arg(c, node, args)
    stages = kw.get("stages", IntV(2, "2"))
    snode = node.kwarg("stages")
    if ints is None:
        return ErrorV()
    if not (isinstance(stages, IntV) and stages.static and 1 <= stages.value <= 16):
        return c.error("stages must be a static integer from 1 to 16", (snode or node).span)
    prefetch = kw.get("prefetch")
    if prefetch is not None and not (
        isinstance(prefetch, IntV) and prefetch.static and prefetch.value in (0, 1)
    ):
        return c.error("prefetch must be a static 0 or 1", node.kwarg("prefetch").span)
    param = snode.id if isinstance(snode, ast.Name) else None
    it = IterV("pipeline", [IntV(0, "0"), ints[0], IntV(1, "1")], stages.value, param)
    it.prefetch = None if prefetch is None else prefetch.value
    return it


@builtin("grouped", 1, 1)
def grouped(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    g = args[0]
    if not (isinstance(g, IntV) and g.static and g.value > 0):
        return c.error("grouped(...) takes a positive static group size", node.span)
    return RasterV(g.value)


@builtin("persistent", 1, 1, ("raster", "split_tail"))
def persistent(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    tiles = items(args[0])
    if len(tiles) != 2 or not all(isinstance(t, IntV) for t in tiles):
        return c.error("persistent takes the tile counts (m, n)", node.args[0].span)
    raster = kw.get("raster")
    if raster is not None and not isinstance(raster, RasterV):
        return c.error("raster = takes grouped(N)", node.kwarg("raster").span)
    split = kw.get("split_tail")
    if split is not None and not (
        isinstance(split, IntV) and split.static and split.value in (0, 1)
    ):
        return c.error("split_tail must be a static 0 or 1", node.kwarg("split_tail").span)
    group = raster.group if raster is not None else 1
    return IterV(
        "persistent",
        tiles,
        raster="grouped" if raster else "linear",
        group=group,
        split_tail=bool(split is not None and split.value),
    )

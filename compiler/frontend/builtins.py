"""Frontend (check stage): the builtin functions of .tile, each checked against its arguments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tilec import layout as L
from tilec.frontend import ast
from tilec.frontend.atoms import ATOMS, WGMMA_N, Atom
from tilec.frontend.expr import (
    ExprChecker,
    inner,
    int_tuple,
    mode_sizes,
    static_ints,
    top_modes,
    with_modes,
)
from tilec.frontend.types import SCALAR_TYPES
from tilec.frontend.values import (
    Alloc,
    AtomV,
    ErrorV,
    FloatV,
    IntV,
    IterV,
    LayoutV,
    MmaV,
    RasterV,
    Scope,
    SwizzleV,
    TensorV,
    TupleV,
    TypeV,
    UnderscoreV,
    UnitV,
    V,
)

Handler = Callable[[ExprChecker, ast.Call, list[V], dict[str, V]], V]


@dataclass(frozen=True)
class Builtin:
    fn: Handler
    min_args: int
    max_args: int
    kwargs: tuple[str, ...] = ()
    targs: tuple[int, int] = (0, 0)  # how many template arguments, least and most


BUILTINS: dict[str, Builtin] = {}


def builtin(
    name: str, lo: int, hi: int, kwargs: tuple[str, ...] = (), targs: tuple[int, int] = (0, 0)
) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        BUILTINS[name] = Builtin(fn, lo, hi, kwargs, targs)
        return fn

    return register


def call(c: ExprChecker, node: ast.Call, scope: Scope) -> V:
    args = [c.expr(a, scope) for a in node.args]
    kw = {k.name: c.expr(k.value, scope) for k in node.kwargs}
    spec = BUILTINS.get(node.func)
    if spec is None:
        return c.error(f"unknown function '{node.func}'", node.func_span)
    if not spec.min_args <= len(args) <= spec.max_args:
        want = (
            str(spec.min_args)
            if spec.min_args == spec.max_args
            else (f"{spec.min_args} to {spec.max_args}")
        )
        return c.error(f"{node.func} takes {want} arguments, {len(args)} given", node.span)
    for k in node.kwargs:
        if k.name not in spec.kwargs:
            allowed = ", ".join(spec.kwargs) or "none"
            return c.error(f"{node.func} has no argument '{k.name}' (keywords: {allowed})", k.span)
    lo, hi = spec.targs
    if not lo <= len(node.targs) <= hi:
        return c.error(
            f"{node.func} takes {lo if lo == hi else f'{lo} to {hi}'} template "
            f"arguments <...>, {len(node.targs)} given",
            node.span,
        )
    if any(isinstance(v, ErrorV) for v in [*args, *kw.values()]):
        return ErrorV()
    return spec.fn(c, node, args, kw)


# Template arguments ----------------------------------------------------------------------------


def targ_atom(c: ExprChecker, node: ast.Node, kind: str) -> Atom | None:
    text = node.text if isinstance(node, ast.AtomName) else getattr(node, "id", None)
    atom = ATOMS.get(text or "")
    if atom is None:
        names = ", ".join(a.name for a in ATOMS.values() if a.kind == kind)
        c.error(f"unknown {kind} atom '{text or '?'}' (atoms: {names})", node.span)
        return None
    if atom.kind != kind:
        c.error(f"'{atom.name}' is a {atom.kind} atom, this needs a {kind} atom", node.span)
        return None
    if c.target is not None and c.target not in atom.targets:
        c.error(
            f"atom '{atom.name}' needs target {' or '.join(sorted(atom.targets))}, kernel "
            f"targets {c.target}",
            node.span,
        )
        return None
    c.values[id(node)] = AtomV(atom.name)
    return atom


def targ_type(c: ExprChecker, node: ast.Node, scope: Scope) -> str | None:
    v = c.expr(node, scope) if isinstance(node, ast.Name) else None
    if isinstance(v, TypeV):
        return v.name
    if not isinstance(v, ErrorV):
        c.error(f"expected an element type ({', '.join(SCALAR_TYPES)})", node.span)
    return None


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


def algebra(c: ExprChecker, name: str, args: list[V], span: ast.Span) -> V:
    """Evaluate a layout-algebra function at compile time; its errors are located at the call."""
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
    bms = [c.expr(t, c.scope_for_targs) for t in node.targs]
    if not all(isinstance(v, IntV) and v.static for v in bms):
        return c.error("swizzle<B,M,S> takes three static integers", node.span)
    try:
        return SwizzleV(L.Swizzle(*(v.value for v in bms)))
    except L.LayoutError as exc:
        return c.error(exc.message, node.span)


# Integers --------------------------------------------------------------------------------------


def _ints(c: ExprChecker, node: ast.Call, args: list[V]) -> list[IntV] | None:
    for a, n in zip(args, node.args, strict=True):
        if not isinstance(a, IntV):
            c.error(f"{node.func} takes integers, not a {a.describe()}", n.span)
            return None
    return args


@builtin("cdiv", 2, 2)
@builtin("ceil_div", 2, 2)
def cdiv(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    ints = _ints(c, node, args)
    if ints is None:
        return ErrorV()
    a, b = ints
    if b.static and b.value <= 0:
        return c.error(f"cdiv by {b.value}", node.args[1].span)
    if a.static and b.static:
        return IntV(-(-a.value // b.value), str(-(-a.value // b.value)))
    return IntV(None, f"cdiv({a.text}, {b.text})")


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

UNARY_MATH = ("exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "relu", "gelu", "sigmoid", "abs")


def _unary(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    return c.elementwise(node.span, args, node.args)


for _name in UNARY_MATH:
    builtin(_name, 1, 1)(_unary)


@builtin("reduce_max", 1, 1, ("mode",))
@builtin("reduce_min", 1, 1, ("mode",))
@builtin("reduce_sum", 1, 1, ("mode",))
def reduce(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    x = args[0]
    if not isinstance(x, TensorV) or x.space != "register":
        return c.error(f"{node.func} reduces register values: load(...) first", node.args[0].span)
    sizes = mode_sizes(x.logical_shape)
    mode = kw.get("mode", IntV(0, "0"))
    if not (isinstance(mode, IntV) and mode.static and 0 <= mode.value < len(sizes)):
        span = node.kwarg("mode").span if node.kwarg("mode") else node.span
        return c.error(f"mode must be a static mode number below the rank {len(sizes)}", span)
    sizes[mode.value] = 1
    shape = tuple(sizes) if len(sizes) > 1 else sizes[0]
    if x.block_shape is not None:
        return c.error(f"{node.func} of an MMA fragment is not supported yet", node.span)
    return TensorV(x.elem, "register", L.Layout(shape))


# Memory ----------------------------------------------------------------------------------------


def _layout_arg(c: ExprChecker, v: V, node: ast.Node) -> object | None:
    if isinstance(v, LayoutV):
        obj = v.obj
    elif isinstance(v, (TupleV, IntV)) and int_tuple(v) is not None:
        obj = L.Layout(int_tuple(v))
    else:
        c.error(f"expected a layout or a shape, found {v.describe()}", node.span)
        return None
    if not (L.is_static(L.shape(obj)) and L.is_static(inner(obj).stride)):
        c.error(f"this layout must be static, {obj} has runtime entries", node.span)
        return None
    return obj


@builtin("shared", 1, 1, targs=(1, 1))
def shared(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    elem = targ_type(c, node.targs[0], c.scope_for_targs)
    obj = _layout_arg(c, args[0], node.args[0])
    if elem is None or obj is None:
        return ErrorV()
    name = c.let_name or f"smem{len(c.allocs)}"
    alloc = Alloc(name, node.span, elem, L.cosize(inner(obj)))
    c.allocs.append(alloc)
    return TensorV(elem, "shared", obj, alloc)


@builtin("fragment", 1, 1, targs=(1, 1))
def fragment(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    elem = targ_type(c, node.targs[0], c.scope_for_targs)
    obj = _layout_arg(c, args[0], node.args[0])
    if elem is None or obj is None:
        return ErrorV()
    v = args[0]
    if isinstance(v, LayoutV) and v.block_shape is not None:
        return TensorV(elem, "register", obj, block_shape=v.block_shape, mma=v.mma)
    return TensorV(elem, "register", obj)


def _tensor(c: ExprChecker, v: V, node: ast.Node, spaces: tuple[str, ...] = ()) -> TensorV | None:
    if not isinstance(v, TensorV):
        c.error(f"expected a tensor, found {v.describe()}", node.span)
        return None
    if spaces and v.space not in spaces:
        c.error(f"expected a {' or '.join(spaces)} tensor, found a {v.space} one", node.span)
        return None
    return v


def _coords(v: V) -> list[V]:
    return v.items if isinstance(v, TupleV) else [v]


@builtin("local_tile", 3, 3)
def local_tile(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    t = _tensor(c, args[0], node.args[0])
    tile = static_ints(args[1])
    coords = _coords(args[2])
    if t is None:
        return ErrorV()
    if tile is None or any(x <= 0 for x in tile):
        return c.error("the tile shape must be positive static integers", node.args[1].span)
    modes = top_modes(t.layout)
    if not len(modes) == len(tile) == len(coords):
        return c.error(
            f"tensor rank {len(modes)}, tile rank {len(tile)} and coordinate rank "
            f"{len(coords)} must agree",
            node.span,
        )
    tiled, rest = [], []
    for m, size, crd in zip(modes, tile, coords, strict=True):
        if not isinstance(crd, (IntV, UnderscoreV)):
            return c.error(
                f"a tile coordinate is an integer or '_', not {crd.describe()}", node.args[2].span
            )
        extent = L.size(m)
        if t.space != "global" and extent is not L.DYN and extent % size:
            return c.error(
                f"tile {size} does not divide the {t.space} mode of size {extent}",
                node.args[1].span,
            )
        try:
            first, repeats = split_mode(m, size)
        except L.LayoutError as exc:
            return c.error(exc.message, node.span)
        tiled.append(first)
        if isinstance(crd, UnderscoreV):
            rest.append(repeats)
    return TensorV(t.elem, t.space, with_modes(t.layout, tiled + rest), t.alloc)


def split_mode(m: L.Layout, n: int) -> tuple[L.Layout, L.Layout]:
    """Mode `m` divided by `n`, as CuTe's logical_divide: its first n elements, and how those
    repeat. A flat mode may have runtime entries and need not divide (a ragged global edge)."""
    if isinstance(m.shape, tuple):
        divided = L.logical_divide(m, n)
        return divided[0], divided[1]
    count = L.DYN if m.shape is L.DYN else -(-m.shape // n)
    return L.Layout(n, m.stride), L.Layout(count, L.DYN if m.stride is L.DYN else m.stride * n)


@builtin("partition", 2, 2)
def partition(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    t = _tensor(c, args[0], node.args[0])
    thr = _layout_arg(c, args[1], node.args[1])
    if t is None or thr is None:
        return ErrorV()
    modes, parts = top_modes(t.layout), list(L.shape(thr)) if L.rank(thr) > 1 else [L.size(thr)]
    if len(parts) != len(modes):
        return c.error(
            f"thread layout rank {len(parts)} differs from tensor rank {len(modes)}", node.span
        )
    out = []
    for m, p in zip(modes, parts, strict=True):
        extent, p = L.size(m), L.product(p)
        if extent is not L.DYN and extent % p:
            return c.error(f"{p} threads do not divide the mode of size {extent}", node.span)
        try:
            out.append(split_mode(m, p)[1])
        except L.LayoutError as exc:
            return c.error(exc.message, node.span)
    return TensorV(t.elem, t.space, with_modes(t.layout, out), t.alloc)


@builtin("permute", 2, 2)
def permute(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    t = _tensor(c, args[0], node.args[0])
    perm = static_ints(args[1])
    if t is None:
        return ErrorV()
    modes = top_modes(t.layout)
    if perm is None or sorted(perm) != list(range(len(modes))):
        return c.error(f"permute takes a permutation of 0..{len(modes) - 1}", node.args[1].span)
    return TensorV(t.elem, t.space, with_modes(t.layout, [modes[p] for p in perm]), t.alloc)


@builtin("load", 1, 1, ("other",))
def load(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    t = _tensor(c, args[0], node.args[0], ("global", "shared"))
    other = kw.get("other")
    if other is not None and not (isinstance(other, (IntV, FloatV)) and other.value is not None):
        return c.error("other = must be a static number", node.kwarg("other").span)
    if t is None:
        return ErrorV()
    if not L.is_static(L.shape(t.layout)):
        return c.error(
            f"load needs a static tile shape, this tensor has shape "
            f"{L.tuple_str(L.shape(t.layout))}: local_tile(...) it first",
            node.span,
        )
    return TensorV(t.elem, "register", L.Layout(L.shape(t.layout)))


def _same_size(c: ExprChecker, a: TensorV, b: TensorV, node: ast.Node) -> bool:
    sa, sb = L.product(a.logical_shape), L.product(b.logical_shape)
    if L.DYN in (sa, sb) or sa == sb:
        return True
    c.error(
        f"sizes differ: {L.tuple_str(a.logical_shape)} ({sa} elements) vs "
        f"{L.tuple_str(b.logical_shape)} ({sb} elements)",
        node.span,
    )
    return False


@builtin("store", 2, 2)
def store(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    v = _tensor(c, args[0], node.args[0], ("register",))
    t = _tensor(c, args[1], node.args[1], ("global", "shared"))
    if v is None or t is None or not _same_size(c, v, t, node):
        return ErrorV()
    return UnitV()


@builtin("copy", 2, 2, targs=(0, 1))
def copy(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    src = _tensor(c, args[0], node.args[0])
    dst = _tensor(c, args[1], node.args[1])
    atom = targ_atom(c, node.targs[0], "copy") if node.targs else None
    if src is None or dst is None or (node.targs and atom is None):
        return ErrorV()
    if not _same_size(c, src, dst, node):
        return ErrorV()
    if atom is not None and not _copy_spaces_ok(c, atom.name, src, dst, node):
        return ErrorV()
    if dst.alloc is not None and c.pipelines:
        pipe = c.pipelines[-1]
        if pipe.stages > dst.alloc.stages:
            dst.alloc.stages, dst.alloc.stages_param = pipe.stages, pipe.stages_param
    return UnitV()


COPY_SPACES = {
    "cp_async": (("global", "shared"),),
    "tma": (("global", "shared"), ("shared", "global")),
    "ldmatrix": (("shared", "register"),),
    "stmatrix": (("register", "shared"),),
}


def _copy_spaces_ok(c: ExprChecker, atom: str, src: TensorV, dst: TensorV, node: ast.Node) -> bool:
    allowed = COPY_SPACES.get(atom.split(".")[0])
    if allowed is None or (src.space, dst.space) in allowed:
        return True
    want = " or ".join(f"{a} -> {b}" for a, b in allowed)
    c.error(f"atom '{atom}' copies {want}, not {src.space} -> {dst.space}", node.span)
    return False


@builtin("barrier", 0, 0)
def barrier(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    return UnitV()


# MMA -------------------------------------------------------------------------------------------


@builtin("tiled_mma", 0, 0, ("atoms", "warpgroups", "n"), targs=(1, 1))
def tiled_mma(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    atom = targ_atom(c, node.targs[0], "mma")
    if atom is None:
        return ErrorV()
    key = "warpgroups" if atom.threads == 128 else "atoms"
    tiling = static_ints(kw.get(key, IntV(1, "1")))
    if tiling is None or len(tiling) > 3 or any(x <= 0 for x in tiling):
        return c.error(f"{key} = takes up to three positive static integers", node.span)
    tiling = (tiling + [1, 1])[:3]
    n = kw.get("n")
    if atom.mnk[1] == 0 and not (isinstance(n, IntV) and n.static and n.value in WGMMA_N):
        return c.error(f"'{atom.name}' needs n = a multiple of 8 from 8 to 256", node.span)
    if atom.mnk[1] != 0 and n is not None:
        return c.error(f"'{atom.name}' has a fixed N of {atom.mnk[1]}", node.span)
    needed = tiling[0] * tiling[1] * tiling[2] * atom.threads
    have = 1
    for t in c.threads:
        have *= t
    if needed > have:
        return c.error(f"this tiled MMA needs {needed} threads, the kernel has {have}", node.span)
    return MmaV(atom.name, tuple(tiling), n.value if isinstance(n, IntV) else None)


def mma_atom_shape(mma: MmaV) -> tuple[int, int, int]:
    m, n, k = ATOMS[mma.atom].mnk
    return m, (mma.n if n == 0 else n), k


@builtin("partition_a", 2, 2)
@builtin("partition_b", 2, 2)
@builtin("partition_c", 2, 2)
def partition_mma(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    mma, shape = args[0], static_ints(args[1])
    if not isinstance(mma, MmaV):
        return c.error(f"{node.func} takes a tiled_mma first", node.args[0].span)
    if shape is None or len(shape) != 2:
        return c.error(f"{node.func} takes a static 2-d tile shape", node.args[1].span)
    m, n, k = mma_atom_shape(mma)
    rows, cols = {
        "partition_a": ((m, 0), (k, 2)),
        "partition_b": ((n, 1), (k, 2)),
        "partition_c": ((m, 0), (n, 1)),
    }[node.func]
    per = []
    for extent, (atom_extent, t) in zip(shape, (rows, cols), strict=True):
        span = atom_extent * (mma.tiling[t] if t < 2 else 1)
        if extent % span:
            return c.error(
                f"tile extent {extent} is not a multiple of {span} (atom "
                f"{atom_extent} × {mma.tiling[t] if t < 2 else 1})",
                node.args[1].span,
            )
        per.append(extent // span)
    values = rows[0] * cols[0] // ATOMS[mma.atom].threads
    return LayoutV(L.Layout((values, per[0], per[1])), tuple(shape), mma)


@builtin("gemm", 4, 4)
def gemm(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    mma = args[0]
    if not isinstance(mma, MmaV):
        return c.error("gemm takes a tiled_mma first", node.args[0].span)
    atom = ATOMS[mma.atom]
    a = _tensor(c, args[1], node.args[1], ("shared", "register"))
    b = _tensor(c, args[2], node.args[2], ("shared", "register"))
    acc = _tensor(c, args[3], node.args[3], ("register",))
    if a is None or b is None or acc is None:
        return ErrorV()
    for t, n, want in (
        (a, node.args[1], atom.ab),
        (b, node.args[2], atom.ab),
        (acc, node.args[3], atom.c),
    ):
        if t.elem != want:
            return c.error(
                f"atom '{atom.name}' needs {want} here, this tensor holds {t.elem}", n.span
            )
    return UnitV()


# Iteration -------------------------------------------------------------------------------------


@builtin("range", 1, 3)
def range_(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    ints = _ints(c, node, args)
    if ints is None:
        return ErrorV()
    if len(ints) == 1:
        ints = [IntV(0, "0"), ints[0]]
    if len(ints) == 2:
        ints = [*ints, IntV(1, "1")]
    if ints[2].static and ints[2].value <= 0:
        return c.error("the step of range must be positive", node.args[2].span)
    return IterV("range", ints)


@builtin("pipeline", 1, 1, ("stages",))
def pipeline(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    ints = _ints(c, node, args)
    stages = kw.get("stages", IntV(2, "2"))
    snode = node.kwarg("stages")
    if ints is None:
        return ErrorV()
    if not (isinstance(stages, IntV) and stages.static and 1 <= stages.value <= 16):
        return c.error("stages must be a static integer from 1 to 16", (snode or node).span)
    param = snode.id if isinstance(snode, ast.Name) else None
    return IterV("pipeline", [IntV(0, "0"), ints[0], IntV(1, "1")], stages.value, param)


@builtin("grouped", 1, 1)
def grouped(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    g = args[0]
    if not (isinstance(g, IntV) and g.static and g.value > 0):
        return c.error("grouped(...) takes a positive static group size", node.span)
    return RasterV(g.value)


@builtin("persistent", 1, 1, ("raster",))
def persistent(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    tiles = _coords(args[0])
    if len(tiles) != 2 or not all(isinstance(t, IntV) for t in tiles):
        return c.error("persistent takes the tile counts (m, n)", node.args[0].span)
    raster = kw.get("raster")
    if raster is not None and not isinstance(raster, RasterV):
        return c.error("raster = takes grouped(N)", node.kwarg("raster").span)
    group = raster.group if raster is not None else 1
    return IterV("persistent", tiles, raster="grouped" if raster else "linear", group=group)

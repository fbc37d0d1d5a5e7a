"""Frontend (check stage): builtins on tensors: memory, views, copies and MMAs."""

from __future__ import annotations

from tilec import layout as L
from tilec import smem
from tilec.diagnostics import note
from tilec.frontend import ast
from tilec.frontend.atoms import ATOMS, WGMMA_N
from tilec.frontend.builtin import Builtin, items, registrar, targ_atom, targ_type, tensor_arg
from tilec.frontend.expr import ExprChecker
from tilec.frontend.limits import check_copy
from tilec.frontend.shapes import (
    inner,
    int_tuple,
    mode_sizes,
    static_ints,
    tile_layout,
    top_modes,
    with_modes,
)
from tilec.frontend.types import SCALAR_TYPES
from tilec.frontend.values import (
    Alloc,
    ErrorV,
    FloatV,
    IntV,
    LayoutV,
    MmaV,
    TensorV,
    TupleV,
    UnderscoreV,
    UnitV,
    V,
)

TENSOR_BUILTINS: dict[str, Builtin] = {}
builtin = registrar(TENSOR_BUILTINS)


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


@builtin("shared", 1, 1, ("reuse",), targs=(1, 1))
def shared(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    elem = targ_type(c, node.targs[0])
    obj = _layout_arg(c, args[0], node.args[0])
    reuse = None
    if "reuse" in kw:
        other = kw["reuse"]
        if not isinstance(other, TensorV) or other.alloc is None:
            if not isinstance(other, ErrorV):
                c.error(
                    f"reuse = expects a shared buffer, found {other.describe()}",
                    node.kwarg("reuse").span,
                )
            return ErrorV()
        reuse = other.alloc.reuse or other.alloc  # the buffer that owns the memory
    if elem is None or obj is None:
        return ErrorV()
    try:  # the planner's sizes, which the lowering uses too: negative strides included
        elems = smem.extent(obj)[1]
        stride = smem.stage_stride(obj, SCALAR_TYPES[elem][1])
    except L.LayoutError as exc:
        return c.error(exc.message, node.args[0].span)
    name = c.let_name or f"smem{len(c.allocs)}"
    alloc = Alloc(name, node.span, elem, elems, stride, reuse=reuse)
    c.allocs.append(alloc)
    return TensorV(elem, "shared", obj, alloc)


@builtin("fragment", 1, 1, targs=(1, 1))
def fragment(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    elem = targ_type(c, node.targs[0])
    obj = _layout_arg(c, args[0], node.args[0])
    if elem is None or obj is None:
        return ErrorV()
    v = args[0]
    if isinstance(v, LayoutV) and v.block_shape is not None:
        return TensorV(elem, "register", obj, block_shape=v.block_shape, mma=v.mma)
    return TensorV(elem, "register", obj, fresh=True)


@builtin("local_tile", 3, 3)
def local_tile(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    t = tensor_arg(c, args[0], node.args[0])
    tile = static_ints(args[1])
    coords = items(args[2])
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
        if isinstance(crd, ErrorV):  # reported where it was computed
            return crd
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
            first, repeats = L.split_mode(m, size)
        except L.LayoutError as exc:
            return c.error(exc.message, node.span)
        tiled.append(first)
        if isinstance(crd, UnderscoreV):
            rest.append(repeats)
    return TensorV(t.elem, t.space, with_modes(t.layout, tiled + rest), t.alloc)


@builtin("partition", 2, 2)
def partition(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    t = tensor_arg(c, args[0], node.args[0])
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
            out.append(L.split_mode(m, p)[1])
        except L.LayoutError as exc:
            return c.error(exc.message, node.span)
    return TensorV(t.elem, t.space, with_modes(t.layout, out), t.alloc)


@builtin("permute", 2, 2)
def permute(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    t = tensor_arg(c, args[0], node.args[0])
    perm = static_ints(args[1])
    if t is None:
        return ErrorV()
    modes = top_modes(t.layout)
    if perm is None or sorted(perm) != list(range(len(modes))):
        return c.error(f"permute takes a permutation of 0..{len(modes) - 1}", node.args[1].span)
    return TensorV(t.elem, t.space, with_modes(t.layout, [modes[p] for p in perm]), t.alloc)


@builtin("prepend", 2, 2)
@builtin("append", 2, 2)
def add_mode(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    """`prepend(t, S)`, `append(t, S)`: a view of t with one more top-level mode of size S and
    stride 0, first or last (CuTe's prepend/append of t's layout with Layout<S,_0>): a rank-1
    weight `W: f16[N]` as the row `prepend(W, 1)`, shape (1, N), which meets `(1, COLS)` tiles."""
    t = tensor_arg(c, args[0], node.args[0], ("global", "shared"))
    size = args[1]
    if t is None:
        return ErrorV()
    if not isinstance(size, IntV) or (size.static and size.value <= 0):
        return c.error(
            f"{node.func} takes the size of the new mode (a positive integer; its stride is 0), "
            f"not {size.describe() if not isinstance(size, IntV) else size.value}",
            node.args[1].span,
        )
    mode = L.Layout(size.value if size.static else L.DYN, 0)
    modes = top_modes(t.layout)
    modes = [mode, *modes] if node.func == "prepend" else [*modes, mode]
    return TensorV(t.elem, t.space, with_modes(t.layout, modes), t.alloc)


@builtin("load", 1, 1, ("other", "like", "mask"))
def load(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    t = tensor_arg(c, args[0], node.args[0], ("global", "shared"))
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
    if "mask" in kw:
        if "like" in kw:
            return c.error(
                "load takes like = or mask = (a mask already spreads the load as it is spread)",
                node.kwarg("mask").span,
            )
        mask = _mask(c, node, t, kw["mask"])
        return ErrorV() if mask is None else _spread_as(t, mask)
    if "like" in kw:
        return _load_like(c, node, t, kw["like"])
    return TensorV(t.elem, "register", tile_layout(L.shape(t.layout)))


def _mask(c: ExprChecker, node: ast.Call, t: TensorV, mask: V) -> TensorV | None:
    """`mask = p` of a load or store: a predicate tensor in registers, shaped as the tile."""
    arg = node.kwarg("mask")
    p = tensor_arg(c, mask, arg, ("register",))
    if p is None:
        return None
    if p.elem != "bool":
        c.error(f"mask = takes a predicate tensor (a comparison), not {p.elem} values", arg.span)
        return None
    shape, want = L.shape(t.layout), p.logical_shape
    if mode_sizes(shape) != mode_sizes(want):
        c.error(
            f"a {L.tuple_str(want)} mask for a {L.tuple_str(shape)} tile: the shapes must be equal",
            arg.span,
        )
        return None
    return p


def _load_like(c: ExprChecker, node: ast.Call, t: TensorV, like: V, what: str = "load") -> V:
    """`load(t, like = x)`: t's elements spread over the threads as x's are (an MMA
    accumulator's partition, say), so the result combines elementwise with x."""
    span = node.kwarg("like").span
    x = tensor_arg(c, like, node.kwarg("like"), ("register",))
    if x is None:
        return ErrorV()
    shape, want = L.shape(t.layout), x.logical_shape
    if mode_sizes(shape) != mode_sizes(want):
        return c.error(
            f"{what} of a {L.tuple_str(shape)} tile like a {L.tuple_str(want)} register tensor: "
            "the shapes must be equal",
            node.span,
            [note("the register tensor is here", span)],
        )
    return _spread_as(t, x)


def _spread_as(t: TensorV, x: TensorV) -> TensorV:
    """t's elements in registers, spread over the threads as the register tensor x."""
    return TensorV(t.elem, "register", x.layout, block_shape=x.block_shape, mma=x.mma)


@builtin("relayout", 1, 1, ("through", "like"))
def relayout(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    """`relayout(x, through = s[, like = y])`: the register tensor x spread over the threads
    anew, through the shared buffer s (x's shape and element type): as `load(s)` spreads its
    tile, or as y is. The op holds its own barriers; s's contents afterwards are unspecified."""
    x = tensor_arg(c, args[0], node.args[0], ("register",))
    if "through" not in kw:
        return c.error("relayout needs through = a shared buffer of the tensor's shape", node.span)
    s = tensor_arg(c, kw["through"], node.kwarg("through"), ("shared",))
    if x is None or s is None:
        return ErrorV()
    shape, want = L.shape(s.layout), x.logical_shape
    where = node.kwarg("through").span
    if not L.is_static(shape) or mode_sizes(shape) != mode_sizes(want):
        return c.error(
            f"relayout of a {L.tuple_str(want)} register tensor through a {L.tuple_str(shape)} "
            "buffer: the shapes must be equal",
            where,
        )
    if s.elem != x.elem:
        return c.error(
            f"relayout of {x.elem} values through a {s.elem} buffer: convert them first "
            f"(x : {s.elem})",
            where,
        )
    if "like" in kw:
        y = _load_like(c, node, s, kw["like"], "relayout")
        return y if isinstance(y, ErrorV) else _spread_as(x, y)
    return TensorV(x.elem, "register", tile_layout(shape))


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


@builtin("store", 2, 2, ("mask",))
def store(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    v = tensor_arg(c, args[0], node.args[0], ("register",))
    t = tensor_arg(c, args[1], node.args[1], ("global", "shared"))
    if v is None or t is None or not _same_size(c, v, t, node):
        return ErrorV()
    if "mask" in kw and _mask(c, node, t, kw["mask"]) is None:
        return ErrorV()
    if v.elem == "bool" and t.elem != "bool":
        return c.error(
            f"storing a predicate tensor into {t.elem}: make numbers of it first, e.g. "
            "where(p, 1.0, 0.0)",
            node.args[0].span,
        )
    c.stores.append(t)
    return UnitV()


@builtin("copy", 2, 2, ("narrow", "unbounded"), targs=(0, 1), atom_targs=True)
def copy(c: ExprChecker, node: ast.Call, args: list[V], kw: dict[str, V]) -> V:
    src = tensor_arg(c, args[0], node.args[0])
    dst = tensor_arg(c, args[1], node.args[1])
    atom = targ_atom(c, node.targs[0], "copy") if node.targs else None
    if src is None or dst is None or (node.targs and atom is None):
        return ErrorV()
    narrow = kw.get("narrow")
    if narrow is not None:
        where = node.kwarg("narrow").span
        if not (isinstance(narrow, IntV) and narrow.static and narrow.value in (0, 1)):
            return c.error("narrow must be a static 0 or 1", where)
        if narrow.value and (atom is None or not atom.name.startswith("cp_async")):
            return c.error("narrow = 1 is for cp_async copies", where)
    unbounded = kw.get("unbounded")
    if unbounded is not None:
        where = node.kwarg("unbounded").span
        if not (isinstance(unbounded, IntV) and unbounded.static and unbounded.value in (0, 1)):
            return c.error("unbounded must be a static 0 or 1", where)
        if unbounded.value and (atom is None or atom.name != "tma"):
            return c.error(
                "unbounded = 1 is for copy<tma> (its box reads past a view's bound); other "
                "copies are predicated at the bound",
                where,
            )
    if not _same_size(c, src, dst, node) or not check_copy(c, src, node.span):
        return ErrorV()
    if src.elem != dst.elem:
        return c.error(
            f"copy moves {src.elem} into {dst.elem}: copies do not convert; load, convert "
            "with ': type' and store instead",
            node.span,
        )
    if atom is not None and not _copy_spaces_ok(c, atom.name, src, dst, node):
        return ErrorV()
    if dst.alloc is not None and c.pipelines:
        pipe = c.pipelines[-1]
        dst.alloc.pipelined = True
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


@builtin("tiled_mma", 0, 0, ("atoms", "warpgroups", "n"), targs=(1, 1), atom_targs=True)
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
    if shape is None or len(shape) != 2 or min(shape) <= 0:
        return c.error(f"{node.func} takes a positive static 2-d tile shape", node.args[1].span)
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
    a = tensor_arg(c, args[1], node.args[1], ("shared", "register"))
    b = tensor_arg(c, args[2], node.args[2], ("shared", "register"))
    acc = tensor_arg(c, args[3], node.args[3], ("register",))
    if a is None or b is None or acc is None:
        return ErrorV()
    if a.space == "register" and a.mma is None:
        return c.error(
            "gemm's a in registers must be an MMA accumulator (P of P @ V, converted to the "
            "atom's type), not a tile spread by the compiler",
            node.args[1].span,
        )
    if b.space == "register":
        return c.error("gemm's b comes from shared memory", node.args[2].span)
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

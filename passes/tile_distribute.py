r"""Passes: `tile-distribute`, every register tensor's thread–value layout written into its type.

In the tile stage a register tensor is a block-level value, `!tile.tensor<f32, "register",
"(1,4096):(1,1)">`: nothing says which thread holds which element. This pass decides it, the
way Triton's layout assignment does, and writes it down as CuTe's TV layout (thread × value →
the tile's column-major index):

    !tile.frag<f32, "(1,4096):(1,1)", "((128),(8,4)):((8),(1,1024))">

convert-tile-to-gpu then lowers each register tensor as its type says (and checks that what
it built is that layout). Four kinds of spread, each with its TV layout:

  blocked   chunks of V elements along mode m, chunk v for thread v mod T (`Partition`; see
            tile_fragments): `P ∘ ((T),(V,I)):((V),(1,V·T))` with P taking e (mode m fastest)
            to the column-major index. A load picks it from its tile's layout (16-byte chunks
            along the unit-stride mode); a `fragment` takes the one of the tensors it meets.
  mma       the C fragment of a tiled MMA (`atoms.tiled_c`): `fragment(mma)`, what it flows into.
  reduced   reduced along mode k: `R o 0 o TV` with TV the source's layout and R the source
            block's shape with the reduced tile's column-major strides, mode k's stride 0 (the
            threads of one group hold the same value).
  plain     one element every thread holds (`((T),(1)):((0),(0))`): a one-element fragment,
            a one-element reduction's result.

Anchors: `fragment` (an MMA's, or the spread of what it meets), `load` (its tile's, or that of
its `like`), `relayout` (as a load of its buffer, or its `like`'s), `reduce` (its operand's,
reduced), `reduce_group` (its operand's, each run of a chunk one element). Elementwise ops,
`coord` and `cluster_reduce` take their operands'; a loop's iter_args and results their
initial value's. Operands spread differently, or a loop whose value changes its spread, are
located errors here.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from mlir import ir

from tilec import targets
from tilec.binding import op_id, walk
from tilec.dialects.layout import algebra as A
from tilec.dialects.tile.types import TensorType as TypeText
from tilec.lowering import LoweringError, tile_epilogue, tile_roles
from tilec.lowering.tile_access import VECTOR_BYTES, choose_partition, largest_pow2_dividing
from tilec.lowering.tile_fragments import Partition, combined_spread, grouped
from tilec.lowering.tile_mma import MmaPartition, mma_partition
from tilec.lowering.tile_modes import block_shape, typed_modes
from tilec.lowering.tile_spreads import PLAIN, Part, Spread, single, tv_text
from tilec.lowering.tile_views import elem_bytes, tensor_type
from tilec.passes.base import Pass, register

# Ops whose result is spread as their full-shape register operands (one element each).
SAME_SPREAD = ("tile.binary", "tile.unary", "tile.convert", "tile.compare", "tile.select")
STAYS = "a loop's value must stay spread over the threads as it was when the loop began"
FULL = "expected a register tensor of a full tile"


# Deciding spreads ---------------------------------------------------------------------------


def is_register(value: ir.Value) -> bool:
    t = tensor_type(value.type)
    return t is not None and t.space == "register"


class Spreads:
    """The spread of every register tensor of one kernel, decided in program order."""

    def __init__(self, func: ir.Operation) -> None:
        self.block_threads = math.prod(ir.DenseI64ArrayAttr(func.attributes["tile.threads"]))
        self.threads = self.block_threads  # those of the op being visited (tile_roles)
        self.of: dict[ir.Value, Spread] = {}
        self.threads_of: dict[ir.Value, int] = {}  # the threads each value is spread over
        self.likes: dict[int, list[Spread | None]] = {}  # carrying loops' inits, by op_id

    def visit(self, op: ir.Operation) -> None:
        rule = RULES.get(op.name)
        if rule is None and any(is_register(r) for r in op.results):
            raise LoweringError(op, f"tile-distribute has no rule for '{op.name}'")
        if rule is None:
            return
        registers = any(is_register(v) for v in [*op.operands, *op.results])
        self.threads = (
            tile_roles.spread_threads(op, self.block_threads) if registers else self.block_threads
        )
        rule(self, op)
        for r in op.results:
            if r in self.of:
                self.threads_of[r] = self.threads

    def get(self, op: ir.Operation, value: ir.Value) -> Spread:
        if value not in self.of:
            raise LoweringError(op, "operand's spread was not decided before its use")
        return self.of[value]

    def full(self, op: ir.Operation, value: ir.Value) -> Part:
        s = self.get(op, value)
        if isinstance(s, tuple) or s == PLAIN:
            raise LoweringError(op, FULL)
        return s

    def fragment(self, op: ir.Operation) -> None:
        r = op.results[0]
        if op.operands:
            block = tuple(ir.DenseI64ArrayAttr(op.attributes["block_shape"]))
            part = mma_partition(op, op.operands[0].type, block)
            if 32 * math.prod(part.warps) != self.threads:
                raise LoweringError(
                    op,
                    f"this MMA's C spreads over {32 * math.prod(part.warps)} threads, but "
                    f"{self.threads} run it (a consumer's warp groups split each tile; with "
                    f"ping-pong each group holds whole tiles: tile the wgmma over (1, 1, 1))",
                )
            self.of[r] = part
        else:
            self.of[r] = PLAIN if single(r.type) else spread_of_value(r, self.threads)

    def load(self, op: ir.Operation) -> None:
        r = op.results[0]
        if len(op.operands) == 1:
            self.of[r] = spread_of_load(op, self.threads)
            return
        like = self.full(op, op.operands[1])
        shape = block_shape(tensor_type(op.operands[0].type).layout)
        if isinstance(like, MmaPartition) and shape != like.block:
            raise LoweringError(op, f"loading a {shape} tile like a {like.block} fragment")
        if isinstance(like, Partition) and shape != like.shape:
            raise LoweringError(op, f"loading a {shape} tile like a {like.shape} tensor")
        self.of[r] = like

    def relayout(self, op: ir.Operation) -> None:
        """As a load of the buffer spreads it (with `like`: as `like` is), from a value of the
        buffer's shape."""
        shape = block_shape(tensor_type(op.operands[1].type).layout)
        for value in [op.operands[0], *list(op.operands)[2:]]:
            if (block := block_of(self.full(op, value))) != shape:
                what = "value" if value == op.operands[0] else "like"
                raise LoweringError(
                    op,
                    f"relayout's {what} is a {shape_text(block)} tile, "
                    f"its buffer {shape_text(shape)}",
                )
        like = list(op.operands)[2:]
        self.of[op.results[0]] = (
            self.full(op, like[0]) if like else spread_of_tile(op, op.operands[1], self.threads)
        )

    def reduce(self, op: ir.Operation) -> None:
        mode = ir.IntegerAttr(op.attributes["mode"]).value
        self.of[op.results[0]] = (self.full(op, op.operands[0]), mode)

    def reduce_group(self, op: ir.Operation) -> None:
        self.of[op.results[0]] = group_spread(op, self.full(op, op.operands[0]))

    def coord(self, op: ir.Operation) -> None:
        s = self.get(op, op.operands[0])
        if isinstance(s, tuple):
            raise LoweringError(op, "coord of this register tensor is not lowered yet")
        self.of[op.results[0]] = s

    def same(self, op: ir.Operation) -> None:
        self.of[op.results[0]] = self.get(op, op.operands[0])

    def gemm(self, op: ir.Operation) -> None:
        if op.results:  # the value form: the updated accumulator, spread as it was
            self.of[op.results[0]] = self.full(op, op.operands[3])

    def elementwise(self, op: ir.Operation) -> None:
        """As convert-tile-to-gpu combines (tile_fragments.combined_spread): plain operands
        broadcast as scalars, reductions over the full operands, all over one partition."""
        spreads = [self.get(op, v) for v in op.operands if is_register(v)]
        frags = [s if isinstance(s, tuple) else (s, None) for s in spreads if s != PLAIN]
        if not frags:
            self.of[op.results[0]] = PLAIN
            return
        part, mode = combined_spread(op, frags)
        self.of[op.results[0]] = part if mode is None else (part, mode)

    def loop(self, op: ir.Operation) -> None:
        if not any(is_register(r) for r in op.results):
            return
        likes = [self.get(op, v) if is_register(v) else None for v in list(op.operands)[3:]]
        self.likes[op_id(op)] = likes
        args = list(op.regions[0].blocks[0].arguments)[1:]
        for like, arg, result in zip(likes, args, op.results, strict=True):
            if like is not None:
                self.of[arg] = self.of[result] = like

    def yield_(self, op: ir.Operation) -> None:
        likes = self.likes.get(op_id(op.parent))
        if likes is None:
            return
        for v, like in zip(op.operands, likes, strict=True):
            if like is not None and not carries(self.get(op, v), like, single(v.type)):
                raise LoweringError(op, STAYS)


def carries(value: Spread, like: Spread, one: bool) -> bool:
    """Whether a loop carrying `like` may yield `value` (tile_carry.flatten's cases)."""
    if like == PLAIN:
        return value == PLAIN or (isinstance(value, tuple) and one)
    if isinstance(like, tuple):
        return value == PLAIN or value == like
    return value == like


RULES = {
    "tile.fragment": Spreads.fragment,
    "tile.load": Spreads.load,
    "tile.relayout": Spreads.relayout,
    "tile.reduce": Spreads.reduce,
    "tile.reduce_group": Spreads.reduce_group,
    "tile.coord": Spreads.coord,
    "tile.cluster_reduce": Spreads.same,
    "tile.unit_sum": Spreads.same,
    "tile.gemm": Spreads.gemm,
    **dict.fromkeys(SAME_SPREAD, Spreads.elementwise),
    "scf.for": Spreads.loop,
    "scf.yield": Spreads.yield_,
}


# A load's own spread, and a fragment's from what it meets -------------------------------------


def spread_of_load(op: ir.Operation, threads: int) -> Partition:
    """A plain load's spread: 16-byte chunks along its tile's unit-stride mode, as far as the
    tile's layout keeps them contiguous (tile_access.choose_partition on the type's layout)."""
    return spread_of_tile(op, op.operands[0], threads)


def spread_of_tile(op: ir.Operation, tile: ir.Value, threads: int) -> Partition:
    """The spread a plain load of `tile` (a global or shared view) gives its elements."""
    src = tensor_type(tile.type)
    shape = block_shape(src.layout)
    if not all(isinstance(s, int) for s in shape):
        raise LoweringError(op, "a block-level access needs a static tile shape; tile first")
    return choose_partition(view_of(src), shape, threads)  # type: ignore[arg-type]


def shape_text(shape: tuple[int, ...]) -> str:
    return f"({','.join(map(str, shape))})"


def block_of(part: Part) -> tuple[int, ...]:
    """The block tile a full spread covers."""
    return part.block if isinstance(part, MmaPartition) else part.shape


def view_of(src) -> SimpleNamespace:  # noqa: ANN001
    """What choose_partition reads of a view (strides, element, swizzle), from its type: each
    top-level mode's stride (tile_modes), DYN where it is known at run time."""
    stride = [d for _, d in typed_modes(src.layout)]
    swizzle = src.layout.outer if isinstance(src.layout, A.ComposedLayout) else None
    return SimpleNamespace(stride=stride, elem=src.elem, swizzle=swizzle)


def spread_of_value(value: ir.Value, threads: int) -> Part | tuple[Part, int]:
    """The spread of a `fragment` without an MMA: that of a plain load it meets through
    elementwise ops and loop iter_args, or of a reduction's result it meets (as that result:
    a running max of several rows, `fragment<f32>((ROWS, 1))`; a reduction over a mode of
    extent 1 is spread as its source); else along its last mode in 16-byte chunks."""
    t = tensor_type(value.type)
    shape = tuple(A.flatten(A.shape(t.layout)))
    seen: set[ir.Value] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if v in seen or tensor_type(v.type) is None:
            continue
        seen.add(v)
        found = anchor(v, shape, threads)
        if found is not None:
            return found
        owner = v.owner
        if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "tile.reduce":
            if full(owner.operands[0], shape):  # over a mode of extent 1: its source's elements
                todo.append(owner.operands[0])
                continue
            source = spread_of_value(owner.operands[0], threads)
            if not isinstance(source, tuple):
                return source, ir.IntegerAttr(owner.attributes["mode"]).value
        todo += neighbours(v, shape)
    m = max((k for k, s in enumerate(shape) if s > 1), default=len(shape) - 1)
    vec = largest_pow2_dividing(shape[m], max(1, VECTOR_BYTES // elem_bytes(t.elem)))
    return Partition(shape, m, vec, threads)


def group_spread(op: ir.Operation, source: Part) -> Partition:
    """A tile.reduce_group's result spread: its source's, each run one element."""
    mode = ir.IntegerAttr(op.attributes["mode"]).value
    return grouped(op, source, mode, ir.IntegerAttr(op.attributes["group"]).value)


def anchor(v: ir.Value, shape: tuple[int, ...], threads: int) -> Part | None:
    """The spread of `v` if a plain load (from its tile's type), an MMA's fragment or a
    reduction in runs (from its source's) made it, else None."""
    owner = v.owner
    if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "tile.reduce_group":
        source = spread_of_value(owner.operands[0], threads)
        return None if isinstance(source, tuple) else group_spread(owner.operation, source)
    if isinstance(owner, ir.Operation | ir.OpView) and owner.name == "tile.fragment":
        if not owner.operands:
            return None
        block = tuple(ir.DenseI64ArrayAttr(owner.attributes["block_shape"]))
        return mma_partition(owner.operation, owner.operands[0].type, block)
    # A load of a tile, or a relayout through a buffer (operand 1): that tile's plain spread.
    source = {"tile.load": 0, "tile.relayout": 1}.get(getattr(owner, "name", ""))
    if source is None:
        return None
    if len(owner.operands) > source + 1:
        return None  # load(t, like = x), relayout(.., like = x): x's, found by `neighbours`
    src = tensor_type(owner.operands[source].type)
    if block_shape(src.layout) != shape:
        return None
    return spread_of_tile(owner.operation, owner.operands[source], threads)


def neighbours(v: ir.Value, shape: tuple[int, ...]) -> list[ir.Value]:
    """Values spread as `v` is: across elementwise ops (not broadcasts), load's like, loops."""
    out: list[ir.Value] = []
    owner = v.owner
    if isinstance(owner, ir.Operation | ir.OpView):
        op = owner.operation
        if op.name in SAME_SPREAD or (op.name == "tile.load" and len(op.operands) > 1):
            out += [x for x in op.operands if full(x, shape)]
        if op.name in SAME_SPREAD:  # reductions broadcast over the tile they reduce
            out += [x.owner.operands[0] for x in op.operands if reduces(x, shape)]
        if op.name == "tile.relayout" and len(op.operands) > 2:
            out += [op.operands[2]]
        if op.name == "scf.for":
            n = list(op.results).index(v)
            out += [op.operands[3 + n], yielded(op, n), op.regions[0].blocks[0].arguments[1 + n]]
    elif isinstance(owner, ir.Block):
        loop = owner.owner
        if loop.name == "scf.for" and v.arg_number > 0:
            n = v.arg_number - 1
            out += [loop.operands[3 + n], yielded(loop, n), loop.results[n]]
    for use in v.uses:
        user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if user.name in SAME_SPREAD or (user.name == "tile.load" and use.operand_number == 1):
            out += [r for r in user.results if full(r, shape)]
        elif user.name == "tile.relayout" and use.operand_number == 2:
            out += list(user.results)
        elif user.name == "scf.for" and use.operand_number >= 3:
            n = use.operand_number - 3
            out += [user.results[n], user.regions[0].blocks[0].arguments[1 + n]]
        elif user.name == "scf.yield" and user.parent.name == "scf.for":
            loop = user.parent
            n = use.operand_number
            out += [loop.results[n], loop.regions[0].blocks[0].arguments[1 + n]]
    return out


def yielded(loop: ir.Operation, n: int) -> ir.Value:
    return list(loop.regions[0].blocks[0].operations)[-1].operands[n]


def reduces(v: ir.Value, shape: tuple[int, ...]) -> bool:
    """Whether `v` is a reduction of a tile of `shape` (its source, spread as it is)."""
    owner = v.owner
    if not isinstance(owner, ir.Operation | ir.OpView) or owner.name != "tile.reduce":
        return False
    return full(owner.operands[0], shape)


def full(v: ir.Value, shape: tuple[int, ...]) -> bool:
    t = tensor_type(v.type)
    return t is not None and tuple(A.flatten(A.shape(t.layout))) == shape


# The pass -------------------------------------------------------------------------------------


def retype(value: ir.Value, spread: Spread, threads: int) -> str | None:
    """Give `value` its TV layout; a value typed already must have this one (else: why not)."""
    t = TypeText.of(value.type)
    tv = tv_text(spread, threads, single(value.type))
    if t.tv is None:
        value.set_type(TypeText(t.elem, "register", t.layout, tv).get())
    elif t.tv != tv:
        return f"its type says {t.tv}, but it is spread as {tv}"
    return None


def too_large(value: ir.Value, spread: Spread) -> str | None:
    """Why a blocked or MMA spread puts more values in each thread than its registers hold
    (targets.register_refusal); a reduction holds no more than its source, checked itself."""
    if not isinstance(spread, Partition | MmaPartition):
        return None
    t = tensor_type(value.type)
    threads = spread.threads if isinstance(spread, Partition) else 32 * math.prod(spread.warps)
    tile = f"{t.elem}[{shape_text(block_of(spread))}]"
    return targets.register_refusal(tile, elem_bytes(t.elem), spread.iters * spread.vec, threads)


def defining_op(value: ir.Value) -> ir.Operation:
    owner = value.owner
    return owner.operation if isinstance(owner, ir.Operation | ir.OpView) else owner.owner


@register
class TileDistribute(Pass):
    """Give every register tensor its thread–value layout: `!tile.frag<ELEM, LAYOUT, TV>`.

        %x = "tile.load"(%t) {other = 0.0 : f16} : (!tile.tensor<f16, "global", "(1,4096):(?,1)">)
               -> !tile.tensor<f16, "register", "(1,4096):(1,1)">
      → (128 threads)
        ... -> !tile.frag<f16, "(1,4096):(1,1)", "((128),(8,4)):((8),(1,1024))">

    Loads, MMA fragments and reductions fix a spread; elementwise ops, coord and loops pass it
    on; a fragment without an MMA takes the spread of what it meets. Operands spread
    differently are a located error.
    """

    name = "tile-distribute"

    def run(self, module: ir.Operation) -> None:
        self.each_kernel(module, self.distribute)

    def distribute(self, func: ir.Operation) -> None:
        if "tile.threads" not in func.attributes:
            raise LoweringError(func, "a tile kernel needs a tile.threads attribute")
        spreads = Spreads(func)
        ops: list[ir.Operation] = []
        walk(func, ops.append)
        for op in ops:
            spreads.visit(op)
        for value, spread in spreads.of.items():  # before any pass spells the values out
            if (why := too_large(value, spread)) is not None:
                raise LoweringError(defining_op(value), why)
        for value, spread in spreads.of.items():
            threads = spreads.threads_of.get(value) or tile_roles.spread_threads(
                defining_op(value), spreads.block_threads
            )
            if (why := retype(value, spread, threads)) is not None:
                raise LoweringError(defining_op(value), why)
        tile_epilogue.mark_deferred(func)

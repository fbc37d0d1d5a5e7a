"""Frontend (check stage): the compile-time values the checker gives every expression."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilec import smem
from tilec.diagnostics import Span
from tilec.frontend import ast
from tilec.frontend.types import SCALAR_TYPES


class V:
    """A checked value; `describe()` names its kind in diagnostics."""

    kind = "value"

    def describe(self) -> str:
        return self.kind


@dataclass
class ErrorV(V):
    """The value of an expression that already produced an error: it silences follow-on errors."""

    kind = "error"


@dataclass
class IntV(V):
    """An integer: static (`value`) or a runtime index; `text` is its formula for the manifest."""

    value: int | None
    text: str
    kind = "int"

    @property
    def static(self) -> bool:
        return self.value is not None


@dataclass
class FloatV(V):
    value: float | None  # None: a runtime scalar argument
    elem: str = "f32"
    kind = "float"


@dataclass
class UnderscoreV(V):
    kind = "'_'"


@dataclass
class RangeV(V):
    """`lo .. hi` as a slice coordinate: the mode keeps coordinates lo through hi."""

    lo: IntV
    hi: IntV
    kind = "range"


@dataclass
class TupleV(V):
    items: list[V]
    kind = "tuple"


@dataclass
class TypeV(V):
    name: str  # a key of SCALAR_TYPES
    kind = "type"


@dataclass
class SwizzleV(V):
    obj: Any  # tilec.layout.Swizzle
    kind = "swizzle"


@dataclass
class LayoutV(V):
    obj: Any  # tilec.layout.Layout or ComposedLayout; dynamic entries are `?`
    # partition_a/b/c: the block tile whose per-thread part this layout is, and the MMA
    block_shape: tuple[int, ...] | None = None
    mma: Any = None
    kind = "layout"


@dataclass
class Alloc:
    """A shared-memory buffer; copies into it inside `pipeline` loops multiply it by the stages."""

    name: str
    span: Span
    elem: str
    elems: int  # from its lowest offset to its highest (smem.extent)
    stride: int  # elements from one stage to the next when pipelined (smem.stage_stride)
    stages: int = 1
    stages_param: str | None = None  # the compile-time parameter the stage count came from
    pipelined: bool = False  # a copy fills it inside a `pipeline` loop
    # `shared<T>(layout, reuse = other)`: never live while `other` is, so it takes other's memory
    # when it fits there (all of other's stages count), and memory of its own otherwise.
    reuse: Alloc | None = None

    def nbytes_at(self, stages: int) -> int:
        """Bytes of `stages` stages of it (the planner's rule)."""
        return smem.staged_elems(self.elems, self.stride, stages) * SCALAR_TYPES[self.elem][1]

    @property
    def nbytes(self) -> int:
        """Bytes of all its stages."""
        return self.nbytes_at(self.stages)

    def buffer(self) -> smem.Buffer:
        return smem.Buffer(self.name, self.nbytes, self.reuse.name if self.reuse else None)

    @property
    def aliased(self) -> bool:
        """Whether it lives in the memory of the buffer it reuses."""
        return self.reuse is not None and smem.aliased(self.buffer(), self.reuse.buffer())


@dataclass
class TensorV(V):
    """A view: element type, memory space and layout (`?` entries are runtime values)."""

    elem: str
    space: str  # global | shared | register
    layout: Any  # tilec.layout.Layout or ComposedLayout
    alloc: Alloc | None = None
    # A fragment partitioned by an MMA holds one thread's part of a block tile of this shape;
    # block-level operations (store, elementwise math) see that block tile.
    block_shape: tuple[int, ...] | None = None
    mma: Any = None
    # `fragment<T>(shape)` without an MMA: no spread of its own; the compiler spreads it as what
    # it meets (tile-distribute), an MMA fragment's reduction included.
    fresh: bool = False
    # A reduction's result: the shape of the tile it reduced, over which it broadcasts (also
    # beside a reduction of that tile along another mode: tilec.frontend.expr.mutual_broadcast).
    reduced_from: tuple[object, ...] | None = None
    kind = "tensor"

    @property
    def mma_rows(self) -> bool:
        """A reduction of an MMA fragment (its rows or columns): spread as the fragment's."""
        from tilec import layout

        return self.mma is not None and layout.shape(self.layout) == self.block_shape

    def meets(self, frag: TensorV) -> bool:
        """Whether this tensor may meet the MMA-derived `frag` in elementwise math: of the same
        MMA, or a fresh fragment of a reduction's shape (spread as that reduction)."""
        if self.mma is not None and self.mma != frag.mma and self.mma_rows:
            return self.same_rows(frag)
        if self.mma is not None or not self.fresh:
            return self.mma == frag.mma
        sizes = self.logical_shape if isinstance(self.logical_shape, tuple) else ()
        return frag.block_shape is not None and 1 in sizes and len(sizes) == len(frag.block_shape)

    def same_rows(self, frag: TensorV) -> bool:
        """Whether this row reduction (BM, 1) of one MMA's fragment lies over the threads as
        the rows of `frag`, another MMA's: the same atom and tiling on as many rows, the MMAs
        differing only in wgmma's N (attention's S = Q Kᵀ, BM x BN, and O, BM x D), which
        does not move a row."""
        a, b = self.mma, frag.mma
        if not isinstance(a, MmaV) or not isinstance(b, MmaV):
            return False
        if (a.atom, a.tiling) != (b.atom, b.tiling):
            return False
        rows = self.block_shape
        return (
            rows is not None
            and frag.block_shape is not None
            and len(rows) == 2 == len(frag.block_shape)
            and rows[1] == 1
            and rows[0] == frag.block_shape[0]
        )

    @property
    def logical_shape(self) -> object:
        if self.block_shape is not None:
            return self.block_shape
        from tilec import layout

        return layout.shape(self.layout)

    def describe(self) -> str:
        return f"{self.space} tensor {self.elem}[{self.layout}]"


@dataclass
class AtomV(V):
    name: str
    kind = "atom"


@dataclass
class MmaV(V):
    """A tiled MMA: an atom repeated over warps (`atoms`) or warp groups (`warpgroups`)."""

    atom: str
    tiling: tuple[int, int, int]
    n: int | None = None  # wgmma's N
    kind = "tiled mma"


@dataclass
class IterV(V):
    """What a `for` loop runs over: range(...), pipeline(...), or persistent tiles."""

    how: str  # range | pipeline | persistent
    args: list[IntV]
    stages: int = 1
    stages_param: str | None = None
    prefetch: int | None = None  # pipeline(..., prefetch = 0 | 1); None: tile-pipeline's option
    raster: str = "linear"
    group: int = 1
    # persistent(..., split_tail = 1): the tiles of a last, partial wave split along K
    split_tail: bool = False
    kind = "iteration space"


@dataclass
class TileCoordV(V):
    """The loop variable of `for t in tiles`: `t.m`, `t.n` are tile coordinates."""

    kind = "tile coordinate"


@dataclass
class BuiltinNamespaceV(V):
    """`block`, `thread` and `grid`: `.x`, `.y`, `.z` are runtime indices (`grid.x`: the number
    of blocks along x); `cluster.rank` is one."""

    name: str
    kind = "builtin"


@dataclass
class UnitV(V):
    """The result of a statement-like call (copy, store, gemm, barrier)."""

    kind = "nothing"


@dataclass
class Binding:
    value: V
    span: Span
    node: ast.Node | None = None
    mutable: bool = False  # declared with `var`


@dataclass
class Scope:
    names: dict[str, Binding] = field(default_factory=dict)
    parent: Scope | None = None

    def lookup(self, name: str) -> Binding | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None


@dataclass
class RasterV(V):
    """`grouped(8)`: the order `persistent` walks its tiles in."""

    group: int
    kind = "raster order"

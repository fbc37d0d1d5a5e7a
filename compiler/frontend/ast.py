"""Frontend (ast stage): the syntax tree of a .tile module; every node carries its Span."""

from __future__ import annotations

from dataclasses import dataclass, field

from tilec.diagnostics import Span


@dataclass
class Node:
    span: Span


# Expressions ---------------------------------------------------------------------------------


@dataclass
class Name(Node):
    id: str


@dataclass
class IntLit(Node):
    value: int


@dataclass
class FloatLit(Node):
    value: float


@dataclass
class Underscore(Node):
    """`_`: the whole mode, in slices and tile coordinates."""


@dataclass
class Tuple(Node):
    items: list[Node]


@dataclass
class LayoutLit(Node):
    """`shape:stride`, CuTe's notation."""

    shape: Node
    stride: Node


@dataclass
class AtomName(Node):
    """A dotted atom name in template arguments: `sm80.mma_16x8x16.f32.f16.f16.f32`."""

    text: str


@dataclass
class Keyword(Node):
    name: str
    value: Node


@dataclass
class Call(Node):
    func: str
    func_span: Span
    targs: list[Node] = field(default_factory=list)
    args: list[Node] = field(default_factory=list)
    kwargs: list[Keyword] = field(default_factory=list)

    def kwarg(self, name: str) -> Node | None:
        return next((k.value for k in self.kwargs if k.name == name), None)


@dataclass
class Attr(Node):
    value: Node
    attr: str


@dataclass
class Index(Node):
    value: Node
    indices: list[Node]


@dataclass
class Unary(Node):
    op: str
    operand: Node


@dataclass
class Binary(Node):
    op: str  # + - * / %, `o` (composition), comparisons < <= > >= == !=
    lhs: Node
    rhs: Node
    op_span: Span | None = None  # the operator's token (where a zero divisor is reported)


@dataclass
class RangeLit(Node):
    """`lo..hi`, inclusive, as in `warpgroups = 1..2`."""

    lo: Node
    hi: Node


@dataclass
class Cast(Node):
    value: Node
    type: Name


# Statements ----------------------------------------------------------------------------------


@dataclass
class Let(Node):
    name: str
    name_span: Span
    value: Node
    init: Node | None = None  # `let acc = fragment<f32>(...) = 0`
    mutable: bool = False  # `var`: later statements may assign it


@dataclass
class Assign(Node):
    """`name = value` for a `var`; inside a loop it makes `name` a loop-carried value."""

    name: str
    name_span: Span
    value: Node


@dataclass
class ExprStmt(Node):
    expr: Node


@dataclass
class For(Node):
    var: str
    var_span: Span
    iter: Node
    body: list[Node]


@dataclass
class Role(Node):
    kind: str  # producer | consumer
    kwargs: list[Keyword]
    body: list[Node]


@dataclass
class WarpSpecialize(Node):
    roles: list[Role]


# Declarations --------------------------------------------------------------------------------


@dataclass
class CParam(Node):
    """A compile-time parameter: `BM: int = 128`, `T: type = f16`."""

    name: str
    kind: str | None  # int | type | None (inferred from the default)
    default: Node | None


@dataclass
class Arg(Node):
    """A kernel argument: a global tensor `T[M, K]` / `T[(M, K):(lda, 1)]`, or a scalar."""

    name: str
    elem: Name
    dims: list[Node] | None = None  # row-major shape
    layout: LayoutLit | None = None  # explicit shape:stride

    @property
    def is_tensor(self) -> bool:
        return self.dims is not None or self.layout is not None


@dataclass
class Clause(Node):
    name: str  # grid | threads | target | contract | specialize | variant
    args: list[Node]  # variant: the condition, then Keywords


@dataclass
class Term(Node):
    """One promise of a contract: `registers <= 128`, `count("ldmatrix") >= 4`, `has("x")`."""

    fact: str
    pattern: str | None  # the instruction that count(...) and has(...) name
    op: str  # == <= >= < >
    bound: Node


@dataclass
class Contract(Clause):
    terms: list[Term] = field(default_factory=list)


@dataclass
class Kernel(Node):
    name: str
    cparams: list[CParam]
    args: list[Arg]
    clauses: list[Clause]
    body: list[Node]

    def clause(self, name: str) -> Clause | None:
        return next((c for c in self.clauses if c.name == name), None)


@dataclass
class Module(Node):
    kernels: list[Kernel]

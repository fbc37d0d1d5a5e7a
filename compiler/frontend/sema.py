"""Frontend (check stage): names, kinds, static shapes, parameters, atoms and shared memory."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tilec import smem
from tilec.diagnostics import Diagnostic, DiagnosticEngine, Span, note
from tilec.frontend import ast
from tilec.frontend.clauses import Clauses, Variant
from tilec.frontend.contract import Promise, check_contract
from tilec.frontend.expr import ExprChecker
from tilec.frontend.lexer import MAX_INT
from tilec.frontend.shapes import negative_stride
from tilec.frontend.tune import Tune, TuneChecker
from tilec.frontend.types import SCALAR_TYPES, SIGNED_INTEGERS
from tilec.frontend.values import (
    Alloc,
    ErrorV,
    FloatV,
    IntV,
    Scope,
    TensorV,
    TypeV,
    V,
)
from tilec.targets import smem_optin


@dataclass
class SizeSymbol:
    """A runtime size or stride named in an argument's type, bound at launch from a tensor."""

    name: str
    span: Span
    bindings: list[str] = field(default_factory=list)  # "A.shape[0]", "A.stride[0]", ...


@dataclass
class CheckedKernel:
    node: ast.Kernel
    params: dict[str, int | str]  # compile-time parameters after -D overrides
    target: str
    threads: tuple[int, ...]
    grid: list[IntV]
    sizes: dict[str, SizeSymbol]
    tensors: dict[str, TensorV]  # global tensor arguments
    # per tensor argument: the factors of each `?` entry of its layout, shape then stride
    dynamic_entries: dict[str, list[list[str | int]]]
    allocs: list[Alloc]
    smem_bytes: int
    contract: list[Promise] = field(default_factory=list)  # the contract(...) clause's terms
    # specialize(N <= 4096, ...): size -> the largest value the specialised build is for
    specialize: dict[str, int] = field(default_factory=dict)
    cluster: int = 1  # cluster(S): blocks per thread-block cluster, along x
    # variant(K % 16 == 8, CM = 2) clauses, in order: their conditions and parameters
    variants: tuple[Variant, ...] = ()
    # assume(skn % 8 == 0, ...): runtime size -> a number the build takes it to be a multiple of
    assume: dict[str, int] = field(default_factory=dict)
    tune: Tune | None = None  # tune(BM = (64, 128), ...): the space `tilec tune` searches
    blocks_per_sm: int = 0  # blocks_per_sm(B): the register bound ptxas keeps (0: none)


@dataclass
class Checked:
    """The checked program: the AST plus the value of every expression (by node id)."""

    module: ast.Module
    file: str
    kernels: list[CheckedKernel]
    values: dict[int, V]
    warnings: list[Diagnostic]  # what checking found that does not stop compilation
    # Per `for` loop (by node id): the vars it carries (updates, declared outside it), in order.
    carried: dict[int, list[str]] = field(default_factory=dict)


def check(module: ast.Module, params: dict[str, str] | None = None) -> Checked:
    """Check `module` with `-D` overrides `params`; raises DiagnosticError on any error."""
    diags = DiagnosticEngine()
    checker = ExprChecker(diags, module.span.file)
    if not module.kernels:
        diags.error(
            "no kernel in this file: it needs at least one 'kernel NAME(...) {...}'",
            Span(module.span.file, 1, 1),
        )
    _check_overrides(diags, module, params or {})
    kernels, seen = [], {}
    for kernel in module.kernels:
        if kernel.name in seen:
            diags.error(
                f"kernel '{kernel.name}' is already defined",
                kernel.span,
                [note("the first one is here", seen[kernel.name])],
            )
        seen.setdefault(kernel.name, kernel.span)
        checked = KernelChecker(checker, kernel, params or {}).run()
        if checked is not None:
            kernels.append(checked)
    diags.raise_if_errors()
    return Checked(
        module, module.span.file, kernels, checker.values, diags.diagnostics, checker.carried
    )


def _check_overrides(diags: DiagnosticEngine, module: ast.Module, params: dict[str, str]) -> None:
    known = {p.name for k in module.kernels for p in k.cparams}
    for name in params:
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            diags.error(
                f"-D {name}: no compile-time parameter named '{name}' (parameters: {listed})", None
            )


class KernelChecker(Clauses):
    def __init__(self, checker: ExprChecker, node: ast.Kernel, overrides: dict[str, str]) -> None:
        self.c, self.node, self.overrides = checker, node, overrides
        self.diags = checker.diags
        self.scope = Scope()
        self.params: dict[str, int | str] = {}
        self.sizes: dict[str, SizeSymbol] = {}
        self.tensors: dict[str, TensorV] = {}
        self.dynamic: dict[str, list[list[str | int]]] = {}

    def run(self) -> CheckedKernel | None:
        errors = self.diags.error_count
        self.c.begin_kernel()
        for p in self.node.cparams:
            self.cparam(p)
        self.c.type_params = {k: v for k, v in self.params.items() if isinstance(v, str)}
        for a in self.node.args:
            self.arg(a)
        target, threads, grid = self.clauses()
        contract = check_contract(self, self.node.clause("contract"))
        specialize = self.specialize(self.node.clause("specialize"))
        variants = self.variants([c for c in self.node.clauses if c.name == "variant"])
        assume = self.assumptions([c for c in self.node.clauses if c.name == "assume"])
        tune = TuneChecker(self).check(self.node.clause("tune"))
        cluster = self.cluster(self.node.clause("cluster"))
        blocks_per_sm = self.blocks_per_sm(self.node.clause("blocks_per_sm"), threads or ())
        self.c.target, self.c.threads, self.c.cluster = target, threads, cluster
        self.c.header = False
        self.c.block(self.node.body, self.scope)
        allocs = [a for a in self.c.allocs if not a.aliased]
        total = smem.kernel_bytes([a.buffer() for a in self.c.allocs])
        if target is not None:
            self.smem_budget(allocs, total, target)
        self.check_reuse()
        if self.diags.error_count > errors or target is None:
            return None
        return CheckedKernel(
            self.node,
            self.params,
            target,
            threads,
            grid,
            self.sizes,
            self.tensors,
            self.dynamic,
            allocs,
            total,
            contract,
            specialize,
            cluster,
            variants,
            assume,
            tune,
            blocks_per_sm,
        )

    def define(self, name: str, value: V, span: Span, node: ast.Node) -> None:
        self.c.define(self.scope, name, value, span, node)

    # Compile-time parameters ------------------------------------------------------------------

    def cparam(self, p: ast.CParam) -> None:
        kind = p.kind or ("int" if p.default is not None else None)
        if p.kind is None and isinstance(self.earlier_type(p), TypeV):  # `O = T`
            kind = "type"
        text = self.overrides.get(p.name)
        if text is not None:
            value = self.override(p, kind, text)
        elif p.default is None:
            self.diags.error(f"parameter '{p.name}' has no default: pass -D {p.name}=VALUE", p.span)
            value = ErrorV()
        else:
            value = self.default(p, kind)
        if isinstance(value, IntV):
            self.params[p.name] = value.value
        elif isinstance(value, TypeV):
            self.params[p.name] = value.name
        self.define(p.name, value, p.span, p)

    def override(self, p: ast.CParam, kind: str | None, text: str) -> V:
        text = text.strip()
        if kind == "type":
            if text in SCALAR_TYPES:
                return TypeV(text)
            self.diags.error(
                f"-D {p.name}={text}: '{p.name}' is a type parameter and '{text}' "
                f"is not a type ({', '.join(SCALAR_TYPES)})",
                p.span,
            )
            return ErrorV()
        try:
            value = int(text, 0)
            if abs(value) > MAX_INT:
                raise ValueError(text)
        except ValueError:
            self.diags.error(
                f"-D {p.name}={text}: '{p.name}' is an int parameter and '{text}' "
                "is not a 64-bit integer",
                p.span,
            )
            return ErrorV()
        return IntV(value, str(value))

    def earlier_type(self, p: ast.CParam) -> V | None:
        """The value of the type parameter `p`'s default names (O = T), if it names one (an
        ErrorV where T's own default was wrong: reported there)."""
        if not isinstance(p.default, ast.Name):
            return None
        b = self.scope.lookup(p.default.id)
        return b.value if b is not None and isinstance(b.value, (TypeV, ErrorV)) else None

    def default(self, p: ast.CParam, kind: str | None) -> V:
        if kind == "type":
            if isinstance(p.default, ast.Name) and p.default.id in SCALAR_TYPES:
                return TypeV(p.default.id)
            earlier = self.earlier_type(p)  # O: type = T
            if earlier is not None:
                return earlier
            self.diags.error(
                f"default of type parameter '{p.name}' must be a type or an earlier type parameter",
                p.default.span,
            )
            return ErrorV()
        value = self.c.expr(p.default, self.scope)
        if isinstance(value, IntV) and value.static:
            return IntV(value.value, str(value.value))
        if not isinstance(value, ErrorV):
            self.diags.error(
                f"default of int parameter '{p.name}' must be a static integer, "
                f"found {value.describe()}",
                p.default.span,
            )
        return ErrorV()

    # Arguments ----------------------------------------------------------------------------------

    def arg(self, a: ast.Arg) -> None:
        elem = self.elem_type(a.elem)
        if not a.is_tensor and elem in SIGNED_INTEGERS:
            # a runtime integer, in the body and in grid(...): `n: i32`, `max_q: i32`
            self.define(a.name, IntV(None, a.name), a.span, a)
            return
        if not a.is_tensor:
            self.define(a.name, FloatV(None, elem or "f32"), a.span, a)
            return
        if a.layout is not None:
            shape = self.entries(a.layout.shape, a.name, "shape", [])
            stride = self.entries(a.layout.stride, a.name, "stride", [])
        else:
            shape = tuple(self.entries(d, a.name, "shape", [i]) for i, d in enumerate(a.dims))
            stride = row_major(shape)
        layout = self.c.make_layout(shape, stride, a.span)
        d = None if layout is None else negative_stride(layout)
        if d is not None:
            self.diags.error(
                f"a tensor argument's layout cannot have a negative stride: {layout} has "
                f"stride {d}, and kernels address a tensor upwards from its base pointer",
                a.layout.stride.span,
            )
        if layout is None or elem is None or d is not None:
            self.define(a.name, ErrorV(), a.span, a)
            return
        tensor = TensorV(elem, "global", layout)
        self.tensors[a.name] = tensor
        self.dynamic[a.name] = [e for e in flat(shape) + flat(stride) if isinstance(e, list)]
        self.define(a.name, tensor, a.span, a)

    def elem_type(self, name: ast.Name) -> str | None:
        if name.id in SCALAR_TYPES:
            return name.id
        b = self.scope.lookup(name.id)
        if b is not None and isinstance(b.value, TypeV):
            return b.value.name
        if b is None or not isinstance(b.value, ErrorV):
            self.diags.error(f"unknown element type '{name.id}'", name.span)
        return None

    def entries(self, node: ast.Node, arg: str, what: str, path: list[int]):  # noqa: ANN201
        """A shape or stride of an argument: ints, and names of runtime sizes (as [name])."""
        if isinstance(node, ast.Tuple):
            return tuple(self.entries(x, arg, what, [*path, i]) for i, x in enumerate(node.items))
        if isinstance(node, ast.IntLit):
            return node.value
        if isinstance(node, ast.Unary) and node.op == "-" and isinstance(node.operand, ast.IntLit):
            return -node.operand.value  # refused as a stride by arg(), by name
        if isinstance(node, ast.Name):
            b = self.scope.lookup(node.id)
            if b is not None and isinstance(b.value, IntV) and b.value.static:
                return b.value.value
            if b is not None and node.id not in self.sizes:
                self.diags.error(f"'{node.id}' is a {b.value.describe()}, not a size", node.span)
                return 1
            sym = self.sizes.setdefault(node.id, SizeSymbol(node.id, node.span))
            sym.bindings.append(f"{arg}.{what}[{','.join(map(str, path or [0]))}]")
            if len(sym.bindings) == 1:
                self.define(node.id, IntV(None, node.id), node.span, node)
            return [node.id]
        if isinstance(node, ast.Call) and node.func == "choose" and node.args and not node.kwargs:
            # choose(P, e0, e1, ...) with an int parameter P: the layout a parameter picks.
            b = self.scope.lookup(getattr(node.args[0], "id", ""))
            i = b.value.value if b is not None and isinstance(b.value, IntV) else None
            if isinstance(i, int) and b.value.static and 0 <= i < len(node.args) - 1:
                return self.entries(node.args[1 + i], arg, what, path)
            self.diags.error(
                f"choose in an argument's {what} takes an int parameter and a choice for each "
                "of its values",
                node.span,
            )
            return 1
        self.diags.error(
            f"a {what} entry of an argument must be an integer, a size name or choose(PARAM, ...)",
            node.span,
        )
        return 1

    # Shared memory ------------------------------------------------------------------------------

    def ring_epilogue(self) -> int:
        """The SM90 epilogue's chunks, as tile-ring plans them by default: taken when
        the kernel's one store writes 16-bit elements of a kernel tensor."""
        stores = self.c.stores
        if len(stores) != 1 or stores[0].space != "global":
            return 0
        if SCALAR_TYPES[stores[0].elem][1] != 2 or self.c.consumer_groups is None:
            return 0
        return smem.epilogue_bytes(self.c.consumer_groups)

    def check_reuse(self) -> None:
        """A buffer that reuses another's memory cannot be pipelined itself."""
        for a in self.c.allocs:
            if a.reuse is not None and a.stages > 1:
                self.diags.error(
                    f"{a.name} reuses {a.reuse.name}'s memory, so it cannot be a pipelined buffer",
                    a.span,
                )

    def smem_budget(self, allocs: list[Alloc], total: int, target: str) -> None:
        """The kernel's shared memory (`total`, smem.kernel_bytes of its buffers; for a
        warp-specialised kernel, its SM90 ring: smem.ring_total) within the target's opt-in
        limit, else an error noting the largest stage count that fits."""
        limit = smem_optin(target)
        staged = [a for a in allocs if a.stages > 1]
        stages = max((a.stages for a in staged), default=1)
        ring = self.c.consumer_groups is not None
        if ring:  # every buffer a TMA destination: one 1024-aligned slot a stage
            epilogue = self.ring_epilogue()
            size = {a.name: a.elems * SCALAR_TYPES[a.elem][1] for a in allocs}
            slots = [size[a.name] for a in allocs if a.pipelined]
            # filled outside the pipelines: the once ring (lowering/sm90_plan)
            once = (2 if self.c.consumer_pingpong else 1,
                    [size[a.name] for a in allocs if not a.pipelined])  # fmt: skip

            def bytes_at(s: int) -> int:
                return smem.ring_total(slots, s, epilogue, once)

        else:

            def bytes_at(s: int) -> int:
                return sum(a.nbytes_at(s if a.stages > 1 else 1) for a in allocs)

        if ring:
            total = bytes_at(stages)
        if total <= limit:
            return
        parts = " + ".join(
            f"{a.name} {a.stages} stages × {a.stride * SCALAR_TYPES[a.elem][1]}"
            if a.stages > 1
            else f"{a.name} {a.nbytes}"
            for a in allocs
        )
        if ring:
            parts += f" in 1024-byte slots, + {epilogue} for the epilogue + barriers and alignment"
        notes = []
        for s in range(stages - 1, 0, -1):
            fits = bytes_at(s)
            if fits <= limit:
                param = next((a.stages_param for a in staged if a.stages_param), None)
                what = f"{param} = {s}" if param else f"stages = {s}"
                notes.append(note(f"{what} fits ({fits} bytes)"))
                break
        self.diags.error(
            f"shared memory needs {total} bytes ({parts}), the target {target} allows {limit}",
            self.node.span,
            notes,
        )


def row_major(shape: tuple) -> tuple:
    """Strides of a row-major tensor: the last mode is contiguous; a runtime factor stays a list
    of the names (and ints) whose product it is."""
    strides: list = []
    acc: list[str | int] = []
    for s in reversed(shape):
        strides.append([*acc] if any(isinstance(x, str) for x in acc) else math.prod(acc))
        acc = [*acc, *(s if isinstance(s, list) else [s])]
    return tuple(reversed(strides))


def flat(t: object) -> list:
    if isinstance(t, tuple):
        return [leaf for x in t for leaf in flat(x)]
    return [t]

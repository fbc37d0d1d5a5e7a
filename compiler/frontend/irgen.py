"""Frontend (tile stage): the checked AST to a `tile`-dialect module, one func.func per kernel."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, scf

from tilec.diagnostics import Span
from tilec.frontend import ast
from tilec.frontend.irgen_expr import ExprGen, constant_attr, elem, i64, tensor_type
from tilec.frontend.sema import Checked, CheckedKernel
from tilec.frontend.shapes import static_ints
from tilec.frontend.types import SIGNED_INTEGERS
from tilec.frontend.values import FloatV, IntV, IterV, LayoutV, TensorV, TupleV
from tilec.lowering import ASSUME


def irgen(checked: Checked, ctx: ir.Context) -> ir.Module:
    """The `tile`-dialect module of a checked program; every op is located in the .tile file."""
    with ctx, ir.Location.file(checked.file, 1, 1):
        module = ir.Module.create()
        for kernel in checked.kernels:
            KernelGen(checked, kernel, module).run()
    return module


class KernelGen(ExprGen):
    def __init__(self, checked: Checked, kernel: CheckedKernel, module: ir.Module) -> None:
        self.checked, self.k, self.module = checked, kernel, module
        self.values = checked.values
        self.env: list[dict[str, object]] = [{}]

    # Locations and op creation ----------------------------------------------------------------

    def loc(self, span: Span) -> ir.Location:
        return ir.Location.file(span.file, span.line, span.col)

    def op(
        self,
        name: str,
        span: Span,
        operands: list[ir.Value],
        results: list[ir.Type],
        attributes: dict[str, ir.Attribute] | None = None,
    ) -> ir.Operation:
        return ir.Operation.create(
            name,
            results=results,
            operands=operands,
            attributes=attributes or {},
            loc=self.loc(span),
        )

    def const(self, value: int, span: Span) -> ir.Value:
        return arith.ConstantOp(ir.IndexType.get(), value, loc=self.loc(span)).result

    def bind(self, name: str, value: object) -> None:
        self.env[-1][name] = value

    def bound(self, name: str) -> bool:
        return any(name in scope for scope in self.env)

    def lookup(self, name: str) -> object:
        for scope in reversed(self.env):
            if name in scope:
                return scope[name]
        raise KeyError(name)  # the checker resolved every name; reaching here is a bug

    # Kernel -------------------------------------------------------------------------------------

    def run(self) -> None:
        node, k = self.k.node, self.k
        inputs, names = [], []
        for a in node.args:
            names.append(a.name)
            inputs.append(
                ir.Type.parse("!llvm.ptr") if a.is_tensor else elem(self.values_of_arg(a))
            )
        for size in k.sizes:
            names.append(size)
            inputs.append(ir.IndexType.get())
        with ir.InsertionPoint(self.module.body):
            fn = func.FuncOp(node.name, (inputs, []), loc=self.loc(node.span))
        for key, attr in self.kernel_attributes(names).items():
            fn.attributes[key] = attr
        block = fn.add_entry_block()
        with ir.InsertionPoint(block):
            for name, arg in zip(names, block.arguments, strict=True):
                self.bind(name, arg)
            for a in node.args:
                if not a.is_tensor and self.values_of_arg(a) in SIGNED_INTEGERS:
                    # an integer scalar is a runtime integer (index) of the body
                    loc = self.loc(a.span)
                    cast = arith.IndexCastOp(ir.IndexType.get(), self.lookup(a.name), loc=loc)
                    self.bind(a.name, cast.result)
            for a in node.args:
                if a.is_tensor:
                    self.make_tensor(a)
            self.block(node.body)
            func.ReturnOp([], loc=self.loc(node.span))

    def values_of_arg(self, a: ast.Arg) -> str:
        param = self.k.params.get(a.elem.id)
        return param if isinstance(param, str) else a.elem.id

    def kernel_attributes(self, names: list[str]) -> dict[str, ir.Attribute]:
        k = self.k
        params = {}
        for name, value in k.params.items():
            params[name] = ir.TypeAttr.get(elem(value)) if isinstance(value, str) else i64(value)
        bindings = {
            s.name: ir.ArrayAttr.get([ir.StringAttr.get(b) for b in s.bindings])
            for s in k.sizes.values()
        }
        threads = [*k.threads, 1, 1][:3]
        attrs = {
            "tile.kernel": ir.UnitAttr.get(),
            "tile.target": ir.StringAttr.get(k.target),
            "tile.grid": ir.ArrayAttr.get([ir.StringAttr.get(g.text) for g in k.grid]),
            "tile.threads": ir.DenseI64ArrayAttr.get(threads),
            "tile.params": ir.DictAttr.get(params),
            "tile.arg_names": ir.ArrayAttr.get([ir.StringAttr.get(n) for n in names]),
            "tile.bindings": ir.DictAttr.get(bindings),
            "tile.smem_bytes": i64(k.smem_bytes),
        }
        if k.cluster > 1:  # cluster(S): the backend's .reqnctapercluster, the runtime's check
            attrs["tile.cluster"] = i64(k.cluster)
        if k.blocks_per_sm:  # blocks_per_sm(B): the backend's .minnctapersm
            attrs["tile.blocks_per_sm"] = i64(k.blocks_per_sm)
        if k.specialize:  # specialize(N <= 4096): {N = 4096}, for tile-specialize
            attrs["tile.specialize"] = ir.DictAttr.get({n: i64(v) for n, v in k.specialize.items()})
        if k.assume:  # assume(skn % 8 == 0): {skn = 8}, for the lowering and the manifest
            attrs[ASSUME] = ir.DictAttr.get({n: i64(v) for n, v in k.assume.items()})
        if k.variants:  # variant(K % 16 == 8, CM = 2) clauses, in order: for the build
            attrs["tile.variants"] = ir.ArrayAttr.get(
                [
                    ir.DictAttr.get(
                        {
                            "when": ir.ArrayAttr.get([ir.StringAttr.get(w) for w in v.when]),
                            "params": ir.DictAttr.get(
                                {n: ir.StringAttr.get(x) for n, x in v.params.items()}
                            ),
                        }
                    )
                    for v in k.variants
                ]
            )
        return attrs

    def make_tensor(self, a: ast.Arg) -> None:
        t = self.k.tensors[a.name]
        dynamic = [self.product(f, a.span) for f in self.k.dynamic_entries[a.name]]
        op = self.op(
            "tile.make_tensor",
            a.span,
            [self.lookup(a.name), *dynamic],
            [tensor_type(t)],
            {"name": ir.StringAttr.get(a.name)},
        )
        self.bind(a.name, op.result)

    def product(self, factors: list[str | int], span: Span) -> ir.Value:
        """The index value of a product of runtime sizes and integers (a row-major stride)."""
        values = [self.lookup(f) if isinstance(f, str) else self.const(f, span) for f in factors]
        result = values[0]
        for v in values[1:]:
            result = arith.MulIOp(result, v, loc=self.loc(span)).result
        return result

    # Statements ---------------------------------------------------------------------------------

    def block(self, stmts: list[ast.Node]) -> None:
        self.env.append({})
        for stmt in stmts:
            self.stmt(stmt)
        self.env.pop()

    def stmt(self, stmt: ast.Node) -> None:
        if isinstance(stmt, ast.Let):
            it = self.values[id(stmt.value)]
            if isinstance(stmt.value, ast.Name):  # an alias: the same IR value, if it has one
                self.bind(stmt.name, self.expr(stmt.value))
                return
            if isinstance(it, IterV) and it.how == "persistent":
                self.bind(stmt.name, self.tile_counts(stmt.value))
                return
            if isinstance(it, TupleV):
                self.bind(stmt.name, self.tuple_values(stmt.value))
                return
            if isinstance(it, LayoutV):  # later uses of the name reuse its layout ops
                self.bind(stmt.name, self.layout_value(stmt.value))
                return
            value = self.var_init(stmt) if stmt.mutable else self.expr(stmt.value)
            if stmt.init is not None:
                init = self.values[id(stmt.init)]
                t = self.values[id(stmt.value)]
                self.op(
                    "tile.fill",
                    stmt.init.span,
                    [value],
                    [],
                    {"value": constant_attr(init, t.elem)},
                )
            self.bind(stmt.name, value)
        elif isinstance(stmt, ast.ExprStmt):
            self.expr(stmt.expr)
        elif isinstance(stmt, ast.Assign):
            self.owner(stmt.name)[stmt.name] = self.var_update(stmt)
        elif isinstance(stmt, ast.For):
            self.for_stmt(stmt)
        elif isinstance(stmt, ast.WarpSpecialize):
            self.warp_specialize(stmt)

    def var_init(self, stmt: ast.Let) -> ir.Value:
        """A var's first value; a number becomes a runtime scalar (index or float)."""
        v = self.values[id(stmt.value)]
        if isinstance(v, IntV):
            return self.int_value(v, stmt.value.span, stmt.value)
        if isinstance(v, FloatV):
            return self.scalar(stmt.value, v.elem)
        return self.expr(stmt.value)

    def var_update(self, stmt: ast.Assign) -> ir.Value:
        """The value assigned to a var, of the var's own type (the checker matched its kind)."""
        var = self.values[id(stmt)]
        if isinstance(var, FloatV):
            return self.scalar(stmt.value, var.elem)
        value = self.expr(stmt.value)
        old = self.lookup(stmt.name)
        if isinstance(var, TensorV) and value.type != old.type:
            # Register tensors of one shape differ only in their nominal layout: the same data.
            return self.op("tile.convert", stmt.value.span, [value], [old.type]).result
        return value

    def owner(self, name: str) -> dict[str, object]:
        """The innermost scope that binds `name` (the checker resolved it the same way)."""
        for scope in reversed(self.env):
            if name in scope:
                return scope
        raise KeyError(name)

    def for_stmt(self, stmt: ast.For) -> None:
        it: IterV = self.values[id(stmt.iter)]
        if it.how == "persistent":
            self.persistent(stmt, it)
            return
        start, stop = it.args[0], it.args[1]
        if start.static and stop.static and stop.value <= start.value:
            return  # never runs (a parameter turned it off): its vars keep their values
        call = stmt.iter if isinstance(stmt.iter, ast.Call) else None
        bounds = call.args if call is not None and it.how == "range" else []
        lo, hi, step = self.loop_bounds(it, bounds, call, stmt.span)
        carried = self.checked.carried.get(id(stmt), [])
        owners = [self.owner(n) for n in carried]
        inits = [self.lookup(n) for n in carried]
        loop = scf.ForOp(lo, hi, step, inits, loc=self.loc(stmt.span))
        if it.how == "pipeline":
            loop.attributes["tile.stages"] = i64(it.stages)
            if it.prefetch is not None:
                loop.attributes["tile.prefetch_fragments"] = i64(it.prefetch)
        with ir.InsertionPoint(loop.body):
            for name, scope, arg in zip(carried, owners, loop.inner_iter_args, strict=True):
                scope[name] = arg
            self.env.append({stmt.var: loop.induction_variable})
            self.block(stmt.body)
            self.env.pop()
            scf.YieldOp([self.lookup(n) for n in carried], loc=self.loc(stmt.span))
        for name, scope, result in zip(carried, owners, loop.results, strict=True):
            scope[name] = result

    def loop_bounds(
        self, it: IterV, bounds: list[ast.Node], call: ast.Call | None, span: Span
    ) -> tuple[ir.Value, ir.Value, ir.Value]:
        if it.how == "pipeline":
            return self.const(0, span), self.expr(call.args[0]), self.const(1, span)
        if len(bounds) == 1:
            return self.const(0, span), self.expr(bounds[0]), self.const(1, span)
        step = self.expr(bounds[2]) if len(bounds) == 3 else self.const(1, span)
        return self.expr(bounds[0]), self.expr(bounds[1]), step

    def persistent(self, stmt: ast.For, it: IterV) -> None:
        if isinstance(stmt.iter, ast.Name):
            tiles_m, tiles_n = self.lookup(stmt.iter.id)
        else:
            tiles_m, tiles_n = self.tile_counts(stmt.iter)
        loc = self.loc(stmt.span)
        cluster = self.k.cluster  # > 1: the clusters walk blocks of `cluster` tiles along m
        size = self.const(cluster, stmt.span) if cluster > 1 else None
        rows = tiles_m if size is None else arith.CeilDivUIOp(tiles_m, size, loc=loc).result
        total = arith.MulIOp(rows, tiles_n, loc=loc).result
        index = ir.IndexType.get()
        first = self.op("tile.block_id", stmt.span, [], [index], {"dim": i64(0)}).result
        step = self.op("tile.grid_dim", stmt.span, [], [index], {"dim": i64(0)}).result
        if size is not None:
            first = arith.DivUIOp(first, size, loc=loc).result
            step = arith.DivUIOp(step, size, loc=loc).result
        loop = scf.ForOp(first, total, step, loc=loc)
        loop.attributes["tile.persistent"] = ir.StringAttr.get(it.raster)
        if it.split_tail:
            loop.attributes["tile.split_tail"] = ir.UnitAttr.get()
        with ir.InsertionPoint(loop.body):
            coord = self.op(
                "tile.tile_coord",
                stmt.span,
                [loop.induction_variable, tiles_m, tiles_n],
                [index, index],
                {"raster": ir.StringAttr.get(it.raster), "group": i64(it.group)},
            )
            self.env.append({stmt.var: (coord.results[0], coord.results[1])})
            self.block(stmt.body)
            self.env.pop()
            scf.YieldOp([], loc=loc)

    def tile_counts(self, call: ast.Call) -> tuple[ir.Value, ir.Value]:
        """The tile counts (m, n) of `persistent((m, n), ...)`, as index values."""
        counts = self.values[id(call.args[0])].items
        m, n = (
            self.const(c.value, call.span) if value is None else value
            for c, value in zip(counts, self.tuple_values(call.args[0]), strict=True)
        )
        return m, n

    def warp_specialize(self, stmt: ast.WarpSpecialize) -> None:
        outer = self.region_op(stmt.span, {"tile.warp_specialize": ir.UnitAttr.get()})
        with ir.InsertionPoint(outer.regions[0].blocks[0]):
            for role in stmt.roles:
                attrs: dict[str, ir.Attribute] = {"tile.role": ir.StringAttr.get(role.kind)}
                for kw in role.kwargs:
                    ints = static_ints(self.values[id(kw.value)]) or []
                    if kw.name in ("pingpong", "stagger") and ints == [0]:
                        continue  # the cooperative schedule: no attribute
                    plural = kw.name.startswith("warpgroup")  # warpgroup = 0, warpgroups = 1..2
                    key = "tile.warpgroups" if plural else f"tile.{kw.name}"
                    attrs[key] = (
                        ir.DenseI64ArrayAttr.get(ints) if key == "tile.warpgroups" else i64(ints[0])
                    )
                inner = self.region_op(role.span, attrs)
                with ir.InsertionPoint(inner.regions[0].blocks[0]):
                    self.block(role.body)
                    scf.YieldOp([], loc=self.loc(role.span))
            scf.YieldOp([], loc=self.loc(stmt.span))

    def region_op(self, span: Span, attrs: dict[str, ir.Attribute]) -> ir.Operation:
        op = ir.Operation.create(
            "scf.execute_region",
            results=[],
            operands=[],
            attributes=attrs,
            regions=1,
            loc=self.loc(span),
        )
        op.regions[0].blocks.append()
        return op

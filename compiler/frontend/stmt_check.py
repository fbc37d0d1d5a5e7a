"""Frontend (check stage): the statements of kernel bodies: `let`, `var` and assignments,
`for` loops (and the vars they carry), `warp_specialize` roles. A mixin of `ExprChecker`
(tilec.frontend.expr), whose state and expression checks these use."""

from __future__ import annotations

import math

from tilec import layout as L
from tilec.diagnostics import Span, note
from tilec.frontend import ast
from tilec.frontend.atoms import REGISTER_COUNTS
from tilec.frontend.shapes import static_ints
from tilec.frontend.values import (
    Binding,
    ErrorV,
    FloatV,
    IntV,
    IterV,
    Scope,
    TensorV,
    TileCoordV,
    UnitV,
    V,
)
from tilec.targets import TARGETS, has_setmaxnreg


class StatementChecker:
    """Statement checks over ExprChecker's state: scopes, vars, loops and roles."""

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
        budgets: dict[int, int] = {}  # warp group -> the registers a thread its role asks for
        for role in stmt.roles:
            asked: tuple[list[int], int | None] = ([], None)
            for kw in role.kwargs:
                asked = self.role_kwarg(role, kw, groups, scope, asked)
            budgets.update(dict.fromkeys(asked[0], asked[1]))
            self.block(role.body, Scope(parent=scope))
        self.register_pool(stmt, budgets, groups)

    def register_pool(self, stmt: ast.WarpSpecialize, budgets: dict, groups: int) -> None:
        """setmaxnreg moves registers between the warp groups of a block, within what the
        block is launched with (65536 / threads a thread, in steps of 8, at most 255): roles
        asking for more in all would wait in setmaxnreg.inc forever."""
        if all(r is None for r in budgets.values()):
            return
        threads = math.prod(self.threads)
        launched = min(65536 // threads, 255) // 8 * 8
        asked = [budgets.get(g) or launched for g in range(groups)]
        if sum(asked) <= launched * groups:
            return
        self.error(
            f"the roles' registers ({' + '.join(map(str, asked))} a thread, 128 threads a warp "
            f"group) exceed the {launched * threads} the block is launched with ({launched} a "
            f"thread x {threads}): setmaxnreg.inc would wait forever",
            stmt.span,
            [
                note(
                    f"the warp groups' budgets may add up to {launched} x {groups}: e.g. 24 + "
                    "240 + 240 at 384 threads"
                )
            ],  # fmt: skip
        )

    def role_kwarg(
        self, role: ast.Role, kw: ast.Keyword, groups: int, scope: Scope,
        asked: tuple[list[int], int | None],
    ) -> tuple[list[int], int | None]:  # fmt: skip
        """Checks one keyword of a role; `asked` (the role's warp groups, the registers it
        asks for) with what this keyword says."""
        value = self.expr(kw.value, scope)
        if kw.name in ("warpgroup", "warpgroups"):
            ids = static_ints(value)
            asked = (list(ids or []), asked[1])
            if ids is not None and role.kind == "consumer":
                self.consumer_groups = len(ids)
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
                asked = (asked[0], value.value)
        elif kw.name == "pingpong" and role.kind == "consumer":
            if not (isinstance(value, IntV) and value.value in (0, 1)):
                self.error("pingpong takes 0 or 1 (a static int)", kw.value.span)
            else:
                self.consumer_pingpong = value.value == 1
        elif kw.name == "stagger" and role.kind == "consumer":
            if not (isinstance(value, IntV) and value.value in (0, 1)):
                self.error("stagger takes 0 or 1 (a static int)", kw.value.span)
        else:
            also = ", pingpong = and stagger =" if role.kind == "consumer" else ""
            self.error(
                f"{role.kind}(...) takes warpgroup(s) =, registers ={also}, not '{kw.name}'",
                kw.span,
            )
        return asked

    # Expressions ------------------------------------------------------------------------------


def assignable(var: V, value: V) -> str | None:
    """Why `value` cannot be assigned to a var holding `var` (None: it can)."""
    if isinstance(var, TensorV):
        if not isinstance(value, TensorV) or value.space != "register":
            return "a var keeps its kind (a register tensor)"
        if value.elem != var.elem:
            return f"its elements are {var.elem} (convert with ': {var.elem}')"
        if L.tuple_str(value.logical_shape) != L.tuple_str(var.logical_shape):
            return "a var keeps its shape"
        if var.fresh and value.mma_rows:
            return None  # a fresh fragment takes an MMA reduction's spread (tile-distribute)
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

"""Frontend (check stage): calls of builtins: arity, keywords, template arguments, dispatch."""

from __future__ import annotations

import difflib

from tilec import layout as L
from tilec.diagnostics import DiagnosticEngine, note
from tilec.frontend import ast
from tilec.frontend.builtins_scalar import SCALAR_BUILTINS
from tilec.frontend.builtins_tensor import TENSOR_BUILTINS
from tilec.frontend.expr import ExprChecker
from tilec.frontend.values import ErrorV, IntV, Scope, V

BUILTINS = {**SCALAR_BUILTINS, **TENSOR_BUILTINS}


def call(c: ExprChecker, node: ast.Call, scope: Scope) -> V:
    if node.func == "choose":
        args = choices(c, node, scope)
    else:
        args = [c.expr(a, scope) for a in node.args]
    kw = {k.name: c.expr(k.value, scope) for k in node.kwargs}
    spec = BUILTINS.get(node.func)
    if spec is None:
        close = difflib.get_close_matches(node.func, BUILTINS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        return c.error(f"unknown function '{node.func}'{hint}", node.func_span)
    targs = [] if spec.atom_targs else [c.expr(t, scope) for t in node.targs]
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
    if any(isinstance(v, ErrorV) for v in [*args, *kw.values(), *targs]):
        return ErrorV()
    try:
        return spec.fn(c, node, args, kw)
    except L.LayoutError as exc:  # a layout the arguments make is not one CuTe defines
        return c.error(exc.message, node.span)


def choices(c: ExprChecker, node: ast.Call, scope: Scope) -> list[V]:
    """choose's arguments. Every choice is checked, but where a static first argument picks
    one, what the others report is a warning: a choice not taken may be invalid for these
    parameters (a layout ((64, BN / 64), BK) at BN = 32, in a branch for another operand major)
    and only the choice taken becomes IR."""
    if not node.args:
        return []
    pick = c.expr(node.args[0], scope)
    taken = 1 + pick.value if isinstance(pick, IntV) and pick.static else None
    if taken is None or not 0 < taken < len(node.args):
        return [pick, *(c.expr(a, scope) for a in node.args[1:])]
    args: list[V] = [pick]
    for i, a in enumerate(node.args[1:], 1):
        if i == taken:
            args.append(c.expr(a, scope))
            continue
        real, c.diags = c.diags, DiagnosticEngine(max_errors=1 << 30)
        try:
            value = c.expr(a, scope)
        finally:
            found, c.diags = c.diags, real
        why = note(f"in choice {i - 1}, which choose does not take (it takes {taken - 1})")
        for d in found.diagnostics:
            severity = "warning" if d.severity == "error" else d.severity
            c.diags.emit(severity, d.message, d.span, [*d.notes, why])
        args.append(pick if isinstance(value, ErrorV) else value)  # never picked
    return args

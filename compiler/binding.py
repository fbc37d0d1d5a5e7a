"""Every stage: the one adapter over version-sensitive MLIR Python binding calls.

The next MLIR bump should touch this file alone: Python-defined passes (callback signature,
`signal_pass_failure`), diagnostics carried by `MLIRError`, and location decoding.
"""

from __future__ import annotations

import ctypes
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mlir import ir, passmanager
from mlir._mlir_libs import _mlir  # the bindings' globals: no public spelling in MLIR 22

from tilec.diagnostics import Diagnostic, Span, render

PassBody = Callable[[ir.Operation], None]


class PassFailure(Exception):
    """Raised inside a pass body: the pass failed; diagnostics were already emitted."""


def add_python_pass(pm: passmanager.PassManager, body: PassBody, name: str, summary: str) -> None:
    """Add a Python pass to `pm`.

    Python exceptions must never unwind through MLIR's C++ pass manager (it leaves the context
    in a multi-threaded state and later aborts), so everything is caught here: `PassFailure`
    means the pass already reported its errors; any other exception is an internal error,
    reported at the operation's location.
    """

    def run(op: ir.Operation, pass_: object) -> None:
        try:
            body(op)
        except PassFailure:
            pass_.signal_pass_failure()
        except Exception as exc:  # noqa: BLE001 - reported as a diagnostic, see docstring
            if os.environ.get("TILEC_TRACEBACK"):  # for pass writers: where it broke
                traceback.print_exc()
            op.location.emit_error(f"internal error in pass '{name}': {type(exc).__name__}: {exc}")
            pass_.signal_pass_failure()

    pm.add(run, name=name, argument=name, description=summary)


def new_pass_manager(
    ctx: ir.Context, *, verify: bool = True, anchor: str = "builtin.module"
) -> passmanager.PassManager:
    pm = passmanager.PassManager(anchor, context=ctx)
    pm.enable_verifier(verify)
    return pm


def location_span(loc: ir.Location, default_file: str | None = None) -> Span | None:
    """The first file:line:col inside `loc` (through name, call-site and fused locations)."""
    if loc.is_a_file():
        file = loc.filename
        if file in ("-", "") and default_file is not None:
            file = default_file
        length = 1
        if loc.end_line == loc.start_line and loc.end_col > loc.start_col:
            length = loc.end_col - loc.start_col
        return Span(file, loc.start_line, loc.start_col, length)
    if loc.is_a_name():
        return location_span(loc.child_loc, default_file)
    if loc.is_a_callsite():
        return location_span(loc.callee, default_file)
    if loc.is_a_fused():
        for inner in loc.locations:
            span = location_span(inner, default_file)
            if span is not None:
                return span
    return None


_SEVERITY = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.NOTE: "note",
    ir.DiagnosticSeverity.REMARK: "remark",
}


def convert_diagnostic(info: object, default_file: str | None = None) -> Diagnostic:
    """An MLIR `DiagnosticInfo` as a tilec `Diagnostic` (notes included)."""
    return Diagnostic(
        severity=_SEVERITY.get(info.severity, "error"),
        message=str(info.message),
        span=location_span(info.location, default_file),
        notes=[convert_diagnostic(n, default_file) for n in info.notes],
    )


# The open collectors, innermost last: where `emit` puts a Python pass's warnings and remarks.
_COLLECTORS: list[tuple[list[Diagnostic], str | None]] = []


@contextmanager
def collect_diagnostics(
    ctx: ir.Context, default_file: str | None = None, *, errors: bool = True
) -> Iterator[list[Diagnostic]]:
    """Every diagnostic emitted in `ctx` while open, in order, as tilec `Diagnostic`s: MLIR's
    own (parser, verifier, passes) through a context handler, and Python passes' through
    `emit`. With `errors=False` errors still travel in `MLIRError` (the bindings' default) and
    only warnings, remarks and notes are collected."""
    found: list[Diagnostic] = []

    def handler(info: ir.Diagnostic) -> bool:
        if info.severity == ir.DiagnosticSeverity.ERROR and not errors:
            return False
        found.append(convert_diagnostic(info, default_file))
        return True

    was = ctx.emit_error_diagnostics
    ctx.emit_error_diagnostics = errors
    handle = ctx.attach_diagnostic_handler(handler)
    _COLLECTORS.append((found, default_file))
    try:
        yield found
    finally:
        _COLLECTORS.pop()
        handle.detach()
        ctx.emit_error_diagnostics = was


def emit(loc: ir.Location, severity: str, message: str) -> None:
    """A diagnostic from a Python pass, at `loc`. Errors go through MLIR (`emit_error`; the
    pass then raises `PassFailure`); the bindings cannot emit other severities, so warnings
    and remarks go to the innermost `collect_diagnostics`, or to stderr when none is open."""
    if severity == "error":
        loc.emit_error(message)
        return
    default_file = _COLLECTORS[-1][1] if _COLLECTORS else None
    diag = Diagnostic(severity, message, location_span(loc, default_file))
    if _COLLECTORS:
        _COLLECTORS[-1][0].append(diag)
    else:
        print(render(diag, None), file=sys.stderr)


def error_diagnostics(exc: Exception, default_file: str | None = None) -> list[Diagnostic]:
    """The diagnostics an `MLIRError` carries; a plain message when it carries none."""
    infos = getattr(exc, "error_diagnostics", None) or []
    diags = [convert_diagnostic(i, default_file) for i in infos]
    if not diags:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        diags = [Diagnostic("error", message, None)]
    return diags


CONTRACTED = frozenset({"add", "sub", "mul"})


def contract() -> ir.Attribute:
    """The fast-math flag a kernel's float `+`, `-` and `*` carry: a * b + c may become one fused
    multiply-add, as nvcc's default `-fmad=true` and Triton's `enable_fp_fusion` allow. Without
    it LLVM's NVPTX backend keeps the two operations and prints them `mul.rn` / `add.rn`, which
    ptxas may not fuse either."""
    return ir.Attribute.parse("#arith.fastmath<contract>")


def walk(root: ir.Operation, visit: Callable[[ir.Operation], None]) -> None:
    """Call `visit` on every operation nested in `root` (root included), in pre-order."""

    def callback(op: ir.Operation) -> ir.WalkResult:
        visit(op)
        return ir.WalkResult.ADVANCE

    root.walk(callback, ir.WalkOrder.PRE_ORDER)


def functions(root: ir.Operation) -> list[ir.Operation]:
    """The `func.func` ops nested in `root`, in pre-order, without walking into their bodies."""
    found: list[ir.Operation] = []

    def callback(op: ir.Operation) -> ir.WalkResult:
        if op.name != "func.func":
            return ir.WalkResult.ADVANCE
        found.append(op)
        return ir.WalkResult.SKIP

    root.walk(callback, ir.WalkOrder.PRE_ORDER)
    return found


def enclosing_loops(op: ir.Operation, stop: ir.Operation) -> list[ir.Operation]:
    """The scf.for loops around `op` below `stop`, outermost first."""
    loops, parent = [], op.parent
    while parent is not None and parent != stop:
        if parent.name == "scf.for":
            loops.append(parent)
        parent = parent.parent
    return loops[::-1]


def inside(op: ir.Operation, ancestor: ir.Operation) -> bool:
    """Whether `op` is nested, at any depth, in the regions of `ancestor`."""
    p = op.parent
    while p is not None:
        if p == ancestor:
            return True
        p = p.parent
    return False


_CAPSULE_POINTER = ctypes.pythonapi.PyCapsule_GetPointer
_CAPSULE_POINTER.restype = ctypes.c_void_p
_CAPSULE_POINTER.argtypes = [ctypes.py_object, ctypes.c_char_p]


def op_id(op: ir.Operation) -> int:
    """A key for `op` in a dict or set: its address, which stays while it lives. (These
    bindings hash an `Operation` by its contents, name, operands, attributes and result types,
    so an op changed after it became a key hashes differently and is not found again.)"""
    return _CAPSULE_POINTER(op.operation._CAPIPtr, b"mlir.ir.Operation._CAPIPtr")


def sibling(op: ir.Operation, offset: int) -> ir.Operation | None:
    """The op `offset` places after `op` in its block (before it, for a negative offset), or
    None past either end."""
    ops = [o.operation for o in op.block.operations]
    k = ops.index(op.operation) + offset
    return ops[k] if 0 <= k < len(ops) else None


def ancestors(op: ir.Operation) -> list[ir.Operation]:
    """`op` and the ops it is nested in, outermost first."""
    chain = [op.operation]
    while (parent := chain[-1].parent) is not None:
        chain.append(parent.operation)
    return chain[::-1]


def before(a: ir.Operation, b: ir.Operation) -> bool:
    """Whether `a` comes before `b` in a pre-order walk (an op before the ops nested in it),
    decided from where the two are now: positions in a shared block, else the order of the
    regions and blocks of the op that holds both (no table of positions made earlier to go
    stale as the IR changes)."""
    chain_a, chain_b = ancestors(a), ancestors(b)
    k = 0
    while k < min(len(chain_a), len(chain_b)) and chain_a[k] == chain_b[k]:
        k += 1
    if k == len(chain_b):
        return False  # b is a or holds it
    if k == len(chain_a):
        return True  # a holds b
    x, y = chain_a[k], chain_b[k]
    if x.block == y.block:
        return x.is_before_in_block(y)
    return block_position(x) < block_position(y)


def block_position(op: ir.Operation) -> tuple[int, int]:
    """(region, block) indices of `op`'s block within the op that holds it."""
    for r, region in enumerate(op.parent.regions):
        for k, block in enumerate(region.blocks):
            if block == op.block:
                return r, k
    raise ValueError("an op outside its parent's regions")


def defined_inside(value: ir.Value, ancestor: ir.Operation) -> bool:
    """Whether `value` is the result of an op nested in `ancestor`, or an argument of a block
    of it (its own blocks' too: a loop's induction variable is defined inside the loop)."""
    if isinstance(value, ir.BlockArgument):
        owner = value.owner.owner
        return owner == ancestor or inside(owner, ancestor)
    return inside(value.owner.operation, ancestor)


def defined_types(op: ir.Operation) -> list[ir.Type]:
    """Types of the values `op` defines: its results and its regions' block arguments."""
    types = [r.type for r in op.results]
    for region in op.regions:
        for block in region.blocks:
            types.extend(a.type for a in block.arguments)
    return types


def has_uses(value: ir.Value) -> bool:
    return any(True for _ in value.uses)


def erase_dead(root: ir.Operation, prefix: str) -> None:
    """Erase ops named `prefix*` whose results are all unused (and those only they used).

    IRDL ops carry no side-effect traits, so upstream DCE keeps them; passes that know an op
    is pure call this instead. One walk of `root`, then `erase_unused` on what it found.
    """
    found: list[ir.Operation] = []
    walk(root, lambda op: found.append(op) if op.name.startswith(prefix) else None)
    erase_unused(found)


def erase_unused(ops: list[ir.Operation]) -> None:
    """Erase those of `ops` (in program order) whose results are all unused, users before
    their producers, until none is left; the others stay untouched."""
    alive = list(ops)
    while True:
        kept: list[ir.Operation] = []
        erased = False
        for op in reversed(alive):
            if any(has_uses(r) for r in op.results):
                kept.append(op)
            else:
                op.erase()
                erased = True
        alive = kept[::-1]
        if not erased:
            return


def is_float_type(t: ir.Type) -> bool:
    """Whether `t` is a float type (the bindings downcast parsed types to their class)."""
    return isinstance(t, ir.FloatType)


def is_float_attr(a: ir.Attribute) -> bool:
    return isinstance(a, ir.FloatAttr)


def attr_number(a: ir.Attribute) -> float | int:
    """The number a float or integer attribute holds (a fill's value, a load's `other`)."""
    return ir.FloatAttr(a).value if is_float_attr(a) else ir.IntegerAttr(a).value


def add_dialect_search_prefix(prefix: str) -> None:
    """Let the bindings find a Python module for a dialect namespace under `prefix` as well as
    `mlir.dialects`. Every op handle the bindings make looks its dialect's module up, and a
    lookup that fails is not remembered: for a dialect with no module (ours, from IRDL) each
    handle re-ran a failing import (1,457 in convert-layout-to-arith on the GEMM alone)."""
    if prefix not in _mlir.globals.dialect_search_modules:
        _mlir.globals.append_dialect_search_prefix(prefix)

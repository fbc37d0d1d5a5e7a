"""Every stage after `ast`: pipeline strings mixing tilec (Python) and upstream MLIR passes.

Python passes added with `PassManager.add(callable)` are invisible to MLIR's own pipeline
parser, so tilec splits a spec such as `layout-fold{x=1},canonicalize,gpu.module(cse)` at the
top level itself: tilec pass names become Python passes, every other element goes to MLIR as
text. Consecutive MLIR elements are handed over together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mlir import ir, passmanager

from tilec import binding
from tilec.options import flag
from tilec.passes import PASSES, Pass


class PipelineError(ValueError):
    """A pipeline string that does not parse (message says where and why)."""


@dataclass(frozen=True)
class Element:
    """One top-level element of a pipeline string: `name`, `name{opts}` or `anchor(...)`."""

    text: str
    name: str
    options: str  # the text between the braces, '' when none


def split_top_level(spec: str) -> list[str]:
    """Split at commas that are not inside (), {} or []; strip a `builtin.module(...)` wrapper."""
    spec = spec.strip()
    if spec.startswith("builtin.module(") and spec.endswith(")"):
        spec = spec[len("builtin.module(") : -1]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced '{ch}' at offset {i} in pipeline '{spec}'")
        elif ch == "," and depth == 0:
            parts.append(spec[start:i])
            start = i + 1
    if depth != 0:
        raise PipelineError(f"unbalanced brackets in pipeline '{spec}'")
    parts.append(spec[start:])
    return [p.strip() for p in parts if p.strip()]


def parse_element(text: str) -> Element:
    name_end = len(text)
    for i, ch in enumerate(text):
        if ch in "({":
            name_end = i
            break
    name = text[:name_end].strip()
    options = ""
    rest = text[name_end:].strip()
    if rest.startswith("{") and rest.endswith("}"):
        options = rest[1:-1].strip()
    return Element(text, name, options)


def parse_options(cls: type[Pass], options: str) -> Pass:
    """`key=value key2=value2` into an instance of the pass's option dataclass."""
    fields = {f.name.replace("_", "-"): f for f in cls.options()}
    values: dict[str, object] = {}
    for item in options.split():
        key, sep, raw = item.partition("=")
        field = fields.get(key) or fields.get(key.replace("_", "-"))
        if field is None or not sep:
            known = ", ".join(sorted(fields)) or "none"
            raise PipelineError(f"pass '{cls.name}' has no option '{key}' (options: {known})")
        values[field.name] = _convert(cls.name, key, raw, field.type)
    return cls(**values)


def _convert(pass_name: str, key: str, raw: str, typ: object) -> object:
    typ = {"int": int, "bool": bool, "str": str, "float": float}.get(typ, typ)
    try:
        if typ is bool:
            if raw not in ("true", "false", "1", "0"):
                raise ValueError(raw)
            return raw in ("true", "1")
        return typ(raw) if typ in (int, float, str) else raw
    except ValueError:
        raise PipelineError(f"option '{key}' of pass '{pass_name}': bad value '{raw}'") from None


# MLIR's refusal to add a pass anchored on another op names that op.
_RESTRICTED = re.compile(r"restricted to '([^']+)'")


def nest_by_anchor(ctx: ir.Context, text: str, anchor: str = "builtin.module") -> str:
    """An upstream element placed as mlir-opt's implicit nesting places a pass flag: a pass
    anchored on an op other than `anchor` (convert-gpu-to-nvvm on gpu.module) runs nested in
    that op, `gpu.module(convert-gpu-to-nvvm)`; anything else is returned unchanged."""
    if "(" in text.split("{", 1)[0]:
        return text  # already anchored by its author
    probe = binding.new_pass_manager(ctx, anchor=anchor)
    try:
        probe.add(text)
    except ValueError as exc:
        m = _RESTRICTED.search(str(exc))
        if m is None:
            raise PipelineError(str(exc).strip()) from None
        return f"{m.group(1)}({text})"
    return text


def build_pass_manager(
    ctx: ir.Context, spec: str, *, flags: object | None = None, anchor: str = "builtin.module"
) -> passmanager.PassManager:
    """A pass manager running `spec` (tilec and MLIR pass names mixed) on an `anchor` op, with
    the instruments `flags` (mlir-opt's options, see tilec.options) ask for.

    Upstream passes anchored on an inner op are nested in it, as for mlir-opt's pass flags.
    """
    pm = binding.new_pass_manager(ctx, anchor=anchor)
    add_elements(pm, ctx, split_top_level(spec), anchor)
    instrument(pm, flags)
    return pm


def instrument(pm: passmanager.PassManager, flags: object | None) -> None:
    """The verifier, IR printing, timing and statistics, from mlir-opt's options in `flags`."""
    pm.enable_verifier(bool(flag(flags, "verify_each")))
    before, after = flag(flags, "mlir_print_ir_before_all"), flag(flags, "mlir_print_ir_after_all")
    change = flag(flags, "mlir_print_ir_after_change")
    failure = flag(flags, "mlir_print_ir_after_failure")
    if before or after or change or failure:
        pm.enable_ir_printing(
            print_before_all=bool(before),
            print_after_all=bool(after),
            print_module_scope=bool(flag(flags, "mlir_print_ir_module_scope")),
            print_after_change=bool(change),
            print_after_failure=bool(failure),
            enable_debug_info=bool(flag(flags, "mlir_print_debuginfo")),
            print_generic_op_form=bool(flag(flags, "mlir_print_op_generic")),
            tree_printing_dir_path=flag(flags, "mlir_print_ir_tree_dir"),
        )
    if flag(flags, "mlir_timing"):
        pm.enable_timing()
    if flag(flags, "mlir_pass_statistics"):
        pm.enable_statistics()


def add_elements(
    pm: passmanager.PassManager, ctx: ir.Context, elements: list[str], anchor: str | None
) -> None:
    """Add top-level pipeline elements to `pm`: tilec passes as Python passes, runs of other
    elements to MLIR as text (nested by their anchor unless `anchor` is None)."""
    mlir_run: list[str] = []

    def flush() -> None:
        if not mlir_run:
            return
        try:
            pm.add(",".join(mlir_run))
        except ValueError as exc:
            raise PipelineError(str(exc).strip()) from None
        mlir_run.clear()

    for text in elements:
        element = parse_element(text)
        cls = PASSES.get(element.name)
        if cls is None:
            mlir_run.append(text if anchor is None else nest_by_anchor(ctx, text, anchor))
            continue
        flush()
        instance = parse_options(cls, element.options)
        binding.add_python_pass(pm, instance.run, cls.name, cls.summary())
    flush()


def textual_pass_manager(ctx: ir.Context, spec: str) -> passmanager.PassManager:
    """`--pass-pipeline`, exactly as mlir-opt reads it: anchored (`builtin.module(...)`), no
    implicit nesting. tilec passes may stand at the top level of `builtin.module(...)`."""
    text = spec.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        elements = split_top_level(text)
        if any(parse_element(e).name in PASSES for e in elements):
            pm = binding.new_pass_manager(ctx)
            add_elements(pm, ctx, elements, None)
            return pm
    try:
        return passmanager.PassManager.parse(text, context=ctx)
    except ValueError as exc:
        raise PipelineError(str(exc).strip()) from None


def run_pipeline(module: ir.Module, spec: str, flags: object | None = None) -> None:
    """Run `spec` on `module` in place; raises `MLIRError` (with diagnostics) on failure."""
    if not spec.strip():
        return
    build_pass_manager(module.context, spec, flags=flags).run(module.operation)

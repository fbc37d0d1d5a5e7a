"""Every stage after `ast`: pipeline strings mixing tilec (Python) and upstream MLIR passes.

Python passes added with `PassManager.add(callable)` are invisible to MLIR's own pipeline
parser, so tilec splits a spec such as `layout-fold{x=1},canonicalize,gpu.module(cse)` at the
top level itself: tilec pass names become Python passes, every other element goes to MLIR as
text. Consecutive MLIR elements are handed over together.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir, passmanager

from tilec import binding
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


def build_pass_manager(
    ctx: ir.Context, spec: str, *, print_ir_after_all: bool = False, timing: bool = False
) -> passmanager.PassManager:
    """A pass manager running `spec` (tilec and MLIR pass names mixed) on a builtin.module."""
    pm = binding.new_pass_manager(ctx)
    mlir_run: list[str] = []

    def flush() -> None:
        if not mlir_run:
            return
        try:
            pm.add(",".join(mlir_run))
        except ValueError as exc:
            raise PipelineError(str(exc).strip()) from None
        mlir_run.clear()

    for text in split_top_level(spec):
        element = parse_element(text)
        cls = PASSES.get(element.name)
        if cls is None:
            mlir_run.append(text)
            continue
        flush()
        instance = parse_options(cls, element.options)
        binding.add_python_pass(pm, instance.run, cls.name, cls.summary())
    flush()
    if print_ir_after_all:
        pm.enable_ir_printing(print_after_all=True)
    if timing:
        pm.enable_timing()
    return pm


def run_pipeline(module: ir.Module, spec: str, **flags: bool) -> None:
    """Run `spec` on `module` in place; raises `MLIRError` (with diagnostics) on failure."""
    if not spec.strip():
        return
    build_pass_manager(module.context, spec, **flags).run(module.operation)

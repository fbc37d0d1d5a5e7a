"""Frontend (ast stage): the AST as an indented S-expression, for `--emit ast` and tests."""

from __future__ import annotations

import dataclasses

from tilec.diagnostics import Span
from tilec.frontend import ast
from tilec.frontend.values import FloatV, IntV, LayoutV, MmaV, TensorV, TypeV, V


def dump_ast(node: ast.Node, values: dict[int, V] | None = None) -> str:
    """`(Kernel @3:8 name=gemm ...)`: each node names its class, its line:col, its fields and,
    for a checked program, `: value` — what the checker found the expression to be."""
    return "\n".join(_lines(node, 0, values or {})) + "\n"


def value_text(v: V) -> str:
    if isinstance(v, IntV):
        return f"int {v.value if v.static else v.text}"
    if isinstance(v, FloatV):
        return f"{v.elem} {v.value if v.value is not None else 'runtime'}"
    if isinstance(v, LayoutV):
        return f"layout {v.obj}"
    if isinstance(v, TypeV):
        return f"type {v.name}"
    if isinstance(v, MmaV):
        return f"tiled mma {v.atom} {v.tiling}"
    if isinstance(v, TensorV):
        return v.describe()
    return v.kind


def _atom(value: object) -> str:
    if isinstance(value, str):
        return repr(value) if value == "" or not value.replace("_", "a").isalnum() else value
    return repr(value)


def _lines(node: ast.Node, indent: int, values: dict[int, V]) -> list[str]:
    pad = "  " * indent
    head = f"{pad}({type(node).__name__} @{node.span.line}:{node.span.col}"
    scalars, children = [], []
    for f in dataclasses.fields(node):
        value = getattr(node, f.name)
        if f.name == "span" or isinstance(value, Span):
            continue
        if isinstance(value, ast.Node):
            children.append((f.name, [value]))
        elif isinstance(value, list):
            children.append((f.name, value))
        elif value is not None:
            scalars.append(f"{f.name}={_atom(value)}")
    if scalars:
        head += " " + " ".join(scalars)
    if id(node) in values:
        head += f" : {value_text(values[id(node)])}"
    if not any(items for _, items in children):
        return [head + ")"]
    out = [head]
    for name, items in children:
        if not items:
            continue
        out.append(f"{pad}  :{name}")
        for item in items:
            out.extend(_lines(item, indent + 2, values))
    out[-1] += ")"
    return out

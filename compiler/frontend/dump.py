"""Frontend (ast stage): the AST as an indented S-expression, for `--emit ast` and tests."""

from __future__ import annotations

import dataclasses

from tilec.diagnostics import Span
from tilec.frontend import ast


def dump_ast(node: ast.Node) -> str:
    """`(Kernel gemm @3:8 ...)`: each node names its class, its line:col, then its fields."""
    return "\n".join(_lines(node, 0)) + "\n"


def _atom(value: object) -> str:
    if isinstance(value, str):
        return repr(value) if value == "" or not value.replace("_", "a").isalnum() else value
    return repr(value)


def _lines(node: ast.Node, indent: int) -> list[str]:
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
    if not any(items for _, items in children):
        return [head + ")"]
    out = [head]
    for name, items in children:
        if not items:
            continue
        out.append(f"{pad}  :{name}")
        for item in items:
            out.extend(_lines(item, indent + 2))
    out[-1] += ")"
    return out

"""The `layout` dialect from Python: the type's SPEC string and builders for its ops."""

from __future__ import annotations

import ast
import re

from mlir import ir

from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.algebra import DYN, ComposedLayout, Layout, flatten
from tilec.dialects.layout.text import parse_layout

_TYPE = re.compile(r'^!layout\.layout<"((?:[^"\\]|\\.)*)">$')

# Ops whose result is a pure function of their layout operands, by name (without `layout.`).
BINARY_OPS = (
    "composition",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
)
UNARY_OPS = ("coalesce", "filter", "right_inverse", "left_inverse")


def layout_type(spec: str) -> ir.Type:
    return ir.Type.parse(f'!layout.layout<"{spec}">')


def spec_of(typ: ir.Type) -> str | None:
    """The SPEC of a `!layout.layout<"SPEC">` type, None for any other type."""
    m = _TYPE.match(str(typ))
    return m.group(1) if m else None


def layout_of(typ: ir.Type) -> Layout | ComposedLayout | None:
    """The type's layout (with `DYN` entries), None for other types."""
    spec = spec_of(typ)
    return None if spec is None else parse_layout(spec, allow_dynamic=True)


def inner(layout: Layout | ComposedLayout) -> Layout:
    return layout.inner if isinstance(layout, ComposedLayout) else layout


def is_static(layout: Layout | ComposedLayout) -> bool:
    lay = inner(layout)
    return DYN not in flatten(lay.shape) and DYN not in flatten(lay.stride)


def make(spec: str, operands: list[ir.Value] | None = None) -> ir.Operation:
    """A `layout.make` of SPEC at the current insertion point and location."""
    return ir.Operation.create("layout.make", results=[layout_type(spec)], operands=operands or [])


# Attributes a layout op reads, by op name (without `layout.`): `swizzle {bits, base, shift}`,
# `upcast`/`downcast {factor}`. Both layout-fold and irgen evaluate ops through `evaluate`.
INT_ATTRS = {"swizzle": ("bits", "base", "shift"), "upcast": ("factor",), "downcast": ("factor",)}


def evaluate(
    name: str, operands: list[Layout | ComposedLayout], attrs: dict[str, int], extra: int = 0
) -> object:
    """The algebra's value of layout op `name` on static layouts; `extra` is complement's
    cotarget. Raises LayoutError where the algebra is undefined, KeyError for a non-layout op."""
    if name in BINARY_OPS:
        lhs, rhs = operands
        if name == "tile_to_shape":
            return A.tile_to_shape(lhs, inner(rhs).shape)
        return getattr(A, name)(lhs, rhs)
    if name in UNARY_OPS:
        return getattr(A, name)(operands[0])
    if name == "swizzle":
        swizzle = A.Swizzle(attrs["bits"], attrs["base"], attrs["shift"])
        return A.composition(swizzle, operands[0])
    if name in ("upcast", "downcast"):
        return getattr(A, name)(operands[0], attrs["factor"])
    if name == "complement":
        return A.complement(operands[0], extra)
    raise KeyError(name)


def slice_pattern(text: str) -> A.Coord:
    """A `layout.slice` pattern as a coordinate: `_` keeps a mode (None), `?` fixes it.

    Which value fixes a mode does not change the sliced layout (only its offset), so `?`
    becomes 0 here. `((?,_),_)` -> ((0, None), None).
    """
    if not text or set(text) - set("(),_? "):
        raise A.LayoutError(f"slice pattern '{text}' may hold only '(', ')', ',', '_' and '?'")
    try:
        return ast.literal_eval(text.replace("_", "None").replace("?", "0"))
    except (SyntaxError, ValueError):
        raise A.LayoutError(f"slice pattern '{text}' is not a nested tuple") from None

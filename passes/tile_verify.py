"""Passes: `tile-verify`, the checks IRDL cannot express for the tilec dialects.

IRDL checks the structure (operand kinds, attribute kinds) but cannot look inside the layout
SPEC string of `!layout.layout<"SPEC">`. This pass does, with the algebra's own parser:

    %0 = "layout.make"() : () -> !layout.layout<"(4,8):(8">
    // error: malformed layout '(4,8):(8' in !layout.layout: ...

The layout of every `!tile.tensor<ELEM, "SPACE", "SPEC">` view is checked the same way, and its
memory space must be global, shared or register. It also checks that `layout.make` has one
`index` operand per `?` entry of its result.
"""

from __future__ import annotations

import re

from mlir import ir

from tilec.binding import defined_types, walk
from tilec.passes.base import Pass, register

LAYOUT_TYPE = re.compile(r'!layout\.layout<"((?:[^"\\]|\\.)*)">')
# `!tile.tensor<ELEM, "SPACE", "SPEC">`: a view's layout is checked the same way.
TENSOR_TYPE = re.compile(r'!tile\.tensor<[^,<>]+, "(\w+)", "((?:[^"\\]|\\.)*)">')
SPACES = ("global", "shared", "register")


def dynamic_entry_count(spec: str) -> int:
    return spec.count("?")


@register
class TileVerify(Pass):
    """Check layout SPEC strings and dynamic-entry operand counts in tilec IR."""

    name = "tile-verify"

    def run(self, module: ir.Operation) -> None:
        from tilec.dialects.layout.text import parse_layout  # the algebra's own parser
        from tilec.layout import LayoutError

        failed = False

        def check(op: ir.Operation) -> None:
            nonlocal failed
            for typ in defined_types(op):
                for space, _spec in TENSOR_TYPE.findall(str(typ)):
                    if space not in SPACES:
                        self.error(op, f"unknown memory space '{space}' in {typ}")
                        failed = True
                specs = LAYOUT_TYPE.findall(str(typ)) + [
                    s for _, s in TENSOR_TYPE.findall(str(typ))
                ]
                for spec in specs:
                    try:
                        parse_layout(spec, allow_dynamic=True)
                    except LayoutError as exc:
                        self.error(op, f"malformed layout '{spec}' in {typ}: {exc}")
                        failed = True
            if op.name == "layout.make" and len(op.results) == 1:
                specs = LAYOUT_TYPE.findall(str(op.results[0].type))
                wanted = dynamic_entry_count(specs[0]) if specs else 0
                if specs and len(op.operands) != wanted:
                    self.error(
                        op,
                        f"layout.make of '{specs[0]}' needs {wanted} index operand(s), "
                        f"one per '?', but has {len(op.operands)}",
                    )
                    failed = True

        walk(module, check)
        if failed:
            self.fail()

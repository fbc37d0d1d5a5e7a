"""Passes: `tile-verify`, the checks IRDL cannot express for the tilec dialects.

IRDL checks the structure (operand kinds, attribute kinds) but cannot look inside the layout
SPEC string of `!layout.layout<"SPEC">`. This pass does, with the algebra's own parser:

    %0 = "layout.make"() : () -> !layout.layout<"(4,8):(8">
    // error: malformed layout '(4,8):(8' in !layout.layout: ...

The layout of every `!tile.tensor<ELEM, "SPACE", "SPEC">` view is checked the same way, and its
memory space must be global, shared or register. It also checks that `layout.make` has one
`index` operand per `?` entry of its result, and that a `tile.alloc_shared` whose layout
operand is (folded to) a `layout.make` has that layout as its type's. Where an op takes a
register tensor either before tile-distribute (`!tile.tensor`) or after (`!tile.frag`), IRDL
accepts any type (its loader cannot hold two base constraints in an any_of); this pass checks
that such an operand or result is one of the two, and that a `!tile.frag`'s TV layout parses.
"""

from __future__ import annotations

from mlir import ir

from tilec.binding import defined_types, walk
from tilec.dialects.layout.algebra import LayoutError
from tilec.dialects.layout.ir import spec_of
from tilec.dialects.layout.text import parse_layout
from tilec.dialects.tile.types import SPACES, TensorType
from tilec.passes.base import Pass, register

# Register-tensor slots IRDL leaves open: operand positions by op (every result of these ops
# is one too). An optional operand that is absent is not checked.
REGISTER_OPERANDS = {
    "tile.fragment": (),
    "tile.fill": (0,),
    "tile.load": (1,),
    "tile.relayout": (0, 2),
    "tile.store": (0, 2),
    "tile.gemm": (1, 3),
    "tile.binary": (),
    "tile.unary": (0,),
    "tile.convert": (0,),
    "tile.compare": (),
    "tile.select": (0,),
    "tile.coord": (0,),
    "tile.cluster_reduce": (0,),
    "tile.unit_sum": (0,),
    "tile.unit_part": (0,),
    "tile.reduce": (0,),
    "tile.reduce_group": (0,),
}


def register_slots(op: ir.Operation) -> list[ir.Value]:
    """The operands and results of `op` that must be tile tensors (IRDL's open slots)."""
    slots = REGISTER_OPERANDS.get(op.name)
    if slots is None:
        return []
    operands = list(op.operands)
    return [operands[k] for k in slots if k < len(operands)] + list(op.results)


@register
class TileVerify(Pass):
    """Check layout SPEC strings and dynamic-entry operand counts in tilec IR."""

    name = "tile-verify"

    def run(self, module: ir.Operation) -> None:
        failed = False

        def check(op: ir.Operation) -> None:
            nonlocal failed
            for typ in defined_types(op):
                tensor = TensorType.of(typ)
                if tensor is not None and tensor.space not in SPACES:
                    self.error(op, f"unknown memory space '{tensor.space}' in {typ}")
                    failed = True
                spec = tensor.layout if tensor is not None else spec_of(typ)
                specs = [spec] if tensor is None or tensor.tv is None else [spec, tensor.tv]
                for text in specs if spec is not None else []:
                    try:
                        parse_layout(text, allow_dynamic=True)
                    except LayoutError as exc:
                        self.error(op, f"malformed layout '{text}' in {typ}: {exc}")
                        failed = True
            for v in register_slots(op):
                if TensorType.of(v.type) is None:
                    self.error(op, f"'{op.name}' takes register tensors here, not {v.type}")
                    failed = True
            spec = spec_of(op.results[0].type) if op.name == "layout.make" else None
            if spec is not None and len(op.operands) != spec.count("?"):
                self.error(
                    op,
                    f"layout.make of '{spec}' needs {spec.count('?')} index operand(s), "
                    f"one per '?', but has {len(op.operands)}",
                )
                failed = True

            failed |= not self.check_alloc(op)
            failed |= not self.check_relayout(op)

        walk(module, check)
        if failed:
            self.fail()

    def check_relayout(self, op: ir.Operation) -> bool:
        """A relayout goes through a shared buffer of its value's element type (and keeps it);
        tile-distribute checks the shapes, which an MMA fragment's type does not spell."""
        if op.name != "tile.relayout" or len(op.operands) < 2:
            return True
        value, buffer, result = (TensorType.of(v.type) for v in (*op.operands[:2], op.result))
        if None in (value, buffer, result):
            return True  # reported above
        if buffer.space != "shared":
            self.error(op, f"relayout goes through a shared buffer, not a {buffer.space} tensor")
            return False
        if not value.elem == buffer.elem == result.elem:
            self.error(
                op,
                f"relayout of {value.elem} values through a {buffer.elem} buffer into "
                f"{result.elem}: the element types must be equal",
            )
            return False
        return True

    def check_alloc(self, op: ir.Operation) -> bool:
        """A shared buffer's layout operand, once a static make, is its type's layout."""
        if op.name != "tile.alloc_shared" or not op.operands:
            return True
        source = op.operands[0].owner
        if not isinstance(source, ir.OpView) or source.operation.name != "layout.make":
            return True  # not folded yet: layout-fold checks each op's declared result
        tensor = TensorType.of(op.results[0].type)
        try:
            declared = parse_layout(spec_of(source.results[0].type), allow_dynamic=True)
            held = parse_layout(tensor.layout, allow_dynamic=True)
        except LayoutError:
            return True  # reported above, with the type that holds it
        if declared != held:
            self.error(
                op,
                f"shared buffer declared with layout {declared} but its type holds {held}",
            )
            return False
        return True

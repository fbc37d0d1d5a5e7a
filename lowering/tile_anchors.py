"""Lowering helper: a thread's ldmatrix row addresses as a few anchor registers plus immediates.

A gemm operand's rows sit at the lane's coordinate plus static steps (rows of other m- or
n-atoms, k-steps). Each step is an offset of the unswizzled index; a swizzle reads and writes
only the bits below the top of its fields (`top`), so

    swizzle(u + d) = swizzle(u + d % top) + (d - d % top)

and steps that agree modulo `top` share one swizzled anchor: the rest are the anchor plus an
immediate. An SW128 atom's 16 k-steps at D = 128 then take 4 anchors, not 16 loop-invariant
registers (LLVM hoists one per distinct index expression out of the loop).
"""

from __future__ import annotations

from dataclasses import replace

from mlir import ir

from tilec.lowering import IndexBuilder, Term
from tilec.lowering.tile_modes import Nest, Stride
from tilec.lowering.tile_remat import opaque_copy
from tilec.lowering.tile_views import View, element_address, element_index, gep, swizzle_span


def step_offset(stride: Stride, step: int, granule: int) -> int | None:
    """Elements that `step` more along a mode moves a coordinate `c + g` (0 <= c < granule, g
    a static multiple of `granule`, step too), whatever c is; None where that is not one number.

    A flat mode is linear. A nested one is where its first extent is a multiple of `granule`:
    c then never carries into the next leaf, so each leaf's digit of c + step is c's plus
    step's (the first) or step's alone (the others).
    """
    if not isinstance(stride, Nest):
        return step * stride if isinstance(stride, int) else None
    if not all(isinstance(t, int) for t in (*stride.extents, *stride.strides)):
        return None
    if step % granule or stride.extents[0] % granule:
        return None
    out, rest = 0, step
    for i, (e, s) in enumerate(zip(stride.extents, stride.strides, strict=True)):
        last = i == len(stride.extents) - 1
        out += (rest if last else rest % e) * s
        rest = rest if last else rest // e
    return out


class Anchors:
    """The addresses of `view`'s elements at `first` plus static steps, one thread's.

    `lane_only[k]` says `first[k]` is a lane term in [0, granule) plus a static multiple of it
    (a nested mode needs that; a flat one any coordinate). A step that is not one offset for
    every such lane falls back to its own full index (`element_address`).
    """

    def __init__(
        self, view: View, first: list[Term], lane_only: list[bool], granule: int, b: IndexBuilder
    ) -> None:
        self.view, self.first, self.lane_only, self.granule, self.b = (
            view,
            first,
            lane_only,
            granule,
            b,
        )
        self.top = swizzle_span(view)
        self.anchors: dict[int, ir.Value] = {}
        self.pinned = in_loop_of(view)

    def offset(self, steps: list[int]) -> int | None:
        total = 0
        for stride, step, lane in zip(self.view.stride, steps, self.lane_only, strict=True):
            if step == 0:
                continue
            if isinstance(stride, Nest) and not lane:
                return None
            d = step_offset(stride, step, self.granule)
            if d is None:
                return None
            total += d
        return total

    def address(self, steps: list[int]) -> ir.Value:
        """&view[first + steps]: an anchor (made on first use, here) plus an immediate."""
        b, d = self.b, self.offset(steps)
        if d is None or d < 0:
            coords = [b.add(c, s) for c, s in zip(self.first, steps, strict=True)]
            return element_address(self.view, coords, b)
        low = d % self.top
        if low not in self.anchors:
            self.anchors[low] = self.anchor(low)
        return gep(self.anchors[low], d - low, self.view.elem, b)

    def anchor(self, low: int) -> ir.Value:
        """&view[first] moved `low` elements before the swizzle: the offset joins the index
        the swizzle reads, as the step along the modes would (one mode's step carries it)."""
        shifted = replace(self.view, offset=self.b.add(self.view.offset, low))
        if not self.pinned:
            return element_address(shifted, self.first, self.b)
        index = self.b.value(element_index(shifted, self.first, self.b))
        return gep(self.view.base, opaque_copy(index), self.view.elem, self.b)


def in_loop_of(view: View) -> bool:
    """Whether the insertion point is inside an scf.for that `view`'s base and offset are
    defined outside of: a tile every iteration reads alike (attention's Q). Its anchors are
    then copied through volatile asm in the loop (`opaque_copy`), so LLVM keeps the anchors
    alive across the loop, not each anchor plus immediate (one register per ldmatrix)."""
    loop = ir.InsertionPoint.current.block.owner
    while loop is not None and loop.name != "scf.for":
        loop = loop.parent
    if loop is None:
        return False
    for v in (view.base, view.offset):
        if isinstance(v, int):
            continue
        owner = v.owner.owner if isinstance(v.owner, ir.Block) else v.owner
        while owner is not None:
            if owner == loop:
                return False
            owner = owner.parent
    return True

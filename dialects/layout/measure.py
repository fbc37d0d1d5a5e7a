"""The layout algebra's measures of a buffer: how many elements a (swizzled) layout reaches.

`span(L)` is `max(L(i) for i in range(size(L))) + 1`, the elements from index 0 a buffer laid
out by `L` must hold, computed from shapes, strides and the swizzle's bits instead of by
evaluating every index (a 128x64 swizzled tile is 8,192 evaluations; the GEMM compile made
229,376 of them).

A plain layout's span is one past its largest offset (its cosize when no stride is negative;
cosize counts the offsets from the smallest, negative ones included). A swizzle only permutes
offsets inside aligned blocks of P = 2^(B + M + |S|) elements (the bits above its yyy/zzz
fields pass through):

    offset:  | block (kept) | yyy | ... | zzz | mmm |      Sw<B,M,S>, S > 0
                            '------ P = 2^(B+M+S) ------'

so only the block of the largest offset hi decides the maximum. When the inner layout's image
is a run of consecutive offsets ending at that block's end, the maximum is hi itself (closed
form: the swizzle permutes the block onto itself); otherwise it is the largest swizzled offset
among the image's points in that block, which are found mode by mode, pruning every branch
that cannot reach the block (at most P points, not size(L)).

A negative stride reaches below 0: `extent(L)` is the buffer that holds every offset, from its
floor (the smallest offset, rounded down to the swizzle's period P) to the largest. The floor
is a multiple of P, so subtracting it commutes with the swizzle, sw(v - floor) = sw(v) - floor:
a view based at the buffer's start minus the floor puts `sw(L(c)) - floor` inside the buffer
and keeps each offset's position in its block (and so its bank and alignment):

    (64,64):(-64,1)    offsets -4032 .. 63     extent (-4032, 4096): base = start + 4032
"""

from __future__ import annotations

from tilec.dialects.layout.algebra import (
    ComposedLayout,
    Layout,
    LayoutError,
    Swizzle,
    flatten,
    is_static,
)


def _static_modes(x: Layout) -> list[tuple[int, int]]:
    if not (is_static(x.shape) and is_static(x.stride)):
        raise LayoutError(f"the span of {x} needs a static layout: it has dynamic (?) entries")
    return list(zip(flatten(x.shape), flatten(x.stride), strict=True))


def top(x: Layout) -> int:
    """One past the largest index a plain static layout reaches: 1 + sum((s-1) * d), d > 0."""
    return 1 + sum((s - 1) * d for s, d in _static_modes(x) if d > 0)


def bottom(x: Layout) -> int:
    """The smallest index a plain static layout reaches: sum((s-1) * d), d < 0."""
    return sum((s - 1) * d for s, d in _static_modes(x) if d < 0)


def image_is_run(x: Layout) -> bool:
    """Whether the indices `x` reaches are exactly 0..top(x)-1, with no holes.

    Sorted by stride, the modes (zero strides and extents of 1 add nothing) build the image
    one at a time: [0, R] plus copies shifted by d, 2d, ... stays a run iff d <= R + 1.
    """
    modes = sorted((d, s) for s, d in _static_modes(x) if s > 1 and d != 0)
    reach = 0
    for d, s in modes:
        if d < 0 or d > reach + 1:
            return False
        reach += (s - 1) * d
    return True


def swizzle_period(sw: Swizzle) -> int:
    """The aligned block a swizzle permutes inside: 2^(B + M + |S|) elements."""
    return 1 << (sw.bits + sw.base + abs(sw.shift))


def points_from(modes: list[tuple[int, int]], start: int, floor: int) -> set[int]:
    """The indices `start + sum(c_k * d_k)` (0 <= c_k < s_k over (s_k, d_k) in `modes`) that
    are at least `floor`; a branch whose largest reachable index is below it is cut."""
    if not modes:
        return {start} if start >= floor else set()
    (s, d), rest = modes[0], modes[1:]
    reach = sum((n - 1) * e for n, e in rest if e > 0)
    found: set[int] = set()
    for c in range(s):
        if start + c * d + reach >= floor:
            found |= points_from(rest, start + c * d, floor)
    return found


def swizzled_span(sw: Swizzle, offset: int, inner: Layout) -> int:
    """max(sw(offset + inner(i))) + 1: from hi's block only (see the module docstring)."""
    hi = offset + top(inner) - 1
    if sw.bits == 0:
        return hi + 1  # the identity
    period = swizzle_period(sw)
    block = hi - hi % period
    if (hi + 1) % period == 0 and image_is_run(inner) and offset <= block:
        return hi + 1  # hi's whole block is in the image: the swizzle permutes it onto itself
    modes = sorted(_static_modes(inner), key=lambda m: -abs(m[1]))  # big strides cut first
    return max(sw(x) for x in points_from(modes, offset, block)) + 1


def span(x: Layout | ComposedLayout) -> int:
    """max(x(i) for i in range(size(x))) + 1, from the algebra (see the module docstring)."""
    if isinstance(x, Layout):
        return top(x)
    if not isinstance(x.outer, Swizzle):
        raise LayoutError(f"the span of {x} is not defined here: only a swizzle may compose")
    return swizzled_span(x.outer, x.offset, x.inner)


def extent(x: Layout | ComposedLayout) -> tuple[int, int]:
    """(floor, n): floor <= x(i) < floor + n for every i, n the least such (module docstring).

    The floor is 0 unless an offset is negative: then it is the smallest offset, rounded down
    to a multiple of the swizzle's period when x is swizzled.
    """
    if isinstance(x, Layout):
        floor = min(0, bottom(x))
        return floor, top(x) - floor
    if not isinstance(x.outer, Swizzle):
        raise LayoutError(f"the extent of {x} is not defined here: only a swizzle may compose")
    period = swizzle_period(x.outer)
    floor = min(0, (x.offset + bottom(x.inner)) // period * period)
    return floor, swizzled_span(x.outer, x.offset - floor, x.inner)

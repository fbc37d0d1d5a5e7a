"""The CuTe layout algebra, part two: composition, complement, right and left inverses."""

from __future__ import annotations

from tilec.dialects.layout.core import (
    AnyLayout,
    ComposedLayout,
    Layout,
    LayoutLike,
    Swizzle,
    Tiler,
    _as_layout,
    _by_mode,
    _flat_modes,
    _from_modes,
    _on_inner,
    _require_static,
    coalesce,
    filter,
    make_layout,
)
from tilec.dialects.layout.int_tuple import (
    IntTuple,
    LayoutError,
    ceil_div,
    compact_col_major,
    flatten,
    is_tuple,
    product,
)

# ---------------------------------------------------------------------------------------------
# Composition
# ---------------------------------------------------------------------------------------------


def composition(lhs: AnyLayout | Swizzle | LayoutLike, rhs: Tiler) -> AnyLayout:
    """`(lhs o rhs)(c) = lhs(rhs(c))`, shaped like rhs; a tuple rhs composes mode by mode."""
    if isinstance(lhs, Swizzle):
        return ComposedLayout(lhs, 0, _as_layout(rhs))
    if isinstance(lhs, ComposedLayout):
        return _on_inner(lhs, lambda inner: composition(inner, rhs))
    lhs = _as_layout(lhs)
    if rhs is None:
        return lhs
    if is_tuple(rhs):
        return _by_mode("composition", lhs, rhs, composition)
    rhs = _as_layout(rhs)
    _require_static("composition", lhs, rhs)
    flat = _flat_modes(coalesce(lhs))

    digits: dict[int, int] = {}

    def compose(s: IntTuple, d: IntTuple) -> Layout:
        if is_tuple(s):
            return make_layout(*(compose(a, b) for a, b in zip(s, d, strict=True)))
        return _compose_mode(lhs, rhs, flat, s, d, digits)

    out = compose(rhs.shape, rhs.stride)
    _require_no_carry(lhs, rhs, flat, digits)
    return out


def _require_no_carry(
    lhs: Layout, rhs: Layout, flat: list[tuple[int, int]], digits: dict[int, int]
) -> None:
    """rhs's modes compose one by one and their results add, which is lhs o rhs only if lhs is
    linear across the sums: read lhs's bounded modes as the digits of a mixed-radix number; the
    largest digits rhs's modes put into one lhs mode must add up to less than its size, so no
    sum carries into the next mode (where lhs's stride jumps).

        lhs (3,2):(1,9), rhs (2,2):(1,2):  mode 3:1 gets digits 0..1 from 2:1 and 0,2 from 2:2
                                           1 + 2 = 3 carries: lhs(1 + 2) = 9, not 1 + 2
    """
    for i, top in digits.items():
        m, md = flat[i]
        if top >= m:
            raise LayoutError(
                f"composition of {lhs} with {rhs} is not defined: the modes of {rhs} reach "
                f"digits adding up to {top} in mode {m}:{md} of the left layout, so their "
                "offsets carry across its end (lhs is not linear there)"
            )


def _compose_mode(
    lhs: Layout,
    rhs: Layout,
    flat: list[tuple[int, int]],
    s: int,
    d: int,
    digits: dict[int, int],
) -> Layout:
    """lhs o s:d for one mode of rhs, against lhs's coalesced modes `flat` (CuTe's fold).

    The rhs mode reads lhs's indices 0, d, 2d, ..., (s-1)d. Walking lhs's modes left to right,
    a mode whose size divides the step is jumped over whole (the step shrinks by that size);
    a mode larger than the step holds ceil(m/d) of the s elements, and the rest continue in the
    next mode with step 1. lhs's last mode never ends, so it absorbs whatever is left: the
    linear extension CuTe uses. A negative d walks the same modes with negated strides.

        lhs (4,6,8,10):(2,3,5,7), rhs 6:12:
            4:2    12 = 4*3: jump over it, step 3
            6:3    step 3 in a mode of 6: 2 elements, stride 3*3 = 9; 3 left, step 1
            8:5    3 fit in a mode of 8: 3 elements, stride 5; done   ->  (2,3):(9,5)

    The preconditions are CuTe's: the step is a multiple of each mode it jumps or smaller
    than it (stride divisibility); where a mode holds fewer than what is left, that count
    divides what is left (shape divisibility). One is tilec's own: a step that does not divide
    the mode it lands in can only end there; CuTe carries on and returns a layout that is not
    lhs o rhs, e.g. (3,4):(1,5) o 4:2 is 0 2 6 10, CuTe's (2,2):(2,5) is 0 2 5 7.
    `digits` gathers, per lhs mode (its index in `flat`), the sum over rhs's modes of the
    largest digit each puts there, for _require_no_carry.
    """

    def fail(why: str) -> LayoutError:
        return LayoutError(f"composition of {lhs} with {rhs} is not defined: {why}")

    if d == 0:
        return Layout(s, 0)
    sign = 1 if d > 0 else -1
    *body, (_, last_d) = flat
    step, rest = abs(d), s
    taken: list[tuple[int, int]] = []
    for i, (m, md) in enumerate(body):
        if step % m == 0:
            step //= m
            continue
        if step > m:
            raise fail(
                f"stride {step} and mode {m}:{md} of the left layout: {step} is neither a "
                f"multiple of {m} nor less than it (stride divisibility condition)"
            )
        fit = ceil_div(m, step)
        if rest > fit and rest % fit:
            raise fail(
                f"shape {rest} and mode {m}:{md} of the left layout: at stride {step} the mode "
                f"holds {fit} elements and {fit} does not divide {rest} (shape divisibility "
                "condition)"
            )
        if rest > fit and m % step:
            raise fail(
                f"stride {step} does not divide mode {m}:{md} of the left layout, so only "
                f"{fit} of the {rest} elements fit in it and the rest cannot continue past it "
                "(CuTe's result here is not the composition)"
            )
        if rest > 1:
            n = min(fit, rest)
            taken.append((n, sign * step * md))
            digits[i] = digits.get(i, 0) + step * (n - 1)
            rest //= n
        step = 1
    if not taken:
        return Layout(rest, sign * step * last_d)
    if rest > 1:
        taken.append((rest, sign * step * last_d))
    return _from_modes(taken)


# ---------------------------------------------------------------------------------------------
# Complement and inverses
# ---------------------------------------------------------------------------------------------


def complement(x: LayoutLike, cotarget: IntTuple = 1) -> Layout:
    """The layout of the indices x does not reach, ordered, up to `cotarget` (its size if a tuple).

        x = 4:2, cotarget 24:   x covers 0 2 4 6          (span 8)
                                complement (2,3):(1,8)    0 1 | 0 8 16

    Defined only when x is injective and its sorted modes do not interleave.
    """
    x = _as_layout(x)
    _require_static("complement", x)
    target = product(cotarget)
    if target < 1:
        raise LayoutError(f"complement of {x} is not defined: cotarget {target} is not positive")
    shapes: list[int] = []
    strides: list[int] = []
    cur = 1
    for d, s in sorted((d, s) for s, d in _flat_modes(filter(x)) if d != 0):
        if d < 0:
            raise LayoutError(f"complement of {x} is not defined: negative stride {d}")
        if d < cur:
            raise LayoutError(
                f"complement of {x} is not defined: mode {s}:{d} starts inside the span {cur} "
                "of the modes with smaller stride (they overlap or interleave, so no layout "
                "fills the gaps)"
            )
        shapes.append(d // cur)
        strides.append(cur)
        cur = s * d
    shapes.append(ceil_div(target, cur))
    strides.append(cur)
    return _from_modes(list(zip(shapes, strides, strict=True)))


def right_inverse(x: LayoutLike) -> Layout:
    """The largest R with x(R(i)) == i: follow x's strides 1, s0, s0*s1, ... as far as they go.

    As in C++ CuTe, only positive strides continue the chain: `4:-1` reaches offset 1 only
    from coordinate -1, outside its domain, so its right inverse is `1:0`.
    """
    x = _as_layout(x)
    _require_static("right_inverse", x)
    flat = _flat_modes(coalesce(x))
    compact = flatten(compact_col_major(tuple(s for s, _ in flat)))
    modes: list[tuple[int, int]] = []
    cur = 1
    while True:
        hit = next((i for i, (s, d) in enumerate(flat) if d == cur and s > 1), None)
        if hit is None:
            break
        s, d = flat[hit]
        modes.append((s, compact[hit]))
        cur = s * d
    return _from_modes(modes)


def left_inverse(x: LayoutLike) -> Layout:
    """An L with L(x(i)) == i, built from x's modes in order of increasing stride (CuTe's).

    Each stride must be a multiple of the next smaller one (CuTe's left inverse divisibility
    condition): `(4,16):(3,8)` is injective, yet 8 is not a multiple of 3, so no layout
    inverts it.

        x = (4,2):(2,1):  by stride, 2:1 then 4:2
                          L = (1,2,4):(0,4,1)  ->  coalesced (2,4):(4,1)
    """
    x = _as_layout(x)
    _require_static("left_inverse", x)
    flat = _flat_modes(coalesce(x))
    prefix = flatten(compact_col_major(tuple(s for s, _ in flat)))
    order = sorted(range(len(flat)), key=lambda i: flat[i][1])
    shapes: list[int] = []
    strides: list[int] = [0]
    below = 1
    for i in order:
        d = flat[i][1]
        if d == 0:
            continue
        if d < 0:
            raise LayoutError(f"left_inverse of {x} is not defined: negative stride {d}")
        if d % below:
            raise LayoutError(
                f"left_inverse of {x} is not defined: stride {d} is not a multiple of the "
                f"next smaller stride {below} (left inverse divisibility condition)"
            )
        shapes.append(d // below)
        strides.append(prefix[i])
        below = d
    shapes.append(flat[order[-1]][0])
    return coalesce(Layout(tuple(shapes), tuple(strides)))

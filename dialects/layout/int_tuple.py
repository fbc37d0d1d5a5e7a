"""CuTe's int-tuples (the int_tuple.hpp of the layout algebra): ints, `?` and nested tuples."""

from __future__ import annotations

import math
from typing import TypeAlias


class LayoutError(ValueError):
    """An operation CuTe does not define, or malformed layout text (`col` is 1-based if known)."""

    def __init__(self, message: str, col: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.col = col


class _Dynamic:
    """The `?` entry of a shape or stride: a value known only at run time."""

    _instance: _Dynamic | None = None

    def __new__(cls) -> _Dynamic:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "?"


DYN = _Dynamic()

IntTuple: TypeAlias = "int | _Dynamic | tuple[IntTuple, ...]"
Coord: TypeAlias = "int | None | tuple[Coord, ...]"


# ---------------------------------------------------------------------------------------------
# Int-tuples: an int, or a tuple of int-tuples
# ---------------------------------------------------------------------------------------------


def is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def is_tuple(x: object) -> bool:
    return isinstance(x, tuple)


def flatten(t: IntTuple) -> tuple:
    """The leaves of `t`, left to right."""
    if not is_tuple(t):
        return (t,)
    return tuple(leaf for sub in t for leaf in flatten(sub))


def is_static(t: IntTuple) -> bool:
    return all(leaf is not DYN for leaf in flatten(t))


def product(t: IntTuple) -> int | _Dynamic:
    """The product of the leaves; dynamic if any leaf is."""
    leaves = flatten(t)
    return DYN if DYN in leaves else math.prod(leaves)


def congruent(a: IntTuple, b: IntTuple) -> bool:
    """Same tuple structure (the profile), leaves may differ."""
    if is_tuple(a) and is_tuple(b):
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b, strict=True))
    return not is_tuple(a) and not is_tuple(b)


def tuple_str(t: IntTuple | None) -> str:
    """CuTe's spelling: `(2,(3,4))`, no spaces; `_` for a slice wildcard."""
    if t is None:
        return "_"
    if is_tuple(t):
        return "(" + ",".join(tuple_str(x) for x in t) + ")"
    return repr(t) if t is DYN else str(t)


def tiler_str(t: object) -> str:
    """CuTe spelling of a tiler: a tuple that may hold layouts, ints and `_`."""
    if is_tuple(t):
        return "(" + ",".join(tiler_str(e) for e in t) + ")"
    return tuple_str(t) if t is None or is_int(t) or t is DYN else str(t)


def _mul(a: int | _Dynamic, b: int | _Dynamic) -> int | _Dynamic:
    return DYN if DYN in (a, b) else a * b


def compact_col_major(shape: IntTuple, start: int | _Dynamic = 1) -> IntTuple:
    """Strides of CuTe's `LayoutLeft`: the exclusive prefix product of the shape."""
    if not is_tuple(shape):
        return start
    strides = []
    for s in shape:
        strides.append(compact_col_major(s, start))
        for leaf in flatten(s):
            start = _mul(start, leaf)
    return tuple(strides)


def shape_div(a: IntTuple, b: IntTuple) -> IntTuple:
    """CuTe's `shape_div`: divide a shape by a size, rounding up where b is the larger.

    int / int:     a / b, defined when one divides the other (a / b rounds up to 1 or -1)
    tuple / tuple: mode by mode; the ranks must agree
    tuple / int:   b is used up from the left:   (4,5,6) / 40  ->  (1, 5/10, 6/2)  ->  (1,1,3)
    int / tuple:   a / product(b)
    """
    if is_tuple(a) and is_tuple(b):
        if len(a) != len(b):
            raise LayoutError(
                f"shape_div of {tuple_str(a)} by {tuple_str(b)} is not defined: "
                f"rank {len(a)} and rank {len(b)} differ"
            )
        return tuple(shape_div(x, y) for x, y in zip(a, b, strict=True))
    if is_tuple(a):
        out = []
        for x in a:
            out.append(shape_div(x, b))
            b = shape_div(b, x)
        return tuple(out)
    if is_tuple(b):
        return shape_div(a, product(b))
    if b == 0 or (a % b != 0 and (a == 0 or b % a != 0)):
        raise LayoutError(
            f"shape_div of {a} by {b} is not defined: neither divides the other "
            "(divisibility condition)"
        )
    if a % b == 0:
        return a // b
    return 1 if a * b > 0 else -1


def inner_product(a: IntTuple, b: IntTuple) -> int:
    """CuTe's `inner_product`: the sum of the products of matching leaves of congruent tuples."""
    if is_tuple(a) != is_tuple(b) or (is_tuple(a) and len(a) != len(b)):
        raise LayoutError(
            f"inner_product of {tuple_str(a)} and {tuple_str(b)} is not defined: "
            "they are not congruent"
        )
    if is_tuple(a):
        return sum(inner_product(x, y) for x, y in zip(a, b, strict=True))
    return a * b


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def idx2crd(idx: int, shape: IntTuple) -> IntTuple:
    """Colexicographic coordinate of `idx` in `shape`; the last mode takes what is left over."""
    if not is_tuple(shape):
        return idx
    crd = []
    for i, s in enumerate(shape):
        if i == len(shape) - 1:
            crd.append(idx2crd(idx, s))
            break
        n = product(s)
        crd.append(idx2crd(idx % n, s))
        idx //= n
    return tuple(crd)


def crd2idx(crd: IntTuple, shape: IntTuple, stride: IntTuple) -> int:
    """Inner product of a coordinate with the strides; an int coordinate is split colex first."""
    if is_tuple(crd):
        if not is_tuple(shape) or len(crd) != len(shape):
            raise LayoutError(
                f"coordinate {tuple_str(crd)} does not match shape {tuple_str(shape)}"
            )
        return sum(crd2idx(c, s, d) for c, s, d in zip(crd, shape, stride, strict=True))
    if is_tuple(shape):
        return crd2idx(idx2crd(crd, shape), shape, stride)
    return crd * stride

r"""Passes (lowered stage): a register tensor's spread over the threads and its TV layout.

What tile-distribute writes into a `!tile.frag` type and convert-tile-to-gpu reads back: a
spread is a blocked `Partition` (tile_fragments), an MMA's C (`MmaPartition`), a reduction
`(source, mode)` of either, or PLAIN (one element every thread holds). `tv_text` writes its
TV layout (thread × value → the tile's column-major index), `decode` reads one back,
`spread_of_type` reads a value's, `check` tells whether a lowered value is what its type
says. docs/tile-dialect.md has the four layouts with examples.
"""

from __future__ import annotations

from functools import cache

from mlir import ir

from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.text import parse_layout
from tilec.lowering import LoweringError
from tilec.lowering.tile_fragments import Deferred, Frag, Partition, Reduced
from tilec.lowering.tile_mma import AM, AN, MmaPartition
from tilec.lowering.tile_views import tensor_type

PLAIN = "plain"  # one element every thread holds
Part = Partition | MmaPartition
Spread = Part | tuple[Part, int] | str  # blocked / mma, (source, mode) reduced, PLAIN
UNDISTRIBUTED = "a register tensor without its thread–value layout: run tile-distribute first"


def single(typ: ir.Type) -> bool:
    """Whether a register-tensor type holds one element (lowered to a plain value)."""
    t = tensor_type(typ)
    return t is not None and A.size(t.layout) == 1


def by_e(part: Partition, strides: tuple[int, ...]) -> A.Layout:
    """e (mode m fastest, then the others in order) → the index `strides` give a coordinate."""
    return A.Layout(tuple(part.shape[k] for k in part.order), tuple(strides[k] for k in part.order))


def chunks(part: Partition) -> A.Layout:
    """thread × value → e: value v = j + V·i is element j of the thread's chunk i."""
    t, v, n = part.threads, part.vec, part.iters
    return A.Layout(((t,), (v, n)), ((v,), (1, v * t)))


@cache
def blocked_tv(part: Partition) -> A.Layout | None:
    """thread × value → column-major index of a blocked spread, as one layout: the chunks
    composed with e's order; None where that composition is not defined (a mode of 3 or 5
    that the threads' chunks cut across), and the TV layout stays `by_e o 0 o chunks`."""
    try:
        tv = A.composition(by_e(part, A.compact_col_major(part.shape)), chunks(part))
    except A.LayoutError:
        return None
    shape = tuple(tuple(A.flatten(A.shape(tv)[k])) for k in (0, 1))
    return A.Layout(shape, tuple(tuple(A.flatten(A.stride(tv)[k])) for k in (0, 1)))


def plain_tv(threads: int) -> str:
    return str(A.Layout(((threads,), (1,)), ((0,), (0,))))


def reduced_strides(block: tuple[int, ...], mode: int) -> tuple[int, ...]:
    """The reduced tile's column-major strides over `block`'s coordinates, `mode`'s 0."""
    reduced = tuple(1 if k == mode else s for k, s in enumerate(block))
    cm = A.compact_col_major(reduced)
    return tuple(0 if k == mode else cm[k] for k in range(len(block)))


@cache
def tv_text(spread: Spread, threads: int, single: bool = False) -> str:
    """The TV layout a spread's type carries; `single`: the tensor has one element (then a
    reduction's result is plain: every thread holds the one value)."""
    if spread == PLAIN or (single and isinstance(spread, tuple)):
        return plain_tv(threads)
    if isinstance(spread, tuple):
        part, mode = spread
        block = part.block if isinstance(part, MmaPartition) else part.shape
        strides = reduced_strides(tuple(block), mode)
        if isinstance(part, Partition) and blocked_tv(part) is None:
            return f"{by_e(part, strides)} o 0 o {chunks(part)}"
        return f"{A.Layout(tuple(block), strides)} o 0 o {tv_text(part, threads)}"
    if isinstance(spread, MmaPartition):
        return str(spread.tv)
    tv = blocked_tv(spread)
    if tv is None:
        return f"{by_e(spread, A.compact_col_major(spread.shape))} o 0 o {chunks(spread)}"
    return str(tv)


@cache
def decode(shape: tuple[int, ...], tv: str, threads: int) -> Spread:
    """The spread whose TV layout is `tv` on a tile of `shape` (ValueError if there is none):
    plain, blocked, an MMA's C (`shape` its block), or a reduction of a blocked or MMA one.
    Candidates are read off the text and kept if `tv_text` writes exactly `tv` for them."""
    if tv == plain_tv(threads):
        return PLAIN
    if " o " not in tv and (mma := mma_of(shape, tv) or mma_of(mma_block(tv), tv)) is not None:
        return mma  # an accumulator's type has the MMA's value shape, not its block
    outer = parse_layout(tv.split(" o 0 o ", 1)[0]) if " o 0 o " in tv else None
    zero = [k for k, d in enumerate(A.flatten(outer.stride)) if d == 0] if outer else []
    if len(zero) == 1:
        found = next((c for c in reductions(shape, tv, threads, outer, zero[0])), None)
        if found is None:
            raise ValueError(f"'{tv}' is not a reduced blocked or MMA spread")
        return found
    found = next((c for c in blocked(shape, threads) if tv_text(c, threads) == tv), None)
    if found is None:
        raise ValueError(f"'{tv}' is not a blocked spread of {shape} over {threads} threads")
    return found


def blocked(shape: tuple[int, ...], threads: int):  # noqa: ANN201
    """Every blocked spread of `shape` over `threads` (m along a mode of extent > 1)."""
    modes = [k for k, s in enumerate(shape) if s > 1] or list(range(len(shape)))
    for m in modes:
        for vec in (1, 2, 4, 8, 16):
            if shape[m] % vec == 0:
                yield Partition(shape, m, vec, threads)


def reductions(shape: tuple[int, ...], tv: str, threads: int, outer: A.Layout, z: int):  # noqa: ANN201
    """The reductions whose TV layout is `tv`: `R o 0 o TV` (R over the source block, TV the
    source's), or `by_e o 0 o chunks` (a blocked source whose TV is no single layout; by_e
    lists the source's modes in e's order, the zero stride the reduced one's)."""
    block = tuple(A.flatten(outer.shape))
    try:
        source = decode(block, tv.split(" o 0 o ", 1)[1], threads)
    except ValueError:
        source = None
    reduced = tuple(1 if k == z else e for k, e in enumerate(block))
    if isinstance(source, Partition | MmaPartition) and tv_text((source, z), threads) == tv:
        if reduced == shape:
            yield source, z
    for m in range(len(block)):  # block is in e's order: its mode 0 is the source's mode m
        order = [m] + [k for k in range(len(block)) if k != m]
        natural = [0] * len(block)
        for n, k in enumerate(order):
            natural[k] = block[n]
        mode = order[z]
        if tuple(1 if k == mode else e for k, e in enumerate(natural)) != shape:
            continue
        for part in blocked(tuple(natural), threads):
            if part.m == m and tv_text((part, mode), threads) == tv:
                yield part, mode


def mma_warps(tv: str) -> tuple[tuple[int, int], int, tuple[int, int]] | None:
    """((WM, WN), group, (TM, TN)) of an MMA's C layout `tv` (`atoms.tiled_c`: threads
    (lanes, WM, WN) or, interleaved, (lanes, group, WM/group, WN); values (atom values, TM,
    TN)), or None where `tv` has neither form."""
    try:
        threads, values = A.shape(parse_layout(tv))
    except (A.LayoutError, TypeError, ValueError):
        return None
    if not (isinstance(threads, tuple) and isinstance(values, tuple)) or len(values) != 4:
        return None
    if len(threads) == 4:
        return (threads[2], threads[3]), 1, (values[2], values[3])
    if len(threads) == 5:
        return (threads[2] * threads[3], threads[4]), threads[2], (values[2], values[3])
    return None


def mma_block(tv: str) -> tuple[int, ...]:
    """The block an MMA's C layout `tv` covers (warps × tiles × atom, per mode), or ()."""
    found = mma_warps(tv)
    if found is None:
        return ()
    (wm, wn), _, (tm, tn) = found
    return (wm * tm * AM, wn * tn * AN)


def mma_of(block: tuple[int, ...], tv: str) -> MmaPartition | None:
    """The tiled MMA whose C layout on `block` is `tv` (atoms.tiled_c), or None."""
    found = mma_warps(tv)
    if len(block) != 2 or found is None:
        return None
    warps, group, (tm, tn) = found
    if (warps[0] * tm * AM, warps[1] * tn * AN) != block:
        return None
    part = MmaPartition((block[0], block[1]), warps, group=group)
    return part if str(part.tv) == tv else None


def spread_of_type(op: ir.Operation, value: ir.Value, threads: int) -> Spread:
    """A register tensor's spread, read from its `!tile.frag` type (a located error if it has
    none, or one that is not blocked, reduced or plain)."""
    t = tensor_type(value.type)
    if t is None or t.tv is None:
        raise LoweringError(op, UNDISTRIBUTED)
    try:
        return decode(tuple(A.flatten(A.shape(t.layout))), t.tv, threads)
    except ValueError as err:
        raise LoweringError(op, str(err)) from None


def check(op: ir.Operation, value: ir.Value, lowered: object, threads: int) -> None:
    """That convert-tile-to-gpu built `value` (as `lowered`: a Frag, Deferred, Reduced or
    plain ir.Value) as its type says: an internal check that keeps the types true."""
    t = tensor_type(value.type)
    if t is None or t.space != "register":
        return
    if isinstance(lowered, Reduced):
        spread: Spread = (lowered.part, lowered.mode)
    elif isinstance(lowered, Frag | Deferred):
        spread = lowered.part
    elif isinstance(lowered, ir.Value):
        spread = PLAIN
    else:
        return
    written = tv_text(spread, threads, single(value.type))
    if t.tv != written:
        raise LoweringError(op, f"lowered as {written}, but its type says {t.tv}")


def undistributed_result(op: ir.Operation) -> bool:
    """Whether one of `op`'s results is a register tensor without its TV layout (only tile ops
    and loops make tile tensors)."""
    if not op.name.startswith("tile.") and op.name != "scf.for":
        return False
    for r in op.results:
        t = tensor_type(r.type)
        if t is not None and t.space == "register" and t.tv is None:
            return True
    return False

"""Frontend (check stage): resource limits checked before any work, so that no tile too large for
the machine reaches a pass that spells it out value by value: a register tensor's bytes a
thread (tilec.targets.REGISTER_TILE_BYTES), a copy's bytes, a static grid's blocks."""

from __future__ import annotations

import math

from tilec import layout as L
from tilec import targets
from tilec.diagnostics import Span
from tilec.frontend.atoms import ATOMS
from tilec.frontend.types import SCALAR_TYPES
from tilec.frontend.values import IntV, TensorV, V


def values_a_thread(t: TensorV, threads: int) -> tuple[int, int] | None:
    """(values a thread holds, over how many threads) of a register tensor with a static
    shape: an MMA fragment's part exactly; a tile the compiler spreads at least its size over
    the kernel's threads (tile-distribute rounds up to whole chunks and checks it again)."""
    shape = t.logical_shape
    if not L.is_static(shape):
        return None
    if t.mma is not None and not t.mma_rows:
        return L.size(t.layout), ATOMS[t.mma.atom].threads * math.prod(t.mma.tiling)
    return -(-L.product(shape) // threads), threads


def check_register(c, value: V, span: Span) -> V:  # noqa: ANN001 (an ExprChecker)
    """`value`, or an error at `span` if it is a register tensor no thread's registers hold."""
    if not isinstance(value, TensorV) or value.space != "register":
        return value
    counted = values_a_thread(value, math.prod(c.threads))
    if counted is None:
        return value
    shape = value.logical_shape
    tile = f"{value.elem}[{L.tuple_str(shape if isinstance(shape, tuple) else (shape,))}]"
    why = targets.register_refusal(tile, SCALAR_TYPES[value.elem][1], *counted)
    return value if why is None else c.error(why, span)


def check_copy(c, src: TensorV, span: Span) -> bool:  # noqa: ANN001 (an ExprChecker)
    """Whether a copy of `src` moves no more bytes than a block's shared memory holds on the
    kernel's target (its every thread's part is unrolled), else False after an error."""
    shape = L.shape(src.layout)
    if not L.is_static(shape):
        return True
    nbytes = L.product(shape) * SCALAR_TYPES[src.elem][1]
    limit = targets.smem_optin(c.target)
    if nbytes <= limit or c.target is None:  # no target: an error of its own already
        return True
    shape = shape if isinstance(shape, tuple) else (shape,)
    c.error(
        f"copy of {src.elem}[{L.tuple_str(shape)}] moves {nbytes} bytes; a copy moves at most "
        f"the shared memory of a block ({limit} bytes on {c.target}): copy smaller tiles "
        "in a loop",
        span,
    )
    return False


def check_grid(c, axis: int, size: IntV, span: Span) -> None:  # noqa: ANN001 (a Clauses)
    """A static grid size out of CUDA's range (1 to MAX_GRID along its axis) is an error."""
    top = targets.MAX_GRID[min(axis, len(targets.MAX_GRID) - 1)]
    if size.static and not 1 <= size.value <= top:
        c.diags.error(
            f"grid size {size.value} along {'xyz'[min(axis, 2)]}: a launch has 1 to {top} "
            "blocks there",
            span,
        )

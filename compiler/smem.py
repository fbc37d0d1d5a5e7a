"""Every stage: the one shared-memory planner — what a buffer, its stages and a kernel take.

The frontend's budget check (sema), the pipelining pass (its stage stride and how many stages
fit), the views' allocation (tile_shared.alloc_shared), outline-tile-kernels (offsets inside
the dynamic array) and the SM90 ring all ask here, so they cannot disagree:

    buffer      extent(L) = (floor, elems): the offsets L reaches, from the algebra
    stage       stride(L) = elems rounded up to the swizzle's period and to STAGE_ALIGN bytes,
                so a stage offset passes through the swizzle and is a base-pointer offset
    S stages    (S - 1) * stride + elems elements (the last stage needs only its own)
    reuse       a buffer declared `reuse = other` lives in other's memory when it fits in all
                of other's stages, and takes memory of its own otherwise
    dynamic     beyond STATIC_SMEM a kernel's buffers move into one dynamic array, each at an
                offset rounded up to DYNAMIC_ALIGN bytes
    ring        an SM90 warp-specialised kernel's TMA ring: per stage one slot per buffer,
                each slot rounded up to SLOT_ALIGN; then the once ring's stages (buffers
                loaded once a tile), the epilogue's bytes, a full and an empty mbarrier per
                stage of each, and SLOT_ALIGN of slack to align the base

Pure Python on `tilec.layout` values: no MLIR, so the checker and the passes share it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilec.dialects.layout import algebra as A
from tilec.dialects.layout.measure import extent as measured_extent
from tilec.dialects.layout.measure import swizzle_period

# A stage starts on a multiple of 128 bytes (and of its swizzle's period).
STAGE_ALIGN = 128
# Offsets of buffers inside the dynamic array: 128 bytes keeps every buffer (and each swizzle
# period of it) on the alignment a static 16-byte-aligned global would have, and more.
DYNAMIC_ALIGN = 128
# The 128-byte swizzle's period: TMA and wgmma address a ring slot from a multiple of it.
SLOT_ALIGN = 1024
BARRIER_BYTES = 8  # one mbarrier


def align_up(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def extent(layout: A.Layout | A.ComposedLayout) -> tuple[int, int]:
    """(floor, elements) of a buffer laid out by `layout`: it holds the offsets from floor (0,
    or below 0 where a stride is negative) to the largest. LayoutError for a layout with
    runtime entries or composed with anything but a swizzle."""
    inner = layout.inner if isinstance(layout, A.ComposedLayout) else layout
    if not A.is_static(inner.shape) or not A.is_static(inner.stride):
        raise A.LayoutError(f"shared buffer layout {layout} must be static")
    if isinstance(layout, A.ComposedLayout) and not isinstance(layout.outer, A.Swizzle):
        raise A.LayoutError(f"shared layout {layout}: only a swizzle may compose")
    return measured_extent(layout)


def stage_stride(layout: A.Layout | A.ComposedLayout, elem_bytes: int) -> int:
    """Elements from one stage of a pipelined buffer to the next.

    Sw<2,3,3> o 0 o (128,32):(32,1), f16  ->  4096 (its 4096 elements, a multiple of 64)
    """
    period = STAGE_ALIGN // max(1, elem_bytes)
    if isinstance(layout, A.ComposedLayout) and isinstance(layout.outer, A.Swizzle):
        period = max(period, swizzle_period(layout.outer))
    return align_up(extent(layout)[1], period)


def staged_elems(elems: int, stride: int, stages: int) -> int:
    """Elements of `stages` copies of a buffer of `elems`, one every `stride`."""
    return elems if stages <= 1 else (stages - 1) * stride + elems


@dataclass(frozen=True)
class Buffer:
    """A kernel's shared buffer as the planner sees it: its bytes (all stages) and whether it
    is declared to reuse another's memory (by name)."""

    name: str
    nbytes: int
    reuse: str | None = None


def aliased(buf: Buffer, owner: Buffer | None) -> bool:
    """Whether `buf` lives in the memory of the buffer it reuses (it fits there)."""
    return owner is not None and buf.nbytes <= owner.nbytes


def kernel_bytes(buffers: list[Buffer]) -> int:
    """The shared memory a kernel's buffers take: each once, aliased ones not at all."""
    by_name = {b.name: b for b in buffers}
    return sum(
        b.nbytes for b in buffers if not (b.reuse is not None and aliased(b, by_name.get(b.reuse)))
    )


def dynamic_offsets(sizes: list[tuple[str, int]]) -> tuple[dict[str, int], int]:
    """Offsets of buffers (name, bytes) packed in order into one dynamic array, and its end."""
    offsets: dict[str, int] = {}
    end = 0
    for name, nbytes in sizes:
        offsets[name] = end
        end += align_up(nbytes, DYNAMIC_ALIGN)
    return offsets, end


def ring_slot_bytes(nbytes: int) -> int:
    """Bytes one buffer's slot takes in each stage of an SM90 ring."""
    return align_up(nbytes, SLOT_ALIGN)


def ring_bytes(
    stages: int, stage_bytes: int, epilogue_bytes: int, once: tuple[int, int] = (0, 0)
) -> int:
    """The whole SM90 ring: stages, the once ring's `once` = (stages, bytes a stage: buffers
    loaded once a tile, lowering/sm90_plan), the epilogue's buffer, 2 mbarriers a stage of
    each, base slack."""
    once_stages, once_bytes = once
    barriers = 2 * (stages + once_stages) * BARRIER_BYTES
    return stages * stage_bytes + once_stages * once_bytes + epilogue_bytes + barriers + SLOT_ALIGN


# The SM90 epilogue's shared chunks (lowering/sm90_epilogue): per consumer warp group, BUFFERS
# chunks of 64 rows of one 128-byte swizzle row each.
EPILOGUE_CHUNK_BYTES = 64 * 128
EPILOGUE_BUFFERS = 2


def epilogue_bytes(consumer_groups: int) -> int:
    """The SM90 epilogue's chunks: taken when the consumers store one 16-bit tile of a kernel
    tensor through TMA (tile-ring's default `epilogue=tma`), else 0."""
    return consumer_groups * EPILOGUE_BUFFERS * EPILOGUE_CHUNK_BYTES


def ring_total(
    slot_bytes: list[int], stages: int, epilogue: int, once: tuple[int, list[int]] = (0, [])
) -> int:
    """ring_bytes of a ring whose buffers take `slot_bytes` each in one stage, and whose tile
    ring's `once` = (stages, its buffers' bytes)."""
    once_bytes = sum(ring_slot_bytes(n) for n in once[1])
    stage = sum(ring_slot_bytes(n) for n in slot_bytes)
    return ring_bytes(stages, stage, epilogue, (once[0] if once[1] else 0, once_bytes))

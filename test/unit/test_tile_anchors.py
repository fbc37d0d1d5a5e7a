"""Unit: `tile_anchors`, the ldmatrix rows as anchors plus immediates, against the layout
algebra: for attention's D = 128 tiles (a nested K mode) and every lane coordinate below 16,
the address of each step is its anchor's swizzled index plus the step's immediate."""

from __future__ import annotations

import pytest

from tilec.dialects.layout import algebra as A
from tilec.lowering.tile_anchors import step_offset
from tilec.lowering.tile_modes import Nest

SW = A.Swizzle(3, 3, 3)
TOP = 1 << (3 + 3 + 3)


def index(layout: A.Layout, r: int, k: int) -> int:
    """swizzle(layout(r, k)): the element the lowering's full index computes."""
    return SW(layout((r, k)))


@pytest.mark.parametrize("rows", [64, 128])
def test_steps_are_anchor_plus_immediate(rows: int) -> None:
    # (rows, (64, 2)):(64, (1, 64 rows)): a D = 128 operand tile, as attention's sQ / sK
    layout = A.Layout((rows, (64, 2)), (64, (1, 64 * rows)))
    row_stride, k_stride = 64, Nest((64, 2), (1, 64 * rows))
    for r in range(16):
        for k in range(16):
            for dr in range(0, rows, 16):
                for dk in range(0, 128, 16):
                    d = step_offset(row_stride, dr, 16) + step_offset(k_stride, dk, 16)
                    low = d % TOP
                    u = layout((r, k))
                    assert index(layout, r + dr, k + dk) == SW(u + low) + (d - low)


def test_nested_step_refused_where_a_lane_would_carry() -> None:
    # first extent 8 is not a multiple of the granule 16: a lane's 8..15 carries
    assert step_offset(Nest((8, 16), (1, 64)), 16, 16) is None
    assert step_offset(Nest((64, 2), (1, 4096)), 8, 16) is None  # not a whole granule
    assert step_offset(Nest((64, 2), (1, 4096)), 80, 16) == 4096 + 16
    assert step_offset(32, 3, 16) == 96

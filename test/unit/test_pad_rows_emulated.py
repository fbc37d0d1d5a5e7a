"""examples/pad_rows.tile (tilec.ops.gemm's row copy: rows of any 2-byte-aligned start copied to
rows 16 bytes apart) run on the CPU by sm90_emu, its `gpu` stage lane by lane: the skewed 16-byte
loads (predicated vector loads, the `prmt` barrel shifter, the funnel shift), the ragged last
tile, the 16-byte stores; against the source, bit for bit, the destination's gap never written.
A byte shift left out (the emulator's funnel shift returning its low word) fails every row that
starts off a 16-byte boundary here."""

from __future__ import annotations

import numpy as np
import pytest
from sm90_emu import Tensor, example, run


@pytest.mark.parametrize("params", [{}, {"COLS": "1024", "THREADS": "128", "T": "f16"}])
@pytest.mark.parametrize(
    ("rows", "n", "ld", "offset"),
    [(3, 77, 77, 0), (2, 1001, 1001, 0), (2, 1025, 1027, 8), (5, 1, 1, 0), (2, 2048, 2048, 0),
     (3, 2050, 2057, 16)],
)  # fmt: skip
def test_rows_are_copied_to_16_byte_rows(
    params: dict[str, str], rows: int, n: int, ld: int, offset: int
) -> None:
    rng = np.random.default_rng(rows * n + ld)
    dtype = params.get("T", "bf16")
    # the source ends at the 16-byte block of its last element (memory past it faults here)
    values = rng.standard_normal(-(-(offset + rows * ld) // 8) * 8).astype(np.float32)
    bits = values.astype(np.float16).view(np.uint16) if dtype == "f16" else (
        values.view(np.uint32) >> 16).astype(np.uint16)  # fmt: skip
    x = bits[offset : offset + rows * ld].reshape(rows, ld)[:, :n]
    padded = np.full((rows, -(-n // 8) * 8), 0xFFFF, dtype=np.uint16)  # NaN-poisoned
    y = padded[:, :n]
    run(example("pad_rows", **params), (Tensor(x, dtype), Tensor(y, dtype)))
    assert np.array_equal(y, x)
    assert (padded[:, n:] == 0xFFFF).all()  # the gap is not written

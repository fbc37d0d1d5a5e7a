"""Test helpers: what the SM90 hardware does with the values a kernel computes, written from
the PTX ISA (and CUTLASS's canonical GMMA layouts), never from the compiler: the swizzle of a
shared address, where each element of a TMA box lands, which shared bytes a wgmma matrix
descriptor denotes, and which (row, column) each register of wgmma's D fragment holds."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np
from mlir import ir

from tilec.dialects.tile.atoms import wgmma_c
from tilec.runtime.binding import tma_encode_args
from tilec.runtime.params import TmaDescriptor
from tilec.runtime.tensors import TensorView

SWIZZLE_BITS = {"NONE": 0, "32B": 1, "64B": 2, "128B": 3}
DESCRIPTOR_MODES = {0: 0, 1: 128, 2: 64, 3: 32}  # bits 62-63 -> swizzle bytes (0: none)


def swizzled(address: np.ndarray | int, bits: int) -> np.ndarray | int:
    """A shared byte address as the 32/64/128-byte swizzles place it: bits 4.. (the 16-byte
    unit in a 128-byte row) xor'ed with bits 7.. (the row in 8 rows of 128 bytes)."""
    return address ^ (((address >> 7) & ((1 << bits) - 1)) << 4)


class MisalignedBox(AssertionError):
    """A TMA box the hardware faults on: its innermost coordinate not 16-byte aligned."""


@dataclass(frozen=True)
class TensorMap:
    """A tiled tensor map as the runtime encodes it (`tma_encode_args`): dims, box and the
    tensor mode of each map dimension, innermost first."""

    dims: tuple[int, ...]
    box: tuple[int, ...]
    modes: tuple[int, ...]
    elem: int
    swizzle: str

    @staticmethod
    def of(d: TmaDescriptor, shape: tuple[int, ...], strides: tuple[int, ...], dtype: str,
           symbols: dict[str, int]) -> TensorMap:  # fmt: skip
        view = TensorView(0, shape, strides, dtype, "device")
        encoded = tma_encode_args(d, view, symbols)
        rank = len(shape)
        modes = tuple(d.order) if d.order is not None else tuple(reversed(range(rank)))
        elem = {"f16": 2, "bf16": 2, "f32": 4}[dtype]
        box = tuple(encoded["box_dim"])
        return TensorMap(tuple(encoded["global_dim"]), box, modes, elem, encoded["swizzle"])

    @property
    def box_bytes(self) -> int:
        return int(np.prod(self.box)) * self.elem

    def box_elements(self, coords: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """(tensor index per box element, [n, rank] in the tensor's mode order; its byte offset
        from the box's shared start before the swizzle)."""
        grids = np.meshgrid(*[np.arange(b) for b in self.box], indexing="ij")
        flat = [g.reshape(-1) for g in grids]  # map dimension d of each element
        linear = np.zeros_like(flat[0])
        for d in reversed(range(len(self.box))):
            linear = linear * self.box[d] + flat[d]
        index = np.zeros((flat[0].size, len(self.box)), dtype=np.int64)
        for d, mode in enumerate(self.modes):
            index[:, mode] = coords[d] + flat[d]
        return index, linear * self.elem

    def writes(self, coords: list[int], dst: int) -> tuple[np.ndarray, np.ndarray]:
        """(tensor index, shared byte address) of each element a load of the box at `coords`
        (innermost first) into `dst` writes. A box whose innermost coordinate is not a multiple
        of 16 bytes is refused, as the hardware refuses it (an illegal-instruction fault on the
        H100, though the map's base and strides are aligned: triton-lang/triton#7385, and a
        row-wise TMA design of ours that this model let through, 2026-12-07)."""
        if coords[0] * self.elem % 16:
            raise MisalignedBox(f"a TMA box at innermost coordinate {coords[0]} ({self.elem}-byte "
                                "elements): not a multiple of 16 bytes")  # fmt: skip
        index, offset = self.box_elements(coords)
        return index, swizzled(dst + offset, SWIZZLE_BITS[self.swizzle])


@dataclass(frozen=True)
class Descriptor:
    """A wgmma matrix descriptor's fields (PTX ISA, "Matrix Descriptor Format"): the start,
    leading and stride byte offsets (stored >> 4), the base offset, the swizzle mode."""

    start: int
    leading: int
    stride: int
    base_offset: int
    swizzle: int  # bytes: 128, 64, 32, or 0 for none

    @staticmethod
    def decode(x: int) -> Descriptor:
        x %= 1 << 64
        field = lambda lo, bits: (x >> lo) & ((1 << bits) - 1)  # noqa: E731
        return Descriptor(
            field(0, 14) << 4, field(16, 14) << 4, field(32, 14) << 4, field(49, 3),
            DESCRIPTOR_MODES[field(62, 2)],
        )  # fmt: skip

    def addresses(self, rows: int, k: int, elem: int, mn_major: bool) -> np.ndarray:
        """[rows, k]: the shared byte address of operand element (row, k), rows along M (N).

        CUTLASS's canonical layouts in elements, T = 16 bytes of elements, W the swizzle:
          K-major:  ((8, m), (T, 2)) : ((W, SBO), (1, T))     the rows W bytes apart
          MN-major: ((T, W/16, m), (8, k)) : ((1, T, LBO), (W, SBO))
        then the swizzle of the address."""
        assert self.swizzle and self.base_offset == 0, self
        r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
        w = self.swizzle
        if mn_major:
            per_row = w // elem
            pre = (r % per_row) * elem + (r // per_row) * self.leading
            pre = pre + (kk % 8) * w + (kk // 8) * self.stride
        else:
            assert k * elem <= w, "one wgmma's K fits in a swizzled row"
            pre = (r % 8) * w + (r // 8) * self.stride + kk * elem
        return swizzled(self.start + pre, SWIZZLE_BITS[f"{w}B"])


_SHAPE = re.compile(r"m = (\d+), n = (\d+), k = (\d+)")


@dataclass(frozen=True)
class Wgmma:
    """One `nvvm.wgmma.mma_async` as the hardware reads it: its shape and which operands are
    MN-major (the transpose bits: A `col`, B `row`)."""

    m: int
    n: int
    k: int
    a_mn_major: bool
    b_mn_major: bool

    @staticmethod
    def of(op: ir.Operation) -> Wgmma:
        m, n, k = (int(x) for x in _SHAPE.search(str(op.attributes["shape"])).groups())
        a = str(op.attributes["layoutA"]).endswith("<col>")
        b = str(op.attributes["layoutB"]).endswith("<row>")
        return Wgmma(m, n, k, a, b)


@functools.cache
def d_fragment(n: int) -> np.ndarray:
    """[128 threads, n / 2 registers] -> (row, column) in the 64 x n tile of wgmma's D, as
    `tilec.dialects.tile.atoms.wgmma_c` (which test_tile_mma checks against the PTX ISA): a
    layout's image is the sum of its thread mode's and its value mode's."""
    tv = wgmma_c(n)
    threads = np.array([tv(t, 0) for t in range(128)])
    values = np.array([tv(0, v) for v in range(n // 2)])
    index = threads[:, None] + values[None, :]
    assert index[5, n // 2 - 1] == tv(5, n // 2 - 1)
    return np.stack([index % 64, index // 64], axis=-1)

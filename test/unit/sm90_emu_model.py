"""Test helper (sm90_emu): the machine state an emulated SM90 block has besides its registers:
values not yet computed (a wgmma accumulator until its group retires), 16-bit floats, global
and shared memory, mbarriers, tensor maps; and what the asynchronous units compute, with
sm90_model's placements (PTX ISA): a wgmma from its matrix descriptors (and A's registers, the
m16n8k16 A fragment in each warp), a TMA box loaded or stored."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sm90_model import Descriptor, TensorMap, d_fragment

WARPGROUP = 128
SHARED_BASE = 0x410  # a shared window that starts 16-byte but not 1024-byte aligned
GLOBAL = 1 << 40  # kernel tensor k lives at (k + 1) << 40; tensor map k at (64 + k) << 40


class EarlyRead(AssertionError):
    """A wgmma accumulator read before `wait_group` retired its group."""


class Deadlock(AssertionError):
    """Every warp group waits and none can go on."""


# Values ------------------------------------------------------------------------------------


@dataclass
class Pending:
    """Register `index` of a wgmma's accumulator struct, until its group retires."""

    mma: Mma
    index: int

    def get(self) -> np.ndarray:
        if self.mma.out is None:
            raise EarlyRead(
                f"an accumulator register of a wgmma {self.mma.kind} m64n{self.mma.n} read "
                "before its group retired (wgmma.wait_group)"
            )
        return self.mma.out[self.index]


@dataclass
class Mma:
    """One wgmma: its inputs as captured at issue, its output once retired."""

    kind: str  # "ss" or "rs"
    m: int
    n: int
    k: int
    elem: str  # f16 | bf16
    acc: list  # the input accumulator: arrays or Pending
    a: object  # SS: descriptor (int); RS: four i32 register arrays
    b: int  # B's descriptor
    tnsp: tuple[bool, bool]  # A, B MN-major
    out: list[np.ndarray] | None = None

    def __repr__(self) -> str:
        return f"Mma({self.kind}, m{self.m}n{self.n}k{self.k}, retired={self.out is not None})"


def uniform(x: object, mask: np.ndarray) -> int:
    arr = np.broadcast_to(np.asarray(x), mask.shape)[mask]
    assert (arr == arr[0]).all(), f"expected one value in every active lane, got {set(arr)}"
    return int(arr[0])


def resolve(v: object) -> object:
    if isinstance(v, Pending):
        return v.get()
    if isinstance(v, list):
        return [resolve(x) for x in v]
    return v


# Types -------------------------------------------------------------------------------------


def elem_size(t: str) -> int:
    if t.startswith("vector<"):
        n, e = re.fullmatch(r"vector<(\d+)x(\w+)>", t).groups()
        return int(n) * elem_size(e)
    return {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4,
            "index": 8}.get(t, 8)  # fmt: skip


def bf16_round(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to bf16 (nearest even), kept as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def to_bits16(x: np.ndarray, elem: str) -> np.ndarray:
    if elem == "f16":
        return np.asarray(x, dtype=np.float16).view(np.uint16).astype(np.int64)
    return (bf16_round(x).view(np.uint32) >> 16).astype(np.int64)


def from_bits16(bits: np.ndarray, elem: str) -> np.ndarray:
    bits = np.asarray(bits, dtype=np.int64) & 0xFFFF
    if elem == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def wrap(x: np.ndarray, t: str) -> np.ndarray:
    """Integers of type `t` wrapped to their width (two's complement)."""
    width = {"i1": 1, "i8": 8, "i16": 16, "i32": 32}.get(t)
    if width is None:
        return x
    if width == 1:
        return np.asarray(x) & 1
    x = np.asarray(x, dtype=np.int64) & ((1 << width) - 1)
    return np.where(x >= 1 << (width - 1), x - (1 << width), x)


# Memory ------------------------------------------------------------------------------------


@dataclass
class Memory:
    """Global memory (one byte buffer per kernel tensor, by its address's high bits) and one
    block's shared memory."""

    buffers: dict[int, np.ndarray]  # tensor index -> bytes (the tensor's underlying storage)
    shared: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint8))

    def where(self, address: int) -> tuple[np.ndarray, int]:
        if address < GLOBAL:
            return self.shared, address
        return self.buffers[(address >> 40) - 1], address & (GLOBAL - 1)

    def read(self, address: int, size: int) -> bytes:
        buf, at = self.where(int(address))
        assert 0 <= at and at + size <= len(buf), f"read out of bounds at {address:#x}"
        return bytes(buf[at : at + size])

    def write(self, address: int, data: bytes) -> None:
        buf, at = self.where(int(address))
        assert 0 <= at and at + len(data) <= len(buf), f"write out of bounds at {address:#x}"
        buf[at : at + len(data)] = np.frombuffer(data, dtype=np.uint8)


def encode(value: np.ndarray, t: str) -> bytes:
    """One lane's value of type `t` as bytes."""
    if t.startswith("vector<"):
        n, e = re.fullmatch(r"vector<(\d+)x(\w+)>", t).groups()
        return b"".join(encode(value[i], e) for i in range(int(n)))
    if t in ("f16", "bf16"):
        return int(to_bits16(np.asarray([value]), t)[0]).to_bytes(2, "little")
    if t == "f32":
        return np.float32(value).tobytes()
    return (int(value) & ((1 << (8 * elem_size(t))) - 1)).to_bytes(elem_size(t), "little")


def decode(data: bytes, t: str) -> object:
    if t.startswith("vector<"):
        n, e = re.fullmatch(r"vector<(\d+)x(\w+)>", t).groups()
        s = elem_size(e)
        return np.array([decode(data[i * s : (i + 1) * s], e) for i in range(int(n))])
    if t in ("f16", "bf16"):
        return float(from_bits16(np.asarray([int.from_bytes(data, "little")]), t)[0])
    if t == "f32":
        return float(np.frombuffer(data, dtype=np.float32)[0])
    return int(wrap(np.asarray([int.from_bytes(data, "little")]), t)[0])


# Barriers ----------------------------------------------------------------------------------


@dataclass
class MBarrier:
    count: int
    pending: int
    tx: int = 0
    parity: int = 0

    def arrive(self, n: int = 1, tx: int = 0) -> None:
        self.pending -= n
        self.tx += tx
        self.settle()

    def complete(self, nbytes: int) -> None:
        self.tx -= nbytes
        self.settle()

    def settle(self) -> None:
        assert self.pending >= 0, "more arrivals than the barrier's count in one phase"
        if self.pending == 0 and self.tx == 0:
            self.parity ^= 1
            self.pending = self.count


@dataclass
class Mapped:
    """A tensor map as the runtime encodes it (sm90_model.TensorMap) over kernel tensor
    `index` of `shape` and element `strides` (which place a box's elements in memory), its
    first element `at` bytes into the tensor's buffer (a view: `kv[:, 1]`)."""

    tmap: TensorMap
    index: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    at: int = 0


# wgmma -------------------------------------------------------------------------------------


def operand(memory: Memory, desc: int, rows: int, mn_major: bool, elem: str) -> np.ndarray:
    """[rows, 16] elements of a shared operand through its matrix descriptor
    (sm90_model.Descriptor: CUTLASS's canonical layouts, the swizzle)."""
    address = Descriptor.decode(desc).addresses(rows, 16, 2, mn_major)
    lo = memory.shared[address].astype(np.int64)
    hi = memory.shared[address + 1].astype(np.int64)
    return from_bits16(lo | (hi << 8), elem)


def fragment_a(regs: list[np.ndarray], elem: str) -> np.ndarray:
    """[64, 16] A of one warp group from its registers: per warp, the m16n8k16 A fragment of
    its 16 rows (a0a1: row g, k 2t..; a2a3: row g+8; a4a5: row g, k 2t+8..; a6a7: row g+8)."""
    out = np.full((64, 16), np.nan, dtype=np.float32)
    lane = np.arange(WARPGROUP)
    w, g, t = lane // 32, lane % 32 // 4, lane % 4
    for i, (dr, dk) in enumerate([(0, 0), (8, 0), (0, 8), (8, 8)]):
        bits = np.asarray(regs[i], dtype=np.int64)
        for half in (0, 1):
            value = from_bits16(bits >> (16 * half), elem)
            out[16 * w + g + dr, 2 * t + half + dk] = value
    return out


def run_mma(memory: Memory, mma: Mma) -> None:
    acc = np.array([np.broadcast_to(np.asarray(resolve(x), dtype=np.float32), (WARPGROUP,))
                    for x in mma.acc]).T  # fmt: skip
    if mma.kind == "ss":
        a = operand(memory, int(mma.a), 64, mma.tnsp[0], mma.elem)
    else:
        a = fragment_a(mma.a, mma.elem)
    b = operand(memory, mma.b, mma.n, mma.tnsp[1], mma.elem)
    assert not np.isnan(a).any(), "an A element no register holds"
    d = a.astype(np.float64) @ b.astype(np.float64).T
    place = d_fragment(mma.n)  # [thread, register] -> (row, column)
    regs = mma.n // 2
    out = acc.astype(np.float64) + d[place[..., 0], place[..., 1]]
    mma.out = [out[:, i].astype(np.float32) for i in range(regs)]


def copy_box(memory: Memory, mapped: Mapped, coords: list[int], dst: int) -> int:
    """The box at `coords` (innermost first) into shared memory at `dst`, where
    sm90_model.TensorMap.writes places each element; zeros outside the tensor. Returns the
    box's bytes."""
    index, target = mapped.tmap.writes(coords, dst)
    inside = ((index >= 0) & (index < np.array(mapped.shape))).all(axis=1)
    elem = mapped.tmap.elem
    source = (np.where(inside[:, None], index, 0) * np.array(mapped.strides)).sum(axis=1) * elem
    source += mapped.at
    buf = memory.buffers[mapped.index]
    for b in range(elem):
        memory.shared[target + b] = np.where(inside, buf[source + b], 0)
    return mapped.tmap.box_bytes


def store_box(memory: Memory, mapped: Mapped, coords: list[int], src: int) -> None:
    """A TMA store: the box at `coords` (innermost first) from shared memory at `src`, each
    element read where a load of that box would have written it, into the tensor; elements
    outside the tensor are not written."""
    index, source = mapped.tmap.writes(coords, src)
    inside = ((index >= 0) & (index < np.array(mapped.shape))).all(axis=1)
    elem = mapped.tmap.elem
    target = (index[inside] * np.array(mapped.strides)).sum(axis=1) * elem + mapped.at
    buf = memory.buffers[mapped.index]
    for b in range(elem):
        buf[target + b] = memory.shared[source[inside] + b]


class Groups:
    """Work a warp group queues in its open group, commits, and has done when a wait retires
    the group: wgmma's commit/wait_group and the TMA stores' bulk groups alike (a wait keeps at
    most `keep` committed groups in flight; the oldest are done first)."""

    def __init__(self) -> None:
        self.open: list[Callable[[], None]] = []
        self.committed: list[list[Callable[[], None]]] = []

    def add(self, work: Callable[[], None]) -> None:
        self.open.append(work)

    def commit(self) -> None:
        self.committed.append(self.open)
        self.open = []

    def retire(self, keep: int) -> None:
        while len(self.committed) > keep:
            for work in self.committed.pop(0):
                work()

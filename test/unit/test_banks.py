"""Unit tests of the bank model behind `tilec compile --report banks`, on hand-made lanes."""

from __future__ import annotations

import pytest
from mlir import ir

from tilec.banks import Conflict, bank_conflict, type_bytes
from tilec.context import make_context

LANES = range(32)


def test_broadcast_is_conflict_free() -> None:
    assert bank_conflict([0] * 32, 4).degree == 1
    # Two words of bank 5, each read by 16 lanes: 2-way, not 32-way.
    assert bank_conflict([20 if t % 2 else 148 for t in LANES], 4).degree == 2


def test_stride_one_word_is_conflict_free() -> None:
    assert bank_conflict([4 * t for t in LANES], 4) == Conflict(1, 0, 0, (0,))


@pytest.mark.parametrize(("stride_words", "degree"), [(2, 2), (4, 4), (8, 8), (16, 16), (32, 32)])
def test_power_of_two_strides(stride_words: int, degree: int) -> None:
    assert bank_conflict([4 * stride_words * t for t in LANES], 4).degree == degree


def test_odd_stride_is_conflict_free() -> None:
    assert bank_conflict([4 * 33 * t for t in LANES], 4).degree == 1


def test_stride_32_names_the_bank_and_lanes() -> None:
    c = bank_conflict([128 * t for t in LANES], 4)
    assert (c.degree, c.phase, c.bank, c.lanes) == (32, 0, 0, tuple(LANES))


def test_sixteen_byte_vectors_are_served_in_four_phases() -> None:
    # Contiguous: each phase of 8 lanes covers 128 bytes, every bank once.
    assert bank_conflict([16 * t for t in LANES], 16).degree == 1
    # Every other vector: a phase spans 256 bytes; lanes 0 and 4 both start in bank 0.
    assert bank_conflict([32 * t for t in LANES], 16) == Conflict(2, 0, 0, (0, 4))
    # The same 128 bytes read by the lanes of different phases never conflict.
    assert bank_conflict([16 * (t % 8) for t in LANES], 16).degree == 1


def test_sixteen_byte_conflict_in_a_later_phase() -> None:
    # Phase 2 (lanes 16-23) reads a column of 16-byte vectors 128 bytes apart: 8-way.
    addresses = [16 * t if t // 8 != 2 else 128 * t for t in LANES]
    c = bank_conflict(addresses, 16)
    assert (c.degree, c.phase, c.bank) == (8, 2, 0)


def test_eight_byte_accesses_in_two_half_warps() -> None:
    assert bank_conflict([8 * t for t in LANES], 8).degree == 1
    # Stride 16 bytes: the 16 lanes of a phase span 256 bytes: 2-way.
    assert bank_conflict([16 * t for t in LANES], 8) == Conflict(2, 0, 0, (0, 8))
    # With 4-byte accesses the same addresses are 4-way: phases matter.
    assert bank_conflict([16 * t for t in LANES], 4).degree == 4


def test_sub_word_accesses_share_words() -> None:
    # f16 at consecutive addresses: two lanes per 4-byte word, one phase, no conflict.
    assert bank_conflict([2 * t for t in LANES], 2).degree == 1
    assert bank_conflict([2 * 64 * t for t in LANES], 2).degree == 32


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("f32", 4),
        ("f16", 2),
        ("i64", 8),
        ("vector<4xf32>", 16),
        ("vector<2xf32>", 8),
        ("!llvm.array<64 x f32>", 256),
        ("!llvm.array<2 x vector<4xf16>>", 16),
        ("!llvm.struct<(f32, f32)>", None),
    ],
)
def test_type_bytes(text: str, size: int | None) -> None:
    with make_context():
        assert type_bytes(ir.Type.parse(text)) == size

"""The runtime binding refuses a tensor whose element type is not the parameter's, also where
the sizes agree (i32 for f32, f16 for bf16, u8 for i8): numpy arrays, __cuda_array_interface__
objects and DLPack producers, no GPU and no torch."""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

import numpy as np
import pytest

from tilec.runtime import Manifest, SizeParam, TensorParam
from tilec.runtime.binding import bind
from tilec.runtime.params import DTYPE_SIZES
from tilec.runtime.tensors import _DLDataType, _DLDevice, _DLTensor

NUMPY = {
    "bool": np.bool_,
    "i8": np.int8,
    "u8": np.uint8,
    "i16": np.int16,
    "u16": np.uint16,
    "f16": np.float16,
    "i32": np.int32,
    "u32": np.uint32,
    "f32": np.float32,
    "i64": np.int64,
    "u64": np.uint64,
    "f64": np.float64,
}
# DLPack's (type code, bits): 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
DLPACK = {
    "bool": (6, 8),
    "i8": (0, 8),
    "u8": (1, 8),
    "i16": (0, 16),
    "u16": (1, 16),
    "f16": (2, 16),
    "bf16": (4, 16),
    "i32": (0, 32),
    "u32": (1, 32),
    "f32": (2, 32),
    "i64": (0, 64),
    "u64": (1, 64),
    "f64": (2, 64),
}
SAME_SIZE = [
    (want, got)
    for want, got in itertools.permutations(DTYPE_SIZES, 2)
    if DTYPE_SIZES[want] == DTYPE_SIZES[got]
]


def manifest(dtype: str) -> Manifest:
    params = (TensorParam("X", dtype, ("N",)), SizeParam("N"))
    return Manifest("k", "sm_90a", params, ("cdiv(N, 128)", 1, 1), (128, 1, 1))


class FakeCai:
    def __init__(self, typestr: str, n: int = 256) -> None:
        self.__cuda_array_interface__ = {
            "shape": (n,),
            "typestr": typestr,
            "data": (0x7F0000000000, False),
            "strides": None,
            "version": 3,
        }


class _DLManaged(ctypes.Structure):
    _fields_ = [("dl", _DLTensor), ("ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class FakeDLPack:
    """A CUDA DLPack producer over a fake device pointer (the legacy 'dltensor' capsule)."""

    def __init__(self, code: int, bits: int, n: int = 256) -> None:
        self.shape = (ctypes.c_int64 * 1)(n)
        self.managed = _DLManaged()
        self.managed.dl = _DLTensor(
            data=0x7F0000010000,
            device=_DLDevice(2, 0),  # kDLCUDA, device 0
            ndim=1,
            dtype=_DLDataType(code, bits, 1),
            shape=ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64)),
            strides=None,
            byte_offset=0,
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)

    def __dlpack__(self, **_: Any) -> object:
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = (
            ctypes.py_object,
            [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p],
        )
        return new(ctypes.addressof(self.managed), b"dltensor", None)


def cai_typestr(dtype: str) -> str | None:
    return np.dtype(NUMPY[dtype]).str if dtype in NUMPY else None


def refused(dtype: str, arg: object, got: str) -> None:
    with pytest.raises(TypeError) as info:
        bind(manifest(dtype), (arg,))
    message = str(info.value)
    assert message.startswith(f"argument 'X': dtype {got}, expected {dtype} ("), message
    size = DTYPE_SIZES[dtype]
    same = f"the same {size}-byte size, but the kernel would read its bits as {dtype}"
    assert (same in message) == (DTYPE_SIZES[got] == size), message


@pytest.mark.parametrize(
    ("want", "got"), SAME_SIZE, ids=[f"{got}-for-{want}" for want, got in SAME_SIZE]
)
def test_same_size_numpy_refused(want: str, got: str) -> None:
    if got not in NUMPY:
        pytest.skip(f"numpy has no {got}")
    refused(want, np.zeros(256, NUMPY[got]), got)


@pytest.mark.parametrize(
    ("want", "got"), SAME_SIZE, ids=[f"{got}-for-{want}" for want, got in SAME_SIZE]
)
def test_same_size_cuda_array_interface_refused(want: str, got: str) -> None:
    typestr = cai_typestr(got)
    if typestr is None:
        pytest.skip(f"no __cuda_array_interface__ typestr for {got}")
    refused(want, FakeCai(typestr), got)


@pytest.mark.parametrize(
    ("want", "got"), SAME_SIZE, ids=[f"{got}-for-{want}" for want, got in SAME_SIZE]
)
def test_same_size_dlpack_refused(want: str, got: str) -> None:
    if got not in DLPACK:
        pytest.skip(f"no DLPack code for {got}")
    refused(want, FakeDLPack(*DLPACK[got]), got)


def test_the_issues_cases() -> None:
    refused("f32", np.zeros(256, np.int32), "i32")
    refused("bf16", FakeDLPack(*DLPACK["f16"]), "f16")
    refused("f16", FakeDLPack(*DLPACK["bf16"]), "bf16")
    refused("i8", FakeCai("|u1"), "u8")
    refused("f32", np.zeros(256, np.float16), "f16")  # across sizes too, with its own reason


@pytest.mark.parametrize("dtype", sorted(DLPACK))
def test_the_right_dtype_binds(dtype: str) -> None:
    """Each adapter's own dtype is accepted (the refusals above are not of everything)."""
    args: list[object] = [FakeDLPack(*DLPACK[dtype])]
    if dtype in NUMPY:
        args += [np.zeros(256, NUMPY[dtype]), FakeCai(np.dtype(NUMPY[dtype]).str)]
    for arg in args:
        b = bind(manifest(dtype), (arg,))
        assert b.views["X"].dtype == dtype and b.symbols["N"] == 256 and b.grid == (2, 1, 1)

"""Runtime: one view (pointer, shape, strides in elements, dtype) of any framework's array."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import numpy as np

# __cuda_array_interface__ / numpy typestr (without byte order) → manifest dtype.
_TYPESTR = {
    "b1": "bool",
    "i1": "i8",
    "i2": "i16",
    "i4": "i32",
    "i8": "i64",
    "u1": "u8",
    "u2": "u16",
    "u4": "u32",
    "u8": "u64",
    "f2": "f16",
    "f4": "f32",
    "f8": "f64",
}
_TORCH = {
    "bool": "bool",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "float8_e4m3fn": "f8e4m3",
    "float8_e5m2": "f8e5m2",
}
# DLPack (type code, bits) → manifest dtype.
_DLPACK = {
    (0, 8): "i8",
    (0, 16): "i16",
    (0, 32): "i32",
    (0, 64): "i64",
    (1, 8): "u8",
    (1, 16): "u16",
    (1, 32): "u32",
    (1, 64): "u64",
    (2, 16): "f16",
    (2, 32): "f32",
    (2, 64): "f64",
    (4, 16): "bf16",
    (6, 8): "bool",
}
_DL_CUDA_DEVICES = (2, 13)  # kDLCUDA, kDLCUDAManaged


@dataclass
class TensorView:
    """What the launcher needs from one array argument.

    `host` is set for numpy arrays: the launcher copies them to a device buffer (and back),
    and `ptr` is 0 until then.
    """

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: str
    framework: str  # torch | cupy | cuda_array_interface | dlpack | numpy | device
    device: int | None = None  # CUDA ordinal when the framework says so
    host: np.ndarray | None = None
    keepalive: Any = None  # e.g. a DLPack capsule that owns the memory while we use it


@dataclass(eq=False)
class DeviceArray:
    """Device memory the runtime allocated itself (`tilec run`'s random inputs, made without
    torch): passed to a kernel as a framework's CUDA tensor is. Whoever allocated `ptr` frees
    it (measure.device_array ties it to this object's life)."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: str  # a manifest dtype


# Manifest dtype → the numpy dtype of its bits (bf16 is stored as its 16-bit pattern).
NUMPY_DTYPES = {
    **{d: np.dtype(t) for t, d in _TYPESTR.items() if d != "bool"},
    "bool": np.dtype(np.bool_),
    "bf16": np.dtype(np.uint16),
}


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 values as bf16 bit patterns (the top half of an f32, rounded to nearest even)."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _typestr_dtype(typestr: str, name: str) -> str:
    dtype = _TYPESTR.get(typestr[1:])
    if dtype is None:
        raise TypeError(f"argument {name!r}: unsupported element type {typestr!r}")
    return dtype


def _byte_strides_to_elements(
    strides: tuple[int, ...], itemsize: int, name: str
) -> tuple[int, ...]:
    if any(s % itemsize for s in strides):
        raise ValueError(
            f"argument {name!r}: byte strides {strides} are not multiples of the element size"
        )
    return tuple(s // itemsize for s in strides)


def _from_torch(t: Any, name: str) -> TensorView:
    if t.device.type != "cuda":
        raise TypeError(f"argument {name!r}: torch tensor is on {t.device}, expected a CUDA tensor")
    dtype = _TORCH.get(str(t.dtype).removeprefix("torch."))
    if dtype is None:
        raise TypeError(f"argument {name!r}: unsupported torch dtype {t.dtype}")
    return TensorView(
        ptr=t.data_ptr(),
        shape=tuple(t.shape),
        strides=tuple(t.stride()),
        dtype=dtype,
        framework="torch",
        device=t.device.index,
    )


def _from_cai(obj: Any, name: str, framework: str) -> TensorView:
    cai = obj.__cuda_array_interface__
    version = cai.get("version", 0)
    if version < 2:
        raise TypeError(f"argument {name!r}: __cuda_array_interface__ version {version} < 2")
    if cai.get("mask") is not None:
        raise TypeError(f"argument {name!r}: masked arrays are not supported")
    ptr, _readonly = cai["data"]
    shape = tuple(int(d) for d in cai["shape"])
    dtype = _typestr_dtype(cai["typestr"], name)
    itemsize = int(cai["typestr"][2:])
    strides = cai.get("strides")
    if strides is None:
        elem_strides = row_major_strides(shape)
    else:
        elem_strides = _byte_strides_to_elements(tuple(strides), itemsize, name)
    return TensorView(int(ptr or 0), shape, elem_strides, dtype, framework, keepalive=obj)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


def _from_dlpack(obj: Any, name: str) -> TensorView:
    # The legacy (unversioned) capsule: every producer still returns it when no max_version is
    # asked for. The capsule is not renamed to "used_dltensor", so its destructor still frees it.
    capsule = obj.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get(capsule, b"dltensor")
    # DLManagedTensor starts with its DLTensor, so the capsule's pointer is a DLTensor*.
    t = _DLTensor.from_address(address)
    if t.device.device_type not in _DL_CUDA_DEVICES:
        raise TypeError(
            f"argument {name!r}: DLPack tensor is on device type {t.device.device_type}, "
            "expected CUDA"
        )
    key = (t.dtype.code, t.dtype.bits)
    if key not in _DLPACK or t.dtype.lanes != 1:
        raise TypeError(f"argument {name!r}: unsupported DLPack dtype {key} x{t.dtype.lanes}")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else row_major_strides(shape)
    return TensorView(
        ptr=(t.data or 0) + t.byte_offset,
        shape=shape,
        strides=strides,
        dtype=_DLPACK[key],
        framework="dlpack",
        device=t.device.device_id,
        keepalive=capsule,
    )


def _from_numpy(a: np.ndarray, name: str) -> TensorView:
    dtype = _TYPESTR.get(a.dtype.str[1:]) if a.dtype.kind in "biuf" else None
    if dtype is None:
        raise TypeError(f"argument {name!r}: unsupported numpy dtype {a.dtype}")
    # Copied to a contiguous device buffer at launch, so the kernel sees row-major strides.
    return TensorView(0, a.shape, row_major_strides(a.shape), dtype, "numpy", host=a)


def _is_dlpack_device(obj: Any) -> bool:
    try:
        device_type, _ = obj.__dlpack_device__()
    except Exception:  # a producer may refuse: then it is not a device tensor we can use
        return False
    return int(device_type) in _DL_CUDA_DEVICES


def as_view(obj: Any, name: str) -> TensorView:
    """A TensorView of `obj`, or a TypeError naming the argument."""
    if isinstance(obj, DeviceArray):
        return TensorView(obj.ptr, obj.shape, obj.strides, obj.dtype, "device", keepalive=obj)
    module = type(obj).__module__.split(".")[0]
    if module == "torch":
        return _from_torch(obj, name)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj, name, "cupy" if module == "cupy" else "cuda_array_interface")
    if isinstance(obj, np.ndarray):
        return _from_numpy(obj, name)
    if hasattr(obj, "__dlpack__") and _is_dlpack_device(obj):
        return _from_dlpack(obj, name)
    raise TypeError(
        f"argument {name!r}: expected a CUDA tensor (torch, cupy, __cuda_array_interface__, "
        f"DLPack) or a numpy array, got {type(obj).__name__}"
    )

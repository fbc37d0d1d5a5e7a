"""Frontend: the scalar element types of .tile, their MLIR spelling and their size in bytes."""

from __future__ import annotations

# name -> (MLIR type, bytes); fp8 sizes are 1, bool is stored as a byte.
SCALAR_TYPES: dict[str, tuple[str, int]] = {
    "f16": ("f16", 2),
    "bf16": ("bf16", 2),
    "f32": ("f32", 4),
    "f64": ("f64", 8),
    "tf32": ("tf32", 4),
    "e4m3": ("f8E4M3FN", 1),
    "e5m2": ("f8E5M2", 1),
    "i8": ("i8", 1),
    "i16": ("i16", 2),
    "i32": ("i32", 4),
    "i64": ("i64", 8),
    "u8": ("ui8", 1),
    "u16": ("ui16", 2),
    "u32": ("ui32", 4),
    "u64": ("ui64", 8),
    "bool": ("i1", 1),
}


# The scalar arguments that are runtime integers of the kernel (indices, sizes, loop bounds).
SIGNED_INTEGERS = ("i8", "i16", "i32", "i64")


def is_float_type(name: str) -> bool:
    return name in ("f16", "bf16", "f32", "f64", "tf32", "e4m3", "e5m2")

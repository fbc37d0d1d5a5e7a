"""Runtime: the parts of a bundle's manifest schema: parameters (tensors, sizes, scalars,
tensor maps), TMA descriptors, requirements, and the dtypes a manifest may name.
`tilec.runtime.bundle` holds the manifest itself, its JSON and the bundle's files."""

from __future__ import annotations

from dataclasses import dataclass, field

# Bytes per element of every dtype a manifest may name.
DTYPE_SIZES: dict[str, int] = {
    "bool": 1,
    "i8": 1,
    "u8": 1,
    "f8e4m3": 1,
    "f8e5m2": 1,
    "i16": 2,
    "u16": 2,
    "f16": 2,
    "bf16": 2,
    "i32": 4,
    "u32": 4,
    "f32": 4,
    "i64": 8,
    "u64": 8,
    "f64": 8,
}
SIZE_DTYPES = ("i32", "i64")
INTENTS = ("in", "out", "inout")


class ManifestError(ValueError):
    """A manifest that does not follow the schema; the message names the field."""


Dim = int | str  # a static extent, or a size symbol / formula


@dataclass(frozen=True)
class TensorParam:
    """A global tensor, passed as a 64-bit device pointer."""

    name: str
    dtype: str
    shape: tuple[Dim, ...]
    strides: tuple[Dim, ...] | None = None  # in elements; None: contiguous row-major
    align: int = 16  # bytes the base pointer must be aligned to
    intent: str = "inout"  # host (numpy) arrays are copied back unless "in"
    kind: str = field(default="tensor", init=False)


@dataclass(frozen=True)
class SizeParam:
    """A runtime extent, bound from a tensor's shape and passed as an integer."""

    name: str
    source: tuple[str, int] | None = None  # (tensor, dim); None: wherever the symbol is bound
    dtype: str = "i64"
    kind: str = field(default="size", init=False)


@dataclass(frozen=True)
class ScalarParam:
    """A scalar the caller passes by value (a Python int or float)."""

    name: str
    dtype: str
    kind: str = field(default="scalar", init=False)

    @property
    def integer(self) -> bool:
        """A signed integer: a runtime integer of the kernel, which launch formulas may read
        (`grid(cdiv(max_q, 128))`)."""
        return self.dtype in ("i8", "i16", "i32", "i64")


# Symbols a grid formula may name that the device gives at launch, not the arguments.
DEVICE_SYMBOLS = frozenset({"num_sms"})


@dataclass(frozen=True)
class TmaParam:
    """A device pointer to a CUtensorMap built at launch from `tma[descriptor]`."""

    name: str
    descriptor: str
    kind: str = field(default="tma", init=False)


@dataclass(frozen=True)
class TmaDescriptor:
    """A tiled TMA descriptor over one tensor parameter (cuTensorMapEncodeTiled)."""

    name: str
    tensor: str
    box: tuple[Dim, ...]  # box extents, outermost first like the tensor's shape
    swizzle: str = "none"  # none | 32B | 64B | 128B
    interleave: str = "none"
    l2_promotion: str = "none"  # none | 64B | 128B | 256B
    oob_fill: str = "none"  # none | nan
    element_strides: tuple[int, ...] | None = None
    # An optional map the tensor's strides may not allow (TMA needs 16-byte multiples): the
    # kernel then gets a null pointer for it and takes another path (e.g. an epilogue that
    # stores from registers).
    optional: bool = False
    # The tensor's modes innermost first (the map's dimension order); None: the last mode first.
    order: tuple[int, ...] | None = None


Param = TensorParam | SizeParam | ScalarParam | TmaParam


@dataclass(frozen=True)
class Requirement:
    """A relation between runtime sizes and the build that the kernel is only correct under,
    checked at every launch: `value <= at_most` (formulas over the manifest's symbols)."""

    value: Dim
    at_most: Dim
    why: str = ""

"""Runtime: binds call arguments to a manifest's parameters (sizes, checks, grid) without a GPU."""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tilec.runtime.bundle import (
    DEVICE_SYMBOLS,
    DTYPE_SIZES,
    Manifest,
    ScalarParam,
    SizeParam,
    TensorParam,
    TmaDescriptor,
    TmaParam,
)
from tilec.runtime.formula import evaluate, symbols_of
from tilec.runtime.tensors import TensorView, as_view, row_major_strides

_SCALAR_CTYPES: dict[str, type[ctypes._SimpleCData]] = {
    "bool": ctypes.c_uint8,
    "i8": ctypes.c_int8,
    "u8": ctypes.c_uint8,
    "i16": ctypes.c_int16,
    "u16": ctypes.c_uint16,
    "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64,
    "u64": ctypes.c_uint64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    # 16-bit floats travel as their bit pattern.
    "f16": ctypes.c_uint16,
    "bf16": ctypes.c_uint16,
}


@dataclass
class Binding:
    """One call's arguments bound to a manifest: ready to launch but for device buffers."""

    views: dict[str, TensorView]
    symbols: dict[str, int]
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem: int
    # Launch-order parameters: a ctypes value, or the name of a tensor / TMA descriptor whose
    # device pointer is filled in at launch.
    slots: list[ctypes._SimpleCData | tuple[str, str]] = field(default_factory=list)
    tma: dict[str, dict[str, Any]] = field(default_factory=dict)
    wide: bool = False  # launch the manifest's wide (64-bit index) variant
    special: bool = False  # launch its specialised variant (`specialize(...)` holds)

    @property
    def variant(self) -> str:
        """The PTX this launch runs: "wide", "special" or "" (the ordinary one)."""
        return "wide" if self.wide else "special" if self.special else ""


def user_params(m: Manifest) -> list[TensorParam | ScalarParam]:
    """The parameters a caller passes, in launch order (sizes and TMA maps are derived)."""
    return [p for p in m.params if isinstance(p, TensorParam | ScalarParam)]


def _bind_symbol(
    symbols: dict[str, int], origin: dict[str, str], sym: str, value: int, where: str
) -> None:
    if sym in symbols and symbols[sym] != value:
        raise ValueError(f"{where} is {value}, but {sym} = {symbols[sym]} from {origin[sym]}")
    if sym not in symbols:
        symbols[sym], origin[sym] = value, where


def launch_symbols(m: Manifest) -> set[str]:
    """The integer scalars a launch formula of `m` reads (grid, block, shared memory,
    requirements, variants' conditions): a call's signature holds their values."""
    formulas = [*m.grid, *m.block, m.dynamic_smem, *(w for v in m.variants for w in v.when)]
    formulas += [f for r in m.requires for f in (r.value, r.at_most)]
    named = set().union(*(symbols_of(f) for f in formulas))
    return {p.name for p in m.params if isinstance(p, ScalarParam) and p.name in named}


def scalar_value(p: ScalarParam, value: Any) -> ctypes._SimpleCData:
    where = f"argument {p.name!r}"
    is_int = isinstance(value, int | np.integer) and not isinstance(value, bool)
    if p.dtype.startswith(("i", "u")) or p.dtype == "bool":
        if not (is_int or (p.dtype == "bool" and isinstance(value, bool | np.bool_))):
            raise TypeError(
                f"{where}: expected an integer for {p.dtype}, got {type(value).__name__}"
            )
        bits = 8 * DTYPE_SIZES[p.dtype]
        lo, hi = (
            (0, 2**bits - 1) if p.dtype[0] in "ub" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        )
        if not lo <= int(value) <= hi:
            raise ValueError(f"{where}: {value} does not fit in {p.dtype}")
        return _SCALAR_CTYPES[p.dtype](int(value))
    if not (is_int or isinstance(value, float | np.floating)):
        raise TypeError(f"{where}: expected a number for {p.dtype}, got {type(value).__name__}")
    if p.dtype == "f16":
        return ctypes.c_uint16(int(np.float16(value).view(np.uint16)))
    if p.dtype == "bf16":
        # bf16 is the top half of an f32; round to nearest even on the dropped half.
        (bits,) = struct.unpack("<I", struct.pack("<f", float(value)))
        bits += 0x7FFF + ((bits >> 16) & 1)
        return ctypes.c_uint16((bits >> 16) & 0xFFFF)
    if p.dtype in ("f8e4m3", "f8e5m2"):
        raise TypeError(f"{where}: fp8 scalars are not supported")
    return _SCALAR_CTYPES[p.dtype](float(value))


# The ordinary PTX indexes in 32 bits (outline-tile-kernels' dlti.dl_spec): its offsets stay
# below 2^31. A tensor past that needs the manifest's wide (64-bit index) variant.
INDEX_LIMIT = 2**31


def element_span(view: TensorView) -> int:
    """The largest element offset `view` reaches from its base (strides are checked
    non-negative before this is asked)."""
    return sum((n - 1) * d for n, d in zip(view.shape, view.strides, strict=True) if n > 0)


def _needs_wide(m: Manifest, name: str, view: TensorView) -> bool:
    """Whether the tensor's elements reach past the 32-bit index; an error when they do and the
    bundle has no wide variant to launch instead."""
    span = element_span(view)
    if span < INDEX_LIMIT and all(n < INDEX_LIMIT for n in view.shape):
        return False
    if not m.wide_ptx_file:
        raise ValueError(
            f"argument {name!r}: spans {span + 1} elements; this bundle's kernels index in 32 "
            "bits (< 2^31) and it has no wide variant (rebuild it with tilec build)"
        )
    return True


def check_dtype(p: TensorParam, view: TensorView) -> None:
    """The element type must be the parameter's exactly: one of the same size (i32 for f32,
    f16 for bf16, u8 for i8) would be read as the parameter's bits, silently wrong."""
    if view.dtype == p.dtype:
        return
    got, want = DTYPE_SIZES[view.dtype], DTYPE_SIZES[p.dtype]
    why = (
        f"the same {want}-byte size, but the kernel would read its bits as {p.dtype}"
        if got == want
        else f"{got}-byte elements where the kernel reads {want}-byte ones"
    )
    raise TypeError(
        f"argument {p.name!r}: dtype {view.dtype}, expected {p.dtype} ({why}); convert it "
        f"to {p.dtype} first"
    )


def _check_tensor(p: TensorParam, view: TensorView, symbols: dict[str, int]) -> None:
    where = f"argument {p.name!r}"
    check_dtype(p, view)
    if len(view.shape) != len(p.shape):
        raise ValueError(
            f"{where}: rank {len(view.shape)} (shape {list(view.shape)}), expected rank "
            f"{len(p.shape)} (shape {list(p.shape)})"
        )
    for dim, (want, got) in enumerate(zip(p.shape, view.shape, strict=True)):
        expected = evaluate(want, symbols)
        if expected != got:
            raise ValueError(f"{where}: dim {dim} is {got}, expected {want} = {expected}")
    # Kernels' layouts take no negative strides (the compiler refuses them in a layout, and a
    # runtime stride symbol is assumed non-negative by the tiles' address arithmetic).
    pairs = zip(view.shape, view.strides, strict=True)
    reversed_dims = [d for d, (n, stride) in enumerate(pairs) if n > 1 and stride < 0]
    if reversed_dims:
        raise ValueError(
            f"{where}: a negative stride {list(view.strides)} along dim {reversed_dims[0]} (a "
            "reversed view); kernels take none: pass a copy (e.g. .contiguous())"
        )
    want_strides = (
        row_major_strides(view.shape)
        if p.strides is None
        else tuple(evaluate(s, symbols) for s in p.strides)
    )
    # A stride is irrelevant where the extent is 1, and everywhere in an empty tensor:
    # frameworks disagree on what they report.
    bad = [
        d
        for d, (w, g, n) in enumerate(zip(want_strides, view.strides, view.shape, strict=True))
        if n > 1 and w != g and 0 not in view.shape
    ]
    if bad:
        what = "contiguous row-major" if p.strides is None else f"strides {list(p.strides)}"
        raise ValueError(
            f"{where}: strides {list(view.strides)} (in elements), expected {what} = "
            f"{list(want_strides)}"
        )
    if view.host is None and view.ptr % p.align:
        raise ValueError(
            f"{where}: data pointer {view.ptr:#x} is not aligned to {p.align} bytes "
            f"(offset {view.ptr % p.align})"
        )


def _bind_strides(
    params: list[TensorParam | ScalarParam],
    views: dict[str, TensorView],
    symbols: dict[str, int],
    origin: dict[str, str],
) -> None:
    """Stride symbols (a layout's runtime strides, e.g. `(L, M, K):(sa, lda, 1)`) bind from the
    first tensor that names them; a symbol already bound (by a shape) is left for the stride
    check. A mode of extent 1 never moves, so frameworks report any stride there: such a mode
    binds its symbol only when no longer mode names it."""
    for longer in (True, False):
        for p in params:
            if not isinstance(p, TensorParam) or p.strides is None:
                continue
            view = views[p.name]
            if len(view.shape) != len(p.strides):
                continue  # _check_tensor reports the rank mismatch
            for dim, want in enumerate(p.strides):
                named = isinstance(want, str) and want.isidentifier()
                if named and want not in symbols and (view.shape[dim] > 1) == longer:
                    symbols[want] = view.strides[dim]
                    origin[want] = f"argument {p.name!r} stride {dim}"


def bind(
    m: Manifest, args: tuple[Any, ...], device: Callable[[int | None], dict[str, int]] | None = None
) -> Binding:
    """Checks `args` against `m` and computes sizes, grid, block and the parameter slots.
    `device(ordinal)` gives the device's symbols (`num_sms`: persistent grids) for the device
    the tensors live on; without it a launch shape that names one is an error."""
    expected = user_params(m)
    if len(args) != len(expected):
        names = ", ".join(p.name for p in expected)
        raise TypeError(f"{m.entry}() takes {len(expected)} arguments ({names}), got {len(args)}")
    symbols: dict[str, int] = dict(m.constants)
    origin = {k: "constants" for k in symbols}
    views: dict[str, TensorView] = {}
    scalars: dict[str, ctypes._SimpleCData] = {}
    for p, value in zip(expected, args, strict=True):
        if isinstance(p, ScalarParam):
            scalars[p.name] = scalar_value(p, value)
            if p.integer:  # a launch formula may name it: grid(cdiv(max_q, BM))
                _bind_symbol(symbols, origin, p.name, int(value), f"argument {p.name!r}")
            continue
        view = as_view(value, p.name)
        views[p.name] = view
        if len(view.shape) != len(p.shape):
            continue  # _check_tensor reports the rank mismatch below
        # Plain symbols bind from the first tensor that names them; formulas are checked later.
        for dim, want in enumerate(p.shape):
            if isinstance(want, str) and want.isidentifier():
                where = f"argument {p.name!r} dim {dim}"
                _bind_symbol(symbols, origin, want, view.shape[dim], where)
    for p in m.params:
        if isinstance(p, SizeParam) and p.source is not None:
            tensor, dim = p.source
            shape = views[tensor].shape
            if dim >= len(shape):
                raise ValueError(f"argument {tensor!r}: has no dim {dim} for size {p.name!r}")
            _bind_symbol(symbols, origin, p.name, shape[dim], f"argument {tensor!r} dim {dim}")
    _bind_strides(expected, views, symbols, origin)
    for p in expected:
        if isinstance(p, TensorParam):
            _check_tensor(p, views[p.name], symbols)
    slots: list[ctypes._SimpleCData | tuple[str, str]] = []
    for p in m.params:
        if isinstance(p, TensorParam):
            slots.append(("tensor", p.name))
        elif isinstance(p, SizeParam):
            value = symbols[p.name]
            ctype = ctypes.c_int32 if p.dtype == "i32" else ctypes.c_int64
            if p.dtype == "i32" and not -(2**31) <= value < 2**31:
                raise ValueError(f"size {p.name!r} = {value} does not fit the kernel's i32")
            slots.append(ctype(value))
        elif isinstance(p, ScalarParam):
            slots.append(scalars[p.name])
        elif isinstance(p, TmaParam):
            slots.append(("tma", p.descriptor))
    check_requirements(m, symbols)
    grid_needs = any(symbols_of(g) & DEVICE_SYMBOLS for g in m.grid)
    conditions = (w for v in m.variants for w in v.when)  # variant(...) may name num_sms
    if grid_needs or any(symbols_of(w) & DEVICE_SYMBOLS for w in conditions):
        if device is None:
            what = f"the grid {list(m.grid)}" if grid_needs else "a variant's condition"
            raise ValueError(f"{m.entry}: {what} needs the device's SM count")
        ordinal = next((v.device for v in views.values() if v.device is not None), None)
        symbols.update(device(ordinal))
    grid = tuple(evaluate(g, symbols) for g in m.grid)
    block = tuple(evaluate(b, symbols) for b in m.block)
    if any(b <= 0 for b in block) or any(g < 0 for g in grid):
        raise ValueError(f"{m.entry}: invalid launch shape grid={grid} block={block}")
    if grid[0] % m.cluster:
        raise ValueError(
            f"{m.entry}: grid {list(grid)} along x is not a multiple of its cluster of "
            f"{m.cluster} blocks"
        )
    tma = {d.name: _encode_or_skip(d, views[d.tensor], symbols) for d in m.tma}
    wide = False
    for p in expected:
        if isinstance(p, TensorParam):
            wide = _needs_wide(m, p.name, views[p.name]) or wide
    _check_outputs(m, views)
    special = not wide and specialised(m, symbols)
    own = m.special_dynamic_smem if special else None
    smem = evaluate(m.dynamic_smem if own is None else own, symbols)
    return Binding(views, symbols, grid, block, smem, slots, tma, wide, special)  # type: ignore[arg-type]


def specialised(m: Manifest, symbols: dict[str, int]) -> bool:
    """Whether this launch is one the manifest's specialised variant serves: every condition
    `1 <= value <= at_most` holds."""
    if not m.special_ptx_file:
        return False
    return all(1 <= evaluate(r.value, symbols) <= evaluate(r.at_most, symbols) for r in m.special)


def _self_overlap(view: TensorView) -> int | None:
    """A dim along which `view` revisits memory (stride 0, or a stride shorter than what the
    dims of smaller strides span), else None: written through, it would race."""
    dims = sorted(
        (d, n, i) for i, (n, d) in enumerate(zip(view.shape, view.strides, strict=True)) if n > 1
    )
    span = 0  # elements covered by the dims seen so far, minus one
    for stride, extent, dim in dims:
        if stride <= span:
            return dim
        span += (extent - 1) * stride
    return None


def byte_span(view: TensorView) -> tuple[int, int]:
    """[first, last] byte offset from `view.ptr` that `view` touches."""
    size = DTYPE_SIZES[view.dtype]
    return 0, element_span(view) * size + size - 1


def written_spans(m: Manifest, views: dict[str, TensorView]) -> list[tuple[str, int, int]]:
    """(name, first, last byte offset) of each non-empty device tensor the kernel writes."""
    spans = []
    for t in m.tensors():
        view = views.get(t.name)
        if t.intent != "in" and view is not None and view.host is None and 0 not in view.shape:
            spans.append((t.name, *byte_span(view)))
    return spans


def check_disjoint(spans: list[tuple[str, int, int]], ptrs: dict[str, int]) -> None:
    """Written tensors must not share memory: threads would race on the shared elements."""
    for i, (a, a_lo, a_hi) in enumerate(spans):
        for b, b_lo, b_hi in spans[i + 1 :]:
            if ptrs[a] + a_lo <= ptrs[b] + b_hi and ptrs[b] + b_lo <= ptrs[a] + a_hi:
                raise ValueError(
                    f"arguments {a!r} and {b!r}: the kernel writes both and their memory overlaps"
                )


def _check_outputs(m: Manifest, views: dict[str, TensorView]) -> None:
    """A tensor the kernel writes must not overlap itself (a broadcast, stride-0 view) nor
    another written tensor."""
    for t in m.tensors():
        view = views.get(t.name)
        if t.intent == "in" or view is None or 0 in view.shape:
            continue
        dim = _self_overlap(view)
        if dim is not None:
            raise ValueError(
                f"argument {t.name!r}: the kernel writes it, but its strides {list(view.strides)} "
                f"revisit memory along dim {dim} (a broadcast or overlapping view); pass a "
                "tensor of its own (e.g. .contiguous())"
            )
    check_disjoint(written_spans(m, views), {n: v.ptr for n, v in views.items()})


def check_requirements(m: Manifest, symbols: dict[str, int]) -> None:
    """Every relation the build needs between runtime sizes and its parameters (the manifest's
    `requires`), or a ValueError saying which failed, by how much and why it matters."""
    for r in m.requires:
        value, bound = evaluate(r.value, symbols), evaluate(r.at_most, symbols)
        if value > bound:
            why = f": {r.why}" if r.why else ""
            limit = r.at_most if str(r.at_most) == str(bound) else f"{r.at_most} = {bound}"
            needs = f"{r.value} <= {limit} only" if bound else f"{r.value} == 0 only"
            raise ValueError(f"{m.entry}: {r.value} = {value}, but this build handles {needs}{why}")


_TMA_DTYPES = {
    "u8": "UINT8",
    "i8": "UINT8",
    "u16": "UINT16",
    "i16": "UINT16",
    "u32": "UINT32",
    "i32": "INT32",
    "u64": "UINT64",
    "i64": "INT64",
    "f16": "FLOAT16",
    "f32": "FLOAT32",
    "f64": "FLOAT64",
    "bf16": "BFLOAT16",
    "f8e4m3": "UINT8",
    "f8e5m2": "UINT8",
}


def _encode_or_skip(
    d: TmaDescriptor, view: TensorView, symbols: dict[str, int]
) -> dict[str, Any] | None:
    """`tma_encode_args`, or None for an optional map the tensor does not allow, and for a
    map over an empty tensor (the driver cannot encode one; no box of the kernel lies inside
    an empty tensor, so it never reads the null map: e.g. a GEMM with K = 0 only stores 0)."""
    if 0 in view.shape:
        return None
    try:
        return tma_encode_args(d, view, symbols)
    except ValueError:
        if d.optional:
            return None
        raise


def tma_encode_args(d: TmaDescriptor, view: TensorView, symbols: dict[str, int]) -> dict[str, Any]:
    """The arguments of cuTensorMapEncodeTiled for `d` over `view`, innermost dimension first.

    Pure (no driver), so the rules TMA imposes are checked where they can name the tensor;
    the address is filled in at launch (numpy arrays have no device address before).
    """
    where = f"tma {d.name!r} over argument {d.tensor!r}"
    rank = len(view.shape)
    itemsize = DTYPE_SIZES[view.dtype]
    if not 1 <= rank <= 5:
        raise ValueError(f"{where}: TMA supports rank 1..5, got {rank}")
    order = list(d.order) if d.order is not None else list(reversed(range(rank)))
    if sorted(order) != list(range(rank)):
        raise ValueError(f"{where}: dimension order {order} is not a permutation of {rank} modes")
    inner = order[0]
    if view.strides[inner] != 1 and view.shape[inner] > 1:
        raise ValueError(
            f"{where}: the innermost stride must be 1, got {view.strides[inner]}"
            + (f" (mode {inner})" if d.order is not None else "")
        )
    byte_strides = [view.strides[m] * itemsize for m in order[1:]]
    if any(s % 16 for s in byte_strides):
        raise ValueError(f"{where}: byte strides {byte_strides} must be multiples of 16")
    box = [evaluate(d.box[m], symbols) for m in order]
    if any(not 1 <= b <= 256 for b in box):
        raise ValueError(
            f"{where}: box extents {[evaluate(x, symbols) for x in d.box]} must be in 1..256"
        )
    if (box[0] * itemsize) % 16:
        raise ValueError(f"{where}: innermost box extent x element size must be a multiple of 16")
    return {
        "dtype": _TMA_DTYPES[view.dtype],
        "rank": rank,
        "global_dim": [int(view.shape[m]) for m in order],
        "global_strides": byte_strides,
        "box_dim": box,
        "element_strides": list(reversed(d.element_strides or (1,) * rank)),
        "interleave": d.interleave.upper(),
        "swizzle": d.swizzle.upper(),
        "l2_promotion": d.l2_promotion.upper(),
        "oob_fill": "NAN_REQUEST_ZERO_FMA" if d.oob_fill == "nan" else "NONE",
    }

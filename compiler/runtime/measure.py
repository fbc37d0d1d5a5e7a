"""Runtime: random inputs, timing and bandwidth for a bundle (`tilec run`): numpy and the
CUDA driver only, no torch (`time_graph_ms`, for the benchmarks, needs torch's CUDA graphs)."""

from __future__ import annotations

import statistics
import weakref
from typing import Any

import numpy as np

from tilec.runtime import driver
from tilec.runtime.bundle import DTYPE_SIZES, Manifest, ScalarParam, TensorParam
from tilec.runtime.formula import evaluate
from tilec.runtime.tensors import NUMPY_DTYPES, DeviceArray, bf16_bits, row_major_strides


def _torch() -> Any:
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the machine
        raise RuntimeError("time_graph_ms needs torch (it replays a torch CUDA graph)") from None
    return torch


def shapes(manifest: Manifest, sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Each tensor parameter's concrete shape, from the size symbols."""
    out = {}
    for p in manifest.tensors():
        try:
            out[p.name] = tuple(evaluate(d, {**manifest.constants, **sizes}) for d in p.shape)
        except Exception as exc:  # noqa: BLE001 - reported with the missing name
            raise ValueError(
                f"tensor '{p.name}' has shape {p.shape}: give its sizes, --size NAME=INT ({exc})"
            ) from None
    return out


def stored(p: TensorParam, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The extents a tensor's data has: 1 along a broadcast mode (a static stride of 0)."""
    strides = p.strides or (None,) * len(shape)
    return tuple(1 if d == 0 else n for n, d in zip(shape, strides, strict=True))


def unit_mode_last(p: TensorParam, rank: int) -> list[int]:
    """The order to allocate a tensor's modes in, outermost first: its own, except that a mode
    the layout declares contiguous (a static stride of 1, e.g. `(M, N):(1, M)`) goes last."""
    strides = p.strides or (None,) * rank
    unit = [k for k, d in enumerate(strides) if d == 1]
    if not unit or unit[0] == rank - 1:
        return list(range(rank))
    return [k for k in range(rank) if k != unit[0]] + [unit[0]]


def random_args(manifest: Manifest, sizes: dict[str, int], seed: int = 0) -> list[Any]:
    """Device arrays (`DeviceArray`, through the driver) of standard-normal values (never
    zeros; integers truncated from them), float scalars of 1.5 and integer scalars of
    `sizes[name]` (3 when not given); a broadcast argument (stride 0) is its data expanded, as
    `bias.expand(M, N)`; a tensor whose layout makes another mode than the last contiguous (the
    transpose of a row-major one) is laid out so. Without a driver or GPU: CudaError."""
    dims = shapes(manifest, sizes)  # a missing --size is an error before the GPU is touched
    driver.current_context()  # the arrays live in the context the kernel launches in
    rng = np.random.default_rng(seed)
    args: list[Any] = []
    for p in manifest.params:
        if isinstance(p, TensorParam):
            args.append(random_tensor(p, dims[p.name], rng))
        elif isinstance(p, ScalarParam):
            integer = p.dtype.startswith(("i", "u"))
            args.append(sizes.get(p.name, 3) if integer else 1.5)
    return args


def random_tensor(p: TensorParam, shape: tuple[int, ...], rng: np.random.Generator) -> DeviceArray:
    """Tensor `p` of `shape` on the device: its data (`stored` extents) allocated in the order
    `unit_mode_last` gives, with stride 0 along a broadcast mode."""
    data = stored(p, shape)
    order = unit_mode_last(p, len(data))
    values = rng.standard_normal([data[k] for k in order], dtype=np.float32)
    laid = row_major_strides(tuple(data[k] for k in order))
    strides = [0] * len(data)
    for position, mode in enumerate(order):
        strides[mode] = 0 if data[mode] == 1 and shape[mode] != 1 else laid[position]
    return device_array(host_values(p, values), shape, tuple(strides), p.dtype)


def host_values(p: TensorParam, values: np.ndarray) -> np.ndarray:
    """float32 `values` as tensor `p`'s element type (bf16 as its bit patterns)."""
    if p.dtype == "bf16":
        return bf16_bits(values)
    if p.dtype not in NUMPY_DTYPES:
        raise ValueError(f"tensor '{p.name}': random {p.dtype} data is not supported")
    return values.astype(NUMPY_DTYPES[p.dtype])


def device_array(
    host: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...], dtype: str
) -> DeviceArray:
    """`host` copied into new device memory, viewed with `shape` and `strides` (in elements),
    freed when the DeviceArray is."""
    ptr = driver.to_device(host, 0)
    array = DeviceArray(ptr, shape, strides, dtype)
    # Not at exit: the process's end frees device memory, and a driver shutting down might not.
    weakref.finalize(array, driver.free, ptr).atexit = False
    return array


def bytes_moved(manifest: Manifest, sizes: dict[str, int]) -> int:
    """Each tensor's data read or written once: the least traffic the kernel can have."""
    total = 0
    for name, shape in shapes(manifest, sizes).items():
        p = next(p for p in manifest.tensors() if p.name == name)
        n = 1
        for d in stored(p, shape):
            n *= d
        total += n * DTYPE_SIZES[p.dtype]
    return total


def time_ms(fn: Any, warmup: int = 5, iters: int = 15, inner: int = 20) -> float:
    """Median over `iters` samples of `inner` back-to-back launches timed with CUDA events on
    the legacy default stream (where a launch without a framework's stream goes, and torch's
    default stream).

    Back-to-back launches amortise the Python launch gap, so the figure is the kernel's.
    """
    driver.current_context()
    for _ in range(warmup):
        fn()
    driver.synchronize_context()
    start, end = driver.event(), driver.event()
    try:
        times = []
        for _ in range(iters):
            driver.record(start, 0)
            for _ in range(inner):
                fn()
            driver.record(end, 0)
            times.append(driver.elapsed_ms(start, end) / inner)
    finally:
        driver.destroy_event(start)
        driver.destroy_event(end)
    return statistics.median(times)


def time_graph_ms(fn: Any, iters: int = 15, inner: int = 20) -> float:
    """Like `time_ms`, but the `inner` calls are captured once in a CUDA graph and replayed, so
    the figure is the GPU's alone even where a call's host side outlasts its kernels."""
    torch = _torch()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up (module loads, autotuning) outside the capture
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(inner):
            fn()
    return time_ms(graph.replay, warmup=1, iters=iters, inner=1) / inner

"""Runtime: random inputs, timing and bandwidth for a bundle (`tilec run`; needs torch)."""

from __future__ import annotations

import statistics
from typing import Any

from tilec.runtime.bundle import DTYPE_SIZES, Manifest, ScalarParam, TensorParam
from tilec.runtime.formula import evaluate

TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32"}


def _torch() -> Any:
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the machine
        raise RuntimeError("tilec run needs torch to make device tensors") from None
    return torch


def shapes(manifest: Manifest, sizes: dict[str, int]) -> dict[str, tuple[int, ...]]:
    """Each tensor parameter's concrete shape, from the size symbols."""
    out = {}
    for p in manifest.tensors():
        try:
            out[p.name] = tuple(evaluate(d, {**manifest.constants, **sizes}) for d in p.shape)
        except Exception as exc:  # noqa: BLE001 - reported with the missing name
            raise ValueError(
                f"tensor '{p.name}' has shape {p.shape}: give --size ({exc})"
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
    """torch tensors with standard-normal values (never zeros), float scalars of 1.5 and
    integer scalars of `sizes[name]` (3 when not given); a broadcast argument (stride 0) is its
    data expanded, as `bias.expand(M, N)`; a tensor whose layout makes another mode than the
    last contiguous (the transpose of a row-major one) is laid out so."""
    torch = _torch()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dims = shapes(manifest, sizes)
    args: list[Any] = []
    for p in manifest.params:
        if isinstance(p, TensorParam):
            dtype = getattr(torch, TORCH_DTYPES[p.dtype])
            data = stored(p, dims[p.name])
            order = unit_mode_last(p, len(data))
            back = sorted(range(len(order)), key=order.__getitem__)
            t = torch.randn([data[k] for k in order], generator=gen, device="cuda")
            args.append(t.to(dtype).permute(back).expand(dims[p.name]))
        elif isinstance(p, ScalarParam):
            integer = p.dtype.startswith(("i", "u"))
            args.append(sizes.get(p.name, 3) if integer else 1.5)
    return args


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
    """Median over `iters` samples of `inner` back-to-back launches timed with CUDA events.

    Back-to-back launches amortise the Python launch gap, so the figure is the kernel's.
    """
    torch = _torch()
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / inner)
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

"""Runtime: the few CUDA driver calls the launcher makes, through cuda.bindings, all checked."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
from cuda.bindings import driver as cu

from tilec.targets import STATIC_SMEM


class CudaError(RuntimeError):
    """A CUresult other than CUDA_SUCCESS; the message names the call and the error."""


NO_GPU = (
    "no CUDA driver / GPU found ({why}): launching a kernel needs an NVIDIA GPU and its driver; "
    "compiling and 'tilec build' need neither"
)
# cuInit's answers on a machine that has the driver library but no usable GPU.
_NO_DEVICE = ("CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA_ERROR_NOT_SUPPORTED")


def init() -> None:
    """cuInit, or a CudaError saying that no driver or GPU is there (cuda-python raises its own
    error from the first call when libcuda.so is missing: that is turned into ours)."""
    try:
        result = cu.cuInit(0)
    except RuntimeError:  # cuda.pathfinder's DynamicLibNotFoundError, and kin
        raise CudaError(
            NO_GPU.format(why="the driver library libcuda.so cannot be loaded")
        ) from None
    try:
        check(result, "cuInit")
    except CudaError as exc:
        if any(name in str(exc) for name in _NO_DEVICE):
            raise CudaError(NO_GPU.format(why=str(exc))) from None
        raise


def check(result: tuple[Any, ...], call: str) -> Any:
    """The values of a cuda.bindings call, or CudaError naming `call` and the CUresult."""
    err, *values = result
    if err != cu.CUresult.CUDA_SUCCESS:
        _, name = cu.cuGetErrorName(err)
        _, text = cu.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else str(err)
        text = text.decode() if isinstance(text, bytes) else ""
        raise CudaError(f"{call} failed: {name}: {text}")
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


_initialised = False
_SUCCESS = cu.CUresult.CUDA_SUCCESS


def current_context(device: int | None = None) -> int:
    """The current CUDA context (as an int), making device's primary context current if none.

    Frameworks (torch, cupy) already made their primary context current on this thread; we
    join it rather than create our own, so pointers and streams are shared.
    """
    global _initialised
    if _initialised:  # every launch asks: the answer unpacked here, not through `check`
        err, ctx = cu.cuCtxGetCurrent()
        handle = int(ctx) if err == _SUCCESS else 0
        if handle:
            return handle
    else:
        init()
        _initialised = True
    ctx = check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(ctx) != 0:
        return int(ctx)
    dev = check(cu.cuDeviceGet(device or 0), "cuDeviceGet")
    ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return int(ctx)


def sm_count(device: int | None = None) -> int:
    """The number of SMs of `device` (default: the current context's device or device 0)."""
    current_context(device)
    dev = check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
    attr = cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    return int(check(cu.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute"))


def capability(device: int | None = None) -> tuple[int, int]:
    """The compute capability (major, minor) of `device` (as `sm_count` finds it)."""
    current_context(device)
    dev = check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
    attrs = cu.CUdevice_attribute
    major = check(
        cu.cuDeviceGetAttribute(attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute",
    )
    minor = check(
        cu.cuDeviceGetAttribute(attrs.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute",
    )
    return int(major), int(minor)


def device_name(device: int | None = None) -> str:
    """The device's name (`NVIDIA H200`), as `capability` finds the device."""
    current_context(device)
    dev = check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
    raw = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
    return bytes(raw).split(b"\0", 1)[0].decode(errors="replace")


def driver_version() -> int:
    """The CUDA driver's version (12080 for 12.8)."""
    init()
    return int(check(cu.cuDriverGetVersion(), "cuDriverGetVersion"))


def copy(dst: int, src: int, nbytes: int, stream: int) -> None:
    """A device-to-device copy of `nbytes` on `stream` (the copy ceiling's measure)."""
    check(cu.cuMemcpyDtoDAsync(dst, src, nbytes, cu.CUstream(stream)), "cuMemcpyDtoDAsync")


def load_function(ptx: str, entry: str, dynamic_smem: int) -> tuple[Any, Any]:
    """(CUmodule, CUfunction) of `entry` in `ptx`, JIT-compiled into the current context."""
    module = check(cu.cuModuleLoadData(ptx.encode() + b"\0"), "cuModuleLoadData")
    function = check(
        cu.cuModuleGetFunction(module, entry.encode()), f"cuModuleGetFunction({entry})"
    )
    set_max_dynamic_smem(function, dynamic_smem)
    return module, function


# Kernels get 48 KiB of dynamic shared memory unless they opt in to more.
DEFAULT_DYNAMIC_SMEM = STATIC_SMEM


def set_max_dynamic_smem(function: Any, nbytes: int) -> None:
    if nbytes <= DEFAULT_DYNAMIC_SMEM:
        return
    attr = cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check(cu.cuFuncSetAttribute(function, attr, nbytes), f"cuFuncSetAttribute(smem={nbytes})")


def max_active_clusters(
    function: Any, block: tuple[int, int, int], dynamic_smem: int, cluster: int, grid_x: int
) -> int:
    """How many clusters of `cluster` blocks (along x) of `function` the current device holds
    at once (cuOccupancyMaxActiveClusters; a cluster's blocks share one GPC)."""
    config = cu.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid_x, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block
    config.sharedMemBytes = dynamic_smem
    attr = cu.CUlaunchAttribute()
    attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x = cluster
    attr.value.clusterDim.y = attr.value.clusterDim.z = 1
    config.attrs, config.numAttrs = [attr], 1
    return int(
        check(cu.cuOccupancyMaxActiveClusters(function, config), "cuOccupancyMaxActiveClusters")
    )


_streams: dict[int, Any] = {}  # handle -> CUstream, made once per stream


class Packed:
    """Launch parameters as cuLaunchKernel takes them: the values (ctypes objects, in launch
    order) and the array of their addresses. The driver copies the values at each launch, so
    one Packed may serve many launches as long as nobody changes its values."""

    __slots__ = ("address", "pointers", "values")

    def __init__(self, values: list[ctypes._SimpleCData]) -> None:
        self.values = values
        self.pointers = (ctypes.c_void_p * max(len(values), 1))(
            *[ctypes.addressof(p) for p in values]
        )
        self.address = ctypes.addressof(self.pointers)


def launch(
    function: Any,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    dynamic_smem: int,
    stream: int,
    params: list[ctypes._SimpleCData] | Packed,
) -> None:
    """cuLaunchKernel with `params` (ctypes values in launch order, or a Packed) on `stream`."""
    packed = params if isinstance(params, Packed) else Packed(params)
    handle = _streams.get(stream)
    if handle is None:
        handle = _streams[stream] = cu.CUstream(stream)
    result = cu.cuLaunchKernel(function, *grid, *block, dynamic_smem, handle, packed.address, 0)
    if result[0] != cu.CUresult.CUDA_SUCCESS:  # the message is built only for a failure
        check(result, f"cuLaunchKernel(grid={grid}, block={block}, smem={dynamic_smem})")


def alloc(nbytes: int) -> int:
    return int(check(cu.cuMemAlloc(max(nbytes, 1)), f"cuMemAlloc({nbytes})"))


def free(ptr: int) -> None:
    check(cu.cuMemFree(cu.CUdeviceptr(ptr)), "cuMemFree")


def to_device(host: np.ndarray, stream: int) -> int:
    """A new device buffer holding a contiguous copy of `host`."""
    data = np.ascontiguousarray(host)
    ptr = alloc(data.nbytes)
    check(
        cu.cuMemcpyHtoDAsync(
            cu.CUdeviceptr(ptr), data.ctypes.data, data.nbytes, cu.CUstream(stream)
        ),
        "cuMemcpyHtoDAsync",
    )
    # The copy reads `data` later; wait so a temporary contiguous copy may be freed.
    synchronize(stream)
    return ptr


def to_host(ptr: int, host: np.ndarray, stream: int) -> None:
    """Copies the device buffer at `ptr` back into `host` (any strides), after `stream`."""
    data = np.empty(host.shape, host.dtype)
    check(
        cu.cuMemcpyDtoHAsync(
            data.ctypes.data, cu.CUdeviceptr(ptr), data.nbytes, cu.CUstream(stream)
        ),
        "cuMemcpyDtoHAsync",
    )
    synchronize(stream)
    np.copyto(host, data)


def capturing(stream: int) -> bool:
    """Whether `stream` is being captured into a CUDA graph (or cannot be asked: the legacy
    stream while another stream captures)."""
    result, status = cu.cuStreamIsCapturing(cu.CUstream(stream))
    if result != cu.CUresult.CUDA_SUCCESS:
        return True
    return status != cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


def order_after(stream: int, earlier: int) -> bool:
    """Makes `stream` wait for the work already issued to stream `earlier` (an event recorded
    there now, waited on here; nothing blocks the host). Not where either stream is being
    captured into a CUDA graph (a captured launch runs when the graph does; an event of a
    capture would pull the other stream into it): False then."""
    if capturing(stream) or capturing(earlier):
        return False
    event = check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
    try:
        check(cu.cuEventRecord(event, cu.CUstream(earlier)), "cuEventRecord")
        check(cu.cuStreamWaitEvent(cu.CUstream(stream), event, 0), "cuStreamWaitEvent")
    finally:
        check(cu.cuEventDestroy(event), "cuEventDestroy")  # freed once the wait is met
    return True


def synchronize(stream: int) -> None:
    check(cu.cuStreamSynchronize(cu.CUstream(stream)), "cuStreamSynchronize")


def synchronize_context() -> None:
    """Wait for all work of the current context, every stream's."""
    check(cu.cuCtxSynchronize(), "cuCtxSynchronize")


def event() -> Any:
    """A CUevent that records time (for `elapsed_ms`)."""
    return check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate")


def record(event: Any, stream: int) -> None:
    check(cu.cuEventRecord(event, cu.CUstream(stream)), "cuEventRecord")


def elapsed_ms(start: Any, end: Any) -> float:
    """Milliseconds between two recorded events, once `end` has happened (waits for it)."""
    check(cu.cuEventSynchronize(end), "cuEventSynchronize")
    return float(check(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime"))


def destroy_event(event: Any) -> None:
    check(cu.cuEventDestroy(event), "cuEventDestroy")


def encode_tma_tiled(args: dict[str, Any], address: int) -> bytes:
    """The 128-byte CUtensorMap for `args` (from binding.tma_encode_args) at `address`."""
    l2 = args["l2_promotion"]
    tensor_map = check(
        cu.cuTensorMapEncodeTiled(
            getattr(cu.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{args['dtype']}"),
            args["rank"],
            address,
            # cuda-bindings 13.x takes these as its own integer types, not Python ints.
            [cu.cuuint64_t(x) for x in args["global_dim"]],
            [cu.cuuint64_t(x) for x in args["global_strides"]],
            [cu.cuuint32_t(x) for x in args["box_dim"]],
            [cu.cuuint32_t(x) for x in args["element_strides"]],
            getattr(cu.CUtensorMapInterleave, f"CU_TENSOR_MAP_INTERLEAVE_{args['interleave']}"),
            getattr(cu.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{args['swizzle']}"),
            getattr(
                cu.CUtensorMapL2promotion,
                "CU_TENSOR_MAP_L2_PROMOTION_" + (l2 if l2 == "NONE" else f"L2_{l2}"),
            ),
            getattr(cu.CUtensorMapFloatOOBfill, f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{args['oob_fill']}"),
        ),
        "cuTensorMapEncodeTiled",
    )
    return ctypes.string_at(tensor_map.getPtr(), 128)


def alloc_pinned(nbytes: int) -> int:
    """Page-locked host memory (a copy from it may be captured into a CUDA graph)."""
    return int(check(cu.cuMemHostAlloc(max(nbytes, 1), 0), f"cuMemHostAlloc({nbytes})"))


def write_host(host: int, data: bytes) -> None:
    ctypes.memmove(host, data, len(data))


def copy_to_device(device: int, host: int, nbytes: int, stream: int) -> None:
    """Copies `nbytes` at host address `host` to `device` on `stream` (not waited for)."""
    check(
        cu.cuMemcpyHtoDAsync(cu.CUdeviceptr(device), host, nbytes, cu.CUstream(stream)),
        "cuMemcpyHtoDAsync",
    )

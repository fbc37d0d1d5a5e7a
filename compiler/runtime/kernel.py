"""Runtime: `Kernel`, a loaded bundle that binds arguments and launches through the driver."""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any

from tilec.runtime import driver
from tilec.runtime.binding import Binding, bind, user_params
from tilec.runtime.bundle import Manifest, read_bundle, write_bundle


def _stream_handle(stream: Any) -> int:
    """A CUstream handle as an int from torch/cupy stream objects, CUstream or int."""
    for attr in ("cuda_stream", "ptr", "handle"):  # torch, cupy, cuda.core
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


def _framework_stream(binding: Binding) -> int:
    """The caller's framework's current stream, so the launch orders after its work."""
    frameworks = {v.framework for v in binding.views.values()}
    if "torch" in frameworks:
        torch = sys.modules["torch"]  # loaded, since a torch tensor was passed
        device = next(v.device for v in binding.views.values() if v.framework == "torch")
        return int(torch.cuda.current_stream(device).cuda_stream)
    if "cupy" in frameworks:
        return int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    return 0  # the legacy default stream


class Kernel:
    """A compiled kernel: `kernel(*tensors_and_scalars, stream=None)` launches it."""

    def __init__(self, manifest: Manifest, ptx: str) -> None:
        self.manifest = manifest
        self.ptx = ptx
        self._functions: dict[int, Any] = {}  # context → CUfunction; modules live as long
        self._modules: dict[int, Any] = {}
        self._tma_buffers: dict[tuple[int, bytes], int] = {}  # (context, map) → device copy

    def __repr__(self) -> str:
        args = ", ".join(f"{p.name}: {p.dtype}" for p in user_params(self.manifest))
        return f"<tilec.Kernel {self.manifest.entry}({args}) for {self.manifest.target}>"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Writes this kernel as a bundle directory at `path`."""
        return write_bundle(path, self.manifest, self.ptx)

    def bind(self, *args: Any) -> Binding:
        """Checks the arguments and computes sizes and launch shape; needs no GPU."""
        return bind(self.manifest, args)

    def _function(self, ctx: int) -> Any:
        if ctx not in self._functions:
            try:
                module, function = driver.load_function(
                    self.ptx, self.manifest.entry, self._max_smem_hint()
                )
            except driver.CudaError as err:
                raise driver.CudaError(
                    f"{err} (loading {self.manifest.entry!r}, built for {self.manifest.target})"
                ) from None
            self._modules[ctx], self._functions[ctx] = module, function
        return self._functions[ctx]

    def _max_smem_hint(self) -> int:
        smem = self.manifest.dynamic_smem
        return smem if isinstance(smem, int) else 0

    def __call__(self, *args: Any, stream: Any = None) -> None:
        b = bind(self.manifest, args)
        if 0 in b.grid:
            return  # an empty problem: nothing to launch, nothing to copy back
        device = next((v.device for v in b.views.values() if v.device is not None), None)
        ctx = driver.current_context(device)
        function = self._function(ctx)
        if b.dynamic_smem > self._max_smem_hint():
            driver.set_max_dynamic_smem(function, b.dynamic_smem)
        handle = _framework_stream(b) if stream is None else _stream_handle(stream)
        staged: list[int] = []
        try:
            for view in b.views.values():
                if view.host is not None:
                    view.ptr = driver.to_device(view.host, handle)
                    staged.append(view.ptr)
            params: list[ctypes._SimpleCData] = []
            for slot in b.slots:
                if isinstance(slot, tuple) and slot[0] == "tensor":
                    params.append(ctypes.c_uint64(b.views[slot[1]].ptr))
                elif isinstance(slot, tuple):
                    params.append(ctypes.c_uint64(self._tma_pointer(ctx, b, slot[1], handle)))
                else:
                    params.append(slot)
            driver.launch(function, b.grid, b.block, b.dynamic_smem, handle, params)
            for name, view in b.views.items():
                if view.host is not None and self._intent(name) != "in":
                    driver.to_host(view.ptr, view.host, handle)
        finally:
            if staged:
                driver.synchronize(handle)
                for ptr in staged:
                    driver.free(ptr)

    def _intent(self, name: str) -> str:
        return next(t.intent for t in self.manifest.tensors() if t.name == name)

    def _tma_pointer(self, ctx: int, b: Binding, descriptor: str, stream: int) -> int:
        spec = next(d for d in self.manifest.tma if d.name == descriptor)
        data = driver.encode_tma_tiled(b.tma[descriptor], b.views[spec.tensor].ptr)
        # Device copies are kept per distinct map: a launch still in flight may read an older one.
        key = (ctx, data)
        if key not in self._tma_buffers:
            self._tma_buffers[key] = driver.upload(data, stream)
        return self._tma_buffers[key]


def load(path: str | os.PathLike[str]) -> Kernel:
    """The kernel in the bundle directory at `path` (the GPU is touched at the first launch)."""
    manifest, ptx = read_bundle(path)
    return Kernel(manifest, ptx)

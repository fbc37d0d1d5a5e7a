"""Runtime: which stream a launch goes to: the caller's framework's current stream (torch's,
cupy's), read once per launch, or a stream object or handle the caller passes."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from tilec.runtime.binding import Binding


def stream_handle(stream: Any) -> int:
    """A CUstream handle as an int from torch/cupy stream objects, CUstream or int."""
    for attr in ("cuda_stream", "ptr", "handle"):  # torch, cupy, cuda.core
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    return int(stream)


def framework_of(binding: Binding) -> tuple[str, int | None]:
    """The caller's framework whose stream a launch joins ("torch", "cupy" or ""), and the
    device of its first tensor."""
    frameworks = {v.framework for v in binding.views.values()}
    if "torch" in frameworks:
        return "torch", next(v.device for v in binding.views.values() if v.framework == "torch")
    return ("cupy" if "cupy" in frameworks else ""), None


def stream_reader(framework: str, device: int | None) -> Callable[[], int]:
    """What reads the framework's current stream (so a launch orders after the caller's work),
    resolved once for a plan's launches: torch's C++ getter for the tensors' device where torch
    has one (no Stream object made); the legacy default stream without a framework."""
    if framework == "torch":
        torch = sys.modules["torch"]  # loaded, since a torch tensor was passed
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None and device is not None:
            return functools.partial(raw, device)
        return lambda: int(torch.cuda.current_stream(device).cuda_stream)
    if framework == "cupy":
        cupy = sys.modules["cupy"]
        return lambda: int(cupy.cuda.get_current_stream().ptr)
    return lambda: 0


def current_stream(framework: str, device: int | None) -> int:
    """The framework's current stream now (`stream_reader`'s, read once)."""
    return int(stream_reader(framework, device)())

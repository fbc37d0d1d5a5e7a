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


def current_stream(framework: str, device: int | None) -> int:
    """The framework's current stream, so the launch orders after the caller's work."""
    if framework == "torch":
        torch = sys.modules["torch"]  # loaded, since a torch tensor was passed
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object: faster
        if raw is not None and device is not None:
            return int(raw(device))
        return int(torch.cuda.current_stream(device).cuda_stream)
    if framework == "cupy":
        return int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    return 0  # the legacy default stream


def stream_reader(framework: str, device: int | None) -> Callable[[], int]:
    """What reads the framework's current stream for a plan's launches, resolved once: torch's
    C++ getter for the tensors' device where torch has one (no Stream object made)."""
    if framework == "torch" and device is not None:
        raw = getattr(sys.modules["torch"]._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return functools.partial(raw, device)
    return functools.partial(current_stream, framework, device)

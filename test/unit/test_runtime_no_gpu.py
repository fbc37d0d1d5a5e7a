"""The runtime where there is no GPU: the documented CudaError, and `tilec run`'s inputs and
timing made through the driver (faked here) with numpy, never torch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tilec.runtime import Kernel, Manifest, ScalarParam, SizeParam, TensorParam, driver
from tilec.runtime.driver import CudaError
from tilec.runtime.tensors import DeviceArray, as_view, bf16_bits

NO_GPU = "no CUDA driver / GPU found"


def vadd_manifest() -> Manifest:
    return Manifest(
        entry="vadd",
        target="sm_80",
        params=(
            TensorParam("x", "f32", ("N",), intent="in"),
            TensorParam("y", "f32", ("N",), intent="in"),
            TensorParam("out", "f32", ("N",), intent="out"),
            SizeParam("N", ("x", 0)),
        ),
        grid=("cdiv(N, 256)", 1, 1),
        block=(256, 1, 1),
    )


def no_driver_library(flags: int) -> Any:
    """What cuda-python's first driver call does where libcuda.so is missing."""
    from cuda.pathfinder import DynamicLibNotFoundError

    raise DynamicLibNotFoundError('"cuda" is an NVIDIA driver library and can only be found ...')


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver as on a machine without one (also on a machine that has a GPU)."""
    monkeypatch.setattr(driver, "_initialised", False)
    monkeypatch.setattr(driver.cu, "cuInit", no_driver_library)


def test_a_launch_without_a_driver_is_the_documented_cuda_error(no_gpu: None) -> None:
    kernel = Kernel(vadd_manifest(), "// never loaded\n")
    x = np.ones(300, np.float32)
    with pytest.raises(CudaError, match=NO_GPU) as info:
        kernel(x, x, np.empty_like(x))
    assert "libcuda.so" in str(info.value) and "compiling" in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def failing_cuinit(monkeypatch: pytest.MonkeyPatch, name: str, text: str) -> None:
    """cuInit answering `name` (a CUresult), and the driver's name and text for it."""
    cu = driver.cu
    monkeypatch.setattr(driver, "_initialised", False)
    monkeypatch.setattr(cu, "cuInit", lambda flags: (getattr(cu.CUresult, name),))
    ok = cu.CUresult.CUDA_SUCCESS
    monkeypatch.setattr(cu, "cuGetErrorName", lambda err: (ok, name.encode()))
    monkeypatch.setattr(cu, "cuGetErrorString", lambda err: (ok, text.encode()))


def test_cuinit_finding_no_device_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    failing_cuinit(monkeypatch, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected")
    with pytest.raises(CudaError, match=f"{NO_GPU} \\(cuInit failed: CUDA_ERROR_NO_DEVICE"):
        driver.current_context()


def test_other_cuinit_failures_stay_as_they_were(monkeypatch: pytest.MonkeyPatch) -> None:
    failing_cuinit(monkeypatch, "CUDA_ERROR_INVALID_VALUE", "invalid argument")
    with pytest.raises(CudaError, match="^cuInit failed: CUDA_ERROR_INVALID_VALUE") as info:
        driver.current_context()
    assert NO_GPU not in str(info.value)


def test_tilec_run_without_a_gpu_is_one_line(
    no_gpu: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tilec.cli import main
    from tilec.runtime import write_bundle

    bundle = write_bundle(tmp_path / "vadd", vadd_manifest(), "// never loaded\n")
    assert main(["run", str(bundle), "--size", "N=1000"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"error: tilec run {bundle}: {NO_GPU}")
    assert "torch" not in err and "Traceback" not in err


def test_tilec_run_checks_its_sizes_before_the_gpu(
    no_gpu: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tilec.cli import main
    from tilec.runtime import write_bundle

    bundle = write_bundle(tmp_path / "vadd", vadd_manifest(), "// never loaded\n")
    assert main(["run", str(bundle)]) == 1
    err = capsys.readouterr().err
    assert "tensor 'x' has shape ('N',): give its sizes, --size NAME=INT" in err
    assert NO_GPU not in err


class FakeMemory:
    """The driver calls random_args and time_ms make, recorded: device memory is host copies."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.uploads: dict[int, np.ndarray] = {}
        self.freed: list[int] = []
        self.recorded: list[tuple[str, int]] = []
        monkeypatch.setattr(driver, "current_context", lambda device=None: 1)
        monkeypatch.setattr(driver, "to_device", self.to_device)
        monkeypatch.setattr(driver, "free", self.freed.append)
        monkeypatch.setattr(driver, "synchronize_context", lambda: None)
        events = iter(["start", "end"])
        monkeypatch.setattr(driver, "event", lambda: next(events))
        monkeypatch.setattr(driver, "record", lambda e, s: self.recorded.append((e, s)))
        monkeypatch.setattr(driver, "destroy_event", lambda e: None)
        self.samples = iter([3.0, 1.0, 2.0])
        monkeypatch.setattr(driver, "elapsed_ms", lambda start, end: next(self.samples))

    def to_device(self, host: np.ndarray, stream: int) -> int:
        ptr = 0x10000 * (len(self.uploads) + 1)
        self.uploads[ptr] = host.copy()
        return ptr


def test_random_args_are_device_arrays_laid_out_as_the_manifest_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tilec.runtime.measure import random_args

    memory = FakeMemory(monkeypatch)
    manifest = Manifest(
        entry="k",
        target="sm_80",
        params=(
            TensorParam("A", "f16", ("M", "K"), intent="in"),
            TensorParam("B", "bf16", ("M", "K"), strides=(1, "M"), intent="in"),  # M contiguous
            TensorParam("bias", "f32", ("M", "K"), strides=(0, 1), intent="in"),  # broadcast
            TensorParam("C", "i32", ("M", "K")),
            ScalarParam("alpha", "f32"),
            ScalarParam("K", "i32"),
        ),
        grid=(1, 1, 1),
        block=(32, 1, 1),
    )
    a, b, bias, c, alpha, k = random_args(manifest, {"M": 3, "K": 5})
    assert (alpha, k) == (1.5, 5)
    for arr in (a, b, bias, c):
        assert isinstance(arr, DeviceArray) and arr.shape == (3, 5)
    assert (a.strides, a.dtype) == ((5, 1), "f16")
    assert (b.strides, b.dtype) == ((1, 3), "bf16")  # allocated K-outer, M-inner
    assert (bias.strides, c.strides) == ((0, 1), (5, 1))
    host = {arr.ptr: memory.uploads[arr.ptr] for arr in (a, b, bias, c)}
    assert host[a.ptr].dtype == np.float16 and host[a.ptr].shape == (3, 5)
    assert host[b.ptr].dtype == np.uint16 and host[b.ptr].shape == (5, 3)
    assert host[bias.ptr].shape == (1, 5)  # only the stored row
    assert host[c.ptr].dtype == np.int32
    assert np.all(host[a.ptr] != 0) and np.isfinite(host[a.ptr]).all()
    view = as_view(b, "B")
    assert (view.ptr, view.shape, view.strides, view.dtype) == (b.ptr, (3, 5), (1, 3), "bf16")
    del a
    assert memory.freed == [0x10000]  # a DeviceArray frees its memory when dropped


def test_random_args_refuse_a_dtype_numpy_cannot_make(monkeypatch: pytest.MonkeyPatch) -> None:
    from tilec.runtime.measure import random_args

    FakeMemory(monkeypatch)
    manifest = Manifest("k", "sm_90a", (TensorParam("Q", "f8e4m3", (4,)),), (1, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="tensor 'Q': random f8e4m3 data is not supported"):
        random_args(manifest, {})


def test_bf16_bits_round_to_nearest_even() -> None:
    values = np.array([1.0, -2.5, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-8 + 2**-20], np.float32)
    # 1 + 2^-8 is halfway between bf16's 1.0 and 1 + 2^-7: even (1.0); 1 + 3·2^-8 rounds up
    # to 1 + 2^-6 (even), and anything past halfway goes up.
    assert bf16_bits(values).tolist() == [0x3F80, 0xC020, 0x3F80, 0x3F82, 0x3F81]


def test_time_ms_times_inner_launches_between_driver_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tilec.runtime.measure import time_ms

    memory = FakeMemory(monkeypatch)
    calls = []
    ms = time_ms(lambda: calls.append(1), warmup=2, iters=3, inner=4)
    assert len(calls) == 2 + 3 * 4
    assert ms == 2.0 / 4  # the median sample over the launches in it
    assert memory.recorded == [("start", 0), ("end", 0)] * 3  # both on the default stream

"""GPU tier: the hand-written vadd bundle runs from every kind of array and matches torch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips: needs a GPU to be useful)

BUNDLES = Path(
    os.environ.get("TILEC_BUNDLES", Path(__file__).resolve().parents[2] / "build" / "bundles")
)
NAMES = ["vadd_sm90a", "vadd_sm80"]
if not all((BUNDLES / n / "manifest.json").is_file() for n in NAMES):
    pytest.skip(
        f"no prebuilt bundles in {BUNDLES} (test/gpu/build_bundles.py)", allow_module_level=True
    )

# Ragged: none is a multiple of the 256-thread block, one is smaller than a block.
SIZES = [1, 255, 257, 1_000_003, (1 << 24) + 17]


def inputs(n: int, seed: int) -> tuple[Any, Any, Any]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(n, device="cuda", generator=g)
    b = torch.randn(n, device="cuda", generator=g)
    c = torch.full((n,), float("nan"), device="cuda")  # poisoned: every element must be written
    return a, b, c


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", SIZES)
def test_torch_tensors(name: str, n: int) -> None:
    kernel = load(BUNDLES / name)
    a, b, c = inputs(n, n)
    kernel(a, b, c)
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)  # one f32 add per element: bit-exact


def test_does_not_write_past_n() -> None:
    kernel = load(BUNDLES / "vadd_sm90a")
    n = 1000
    a, b, big = inputs(n + 300, 7)
    kernel(a[:n], b[:n], big[:n])
    torch.cuda.synchronize()
    assert torch.equal(big[:n], a[:n] + b[:n])
    assert torch.isnan(big[n:]).all()  # the tail block's idle threads stored nothing


def test_side_stream() -> None:
    kernel = load(BUNDLES / "vadd_sm90a")
    a, b, c = inputs(300_001, 3)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        kernel(a, b, c)  # picks up torch's current stream: `side`
    side.synchronize()
    assert torch.equal(c, a + b)
    c.fill_(float("nan"))
    kernel(a, b, c, stream=side)
    side.synchronize()
    assert torch.equal(c, a + b)


def test_numpy_arrays_round_trip() -> None:
    kernel = load(BUNDLES / "vadd_sm90a")
    rng = np.random.default_rng(5)
    a = rng.standard_normal(70_001).astype(np.float32)
    b = rng.standard_normal(70_001).astype(np.float32)
    c = np.full_like(a, np.nan)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a + b)


class CaiOnly:
    def __init__(self, t: Any) -> None:
        self.t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


class DlpackOnly:
    def __init__(self, t: Any) -> None:
        self.t = t

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> Any:
        return self.t.__dlpack_device__()


@pytest.mark.parametrize("wrap", [CaiOnly, DlpackOnly])
def test_interface_objects(wrap: type) -> None:
    kernel = load(BUNDLES / "vadd_sm90a")
    a, b, c = inputs(123_457, 11)
    kernel(wrap(a), wrap(b), wrap(c))
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


def test_cupy_arrays() -> None:
    cp = pytest.importorskip("cupy")
    kernel = load(BUNDLES / "vadd_sm90a")
    a = cp.random.standard_normal(99_999, dtype=cp.float32)
    b = cp.random.standard_normal(99_999, dtype=cp.float32)
    c = cp.full(99_999, cp.nan, dtype=cp.float32)
    kernel(a, b, c)
    cp.cuda.get_current_stream().synchronize()
    assert bool((c == a + b).all())


def test_errors_before_launch() -> None:
    kernel = load(BUNDLES / "vadd_sm90a")
    a, b, c = inputs(1000, 1)
    with pytest.raises(TypeError, match="argument 'B': dtype f16, expected f32"):
        kernel(a, b.half(), c)
    with pytest.raises(ValueError, match="argument 'C' dim 0 is 999, but N = 1000"):
        kernel(a, b, c[:999])
    with pytest.raises(ValueError, match="argument 'C': strides \\[2\\]"):
        kernel(a, b, torch.empty(2000, device="cuda")[::2])
    with pytest.raises(TypeError, match="argument 'A': torch tensor is on cpu"):
        kernel(a.cpu(), b, c)
    assert torch.isnan(c).all()  # nothing ran


def test_save_and_reload(tmp_path: Path) -> None:
    kernel = load(BUNDLES / "vadd_sm90a")
    again = load(kernel.save(tmp_path / "copy"))
    a, b, c = inputs(4099, 2)
    again(a, b, c)
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)

"""GPU tier: the runtime's binding, fuzzed against real bundles on the GPU.

Random calls of the example bundles (vadd, transpose, softmax, the SM80 GEMM) with ragged and
mismatched sizes, strides from slices, transposes and broadcasts (stride 0), offset (misaligned)
pointers, other dtypes, CPU tensors, numpy arrays and wrong argument counts. Each call either
raises a TypeError / ValueError before touching the GPU, or launches and matches torch (outputs
poisoned with NaN first): never a crash, a CUDA error or a wrong result. Seeds are fixed.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = Path(os.environ.get("TILEC_EXAMPLE_BUNDLES", ROOT / "build/examples"))
GEMM = Path(os.environ.get("TILEC_GEMM_BUNDLES", ROOT / "build/gemm"))
EPILOGUE = Path(os.environ.get("TILEC_EPILOGUE_BUNDLES", ROOT / "build/bundles/epilogue"))
SM90 = Path(os.environ.get("TILEC_SM90_BUNDLES", ROOT / "build/sm90"))
OTHER = {
    torch.float16: torch.float32,
    torch.float32: torch.float16,
    torch.bfloat16: torch.float16,
}


def tensor(rng: random.Random, shape: tuple[int, ...], dtype: torch.dtype) -> object:
    """A random argument of roughly `shape`: mostly right, sometimes subtly or plainly wrong."""
    if rng.random() < 0.15 and shape:
        shape = tuple(n + rng.choice([-1, 1, 7]) if rng.random() < 0.5 else n for n in shape)
        shape = tuple(max(n, 1) for n in shape)
    if rng.random() < 0.1:
        dtype = OTHER.get(dtype, torch.float32)
    kind = rng.choices(
        ["plain", "transposed", "strided", "broadcast", "offset", "cpu", "numpy"],
        [60, 8, 8, 8, 6, 4, 6],
    )[0]
    make = lambda s: torch.randn(s, device="cuda").to(dtype)  # noqa: E731
    if kind == "transposed" and len(shape) == 2:
        return make(shape[::-1]).T
    if kind == "strided" and shape:
        return make((*shape[:-1], 2 * shape[-1]))[..., ::2]
    if kind == "broadcast" and len(shape) == 2:
        return make((1, shape[1])).expand(shape)
    if kind == "offset" and shape:
        return make((*shape[:-1], shape[-1] + 1))[..., 1:]
    if kind == "cpu":
        return torch.randn(shape).to(dtype)
    if kind == "numpy" and dtype in (torch.float32, torch.float16):
        return torch.randn(shape).to(dtype).numpy()
    return make(shape)


def as_torch(x: object) -> torch.Tensor:
    return torch.from_numpy(x).cuda() if isinstance(x, np.ndarray) else x.cuda()


def poison(x: object) -> None:
    """NaN into an output (not into a broadcast view, which the launch must refuse anyway)."""
    if isinstance(x, np.ndarray):
        x.fill(np.nan)
    elif isinstance(x, torch.Tensor) and x.dtype.is_floating_point and 0 not in x.stride():
        x.fill_(float("nan"))


Case = tuple[list[object], int, Callable[[list[torch.Tensor]], torch.Tensor], float]


def vadd_case(rng: random.Random) -> Case:
    n = rng.choice([1, 4095, 4097, 100_003, rng.randint(1, 50_000)])
    args = [tensor(rng, (n,), torch.float32) for _ in range(3)]
    return args, 2, lambda a: a[0].double() + a[1].double(), 1e-6


def transpose_case(rng: random.Random) -> Case:
    m, n = rng.randint(1, 300), rng.randint(1, 300)
    args = [tensor(rng, (m, n), torch.float32), tensor(rng, (n, m), torch.float32)]
    return args, 1, lambda a: a[0].double().T, 0.0


def softmax_case(rng: random.Random) -> Case:
    rows, cols = rng.randint(1, 9), rng.choice([1, 77, 4096, 4097, rng.randint(1, 5000)])
    args = [tensor(rng, (rows, cols), torch.float16), tensor(rng, (rows, cols), torch.float16)]
    return args, 1, lambda a: torch.softmax(a[0].double(), 1), 2e-3


def batched_case(rng: random.Random) -> Case:
    l, m, n, k = rng.randint(1, 3), rng.randint(1, 200), rng.randint(1, 200), rng.choice([8, 72])
    args = [tensor(rng, s, torch.float16) for s in ((l, m, k), (l, n, k), (l, m, n))]
    args.append(0.5)
    return args, 2, lambda a: 0.5 * (a[0].double() @ a[1].double().transpose(1, 2)), 2e-3


def bias_relu_case(rng: random.Random) -> Case:
    """C = relu(alpha A B^T + beta C + bias): C is read, so it starts finite (not poisoned)."""
    m, n, k = rng.randint(1, 300), rng.randint(1, 300), rng.choice([8, 64, 72])
    args = [tensor(rng, s, torch.float16) for s in ((m, k), (n, k), (m, n))]
    bias = torch.randn(n, device="cuda").half()
    args += [bias.expand(m, n) if rng.random() < 0.9 else tensor(rng, (m, n), torch.float16)]
    args += [1.5, -0.75]
    cpu = isinstance(args[2], torch.Tensor) and not args[2].is_cuda  # refused: no reference
    old = None if cpu else as_torch(args[2]).double().clone()  # C before the launch

    def reference(a: list[torch.Tensor]) -> torch.Tensor:
        acc = 1.5 * (a[0].double() @ a[1].double().T) - 0.75 * old + a[3].double()
        return torch.relu(acc)

    return args, 2, reference, 2e-3


def gemm_case(rng: random.Random) -> Case:
    m, n, k = rng.randint(1, 300), rng.randint(1, 300), rng.choice([8, 64, 72, 136, 45])
    args = [tensor(rng, s, torch.float16) for s in ((m, k), (n, k), (m, n))]
    args.append(rng.choice([1.5, 1.5, 1.5, "1.5", 2]))
    alpha = args[3]
    return args, 2, lambda a: float(alpha) * (a[0].double() @ a[1].double().T), 2e-3


def sm90_case(rng: random.Random) -> Case:
    """examples/gemm_sm90.tile (bf16, TMA maps bound at launch): K and the rows must keep
    16-byte strides, which the random shapes and layouts break now and then."""
    m, n, k = rng.randint(1, 300), rng.randint(1, 300), rng.choice([8, 64, 72, 136, 45, 0])
    args = [tensor(rng, s, torch.bfloat16) for s in ((m, k), (n, k), (m, n))]
    return args, 2, lambda a: a[0].double() @ a[1].double().T, 1e-2


CASES = {
    "vadd": (EXAMPLES / "vadd_sm90a", vadd_case),
    "transpose": (EXAMPLES / "transpose_sm90a", transpose_case),
    "softmax": (EXAMPLES / "softmax_sm90a", softmax_case),
    "gemm": (GEMM / "default_sm90a" / "gemm_sm90a", gemm_case),
    "batched": (EPILOGUE / "batched" / "gemm_batched_sm90a", batched_case),
    "bias_relu": (EPILOGUE / "act1" / "gemm_bias_act_sm90a", bias_relu_case),
    "sm90": (SM90 / "default_bf16" / "gemm90", sm90_case),
}
READS_OUTPUT = {"bias_relu"}  # its output is also an input: not poisoned


@pytest.mark.parametrize("name", sorted(CASES))
def test_random_calls_are_refused_or_right(name: str) -> None:
    bundle, make_case = CASES[name]
    if not (bundle / "manifest.json").is_file():
        pytest.skip(f"no bundle {bundle}")
    kernel = load(bundle)
    rng = random.Random(f"fuzz-{name}")
    outcomes = {"refused": 0, "right": 0}
    for _ in range(60):
        args, out, reference, bound = make_case(rng)
        if rng.random() < 0.05:
            args = args[:-1] if rng.random() < 0.5 else [*args, args[-1]]
        if out < len(args) and name not in READS_OUTPUT:
            poison(args[out])
        try:
            kernel(*args)
        except (TypeError, ValueError):
            outcomes["refused"] += 1
            continue
        torch.cuda.synchronize()
        got = as_torch(args[out]).double()
        want = reference([as_torch(a) if not isinstance(a, float | int | str) else a for a in args])
        if name not in READS_OUTPUT:
            assert not torch.isnan(got).any(), f"{name}: unwritten outputs for {args!r:.200}"
        err = ((got - want).norm() / max(want.norm().item(), 1e-30)).item()
        assert err <= bound, (
            f"{name}: error {err} for shapes {[getattr(a, 'shape', a) for a in args]}"
        )
        outcomes["right"] += 1
    assert outcomes["refused"] > 0 and outcomes["right"] > 0, outcomes  # both sides exercised

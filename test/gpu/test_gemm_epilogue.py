"""GPU tier: the SM80 GEMM's epilogue and its strided batched form, against torch in float64.

Bundles: `python test/gpu/build_bundles.py` (on a machine with MLIR) writes
build/bundles/epilogue/act{0,1,2}/gemm_bias_act_<arch> (examples/gemm_sm80_bias_relu.tile with
ACT = none, relu, gelu), act1_beta0 (relu, -D BETA=0) and batched/gemm_batched_<arch>
(examples/gemm_sm80_batched.tile; batched_narrow with -D NARROW=1), for sm_80 and sm_90a.

Inputs are fresh randn data (f16 in, the reference in float64 on the same f16 values). C is
read by the epilogue (beta * C), so it cannot start as NaN: beta = 0 still reads it (0 * NaN is
NaN). Every output element is instead compared to the reference, which differs from what C
held, so an element left unwritten fails. The BETA = 0 build (act1_beta0) never reads C: there
C and beta start as NaN. C is in every case a view at the start of a NaN-filled buffer
whose tail must still be NaN afterwards (nothing written past the tile). The batched kernel
does not read C: there C starts as NaN, inside a wider NaN buffer whose extra columns must stay
NaN.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU", allow_module_level=True)

from tilec.runtime import load  # noqa: E402  (after the skips)

BUNDLES = Path(
    os.environ.get(
        "TILEC_EPILOGUE_BUNDLES",
        Path(__file__).resolve().parents[2] / "build/bundles/epilogue",
    )
)
ARCHES = [a for a in ("sm80", "sm90a") if (BUNDLES / "act1" / f"gemm_bias_act_{a}").is_dir()]
if not ARCHES:
    pytest.skip(f"no epilogue bundles in {BUNDLES}", allow_module_level=True)

# 256×256×1000: whole M and N tiles, ragged K (its last tile is the prologue's; fast loop).
SHAPES = [(128, 128, 32), (129, 257, 72), (1, 1, 8), (300, 136, 1024), (256, 256, 1000)]
ACTS = {0: lambda x: x, 1: torch.relu, 2: torch.nn.functional.gelu}  # gelu: the erf form
PAD = 64  # NaN elements after each output


def randn(*shape: int, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(*shape, device="cuda", generator=g).half()


def after_nan(shape: tuple[int, ...], fill: torch.Tensor | None = None) -> torch.Tensor:
    """A contiguous f16 tensor of `shape` (holding `fill`, else NaN) followed by PAD NaNs."""
    n = 1
    for extent in shape:
        n *= extent
    buf = torch.full((n + PAD,), float("nan"), device="cuda", dtype=torch.float16)
    view = buf[:n].view(shape)
    if fill is not None:
        view.copy_(fill)
    return view


def assert_tail_is_nan(view: torch.Tensor) -> None:
    n = view.numel()
    tail = torch.as_strided(view, (PAD,), (1,), view.storage_offset() + n)
    assert torch.isnan(tail).all(), "wrote past the end of C"


def check(out: torch.Tensor, ref: torch.Tensor) -> None:
    assert not torch.isnan(out).any(), "NaN outputs"
    # f16 output: half an ulp is at most 2^-11 of the value; the f32 accumulation is far finer.
    torch.testing.assert_close(out.double(), ref, rtol=2e-3, atol=1e-2)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("act", sorted(ACTS))
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
@pytest.mark.parametrize("beta", [0.0, -0.75])
def test_epilogue_matches_torch(arch: str, act: int, m: int, n: int, k: int, beta: float) -> None:
    kernel = load(BUNDLES / f"act{act}" / f"gemm_bias_act_{arch}")
    seed = m * 7 + n * 3 + k + act
    a, b = randn(m, k, seed=seed), randn(n, k, seed=seed + 1)
    bias = randn(n, seed=seed + 2)
    # beta = 0: C holds large finite values, which any unwritten element would keep.
    start = randn(m, n, seed=seed + 3) if beta else torch.full((m, n), 1000.0, device="cuda")
    c = after_nan((m, n), start.half())
    old = c.double()  # what C held, as f16
    alpha = 1.5
    kernel(a, b, c, bias.expand(m, n), alpha, beta)  # bias: strides (0, 1)
    torch.cuda.synchronize()
    ref = ACTS[act](alpha * (a.double() @ b.double().T) + beta * old + bias.double())
    check(c, ref)
    assert_tail_is_nan(c)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize(("m", "n", "k"), SHAPES)
def test_epilogue_without_c(arch: str, m: int, n: int, k: int) -> None:
    """-D BETA=0: C is never read, so it may start as NaN and beta may be NaN."""
    kernel = load(BUNDLES / "act1_beta0" / f"gemm_bias_act_{arch}")
    seed = m * 5 + n * 11 + k
    a, b = randn(m, k, seed=seed), randn(n, k, seed=seed + 1)
    bias = randn(n, seed=seed + 2)
    c = after_nan((m, n))
    kernel(a, b, c, bias.expand(m, n), 1.5, float("nan"))
    torch.cuda.synchronize()
    check(c, torch.relu(1.5 * (a.double() @ b.double().T) + bias.double()))
    assert_tail_is_nan(c)


def batched_operands(case: str, l: int, m: int, n: int, k: int) -> tuple[torch.Tensor, ...]:
    """A (L, M, K), B (L, N, K) and C (L, M, N, NaN) of the case, and C's NaN buffer."""
    seed = l * 1000 + m + n + k
    if case == "contiguous":
        a, b = randn(l, m, k, seed=seed), randn(l, n, k, seed=seed + 1)
    else:
        # A as an (M, L, K) tensor transposed: batch stride K, row stride L * K.
        a = randn(m, l, k, seed=seed).transpose(0, 1)
        # B as the first K columns of (L, N, K + 8): row stride K + 8.
        b = randn(l, n, k + 8, seed=seed + 1)[:, :, :k]
    # C as the first N columns of a NaN (L, M, N + 8) buffer: row stride N + 8.
    buf = torch.full((l, m, n + 8), float("nan"), device="cuda", dtype=torch.float16)
    return a, b, buf[:, :, :n], buf


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("variant", ["batched", "batched_narrow"])
@pytest.mark.parametrize(
    ("case", "l", "m", "n", "k"),
    [
        ("contiguous", 3, 129, 257, 72),
        ("strided", 3, 129, 257, 72),
        ("strided", 3, 256, 128, 64),
        ("strided", 1, 1, 1, 8),
        ("contiguous", 2, 1000, 999, 1024),
        ("strided", 2, 256, 256, 1000),
        # Rows 8, 4 and 2 bytes aligned: narrow cp.async of 8 and 4 bytes, element copies.
        ("contiguous", 2, 130, 131, 44),
        ("strided", 2, 129, 130, 46),
        ("contiguous", 2, 65, 66, 45),
    ],
)
def test_batched_matches_torch(
    arch: str, variant: str, case: str, l: int, m: int, n: int, k: int
) -> None:
    kernel = load(BUNDLES / variant / f"gemm_batched_{arch}")
    a, b, c, buf = batched_operands(case, l, m, n, k)
    binding = kernel.bind(a, b, c, 0.5)
    assert binding.grid == (-(-m // 128), -(-n // 128), l)
    assert (binding.symbols["sa"], binding.symbols["ldc"]) == (a.stride(0), n + 8)
    kernel(a, b, c, 0.5)
    torch.cuda.synchronize()
    ref = 0.5 * (a.double() @ b.double().transpose(1, 2))
    check(c, ref)
    assert torch.isnan(buf[:, :, n:]).all(), "wrote past the end of a row of C"

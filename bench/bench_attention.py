"""Attention forward (examples/attention.tile, FlashAttention-2's loop on mma.sync, sm_80 PTX;
or examples/attention_sm90.tile, FlashAttention-3's structure on wgmma and TMA, sm_90a PTX)
beside PyTorch's flash (FlashAttention-2) and cuDNN backends of scaled_dot_product_attention,
on the same randn (B, H, S, D) tensors, in one run: TFLOP/s = 4·B·H·S_q·S_kv·D per call
(half that for the causal bundles, which SDPA runs with is_causal) and tilec's ratio to each.

Bundles: test/gpu/build_attention_bundles.sh (build/attention/d<D>_<T>_c<CAUSAL>), and
test/gpu/build_attention_sm90_bundles.sh (build/attention_sm90, the same names). Each case
checks tilec's output against the flash backend's before timing; rounds interleave the three
implementations, each a median of CUDA-event timings of back-to-back launches
(tilec.runtime.measure.time_ms), and the table gives the median over rounds.

    python bench/bench_attention.py [--dir build/attention] [--bundles d64_f16_c0,d128_f16_c1]
        [--shapes 4x32x4096,2x16x8192,16x32x1024] [--rounds 3]
    python bench/bench_attention.py --dir build/attention_sm90 --bundles d128_f16_c0,...
"""

from __future__ import annotations

import argparse
import datetime
import math
import statistics
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from tilec.runtime import load
from tilec.runtime.measure import time_ms

BUNDLES = [f"d{d}_{t}_c{c}" for d in (64, 128) for c in (0, 1) for t in ("f16", "bf16")]
SHAPES = "4x32x4096,2x16x8192,16x32x1024"  # B x H x S (S_q = S_kv)
DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16}
BACKENDS = {"FA2": SDPBackend.FLASH_ATTENTION, "cuDNN": SDPBackend.CUDNN_ATTENTION}


def sdpa(
    backend: SDPBackend, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
) -> Callable[[], torch.Tensor]:
    def run() -> torch.Tensor:
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    return run


def case(bundle: Path, b: int, h: int, s: int, rounds: int) -> dict[str, float]:
    """Median ms per call of tilec and each SDPA backend, over interleaved rounds."""
    name = bundle.name
    d, dtype, causal = int(name.split("_")[0][1:]), DTYPES[name.split("_")[1]], "_c1" in name
    kernel = load(bundle)
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=dtype) for _ in range(3))
    o = torch.full_like(q, math.nan)
    lse = torch.full((b, h, s), math.nan, device="cuda")
    scale = d**-0.5
    runs: dict[str, Callable[[], object]] = {
        "tilec": lambda: kernel(q, k, v, o, lse, scale),
        **{n: sdpa(backend, q, k, v, causal) for n, backend in BACKENDS.items()},
    }
    runs["tilec"]()
    ref = runs["FA2"]()
    err = ((o.float() - ref.float()).norm() / ref.float().norm()).item()
    if not err < 2e-2:
        raise AssertionError(f"{name} {b}x{h}x{s}: relative error {err:.3g} against FA2")
    times: dict[str, list[float]] = {n: [] for n in runs}
    for _ in range(rounds):
        for n, fn in runs.items():
            times[n].append(time_ms(fn, warmup=2, iters=5, inner=5))
    return {n: statistics.median(t) for n, t in times.items()}


def main(args: argparse.Namespace) -> None:
    target = load(Path(args.dir) / args.bundles.split(",")[0]).manifest.target
    print(
        f"# attention forward, {target} PTX ({args.dir}), {datetime.date.today()}, "
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    )
    print("| bundle | B x H x S | tilec TFLOP/s | FA2 | cuDNN | tilec / FA2 | tilec / cuDNN |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.bundles.split(","):
        for shape in args.shapes.split(","):
            b, h, s = map(int, shape.split("x"))
            ms = case(Path(args.dir) / name, b, h, s, args.rounds)
            d = int(name.split("_")[0][1:])
            flops = 4 * b * h * s * s * d // (2 if "_c1" in name else 1)
            tf = {n: flops / t / 1e9 for n, t in ms.items()}
            print(
                f"| {name} | {shape} | {tf['tilec']:.0f} | {tf['FA2']:.0f} | {tf['cuDNN']:.0f} "
                f"| {ms['FA2'] / ms['tilec']:.2f} | {ms['cuDNN'] / ms['tilec']:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="build/attention")
    ap.add_argument("--bundles", default=",".join(BUNDLES))
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--rounds", type=int, default=3)
    main(ap.parse_args())

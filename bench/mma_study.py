"""Bench: what limits mma.sync on this GPU, register-only — occupancy, operand data, power.

    python bench/mma_study.py [--dtype f16|bf16] [--seconds 1.5]

`mma_ceiling.py` measures the ceiling the way issue 6 defines it (constant operands, many warps
per SM). A GEMM differs in two ways that need no memory system to show: it runs fewer warps
(8 per SM at the default 128×256 tile: the 64×64 warp tile's 128 accumulator registers leave
room for no more) and its operands are random numbers that change from one mma to the next,
which costs the tensor cores power. Each row below runs one such register-only kernel for about
`--seconds`, times it with CUDA events and samples nvidia-smi's SM clock and power meanwhile:

    operands  const: one fixed fragment per thread (threadIdx-derived bits, like the ceiling)
              randn: 2 k-steps × (AM A-fragments, AN B-fragments) of randn data, cycled
    acc       AM×AN independent m16n8k16 accumulators per warp (4×8 = a 64×64 warp tile)
    warps/SM  resident warps per SM (blocks of 256 threads)

A row's TFLOP/s over the ceiling's is the most a GEMM of that shape can reach; the clock and
power columns say whether the 700 W limit is what holds it.
"""

from __future__ import annotations

import argparse
import subprocess
import threading

import cupy as cp

SOURCE = r"""
#ifndef AM
#define AM 4
#endif
extern "C" __global__ void __launch_bounds__(256, BPS) mma_tile(float* out, const unsigned* frag,
                                                                int iters) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
  unsigned a[2][AM][4], b[2][AN][2];
#pragma unroll
  for (int s = 0; s < 2; ++s) {
#pragma unroll
    for (int m = 0; m < AM; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        a[s][m][i] = RANDOM ? frag[((s * AM + m) * 4 + i) * n + t] : threadIdx.x * (3u + 2u * i);
#pragma unroll
    for (int j = 0; j < AN; ++j)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        b[s][j][i] = RANDOM ? frag[((2 * AM * 4) + (s * AN + j) * 2 + i) * n + t]
                            : threadIdx.x + 1u + i;
  }
  float acc[AM][AN][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int s = 0; s < 2; ++s)
#pragma unroll
      for (int m = 0; m < AM; ++m)
#pragma unroll
        for (int j = 0; j < AN; ++j)
          asm volatile(
              "mma.sync.aligned.m16n8k16.row.col.f32.DT.DT.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
              "{%8,%9}, {%0,%1,%2,%3};\n"
              : "+f"(acc[m][j][0]), "+f"(acc[m][j][1]), "+f"(acc[m][j][2]), "+f"(acc[m][j][3])
              : "r"(a[s][m][0]), "r"(a[s][m][1]), "r"(a[s][m][2]), "r"(a[s][m][3]),
                "r"(b[s][j][0]), "r"(b[s][j][1]));
  }
  float sum = 0.f;
#pragma unroll
  for (int m = 0; m < AM; ++m)
#pragma unroll
    for (int j = 0; j < AN; ++j) sum += acc[m][j][0] + acc[m][j][1] + acc[m][j][2] + acc[m][j][3];
  out[t] = sum;
}
"""

# (operands, AM, AN, warps per SM): the ceiling's kind, then a GEMM's
CONFIGS = [
    ("const", 2, 4, 32),
    ("const", 4, 8, 8),
    ("randn", 2, 4, 24),
    ("randn", 4, 8, 8),
    ("randn", 2, 8, 16),
]


def sample(stop: threading.Event, seen: list[tuple[int, float]]) -> None:
    query = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits"]
    while not stop.is_set():
        out = subprocess.run(query, capture_output=True, text=True).stdout.strip().split(",")
        try:
            seen.append((int(out[0]), float(out[1])))
        except (ValueError, IndexError):
            pass
        stop.wait(0.05)


def run(dtype: str, operands: str, am: int, an: int, warps: int, seconds: float) -> str:
    bps = warps // 8
    src = SOURCE.replace("DT", dtype)
    defs = (f"-DAM={am}", f"-DAN={an}", f"-DBPS={bps}", f"-DRANDOM={int(operands == 'randn')}")
    kernel = cp.RawKernel(src, "mma_tile", options=("-std=c++17", *defs))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks, threads = sms * bps, 256
    n = blocks * threads
    data = cp.random.randn(2 * (am * 4 + an * 2) * n * 2, dtype=cp.float32)
    if dtype == "f16":
        frag = data.astype(cp.float16).view(cp.uint32)
    else:  # bf16: the upper half of each f32
        frag = (data.view(cp.uint32)[0::2] >> 16) | (data.view(cp.uint32)[1::2] & 0xFFFF0000)
    frag = cp.ascontiguousarray(frag)
    out = cp.empty(n, dtype=cp.float32)
    per_iter = blocks * threads // 32 * 2 * am * an * 2 * 16 * 8 * 16
    kernel((blocks,), (threads,), (out, frag, cp.int32(10)))
    cp.cuda.Device().synchronize()
    iters = int(seconds * 600e12 / per_iter)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    stop, seen = threading.Event(), []
    sampler = threading.Thread(target=sample, args=(stop, seen))
    sampler.start()
    best = 0.0
    for _ in range(3):
        start.record()
        kernel((blocks,), (threads,), (out, frag, cp.int32(iters)))
        end.record()
        end.synchronize()
        best = max(best, iters * per_iter / cp.cuda.get_elapsed_time(start, end) / 1e9)
    stop.set()
    sampler.join()
    clocks = sorted(c for c, _ in seen)
    power = sorted(p for _, p in seen)
    mid = len(seen) // 2
    span = (
        f"{clocks[0]}–{clocks[-1]} (median {clocks[mid]}) | {power[mid]:.0f} (max {power[-1]:.0f})"
        if seen
        else "? | ?"
    )
    return f"| {dtype} | {operands} | {am}×{an} | {warps} | {best:.0f} | {span} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    parser.add_argument("--seconds", type=float, default=1.5)
    args = parser.parse_args()
    print("| dtype | operands | acc | warps/SM | TFLOP/s | SM MHz | W |")
    print("| --- | --- | --- | ---: | ---: | --- | --- |")
    for operands, am, an, warps in CONFIGS:
        print(run(args.dtype, operands, am, an, warps, args.seconds), flush=True)


if __name__ == "__main__":
    main()

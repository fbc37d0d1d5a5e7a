"""Bench: the mma.sync ceiling of this GPU, register-only, beside the SM clock it ran at.

    python bench/mma_ceiling.py [--dtype f16|bf16]

Every warp of a full grid runs `mma.sync.aligned.m16n8k16` on 8 independent f32 accumulators
for many iterations (no memory traffic in the loop), timed with CUDA events; TFLOP/s counts
2·16·8·16 per mma.sync. This is the denominator of issue 6's bar (0.75 of it). nvidia-smi's
SM clock is sampled while the loop runs, since a GEMM's TFLOP/s at a lower clock is not
comparable with a ceiling measured at a higher one.
"""

from __future__ import annotations

import argparse
import subprocess
import threading

import cupy as cp

SOURCE = r"""
extern "C" __global__ void mma_loop(float* out, int iters) {
  unsigned a0 = threadIdx.x, a1 = a0 * 3u, a2 = a0 * 5u, a3 = a0 * 7u, b0 = a0 + 1u, b1 = a0 + 2u;
  float acc[8][4] = {};
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.DT.DT.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
          "{%8,%9}, {%0,%1,%2,%3};\n"
          : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    }
  }
  float s = 0.f;
#pragma unroll
  for (int j = 0; j < 8; ++j) s += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def sample_clocks(stop: threading.Event, seen: list[int]) -> None:
    while not stop.is_set():
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        if out.isdigit():
            seen.append(int(out))
        stop.wait(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    parser.add_argument("--iters", type=int, default=20000)
    args = parser.parse_args()
    kernel = cp.RawKernel(SOURCE.replace("DT", args.dtype), "mma_loop", options=("-std=c++17",))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks, threads = sms * 8, 256
    out = cp.empty(blocks * threads, dtype=cp.float32)
    kernel((blocks,), (threads,), (out, cp.int32(100)))  # warm up, compile
    cp.cuda.Device().synchronize()
    stop, seen = threading.Event(), []
    sampler = threading.Thread(target=sample_clocks, args=(stop, seen))
    sampler.start()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    best = 0.0
    for _ in range(5):
        start.record()
        kernel((blocks,), (threads,), (out, cp.int32(args.iters)))
        end.record()
        end.synchronize()
        ms = cp.cuda.get_elapsed_time(start, end)
        flops = blocks * threads // 32 * args.iters * 8 * 2 * 16 * 8 * 16
        best = max(best, flops / ms / 1e9)
    stop.set()
    sampler.join()
    clock = f"{min(seen)}–{max(seen)} MHz" if seen else "unknown"
    print(f"mma.sync m16n8k16 {args.dtype}, f32 accumulate: {best:.0f} TFLOP/s (SM clock {clock})")


if __name__ == "__main__":
    main()

"""Bench: what limits mma.sync on this GPU, register-only — occupancy, operand data, power.

    python bench/mma_study.py [--dtype f16|bf16] [--seconds 1.5] [--operands ROW] [--stages 3]

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

Four more rows add a GEMM's inner loop piece by piece, still without DRAM traffic:

    smem      8 warps as a 2×4 grid of 64×64 warp tiles; each k-step every warp loads its
              fragments from 144 KiB of randn data in shared memory (3 stages × a 128×64 A
              and 256×64 B tile, read as contiguous conflict-free 8×8 blocks) with 8
              ldmatrix.x4 — the GEMM's 128 bytes of shared memory per mma.sync — the next
              k-step's fragments loading while this one's 32 mma.sync issue
    smem+bar  the same with a __syncthreads() per 64-wide stage, as the GEMM's loop has
    smem+cp   and, as the GEMM's steady state, each stage refilled after the barrier with
              cp.async from a 24 MiB buffer that stays in L2 (48 KiB per block per stage:
              the shared-memory writes and L2 reads of a 128×256×64 tile)
    smem+cpi  the same copies spread over the stage's 4 k-steps, 3 per thread per k-step

`--stages N` gives the smem rows N stages (3 by default; the refill then waits on N - 2).

A row's TFLOP/s over the ceiling's is the most a GEMM of that shape can reach; the clock and
power columns say whether the 700 W limit is what holds it.
"""

from __future__ import annotations

import argparse
import subprocess
import threading
from collections.abc import Callable

import cupy as cp

# One m16n8k16 into c: both kernels below issue it.
MMA = r"""
__device__ __forceinline__ void mma(float* c, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.DT.DT.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
"""

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
          mma(acc[m][j], a[s][m], b[s][j][0], b[s][j][1]);
  }
  float sum = 0.f;
#pragma unroll
  for (int m = 0; m < AM; ++m)
#pragma unroll
    for (int j = 0; j < AN; ++j) sum += acc[m][j][0] + acc[m][j][1] + acc[m][j][2] + acc[m][j][3];
  out[t] = sum;
}
"""

SMEM_SOURCE = r"""
// Shared memory: ST stages of SCH 16-byte chunks, A's (ACH = 256·AM) then B's (2048). Warp
// (wm, wn) reads, at k-step kk of a stage, A blocks (kk·2·AM + wm·AM + mi) and B blocks
// (kk·16 + wn·4 + nj), each 32 consecutive chunks: one ldmatrix.x4, every lane a different
// chunk, no bank conflicts. AM = 4 is a 64×64 warp tile (a 128×256 block), AM = 6 a 96×64 one
// (192×256). ROLL = 0 loads all of the next k-step's fragments during this one; ROLL = 1 loads
// B's a k-step ahead but each A fragment only one m-tile ahead (what 96×64 leaves registers for).
#define ACH (256 * AM)
#define SCH (ACH + 2048)
extern "C" __global__ void __launch_bounds__(256, 1) mma_smem(float* out, const uint4* data,
                                                              int iters, const uint4* src,
                                                              int src_stages) {
  extern __shared__ uint4 smem[];
  for (int i = threadIdx.x; i < ST * SCH; i += blockDim.x)
    smem[i] = data[(blockIdx.x * ST * SCH + i) % (3 * 3072 * 8)];
  __syncthreads();
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;
  const unsigned base = (unsigned)__cvta_generic_to_shared(smem) + 16u * lane;
  unsigned a[2][ROLL ? 1 : AM][4], b[2][4][4];
  float acc[AM][8][4] = {};
  auto load_a = [&](unsigned* dst, int step, int m) {
    const int block = (step % 4) * 2 * AM + wm * AM + m;
    const unsigned addr = base + 16u * ((step / 4) * SCH + block * 32);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(dst[0]), "=r"(dst[1]), "=r"(dst[2]), "=r"(dst[3])
                 : "r"(addr));
  };
  auto load = [&](int buf, int step) {
    const int s = step / 4, kk = step % 4;
    if (!ROLL) {
#pragma unroll
      for (int m = 0; m < AM; ++m) load_a(a[buf][m], step, m);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      unsigned addr = base + 16u * (s * SCH + ACH + (kk * 16 + wn * 4 + j) * 32);
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                   : "=r"(b[buf][j][0]), "=r"(b[buf][j][1]), "=r"(b[buf][j][2]),
                     "=r"(b[buf][j][3])
                   : "r"(addr));
    }
  };
  load(0, 0);
  if (ROLL) load_a(a[0][0], 0, 0);
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int step = 0; step < 4 * ST; ++step) {
      if (BAR && step % 4 == 0) {
        if (BAR >= 2) asm volatile("cp.async.wait_group %0;\n" ::"n"(ST - 2));
        __syncthreads();
      }
      // Refill the stage read last, REFILL × 16 B per thread (SCH / 256: the whole stage): all
      // after the barrier (BAR 2) or spread over the stage's 4 k-steps (BAR 3).
      if (BAR == 3 || (BAR == 2 && step % 4 == 0)) {
        const int s = (step / 4 + ST - 1) % ST;
        const int g = (blockIdx.x * 7 + it * ST + step / 4) % src_stages;
        const int first = BAR == 3 ? REFILL / 4 * (step % 4) : 0;
        const int count = BAR == 3 ? REFILL / 4 : REFILL;
#pragma unroll
        for (int i = first; i < first + count; ++i) {
          const int c = threadIdx.x + 256 * i;
          const unsigned dst = (unsigned)__cvta_generic_to_shared(smem + s * SCH + c);
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst),
                       "l"(src + (size_t)g * SCH + c));
        }
        if (step % 4 == 3 || BAR == 2) asm volatile("cp.async.commit_group;\n" ::);
      }
      const int next = (step + 1) % (4 * ST);
      load((step + 1) % 2, next);
#pragma unroll
      for (int m = 0; m < AM; ++m) {
        const unsigned* am;
        if (ROLL) {  // AM is even: fragment m of every k-step sits in buffer m % 2
          load_a(a[(m + 1) % 2][0], m + 1 < AM ? step : next, (m + 1) % AM);
          am = a[m % 2][0];
        } else {
          am = a[step % 2][m];
        }
#pragma unroll
        for (int j = 0; j < 8; ++j)
          mma(acc[m][j], am, b[step % 2][j / 2][j % 2 * 2], b[step % 2][j / 2][j % 2 * 2 + 1]);
      }
    }
  }
  float sum = 0.f;
#pragma unroll
  for (int m = 0; m < AM; ++m)
#pragma unroll
    for (int j = 0; j < 8; ++j) sum += acc[m][j][0] + acc[m][j][1] + acc[m][j][2] + acc[m][j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
"""

# (operands, AM, AN, warps per SM): the ceiling's kind, then a GEMM's
CONFIGS = [
    ("const", 2, 4, 32),
    ("const", 4, 8, 8),
    ("randn", 2, 4, 24),
    ("randn", 4, 8, 8),
    ("randn", 2, 8, 16),
    ("smem", 4, 8, 8),
    ("smem+bar", 4, 8, 8),
    ("smem+cp", 4, 8, 8),
    ("smem+cpi", 4, 8, 8),
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


def sampled_best(launch: Callable[[], None], work: float) -> tuple[float, list[tuple[int, float]]]:
    """The best of 3 timed launches, in `work` (flops, bytes) per second / 1e12, and the
    (SM MHz, W) samples nvidia-smi gave meanwhile."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    stop, seen = threading.Event(), []
    sampler = threading.Thread(target=sample, args=(stop, seen))
    sampler.start()
    best = 0.0
    for _ in range(3):
        start.record()
        launch()
        end.record()
        end.synchronize()
        best = max(best, work / cp.cuda.get_elapsed_time(start, end) / 1e9)
    stop.set()
    sampler.join()
    return best, seen


def randn_words(count: int, dtype: str) -> cp.ndarray:
    """`count` 32-bit words, each two randn values of `dtype`."""
    data = cp.random.randn(count * 2, dtype=cp.float32)
    if dtype == "f16":
        return cp.ascontiguousarray(data.astype(cp.float16).view(cp.uint32))
    # bf16: the upper half of each f32
    return (data.view(cp.uint32)[0::2] >> 16) | (data.view(cp.uint32)[1::2] & 0xFFFF0000)


def run(
    dtype: str,
    operands: str,
    am: int,
    an: int,
    warps: int,
    seconds: float,
    stages: int = 3,
    roll: bool = False,
    refill: int | None = None,
) -> str:
    bps = warps // 8
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    blocks, threads = sms * bps, 256
    n = blocks * threads
    smem = 0
    extra: tuple = ()
    if operands.startswith("smem"):  # 4·stages k-steps of 4·8 m16n8k16 per warp per iteration
        mode = ["smem", "smem+bar", "smem+cp", "smem+cpi"].index(operands)
        chunks = 256 * am + 2048  # 16-byte chunks per stage
        refill = chunks // 256 if refill is None else refill
        defs = (f"-DBAR={mode}", f"-DST={stages}", f"-DAM={am}", f"-DROLL={int(roll)}")
        kernel = cp.RawKernel(
            (MMA + SMEM_SOURCE).replace("DT", dtype),
            "mma_smem",
            options=("-std=c++17", *defs, f"-DREFILL={refill}"),
        )
        smem = stages * chunks * 16
        kernel.max_dynamic_shared_size_bytes = smem
        frag = randn_words(3 * 3072 * 8 * 4, dtype)
        src_stages = 512  # 512 stages of 48 (56) KiB = 24 (28) MiB: L2-resident
        extra = (randn_words(src_stages * chunks * 4, dtype), cp.int32(src_stages))
        per_iter = blocks * threads // 32 * 4 * stages * am * an * 2 * 16 * 8 * 16
    else:
        src = (MMA + SOURCE).replace("DT", dtype)
        random = int(operands == "randn")
        defs = (f"-DAM={am}", f"-DAN={an}", f"-DBPS={bps}", f"-DRANDOM={random}")
        kernel = cp.RawKernel(src, "mma_tile", options=("-std=c++17", *defs))
        frag = randn_words(2 * (am * 4 + an * 2) * n, dtype)
        per_iter = blocks * threads // 32 * 2 * am * an * 2 * 16 * 8 * 16
        extra = ()
    out = cp.empty(n, dtype=cp.float32)
    kernel((blocks,), (threads,), (out, frag, cp.int32(10), *extra), shared_mem=smem)
    cp.cuda.Device().synchronize()
    iters = int(seconds * 600e12 / per_iter)
    args = (out, frag, cp.int32(iters), *extra)
    best, seen = sampled_best(
        lambda: kernel((blocks,), (threads,), args, shared_mem=smem), iters * per_iter
    )
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
    parser.add_argument("--operands", action="append", help="only these rows (repeatable)")
    parser.add_argument("--stages", type=int, default=3, help="shared-memory stages (smem rows)")
    parser.add_argument(
        "--warp-rows", type=int, default=64, choices=(64, 96), help="of the smem rows' warp tiles"
    )
    parser.add_argument(
        "--roll", action="store_true", help="smem rows: A fragments one m-tile ahead, not a k-step"
    )
    parser.add_argument(
        "--refill", type=int, help="smem+cp rows: 16-byte chunks per thread per stage (all)"
    )
    args = parser.parse_args()
    print("| dtype | operands | acc | warps/SM | TFLOP/s | SM MHz | W |")
    print("| --- | --- | --- | ---: | ---: | --- | --- |")
    for operands, am, an, warps in CONFIGS:
        if args.operands and operands not in args.operands:
            continue
        if operands.startswith("smem"):
            am = args.warp_rows // 16
        row = run(
            args.dtype, operands, am, an, warps, args.seconds, args.stages, args.roll, args.refill
        )
        print(row, flush=True)


if __name__ == "__main__":
    main()

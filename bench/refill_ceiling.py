"""Bench: how fast shared memory can be refilled from L2 — the GEMM's refill without its math.

    python bench/refill_ceiling.py [--seconds 1.0] [--stage-kib 48] [--mode cg ...]

Every SM runs one block of 256 threads that streams stages of `--stage-kib` KiB (48: a
128×256×64 f16 tile's A and B) from a 24 MiB buffer that stays in L2 into a 3-stage ring in
shared memory, the way the GEMM's steady state does (wait for the oldest stage, barrier, refill
the stage read last), and does nothing else. Each mode moves the same bytes another way:

    cg     16-byte `cp.async.cg` per thread, `commit_group` / `wait_group 1`: what the SM80 GEMM
           issues (sm_80 ISA)
    ca     the same with `cp.async.ca` (L1-allocating)
    ldst   `ld.global.cg.v4` into registers, then `st.shared.v4` (no async copy)
    bulk   one `cp.async.bulk` per stage, completed on an mbarrier (sm_90 ISA, what a TMA
           kernel's loads use): the same bytes without per-thread requests

Printed per mode: the L2 → shared-memory bandwidth over all SMs (TB/s), the SM clock and board
power sampled meanwhile, and the TFLOP/s that a 128×256-tile GEMM could at most reach if it
refilled shared memory no faster than that: a 128×256×64 stage feeds 2·128·256·64 flops, so
bytes/flop = (128 + 256)·64·2 / (2·128·256·64) and the bound is bandwidth / bytes-per-flop.
"""

from __future__ import annotations

import argparse

import cupy as cp
from mma_study import sampled_best

SOURCE = r"""
#define SCH (STAGE_KIB * 64)  // 16-byte chunks per stage
#define PER (SCH / 256)       // per thread
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
extern "C" __global__ void __launch_bounds__(256, 1) refill(float* out, const uint4* src,
                                                            int src_stages, int rounds) {
  extern __shared__ uint4 smem[];
  __shared__ unsigned long long bar[ST];
  const int t = threadIdx.x;
  auto source = [&](int stage) {  // the stage-th refill of this block: a different L2 slice
    return src + (size_t)((blockIdx.x * 7 + stage) % src_stages) * SCH;
  };
  auto issue = [&](int stage) {  // refill ring slot stage % ST with the stage-th slice
    uint4* dst = smem + (stage % ST) * SCH;
    const uint4* from = source(stage);
    if (MODE == 3) {
      if (t == 0) {
        const unsigned b = smem_addr(&bar[stage % ST]);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b),
                     "r"(SCH * 16));
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
            "[%3];\n" ::"r"(smem_addr(dst)),
            "l"(from), "r"(SCH * 16), "r"(b)
            : "memory");
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = t + 256 * i;
      if (MODE == 0)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst + c)),
                     "l"(from + c));
      else if (MODE == 1)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst + c)),
                     "l"(from + c));
    }
    if (MODE == 2) {
      uint4 v[PER];
#pragma unroll
      for (int i = 0; i < PER; ++i)
        asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(v[i].x), "=r"(v[i].y), "=r"(v[i].z), "=r"(v[i].w)
                     : "l"(from + t + 256 * i));
#pragma unroll
      for (int i = 0; i < PER; ++i) dst[t + 256 * i] = v[i];
    }
    if (MODE <= 1) asm volatile("cp.async.commit_group;\n" ::);
  };
  if (MODE == 3 && t == 0) {
    for (int s = 0; s < ST; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_addr(&bar[s])));
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::);
  }
  __syncthreads();
  for (int s = 0; s < ST - 1; ++s) issue(s);
  for (int k = 0; k < rounds; ++k) {
    // Wait for stage k, as the GEMM does before reading it.
    if (MODE <= 1) asm volatile("cp.async.wait_group %0;\n" ::"n"(ST - 2));
    if (MODE == 3) {
      const unsigned b = smem_addr(&bar[k % ST]), parity = (k / ST) & 1;
      asm volatile(
          "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
          " @!p bra W;\n}\n" ::"r"(b),
          "r"(parity)
          : "memory");
    }
    __syncthreads();
    issue(k + ST - 1);
  }
  if (MODE <= 1) asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();
  // One word of what arrived, so nothing is dead.
  const uint4 v = smem[(rounds % ST) * SCH + t];
  out[blockIdx.x * 256 + t] = __uint_as_float(v.x ^ v.y ^ v.z ^ v.w);
}
"""

MODES = ("cg", "ca", "ldst", "bulk")


def run(mode: str, stage_kib: int, stages: int, seconds: float) -> str:
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    chunks = stage_kib * 64
    src_stages = 24 * 1024 // stage_kib  # 24 MiB: L2-resident
    kernel = cp.RawKernel(
        SOURCE,
        "refill",
        options=(
            "-std=c++17",
            f"-DMODE={MODES.index(mode)}",
            f"-DST={stages}",
            f"-DSTAGE_KIB={stage_kib}",
        ),
    )
    smem = stages * chunks * 16
    kernel.max_dynamic_shared_size_bytes = smem
    src = cp.random.randint(0, 2**31, size=src_stages * chunks * 4, dtype=cp.int32)
    out = cp.empty(sms * 256, dtype=cp.float32)
    args = (out, src, cp.int32(src_stages))
    kernel((sms,), (256,), (*args, cp.int32(16)), shared_mem=smem)
    cp.cuda.Device().synchronize()
    rounds = int(seconds * 5e12 / (sms * chunks * 16))
    moved = sms * (rounds + stages - 1) * chunks * 16
    best, seen = sampled_best(  # TB/s
        lambda: kernel((sms,), (256,), (*args, cp.int32(rounds)), shared_mem=smem), moved
    )
    clocks = sorted(c for c, _ in seen)
    power = sorted(p for _, p in seen)
    mid = len(seen) // 2
    span = f"{clocks[mid]} | {power[mid]:.0f}" if seen else "? | ?"
    bytes_per_flop = (128 + 256) * 64 * 2 / (2 * 128 * 256 * 64)
    bound = best / bytes_per_flop
    return f"| {mode} | {stage_kib} | {stages} | {best:.2f} | {bound:.0f} | {span} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--stage-kib", type=int, default=48)
    parser.add_argument("--stages", type=int, default=3)
    parser.add_argument("--mode", action="append", choices=MODES, help="only these (repeatable)")
    args = parser.parse_args()
    print("| mode | KiB/stage | stages | TB/s (L2 → smem) | 128×256 GEMM bound | SM MHz | W |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for mode in args.mode or MODES:
        print(run(mode, args.stage_kib, args.stages, args.seconds), flush=True)


if __name__ == "__main__":
    main()

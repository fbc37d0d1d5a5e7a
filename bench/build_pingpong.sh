#!/usr/bin/env bash
# Build the SM90 GEMM kernels of the ping-pong comparison (docs/performance.md) into
# build/pingpong/<name>/: the cooperative defaults beside ping-pong consumers (PP = 1) at
# tile shapes and ring depths that fit one warp group's registers, for bench/bench_gemm.py and
# bench/bench_gemm_fused.py (run where MLIR is; carry build/pingpong to the GPU machine).
set -euo pipefail
out="${1:-build/pingpong}"
rm -rf "$out"
g() { name=$1; file=$2; shift 2; tilec build "examples/$file" -o "$out/$name" "$@" >/dev/null; }
g coop gemm_sm90.tile
g pp_n128_s4 gemm_sm90.tile -D PP=1 -D BN=128
g pp_n128_s5 gemm_sm90.tile -D PP=1 -D BN=128 -D STAGES=5
g pp_n128_s6 gemm_sm90.tile -D PP=1 -D BN=128 -D STAGES=6
g pp_m64n256_s4 gemm_sm90.tile -D PP=1 -D BM=64 -D BN=256
g pp_n128_g8 gemm_sm90.tile -D PP=1 -D BN=128 -D STAGES=6 -D G=8
for act in 1 2 3; do  # relu, gelu (erf), gelu's tanh form
  g coop_act$act gemm_sm90_bias_act.tile -D ACT=$act -D BETA=0
  g pp_act$act gemm_sm90_bias_act.tile -D ACT=$act -D BETA=0 -D PP=1 -D BN=128 -D STAGES=6
done
# Clusters of two blocks sharing B's tile by TMA multicast, in the default and half the group.
g cm2 gemm_sm90.tile -D CM=2
g cm2_g8 gemm_sm90.tile -D CM=2 -D G=8
for act in 1 2; do g cm2_act$act gemm_sm90_bias_act.tile -D ACT=$act -D BETA=0 -D CM=2; done
g coop_batched gemm_sm90_batched.tile
g pp_batched gemm_sm90_batched.tile -D PP=1 -D BN=128 -D STAGES=6
g pp_batched_s4 gemm_sm90_batched.tile -D PP=1 -D BN=128
echo "built $(find "$out" -name manifest.json | wc -l) bundles in $out"

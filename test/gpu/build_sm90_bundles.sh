#!/usr/bin/env bash
# Build examples/gemm_sm90.tile's bundles for test/gpu/test_gemm_sm90.py (where MLIR is; carry
# build/ to the GPU machine), one per folder of build/sm90: the defaults (bf16, 128x256x64 tiles,
# 4 stages), f16, a 128x128 tile, 2 stages (fewer stages than k-tiles and more), 64x... tiles;
# each kernel also with ping-pong consumers (PP = 1: a warp group per 128x128 or 64x256 tile).
set -euo pipefail
out="${1:-build/sm90}"
rm -rf "$out"
b() { name=$1; shift; tilec build examples/gemm_sm90.tile -o "$out/$name" "$@" >/dev/null; }
b default_bf16
b default_f16 -D T=f16
b bn128_bf16 -D BN=128
b s2_f16 -D T=f16 -D STAGES=2
b pp_bf16 -D PP=1 -D BN=128
b pp_s2_f16 -D PP=1 -D BN=128 -D STAGES=2 -D T=f16
b pp_bm64_bf16 -D PP=1 -D BM=64 -D BN=256
# The last, partial wave's tiles split along K (SK = 1, the default: every small shape splits
# its tiles), and without the split.
b sk_bf16 -D SK=1
b sk_f16 -D SK=1 -D T=f16
b nosk_bf16 -D SK=0
b nosk_f16 -D SK=0 -D T=f16
b sk_cm2_bf16 -D SK=1 -D CM=2  # clusters: every block of one runs the same units
b sk_cm4_f16 -D SK=1 -D CM=4 -D T=f16
b sk_pp_bf16 -D SK=1 -D PP=1 -D BN=128  # ping-pong: each group hands over its own units
b sk_pp_f16 -D SK=1 -D PP=1 -D BN=128 -D T=f16
b nosk_pp_bf16 -D SK=0 -D PP=1 -D BN=128
# Another output type (O): f32 sums stored as they are (no TMA store: vector stores), f16
# inputs with a bf16 output (the TMA store of another type), an MN-major A with f32 out.
b o32_bf16 -D O=f32
b o32_f16 -D O=f32 -D T=f16
b obf16_f16 -D O=bf16 -D T=f16
b a1b0_o32_bf16 -D O=f32 -D MA=1
echo "built $(find "$out" -name manifest.json | wc -l) SM90 GEMM bundles in $out"
# The fused epilogue (examples/gemm_sm90_bias_act.tile) and the batched kernel.
e() { name=$1; shift; tilec build examples/gemm_sm90_bias_act.tile -o "$out/epilogue/$name" "$@" >/dev/null; }
e act0 -D ACT=0
e act1 -D ACT=1
e act2_f16 -D ACT=2 -D T=f16
e act1_beta0 -D ACT=1 -D BETA=0
e act2_beta0 -D ACT=2 -D BETA=0
e act2_pp -D ACT=2 -D PP=1 -D BN=128
e act1_beta0_pp_f16 -D ACT=1 -D BETA=0 -D PP=1 -D BN=128 -D T=f16
e act2_o32 -D ACT=2 -D O=f32
tilec build examples/gemm_sm90_batched.tile -o "$out/batched/default" >/dev/null
tilec build examples/gemm_sm90_batched.tile -o "$out/batched/f16" -D T=f16 >/dev/null

tilec build examples/gemm_sm90_batched.tile -o "$out/batched/bn128" -D BN=128 >/dev/null
tilec build examples/gemm_sm90_batched.tile -o "$out/batched/pp" -D PP=1 -D BN=128 >/dev/null
tilec build examples/gemm_sm90_batched.tile -o "$out/batched/sk" -D SK=1 >/dev/null
# Clusters of two blocks sharing B's tile by TMA multicast (CM = 2).
b cm2_bf16 -D CM=2
b cm2_f16 -D CM=2 -D T=f16
b cm2_pp_bf16 -D CM=2 -D PP=1 -D BN=128
b cm4_bf16 -D CM=4  # 30 clusters of 4 fit the H200: a grid of 120 blocks
b a1b1_cm2_bf16 -D CM=2 -D MA=1 -D MB=1
e act2_cm2 -D ACT=2 -D CM=2
# GELU's tanh form (tanh.approx.f32).
e act3 -D ACT=3
e act3_beta0_f16 -D ACT=3 -D BETA=0 -D T=f16
# MN-major operands (the transpose of a K x M or K x N tensor; wgmma's transpose bits).
b a1b0_bf16 -D MA=1
b a0b1_bf16 -D MB=1
b a1b1_f16 -D MA=1 -D MB=1 -D T=f16
b a1b1_pp_bf16 -D MA=1 -D MB=1 -D PP=1 -D BN=128
# The 64- and 32-byte swizzles (rows of BK = 32 and 16 elements).
b bk32_bf16 -D BK=32
b bk16_f16 -D BK=16 -D T=f16
echo "built $(find "$out" -name manifest.json | wc -l) bundles in $out in all"
